"""Shared fixtures: the native build, one real quick sweep, and a leak check over the whole session."""

from __future__ import annotations

import contextlib
import fcntl
import functools
import json
import os
import resource
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest
from inotify_simple import INotify, flags
from native_helpers import EMPTY_WINDOW

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))  # tests/ helpers importable as modules

# A shell without job control starts `cmd &` with SIGINT ignored, and the children inherit it: the
# tests' copylab processes would then ignore the Ctrl-C the fault tests send them (seen: `make test`
# started in the background failed 2 interrupt tests). Python's own handler here, so every child
# starts with SIGINT at its default, as under a terminal.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


def run_copylab(*args: str, timeout: float = 600, check: bool = False, env: dict | None = None,
                **kwargs) -> subprocess.CompletedProcess:
    """`python -m copylab ARGS` as a user runs it; returns the completed process (text)."""
    proc = subprocess.run([sys.executable, "-m", "copylab", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT, env=env, **kwargs)
    if check and proc.returncode != 0:
        raise AssertionError(f"copylab {' '.join(args)} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}")
    return proc


def copylab_inprocess(*args: str) -> subprocess.CompletedProcess:
    """`copylab ARGS` run in this process (copylab.cli.main, from the project root), returned as
    run_copylab returns it: for the one-line refusals, each of which paid a new Python's start and
    imports (0.2-1.4 s of CPU); run_copylab keeps the end-to-end path. The signal handlers main()
    installs are put back."""
    import io
    import signal

    from copylab import cli, signals

    saved = {s: signal.getsignal(s) for s in signals.ENDING}
    out, err, cwd = io.StringIO(), io.StringIO(), os.getcwd()
    try:
        os.chdir(ROOT)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                status = cli.main(list(args))
            except SystemExit as exc:  # argparse's refusals
                status = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        os.chdir(cwd)
        for signum, handler in saved.items():
            signal.signal(signum, handler)
    return subprocess.CompletedProcess(["copylab", *args], status, out.getvalue(), err.getvalue())


def start_sweep(params: Path, out: Path, records: int = 1, timeout: float = 120) -> subprocess.Popen:
    """`copylab sweep` in the background, returned once `records` points are in out/runs (or it
    ended, or timeout passed: the caller's assertions say which)."""
    proc = subprocess.Popen([sys.executable, "-m", "copylab", "sweep", str(params), "--out", str(out),
                             "--no-progress"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + timeout
    while proc.poll() is None and time.monotonic() < deadline:
        if (out / "runs").is_dir() and len(list((out / "runs").glob("*.json"))) >= records:
            break
        time.sleep(0.05)
    return proc


# Who is whose. `make test` runs the suite in parallel (pytest-xdist): each worker must see only
# what it started itself, and the session-end check everything of the run's. Every test process
# marks its environment: children inherit it and orphans keep it, so a benchmark process or a
# namespace's creator tells which worker (and which run) it belongs to, even once adopted by init.
RUN_VAR = "COPYLAB_TEST_RUN"        # pid of the run's first process (xdist's controller, or pytest alone)
WORKER_VAR = "COPYLAB_TEST_WORKER"  # pid of the process that runs the tests (a worker, or pytest alone)
NETNS_DIR = Path("/run/netns")  # where iproute2 keeps named namespaces


def _environ(pid: int) -> dict[str, str]:
    try:
        raw = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return {}
    return dict(item.split("=", 1) for item in raw.decode(errors="replace").split("\0") if "=" in item)


def _parent(pid: int) -> int | None:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def is_ours(pid: int, var: str = WORKER_VAR) -> bool | None:
    """Is live process pid this process's own (itself, a descendant, or marked with its var)? None
    when pid is gone."""
    if pid == os.getpid():
        return True
    if not Path(f"/proc/{pid}").exists():
        return None
    mark = os.environ.get(var)
    if mark and _environ(pid).get(var) == mark:
        return True
    while pid > 1:  # walk up: this process among the ancestors
        pid = _parent(pid)
        if pid is None:
            return None
        if pid == os.getpid():
            return True
    return False


def _namespace_pid(namespace: str) -> int | None:
    try:
        return int(namespace.split("-")[1])
    except (IndexError, ValueError):
        return None


def _alive_elsewhere(namespace: str, var: str = WORKER_VAR) -> bool:
    """copylab-<pid>-...: is <pid> a live process that is not ours (another worker's or another run's)?"""
    pid = _namespace_pid(namespace)
    return pid is not None and is_ours(pid, var) is False


def _actors(namespace: str) -> list[int]:
    """The live processes acting on a namespace now: its creator (the pid in its name) and any whose
    command line names it (`ip netns add NAME`, `ip netns del NAME`, a test's stand-in)."""
    pid = _namespace_pid(namespace)
    found = [pid] if pid is not None and Path(f"/proc/{pid}").exists() else []
    needle = namespace.encode()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) not in found:
            with contextlib.suppress(OSError):
                if needle in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
    return found


class NetnsWatch:
    """Every copylab namespace created or removed while this process runs, told apart as ours or
    another's as it happens, by who is acting on it then (its creator, or an `ip` naming it)."""

    def __init__(self) -> None:
        self.ours: set[str] = set()     # created by a process of ours
        self.theirs: set[str] = set()   # by a live process of another worker or run
        self.unknown: set[str] = set()  # nobody acting on it to be seen any more: not counted
        self.changes = 0              # our namespaces created or removed so far
        self._lock = threading.Lock()
        self._inotify = None
        if not NETNS_DIR.is_dir():
            with contextlib.suppress(OSError):  # what `ip netns add` does first; needs root
                NETNS_DIR.mkdir(mode=0o755, parents=True)
        with contextlib.suppress(OSError):  # no folder: nothing on this host made a namespace, nor can we
            self._inotify = INotify()
            self._inotify.add_watch(NETNS_DIR, flags.CREATE | flags.DELETE | flags.MOVED_FROM | flags.MOVED_TO)
            threading.Thread(target=self._follow, name="netns-watch", daemon=True).start()

    def _follow(self) -> None:
        while True:  # woken at once: whoever acts on the namespace is still at it
            select.select([self._inotify], [], [])
            self.update()

    def update(self) -> int:
        """Take in what happened so far; the count of our changes."""
        with self._lock:
            if self._inotify is None:
                return self.changes
            for event in self._inotify.read(timeout=0):
                if not event.name.startswith("copylab-"):
                    continue
                created = bool(event.mask & (flags.CREATE | flags.MOVED_TO))
                if created or event.name not in self.ours | self.theirs | self.unknown:
                    owners = [o for o in map(is_ours, _actors(event.name)) if o is not None]
                    (self.ours if any(owners) else self.theirs if owners else self.unknown).add(event.name)
                self.changes += event.name in self.ours
            return self.changes


def _all_copylab_namespaces() -> list[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return [line.split()[0] for line in out.splitlines() if line.startswith("copylab-")]


@functools.cache
def _netns_watch() -> NetnsWatch:
    return NetnsWatch()


def copylab_namespaces() -> list[str]:
    """The copylab namespaces there are, less those another worker or run is using."""
    watch = _netns_watch()
    return [ns for ns in _all_copylab_namespaces()
            if not _alive_elsewhere(ns) and not (ns in watch.theirs and ns not in watch.ours)]


def benchmark_processes(everyone: bool = False) -> list[str]:
    """Running native benchmark binaries of this checkout (command lines): this worker's, or with
    everyone, anybody's."""
    build = str(ROOT / "native" / "build")
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if os.readlink(entry / "exe").startswith(build + "/") and (everyone or is_ours(int(entry.name))):
                    found.append((entry / "cmdline").read_bytes().replace(b"\0", b" ").decode())
            except OSError:
                continue
    return found


@pytest.fixture(scope="session")
def native_build() -> Path:
    """Build native/ once per session (regular and sanitizer variants); one worker at a time: two
    makes in one tree overwrite each other's objects."""
    with _flock(Path(os.environ[LOCK_VAR]) / "native-build", fcntl.LOCK_EX):
        for target in ([], ["sanitize"]):
            proc = subprocess.run(["make", "-C", str(ROOT / "native"), *target], capture_output=True, text=True)
            assert proc.returncode == 0, proc.stdout + proc.stderr
    return ROOT / "native" / "build"


@pytest.fixture(scope="session")
def quick_sweep_dir(tmp_path_factory, native_build) -> Path:
    """A real sweep of params/quick.yaml (namespaces, perf, all implementations, both modes)."""
    out = tmp_path_factory.mktemp("quick-sweep")
    proc = run_copylab("sweep", "params/quick.yaml", "--out", str(out), "--no-progress", timeout=900)
    log = out / "sweep.log"
    if proc.returncode == 1 and log.is_file() and EMPTY_WINDOW in log.read_text(errors="replace"):
        # a run whose short window completed nothing beside the other tests (an A3 latency round trip of
        # 138 ms in a fresh-clone CI): the sweep resumes as a user's would, measuring its failed points again
        proc = run_copylab("sweep", "params/quick.yaml", "--out", str(out), "--no-progress", timeout=900)
    assert proc.returncode == 0, f"quick sweep failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr[-3000:]}"
    return out


# the author fields of the one report built from the quick sweep (the report and bundle tests read it)
QUICK_AUTHOR = {"author": "Ada Bundle", "roll_no": "T15-cs_007", "repo_url": "https://example.org/ada/copylab"}
QUICK_DECLARATION = "AI-usage declaration: TEST text, written for the bundle tests."


@pytest.fixture(scope="session")
def quick_report(quick_sweep_dir, tmp_path_factory) -> dict:
    """A copy of the quick sweep reported once through the CLI, with author fields: its folder and
    the completed `copylab report` process."""
    folder = tmp_path_factory.mktemp("quick-report") / "quick"
    shutil.copytree(quick_sweep_dir, folder)
    declaration = folder.parent / "ai.txt"
    declaration.write_text(QUICK_DECLARATION)
    proc = run_copylab("report", str(folder), "--author", QUICK_AUTHOR["author"], "--roll-no", QUICK_AUTHOR["roll_no"],
                       "--repo-url", QUICK_AUTHOR["repo_url"], "--ai-declaration", str(declaration), timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return {"dir": folder, "proc": proc}


_LEFT_BEHIND = pytest.StashKey[list]()
LOCK_VAR = "COPYLAB_TEST_LOCKS"  # the run's folder of lock files (xdist: the `alone` marker)


def pytest_configure(config):
    if not hasattr(config, "workerinput"):  # the run's first process: its workers inherit these
        os.environ[RUN_VAR] = str(os.getpid())
        os.environ[LOCK_VAR] = tempfile.mkdtemp(prefix="copylab-test-locks-")
    os.environ[WORKER_VAR] = str(os.getpid())


def pytest_unconfigure(config):
    if not hasattr(config, "workerinput"):
        shutil.rmtree(os.environ.pop(LOCK_VAR, ""), ignore_errors=True)


@contextlib.contextmanager
def _flock(path: Path, mode: int):
    with open(path, "a") as handle:
        fcntl.flock(handle, mode)
        yield  # closing the file releases the lock


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item):
    """A test marked `alone` runs while no other xdist worker runs a test (it measures the host's CPU
    load, or waits on timing a second busy CPU would stretch); the others share. A test waiting to
    run alone holds the turnstile, so the other worker cannot start test after test ahead of it."""
    folder = os.environ.get(LOCK_VAR)
    if not hasattr(item.config, "workerinput") or not folder or not Path(folder).is_dir():
        yield
        return
    alone = item.get_closest_marker("alone") is not None
    with contextlib.ExitStack() as held:
        turnstile = held.enter_context(contextlib.ExitStack())
        turnstile.enter_context(_flock(Path(folder) / "turnstile", fcntl.LOCK_EX))
        held.enter_context(_flock(Path(folder) / "tests", fcntl.LOCK_EX if alone else fcntl.LOCK_SH))
        if not alone:
            turnstile.close()  # through: the next test may queue
        yield


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session):
    if not hasattr(session.config, "workerinput"):
        nothing_left_behind(session)
        notes = os.environ.get(NOTES_VAR)
        if notes:
            with contextlib.suppress(OSError), open(notes, "a") as handle:
                handle.write(json.dumps(notes_of_the_run()) + "\n")


def nothing_left_behind(session) -> None:
    """After the whole run (under xdist: in the controller, after every worker): no namespace and no
    benchmark process of copylab's left (issue 7). Fails the run, named at the end of its summary."""
    # a namespace whose creator still runs and is not this run's belongs to another run on this machine
    leftover_ns = [ns for ns in _all_copylab_namespaces() if not _alive_elsewhere(ns, RUN_VAR)]
    leftover_procs = benchmark_processes(everyone=True)
    problems = [f"namespaces left behind: {leftover_ns}"] * bool(leftover_ns) + \
               [f"benchmark processes left behind: {leftover_procs}"] * bool(leftover_procs)
    if problems:
        session.config.stash[_LEFT_BEHIND] = problems
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter, config):
    for problem in config.stash.get(_LEFT_BEHIND, []):
        terminalreporter.write_line(f"LEFT BEHIND (tests/conftest.py): {problem}", red=True, bold=True)
    if hasattr(config, "workerinput"):
        return
    for text in notes_of_the_run()["unmarked_slow"]:
        terminalreporter.write_line(f"NOT MARKED SLOW (tests/conftest.py, markers; make check runs it): {text}",
                                    yellow=True)


# ------------------------------------------------------------------------------------------------
# markers that hold (issue 24): `network` on every test that creates or removes a network namespace
# (its setup included: the first test to use a sweep fixture pays for it); a test that does so
# unmarked fails, so `make check` (-m "not root and not network and not slow") stays harmless.
# `slow` on every test longer than a few seconds, so make check stays fast: that is a matter of
# time, which a loaded host stretches (issue 48: pass/fail tests assert no clock), so a test over
# SLOW_LIMIT_S of wall time and SLOW_CPU_S of CPU without `slow` is not failed but named at the end
# of the run ("NOT MARKED SLOW") and, under make test, in its record (tools/testsuite.py).
# `root` is held by running `make check` without it (README). COPYLAB_MARKER_LOG=<file> records
# each test's seconds and namespace use.
SLOW_LIMIT_S = 10.0  # far above the ~2 s a `slow` test takes
# ... and the CPU the test spent (its process and the children it waited for) beyond half that: a
# loaded machine stretches a quick test's wall time more than its CPU time
SLOW_CPU_S = SLOW_LIMIT_S / 2
NOTES_VAR = "COPYLAB_TEST_NOTES"  # a file the run's controller appends its notes to (tools/testsuite.py)
_STARTED = pytest.StashKey[tuple]()
_UNMARKED_SLOW: list[str] = []  # this process's reports of tests over the limits without `slow`


# shared fixtures that run a real sweep (as root: in namespaces) or build a report: whichever test
# asks first pays for it, so every test that uses one carries the fixture's markers
FIXTURE_MARKERS = {"quick_sweep_dir": ("root", "network", "slow"), "quick_report": ("root", "network", "slow"),
                   "hostile_report": ("slow",)}


# under pytest-xdist (--dist loadgroup) the tests of one shared fixture run on one worker: the quick
# sweep is swept once, and no test reads its folder while another re-sweeps it (test_sweep.py); the
# emulated ssh hosts (tests/sshrig.py) take fixed addresses in the root namespace: one rig at a time
# a module-scoped fixture used by tests on both workers is built twice (the hostile report: ~27 s each;
# test_lab_browser.py's two comparisons: ~60 s)
FIXTURE_GROUPS = {"quick_sweep_dir": "quick_sweep", "quick_report": "quick_sweep", "rig": "ssh_rig",
                  "hostile_report": "hostile_report", "comparisons": "comparisons"}
# a sweep removes every dead run's namespace it finds: a test that plants one to see it removed
# (test_sweep.py's faulty_sweep) must not have another worker's sweep take it first
# and a test that switches io_uring off for the whole host (kernel.io_uring_disabled) would fail
# another worker's io_uring run ("the server could not set the connection up")
ALONE_FIXTURES = {"faulty_sweep", "io_uring_disabled"}


TEST_PORTS = (20000, 32000)  # below Linux's ephemeral range (32768 on): no connection takes one of them


def worker_port() -> int:
    """A free port for a server a test starts: the first free one from a point drawn at random in
    TEST_PORTS. lab.free_port() finds a port free and the server binds it a moment later: two
    callers starting from the same port (two xdist workers, or two runs of the suite on one host, as
    when several people test on one machine) both got it and the second server's requests reached
    the first's. Per-worker ranges mended the workers, not the runs; a random start out of 12,000
    makes any two callers' ports meet about once in 12,000."""
    import secrets

    from copylab import lab

    low, high = TEST_PORTS
    return lab.free_port(low + secrets.randbelow(high - low - 100), tries=100)


IO_URING_DISABLED = Path("/proc/sys/kernel/io_uring_disabled")


@pytest.fixture
def io_uring_disabled():
    """kernel.io_uring_disabled=2 for the test, restored after (root only); the test runs alone."""
    if os.geteuid() != 0 or not IO_URING_DISABLED.exists():
        pytest.skip("needs root and a kernel with kernel.io_uring_disabled")
    before = IO_URING_DISABLED.read_text().strip()
    IO_URING_DISABLED.write_text("2")
    try:
        yield
    finally:
        IO_URING_DISABLED.write_text(before)


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups
def pytest_collection_modifyitems(items):
    for item in items:
        used = set(getattr(item, "fixturenames", ()))
        for fixture in used & set(FIXTURE_MARKERS):
            for name in FIXTURE_MARKERS[fixture]:
                item.add_marker(name)
        for group in sorted({FIXTURE_GROUPS[f] for f in used & set(FIXTURE_GROUPS)}):
            item.add_marker(pytest.mark.xdist_group(group))
        if used & ALONE_FIXTURES:
            item.add_marker("alone")


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    item.stash[_STARTED] = (_netns_watch().update(), time.monotonic(), _cpu_seconds())


def _cpu_seconds() -> float:
    """CPU time of this process and of the children it has waited for."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def marker_problems(netns: bool, network: bool) -> list[str]:
    """What a test's markers fail to say about what it did: a namespace made or removed without
    `network` (a fact of the test, not of the host's load: it fails the test)."""
    return ["created or removed a network namespace but is not marked `network`"] if netns and not network else []


def slow_unmarked(seconds: float, cpu: float, slow: bool) -> str:
    """Why a test should carry `slow` ("" when it need not): over SLOW_LIMIT_S of wall time and
    SLOW_CPU_S of CPU. Reported, never failed: it is the host's time as much as the test's."""
    if seconds > SLOW_LIMIT_S and cpu > SLOW_CPU_S and not slow:
        return f"took {seconds:.1f} s ({cpu:.1f} s of CPU) but is not marked `slow`"
    return ""


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if call.when != "teardown" or _STARTED not in item.stash:
        return
    before, started, cpu_before = item.stash[_STARTED]
    seconds, netns = time.monotonic() - started, _netns_watch().update() != before
    cpu = _cpu_seconds() - cpu_before
    log = os.environ.get("COPYLAB_MARKER_LOG")
    if log:
        with open(log, "a") as handle:
            handle.write(f"{item.nodeid}\t{seconds:.2f}\t{int(netns)}\n")
        return
    wrong = marker_problems(netns, network=item.get_closest_marker("network") is not None)
    if wrong and report.passed:
        report.outcome = "failed"
        report.longrepr = f"{item.nodeid}: " + "; ".join(wrong) + " (tests/conftest.py, markers)"
    slow = slow_unmarked(seconds, cpu, slow=item.get_closest_marker("slow") is not None)
    if slow:  # travels with the report to xdist's controller
        report.user_properties.append(("unmarked_slow", f"{item.nodeid}: {slow}"))


def pytest_runtest_logreport(report):
    _UNMARKED_SLOW.extend(text for key, text in report.user_properties if key == "unmarked_slow")


def notes_of_the_run() -> dict:
    """What the run's controller notes beside the verdict (tools/testsuite.py records it)."""
    return {"unmarked_slow": sorted(set(_UNMARKED_SLOW))}

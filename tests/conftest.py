"""Shared fixtures: the native build, one real quick sweep, and a leak check over the whole session."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

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


def copylab_namespaces() -> list[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return [line.split()[0] for line in out.splitlines() if line.startswith("copylab-")]


def benchmark_processes() -> list[str]:
    """Running native benchmark binaries of this checkout (command lines)."""
    build = str(ROOT / "native" / "build")
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if os.readlink(entry / "exe").startswith(build + "/"):
                    found.append((entry / "cmdline").read_bytes().replace(b"\0", b" ").decode())
            except OSError:
                continue
    return found


@pytest.fixture(scope="session")
def native_build() -> Path:
    """Build native/ once per session (regular and sanitizer variants)."""
    for target in ([], ["sanitize"]):
        proc = subprocess.run(["make", "-C", str(ROOT / "native"), *target], capture_output=True, text=True)
        assert proc.returncode == 0, proc.stdout + proc.stderr
    return ROOT / "native" / "build"


@pytest.fixture(scope="session")
def quick_sweep_dir(tmp_path_factory, native_build) -> Path:
    """A real sweep of params/quick.yaml (namespaces, perf, all implementations, both modes)."""
    out = tmp_path_factory.mktemp("quick-sweep")
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


def _alive_elsewhere(namespace: str) -> bool:
    """copylab-<pid>-...: is <pid> a live process outside this test session?"""
    try:
        pid = int(namespace.split("-")[1])
    except (IndexError, ValueError):
        return False
    if pid == os.getpid() or not Path(f"/proc/{pid}").exists():
        return False
    while pid > 1:  # walk up: one of this session's descendants is ours
        try:
            pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            return True
        if pid == os.getpid():
            return False
    return True


@pytest.fixture(scope="session", autouse=True)
def nothing_left_behind():
    """After the whole suite: no namespace and no benchmark process of copylab's (issue 7)."""
    yield
    # a namespace whose creator still runs and is not ours belongs to another run on this machine
    leftover_ns = [ns for ns in copylab_namespaces() if not _alive_elsewhere(ns)]
    leftover_procs = benchmark_processes()
    assert not leftover_ns, f"namespaces left behind: {leftover_ns}"
    assert not leftover_procs, f"benchmark processes left behind: {leftover_procs}"


# ------------------------------------------------------------------------------------------------
# markers that hold (issue 24): `network` on every test that creates or removes a network namespace
# (its setup included: the first test to use a sweep fixture pays for it), `slow` on every test
# longer than a few seconds. A test that does either unmarked fails, so `make check` (-m "not root
# and not network and not slow") stays fast and harmless. `root` is held by running `make check`
# without it (README). COPYLAB_MARKER_LOG=<file> records each test's seconds and namespace use.
NETNS_DIR = Path("/run/netns")
SLOW_LIMIT_S = 10.0  # far above the ~2 s a `slow` test takes: a loaded CI machine must not trip it
_STARTED = pytest.StashKey[tuple]()


def _netns_stamp():
    try:
        st = NETNS_DIR.stat()
    except OSError:
        return None
    return (st.st_ino, st.st_mtime_ns)


# shared fixtures that run a real sweep (as root: in namespaces) or build a report: whichever test
# asks first pays for it, so every test that uses one carries the fixture's markers
FIXTURE_MARKERS = {"quick_sweep_dir": ("root", "network", "slow"), "quick_report": ("root", "network", "slow"),
                   "hostile_report": ("slow",)}


def pytest_collection_modifyitems(items):
    for item in items:
        for fixture in set(getattr(item, "fixturenames", ())) & set(FIXTURE_MARKERS):
            for name in FIXTURE_MARKERS[fixture]:
                item.add_marker(name)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    item.stash[_STARTED] = (_netns_stamp(), time.monotonic())


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if call.when != "teardown" or _STARTED not in item.stash:
        return
    before, started = item.stash[_STARTED]
    seconds, netns = time.monotonic() - started, _netns_stamp() != before
    log = os.environ.get("COPYLAB_MARKER_LOG")
    if log:
        with open(log, "a") as handle:
            handle.write(f"{item.nodeid}\t{seconds:.2f}\t{int(netns)}\n")
        return
    wrong = []
    if netns and not item.get_closest_marker("network"):
        wrong.append("created or removed a network namespace but is not marked `network`")
    if seconds > SLOW_LIMIT_S and not item.get_closest_marker("slow"):
        wrong.append(f"took {seconds:.0f} s but is not marked `slow`")
    if wrong and report.passed:
        report.outcome = "failed"
        report.longrepr = f"{item.nodeid}: " + "; ".join(wrong) + " (tests/conftest.py, markers)"

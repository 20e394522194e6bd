"""The reliability catalogue (issue 7): bad inputs and faults, each tried once; nothing lost, nothing leaked.

Every bad input must give a non-zero exit, exactly one line on stderr naming what was wrong, no
traceback and no output written. Every fault must give a failed row or an empty counter *with its
reason*, and leave no namespace or benchmark process behind. Entries that tests/test_point.py,
test_sweep.py and test_params.py already try are not repeated here: README "## Reliability" lists
the whole catalogue with the test that checks each entry.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml

from conftest import ROOT, benchmark_processes, copylab_namespaces, run_copylab
from copylab import perf as perfmod
from copylab import paths as pathsmod
from copylab import measurement
from copylab.errors import CopylabError
from copylab.params import parse_grid
from copylab.point import PointSpec, run_point
from copylab.topology import loopback, netns_pair

BUILD = ROOT / "native" / "build"
# Without privileges, wherever the checkout lives: the same user (so a checkout under a 0700 folder
# such as /root stays readable) with every capability dropped, as a non-root user has none.
UNPRIVILEGED = ["setpriv", "--bounding-set=-all", "--inh-caps=-all", "--ambient-caps=-all", "--"]
TINY_GRID = {"name": "tiny", "impls": ["a1", "a3"], "modes": ["throughput"], "msg_sizes": [4096],
             "threads": [1], "duration_s": 0.2, "warmup_s": 0.1}


# ------------------------------------------------------------------------------------------------
# helpers

def assert_one_line_error(proc: subprocess.CompletedProcess, needle: str) -> None:
    """Non-zero exit, one stderr line that names the problem, no traceback anywhere."""
    assert proc.returncode != 0, f"exit 0 for a bad input; stdout: {proc.stdout}"
    lines = proc.stderr.strip().splitlines()
    assert "Traceback" not in proc.stderr + proc.stdout, proc.stderr
    assert len(lines) == 1, f"expected one line on stderr, got {len(lines)}:\n{proc.stderr}"
    assert needle in lines[0], f"{needle!r} not named in: {lines[0]}"


def folder_state(folder: Path) -> dict[str, bytes]:
    """Every file under folder (hidden ones too) with its content: equal before/after = nothing written."""
    if not folder.exists():
        return {}
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def path_without(tmp_path: Path, *tools: str) -> str:
    """A PATH like this host's, minus the given programs: a folder of links to everything else.

    On Debian /bin is /usr/bin, so dropping one program means shadowing the whole folder.
    """
    shadow = tmp_path / f"path-without-{'-'.join(tools)}"
    shadow.mkdir()
    for folder in ("/usr/local/bin", "/usr/bin"):
        for entry in Path(folder).iterdir():
            if entry.name not in tools and not (shadow / entry.name).exists():
                (shadow / entry.name).symlink_to(entry)
    return os.pathsep.join([str(Path(sys.executable).parent), str(shadow), "/usr/local/sbin", "/usr/sbin"])


def env_with(**changes: str) -> dict:
    return {**os.environ, **changes}


def dead_pid() -> int:
    """The pid of a process that has just exited (what a crashed copylab run leaves in a namespace name)."""
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def own_descendants(name_suffix: str) -> list[int]:
    """Pids of our own descendant processes whose executable ends with name_suffix (never anyone else's)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    found, todo = [], list(children.get(os.getpid(), []))
    while todo:
        pid = todo.pop()
        todo += children.get(pid, [])
        try:
            if os.readlink(f"/proc/{pid}/exe").endswith(name_suffix):
                found.append(pid)
        except OSError:
            continue
    return found


def our_namespaces() -> list[str]:
    return [ns for ns in copylab_namespaces() if ns.startswith(f"copylab-{os.getpid()}-")]


@pytest.fixture(scope="module")
def plan():
    return perfmod.probe()


# ------------------------------------------------------------------------------------------------
# bad inputs: the native programs' flags are tried by tests/test_native_cli.py (28 cases, one table);
# `copylab run`

RUN_BAD = [
    (["--impl", "a4"], "--impl"),
    (["--msg-size", "4"], "msg_size"),
    (["--msg-size", "lots"], "--msg-size"),
    (["--threads", "0"], "threads"),
    (["--duration", "-1"], "duration_s"),
    (["--pin-server", "zero"], "pin_server"),
    (["--threads", "-3"], "threads"),
    (["--threads", "99999"], "threads"),
    (["--msg-size", str(2**40)], "msg_size"),
    (["--msg-size", "1.5"], "--msg-size"),
    (["--duration", "nan"], "duration_s"),
    (["--duration", "1e9"], "duration_s"),
    (["--warmup", "-0.5"], "warmup_s"),
    (["--mode", "bulk"], "--mode"),
    (["--topology", "bridge"], "--topology"),
    (["--pin-client", "0-"], "pin_client"),
    (["--impl", None], "--impl"),  # required flag left out
]


@pytest.mark.parametrize("change,needle", RUN_BAD,
                         ids=[f"{flag} {value}" if value is not None else f"no {flag}" for (flag, value), _ in RUN_BAD])
def test_cli_run_bad_argument_is_refused_before_running(change, needle):
    flags = {"--impl": "a1", "--mode": "throughput", "--msg-size": "64", "--duration": "0.2"}
    flag, value = change
    flags.pop(flag, None)
    if value is not None:
        flags[flag] = value
    proc = run_copylab("run", *[item for pair in flags.items() for item in pair], timeout=60)
    assert proc.returncode == 2
    assert proc.stdout == "", "no row may be printed for a refused point"
    assert_one_line_error(proc, needle)


# ------------------------------------------------------------------------------------------------
# bad inputs: `copylab sweep` params files (test_params.py has 28 bad grids and 4 CLI cases)

def _write(path: Path, content: str | bytes) -> Path:
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    return path


SWEEP_BAD_FILES = [
    ("empty file", "", "mapping"),
    ("a plain string", "just some words\n", "mapping"),
    ("tab indentation", "name: t\nimpls:\n\t- a1\n", "not valid YAML"),
    ("not text", b"\xff\xfe\x00\x81binary", "not a text file"),
    ("CPU the host lacks", yaml.safe_dump({**TINY_GRID, "pin_server": "99"}), "pin_server"),
]


@pytest.mark.parametrize("what,content,needle", SWEEP_BAD_FILES, ids=[w for w, _, _ in SWEEP_BAD_FILES])
def test_cli_sweep_bad_params_file_writes_nothing(tmp_path, what, content, needle):
    params = _write(tmp_path / "grid.yaml", content)
    out = tmp_path / "out"
    proc = run_copylab("sweep", str(params), "--out", str(out), "--no-progress", timeout=60)
    assert proc.returncode == 2
    assert_one_line_error(proc, needle)
    assert not out.exists(), "a refused grid must not create its output folder"


def test_cli_sweep_out_is_an_existing_file(tmp_path):
    params = _write(tmp_path / "grid.yaml", yaml.safe_dump(TINY_GRID))
    out = _write(tmp_path / "out", "someone's file\n")
    proc = run_copylab("sweep", str(params), "--out", str(out), "--no-progress", timeout=60)
    assert_one_line_error(proc, "--out")
    assert out.read_text() == "someone's file\n"


def test_cli_sweep_params_path_is_a_folder(tmp_path):
    proc = run_copylab("sweep", str(tmp_path), "--out", str(tmp_path / "out"), timeout=60)
    assert_one_line_error(proc, "is a folder, not a regular file")
    assert not (tmp_path / "out").exists()


# ------------------------------------------------------------------------------------------------
# bad inputs: `copylab report` on unusable results folders (a missing folder and a missing
# --ai-declaration file: tests/test_report.py::test_report_cli_bad_input_is_one_line_and_writes_nothing)

def _results_frame() -> pd.DataFrame:
    """A well-formed two-row results table (values only need to be valid, they are never plotted)."""
    from copylab.contract import REQUIRED_COLUMNS

    row = dict(impl="a1", mode="throughput", msg_size=4096, threads=1, rep=0, throughput_gbps=1.0,
               latency_us=30.0, cycles=float("nan"), l1_misses=float("nan"), llc_misses=float("nan"),
               context_switches=10, bytes=125_000_000, duration_s=1.0)
    return pd.DataFrame([row, {**row, "impl": "a2"}], columns=list(REQUIRED_COLUMNS))


REPORT_BAD = [
    ("no results.csv", {}, "does not exist"),
    ("empty results.csv", {"results.csv": b""}, "not a readable CSV"),
    ("broken CSV", {"results.csv": b'impl,mode,msg_size\n"a1,throughput\n\x00\xff"",,\n"x'}, "not a readable CSV"),
    ("rows longer than the header", {"results.csv": "impl,mode\na1,throughput,4096,1,0\n"}, "lacks required columns"),
    ("missing columns", {"results.csv": _results_frame().drop(columns=["cycles", "bytes"]).to_csv(index=False)},
     "cycles"),
    ("msg_size not a number", {"results.csv": _results_frame().assign(msg_size="big").to_csv(index=False)},
     "msg_size"),
    ("unknown implementation", {"results.csv": _results_frame().assign(impl="a9").to_csv(index=False)}, "a9"),
]


@pytest.mark.parametrize("what,files,needle", REPORT_BAD, ids=[w for w, _, _ in REPORT_BAD])
def test_cli_report_unusable_results_folder(tmp_path, what, files, needle):
    folder = tmp_path / "results"
    folder.mkdir()
    for name, content in files.items():
        _write(folder / name, content)
    before = folder_state(folder)
    proc = run_copylab("report", str(folder), timeout=120)
    assert_one_line_error(proc, needle)
    assert folder_state(folder) == before, "a refused report must not write into the results folder"


# ------------------------------------------------------------------------------------------------
# bad inputs: the command line itself

BAD_COMMAND_LINES = [
    (["frobnicate"], "frobnicate"),
    ([], "COMMAND"),
    (["clean", "--bogus"], "--bogus"),
    (["clean", "everything"], "everything"),
    (["sweep"], "params"),
]


@pytest.mark.parametrize("argv,needle", BAD_COMMAND_LINES,
                         ids=["copylab " + " ".join(argv) for argv, _ in BAD_COMMAND_LINES])
def test_cli_bad_command_line(argv, needle):
    assert_one_line_error(run_copylab(*argv, timeout=60), needle)


# ------------------------------------------------------------------------------------------------
# faults during a point

@pytest.mark.parametrize("side,topology", [("server", "netns"), ("client", "netns"), ("server", "loopback")])
def test_perf_killed_mid_point_gives_failed_row_with_reason(native_build, plan, side, topology):
    """SIGKILL to one side's `perf stat` (only ours: descendants of this process) half-way through."""
    if plan.perf_path is None:
        pytest.fail("this fault needs perf installed (make test installs it)")
    program = "a2_server" if side == "server" else "client"
    spec = PointSpec(impl="a2", mode="throughput", msg_size=4096, threads=1, duration_s=3.0, warmup_s=0.2,
                     topology=topology)
    killed: list[int] = []
    started = time.monotonic()

    def kill_perf():
        while time.monotonic() < started + 10 and not killed:
            time.sleep(0.1)
            if time.monotonic() < started + 1.0:
                continue  # into the measured window first
            for pid in own_descendants("/perf"):
                with contextlib.suppress(OSError):
                    cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
                    if any(arg.endswith(f"/{program}".encode()) for arg in cmdline):
                        os.kill(pid, signal.SIGKILL)
                        killed.append(pid)

    killer = threading.Thread(target=kill_perf, daemon=True)
    killer.start()
    with (netns_pair() if topology == "netns" else loopback()) as topo:
        row, raw = run_point(spec, plan, topo)
    killer.join()
    assert killed, f"the {side}'s perf was never seen"
    assert row["status"] == "failed" and row["error"], "a point whose perf died must not pass as ok"
    assert math.isnan(row[f"{'srv' if side == 'server' else 'cli'}_context_switches"])
    assert f"perf stat of the {side} wrote no counters" in row["counters_note"]
    assert math.isnan(row["cycles"]) and math.isnan(row["context_switches"]), "a sum over one side only"
    assert our_namespaces() == []  # in netns, whatever ran inside went with the namespace
    if topology == "loopback":
        # the program perf was wrapping is orphaned, not our descendant any more: find it by its own
        # command line, which the port (free_port) makes unique to this point
        program_argv = " ".join(raw[side]["argv"][raw[side]["argv"].index(str(BUILD / program)):])
        deadline = time.monotonic() + 10  # a SIGKILLed process can take a moment to go on a loaded host
        while program_argv in [cmd.strip() for cmd in benchmark_processes()] and time.monotonic() < deadline:
            time.sleep(0.1)
        assert program_argv not in [cmd.strip() for cmd in benchmark_processes()], \
            f"{program} left running after its perf was killed"


def test_port_already_taken_fails_the_point_cleanly(native_build, plan, monkeypatch):
    """Someone holds the port the server is handed: a failed row naming it, no process left."""
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        taken = squatter.getsockname()[1]
        monkeypatch.setattr(measurement, "free_port", lambda: taken)
        spec = PointSpec(impl="a1", mode="throughput", msg_size=4096, threads=1, duration_s=0.3, warmup_s=0.1,
                         topology="loopback")
        with loopback() as topo:
            row, raw = run_point(spec, plan, topo)
    assert row["status"] == "failed"
    assert "server exited" in row["error"] and "Address already in use" in row["error"], row["error"]
    assert raw["client"] is None, "no client may be started against a server that never listened"
    assert own_descendants("/a1_server") == [] and own_descendants("/client") == []


def test_a_port_held_for_a_moment_is_traded_for_another(native_build, plan, monkeypatch):
    """The random port of the first attempt is held (as by a connection in TIME_WAIT, which
    sockperf cannot bind past): the server is started again on another port and the point is ok."""
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        ports = iter([squatter.getsockname()[1], measurement.free_port()])
        monkeypatch.setattr(measurement, "free_port", lambda: next(ports))
        spec = PointSpec(impl="a1", mode="throughput", msg_size=4096, threads=1, duration_s=0.2, warmup_s=0.05,
                         topology="loopback")
        with loopback() as topo:
            row, raw = run_point(spec, plan, topo)
    assert row["status"] == "ok", row["error"]
    assert row["bytes"] > 0 and next(ports, None) is None  # both ports were asked for


def test_native_programs_not_built_is_one_line(plan, monkeypatch, tmp_path):
    monkeypatch.setattr(pathsmod, "BUILD_DIR", tmp_path / "empty-build")
    spec = PointSpec(impl="a2", mode="throughput", msg_size=4096, threads=1, topology="loopback")
    with loopback() as topo, pytest.raises(CopylabError) as info:
        run_point(spec, plan, topo)
    message = str(info.value)
    assert "make -C native" in message and "\n" not in message


def test_sigterm_mid_run_unwinds_and_leaves_nothing(native_build):
    proc = subprocess.Popen([sys.executable, "-m", "copylab", "run", "--impl", "a3", "--mode", "throughput",
                             "--msg-size", "65536", "--duration", "10", "--topology", "netns"],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 15
    while not [ns for ns in copylab_namespaces() if ns.startswith(f"copylab-{proc.pid}-")] \
            and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(1.0)  # into the measured window
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130 and "interrupted" in err and "Traceback" not in err, err
    assert out == "", "an interrupted run must not print a row"
    assert not [ns for ns in copylab_namespaces() if ns.startswith(f"copylab-{proc.pid}-")]
    assert not [cmd for cmd in benchmark_processes() if "--msg-size 65536 --mode throughput --threads 1 --duration 10"
                in cmd]


# ------------------------------------------------------------------------------------------------
# namespaces left by an earlier crash

def _make_namespace(name: str) -> None:
    subprocess.run(["ip", "netns", "add", name], check=True, capture_output=True)


def test_clean_removes_a_dead_runs_namespace_and_keeps_a_live_one():
    dead = f"copylab-{dead_pid()}-abc123-srv"
    holder = subprocess.Popen(["sleep", "60"])  # stands for a copylab run that is still alive
    live = f"copylab-{holder.pid}-abc123-srv"
    _make_namespace(dead)
    _make_namespace(live)
    try:
        proc = run_copylab("clean", timeout=60)
        assert proc.returncode == 0, proc.stderr
        assert f"removed namespace {dead}" in proc.stdout
        assert f"kept {live}" in proc.stdout
        present = copylab_namespaces()
        assert dead not in present and live in present
    finally:
        holder.kill()
        holder.wait()
        for ns in (dead, live):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)


# ------------------------------------------------------------------------------------------------
# one sweep under three faults at once: perf missing from PATH, a dead run's namespace, and a
# half-written record plus .pending debris from an earlier crash. Each test below checks one.

@pytest.fixture(scope="module")
def faulty_sweep(tmp_path_factory, native_build):
    tmp = tmp_path_factory.mktemp("faulty-sweep")
    params = tmp / "tiny.yaml"
    params.write_text(yaml.safe_dump(TINY_GRID))
    out = tmp / "out"
    runs = out / "runs"
    (runs / ".pending").mkdir(parents=True)
    (runs / ".pending" / "a1_half.ipynb").write_text('{"cells": [')  # what a crash mid-point leaves
    a1 = next(p for p in parse_grid(TINY_GRID).points("netns") if p.impl == "a1")
    half_record = runs / f"{a1.point_id()}.json"
    half_record.write_text('{"row": {"status": "ok", "impl": "a1"')  # truncated: must be re-measured
    leftover = f"copylab-{dead_pid()}-abc123-srv"
    _make_namespace(leftover)
    try:
        proc = run_copylab("sweep", str(params), "--out", str(out), "--no-progress", timeout=300,
                           env=env_with(PATH=path_without(tmp, "perf")))
    finally:
        subprocess.run(["ip", "netns", "del", leftover], capture_output=True)  # if the sweep did not
    return {"proc": proc, "out": out, "leftover": leftover, "half_record": half_record}


def test_sweep_without_perf_on_path_still_gives_rows_with_the_reason(faulty_sweep):
    proc, out = faulty_sweep["proc"], faulty_sweep["out"]
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "perf is not installed" in proc.stderr, "the sweep must say up front that counters will be empty"
    results = pd.read_csv(out / "results.csv")
    assert len(results) == 2 and (results["status"] == "ok").all(), results["error"].tolist()
    assert (results["bytes"] > 0).all()
    assert results["cycles"].isna().all() and results["context_switches"].isna().all()
    assert results["counters_note"].str.contains("perf is not installed").all()


def test_sweep_removes_a_dead_runs_namespace(faulty_sweep):
    assert f"removed namespace {faulty_sweep['leftover']}" in faulty_sweep["proc"].stderr
    assert faulty_sweep["leftover"] not in copylab_namespaces()


def test_sweep_remeasures_a_half_written_record(faulty_sweep):
    record = json.loads(faulty_sweep["half_record"].read_text())  # whole JSON now
    assert record["row"]["status"] == "ok" and record["row"]["bytes"] > 0
    assert not (faulty_sweep["out"] / "runs" / ".pending").exists(), "crash debris must be cleared"


# ------------------------------------------------------------------------------------------------
# running without root (privileges dropped)

def _unprivileged(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([*UNPRIVILEGED, sys.executable, "-m", "copylab", *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=timeout, env=env_with(HOME="/tmp"))


def test_without_root_netns_is_refused_in_one_line():
    proc = _unprivileged("run", "--impl", "a1", "--mode", "throughput", "--msg-size", "4096", "--topology", "netns")
    assert proc.returncode == 2
    assert_one_line_error(proc, "topology netns")
    assert "root" in proc.stderr


def test_without_root_auto_falls_back_to_loopback_loudly(native_build):
    proc = _unprivileged("run", "--impl", "a2", "--mode", "throughput", "--msg-size", "4096", "--duration", "0.3",
                      "--warmup", "0.1", "--congestion", "host", "--json")
    assert proc.returncode == 0, proc.stderr
    row = json.loads(proc.stdout)
    assert row["topology"] == "loopback" and row["status"] == "ok" and row["bytes"] > 0
    warning = [line for line in proc.stderr.splitlines() if "WARNING" in line]
    assert warning and "two namespaces" in warning[0] and "root" in warning[0], proc.stderr


def test_without_root_a_congestion_control_the_host_withholds_is_one_line(native_build):
    """cubic is the default; a host whose unprivileged programs may not pick it (this VM allows
    reno and bbr) says so before anything runs, with the way out; where it is allowed it runs."""
    allowed = Path("/proc/sys/net/ipv4/tcp_allowed_congestion_control").read_text().split()
    proc = _unprivileged("run", "--impl", "a1", "--mode", "throughput", "--msg-size", "4096", "--duration", "0.3",
                         "--warmup", "0.1", "--json")
    if "cubic" in allowed:
        assert proc.returncode == 0 and json.loads(proc.stdout)["srv_congestion"] == "cubic", proc.stderr
    else:
        assert proc.returncode == 2
        assert_one_line_error(proc, "congestion cubic")
        assert "tcp_allowed_congestion_control" in proc.stderr and "--congestion host" in proc.stderr


# ------------------------------------------------------------------------------------------------
# report tools missing

def test_report_without_chromium_and_xelatex_writes_html_and_says_how_to_install(tmp_path, quick_sweep_dir):
    out = tmp_path / "report"
    proc = run_copylab("report", str(quick_sweep_dir), "--output-dir", str(out), timeout=600,
                       env=env_with(PATH=path_without(tmp_path, "chromium", "xelatex"), BROWSER_PATH=""))
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr
    error = [line for line in proc.stderr.splitlines() if "error:" in line]
    assert len(error) == 1, proc.stderr
    assert "xelatex" in error[0] and "chromium" in error[0] and "apt-get install" in error[0]
    assert (out / "report.html").stat().st_size > 0
    assert not (out / "report.pdf").exists(), "no PDF may be claimed without xelatex"
    assert not [p.name for p in out.iterdir() if p.name.endswith(".tmp")], "no half-written file left"

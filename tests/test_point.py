"""The experiment engine: one point in namespaces with perf on both ends; faults give failed rows, no leftovers."""

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

import pytest
from conftest import ROOT, benchmark_processes, copylab_namespaces, is_ours, run_copylab
from copylab import measurement
from copylab import paths as pathsmod
from copylab import perf as perfmod
from copylab.contract import COLUMNS, REQUIRED_COLUMNS
from copylab.errors import CopylabError
from copylab.point import run_point
from copylab.pointspec import PointSpec
from copylab.topology import loopback, netns_pair
from faults import BUILD, our_namespaces, own_descendants

HW_CACHE_EVENTS = ("L1-dcache-load-misses", "LLC-load-misses")


def _host_counts(event: str) -> bool:
    """Independent of copylab.perf: does `perf stat` count this event here?"""
    proc = subprocess.run(["perf", "stat", "-x,", "-e", event, "true"], capture_output=True, text=True)
    line = next((l for l in proc.stderr.splitlines() if event in l), "")
    return proc.returncode == 0 and line.split(",")[0].strip().replace(".", "").isdigit()


@pytest.fixture(scope="module")
def plan():
    return perfmod.probe()


def _our_ns() -> list[str]:
    return [ns for ns in copylab_namespaces() if ns.startswith(f"copylab-{os.getpid()}-")]


@pytest.mark.root
@pytest.mark.network
def test_point_in_namespaces_gives_a_consistent_row(native_build, plan):
    spec = PointSpec(impl="a2", mode="throughput", msg_size=65536, threads=2, duration_s=0.6, warmup_s=0.2)
    with netns_pair() as topo:
        row, raw = run_point(spec, plan, topo)
    assert row["status"] == "ok", row["error"]
    assert set(COLUMNS) <= set(row) and set(REQUIRED_COLUMNS) <= set(row)
    assert row["topology"] == "netns" and row["bytes"] > 0
    assert row["throughput_gbps"] == pytest.approx(row["bytes"] * 8 / row["duration_s"] / 1e9, rel=1e-6)
    assert row["context_switches"] > 0
    assert row["context_switches"] == row["srv_context_switches"] + row["cli_context_switches"]
    # cycles: PMU cycles where the host counts them, TSC reference cycles where it does not
    assert row["cycles"] > 0
    assert row["cycles_source"] == ("pmu" if _host_counts("cycles") else "tsc")
    for column, event in zip(("l1_misses", "llc_misses"), HW_CACHE_EVENTS):
        if _host_counts(event):
            assert row[column] > 0
        else:
            assert math.isnan(row[column]) and row["counters_note"], "an empty counter needs its reason"
    # the window the counters cover is the measured one: sender task-clock cannot exceed it by much
    assert row["srv_task_clock_ms"] <= (row["duration_s"] + 0.5) * 1000 * os.cpu_count()
    assert row["user_copy_bytes"] == 0 and row["send_calls"] > 0
    assert json.loads(raw["client"]["stdout"].strip().splitlines()[-1])["role"] == "client"
    # started with the server, the client got the port from the FIFO once the server listened
    assert "--port-from" in raw["client"]["argv"] and "--port" not in raw["client"]["argv"]
    assert _our_ns() == []


@pytest.mark.root
@pytest.mark.network
def test_latency_row_has_percentiles(native_build, plan):
    spec = PointSpec(impl="a1", mode="latency", msg_size=256, threads=1, duration_s=0.4, warmup_s=0.1)
    with netns_pair() as topo:
        row, _ = run_point(spec, plan, topo)
    assert row["status"] == "ok", row["error"]
    assert 0 < row["latency_p50_us"] <= row["latency_p99_us"] <= row["latency_max_us"]
    assert row["latency_min_us"] <= row["latency_us"] <= row["latency_max_us"]
    assert row["user_copy_bytes"] == row["server_bytes"]  # A1 serialises every byte it sends


@pytest.mark.root
def test_no_perf_still_gives_a_row_with_the_reason(native_build, tmp_path):
    spec = PointSpec(impl="a3", mode="throughput", msg_size=16384, threads=1, duration_s=0.3, warmup_s=0.1,
                     topology="loopback")
    no_perf = perfmod.probe(perf=str(tmp_path / "no-such-perf"))
    from copylab.topology import loopback

    with loopback() as topo:
        row, _ = run_point(spec, no_perf, topo)
    assert row["status"] == "ok", row["error"]
    assert row["bytes"] > 0 and math.isnan(row["cycles"]) and math.isnan(row["context_switches"])
    assert row["counters_note"], "empty counters must say why"
    assert row["zc_completions"] == row["zc_sends"] > 0


def _kill_later(pattern: str, delay: float, signum=signal.SIGKILL) -> threading.Thread:
    """Signal the process matching pattern delay seconds after it appears (a loaded machine may take
    longer than delay to start it: a clock started earlier would signal nobody); thread.killed lists
    the pids signalled."""
    def kill():
        deadline = time.monotonic() + 30.0
        while not _pids_matching(pattern) and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(delay)
        for pid in _pids_matching(pattern):
            os.kill(pid, signum)
            thread.killed.append(pid)

    thread = threading.Thread(target=kill, daemon=True)
    thread.killed = []
    thread.start()
    return thread


def _pids_matching(fragment: str) -> list[int]:
    """Our processes whose command line holds fragment (never another xdist worker's: conftest.is_ours)."""
    out = subprocess.run(["pgrep", "-f", fragment], capture_output=True, text=True).stdout
    return [int(p) for p in out.split() if is_ours(int(p))]


@pytest.mark.parametrize("victim,expect", [
    (f"{ROOT}/native/build/a2_server --bind", "server exited"),
    (f"{ROOT}/native/build/client --connect", "client exited"),
])
@pytest.mark.root
@pytest.mark.network
def test_killed_process_gives_failed_row_and_no_leftovers(native_build, plan, victim, expect):
    spec = PointSpec(impl="a2", mode="throughput", msg_size=4096, threads=2, duration_s=3.0, warmup_s=0.2)
    killer = _kill_later(victim, delay=1.0)
    with netns_pair() as topo:
        row, _ = run_point(spec, plan, topo)
    killer.join()
    assert killer.killed, f"{victim} never ran"
    # a death the driver missed would end in its own deadline's row ("did not finish within"), not
    # this one: the error is the fact the test asserted with "under 20 s"
    assert row["status"] == "failed" and expect in row["error"], row["error"]
    assert _our_ns() == [] and benchmark_processes() == []


@pytest.mark.root
@pytest.mark.network
def test_namespace_deleted_mid_point_gives_failed_row(native_build, plan):
    spec = PointSpec(impl="a1", mode="throughput", msg_size=4096, threads=1, duration_s=3.0, warmup_s=0.2)
    with netns_pair() as topo:
        def delete():
            time.sleep(1.0)
            subprocess.run(["ip", "netns", "del", topo.client_ns], check=True)

        threading.Thread(target=delete, daemon=True).start()
        row, _ = run_point(spec, plan, topo)
    assert row["status"] == "failed"
    assert _our_ns() == [] and benchmark_processes() == []


@pytest.mark.root
@pytest.mark.network
@pytest.mark.slow
def test_cli_run_prints_the_row_as_json(native_build):
    proc = run_copylab("run", "--impl", "a3", "--mode", "throughput", "--msg-size", "65536", "--threads", "1",
                       "--duration", "0.4", "--warmup", "0.1", "--topology", "netns", "--json", timeout=60)
    assert proc.returncode == 0, proc.stderr
    row = json.loads(proc.stdout)
    assert list(row) == list(COLUMNS)
    assert row["impl"] == "a3" and row["status"] == "ok" and row["topology"] == "netns"
    assert row["zc_copied"] == row["zc_completions"] == row["zc_sends"]  # local delivery always copies


@pytest.mark.root
@pytest.mark.network
def test_cli_run_interrupted_leaves_nothing(native_build):
    proc = subprocess.Popen([sys.executable, "-m", "copylab", "run", "--impl", "a2", "--mode", "throughput",
                             "--msg-size", "4096", "--duration", "10", "--topology", "netns"],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60  # a wait, not a bound: it ends when the client appears
    while not _pids_matching(f"{ROOT}/native/build/client") and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.3)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert "interrupted" in err and "Traceback" not in err
    ns_of_run = [ns for ns in copylab_namespaces() if ns.startswith(f"copylab-{proc.pid}-")]
    assert ns_of_run == [] and benchmark_processes() == []


# ------------------------------------------------------------------------------------------------
# the right reason (issue 23): a stopped side, a window that outlasts the wall clock, a perf that
# prints impossible counts

def _signal_later(pattern: str, *steps: tuple[float, int]) -> threading.Thread:
    """At each (delay from the first process matching pattern, signal), send it to the processes
    matching pattern (gone: ignored). The clock starts when the process appears, not when this is
    called: on a cold machine the namespaces and the server take over 0.6 s, and a signal sent before
    the client existed was lost (the point then ran "ok"). The thread's `delivered` lists the signals
    that reached a process, so a test can tell a lost signal from a missed detection; its `cancel`
    (an Event), once set, drops the steps still to come."""
    delivered: list[int] = []
    cancel = threading.Event()

    def run():
        deadline = time.monotonic() + 30
        while not _pids_matching(pattern) and time.monotonic() < deadline:
            time.sleep(0.01)
        started = time.monotonic()
        for delay, signum in steps:
            if cancel.wait(max(0.0, started + delay - time.monotonic())):
                return
            for pid in _pids_matching(pattern):
                with __import__("contextlib").suppress(ProcessLookupError):
                    os.kill(pid, signum)
                    delivered.append(signum)

    thread = threading.Thread(target=run, daemon=True)
    thread.delivered, thread.cancel = delivered, cancel
    thread.start()
    return thread


@pytest.mark.root
@pytest.mark.network
@pytest.mark.slow
@pytest.mark.parametrize("side, pattern", [("server", f"{ROOT}/native/build/a2_server --bind"),
                                           ("client", f"{ROOT}/native/build/client --connect")])
def test_a_stopped_side_is_named_not_blamed_on_its_exit_status(native_build, plan, side, pattern):
    """SIGSTOP 1 s into a 3 s window: the point fails while the side is still stopped, naming it (it
    read "exited with status 0", or status=ok with duration_s=0.705). The SIGCONT that would free a
    side the driver waited for comes a minute later, so "at once" is a fact, not a clock: the point
    ended before it was needed (it read "within 6 s of the start", which a loaded host's namespaces
    and start alone could take)."""
    spec = PointSpec(impl="a2", mode="throughput", msg_size=4096, threads=2, duration_s=3.0, warmup_s=0.2)
    signals = _signal_later(pattern, (1.2, signal.SIGSTOP), (61.2, signal.SIGCONT))
    with netns_pair() as topo:
        row, _ = run_point(spec, plan, topo)
    continued = signal.SIGCONT in signals.delivered
    signals.cancel.set()
    signals.join()
    assert signal.SIGSTOP in signals.delivered and not continued, "waited for the stopped side"
    assert row["status"] == "failed" and row["error_kind"] == "stopped", row["error"]
    assert row["error"].startswith(f"the {side} was stopped (SIGSTOP"), row["error"]
    assert _our_ns() == [] and benchmark_processes() == []


@pytest.mark.root
@pytest.mark.network
@pytest.mark.slow
@pytest.mark.alone  # it stops the client by its command line: another worker's client would match too
def test_a_window_stretched_on_the_wall_clock_fails_the_point(native_build, plan, monkeypatch):
    """With the stop detector blinded, the wall-clock check still catches a client stopped for 3 s
    inside a 1 s window."""
    from copylab import measurement

    monkeypatch.setattr(measurement.Supervisor, "stopped_side", lambda self: "")
    spec = PointSpec(impl="a1", mode="throughput", msg_size=4096, threads=1, duration_s=1.0, warmup_s=0.2)
    signals = _signal_later(f"{ROOT}/native/build/client --connect", (0.6, signal.SIGSTOP), (3.6, signal.SIGCONT))
    with netns_pair() as topo:
        row, _ = run_point(spec, plan, topo)
    signals.join()
    assert signal.SIGSTOP in signals.delivered, "the client was gone before its SIGSTOP"
    assert row["status"] == "failed" and row["error_kind"] == "window_stretched", row["error"]
    assert "for a 1 s window" in row["error"] and "of wall clock" in row["error"]
    assert _our_ns() == [] and benchmark_processes() == []


FAKE_PERF = r"""#!/usr/bin/env python3
# a perf that runs its workload and then claims impossible counts
import signal, subprocess, sys

args = sys.argv[1:]
if args[:1] == ["--version"]:
    print("perf version 6.1.0")
    sys.exit(0)
out = args[args.index("-o") + 1] if "-o" in args else "/dev/null"
child = subprocess.Popen(args[args.index("--") + 1:])
signal.signal(signal.SIGINT, lambda *_: child.send_signal(signal.SIGINT))
code = child.wait()
with open(out, "w") as handle:
    handle.write("100.0,msec,task-clock,100,100.00,,\n2e32,,msr/tsc/,100,100.00,,\n"
                 "-3,,cpu-migrations,100,100.00,,\n7,,context-switches,100,100.00,,\n")
sys.exit(code if code >= 0 else 128 - code)
"""


@pytest.mark.root
def test_a_perf_printing_impossible_counts_fails_the_point_naming_the_value(native_build, tmp_path):
    from copylab.topology import loopback

    fake = tmp_path / "perf"
    fake.write_text(FAKE_PERF)
    fake.chmod(0o755)
    plan = perfmod.probe(perf=str(fake))
    assert plan.perf_path == str(fake) and plan.cycles_source == "tsc"
    spec = PointSpec(impl="a1", mode="throughput", msg_size=4096, threads=1, duration_s=0.3, warmup_s=0.1,
                     topology="loopback")
    with loopback() as topo:
        row, _ = run_point(spec, plan, topo)
    assert row["status"] == "failed" and row["error_kind"] == "counters_invalid", row["error"]
    assert "msr/tsc/ = 2e32 is impossible" in row["error"]
    assert math.isnan(row["cycles"]) and math.isnan(row["context_switches"])
    assert row["bytes"] > 0  # the program's own numbers stay, the row just is not believed


# ------------------------------------------------------------------------------------------------
# faults during a point

@pytest.mark.root
@pytest.mark.network
@pytest.mark.slow
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
        deadline = time.monotonic() + 60  # a SIGKILLed process can take a moment to go on a loaded host
        while program_argv in [cmd.strip() for cmd in benchmark_processes()] and time.monotonic() < deadline:
            time.sleep(0.1)
        assert program_argv not in [cmd.strip() for cmd in benchmark_processes()], \
            f"{program} left running after its perf was killed"


@pytest.mark.root
def test_the_server_is_stopped_through_its_perf_which_reaps_it(native_build, plan, monkeypatch):
    """SIGINT goes to the server program, not its group: perf stat sees it exit, writes the counters
    and reaps it. (To the group, perf exited first and left the server to init, which then booked its
    CPU time as another program's.)"""
    assert plan.perf_path, "perf is one of copylab's Debian packages (make deps installs it)"
    seen = {}
    stop = measurement.stop_server

    def watched_stop(ctx, server):
        seen["program"], seen["leader"] = server.program_pid(), server.proc.pid
        return stop(ctx, server)

    monkeypatch.setattr("copylab.point.stop_server", watched_stop)
    spec = PointSpec(impl="a2", mode="throughput", msg_size=4096, threads=1, duration_s=0.3, warmup_s=0.1,
                     topology="loopback")
    with loopback() as topo:
        row, raw = run_point(spec, plan, topo)
        assert row["status"] == "ok", row["error"]
        assert seen["program"] != seen["leader"], "the server runs under perf stat"
        assert not Path(f"/proc/{seen['program']}").exists(), "the server outlived its perf (orphaned)"
    assert row["srv_task_clock_ms"] > 0 and json.loads(raw["server"]["stdout"].strip().splitlines()[-1])["bytes"] > 0


@pytest.mark.root
def test_a_client_that_dies_waiting_for_its_port_fails_the_point_cleanly(native_build, plan, monkeypatch):
    """The client starts with the server and waits for the port: if it exits first (here a flag it
    refuses), the row names the client's own line and nothing is left running or waiting."""
    from copylab.runners.native import NativeRunner

    good = NativeRunner.client_argv
    monkeypatch.setattr(NativeRunner, "client_argv", lambda self, *a, **k: good(self, *a, **k) + ["--threads", "2"])
    spec = PointSpec(impl="a1", mode="throughput", msg_size=4096, threads=1, duration_s=0.3, warmup_s=0.1,
                     topology="loopback")
    with loopback() as topo:
        row, raw = run_point(spec, plan, topo)
    assert row["status"] == "failed" and row["error_kind"] == "client_failed"
    assert row["error"].startswith("client exited with status 2 before it connected: ") and \
        "--threads: given more than once" in row["error"], row["error"]
    assert own_descendants("/a1_server") == [] and own_descendants("/client") == []


@pytest.mark.root
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


@pytest.mark.root
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


@pytest.mark.root
@pytest.mark.network
@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT], ids=lambda s: s.name)
def test_an_ending_signal_mid_run_unwinds_and_leaves_nothing(native_build, signum):
    proc = subprocess.Popen([sys.executable, "-m", "copylab", "run", "--impl", "a3", "--mode", "throughput",
                             "--msg-size", "65536", "--duration", "10", "--topology", "netns"],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60  # a wait, not a bound: it ends when the namespaces appear
    while not [ns for ns in copylab_namespaces() if ns.startswith(f"copylab-{proc.pid}-")] \
            and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(1.0)  # into the measured window
    proc.send_signal(signum)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130 and "interrupted" in err and "Traceback" not in err, err
    assert out == "", "an interrupted run must not print a row"
    assert not [ns for ns in copylab_namespaces() if ns.startswith(f"copylab-{proc.pid}-")]
    assert not [cmd for cmd in benchmark_processes() if "--msg-size 65536 --mode throughput --threads 1 --duration 10"
                in cmd]


@pytest.mark.root
@pytest.mark.network
def test_a_point_of_rounds_has_each_rounds_window_where_the_client_put_it(native_build, plan):
    """The client's round output (round_intervals, round_warmup_s, round_gap_s) through the engine: the
    series holds one window per round, each inside its own round's intervals and as long as its share
    of the window, and the calibration reads the same rounds and gaps from the record (sweep/rounds.py)."""
    from copylab.sweep.rounds import calibration_run

    spec = PointSpec(impl="a2", mode="throughput", msg_size=4096, threads=2, duration_s=0.6, warmup_s=0.1, rounds=3)
    with netns_pair() as topo:
        row, raw = run_point(spec, plan, topo)
    assert row["status"] == "ok", row["error"]
    client = json.loads(raw["client"]["stdout"].strip().splitlines()[-1])
    assert row["rounds"] == 3 == len(client["round_intervals"])
    series = raw["series"]
    windows = [(series["window_first"], series["window_last"]), *map(tuple, series["later_windows"])]
    starts = [sum(client["round_intervals"][:k]) for k in range(4)]
    per_round = round(0.2 / series["interval_s"])  # intervals in one round's 0.2 s window
    for k, (first, last) in enumerate(windows):
        assert starts[k] <= first <= last < starts[k + 1], (k, windows, client["round_intervals"])
        assert per_round - 2 <= last - first + 1 <= per_round, (k, windows)  # whole intervals inside it
    run = calibration_run(raw)
    assert [len(r) for r in run["rounds"]] == [last - first + 1 for first, last in windows]
    assert run["gaps"] == client["round_gap_s"] and run["gaps"][0] is None
    assert _our_ns() == []

"""One point's measurement as stages with one job each (point.run_point runs them in order):

  Context        where everything lives: the runner, each side's host and folder, perf's control
                 FIFOs, the shared window, the profiler
  start_server   the server under its wrappers, started again on another port when the one drawn
                 is taken
  start_client   the client, its output lines passed to the runner for the window's events; a
                 client that can wait for its port (runner.port_later) starts with the server, and
                 hand_port gives it the port once the server listens
  Supervisor     waits for the client while watching the server, the hosts and the namespaces
  stop_server    SIGINT, then the exit status judged
  collect        what the programs, perf and /proc/stat said, once everything has stopped
  build_row      the results row from what was collected: a pure function

Each stage returns a Failure (kind, one line) or None; the first failure is the point's.
"""

from __future__ import annotations

import contextlib
import errno
import math
import os
import shutil
import signal
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from . import contract, intervals
from . import perf as perfmod
from .contract import COLUMNS, COUNTER_KEYS, SUMMED_COUNTERS
from .errors import CopylabError, ErrorKind, MeasurementError
from .escape import quoted
from .procfs import stat_fields
from .profile.record import Profiler, empty_columns
from .runners import Failure, Result
from .sides import PerfControl, Side, Window, dies_with_parent, start_side

PROCESS_GROUPS = "process-groups"  # one line per started process group, in the point's workdir
LISTEN_TIMEOUT_S = 10.0
STOP_TIMEOUT_S = 10.0
POLL_S = 0.01
SUPERVISE_S = 0.2  # how often the supervisor looks at the topology and the deadline between exits
PORT_FIFO = "port"  # in the client's folder: where a client started early waits for the server's port
# a server that cannot bind its random port is started again on another (a program may set no
# SO_REUSEADDR); on another host its folder goes with the failed attempt, so that fails the point
BIND_ATTEMPTS = 3


def free_port() -> int:
    """A TCP port free on this host's loopback now (the server binds it right after)."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _pinned(cpus: str | None, host) -> list[str]:
    if cpus is None:
        return []
    if not host.remote and shutil.which("taskset") is None:  # a remote host was checked for it
        raise CopylabError("CPU pinning needs 'taskset' (Debian package util-linux)")
    return ["taskset", "-c", cpus]


@dataclass
class Context:
    """A point's settings and the places and controls its stages share."""

    spec: object
    plan: object
    topo: object
    workdir: Path
    runner: object
    profile_dir: Path | None = None
    wake: threading.Event = field(default_factory=threading.Event)  # a side's exit wakes the supervisor

    def __post_init__(self):
        spec, plan, topo = self.spec, self.plan, self.topo
        self.registry = self.workdir / PROCESS_GROUPS
        self.hosts = topo.hosts()
        # each side's folder on its host (the local workdir on this one)
        self.dirs = {side: host.workdir(self.workdir, side) for side, host in self.hosts.items()}
        self.perf_out = {side: f"{self.dirs[side]}/{side}.perf" for side in self.hosts}
        self.controls = {side: PerfControl(self.hosts[side], self.dirs[side], f"{side}-stat")
                         for side in self.hosts} if plan.perf_path else {}
        # the pinned CPUs' busy share is read from this host's /proc/stat
        cpus = {side: contract.parse_cpu_list(key, getattr(spec, key))
                for side, key in (("srv", "pin_server"), ("cli", "pin_client"))
                if getattr(spec, key) is not None and topo.kind in ("netns", "loopback")}
        self.window = Window(list(self.controls.values()), cpus)
        self.profiler = (Profiler(plan, spec, topo, self.workdir, self.window, self.profile_dir, self.dirs)
                         if spec.profile and plan.perf_path else None)

    def start(self, side: str, pin: str | None, program_argv: list[str], listeners) -> Side:
        """taskset -> [perf record] -> perf stat (counting from the window) -> the program."""
        host = self.hosts[side]
        profile = self.profiler.wrap_prefix(side) if self.profiler is not None else []
        stat = perfmod.stat_prefix(self.plan, self.perf_out[side])
        if stat:  # stat_prefix ends with "--": counting disabled until the window opens
            stat = stat[:-1] + ["-D", "-1", *self.controls[side].args(), "--"]
        # what each perf wrapper starts dies with it, and the chain with the engine (sides.PARENT_DEATH)
        chain, guard = _pinned(pin, host), dies_with_parent([], host)
        for wrapper in (profile, stat):
            if wrapper:
                chain += wrapper + guard
        argv = host.command(chain + program_argv, self.dirs[side])
        return start_side(side, dies_with_parent(argv, host), self.registry, listeners, self.wake, host=host)


def _wait_ready(flag: threading.Event, side: Side) -> bool:
    deadline = time.monotonic() + LISTEN_TIMEOUT_S
    while time.monotonic() < deadline:
        if flag.wait(POLL_S * 5):
            return True
        if side.poll() is not None:
            side.finish(timeout=2.0)
            return False
    return False


def start_server(ctx: Context) -> tuple[Side | None, int, Failure | None]:
    """The server, listening; (side, port, None), or the failure that kept it from listening."""
    spec, topo, runner, host = ctx.spec, ctx.topo, ctx.runner, ctx.hosts["server"]
    server = None
    for attempt in range(1, BIND_ATTEMPTS + 1):
        port = free_port() if topo.kind == "loopback" else topo.next_port()
        ready = threading.Event()
        server = ctx.start("server", spec.pin_server,
                           runner.server_argv(spec, topo.server_addr, port, ctx.dirs["server"], host.build_dir),
                           [lambda stream, line, ready=ready: ready.set() if runner.server_ready(stream, line) else None])
        if _wait_ready(ready, server):
            return server, port, None
        code = server.poll()
        if server.lost:
            return server, port, (ErrorKind.HOST_LOST, f"the ssh connection to host {host.name} was lost")
        error = runner.error_of(server)
        if (attempt < BIND_ATTEMPTS and code is not None and not host.remote
                and any(words in error for words in runner.port_taken)):
            continue  # the random port is held, e.g. by a connection of a moment ago in TIME_WAIT
        what = f"exited with status {code}" if code is not None else f"did not listen within {LISTEN_TIMEOUT_S:g} s"
        return server, port, (ErrorKind.SERVER, f"server {what}: {error or 'no message'}")
    return server, 0, (ErrorKind.SERVER, "server could not listen")


def start_client(ctx: Context, port: int) -> Side:
    """The client; its lines open and close the window as its runner reads them (or a timer does)."""
    spec, runner, window = ctx.spec, ctx.runner, ctx.window

    def on_line(stream: str, line: str) -> None:
        event = runner.client_event(stream, line)
        if event is None:
            return
        if event.action == "close":
            window.close()
        elif event.delay_s:
            window.open_in(event.delay_s, event.source)
        else:
            window.open(event.source)

    client = ctx.start("client", spec.pin_client, runner.client_argv(
        spec, ctx.topo.server_addr, port, ctx.dirs["client"], ctx.hosts["client"].build_dir), [on_line])
    timer = runner.timer_window(spec)
    if timer is not None:
        window.open_in(timer[0], runner.window_source)
        window.close_in(timer[1])
    return client


def starts_early(ctx: Context) -> bool:
    """Does the client start while the server starts? When its runner can wait for the port and it
    runs on this host (the FIFO is here): each program's start-up (perf, the exec, the threads)
    then overlaps the other's instead of adding to it, and nothing measured changes, since the
    client's clocks start once it has the port."""
    return ctx.runner.port_later and not ctx.hosts["client"].remote


def _port_fifo(ctx: Context) -> Path:
    return Path(ctx.dirs["client"]) / PORT_FIFO


def start_early_client(ctx: Context) -> Side:
    os.mkfifo(_port_fifo(ctx), 0o600)
    return start_client(ctx, str(_port_fifo(ctx)))


def hand_port(ctx: Context, client: Side, port: int) -> Failure | None:
    """Write the listening server's port to the FIFO the early client reads it from."""
    fifo = _port_fifo(ctx)
    deadline = time.monotonic() + LISTEN_TIMEOUT_S
    while True:
        try:  # non-blocking: a client that died before opening its end must not hang the engine
            fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC)
            break
        except OSError as exc:
            if exc.errno != errno.ENXIO:  # ENXIO: no reader yet
                return ErrorKind.CLIENT, f"cannot hand the server's port to the client: {exc}"
        if client.poll() is not None:
            client.finish(timeout=2.0)
            return ErrorKind.CLIENT, (f"client exited with status {client.returncode} before it connected: "
                                      f"{ctx.runner.error_of(client) or 'no message'}")
        if time.monotonic() > deadline:
            return ErrorKind.CLIENT, f"client did not wait for the server's port within {LISTEN_TIMEOUT_S:g} s"
        time.sleep(POLL_S / 10)
    try:
        os.write(fd, f"{port}\n".encode())
    finally:
        os.close(fd)
    return None


class Supervisor:
    """Waits for the client while watching the server, the hosts and the namespaces."""

    def __init__(self, ctx: Context, server: Side, client: Side):
        self.ctx, self.server, self.client = ctx, server, client
        self.pids: dict[str, list[int]] = {}  # per side: its leader and its program, once known
        self.started = time.monotonic()
        # generous: connection set-up for many threads, the drain after STOP, a slow sanitizer build
        self.deadline = self.started + ctx.runner.run_seconds(ctx.spec) + 15.0 + 0.02 * ctx.spec.threads

    def run(self) -> Failure | None:
        failure = None
        while failure is None:
            self.ctx.wake.wait(SUPERVISE_S)  # an exit wakes it at once
            self.ctx.wake.clear()
            if self.client.exited.is_set() and self.client.finish(timeout=0) is not None:
                self.ctx.window.close()
                return self._client_ended()
            failure = self._look()
        self.client.kill()
        return failure

    def _look(self) -> Failure | None:
        """Something that ends the run before the client does, or None."""
        lost = self.lost_host()
        if lost:
            return ErrorKind.HOST_LOST, lost
        stopped = self.stopped_side()
        if stopped:
            return ErrorKind.STOPPED, (f"the {stopped} was stopped (SIGSTOP, or a debugger) during the run: "
                                       "its counters and window would not be the measured ones")
        runner = self.ctx.runner
        if self.server.poll() is not None and not runner.server_exits_by_itself:
            return ErrorKind.SERVER, (f"server exited with status {self.server.returncode} during the run: "
                                      f"{runner.error_of(self.server) or 'no message'}")
        try:
            # ssh hosts are not asked here (a process per question, in the window): a side whose
            # connection dies ends, and lost_host sees it
            if self.ctx.topo.kind != "ssh":
                self.ctx.topo.check_alive()
        except MeasurementError as exc:
            return ErrorKind.NAMESPACE_LOST, str(exc)
        if time.monotonic() > self.deadline:
            return ErrorKind.TIMEOUT, f"client did not finish within {self.deadline - self.started:.0f} s"
        return None

    def _client_ended(self) -> Failure | None:
        code, runner = self.client.returncode, self.ctx.runner
        if self.lost_host():
            return ErrorKind.HOST_LOST, self.lost_host()
        if code == 0:
            return None
        failure = (ErrorKind.CLIENT, f"client exited with status {code}: {runner.error_of(self.client) or 'no message'}")
        if self.server.finish(timeout=0.5) is not None and not runner.server_exits_by_itself:
            failure = (ErrorKind.SERVER, f"server exited with status {self.server.returncode} during the run: "
                                         f"{runner.error_of(self.server) or 'no message'}; {failure[1]}")
        elif runner.error_of(self.server):
            # a server that refused one connection lives on; the why is its line, not the client's
            failure = (ErrorKind.CLIENT, f"{failure[1]}; the server said: {runner.error_of(self.server)}")
        return failure

    def stopped_side(self) -> str:
        """Which side ("server" or "client") has a process in the stopped state (T, or t when
        traced) on this host; "" when none. A stopped program measures nothing while the clock runs."""
        for side in (self.server, self.client):
            if side is None or side.remote:
                continue
            pids = self.pids.get(side.name)
            if not pids:
                program = side.program_pid()
                pids = [side.proc.pid] + ([program] if program and program != side.proc.pid else [])
                if program:
                    self.pids[side.name] = pids  # known once the program runs under its wrappers
            if any(process_state(pid) in ("T", "t") for pid in pids):
                return side.name
        return ""

    def lost_host(self) -> str:
        """Which side's ssh connection ended under its program ("" when none did)."""
        for side in (self.client, self.server):
            if side is not None and side.lost:
                return f"the ssh connection to host {side.host.name} was lost during the run"
        return ""


def stop_server(ctx: Context, server: Side) -> Failure | None:
    """SIGINT to the server program (it prints its result; perf stat, seeing it exit, writes its
    counters), or to its group when the program's pid is not known here; its exit judged."""
    runner = ctx.runner
    if runner.server_exits_by_itself:
        server.finish(timeout=2.0)
    if server.poll() is None:
        program = server.program_pid()
        if program is not None and program != server.proc.pid:
            # the program alone: its perf wrappers see it exit, write their counters and reap it.
            # SIGINT to the whole group makes perf stat exit first and leaves the program to init,
            # its CPU time then booked to init rather than to the sweep (sweep/hostload.py)
            with contextlib.suppress(ProcessLookupError):
                os.kill(program, signal.SIGINT)
        else:
            server.signal_group(signal.SIGINT)
    if server.finish(timeout=STOP_TIMEOUT_S) is None:
        state = process_state(server.program_pid())
        server.kill()
        why = " (it was stopped, e.g. by SIGSTOP, and could not act on it)" if state == "T" else ""
        return ErrorKind.SERVER, f"server did not stop within {STOP_TIMEOUT_S:g} s of SIGINT{why}"
    if server.lost:
        return ErrorKind.HOST_LOST, f"the ssh connection to host {server.host.name} was lost"
    # perf stat re-raises the SIGINT it got after writing its counters: -SIGINT is a normal stop,
    # and some servers report another status when stopped after a finished test (their runner says)
    if server.returncode not in (0, -signal.SIGINT) + tuple(runner.server_stops_with_status):
        return ErrorKind.SERVER, (f"server exited with status {server.returncode}: "
                                  f"{runner.error_of(server) or 'no message'}")
    return None


def process_state(pid: int | None) -> str:
    """The state letter of a process (R, S, T, Z...), "" when unknown."""
    fields = stat_fields(pid) if pid is not None else None
    return fields[0] if fields else ""


# ------------------------------------------------------------------------------------------------
# collecting and the row


@dataclass
class Collected:
    """Everything the row is built from, read once all programs have stopped."""

    result: Result
    counters: dict          # side ("srv"/"cli") -> {counter: value or None}
    counter_notes: list     # why counters are missing
    window_source: str
    cpu: dict               # "srv_cpu_busy", "cli_cpu_busy", "srv_cpu_steal", "cli_cpu_steal"
    congestion: dict        # "srv"/"cli" -> what a side runs when its program cannot say
    profile: dict | None    # profile columns (or None when the point was not profiled)
    doubts: Failure | None = None  # impossible counters, a stretched window: the row is not believed
    stretched: Failure | None = None  # the window, stretched: what went wrong first, whatever followed


def perf_texts(ctx: Context) -> dict[str, str]:
    """perf stat's output of each side, read once (from another host it is a round trip)."""
    if not ctx.plan.perf_path:
        return {"server": "", "client": ""}
    return {side: ctx.hosts[side].read_text(ctx.perf_out[side]) for side in ("server", "client")}


def side_counters(plan, text: str, side: str) -> tuple[dict, str]:
    """Counters of one side, and a note when they are missing."""
    empty = {key: None for key in COUNTER_KEYS}
    if plan.perf_path is None:
        return empty, plan.note or "perf is not installed"
    if not text.strip():
        return empty, f"perf stat of the {side} wrote no counters"
    return perfmod.side_counters(perfmod.parse_stat_csv(text), plan), ""


def collect(ctx: Context, server: Side, client: Side | None, texts: dict[str, str]) -> Collected:
    spec, plan = ctx.spec, ctx.plan
    result = ctx.runner.result(spec, server, client, ctx.hosts["client"].read_text)
    counters, notes, doubts = {}, [], None
    for side, name in (("srv", "server"), ("cli", "client")):
        try:
            counters[side], note = side_counters(plan, texts[name], name)
        except perfmod.ImpossibleCount as exc:
            counters[side] = {key: None for key in COUNTER_KEYS}
            note = f"perf stat of the {name} printed an impossible value"
            doubts = doubts or (ErrorKind.COUNTERS, f"perf stat of the {name}: {exc}")
        if note:
            notes.append(note)
    stretched = stretched_window(ctx)
    doubts = doubts or stretched
    if ctx.profiler is not None:
        profile = ctx.profiler.columns(spec.point_id())
    else:
        profile = empty_columns("", plan.note or "perf is not installed: no profile") if spec.profile else None
    window = ctx.window
    return Collected(result, counters, notes, window.source,
                     {"srv_cpu_busy": window.busy("srv"), "cli_cpu_busy": window.busy("cli"),
                      "srv_cpu_steal": window.steal("srv"), "cli_cpu_steal": window.steal("cli")},
                     {"srv": ctx.topo.effective_congestion("server"), "cli": ctx.topo.effective_congestion("client")},
                     profile, doubts, stretched)


# a window that lasts longer than asked by this much (seconds, or share of the window) was not measured
STRETCH_SLACK_S = 1.0
STRETCH_FACTOR = 0.5


def stretched_window(ctx: Context) -> Failure | None:
    """copylab's client announces its window; the engine clocks the announcements. A window that
    lasted far longer on the wall clock than asked (the client was stopped, or starved of CPU)
    measured something else than the window: the point fails, naming both durations."""
    window = ctx.window
    if ctx.runner.window_source != "client" or not window.segments:
        return None
    wall, asked = window.open_s, ctx.spec.duration_s
    if wall <= asked + max(STRETCH_SLACK_S, STRETCH_FACTOR * asked):
        return None
    return (ErrorKind.STRETCHED, f"the window lasted {wall:.2f} s of wall clock for a {asked:g} s window (a side "
                                 "was stopped or starved of CPU): its numbers are not the window's")


def _nan(value):
    return math.nan if value is None else value


def build_row(spec, topology: str, plan, got: Collected, failure: Failure | None) -> dict:
    """The results row (docs/contracts.md) from what was collected; failure, when not None, is the
    point's first failure (the runner's own verdict counts after the stages')."""
    row = empty_row(spec, topology)
    row.update(got.result.fields)
    row.update(intervals.summarise(got.result.series))
    for side in ("srv", "cli"):
        if not row.get(f"{side}_congestion"):  # a program that cannot say: what its side runs
            row[f"{side}_congestion"] = got.congestion[side]
        for key in COUNTER_KEYS:
            row[f"{side}_{key}"] = _nan(got.counters[side][key])
    for key in SUMMED_COUNTERS:
        srv, cli = got.counters["srv"][key], got.counters["cli"][key]
        row[key] = math.nan if srv is None or cli is None else srv + cli
    row["cycles_source"] = (plan.cycles_source or "") if not math.isnan(row["cycles"]) else ""
    notes = list(got.counter_notes)
    if any(math.isnan(row[k]) for k in ("l1_misses", "llc_misses")) and not notes and plan.note:
        notes.append(plan.note)
    row["counters_note"] = "; ".join(dict.fromkeys(notes))
    row["window_source"] = got.window_source
    row.update(got.cpu)
    if got.profile is not None:
        row.update(got.profile)
    # a stretched window comes before the runner's verdict: a program stopped in it may have lost its
    # answer too (its perf stat, seeing it stopped and continued, returns early: the program dies with it)
    failure = failure or got.stretched or got.result.failure or got.doubts
    failure = impossible_values(row, failure) or failure
    row["status"] = "failed" if failure else "ok"
    row["error_kind"], row["error"] = failure or (ErrorKind.NONE, "")
    return row


def impossible_values(row: dict, failure: Failure | None) -> Failure | None:
    """The programs' answers checked where they become columns (contract.value_problem): a value no
    measurement can be (negative, infinite, beyond a counter, a rate no host moves, text) is left
    empty, the point fails naming the first (the record's raw output keeps what was printed), and
    the row is one the report reads; an ok row without its mode's measure fails too."""
    found = None
    for column in contract.NUMERIC_COLUMNS:
        value = row.get(column)
        problem = contract.value_problem(column, value)
        if problem:
            row[column] = math.nan
            found = found or (ErrorKind.VALUES, f"{column} = {quoted(value)}: {problem} (a program's result, "
                                                "left empty)")
    if found is None and failure is None:
        measure = contract.MODE_MEASURE.get(row.get("mode"))
        if measure and math.isnan(row.get(measure, math.nan)):
            found = (ErrorKind.NO_RESULT, f"the result holds no {measure}: nothing measured to report")
    return found


def empty_row(spec, topology: str) -> dict:
    """A row with the point's identity filled in and every measurement empty (NaN)."""
    row: dict = {col: math.nan for col in COLUMNS}
    row.update(impl=spec.impl, mode=spec.mode, msg_size=spec.msg_size, threads=spec.threads, rep=spec.rep,
               point_id=spec.point_id(), run_kind="profile" if spec.profile else "measure", topology=topology,
               pin_server=spec.pin_server or "", pin_client=spec.pin_client or "", warmup_s=spec.warmup_s,
               receive=spec.receive, verified="", congestion=spec.congestion, srv_congestion="",
               cli_congestion="", steady_max_s=spec.steady_max_s, rounds=spec.rounds, rps=bool(spec.rps),
               working_set_bytes=spec.working_set if spec.impl in contract.IMPLS else math.nan,
               working_set_level=spec.working_set_level if spec.impl in contract.IMPLS else "", warmup_end="",
               bimodal="", receive_note="", cycles_source="", counters_note="", window_source="", profile_mode="", profile_event="",
               profile_note="", cpus_apart="", placement_note="", status="failed", error="", error_kind="")
    return row

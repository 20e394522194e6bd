"""One grid point, measured: server and client on their sides of the topology, `perf stat` around
each, optionally `perf record` over the same window.

run_point() turns a PointSpec into one results row (docs/contracts.md) and the raw program output
that backs it. It never raises for a failed measurement: a dead process, a vanished namespace or a
timeout give a row with status "failed", an error_kind and the error, and no process is left
behind. Only KeyboardInterrupt propagates (after clean-up).
"""

from __future__ import annotations

import contextlib
import math
import os
import shutil
import signal
import socket
import tempfile
import threading
import time
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path

from . import contract
from . import perf as perfmod
from . import intervals
from .contract import COLUMNS, COUNTER_KEYS, SUMMED_COUNTERS
from .errors import CopylabError, ErrorKind, MeasurementError
from .profile.record import Profiler, empty_columns
from .runners import Failure, runner_for
from .sides import PerfControl, Side, Window
from .topology import Topology, pid_alive

WORKDIR_PREFIX = "copylab-point-"
PROCESS_GROUPS = "process-groups"  # one line per started process group, in the point's workdir
LISTEN_TIMEOUT_S = 10.0
STOP_TIMEOUT_S = 10.0
POLL_S = 0.01
SUPERVISE_S = 0.2  # how often the supervisor looks at the topology and the deadline between exits
# a server that cannot bind its random port is started again on another (a program may set no
# SO_REUSEADDR); on another host its folder goes with the failed attempt, so that fails the point
BIND_ATTEMPTS = 3


@dataclass(frozen=True)
class PointSpec:
    """Everything that defines one measurement; point_id() encodes all of it."""

    impl: str
    mode: str
    msg_size: int
    threads: int
    rep: int = 0
    duration_s: float = 2.0
    warmup_s: float = 0.5
    topology: str = "netns"
    pin_server: str | None = None  # CPU list for taskset, e.g. "0"
    pin_client: str | None = None
    verify: bool = False  # full byte-by-byte check on the receiver (costs receiver CPU)
    sanitize: bool = False  # use the ASan/UBSan builds
    receive: str = "message"  # how the client asks for data (contract.RECEIVE_STRATEGIES)
    profile: bool = False  # record call graphs over the window
    congestion: str = contract.CONGESTION_DEFAULT  # TCP congestion control of every connection, or "host"
    working_set: int = contract.WORKING_SET_DEFAULT  # bytes of distinct messages each sender connection cycles
    steady_max_s: float = 0.0  # > 0: after warmup_s, open the window once the rates are steady, at most this later
    rps: bool = False  # netns, pinned: each side's receive softirq work on its own CPUs (RPS)

    def validate(self) -> "PointSpec":
        contract.check_choice("impl", self.impl, contract.ALL_IMPLS)
        contract.check_choice("mode", self.mode, contract.MODES)
        contract.check_int("msg_size", self.msg_size, contract.MSG_SIZE_RANGE)
        contract.check_int("threads", self.threads, contract.THREADS_RANGE)
        contract.check_int("rep", self.rep, (0, contract.REPETITIONS_RANGE[1] - 1))
        contract.check_seconds("duration_s", self.duration_s, contract.DURATION_RANGE)
        contract.check_seconds("warmup_s", self.warmup_s, contract.WARMUP_RANGE)
        contract.check_choice("topology", self.topology, contract.TOPOLOGIES)
        contract.check_choice("receive", self.receive, contract.RECEIVE_STRATEGIES)
        contract.check_congestion("congestion", self.congestion)
        contract.check_int("working_set", self.working_set, contract.WORKING_SET_RANGE)
        contract.check_seconds("steady_max_s", self.steady_max_s, contract.STEADY_MAX_RANGE)
        if self.rps and (self.pin_server is None or self.pin_client is None):
            raise CopylabError("rps: steers each side's receive work to its pinned CPUs, so it needs "
                               "pin_server and pin_client")
        for name in ("pin_server", "pin_client"):
            if getattr(self, name) is not None:
                contract.parse_cpu_list(name, getattr(self, name))
        peer_mode = contract.PEER_MODES.get(self.impl)
        if peer_mode and self.mode != peer_mode:
            raise CopylabError(f"impl {self.impl}: measures {peer_mode} mode only, not {self.mode}")
        if peer_mode and self.mode == "latency" and self.threads != 1:
            raise CopylabError(f"impl {self.impl}: its server answers one client at a time, so threads must be 1")
        if peer_mode and self.receive != "message":
            raise CopylabError(f"impl {self.impl}: reads one message per call; receive must be 'message'")
        return self

    def point_id(self) -> str:
        """A file-name-safe name that encodes every parameter of the point."""
        warmup = f"w{self.warmup_s:g}s" if not self.steady_max_s else f"w{self.warmup_s:g}-{self.warmup_s + self.steady_max_s:g}s"
        parts = [self.impl, self.mode, f"{self.msg_size}B", f"{self.threads}thr", f"r{self.receive}",
                 f"rep{self.rep}", f"d{self.duration_s:g}s", warmup, self.topology, f"cc{self.congestion}"]
        if self.impl in contract.IMPLS:
            parts.append(f"ws{self.working_set}B")
        if self.rps:
            parts.append("rps")
        if self.pin_server is not None or self.pin_client is not None:
            parts.append(f"pin{self.pin_server or 'any'}-{self.pin_client or 'any'}".replace(",", "."))
        for flag in ("verify", "profile"):
            if getattr(self, flag):
                parts.append("prof" if flag == "profile" else flag)
        if self.sanitize:
            parts.append("san")
        return "_".join(parts)


def free_port() -> int:
    """A TCP port free on this host's loopback now (the server binds it right after)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _pinned(cpus: str | None, host) -> list[str]:
    if cpus is None:
        return []
    if not host.remote and shutil.which("taskset") is None:  # a remote host was checked for it
        raise CopylabError("CPU pinning needs 'taskset' (Debian package util-linux)")
    return ["taskset", "-c", cpus]


def run_point(spec: PointSpec, plan: "perfmod.PerfPlan", topo: Topology, workdir: Path | None = None,
              profile_dir: Path | None = None) -> tuple[dict, dict]:
    """Measure one point. Returns (row, raw): raw holds both sides' argv, stdout, stderr and perf text."""
    spec.validate()
    program = runner_for(spec.impl, spec.sanitize)
    for host in dict.fromkeys(topo.hosts().values()):
        program.check_installed(host)
    topo.set_congestion(spec.congestion)  # netns: every connection of the point, peers included
    topo.set_receive_cpus(*((contract.parse_cpu_list("pin_server", spec.pin_server),
                             contract.parse_cpu_list("pin_client", spec.pin_client)) if spec.rps else (None, None)))
    started_at = datetime.now(timezone.utc).isoformat(timespec="seconds")
    # the FIFOs and perf files of this point; named by our pid so `clean` can tell stale ones
    workdir = workdir or Path(tempfile.mkdtemp(prefix=f"{WORKDIR_PREFIX}{os.getpid()}-"))
    workdir.mkdir(parents=True, exist_ok=True)
    measurement = _Measurement(spec, plan, topo, workdir, program, profile_dir)
    try:
        row, raw = measurement.run()
    finally:
        measurement.kill_all()  # a remote side's folder goes with its ssh channel
        shutil.rmtree(workdir, ignore_errors=True)  # what matters is in the record now
    row["started_at"] = started_at
    return row, raw


class _Measurement:
    """The life of one point: start, window, supervise, stop, and the row."""

    def __init__(self, spec: PointSpec, plan, topo: Topology, workdir: Path, program, profile_dir):
        self.spec, self.plan, self.topo, self.workdir, self.program = spec, plan, topo, workdir, program
        self.registry = workdir / PROCESS_GROUPS
        self.server = self.client = None
        self._perf_texts: dict[str, str] = {}
        self.hosts = topo.hosts()
        # each side's folder on its host (the local workdir on this one)
        self.dirs = {side: host.workdir(workdir, side) for side, host in self.hosts.items()}
        self.perf_out = {side: f"{self.dirs[side]}/{side}.perf" for side in self.hosts}
        self.controls = {side: PerfControl(self.hosts[side], self.dirs[side], f"{side}-stat")
                         for side in self.hosts} if plan.perf_path else {}
        # the pinned CPUs' busy share is read from this host's /proc/stat
        cpus = {side: contract.parse_cpu_list(key, getattr(spec, key))
                for side, key in (("srv", "pin_server"), ("cli", "pin_client"))
                if getattr(spec, key) is not None and topo.kind in ("netns", "loopback")}
        self.window = Window(list(self.controls.values()), cpus)
        self.profiler = None
        if spec.profile and plan.perf_path:
            self.profiler = Profiler(plan, spec, topo, workdir, self.window, profile_dir, self.dirs)


    def _wrap(self, side: str) -> list[str]:
        """perf stat prefix, counting disabled until the window opens."""
        prefix = perfmod.stat_prefix(self.plan, self.perf_out[side])
        if prefix:
            prefix = prefix[:-1] + ["-D", "-1", *self.controls[side].args(), "--"]  # stat_prefix ends with "--"
        return prefix

    def _start(self, side: str, pin: str | None, program_argv: list[str], listeners) -> Side:
        """taskset -> [perf record] -> perf stat -> the program, on the side's host."""
        host = self.hosts[side]
        profile = self.profiler.wrap_prefix(side) if self.profiler is not None else []
        argv = host.command(_pinned(pin, host) + profile + self._wrap(side) + program_argv, self.dirs[side])
        return Side(side, argv, self.registry, listeners, self.wake, host=host)

    def run(self) -> tuple[dict, dict]:
        raw: dict = {"spec": asdict(self.spec), "topology": self.topo.kind}
        failure = self._run_sides()
        if self.profiler is not None:
            self.profiler.stop()
        raw["server"] = self.server.raw(self._perf_text("server"))
        raw["client"] = self.client.raw(self._perf_text("client")) if self.client else None
        row, series = self._row(failure)
        raw["series"] = series.to_dict() if series is not None else None
        return row, raw

    def _run_sides(self) -> Failure | None:
        spec, topo, program = self.spec, self.topo, self.program
        if self.profiler is not None:
            self.profiler.start_system()
        self.wake = threading.Event()
        for attempt in range(1, BIND_ATTEMPTS + 1):
            port = free_port() if topo.kind == "loopback" else topo.next_port()
            ready = threading.Event()
            self.server = self._start("server", spec.pin_server, program.server_argv(
                spec, topo.server_addr, port, self.dirs["server"], self.hosts["server"].build_dir),
                [lambda stream, line, ready=ready: ready.set() if program.server_ready(stream, line) else None])
            if self._wait(ready, self.server):
                break
            code = self.server.poll()
            if self.server.lost:
                return ErrorKind.HOST_LOST, f"the ssh connection to host {self.hosts['server'].name} was lost"
            error = program.error_of(self.server)
            if (attempt < BIND_ATTEMPTS and code is not None and not self.hosts["server"].remote
                    and any(words in error for words in program.port_taken)):
                continue  # the random port is held, e.g. by a connection of a moment ago in TIME_WAIT
            what = f"exited with status {code}" if code is not None else f"did not listen within {LISTEN_TIMEOUT_S:g} s"
            return ErrorKind.SERVER, f"server {what}: {error or 'no message'}"
        if self.profiler is not None:
            self.profiler.attach("srv", self.server.program_pid())
        self.client = self._start("client", spec.pin_client, program.client_argv(
            spec, topo.server_addr, port, self.dirs["client"], self.hosts["client"].build_dir), [self._client_line])
        started = time.monotonic()
        timer = program.timer_window(spec)
        if timer is not None:
            self.window.open_in(timer[0], program.window_source)
            self.window.close_in(timer[1])
        return self._supervise(started)

    def _client_line(self, stream: str, line: str) -> None:
        event = self.program.client_event(stream, line)
        if event is None:
            return
        if event.action == "close":
            self.window.close()
        elif event.delay_s:
            self.window.open_in(event.delay_s, event.source)
        else:
            self.window.open(event.source)

    @staticmethod
    def _wait(flag: threading.Event, side: Side) -> bool:
        deadline = time.monotonic() + LISTEN_TIMEOUT_S
        while time.monotonic() < deadline:
            if flag.wait(POLL_S * 5):
                return True
            if side.poll() is not None:
                side.finish(timeout=2.0)
                return False
        return False

    def _supervise(self, started: float) -> Failure | None:
        """Wait for the client while watching the server and the topology; then stop the server."""
        spec, server, client = self.spec, self.server, self.client
        # generous: connection set-up for many threads, the drain after STOP, a slow sanitizer build
        deadline = started + self.program.run_seconds(spec) + 15.0 + 0.02 * spec.threads
        failure = None
        while True:
            self.wake.wait(SUPERVISE_S)  # an exit wakes it at once
            self.wake.clear()
            code = client.finish(timeout=0) if client.exited.is_set() else None
            lost = self._lost_host()
            if lost:
                failure = (ErrorKind.HOST_LOST, lost)
                client.kill()
                break
            if code is not None:
                self.window.close()
                if code != 0:
                    failure = (ErrorKind.CLIENT, f"client exited with status {code}: "
                                                 f"{self.program.error_of(client) or 'no message'}")
                    if server.finish(timeout=0.5) is not None and not self.program.server_exits_by_itself:
                        failure = (ErrorKind.SERVER, f"server exited with status {server.returncode} during "
                                   f"the run: {self.program.error_of(server) or 'no message'}; {failure[1]}")
                break
            if server.poll() is not None and not self.program.server_exits_by_itself:
                failure = (ErrorKind.SERVER, f"server exited with status {server.returncode} during the run: "
                                             f"{self.program.error_of(server) or 'no message'}")
                client.kill()
                break
            try:
                # ssh hosts are not asked here (a process per question, in the window): a side whose
                # connection dies ends, and _lost_host above sees it
                if self.topo.kind != "ssh":
                    self.topo.check_alive()
            except MeasurementError as exc:
                failure = (ErrorKind.NAMESPACE_LOST, str(exc))
                client.kill()
                break
            if time.monotonic() > deadline:
                failure = (ErrorKind.TIMEOUT, f"client did not finish within {deadline - started:.0f} s")
                client.kill()
                break
        self.window.cancel()
        return self._stop_server(failure)

    def _lost_host(self) -> str:
        """Which side's ssh connection ended under its program ("" when none did)."""
        for side in (self.client, self.server):
            if side is not None and side.lost:
                return f"the ssh connection to host {side.host.name} was lost during the run"
        return ""

    def _stop_server(self, failure: Failure | None) -> Failure | None:
        server = self.server
        if self.program.server_exits_by_itself:
            server.finish(timeout=2.0)
        if server.poll() is None:
            # SIGINT to the server's group: the server prints its JSON, perf stat writes the counters
            server.signal_group(signal.SIGINT)
        if server.finish(timeout=STOP_TIMEOUT_S) is None:
            state = process_state(server.program_pid())
            server.kill()
            why = " (it was stopped, e.g. by SIGSTOP, and could not act on it)" if state == "T" else ""
            return failure or (ErrorKind.SERVER, f"server did not stop within {STOP_TIMEOUT_S:g} s of SIGINT{why}")
        if server.lost and not failure:
            return ErrorKind.HOST_LOST, f"the ssh connection to host {server.host.name} was lost"
        code = server.returncode
        # perf stat re-raises the SIGINT it got after writing its counters: -SIGINT is a normal stop,
        # and some servers report another status when stopped after a finished test (their runner says)
        normal = (0, -signal.SIGINT) + tuple(self.program.server_stops_with_status)
        if code not in normal and not failure:
            return ErrorKind.SERVER, f"server exited with status {code}: {self.program.error_of(server) or 'no message'}"
        return failure

    def kill_all(self) -> None:
        for side in (self.client, self.server):
            # the whole group even when its leader has exited: a program whose perf wrapper was
            # killed keeps running, orphaned, in that group
            if side is not None:
                side.kill()
        if self.profiler is not None:
            self.profiler.stop()
        self.window.cancel()

    # -- the row ----------------------------------------------------------------------------------

    def _perf_text(self, side: str) -> str:
        if side not in self._perf_texts:  # read once: from another host it is a round trip
            self._perf_texts[side] = self.hosts[side].read_text(self.perf_out[side]) if self.plan.perf_path else ""
        return self._perf_texts[side]

    def _counters(self, side: str) -> tuple[dict, str]:
        """Counters of one side, and a note when they are missing."""
        empty = {key: None for key in COUNTER_KEYS}
        if self.plan.perf_path is None:
            return empty, self.plan.note or "perf is not installed"
        text = self._perf_text(side)
        if not text.strip():
            return empty, f"perf stat of the {side} wrote no counters"
        return perfmod.side_counters(perfmod.parse_stat_csv(text), self.plan), ""

    def _row(self, failure: Failure | None):
        """The results row, and the run's interval series (for the record)."""
        spec, plan = self.spec, self.plan
        row = empty_row(spec, self.topo.kind)
        result = self.program.result(spec, self.server, self.client, self.hosts["client"].read_text)
        row.update(result.fields)
        row.update(intervals.summarise(result.series))
        for side, host_side in (("srv", "server"), ("cli", "client")):
            if not row.get(f"{side}_congestion"):  # a program that cannot say: what its side runs
                row[f"{side}_congestion"] = self.topo.effective_congestion(host_side)
        failure = failure or result.failure
        srv, srv_note = self._counters("server")
        cli, cli_note = self._counters("client")
        for key in COUNTER_KEYS:
            row[f"srv_{key}"] = _nan(srv[key])
            row[f"cli_{key}"] = _nan(cli[key])
        for key in SUMMED_COUNTERS:
            row[key] = math.nan if srv[key] is None or cli[key] is None else srv[key] + cli[key]
        row["cycles_source"] = (plan.cycles_source or "") if not math.isnan(row["cycles"]) else ""
        notes = [n for n in (srv_note, cli_note) if n]
        if any(math.isnan(row[k]) for k in ("l1_misses", "llc_misses")) and not notes and plan.note:
            notes.append(plan.note)
        row["counters_note"] = "; ".join(dict.fromkeys(notes))
        row["window_source"] = self.window.source
        row["srv_cpu_busy"], row["cli_cpu_busy"] = self.window.busy("srv"), self.window.busy("cli")
        row["srv_cpu_steal"], row["cli_cpu_steal"] = self.window.steal("srv"), self.window.steal("cli")
        if self.profiler is not None:
            row.update(self.profiler.columns(spec.point_id()))
        elif spec.profile:
            row.update(empty_columns("", plan.note or "perf is not installed: no profile"))
        row["status"] = "failed" if failure else "ok"
        row["error_kind"], row["error"] = failure or (ErrorKind.NONE, "")
        return row, result.series


def process_state(pid: int | None) -> str:
    """The state letter of a process (R, S, T, Z...), "" when unknown."""
    if pid is None:
        return ""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return ""


def _nan(value):
    return math.nan if value is None else value


def empty_row(spec: PointSpec, topology: str) -> dict:
    """A row with the point's identity filled in and every measurement empty (NaN)."""
    row: dict = {col: math.nan for col in COLUMNS}
    row.update(impl=spec.impl, mode=spec.mode, msg_size=spec.msg_size, threads=spec.threads, rep=spec.rep,
               point_id=spec.point_id(), run_kind="profile" if spec.profile else "measure", topology=topology, pin_server=spec.pin_server or "",
               pin_client=spec.pin_client or "", warmup_s=spec.warmup_s, receive=spec.receive, verified="",
               congestion=spec.congestion, srv_congestion="", cli_congestion="", steady_max_s=spec.steady_max_s,
               rps=bool(spec.rps),
               working_set_bytes=spec.working_set if spec.impl in contract.IMPLS else math.nan, warmup_end="",
               bimodal="",
               cycles_source="", counters_note="", window_source="", profile_mode="", profile_event="",
               profile_note="", status="failed", error="", error_kind="")
    return row


def kill_registered(workdir: Path) -> list[int]:
    """SIGKILL every process group a point in workdir started (after its driver died); their ids."""
    killed = []
    for path in Path(workdir).rglob(PROCESS_GROUPS):
        for line in path.read_text().split():
            with contextlib.suppress(ValueError, ProcessLookupError, PermissionError):
                os.killpg(int(line), signal.SIGKILL)
                killed.append(int(line))
    return killed


def remove_stale_workdirs(tmp: Path | None = None) -> list[Path]:
    """Remove the temporary folders of `copylab run`s whose process died (killed before its clean-up)."""
    removed = []
    for path in Path(tmp or tempfile.gettempdir()).glob(f"{WORKDIR_PREFIX}*"):
        owner = path.name[len(WORKDIR_PREFIX):].split("-", 1)[0]
        if owner.isdigit() and not pid_alive(int(owner)):
            kill_registered(path)  # its programs outlive a killed driver: they run in their own groups
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed

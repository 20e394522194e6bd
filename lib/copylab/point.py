"""One grid point, measured: server and client on their sides of the topology, `perf stat` around
each, optionally `perf record` over the same window.

run_point() turns a PointSpec into one results row (docs/contracts.md) and the raw program output
that backs it. It never raises for a failed measurement: a dead process, a vanished namespace or a
timeout give a row with status "failed", an error_kind and the error, and no process is left
behind. Only KeyboardInterrupt propagates (after clean-up).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import tempfile
from dataclasses import MISSING, asdict, dataclass, fields
from datetime import datetime, timezone
from pathlib import Path

from . import buildinfo, contract
from . import perf as perfmod
from .errors import CopylabError
from .measurement import (PROCESS_GROUPS, Context, Supervisor, build_row, collect, empty_row, hand_port, perf_texts,
                          start_client, start_early_client, start_server, starts_early, stop_server)
from .runners import runner_for
from .topology import Topology, pid_alive

WORKDIR_PREFIX = "copylab-point-"
__all__ = ["PointSpec", "POINT_DEFAULTS", "run_point", "empty_row", "kill_registered", "remove_stale_workdirs", "WORKDIR_PREFIX"]


@dataclass(frozen=True)
class PointSpec:
    """Everything that defines one measurement; point_id() encodes all of it."""

    impl: str
    mode: str
    msg_size: int
    threads: int
    rep: int = 0
    # the measured window and the warm-up before it: the study's default (docs/methodology.md, "Noise");
    # the grids, `copylab run` and the experiment notebook take these (POINT_DEFAULTS)
    duration_s: float = 1.0
    warmup_s: float = 0.1
    topology: str = "netns"
    pin_server: str | None = None  # CPU list for taskset, e.g. "0"
    pin_client: str | None = None
    verify: bool = False  # full byte-by-byte check on the receiver (costs receiver CPU)
    sanitize: bool = False  # use the ASan/UBSan builds
    receive: str = "message"  # how the client asks for data (contract.RECEIVE_STRATEGIES)
    profile: bool = False  # record call graphs over the window
    congestion: str = contract.CONGESTION_DEFAULT  # TCP congestion control of every connection, or "host"
    working_set: int = contract.WORKING_SET_DEFAULT  # bytes of distinct messages each sender connection cycles
    # the cache level the working set was placed by (cachelevels.py: "L2/2"), "" when given in bytes;
    # such a working set is held exactly: the ring may grow past the default bound (ring_memory)
    working_set_level: str = ""
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

    @property
    def ring_memory(self) -> int:
        """The servers' --ring-memory: what holds a cache-level working set exactly; 0 (their default
        bound, 8 MiB per connection) for a working set given in bytes."""
        from .memory import exact_ring_memory

        return exact_ring_memory(self.msg_size, self.working_set) if self.working_set_level else 0

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



# every default of a point, written once (in PointSpec above): the grid (params.py), `copylab run`, the
# experiment notebook's parameters and spec_from_params take them from here
POINT_DEFAULTS = {f.name: f.default for f in fields(PointSpec) if f.default is not MISSING}

def run_point(spec: PointSpec, plan: "perfmod.PerfPlan", topo: Topology, workdir: Path | None = None,
              profile_dir: Path | None = None) -> tuple[dict, dict]:
    """Measure one point. Returns (row, raw): raw holds both sides' argv, stdout, stderr and perf
    text, and the run's interval series. The stages are measurement.py's."""
    spec.validate()
    runner = runner_for(spec.impl, spec.sanitize)
    for host in dict.fromkeys(topo.hosts().values()):
        runner.check_installed(host)
    topo.set_congestion(spec.congestion)  # netns: every connection of the point, peers included
    topo.set_receive_cpus(*((contract.parse_cpu_list("pin_server", spec.pin_server),
                             contract.parse_cpu_list("pin_client", spec.pin_client)) if spec.rps else (None, None)))
    started_at = datetime.now(timezone.utc).isoformat(timespec="seconds")
    # the FIFOs and perf files of this point; named by our pid so `clean` can tell stale ones
    workdir = workdir or Path(tempfile.mkdtemp(prefix=f"{WORKDIR_PREFIX}{os.getpid()}-"))
    workdir.mkdir(parents=True, exist_ok=True)
    ctx = Context(spec, plan, topo, workdir, runner, profile_dir)
    server = client = None
    try:
        if ctx.profiler is not None:
            ctx.profiler.start_system()
        early = starts_early(ctx)
        client = start_early_client(ctx) if early else None
        server, port, failure = start_server(ctx)
        if failure is None:
            if ctx.profiler is not None:
                ctx.profiler.attach("srv", server.program_pid())
            if early:
                failure = hand_port(ctx, client, port)
            else:
                client = start_client(ctx, port)
            failure = failure or Supervisor(ctx, server, client).run()
            ctx.window.cancel()
            failure = failure or stop_server(ctx, server)
        elif client is not None:
            client.kill()  # it waited for a port it never got: no client ran against that server
            client = None
        if ctx.profiler is not None:
            ctx.profiler.stop()
        texts = perf_texts(ctx)
        got = collect(ctx, server, client, texts)
        row = build_row(spec, topo.kind, plan, got, failure)
        raw = {"spec": asdict(spec), "topology": topo.kind, "server": server.raw(texts["server"]),
               "client": client.raw(texts["client"]) if client else None,
               "series": got.result.series.to_dict() if got.result.series is not None else None}
    finally:
        for side in (client, server):
            # the whole group even when its leader has exited: a program whose perf wrapper was
            # killed keeps running, orphaned, in that group (a remote side's folder goes with its channel)
            if side is not None:
                side.kill()
        if ctx.profiler is not None:
            ctx.profiler.stop()
        ctx.window.cancel()
        shutil.rmtree(workdir, ignore_errors=True)  # what matters is in the record now
    row["started_at"] = started_at
    row["build_id"] = buildinfo.build_id()
    return row, raw


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

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
from dataclasses import asdict
from datetime import datetime, timezone
from pathlib import Path

from . import buildinfo, contract
from . import perf as perfmod
from .pointspec import PointSpec
from .measurement import (PROCESS_GROUPS, Context, Supervisor, build_row, collect, empty_row, hand_port, perf_texts,
                          start_client, start_early_client, start_server, starts_early, stop_server)
from .runners import runner_for
from .topology import Topology, pid_alive

WORKDIR_PREFIX = "copylab-point-"
__all__ = ["run_point", "empty_row", "kill_registered", "remove_stale_workdirs", "WORKDIR_PREFIX"]


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

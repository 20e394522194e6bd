"""What notebooks/experiment.ipynb calls: measure grid points, write their records, show the evidence.

The sweep executes the notebook once per group of points (papermill's cost is paid once per group,
not per point); opened by hand, the notebook measures one point. Each point's record is renamed
into place the moment that point is done, so a run stopped mid-group keeps every finished point.
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import fields
from pathlib import Path

from . import perf as perfmod
from .errors import ErrorKind, MeasurementError
from .fsutil import atomic_write_json, jsonable
from .paths import OUTPUT_DIR
from .placement import CpuDistance, placed, probe_cpus
from .point import run_point
from .pointspec import PointSpec
from .hosts import SshSettings
from .topology import attach_params, choose_topology, open_topology

SPEC_FIELDS = ("impl", "mode", "msg_size", "threads", "rep", "duration_s", "warmup_s", "pin_server",
               "pin_client", "verify", "receive", "profile", "congestion", "working_set", "working_set_level", "steady_max_s", "rounds", "rps")


def spec_from_params(params: dict, topology: str) -> PointSpec:
    """A validated PointSpec from a notebook's parameters (numbers may arrive as floats); a parameter
    the notebook does not set keeps PointSpec's default."""
    return PointSpec(topology=topology, **{f.name: _CASTS.get(f.type, _same)(params[f.name])
                                           for f in fields(PointSpec) if f.name in SPEC_FIELDS and f.name in params}
                     ).validate()


_CASTS = {"int": int, "float": float, "bool": bool}  # PointSpec's field types (annotations as text)


def _same(value):
    return value


def spec_params(spec: PointSpec) -> dict:
    """The inverse of spec_from_params: what the sweep passes to the notebook for one point."""
    return {key: getattr(spec, key) for key in SPEC_FIELDS}


def measure_points(points: list[dict], *, topology: str = "auto", topology_params: dict | None = None,
                   ssh: dict | None = None,
                   perf_plan: dict | None = None, record_dir: str | None = None, work_dir: str | None = None,
                   profile_dir: str | None = None, notebook: str | None = None, placement_state: dict | None = None,
                   placement: bool = True, say=print) -> list[dict]:
    """Measure each point in turn; write each record to record_dir/<point_id>.json when it is done.

    With topology_params the sweep driver's topology is used: its
    namespaces, or its ssh connections. Without them (the notebook opened by hand) the points open
    and close their own; topology ssh then needs ssh = {server_host, client_host, server_addr,
    client_addr[, ssh_config]}. Each run is placed (placement.py): taken while the two CPUs are near,
    measured again when they were apart, the runs set aside kept under record_dir/apart/;
    placement_state carries the sweep's round trips so far ("history", the rule learns from them)
    and the seconds placement may spend in this group ("allowance_s"); placement False measures
    every run as it comes (the rows say so).
    """
    if topology_params:
        topology = topology_params["kind"]
    topology = choose_topology(topology)
    specs = [spec_from_params(p, topology) for p in points]
    if topology_params:
        scope = contextlib.nullcontext(attach_params(topology_params))
    else:
        scope = open_topology(topology, SshSettings(**ssh) if ssh else None)
    records = []
    state = placement_state or {}
    distance = CpuDistance(state.get("history", ()), state.get("allowance_s", math.inf), state.get("futile_waits", 0),
                           off=state.get("off", ""))  # a probe that misbehaved earlier in the sweep: placement off
    with scope as topo, distance:
        try:
            plan = perfmod.PerfPlan.from_dict(perf_plan) if perf_plan else probe_topology(topo)
            for k, spec in enumerate(specs, start=1):
                try:
                    topo.check_alive()
                except MeasurementError as exc:  # the driver opens a fresh pair for the rest
                    say(f"stopping before {spec.point_id()}: {exc}")
                    break
                workdir = Path(work_dir) / spec.point_id() if work_dir else None
                cpus, reason = probe_cpus(spec.pin_server, spec.pin_client, topo.kind, placement)
                attempts = placed(distance, cpus, reason, lambda: run_point(
                    spec, plan, topo, workdir=workdir,
                    profile_dir=Path(profile_dir) if profile_dir else OUTPUT_DIR / "profiles"))
                for retries, ((row, raw), columns) in enumerate(attempts):
                    record = jsonable({"row": row, "raw": raw, "notebook": notebook})
                    kept = retries == len(attempts) - 1
                    if record_dir:
                        write_record(Path(record_dir), spec.point_id(), record, kept)
                    if not kept:
                        say(f"[{k}/{len(specs)}] {spec.point_id()}: set aside, CPUs apart "
                            f"({columns['cpu_round_trip_ns']:.0f} ns, apart above {columns['cpu_apart_line_ns']:.0f} ns); "
                            "measuring again")
                say(f"[{k}/{len(specs)}] {summary_line(row)}")
                records.append(record)
                if row.get("error_kind") in (ErrorKind.NAMESPACE_LOST, ErrorKind.HOST_LOST):
                    break
        finally:
            for host in topo.hosts().values():
                host.release()  # the window's controller session, when a host is remote
    return records


def write_record(record_dir: Path, pid: str, record: dict, kept: bool) -> None:
    """The point's record (kept), or a run of it set aside under apart/."""
    folder = record_dir / ("" if kept else "apart")
    folder.mkdir(exist_ok=True)
    atomic_write_json(folder / f"{pid}.json" if kept else apart_path(folder, pid), record)


def apart_path(folder: Path, pid: str) -> Path:
    """Where the next run of pid set aside goes: folder/<point_id>.<n>.json, the first n free (the
    runs set aside at once and a run kept apart that the sweep measured again later share the folder)."""
    n = 0
    while (folder / f"{pid}.{n}.json").exists() or (folder / f"{pid}.{n}.json{PENDING}").exists():
        n += 1
    return folder / f"{pid}.{n}.json"


PENDING = ".pending"  # a run kept apart being measured again: set aside once the new run has landed


def probe_topology(topo) -> "perfmod.PerfPlan":
    """What perf can count where the programs run: here, or on each ssh host (what both can)."""
    if topo.kind != "ssh":
        return perfmod.probe()
    return perfmod.common_plan({name: perfmod.probe(host=host) for name, host in topo.hosts().items()})


def measure(*, record_path: str | None = None, **params) -> dict:
    """One point (the notebook opened by hand); its record is also written to record_path."""
    topology = params.pop("topology", "auto")
    ns = {key: params.pop(key, None) for key in ("topology_params", "ssh", "perf_plan")}
    record = measure_points([params], topology=topology, say=lambda _text: None, **ns)[0]
    if record_path:
        atomic_write_json(record_path, record)
    return record


def summary_line(row: dict) -> str:
    what = (f"{row['throughput_gbps']:.3f} Gbit/s" if row.get("mode") == "throughput"
            else f"p50 {row.get('latency_p50_us')} us")
    if row["status"] != "ok":
        what = f"FAILED: {row.get('error')}"
    return f"{row['point_id']}: {what}"


def show(record: dict) -> None:
    """Print the point's evidence: both command lines, their JSON output, perf's counters, the row."""
    row = record["row"]
    print(f"point {row['point_id']}: status {row['status']}" + (f" ({row['error']})" if row.get("error") else ""))
    for side in ("server", "client"):
        part = record["raw"].get(side)
        if not part:
            print(f"\n[{side}] did not start")
            continue
        print(f"\n[{side}] $ {' '.join(part['argv'])}")
        print(f"exit status {part.get('exit_status')}")
        for line in (part["stdout"] + part["stderr"]).splitlines():
            print(f"  {line}")
        if part.get("perf"):
            print(f"[{side}] perf stat -x, output:")
            for line in part["perf"].splitlines():
                if line.strip() and not line.startswith("#"):
                    print(f"  {line}")
    print("\nresults row:")
    for key in ("throughput_gbps", "latency_us", "latency_p50_us", "latency_p99_us", "bytes", "duration_s",
                "cycles", "cycles_source", "l1_misses", "llc_misses", "context_switches", "user_copy_bytes",
                "send_calls", "zc_sends", "zc_completions", "zc_copied", "enobufs", "counters_note"):
        value = row.get(key)
        if value is None or (isinstance(value, float) and math.isnan(value)) or value == "":
            value = "(not measured)" if key not in ("counters_note",) else "(none)"
        print(f"  {key} = {value}")

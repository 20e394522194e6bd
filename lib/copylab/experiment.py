"""What notebooks/experiment.ipynb calls: measure one point, write its record, show the evidence."""

from __future__ import annotations

import contextlib
import json
import math
from pathlib import Path

from . import perf as perfmod
from .fsutil import atomic_write_json, jsonable
from .point import PointSpec, run_point
from .topology import attach, choose_topology, open_topology


def measure(*, impl: str, mode: str, msg_size: int, threads: int, rep: int = 0, duration_s: float = 2.0,
            warmup_s: float = 0.5, topology: str = "auto", pin_server: str | None = None,
            pin_client: str | None = None, verify: bool = False, server_ns: str | None = None,
            client_ns: str | None = None, perf_plan: dict | None = None, record_path: str | None = None) -> dict:
    """Run one point and return its record {"row": ..., "raw": ...}; also written to record_path.

    With server_ns/client_ns the namespaces of the sweep driver are used; without them (the
    notebook opened by hand) the point opens and removes its own topology.
    """
    topology = choose_topology(topology)
    spec = PointSpec(impl=impl, mode=mode, msg_size=int(msg_size), threads=int(threads), rep=int(rep),
                     duration_s=float(duration_s), warmup_s=float(warmup_s), topology=topology,
                     pin_server=pin_server, pin_client=pin_client, verify=bool(verify)).validate()
    plan = perfmod.PerfPlan.from_dict(perf_plan) if perf_plan else perfmod.probe()
    if server_ns or topology == "loopback":
        scope = contextlib.nullcontext(attach(topology, server_ns, client_ns))
    else:
        scope = open_topology(topology)
    with scope as topo:
        row, raw = run_point(spec, plan, topo)
    record = jsonable({"row": row, "raw": raw})
    if record_path:
        atomic_write_json(record_path, record)
    return record


def load_record(path: str | Path) -> dict:
    return json.loads(Path(path).read_text())


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

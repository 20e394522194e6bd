"""SYNTHETIC sweep results for the analysis/report tests: made-up numbers with known answers.

Nothing here is a measurement. Throughput is A1's curve plus a chosen +/- offset per
(thread count, size), so the crossovers the tests expect follow from the tables below.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

from copylab import contract

SIZES = (64, 1024, 4096, 16384, 65536)
THREADS = (1, 2, 4, 8)
# sign pattern of (X - A1) throughput per thread count over SIZES, in Gbit/s
A2_DELTA = {1: (+1, -1, +1, +1, +1), 2: (-1, -1, +1, +1, +1),
            4: (-1, -1, -1, +1, +1), 8: (+1, +1, +1, +1, -1)}
A3_DELTA = {1: (-1, -1, -1, -1, +1), 2: (-1, -1, -1, +1, +1),
            4: (-1, -1, -1, -1.5, -1), 8: (-1, -1, -1, +1, +1)}
# what the docs/contracts.md rule gives for those tables (overall = on the mean over thread counts)
EXPECTED_Q4 = {"crossover_bytes": 4096,
               "per_threads": {"1": 4096, "2": 4096, "4": 16384, "8": None}}
EXPECTED_Q5 = {"crossover_bytes": 65536,
               "per_threads": {"1": 65536, "2": 16384, "4": None, "8": 16384}}
# misses per byte: A2/A3 cut L1 misses far more than LLC misses -> Q2 answer "L1"
L1_PER_BYTE = {"a1": 0.020, "a2": 0.012, "a3": 0.011}
LLC_PER_BYTE = {"a1": 0.0020, "a2": 0.0019, "a3": 0.0019}
CYCLES_PER_BYTE = {"a1": 3.0, "a2": 2.4, "a3": 2.6}
NOISE = (-0.05, 0.0, 0.05)  # symmetric, so the mean over 3 reps is the table value

# the contract's columns (copylab.contract), the ones this generator does not fill left empty
FIELDS = contract.COLUMNS
REQUIRED = contract.REQUIRED_COLUMNS


def _a1_gbps(size: int, threads: int) -> float:
    return 2.0 + 4.0 * SIZES.index(size) + 0.5 * THREADS.index(threads)


# profile shares per side of the throughput points at one thread (each side sums to 1)
PROFILE = {
    "a1": {"srv": {"user_copy": 0.06, "kernel_copy_from_user": 0.10, "tcp_send": 0.30, "tcp_receive": 0.10,
                   "scheduling": 0.09, "syscall": 0.02, "idle": 0.30, "other": 0.03},
           "cli": {"kernel_copy_to_user": 0.25, "tcp_send": 0.10, "tcp_receive": 0.30, "scheduling": 0.20,
                   "syscall": 0.05, "other_process": 0.05, "other": 0.05}},
    "a2": {"srv": {"kernel_copy_from_user": 0.20, "tcp_send": 0.30, "tcp_receive": 0.10, "scheduling": 0.09,
                   "syscall": 0.02, "idle": 0.26, "other": 0.03},
           "cli": {"kernel_copy_to_user": 0.26, "tcp_send": 0.10, "tcp_receive": 0.30, "scheduling": 0.19,
                   "syscall": 0.05, "other_process": 0.05, "other": 0.05}},
    "a3": {"srv": {"zerocopy_pin": 0.04, "deferred_copy": 0.18, "zerocopy_completion": 0.01, "tcp_send": 0.20,
                   "tcp_receive": 0.12, "scheduling": 0.09, "syscall": 0.02, "idle": 0.30, "other": 0.04},
           "cli": {"deferred_copy": 0.15, "kernel_copy_to_user": 0.22, "tcp_send": 0.10, "tcp_receive": 0.25,
                   "scheduling": 0.18, "syscall": 0.05, "other": 0.05}},
}


def _profile_columns(impl: str) -> dict:
    out = {"profile_mode": "per_cpu", "profile_event": "cpu-clock @ 999 Hz", "srv_cpu_busy": 0.7, "cli_cpu_busy": 0.95}
    for side in ("srv", "cli"):
        shares = PROFILE[impl][side]
        out[f"{side}_prof_samples"] = 1000
        out[f"{side}_prof_skid"] = 0.3
        out.update({f"{side}_prof_{b}": shares.get(b, 0.0) for b in contract.PROFILE_BUCKETS})
        busy = 1 - shares.get("idle", 0.0)
        out.update({f"{side}_cai_{c}": v / busy for c, v in (
            ("data_copy", sum(shares.get(b, 0.0) for b in ("user_copy", "kernel_copy_from_user",
                                                           "kernel_copy_to_user", "deferred_copy"))),
            ("tcp_ip", shares.get("tcp_send", 0.0) + shares.get("tcp_receive", 0.0)),
            ("scheduling", shares.get("scheduling", 0.0)))})
        named = sum(out[f"{side}_cai_{c}"] for c in ("data_copy", "tcp_ip", "scheduling"))
        out.update({f"{side}_cai_{c}": 0.0 for c in ("netdevice", "skb_mgmt", "mem_alloc", "lock")})
        out[f"{side}_cai_other"] = 1 - named
    return out


def rows(reps: int = 3, counters: bool = True, failed_row: bool = True, receives=("message",),
         profiles: bool = False) -> list[dict]:
    """The table; receives adds bulk-read rows (10% more throughput, a made-up effect) and
    profiles adds profile columns to the throughput points at one thread."""
    out = []
    for row in _message_rows(reps, counters):
        for receive in receives:
            r = {**row, "receive": receive, "point_id": f"{row['point_id']}-{receive}"}
            if receive == "bulk" and r["mode"] == "throughput":
                r["throughput_gbps"] = row["throughput_gbps"] * 1.1
            if profiles and r["mode"] == "throughput" and r["threads"] == 1:
                r.update(_profile_columns(r["impl"]))
            out.append(r)
    if failed_row:
        out.append({"impl": "a3", "mode": "throughput", "msg_size": 65536, "threads": 8, "rep": 9,
                    "status": "failed", "error": "SYNTHETIC: server exited with status 1"})
    return out


def _message_rows(reps: int, counters: bool) -> list[dict]:
    out = []
    noise = NOISE if reps == 3 else (0.0,) * reps
    for impl in ("a1", "a2", "a3"):
        for t_i, threads in enumerate(THREADS):
            for s_i, size in enumerate(SIZES):
                for rep in range(reps):
                    base = _a1_gbps(size, threads)
                    delta = {"a1": 0, "a2": A2_DELTA[threads][s_i], "a3": A3_DELTA[threads][s_i]}[impl]
                    for mode in ("throughput", "latency"):
                        gbps = base + delta + noise[rep] if mode == "throughput" else 0.1
                        nbytes = int(gbps * 1e9 / 8 * 2.0)
                        msgs = nbytes // size
                        lat = 20.0 + threads * 5 + size / 4096 + {"a1": 0, "a2": -1, "a3": 2}[impl]
                        r = {"impl": impl, "mode": mode, "msg_size": size, "threads": threads,
                             "rep": rep, "throughput_gbps": gbps, "latency_us": lat,
                             "bytes": nbytes, "duration_s": 2.0, "status": "ok", "error": "",
                             "point_id": f"{impl}-{mode}-s{size}-t{threads}-r{rep}",
                             "topology": "netns",
                             "latency_p50_us": lat * 0.95 if mode == "latency" else "",
                             "latency_p99_us": lat * 1.8 if mode == "latency" else "",
                             "messages": msgs, "server_messages": msgs, "server_bytes": nbytes,
                             "user_copy_bytes": nbytes if impl == "a1" else 0,
                             "send_calls": msgs, "context_switches": 100 * threads + rep,
                             "srv_task_clock_ms": nbytes * 0.3e-6, "cli_task_clock_ms": nbytes * 0.4e-6}
                        if impl == "a3":
                            r.update(zc_sends=msgs, zc_completions=msgs // 4,
                                     zc_copied=msgs // 4, enobufs=3)
                        if counters:
                            cyc = nbytes * CYCLES_PER_BYTE[impl]
                            l1 = nbytes * L1_PER_BYTE[impl] * (1 + 0.1 * t_i)
                            llc = nbytes * LLC_PER_BYTE[impl] * (1 + 0.2 * t_i)
                            r.update(cycles=cyc, srv_cycles=cyc * 0.4, cli_cycles=cyc * 0.6,
                                     l1_misses=l1, srv_l1_misses=l1 / 2, cli_l1_misses=l1 / 2,
                                     llc_misses=llc, srv_llc_misses=llc / 2, cli_llc_misses=llc / 2,
                                     cycles_source="pmu")
                        else:
                            r.update(counters_note=NO_COUNTERS_NOTE)
                        out.append(r)
    return out


# the engine writes the host's perf note into meta.json and into every row it left without counters
NO_COUNTERS_NOTE = "hardware events read <not supported> on this host (SYNTHETIC: virtual machine without PMU)"
NO_COUNTERS_EVENTS = {"cycles": False, "instructions": False, "L1-dcache-load-misses": False,
                      "LLC-load-misses": False, "cache-misses": False, "task-clock": True, "context-switches": True}

META = {"kernel": "6.1.0-synthetic", "cpu_model": "SYNTHETIC CPU (test data)", "cores": 2,
        "memory_gib": 3.8, "hostname": "synthetic", "topology": "netns", "cycles_source": "pmu",
        "params": {"author": "Test Author (synthetic)", "roll_no": "T-000",
                   "repo_url": "https://example.invalid/copylab"}}


def write_sweep(folder, reps: int = 3, counters: bool = True, meta: bool = True,
                required_only: bool = False, failed_row: bool = True, receives=("message",),
                profiles: bool = False) -> Path:
    """Write results.csv (and meta.json) of a SYNTHETIC sweep into folder; returns folder."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    fields = REQUIRED if required_only else FIELDS
    with open(folder / "results.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=fields, extrasaction="ignore", restval="")
        w.writeheader()
        for r in rows(reps, counters, failed_row and not required_only, receives, profiles):
            w.writerow(r)
    if meta:
        m = dict(META)
        if not counters:
            m.update(cycles_source="", perf_note=NO_COUNTERS_NOTE, perf_events=NO_COUNTERS_EVENTS)
        (folder / "meta.json").write_text(json.dumps(m))
    return folder

"""A SYNTHETIC sweep shaped like params/cache.yaml: the three study paths at 4 KiB and 64 KiB, 1 and 2
threads, working sets placed at L1d/2, L2/2, LLC/2 and LLC*4 of a made-up host (L1d 32 KiB, L2 1 MiB,
L3 32 MiB shared), 4 passes with each run's own log-normal spread. Nothing in it is a measurement:
tests/test_cache_levels.py writes it where the cost jumps at a level it chooses, with or without the
miss counts a PMU would give, and checks the answers follow.
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import numpy as np

from copylab import registry

CACHES = {"L1d": "32K", "L1i": "32K", "L2": "1024K", "L3": "32768K shared by CPUs 0-1"}
LEVELS = {"L1d/2": 16 << 10, "L2/2": 512 << 10, "LLC/2": 16 << 20, "LLC*4": 128 << 20}
SIZES, THREADS, PASSES = (4096, 65536), (1, 2), 4
SENDER_NS = {"two_copy": 0.50, "one_copy": 0.30, "zero_copy": 0.35}  # sender CPU per byte with the source in L1
COLUMNS = ("impl", "mode", "msg_size", "threads", "rep", "throughput_gbps", "latency_us", "cycles", "l1_misses",
           "llc_misses", "context_switches", "bytes", "duration_s", "point_id", "status", "receive", "topology",
           "srv_task_clock_ms", "cli_task_clock_ms", "counters_note", "working_set_bytes", "working_set_level",
           "srv_cycles", "cli_cycles")


def used_bytes(asked: int, size: int) -> int:
    return max(4, math.ceil(asked / size)) * size


def rows(jump: str = "LLC", pmu: bool = False, aggregate_fall: float = 0.7, seed: int = 2026) -> list[dict]:
    """jump: the level whose leaving costs the sender most ("L2": the step from L1d/2 to L2/2; "LLC":
    from LLC/2 to LLC*4); the two-copy path pays it twice (its extra copy reads the source again).
    aggregate_fall: per-thread throughput at 2 threads times this where threads x working set leaves
    the LLC (beyond the halving that sharing the CPUs costs everywhere)."""
    rng = np.random.default_rng(seed)
    names = list(LEVELS)
    jump_at = {"L2": names.index("L2/2"), "LLC": names.index("LLC*4")}.get(jump, len(names))
    impls = {registry.baseline(): "two_copy", registry.by_role("one_copy"): "one_copy",
             registry.by_role("zero_copy"): "zero_copy"}
    out = []
    for rep in range(PASSES):
        shift = rng.normal(0, 0.04)
        for size in SIZES:
            for threads in THREADS:
                for level, asked in LEVELS.items():
                    used = used_bytes(asked, size)
                    index = names.index(level)
                    for impl, role in impls.items():
                        step = (2.0 if role == "two_copy" else 1.4) if index >= jump_at else 1.0
                        sender = SENDER_NS[role] * step * (1 + 0.02 * index) * math.exp(rng.normal(0, 0.03))
                        per_thread = 1.0 if threads == 1 else 0.55 * (aggregate_fall if threads * used >= (32 << 20)
                                                                      and used < (32 << 20) else 1.0)
                        gbps = 8 / sender * per_thread * threads * math.exp(shift + rng.normal(0, 0.03))
                        nbytes = gbps * 1e9 / 8
                        miss_l1 = (0.002 if index == 0 else 0.02) * (2 if role == "two_copy" else 1)
                        miss_llc = (0.0001 if index < 3 else 0.015) * (2 if role == "two_copy" else 1)
                        out.append({
                            "impl": impl, "mode": "throughput", "msg_size": size, "threads": threads, "rep": rep,
                            "throughput_gbps": round(gbps, 6), "latency_us": round(size * 8 / gbps / 1e3, 3),
                            "context_switches": 1000 * threads, "bytes": int(nbytes), "duration_s": 1.0,
                            "point_id": f"{impl}_throughput_{size}B_{threads}thr_rmessage_rep{rep}_ws{asked}B",
                            "status": "ok", "receive": "message", "topology": "netns",
                            "srv_task_clock_ms": round(nbytes * sender * 1e-6, 4),
                            "cli_task_clock_ms": round(nbytes * 0.4e-6, 4),
                            "counters_note": "" if pmu else "SYNTHETIC: no PMU",
                            "working_set_bytes": used, "working_set_level": level,
                            "cycles": round(nbytes * 3, 0) if pmu else "",
                            "srv_cycles": round(nbytes * 1.5, 0) if pmu else "",
                            "cli_cycles": round(nbytes * 1.5, 0) if pmu else "",
                            "l1_misses": round(nbytes * miss_l1 * math.exp(rng.normal(0, 0.03))) if pmu else "",
                            "llc_misses": round(nbytes * miss_llc * math.exp(rng.normal(0, 0.03))) if pmu else ""})
    return out


def copy_probe(jump: str, rounds: int = 5, seed: int = 7) -> dict:
    """meta.json's memcpy.levels as memcpyref.measure_levels writes it: the copy alone at each level, 0.02
    ns/B, x3 from the level named by jump on (its working set leaves the one below), each run with 10% of
    its own spread and each round's shift shared by its runs."""
    rng = np.random.default_rng(seed)
    names = list(LEVELS)
    shifts = rng.normal(0, 0.3, rounds)
    costs = {level: [round(0.02 * (3 if names.index(level) >= names.index(jump) else 1)
                           * math.exp(shifts[r] + rng.normal(0, 0.1)), 6) for r in range(rounds)] for level in names}
    return {"msg_size": SIZES[0], "ms": 100, "cpu": 0, "ns_per_byte": costs,
            "working_sets": {level: used_bytes(asked, SIZES[0]) for level, asked in LEVELS.items()}}


def write(folder: Path, copy_jump: str | None = None, **kwargs) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "results.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(rows(**kwargs))
    meta = {"cores": 2, "cpu_model": "SYNTHETIC", "cpu_caches": CACHES, "kernel": "synthetic",
            "params": {"name": "cache-like", "working_set": list(LEVELS.values()), "working_set_levels": LEVELS,
                       "equivalence_margin": 0.10},
            }
    if copy_jump:
        meta["memcpy"] = {"ns_per_byte": 0.05, "working_set_bytes": 4 << 20, "levels": copy_probe(copy_jump)}
    (folder / "meta.json").write_text(json.dumps(meta, indent=1))
    return folder

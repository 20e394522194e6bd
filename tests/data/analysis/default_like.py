"""Writes tests/data/analysis/default-like/: a SYNTHETIC sweep shaped like the default grid (three study
paths and one extra send path, throughput and latency, 4 sizes x 3 thread counts, 4 passes, each
pass shifted as a whole, each run with its own log-normal spread). Nothing in it is a measurement;
it is stored so the Study's consistency tests (tests/test_study.py) read a fixed file, and kept
small. Re-create with: .venv/bin/python tests/data/analysis/default_like.py
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import numpy as np

from copylab import registry

FOLDER = Path(__file__).parent / "default-like"
SIZES, THREADS, PASSES = (64, 1024, 16384, 65536), (1, 2, 4), 4
# (made-up) throughput ratio to the baseline per role and size: some wins, losses, ties, and noise
RATIO = {"one_copy": (0.81, 0.93, 1.04, 1.10), "zero_copy": (0.45, 0.70, 0.98, 1.12), "extra": (0.8, 0.9, 1.0, 1.05)}
SPREAD = {64: 0.05, 1024: 0.08, 16384: 0.10, 65536: 0.06}
COLUMNS = ("impl", "mode", "msg_size", "threads", "rep", "throughput_gbps", "latency_us", "cycles", "l1_misses",
           "llc_misses", "context_switches", "bytes", "duration_s", "point_id", "status", "receive", "topology",
           "latency_p50_us", "srv_task_clock_ms", "cli_task_clock_ms", "counters_note", "zc_completions", "zc_copied",
           "messages")


def rows(seed: int = 2026, throughput_factor=None) -> list[dict]:
    """The table; throughput_factor(impl, size, threads) -> a made-up factor on the throughput (and so the
    bytes) of that point, for pairs of sweeps with a known change (tests/test_compare.py)."""
    rng = np.random.default_rng(seed)
    impls = [registry.baseline(), registry.by_role("one_copy"), registry.by_role("zero_copy"),
             registry.names(kind="native", roles=("extra",))[0]]
    out = []
    for rep in range(PASSES):
        shift = rng.normal(0, 0.06)
        for size in SIZES:
            for threads in THREADS:
                for impl in impls:
                    role = registry.role(impl)
                    ratio = 1.0 if role == "two_copy" else RATIO[role][SIZES.index(size)]
                    noise = math.exp(shift + rng.normal(0, SPREAD[size]))
                    gbps = 0.4 * (1 + math.log2(size)) * (1 + 0.3 * threads) * ratio * noise
                    gbps *= throughput_factor(impl, size, threads) if throughput_factor else 1.0
                    nbytes = gbps * 1e9 / 8
                    for mode in ("throughput", "latency"):
                        lat = (40 + size / 2000) * threads ** 0.5 / (ratio ** 0.2) * math.exp(rng.normal(0, 0.05))
                        out.append({
                            "impl": impl, "mode": mode, "msg_size": size, "threads": threads, "rep": rep,
                            "throughput_gbps": round(gbps, 6) if mode == "throughput" else 0.01,
                            "latency_us": round(lat, 3), "latency_p50_us": round(lat * 0.95, 3) if mode == "latency" else "",
                            "context_switches": int(1000 * threads), "bytes": int(nbytes), "duration_s": 1.0,
                            "point_id": f"{impl}-{mode}-{size}-{threads}-r{rep}", "status": "ok", "receive": "message",
                            "topology": "netns", "srv_task_clock_ms": round(nbytes * 0.3e-6 / ratio, 4),
                            "cli_task_clock_ms": round(nbytes * 0.4e-6, 4),
                            "counters_note": "SYNTHETIC: no PMU", "cycles": "", "l1_misses": "", "llc_misses": "",
                            "zc_completions": 100 if role == "zero_copy" else "", "zc_copied": 100 if role == "zero_copy" else "",
                            "messages": max(int(nbytes / size), 1)})
    return out


def write(folder: Path = FOLDER, seed: int = 2026, throughput_factor=None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "results.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=COLUMNS)
        w.writeheader()
        w.writerows(rows(seed, throughput_factor))
    (folder / "meta.json").write_text(json.dumps({"cpu_model": "SYNTHETIC CPU (test data)", "cores": 2,
                                                  "kernel": "6.1.0-synthetic", "params": {"equivalence_margin": 0.10}},
                                                 indent=1) + "\n")
    return folder


if __name__ == "__main__":
    print(write())

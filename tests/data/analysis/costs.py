"""SYNTHETIC throughput runs with known costs per message and per byte (tests/test_costmodel.py).

Nothing here is a measurement. Each path's side spends t(n) = a + b*n microseconds of CPU per message
(a in µs, b in ns/B), times a log-normal noise per run and a shift per pass; the sender's CPU is
saturated, so its time per message sets the throughput: n bytes every t_srv(n) µs.
"""

from __future__ import annotations

import math

import numpy as np

from evidence import frame, measured_row

SIZES = (64, 1024, 4096, 16384, 65536)
THREADS = (1, 2, 4, 8)
# (a µs, b ns/B) per path and side: A2 pays 0.5 µs more per message and saves 0.05 ns/B, so its line
# crosses A1's at 0.5e3 / 0.05 = 10,000 B; A3 pays 6 µs more and saves 0.02 ns/B: 300,000 B
COSTS = {"a1": {"srv": (2.0, 0.30), "cli": (1.5, 0.12)},
         "a2": {"srv": (2.5, 0.25), "cli": (1.5, 0.12)},
         "a3": {"srv": (8.0, 0.28), "cli": (1.8, 0.12)}}
CROSSOVER = {"a2": 10_000.0, "a3": 300_000.0}


def time_us(impl: str, side: str, size: int) -> float:
    a, b = COSTS[impl][side]
    return a + b * size / 1e3


def rows(passes: int = 4, noise: float = 0.01, seed: int = 7, costs=None) -> "pd.DataFrame":  # noqa: F821
    costs = costs or COSTS
    rng = np.random.default_rng(seed)
    out = []
    for rep in range(passes):
        shift = rng.normal(0, 0.03)
        for size in SIZES:
            for threads in THREADS:
                for impl in ("a1", "a2", "a3"):
                    t = {side: (costs[impl][side][0] + costs[impl][side][1] * size / 1e3)
                         * math.exp(shift + rng.normal(0, noise)) for side in ("srv", "cli")}
                    messages = 1e6 / t["srv"]  # a saturated sender over a 1 s window
                    gbps = messages * size * 8 / 1e9
                    row = measured_row(impl, size, threads, rep, gbps, busy=(1.0, t["cli"] / t["srv"]),
                                       srv_task_clock_ms=1000.0, cli_task_clock_ms=1000.0 * t["cli"] / t["srv"])
                    out.append(row)
    return frame(out)

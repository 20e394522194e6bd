#!/usr/bin/env python3
"""How long must a point be measured to be stable? A benchmark (not a test) behind the default grid.

For representative points (A1/A2/A3 at 64 B, 4 KiB and 64 KiB, 1 and 4 threads, throughput mode;
64 B round trips in latency mode) it measures every (point, window) several times, in a freshly
shuffled order per repetition, through the same engine as a sweep (namespaces, pinning 0/1, perf),
and reports the coefficient of variation (CV) of each point's repetitions per window length, plus
the shift a longer warm-up makes. A window is long enough when a longer one no longer lowers the
CV: what remains is the host's own drift, which only repetitions average out.

    sudo .venv/bin/python tools/stability.py [--reps 5] [--windows 0.3,0.6,1.2] [--out FILE]

Run it on an otherwise idle machine: numbers taken while other work runs measure that work.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lib"))

from copylab import perf as perfmod  # noqa: E402
from copylab.point import PointSpec, run_point  # noqa: E402
from copylab.topology import open_topology  # noqa: E402

THROUGHPUT = [(impl, size, threads) for impl in ("a1", "a2", "a3") for size in (64, 4096, 65536)
              for threads in (1, 4)]
LATENCY = [(impl, 64, 1) for impl in ("a1", "a2", "a3")]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--windows", default="0.3,0.6,1.2")
    parser.add_argument("--warmups", default="0.1,0.3", help="compared at the middle window")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", default="output/stability.json")
    args = parser.parse_args()
    windows = [float(w) for w in args.windows.split(",")]
    warmups = [float(w) for w in args.warmups.split(",")]
    middle = windows[len(windows) // 2]
    cases = [(mode, impl, size, thr, w, warmups[0]) for mode, points in (("throughput", THROUGHPUT), ("latency", LATENCY))
             for impl, size, thr in points for w in windows]
    cases += [("throughput", impl, size, thr, middle, wu) for impl, size, thr in THROUGHPUT for wu in warmups[1:]]
    rng = random.Random(args.seed)
    plan = perfmod.probe()
    results: dict[str, list[float]] = {}
    started = time.monotonic()
    with open_topology("netns") as topo:
        for rep in range(args.reps):
            order = list(cases)
            rng.shuffle(order)
            for k, (mode, impl, size, thr, window, warmup) in enumerate(order):
                spec = PointSpec(impl=impl, mode=mode, msg_size=size, threads=thr, rep=rep, duration_s=window,
                                 warmup_s=warmup, topology="netns", pin_server="0", pin_client="1")
                row, _ = run_point(spec, plan, topo)
                value = row["throughput_gbps"] if mode == "throughput" else row["latency_p50_us"]
                key = f"{mode} {impl} {size}B {thr}thr w{warmup:g} d{window:g}"
                if row["status"] == "ok":
                    results.setdefault(key, []).append(value)
                print(f"\rrep {rep + 1}/{args.reps} {k + 1}/{len(order)} {time.monotonic() - started:.0f} s",
                      end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    summary = summarise(results, windows, warmups, middle)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({"results": results, "summary": summary,
                                          "wall_s": round(time.monotonic() - started, 1)}, indent=1))
    for line in summary["lines"]:
        print(line)
    return 0


def cv(values: list[float]) -> float:
    return statistics.stdev(values) / statistics.mean(values) if len(values) >= 2 and statistics.mean(values) else float("nan")


def summarise(results: dict, windows, warmups, middle) -> dict:
    lines = ["window  median CV (throughput points)  max CV  median CV (latency p50)"]
    by_window = {}
    for w in windows:
        tp = [cv(v) for k, v in results.items() if k.startswith("throughput") and k.endswith(f"w{warmups[0]:g} d{w:g}")]
        lat = [cv(v) for k, v in results.items() if k.startswith("latency") and k.endswith(f"d{w:g}")]
        by_window[w] = {"throughput_median_cv": statistics.median(tp), "throughput_max_cv": max(tp),
                        "latency_median_cv": statistics.median(lat)}
        lines.append(f"{w:>5g} s  {100 * statistics.median(tp):27.1f}%  {100 * max(tp):5.1f}%  "
                     f"{100 * statistics.median(lat):22.1f}%")
    shifts = []
    for key, values in results.items():
        if key.startswith("throughput") and key.endswith(f"w{warmups[0]:g} d{middle:g}"):
            other = results.get(key.replace(f"w{warmups[0]:g} ", f"w{warmups[-1]:g} "))
            if other:
                shifts.append(statistics.mean(other) / statistics.mean(values) - 1)
    if shifts:
        lines.append(f"warm-up {warmups[-1]:g} s vs {warmups[0]:g} s at {middle:g} s windows: median shift of the mean "
                     f"{100 * statistics.median(shifts):+.1f}% (spread {100 * min(shifts):+.1f}% to {100 * max(shifts):+.1f}%)")
    return {"by_window": by_window, "warmup_shift": shifts, "lines": lines}


if __name__ == "__main__":
    sys.exit(main())

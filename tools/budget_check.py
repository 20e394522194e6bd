#!/usr/bin/env python3
"""Does the budget's allocation bias the decisions? A simulation (no measurement) behind
docs/methodology.md, "The time budget".

    .venv/bin/python tools/budget_check.py [--sims 400] [--extra 6]

Synthetic sweeps of the default grid's shape (5 sizes x 4 thread counts, A1 and X), each point with
its own log-scale spread (drawn between 3% and 20%), a pass effect of 5%, 3 base passes and up to
--extra extra passes. Two allocation rules are compared on the same draws:

  width   sweep/budget.py's: another pass for every per-size comparison whose 95% interval is
          wider than log(1+m)/2 (the ratio never looked at);
  verdict a rule that looks at the verdict: another pass only while a comparison is undecided.

For each true ratio the share of comparisons decided wrongly is counted (a win or a loss when the
true ratio is 1, any decision but the true one when it is clearly outside the margin, a win or a
loss against the truth otherwise), with the share left undecided. The decisions are
copylab/inference.py's, exactly as the report makes them.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lib"))

from copylab.inference import compare_values, log_values, target_half_width  # noqa: E402

SIZES = (64, 1024, 4096, 16384, 65536)
THREADS = (1, 2, 4, 8)
MARGIN = 0.10


class Draw:
    """One synthetic sweep: every point's spread fixed, values drawn pass by pass."""

    def __init__(self, ratio: float, rng: np.random.Generator):
        self.ratio, self.rng = ratio, rng
        self.spread = {(impl, s, t): rng.uniform(0.03, 0.20) for impl in ("a1", "x") for s in SIZES for t in THREADS}
        self.rows: list[dict] = []

    def add_pass(self, rep: int, sizes) -> None:
        shift = self.rng.normal(0, 0.05)
        for (impl, size, threads), sd in self.spread.items():
            if size in sizes:
                value = (self.ratio if impl == "x" else 1.0) * math.exp(shift + self.rng.normal(0, sd))
                self.rows.append({"impl": impl, "msg_size": size, "threads": threads, "rep": rep, "status": "ok",
                                  "throughput_gbps": value})

    def decisions(self) -> dict:
        return compare_values(log_values(pd.DataFrame(self.rows)), "x", "a1", MARGIN)["by_size"]


def simulate(ratio: float, rule: str, extra: int, rng) -> list[str]:
    draw = Draw(ratio, rng)
    for rep in range(3):
        draw.add_pass(rep, SIZES)
    target = target_half_width(MARGIN)
    for rep in range(3, 3 + extra):
        by_size = draw.decisions()
        if rule == "width":
            wanted = [s for s, d in by_size.items() if not d.half_width <= target]
        else:
            wanted = [s for s, d in by_size.items() if d.decision == "undecided"]
        if not wanted:
            break
        draw.add_pass(rep, wanted)
    return [d.decision for d in draw.decisions().values()]


def wrong(decision: str, ratio: float) -> bool:
    if decision == "undecided":
        return False
    if ratio == 1.0:
        return decision in ("win", "loss")
    if ratio >= 1 + MARGIN * 1.5 or ratio <= 1 / (1 + MARGIN * 1.5):
        return decision != ("win" if ratio > 1 else "loss")
    return decision == ("loss" if ratio > 1 else "win")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sims", type=int, default=400)
    parser.add_argument("--extra", type=int, default=6)
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--out", metavar="FILE", default="output/budget-check.json", help="where the JSON goes")
    args = parser.parse_args()
    out = {}
    for ratio in (1.0, 1.05, 1.2, 0.8):
        for rule in ("width", "verdict"):
            rng = np.random.default_rng(args.seed)
            calls = [d for _ in range(args.sims) for d in simulate(ratio, rule, args.extra, rng)]
            entry = {"comparisons": len(calls), "wrong": sum(wrong(d, ratio) for d in calls) / len(calls),
                     "undecided": calls.count("undecided") / len(calls),
                     **{k: calls.count(k) / len(calls) for k in ("win", "loss", "equivalent")}}
            out[f"ratio {ratio} rule {rule}"] = entry
            print(f"true ratio {ratio:.2f}, {rule:7s}: wrong {entry['wrong']:.3%}, undecided {entry['undecided']:.1%}, "
                  f"win {entry['win']:.1%}, loss {entry['loss']:.1%}, equivalent {entry['equivalent']:.1%}")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({"args": vars(args), "results": out}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

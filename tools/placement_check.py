#!/usr/bin/env python3
"""The placement rule on emulated hosts (tests/emulated_hosts.py): per host and seed, how many runs
taken while the vCPUs were apart the rule caught, how many runs taken near it judged apart, and the
share of the wall time placement cost, in simulated sweeps of 300 runs of 1.2 s.

    .venv/bin/python tools/placement_check.py [--seeds 5] [--runs 300] [--host NAME ...]

Exit status 1 when a host misses what issue 48 asks of the rule: at least 90% of the apart runs
caught in every seed, no near run judged apart, placement at most a quarter of the wall time.
No clock of this machine is read: the sweeps' time is simulated, so the table is the same on any host.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "lib"))
sys.path.insert(0, str(ROOT / "tests"))

from emulated_hosts import HOSTS, simulate  # noqa: E402

from copylab.placement import SHARE_OF_SWEEP  # noqa: E402

CAUGHT_SHARE = 0.90


def meets(outcome) -> list[str]:
    """What a simulated sweep misses of issue 48's bounds (empty: none)."""
    missed = []
    if outcome.apart_runs and outcome.caught < CAUGHT_SHARE * outcome.apart_runs:
        missed.append(f"caught {outcome.caught} of {outcome.apart_runs} apart runs")
    if outcome.near_judged_apart:
        missed.append(f"{outcome.near_judged_apart} near runs judged apart")
    if outcome.placement_share > SHARE_OF_SWEEP:
        missed.append(f"placement {100 * outcome.placement_share:.0f}% of the wall time")
    return missed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--host", action="append", choices=sorted(HOSTS), help="default: every host")
    args = parser.parse_args()
    print("| host | seed | apart runs | caught | near judged apart | kept apart at the end | placement "
          "| what the rule learned |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    failed = 0
    for name in args.host or HOSTS:
        for seed in range(args.seeds):
            outcome = simulate(HOSTS[name], seed, runs=args.runs)
            missed = meets(outcome)
            failed += bool(missed)
            print(f"| {name} | {seed} | {outcome.apart_runs} | {outcome.caught} | {outcome.near_judged_apart} "
                  f"| {outcome.kept_apart} | {100 * outcome.placement_share:.1f}% of {outcome.wall_s:.0f} s "
                  f"| {outcome.modes.why}{' | MISSED: ' + '; '.join(missed) if missed else ''} |")
    print(f"\n{failed} of {len(args.host or HOSTS) * args.seeds} simulated sweeps missed the bounds "
          f"(>= {CAUGHT_SHARE:.0%} of apart runs caught, no near run judged apart, placement <= "
          f"{SHARE_OF_SWEEP:.0%} of the wall time)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

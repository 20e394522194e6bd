"""How a throughput pass spends its seconds on a host: one long connection, or its window split over
several fresh sets of connections one after another (the client's --rounds), each after its own
warm-up. The rule; the sweep's side (the calibration that feeds it, the choice kept across a
resumed sweep) is sweep/rounds.py, as placement.py's is sweep/placing.py.

Each new connection settles at its own level, so the spread of a pass has two parts (Kalibera and
Jones, "Rigorous benchmarking in reasonable time", ISMM 2013): a per-connection level (variance a)
and the window's own intervals (b per second of window: b / w for a window of w s). A pass of K
rounds of w s each has variance (a + b / w) / K and costs K (w + c), c being what a round costs
beyond its window (reconnecting and warming up). The grid's pass (one window of W s) is held at
its cost, W + c, so the budget is unchanged: w = (W + c) / K - c. choose() takes the K with the
least variance, and more than one only where that lowers the predicted spread by at least
MIN_GAIN even with a at the lower end of its 95% interval (a calibration of a few rounds estimates
it loosely, and a choice that flips between two runs on one host changes what they measure, issue
50): where connections settle alike (a small against b / W) one long window is best.

Consecutive connections are alike on some hosts (the host's state drifts over seconds; lag-1
correlation 0.14-0.65 on the development VM, docs/methodology.md): a, measured from the rounds of
one run about their run's mean, is then the part a split can average away, and the part they share
is the same for every K. So the choice stands and the predicted CV is a lower bound.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from .contract import ROUNDS_RANGE

ROUND_WINDOW_MIN_S = 0.2  # 4 whole 50 ms intervals: a round's own spread is still measured
MIN_GAIN = 0.10           # a split must lower the predicted spread (CV) by this share to be taken


class Spread(NamedTuple):
    """A calibration's estimates: per-connection variance a (with its degrees of freedom), the window's
    variance b per second, a round's cost c beyond its window (seconds)."""

    a: float
    b: float
    cost_s: float
    dof: int


@dataclass(frozen=True)
class Choice:
    rounds: int
    duration_s: float           # the pass's window, over all its rounds
    why: str
    per_connection_cv: float | None = None
    within_cv: float | None = None  # of a W-second window
    round_cost_s: float | None = None
    predicted_cv: dict | None = None  # rounds -> the pass's predicted CV

    def to_dict(self) -> dict:
        return {"rounds": self.rounds, "duration_s": round(self.duration_s, 3), "why": self.why,
                "per_connection_cv": _round(self.per_connection_cv), "within_cv": _round(self.within_cv),
                "round_cost_s": _round(self.round_cost_s),
                "predicted_cv": {str(k): _round(v) for k, v in (self.predicted_cv or {}).items()}}


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def _predicted(a: float, b: float, cost_s: float, window_s: float, most: int) -> dict[int, float]:
    """rounds -> the pass's predicted CV, for every split whose rounds keep a window to measure."""
    pass_s, out = window_s + cost_s, {}
    for k in range(1, most + 1):
        w = window_s if k == 1 else pass_s / k - cost_s
        if k > 1 and w < ROUND_WINDOW_MIN_S:
            break
        out[k] = math.sqrt((a + b / w) / k)
    return out


def lower_bound(variance: float, dof: int, confidence: float = 0.95) -> float:
    """The lower end of a variance estimate's two-sided interval with dof degrees of freedom (chi-square)."""
    from scipy import stats as sps

    return variance * dof / float(sps.chi2.ppf(0.5 + confidence / 2, dof)) if dof > 0 else 0.0


def choose(a: float, b: float, cost_s: float, window_s: float, most: int = ROUNDS_RANGE[1],
           dof: int | None = None) -> Choice:
    """The rounds for a pass of window_s on a host with per-connection variance a (estimated with dof
    degrees of freedom: the choice is made at its lower 95% bound), within-window variance b per second
    and a round's cost cost_s (log scale; see the module's docstring)."""
    predicted = _predicted(a, b, cost_s, window_s, most)
    cautious = _predicted(lower_bound(a, dof), b, cost_s, window_s, most) if dof else predicted
    best = min(cautious, key=cautious.get)
    if best > 1 and cautious[best] > (1 - MIN_GAIN) * cautious[1]:
        best = 1
    pass_s = window_s + cost_s
    w = window_s if best == 1 else pass_s / best - cost_s
    spread = (f"between connections {100 * math.sqrt(a):.1f}%, within a {window_s:g} s window "
              f"{100 * math.sqrt(b / window_s):.1f}%, {cost_s:.2f} s per round beyond its window")
    if best == 1:
        why = f"one connection per pass: {spread}; no split lowers the spread by {100 * MIN_GAIN:.0f}%"
    else:
        why = (f"{best} rounds of {w:.2f} s per pass (predicted CV {100 * predicted[best]:.1f}% against "
               f"{100 * predicted[1]:.1f}% for one {window_s:g} s window, besides what consecutive connections "
               f"share): {spread}")
    return Choice(best, round(best * w, 3), why, math.sqrt(a), math.sqrt(b / window_s), cost_s, predicted)


def components(runs: list[dict]) -> Spread | None:
    """(a, b, c) from calibration runs, each {"rounds": [[interval values of each round's window]],
    "interval_s": s, "gaps": [seconds from a round's window to the next one's]}: b from the
    intervals about their round's mean (pooled), a from the rounds' means beyond what b explains,
    c the median gap. None when too little was measured."""
    within, dof, between, gaps, a_dof = 0.0, 0, [], [], 0
    for run in runs:
        rounds = [np.asarray(r, float) for r in run["rounds"] if len(r) >= 2 and min(r) > 0]
        if len(rounds) < 3:
            continue
        logs = [np.log(r) for r in rounds]
        within += sum(float(((x - x.mean()) ** 2).sum()) for x in logs)
        dof += sum(len(x) - 1 for x in logs)
        lengths = [len(x) * run["interval_s"] for x in logs]
        means = np.log([r.mean() for r in rounds])
        between.append((float(np.var(means, ddof=1)), float(np.mean(lengths)), run["interval_s"]))
        a_dof += len(means) - 1
        gaps += [g for g in run["gaps"] if g is not None and g == g and g > 0]
    if not between or not dof or not gaps:
        return None
    per_interval = within / dof
    b = per_interval * float(np.mean([s for _, _, s in between]))  # variance x seconds: b / w for w s
    a = float(np.mean([max(var - b / length, 0.0) for var, length, _ in between]))
    return Spread(a, b, float(np.median(gaps)), a_dof)

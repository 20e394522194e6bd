"""How sure a comparison is: Welch intervals over repetitions, the ratio of means with its interval,
and the significant crossover (docs/contracts.md, "Significance").

The samples are the repetitions of a point. For an answer over all thread counts, each repetition's
value is its mean over the thread counts, so every repetition is one independent draw of the same
quantity. X wins significantly at a size when the 95% Welch confidence interval of
mean(X) - mean(A1) lies entirely above zero.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd
from scipy import stats as sps

from .roles import BASE
from .stats import throughput_rows

CONFIDENCE = 0.95


@dataclass(frozen=True)
class Comparison:
    """X against a baseline at one size (and thread count, or over all of them)."""

    mean_x: float
    mean_base: float
    n_x: int
    n_base: int
    diff_low: float       # 95% Welch CI of mean(X) - mean(base); NaN with fewer than 2 repetitions
    diff_high: float
    ratio: float          # mean(X) / mean(base)
    ratio_low: float      # 95% Fieller interval of the ratio; NaN where it is unbounded or undefined
    ratio_high: float

    @property
    def significant_win(self) -> bool:
        return self.diff_low > 0

    @property
    def significant_loss(self) -> bool:
        return self.diff_high < 0

    def to_dict(self) -> dict:
        return {**asdict(self), "significant": bool(self.significant_win)}


def welch(x, base) -> tuple[float, float, float]:
    """(difference of means, CI low, CI high) at CONFIDENCE, Welch's t (unequal variances)."""
    x, base = np.asarray(x, float), np.asarray(base, float)
    diff = float(x.mean() - base.mean()) if len(x) and len(base) else math.nan
    if len(x) < 2 or len(base) < 2:
        return diff, math.nan, math.nan
    if x.var(ddof=1) == 0 and base.var(ddof=1) == 0:
        return diff, diff, diff  # no spread at all: the difference is what it is
    ci = sps.ttest_ind(x, base, equal_var=False).confidence_interval(CONFIDENCE)
    return diff, float(ci.low), float(ci.high)


def fieller(x, base) -> tuple[float, float]:
    """95% interval of mean(x)/mean(base) for independent samples (Fieller's theorem with Welch's
    degrees of freedom): the set of ratios r for which mean(x) - r*mean(base) is not significantly
    different from 0. NaN where the baseline's mean is itself indistinguishable from zero."""
    x, base = np.asarray(x, float), np.asarray(base, float)
    if len(x) < 2 or len(base) < 2:
        return math.nan, math.nan
    mx, mb = x.mean(), base.mean()
    vx, vb = x.var(ddof=1) / len(x), base.var(ddof=1) / len(base)
    if vx + vb == 0:
        return (mx / mb, mx / mb) if mb else (math.nan, math.nan)
    df = (vx + vb) ** 2 / ((vx ** 2 / (len(x) - 1) if vx else 0) + (vb ** 2 / (len(base) - 1) if vb else 0))
    t = sps.t.ppf(0.5 + CONFIDENCE / 2, df)
    denominator = mb ** 2 - t ** 2 * vb
    discriminant = mb ** 2 * vx + mx ** 2 * vb - t ** 2 * vx * vb
    if denominator <= 0 or discriminant < 0:
        return math.nan, math.nan
    root = t * math.sqrt(discriminant)
    return float((mx * mb - root) / denominator), float((mx * mb + root) / denominator)


def compare(x, base) -> Comparison:
    x, base = list(x), list(base)
    mx, mb = (float(np.mean(v)) if v else math.nan for v in (x, base))
    _, low, high = welch(x, base)
    rlow, rhigh = fieller(x, base)
    return Comparison(mx, mb, len(x), len(base), low, high, mx / mb if mb else math.nan, rlow, rhigh)


def repetition_values(df: pd.DataFrame, impl: str, metric: str = "throughput_gbps") -> pd.DataFrame:
    """impl's throughput-mode values per (threads, msg_size, rep)."""
    tp = throughput_rows(df)
    tp = tp[(tp["impl"] == impl) & tp[metric].notna()]
    return tp.groupby(["threads", "msg_size", "rep"])[metric].mean().reset_index()


def over_threads_by_rep(values: pd.DataFrame, threads: list[int], metric: str = "throughput_gbps") -> pd.DataFrame:
    """Per (msg_size, rep): the mean over the given thread counts (a repetition missing one of
    them is left out, so every value averages the same thread counts)."""
    kept = values[values["threads"].isin(threads)]
    counted = kept.groupby(["msg_size", "rep"])[metric].agg(["mean", "count"]).reset_index()
    counted = counted[counted["count"] == len(threads)]
    return counted.rename(columns={"mean": metric})[["msg_size", "rep", metric]]


def comparisons(df: pd.DataFrame, impl: str, base: str = BASE) -> dict:
    """{"overall": {size: Comparison}, "per_threads": {threads: {size: Comparison}}, "reps": n}."""
    x, b = repetition_values(df, impl), repetition_values(df, base)
    shared = sorted(set(map(tuple, x[["threads", "msg_size"]].drop_duplicates().to_numpy()))
                    & set(map(tuple, b[["threads", "msg_size"]].drop_duplicates().to_numpy())))
    per_threads: dict[int, dict[int, Comparison]] = {}
    for threads, size in shared:
        pick = lambda v: v[(v["threads"] == threads) & (v["msg_size"] == size)]["throughput_gbps"].tolist()
        per_threads.setdefault(int(threads), {})[int(size)] = compare(pick(x), pick(b))
    overall: dict[int, Comparison] = {}
    sizes = sorted({s for _, s in shared})
    for size in sizes:
        threads = sorted(t for t, s in shared if s == size)
        xo = over_threads_by_rep(x[x["msg_size"] == size], threads)
        bo = over_threads_by_rep(b[b["msg_size"] == size], threads)
        overall[int(size)] = compare(xo["throughput_gbps"].tolist(), bo["throughput_gbps"].tolist())
    reps = int(min(x["rep"].nunique(), b["rep"].nunique())) if len(x) and len(b) else 0
    return {"overall": overall, "per_threads": per_threads, "reps": reps}


def significant_crossover(by_size: dict[int, Comparison]) -> int | None:
    """The smallest size from which X wins significantly at that size and every larger one;
    None when it does not at the largest size or when there are not 2 repetitions on each side."""
    start = None
    for size in sorted(by_size, reverse=True):
        c = by_size[size]
        if min(c.n_x, c.n_base) >= 2 and c.significant_win:
            start = size
        else:
            break
    return start


def significance_answer(df: pd.DataFrame, impl: str, base: str = BASE) -> dict:
    """The answers.json additions for one pair (docs/contracts.md)."""
    found = comparisons(df, impl, base)
    return {
        "significant_crossover_bytes": significant_crossover(found["overall"]),
        "significant_per_threads": {str(t): significant_crossover(by_size)
                                    for t, by_size in sorted(found["per_threads"].items())},
        "repetitions": found["reps"],
        "ratio_ci_by_size": {str(s): c.to_dict() for s, c in found["overall"].items()},
    }

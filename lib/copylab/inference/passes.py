"""A sweep's passes as samples, and the decision of every comparison made from them.

Repetition r of every point was measured in pass r, and within a pass the implementations of one
(size, threads) cell ran back to back. The host's state drifts over seconds and a pass that ran
faster or slower shifts all of its runs together, so X is compared with the baseline within each
pass. The analysis is on the log scale, where such a shift is additive and a ratio a difference:

1. one cell (size, threads): the paired differences d_r = log X_r - log base_r over the passes both
   were measured in; their mean, and its variance from the cell's own spread, with n-1 degrees of
   freedom. A cell with fewer than 2 common passes falls back to the two points' pass-adjusted means
   (pass effects: each pass's median deviation from the points' means, removed) with Welch's variance.
2. over all thread counts at one size: the mean of the per-cell differences, its variance the sum of
   theirs over T^2, its degrees of freedom Welch-Satterthwaite's over every component.
3. ratio = exp(difference), its 95% interval, decided by decide.classify.

For an undecided comparison, passes_needed is how many more passes would likely decide it at the
measured spread and ratio.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..contract import UNSTABLE_CV
from .decide import DEFAULT_MARGIN, Decision, Outcome, classify, p_values, t_quantile

PASS_ITERATIONS = 5
MAX_PASSES_NEEDED = 100  # beyond this, "more than 100" is all that is worth saying


# ------------------------------------------------------------------------------------------------
# pass-adjusted log values


def log_values(rows: pd.DataFrame, metric: str = "throughput_gbps") -> pd.DataFrame:
    """impl, msg_size, threads, rep, y = log(metric) of the successful rows with a positive value
    (one value per point and pass: repeated rows of one are averaged)."""
    ok = rows[[c for c in ("impl", "msg_size", "threads", "rep", "status", metric) if c in rows]]
    if "status" in ok:
        status = ok["status"].astype("string").fillna("ok").str.strip().str.lower()
        ok = ok[status.isin(["ok", ""])]
    value = pd.to_numeric(ok[metric], errors="coerce")
    ok = ok.assign(y=np.log(value.where(value > 0)))
    ok = ok[ok["y"].notna()]
    return ok.groupby(["impl", "msg_size", "threads", "rep"], as_index=False)["y"].mean()


def pass_effects(values: pd.DataFrame) -> pd.Series:
    """e_r per pass (rep): the median deviation of its points from their means, centred to mean 0."""
    keys = ["impl", "msg_size", "threads"]
    multi = values.groupby(keys)["rep"].transform("nunique") >= 2
    data = values[multi]
    effects = pd.Series(0.0, index=sorted(values["rep"].unique()))
    if data.empty or data["rep"].nunique() < 2:
        return effects
    for _ in range(PASS_ITERATIONS):
        adjusted = data["y"] - data["rep"].map(effects)
        point_mean = adjusted.groupby([data[k] for k in keys]).transform("mean")
        new = (data["y"] - point_mean).groupby(data["rep"]).median()
        new = new - new.mean()
        effects = new.reindex(effects.index, fill_value=0.0)
    return effects


def point_stats(rows: pd.DataFrame, metric: str = "throughput_gbps", block: bool = True) -> pd.DataFrame:
    """Per (impl, msg_size, threads): n, mean and variance of the pass-adjusted log values."""
    values = log_values(rows, metric)
    if values.empty:
        return pd.DataFrame(columns=["impl", "msg_size", "threads", "n", "mean", "var"])
    if block:
        values = values.assign(y=values["y"] - values["rep"].map(pass_effects(values)))
    grouped = values.groupby(["impl", "msg_size", "threads"])["y"]
    out = grouped.agg(n="count", mean="mean", var=lambda y: y.var(ddof=1) if len(y) >= 2 else math.nan)
    return out.reset_index()


# ------------------------------------------------------------------------------------------------
# comparisons


@dataclass(frozen=True)
class Diff:
    d: float            # difference of log means
    parts: tuple        # ((variance of a mean, its df), ...) for Welch-Satterthwaite
    n_x: int
    n_base: int

    @property
    def var(self) -> float:
        return sum(v for v, _ in self.parts)

    @property
    def df(self) -> float:
        denominator = sum(v * v / k for v, k in self.parts if v > 0)
        return self.var ** 2 / denominator if denominator > 0 else math.inf


def _point_diff(x: pd.Series, b: pd.Series) -> Diff:
    parts = tuple((p["var"] / p["n"], p["n"] - 1) for p in (x, b))
    return Diff(x["mean"] - b["mean"], parts, int(x["n"]), int(b["n"]))


def _mean_diff(diffs: list[Diff]) -> Diff:
    k = len(diffs)
    parts = tuple((v / k / k, df) for d in diffs for v, df in d.parts)
    return Diff(sum(d.d for d in diffs) / k, parts, min(d.n_x for d in diffs), min(d.n_base for d in diffs))


def decide_diff(impl, base, size, threads, diff: Diff, margin: float) -> Decision:
    """The decision of one difference of log means (a cell's, or a pool's: pool())."""
    ratio = math.exp(diff.d)
    if diff.n_x < 2 or diff.n_base < 2 or math.isnan(diff.var):
        return Decision(impl, base, size, threads, ratio, math.nan, math.nan, diff.n_x, diff.n_base, math.nan,
                        margin, Outcome.UNDECIDED, None)
    se = math.sqrt(diff.var) if diff.var > 0 else 0.0
    half = t_quantile(diff.df) * se
    low, high = math.exp(diff.d - half), math.exp(diff.d + half)
    decision = classify(low, high, margin)
    needed = _passes_needed(diff, margin) if decision == Outcome.UNDECIDED else None
    return Decision(impl, base, size, threads, ratio, low, high, diff.n_x, diff.n_base, diff.df, margin,
                    decision, needed, *p_values(diff.d, se, diff.df, margin))


def pool(diffs: list[Diff]) -> Diff:
    """The mean of several comparisons' log differences (as the thread counts of one size are pooled)."""
    return _mean_diff(diffs)


def _passes_needed(diff: Diff, margin: float) -> int | None:
    """More passes (of every point involved) after which this interval would likely decide, at the
    spread and ratio measured now; None when that is more than MAX_PASSES_NEEDED."""
    n = min(diff.n_x, diff.n_base)
    if n < 2:
        return None
    bound = math.log1p(margin)
    for extra in range(1, MAX_PASSES_NEEDED + 1):
        scale = n / (n + extra)
        var = diff.var * scale
        df = diff.df * (n + extra - 1) / (n - 1)
        half = t_quantile(df) * math.sqrt(var)
        if abs(diff.d) + half <= bound or abs(diff.d) > half:
            return extra
    return None


def likely_outcome(d: Decision) -> Outcome:
    """What an undecided comparison leans to: the outcome _passes_needed's narrowing interval reaches first
    at the measured ratio. Equivalence needs |log ratio| + half <= log(1+m), a win or a loss only
    |log ratio| > half, so the interval fits inside the margin first when the ratio lies within half
    the margin's log of 1, and misses 1 first (on the ratio's side) beyond it."""
    if d.ratio != d.ratio or d.ratio <= 0:
        return Outcome.UNDECIDED
    lean = math.log(d.ratio)
    if abs(lean) < math.log1p(d.margin) / 2:
        return Outcome.EQUIVALENT
    return Outcome.WIN if lean > 0 else Outcome.LOSS


def _paired_diff(x: dict, b: dict) -> Diff | None:
    """The paired differences of one cell over the passes both were measured in (None below 2);
    x and b are {pass: log value}."""
    d = np.array([x[rep] - b[rep] for rep in sorted(x.keys() & b.keys())])
    n = len(d)
    if n < 2:
        return None
    return Diff(float(d.mean()), ((float(d.var(ddof=1)) / n, n - 1),), n, n)


def _adjusted_stats(values: pd.DataFrame) -> pd.DataFrame:
    adjusted = values.assign(y=values["y"] - values["rep"].map(pass_effects(values)))
    return adjusted.groupby(["impl", "msg_size", "threads"])["y"].agg(
        n="count", mean="mean", var=lambda y: y.var(ddof=1) if len(y) >= 2 else math.nan)


def point_diff(stats: pd.DataFrame, x: tuple, base: tuple) -> Diff | None:
    """x's point against base's point ((impl, msg_size, threads) keys of point_stats() rows), each
    with its own mean and spread, unpaired: for comparisons whose runs were not measured in one block
    (a path against itself at another size or thread count), where pairing by pass would pair runs
    minutes apart. None when either point is missing."""
    index = stats.set_index(["impl", "msg_size", "threads"])
    if x not in index.index or base not in index.index:
        return None
    return _point_diff(index.loc[x], index.loc[base])


def cell_diffs(values: pd.DataFrame, impl: str, base: str) -> dict[tuple[int, int], Diff]:
    """{(size, threads): difference of log means} of impl against base at every cell both were
    measured at, from log_values(): paired within passes where possible (the module's docstring)."""
    if values.empty or not {impl, base} <= set(values["impl"]):
        return {}
    # each cell's {pass: value}, split once in plain dicts (a .loc per cell on the MultiIndex, or a
    # Series per cell, made a comparison of two sweeps cost seconds); log_values() gives one per pass
    mine = values[values["impl"].isin([impl, base])]
    series: dict[tuple, dict] = {}
    for key_impl, size, threads, rep, y in zip(mine["impl"], mine["msg_size"], mine["threads"], mine["rep"],
                                              mine["y"]):
        series.setdefault((key_impl, size, threads), {})[rep] = y
    stats = None
    cells = sorted({(size, threads) for (who, size, threads) in series if who == impl}
                   & {(size, threads) for (who, size, threads) in series if who == base})
    out = {}
    for size, threads in cells:
        diff = _paired_diff(series[(impl, size, threads)], series[(base, size, threads)])
        if diff is None:  # too few common passes: the points' own means and spreads
            stats = _adjusted_stats(values) if stats is None else stats
            diff = _point_diff(stats.loc[(impl, size, threads)], stats.loc[(base, size, threads)])
        out[(int(size), int(threads))] = diff
    return out


def decide_cells(diffs: dict[tuple[int, int], Diff], impl: str, base: str, margin: float = DEFAULT_MARGIN) -> dict:
    """{"by_size": {size: Decision}, "per_threads": {threads: {size: Decision}}} from cell_diffs():
    each cell decided, and each size over its thread counts (pool())."""
    per_threads: dict[int, dict[int, Decision]] = {}
    by_size_diffs: dict[int, list[Diff]] = {}
    for (size, threads), diff in sorted(diffs.items()):
        per_threads.setdefault(threads, {})[size] = decide_diff(impl, base, size, threads, diff, margin)
        by_size_diffs.setdefault(size, []).append(diff)
    by_size = {size: decide_diff(impl, base, size, None, pool(found), margin)
               for size, found in sorted(by_size_diffs.items())}
    return {"by_size": by_size, "per_threads": dict(sorted(per_threads.items()))}


def compare_values(values: pd.DataFrame, impl: str, base: str, margin: float = DEFAULT_MARGIN) -> dict:
    """{"by_size": {size: Decision}, "per_threads": {threads: {size: Decision}}} for impl against base,
    from log_values() (sweep/budget.py plans its passes with it; the report's decisions are the
    Study's, analysis/study.py)."""
    return decide_cells(cell_diffs(values, impl, base), impl, base, margin)


# ------------------------------------------------------------------------------------------------
# two sweeps


def between_sweeps(first: Diff, second: Diff) -> Diff:
    """second's log difference minus first's, the two from independent sweeps: their variances add,
    each part keeping its own degrees of freedom (Welch-Satterthwaite). n_x counts second's passes,
    n_base first's (the fewer of each side's two)."""
    return Diff(second.d - first.d, first.parts + second.parts, min(second.n_x, second.n_base),
                min(first.n_x, first.n_base))


def pass_tables(values: pd.DataFrame) -> dict[tuple[str, int], pd.DataFrame]:
    """{(impl, size): its log values from log_values(), one row per pass (rep), one column per thread count}."""
    if values.empty:
        return {}
    wide = values.set_index(["impl", "msg_size", "rep", "threads"])["y"].unstack("threads")
    return {(impl, int(size)): table.droplevel([0, 1]) for (impl, size), table in wide.groupby(level=[0, 1])}


def pass_values(table: pd.DataFrame, threads) -> pd.Series:
    """Per pass, the mean of a pass table's (pass_tables()) log values over the thread counts `threads`,
    unadjusted, in the passes that measured every one of them. Averaging within a pass first keeps the
    pass's shift, which all its cells share, in the spread between passes."""
    block = table.reindex(columns=sorted(threads)).to_numpy()
    whole = ~np.isnan(block).any(axis=1)
    return pd.Series(block[whole].mean(axis=1), index=table.index[whole])  # numpy: a comparison makes hundreds


def sample_diff(first: pd.Series, second: pd.Series) -> Diff:
    """mean(second) - mean(first) of two independent samples (one value per pass of each sweep), each
    with its own spread between passes: Welch's variance, Welch-Satterthwaite's degrees of freedom."""
    parts = tuple((float(y.var(ddof=1)) / len(y) if len(y) >= 2 else math.nan, len(y) - 1) for y in (first, second))
    return Diff(float(second.mean() - first.mean()), parts, len(second), len(first))


def repetition_spread(frame: pd.DataFrame) -> pd.DataFrame:
    """rep_cv and unstable for every row: the coefficient of variation of its point's successful
    repetitions (throughput in throughput mode, p50 round trip in latency mode; NaN below 2)."""
    frame = frame.copy()
    value = frame["throughput_gbps"].where(frame["mode"] == "throughput", frame["latency_p50_us"])
    status = frame["status"].astype("string").str.strip().str.lower()
    value = pd.to_numeric(value, errors="coerce").where(status.isna() | (status == "ok") | (status == ""))
    keys = [k for k in ("impl", "mode", "msg_size", "threads", "receive") if k in frame.columns]
    grouped = value.groupby([frame[k] for k in keys], dropna=False)
    mean, std, count = grouped.transform("mean"), grouped.transform("std"), grouped.transform("count")
    frame["rep_cv"] = (std / mean).where((count >= 2) & (mean > 0))
    frame["unstable"] = (frame["rep_cv"] > UNSTABLE_CV).where(frame["rep_cv"].notna(), other="")
    return frame

"""A decision for every comparison: win, loss, equivalent or undecided (docs/contracts.md, "Decisions").

The samples are the passes of a point: repetition r of every point was measured in pass r, and
within a pass the implementations of one (size, threads) cell ran back to back (params.
shuffled_blocks). The host's state drifts over seconds and a pass that ran faster or slower shifts
all of its runs together, so X is compared with the baseline within each pass. The analysis is on
the log scale, where such a shift is additive and a ratio is a difference:

1. one cell (size, threads): the paired differences d_r = log X_r - log base_r over the passes
   both were measured in; their mean, and its variance from the cell's own spread (no pooling:
   quiet cells never shrink a noisy cell's interval), with n-1 degrees of freedom. A cell with
   fewer than 2 common passes falls back to the two points' pass-adjusted means (pass effects:
   each pass's median deviation from the points' means, removed) with Welch's variance.
2. over all thread counts at one size: the mean of the per-cell differences, its variance the sum
   of theirs over T^2, its degrees of freedom Welch-Satterthwaite's over every component.
3. ratio = exp(difference), with its 95% interval. With margin m (grid key equivalence_margin):
   equivalent when the interval lies inside [1/(1+m), 1+m]; otherwise win when it lies above 1,
   loss when below 1; undecided otherwise (also with fewer than 2 passes on either side).

For an undecided comparison, passes_needed is how many more passes would likely decide it at the
measured spread and the measured ratio: the smallest k with which the interval, as wide as the
spread predicts for n+k passes, would lie inside the margin or exclude 1.

An interval no wider than log(1+m)/2 on each side always decides (it either fits inside the margin
or misses 1), whatever the ratio: target_half_width() is what the sweep's budget aims at, by
spread alone (sweep/budget.py).
"""

from __future__ import annotations

import functools
import math
from dataclasses import asdict, dataclass
from enum import StrEnum

import numpy as np
import pandas as pd

ALPHA = 0.05             # family-wise error of the corrected claims (Holm)
CONFIDENCE = 1 - ALPHA   # every interval of the report
DEFAULT_MARGIN = 0.10
PASS_ITERATIONS = 5
MAX_PASSES_NEEDED = 100  # beyond this, "more than 100" is all that is worth saying


class Outcome(StrEnum):
    """What a comparison decided (docs/contracts.md, "Decisions")."""

    WIN = "win"
    LOSS = "loss"
    EQUIVALENT = "equivalent"
    UNDECIDED = "undecided"


DECISIONS = tuple(Outcome)


@dataclass(frozen=True)
class Decision:
    """X against the baseline at one size (threads None: over all thread counts)."""

    impl: str
    base: str
    size: int
    threads: int | None
    ratio: float          # X / base (geometric means of the passes, pass effects removed)
    low: float            # 95% interval of the ratio (NaN with fewer than 2 passes on a side)
    high: float
    n_x: int              # passes of X (the fewest over the thread counts when threads is None)
    n_base: int
    df: float
    margin: float
    decision: Outcome
    passes_needed: int | None  # undecided only: more passes likely to decide (None: cannot tell)
    p: float = math.nan              # two-sided p of ratio 1, the t statistic of the interval
    p_equivalence: float = math.nan  # the equivalence's p (two one-sided tests against the margins)

    @property
    def half_width(self) -> float:
        """Half the interval's width on the log scale."""
        return (math.log(self.high) - math.log(self.low)) / 2 if self.low > 0 and self.high > 0 else math.inf

    def to_dict(self) -> dict:
        return asdict(self)


def target_half_width(margin: float) -> float:
    """The log-scale half-width at which every comparison is decided."""
    return math.log1p(margin) / 2


@functools.lru_cache(maxsize=4096)  # a study asks for a few distinct degrees of freedom thousands of times
def _t(df: float) -> float:
    from scipy import stats as sps  # here: a refusal of bad input should not pay scipy's import

    return float(sps.t.ppf(0.5 + CONFIDENCE / 2, df)) if df > 0 and math.isfinite(df) else (
        float(sps.norm.ppf(0.5 + CONFIDENCE / 2)) if df == math.inf else math.nan)


def classify(low: float, high: float, margin: float) -> Outcome:
    """The decision for a ratio interval [low, high] and an equivalence margin m."""
    if not (low > 0 and high > 0) or math.isnan(low) or math.isnan(high):
        return Outcome.UNDECIDED
    if low >= 1 / (1 + margin) and high <= 1 + margin:
        return Outcome.EQUIVALENT
    if low > 1:
        return Outcome.WIN
    if high < 1:
        return Outcome.LOSS
    return Outcome.UNDECIDED


def p_values(d: float, se: float, df: float, margin: float) -> tuple[float, float]:
    """(two-sided p of ratio 1, equivalence p) from the t statistic of the interval, so that each is
    below 1 - CONFIDENCE exactly when the 95% interval decides that claim: a win or a loss excludes 1;
    an equivalence lies inside [1/(1+m), 1+m] (two one-sided tests at 2.5%: twice the larger p)."""
    if math.isnan(se):
        return math.nan, math.nan
    bound = math.log1p(margin)
    if se == 0:
        return (1.0 if d == 0 else 0.0), (0.0 if abs(d) < bound else 1.0)
    from scipy import stats as sps

    # one call, unfrozen: freezing sps.t(df) builds a distribution object (its docstrings too) each time
    points = np.array([abs(d), d + bound, bound - d]) / se
    tail = sps.norm.sf(points) if math.isinf(df) else sps.t.sf(points, df)
    return float(2 * tail[0]), float(min(1.0, 2 * max(tail[1], tail[2])))


def holm(pvalues: list[float]) -> list[float]:
    """Holm's step-down adjusted p-values (NaN stays NaN and does not count as a test)."""
    order = sorted((p, i) for i, p in enumerate(pvalues) if p == p)
    m, running, adjusted = len(order), 0.0, [math.nan] * len(pvalues)
    for k, (p, i) in enumerate(order):
        running = max(running, min(1.0, (m - k) * p))
        adjusted[i] = running
    return adjusted


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
    half = _t(diff.df) * se
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
        half = _t(df) * math.sqrt(var)
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


def trailing_start(sizes, holds) -> int | None:
    """The smallest size from which holds(size) is true at that size and every larger one; None when
    it is not true at the largest size. The one crossover rule's run from the top."""
    start = None
    for size in sorted(sizes, reverse=True):
        if not holds(size):
            break
        start = size
    return start


def decided_crossover(by_size: dict[int, Decision]) -> int | None:
    """The smallest size from which X wins at that size and every larger one; None when it does not
    win at the largest size."""
    return trailing_start(by_size, lambda size: by_size[size].decision == Outcome.WIN)


# ------------------------------------------------------------------------------------------------
# two sweeps


def contradicts(first: str, second: str) -> bool:
    """Two decisions on one comparison contradict when they are decided differently: a win against
    a loss or an equivalence (and so on). Undecided contradicts nothing."""
    return "undecided" not in (first, second) and first != second


def contradictions(first: dict, second: dict) -> list[dict]:
    """The comparisons two answers.json documents decide differently: per size over all thread
    counts and per thread count, for Q4 and Q5."""
    found = []
    for key in ("q4_one_copy_vs_two_copy", "q5_zero_copy_vs_two_copy"):
        a, b = first.get(key) or {}, second.get(key) or {}
        tables = [("all", a.get("decision_by_size") or {}, b.get("decision_by_size") or {})]
        per_a, per_b = a.get("decision_per_threads") or {}, b.get("decision_per_threads") or {}
        tables += [(threads, per_a[threads], per_b[threads]) for threads in sorted(set(per_a) & set(per_b), key=int)]
        for threads, da, db in tables:
            for size in sorted(set(da) & set(db), key=int):
                if contradicts(da[size], db[size]):
                    found.append({"question": key, "threads": threads, "size": int(size),
                                  "first": da[size], "second": db[size]})
    return found


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

"""What a comparison decides (docs/contracts.md, "Decisions").

A comparison is a ratio X/base with its 95% interval [low, high] and an equivalence margin m: ratios
within [1/(1+m), 1+m] are differences the study treats as too small to matter. The interval decides
two things at once, its direction against 1 and its size against the margin (Lakens 2017: a
difference can be decided and still smaller than what matters):

- win / loss: the interval lies above / below 1 and reaches beyond the margin;
- win_within_margin / loss_within_margin: it lies above / below 1 and inside the margin: decided
  higher / lower, by less than the margin;
- equivalent: it holds 1 and lies inside the margin;
- undecided: it holds 1 and reaches beyond the margin (or a side has fewer than 2 passes).

Every claim belongs to a family, and Holm's correction over the family says whether it stands.
"""

from __future__ import annotations

import functools
import math
from dataclasses import asdict, dataclass, field
from enum import StrEnum

ALPHA = 0.05             # family-wise error of the corrected claims (Holm)
CONFIDENCE = 1 - ALPHA   # every interval of the report
DEFAULT_MARGIN = 0.10    # the grid schema's default equivalence_margin (params.py reads it from here)


class Outcome(StrEnum):
    """What a comparison decided (the module's docstring)."""

    WIN = "win"
    WIN_WITHIN = "win_within_margin"
    EQUIVALENT = "equivalent"
    LOSS_WITHIN = "loss_within_margin"
    LOSS = "loss"
    UNDECIDED = "undecided"

    @property
    def higher(self) -> bool:
        """Decided above 1 (by more or by less than the margin)."""
        return self in (Outcome.WIN, Outcome.WIN_WITHIN)

    @property
    def lower(self) -> bool:
        return self in (Outcome.LOSS, Outcome.LOSS_WITHIN)

    @property
    def within_margin(self) -> bool:
        """Decided to differ by less than the margin, if at all."""
        return self in (Outcome.EQUIVALENT, Outcome.WIN_WITHIN, Outcome.LOSS_WITHIN)

    @property
    def decided(self) -> bool:
        return self is not Outcome.UNDECIDED


class Verdict(StrEnum):
    """An outcome read with its metric's direction (higher is better for throughput, lower for a cost)."""

    BETTER = "better"
    BETTER_WITHIN = "better_within_margin"
    EQUIVALENT = "equivalent"
    WORSE_WITHIN = "worse_within_margin"
    WORSE = "worse"
    UNDECIDED = "undecided"

    @staticmethod
    def of(outcome: Outcome, higher_is_better: bool = True) -> "Verdict":
        if outcome in (Outcome.EQUIVALENT, Outcome.UNDECIDED):
            return Verdict(str(outcome))
        better = outcome.higher == higher_is_better
        if outcome.within_margin:
            return Verdict.BETTER_WITHIN if better else Verdict.WORSE_WITHIN
        return Verdict.BETTER if better else Verdict.WORSE


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
    def beyond_margin(self) -> bool:
        """The whole interval lies beyond the margin: higher or lower by more than it, decided."""
        return self.low > 1 + self.margin or self.high < 1 / (1 + self.margin)

    @property
    def half_width(self) -> float:
        """Half the interval's width on the log scale."""
        return (math.log(self.high) - math.log(self.low)) / 2 if self.low > 0 and self.high > 0 else math.inf

    def to_dict(self) -> dict:
        return asdict(self)


@functools.lru_cache(maxsize=4096)  # a study asks for a few distinct degrees of freedom thousands of times
def t_quantile(df: float, confidence: float = CONFIDENCE) -> float:
    """The two-sided Student t quantile of a confidence interval (the normal's for infinite df; NaN below 1)."""
    # scipy.special's ufuncs: the same values as scipy.stats' t.ppf and norm.ppf at a 60th of the cost
    # (a comparison of two default sweeps asks for ~1,800 quantiles). Imported here: a refusal of bad
    # input should not pay scipy's import
    from scipy import special

    if df == math.inf:
        return float(special.ndtri(0.5 + confidence / 2))
    return float(special.stdtrit(df, 0.5 + confidence / 2)) if df > 0 and math.isfinite(df) else math.nan


def target_half_width(margin: float) -> float:
    """The log-scale half-width at which every comparison is decided: it either misses 1 or fits the margin."""
    return math.log1p(margin) / 2


def classify(low: float, high: float, margin: float) -> Outcome:
    """The outcome of a ratio interval [low, high] with equivalence margin m (the module's docstring)."""
    if not (low > 0 and high > 0) or math.isnan(low) or math.isnan(high):
        return Outcome.UNDECIDED
    inside = low >= 1 / (1 + margin) and high <= 1 + margin
    if low > 1:
        return Outcome.WIN_WITHIN if inside else Outcome.WIN
    if high < 1:
        return Outcome.LOSS_WITHIN if inside else Outcome.LOSS
    return Outcome.EQUIVALENT if inside else Outcome.UNDECIDED


def p_values(d: float, se: float, df: float, margin: float) -> tuple[float, float]:
    """(two-sided p of ratio 1, equivalence p) from the t statistic of the interval, so that each is
    below 1 - CONFIDENCE exactly when the 95% interval decides that claim: a difference excludes 1;
    an equivalence lies inside [1/(1+m), 1+m] (two one-sided tests at 2.5%: twice the larger p)."""
    if math.isnan(se):
        return math.nan, math.nan
    bound = math.log1p(margin)
    if se == 0:
        return (1.0 if d == 0 else 0.0), (0.0 if abs(d) < bound else 1.0)
    import numpy as np
    from scipy import special  # the upper tails as t_quantile's inverse: stdtr(df, -x) is t.sf(x, df)

    points = -np.array([abs(d) / se, (d + bound) / se, (bound - d) / se])
    tail = special.ndtr(points) if math.isinf(df) else special.stdtr(df, points)
    return float(2 * tail[0]), float(min(1.0, 2 * max(tail[1], tail[2])))


def claim_p(d: Decision) -> float:
    """The p of the claim d's outcome makes: a difference (p), an equivalence (p_equivalence), or both at
    once for a difference within the margin (an intersection-union test: the larger of the two)."""
    if d.decision in (Outcome.WIN, Outcome.LOSS, Outcome.UNDECIDED):
        return d.p
    if d.decision == Outcome.EQUIVALENT:
        return d.p_equivalence
    return max(d.p, d.p_equivalence)


def holm(pvalues: list[float]) -> list[float]:
    """Holm's step-down adjusted p-values (NaN stays NaN and does not count as a test)."""
    order = sorted((p, i) for i, p in enumerate(pvalues) if p == p)
    m, running, adjusted = len(order), 0.0, [math.nan] * len(pvalues)
    for k, (p, i) in enumerate(order):
        running = max(running, min(1.0, (m - k) * p))
        adjusted[i] = running
    return adjusted


@dataclass
class Family:
    """The comparisons behind one group of claims, with Holm's correction over them."""

    name: str
    members: list = field(default_factory=list)     # Decisions
    adjusted: dict = field(default_factory=dict)    # id(decision) -> Holm-adjusted p

    def correct(self) -> Family:
        ps = [claim_p(d) for d in self.members]
        self.adjusted = {id(d): p for d, p in zip(self.members, holm(ps))}
        return self

    @property
    def size(self) -> int:
        """The tests made: the comparisons with a p-value."""
        return sum(1 for d in self.members if claim_p(d) == claim_p(d))

    def p_holm(self, d: Decision) -> float:
        return self.adjusted.get(id(d), math.nan)

    def stands(self, d: Decision | None) -> bool:
        """Whether d's decided claim survives the family's correction."""
        p = self.p_holm(d) if d is not None else math.nan
        return d is not None and d.decision.decided and p == p and p < ALPHA

    def fallen(self, d: Decision | None) -> bool:
        """Decided before the correction, not standing after it (the report's †)."""
        return d is not None and d.decision.decided and not self.stands(d)

    def standing(self, d: Decision | None) -> Outcome:
        """d's outcome as it stands after the correction: undecided where it does not stand."""
        return d.decision if self.stands(d) else Outcome.UNDECIDED


def trailing_start(sizes, holds) -> int | None:
    """The smallest size from which holds(size) is true at that size and every larger one; None when it
    is not true at the largest size."""
    start = None
    for size in sorted(sizes, reverse=True):
        if not holds(size):
            break
        start = size
    return start


def crossover(by_size: dict, wins) -> int | None:
    """The smallest size from which wins(decision) holds at that size and every larger one of by_size
    ({size: Decision}); None when it does not hold at the largest size."""
    return trailing_start(by_size, lambda size: wins(by_size[size]))


def mean_interval(values, confidence: float = CONFIDENCE) -> tuple[float, float, float] | None:
    """(mean, low, high): one sample's mean and its Student-t interval; None below 2 values."""
    values = [float(v) for v in values if v == v]
    n = len(values)
    if n < 2:
        return None
    mean = sum(values) / n
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    half = t_quantile(n - 1, confidence) * sd / math.sqrt(n)
    return mean, mean - half, mean + half


def welch_interval(a, b, confidence: float = CONFIDENCE) -> tuple[float, float, float, float] | None:
    """(mean(a) - mean(b), low, high, p): two independent samples, Welch's variance and degrees of
    freedom; None when either has fewer than 2 values."""
    from .passes import Diff, sample_diff

    import pandas as pd

    diff: Diff = sample_diff(pd.Series(list(b), dtype=float), pd.Series(list(a), dtype=float))
    if diff.n_x < 2 or diff.n_base < 2 or not diff.var == diff.var:
        return None
    se = math.sqrt(diff.var)
    half = t_quantile(diff.df, confidence) * se
    p = p_values(diff.d, se, diff.df, 0.0)[0] if se > 0 else (1.0 if diff.d == 0 else 0.0)
    return diff.d, diff.d - half, diff.d + half, p

"""Two sweeps compared: every comparison both made, decided once as a change from A to B (issue 37;
docs/contracts.md, "Comparisons of two sweeps").

`comparison(df_a, meta_a, df_b, meta_b, label_a, label_b) -> Comparison` is, beside the Study
(study.py), the only other caller of the decision code: the comparison report (notebooks/compare.ipynb,
analysis/text/comparison.py, figures/comparison.py, comparison.json) reads the Comparison it returns.
Each sweep's rows are the Study's population (study.population: copylab's own senders, the primary
receive strategy), compared at the points both measured. Two kinds of quantity:

- **ratio**: a path against the baseline (the Study's comparison, per size, thread count and metric).
  Within a sweep the Study's paired differences log X - log base over the passes are the right
  sample: X and the baseline of one cell ran back to back, so a pass that ran fast or slow cancels.
  Between sweeps nothing pairs (a pass of A has no partner in B), so the change is the ratio of
  ratios (X/base in B) / (X/base in A), whose log is the difference of the two sweeps' mean
  differences with the sum of their variances, each keeping its own degrees of freedom
  (Welch-Satterthwaite) -- inference.between_sweeps.
- **own**: a path's own throughput, CPU time per byte (sender + receiver, cpu_ns_per_byte) and p50
  round trip. Per sweep, one log value per pass (a cell's; over the thread counts at a size, the
  mean of the pass's cells first), and the between-pass variance of those values, unadjusted: the
  Study removes each pass's shift because it cancels in a within-pass comparison, but a sweep's mean
  carries its passes' shifts, so an interval for the sweep's level across sweeps must carry their
  spread too (removing it would narrow the interval without moving the mean, and decide changes that
  are the host's drift between passes). Welch's test on the two samples (inference.sample_diff).

Both are decided as the Study's are (decide_diff: ratio B/A, its 95% interval, the margin): win when the
interval lies above 1, loss below 1, equivalent inside [1/(1+m), 1+m], undecided otherwise; so each
decision calls a change that is not there at most 5% of the time. Holm's correction runs over each
family (FAMILIES) as in the Study: a change that `stands` keeps the family-wise error at 5%; a claim of
equivalence is corrected too (its own p), so "decided equivalent" and "standing" are counted apart.
Over the thread counts, a size pools the thread counts both sweeps measured there.

What the report says is decided here too (the text layer, text/comparison.py and the comparison
templates, only words it): `tallies()` counts each outcome decided and standing, `changed()` lists the
standing wins and losses largest first, `fallen()` the decided ones that do not stand.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import pandas as pd

from ..inference import (Decision, Family, Outcome, Verdict, between_sweeps, decide_diff, log_values, pass_tables, pass_values,
                         pool, sample_diff)
from .roles import BASE
from .study import CRITERIA, equivalence_margin, path_diffs, population

RATIO, OWN = "ratio", "own"
# the families of claims: name -> (kind, per thread count)
FAMILIES = {"ratio_by_size": (RATIO, False), "ratio_per_threads": (RATIO, True),
            "own_by_size": (OWN, False), "own_per_threads": (OWN, True)}
POINT = ["impl", "mode", "msg_size", "threads"]


@dataclass(frozen=True)
class Change:
    """One compared quantity: its decision is B against A (ratio B/A)."""

    kind: str               # RATIO (a path against the baseline) or OWN (a path's own value)
    criterion: str          # a key of study.CRITERIA: throughput, cpu_per_byte, latency
    impl: str
    size: int
    threads: int | None     # None: over the thread counts both sweeps measured at this size
    decision: Decision      # ratio B/A and its interval; n_x: B's passes, n_base: A's
    a: float                # A's value: the ratio X/base, or the path's geometric mean (metric's unit)
    b: float

    @property
    def metric(self) -> str:
        return CRITERIA[self.criterion][1]

    @property
    def higher_is_better(self) -> bool:
        return CRITERIA[self.criterion][2]

    @property
    def base(self) -> str | None:
        return BASE if self.kind == RATIO else None

    @property
    def family(self) -> str:
        return f"{self.kind}_{'per_threads' if self.threads is not None else 'by_size'}"

    @property
    def verdict(self) -> Verdict:
        """The decision read with the metric's direction (inference.Verdict)."""
        return Verdict.of(self.decision.decision, self.higher_is_better)

    @property
    def size_of_change(self) -> float:
        """|log ratio|: how far B moved from A, whichever way."""
        r = self.decision.ratio
        return abs(math.log(r)) if r == r and r > 0 else 0.0


@dataclass(frozen=True)
class Tally:
    """One outcome over a set of changes: how many were decided so (each at 95%), how many of those stand
    after their family's correction."""

    outcome: Outcome
    decided: int
    standing: int


@dataclass
class Comparison:
    """Two sweeps' comparisons (see the module's docstring)."""

    label_a: str
    label_b: str
    df_a: pd.DataFrame
    df_b: pd.DataFrame
    meta_a: dict
    meta_b: dict
    rows_a: pd.DataFrame            # each sweep's population (study.population)
    rows_b: pd.DataFrame
    margin: float
    changes: list = field(default_factory=list)
    families: dict = field(default_factory=dict)   # name -> Family (Holm over its changes' decisions)

    def family(self, name: str) -> Family:
        return self.families.get(name) or Family(name)

    def stands(self, change: Change) -> bool:
        return self.family(change.family).stands(change.decision)

    def p_holm(self, change: Change) -> float:
        return self.family(change.family).p_holm(change.decision)

    def select(self, kind: str | None = None, criterion: str | None = None, per_threads: bool | None = None) -> list:
        return [c for c in self.changes if (kind is None or c.kind == kind)
                and (criterion is None or c.criterion == criterion)
                and (per_threads is None or (c.threads is not None) == per_threads)]

    def decided_changes(self, standing: bool = True) -> list:
        """The changes decided as a win or a loss (standing: that survive their family's correction)."""
        return [c for c in self.changes if c.decision.decision in (Outcome.WIN, Outcome.LOSS)
                and (not standing or self.stands(c))]

    def fallen(self, change: Change) -> bool:
        """Decided (win, loss or equivalent) at 95%, but not standing after its family's correction."""
        return self.family(change.family).fallen(change.decision)

    def tallies(self, per_threads: bool | None = None) -> dict[Outcome, Tally]:
        """Per outcome, the changes decided so and those of them that stand (per_threads: only the per
        thread count ones, or only those over the thread counts; None: all)."""
        found = self.select(per_threads=per_threads)
        return {o: Tally(o, sum(1 for c in found if c.decision.decision == o),
                         sum(1 for c in found if c.decision.decision == o and self.stands(c)))
                for o in Outcome}

    def changed(self, per_threads: bool | None = None) -> list[Change]:
        """The wins and losses that stand after their family's correction, the largest change first."""
        return sorted((c for c in self.decided_changes(True) if per_threads is None
                       or (c.threads is not None) == per_threads),
                      key=lambda c: (-c.size_of_change, c.kind, c.criterion, c.impl, c.size, c.threads or 0))

    def not_standing(self) -> list[Change]:
        """The wins and losses decided at 95% that do not stand after the correction."""
        return [c for c in self.decided_changes(False) if not self.stands(c)]

    def criteria(self, kind: str) -> list[str]:
        """The criteria (study.CRITERIA's order) with a change of this kind."""
        return [k for k in CRITERIA if self.select(kind, k)]

    def thread_counts(self) -> list[int]:
        """The thread counts compared one by one."""
        return sorted({c.threads for c in self.changes if c.threads is not None})

    @property
    def margins(self) -> tuple[float, float]:
        return equivalence_margin(self.meta_a), equivalence_margin(self.meta_b)

    def points(self) -> dict[str, set]:
        """The measured points (impl, mode, msg_size, threads) of the population: shared, only in A, only in B."""
        a, b = _points(self.rows_a), _points(self.rows_b)
        return {"shared": a & b, "only_a": a - b, "only_b": b - a}


def _points(rows: pd.DataFrame) -> set:
    return set(map(tuple, rows[POINT].drop_duplicates().to_numpy().tolist())) if len(rows) else set()


def shared_points(df_a: pd.DataFrame, df_b: pd.DataFrame) -> set:
    """The points (impl, mode, msg_size, threads) of the population both sweeps measured."""
    return _points(population(df_a)) & _points(population(df_b))


def comparison(df_a: pd.DataFrame, meta_a: dict, df_b: pd.DataFrame, meta_b: dict,
               label_a: str = "A", label_b: str = "B") -> Comparison:
    """Every comparison both sweeps made, decided as a change from A to B (the module's docstring).
    The equivalence margin is the smaller of the two sweeps' (the stricter claim of equivalence)."""
    rows_a, rows_b = population(df_a), population(df_b)
    margin = min(equivalence_margin(meta_a), equivalence_margin(meta_b))
    c = Comparison(label_a, label_b, df_a, df_b, meta_a, meta_b, rows_a, rows_b, margin)
    c.changes = _ratio_changes(rows_a, rows_b, margin) + _own_changes(rows_a, rows_b, margin)
    fams = {name: Family(name) for name in FAMILIES}
    for change in c.changes:
        fams[change.family].members.append(change.decision)
    c.families = {name: f.correct() for name, f in fams.items()}
    return c


def _by_size(cells) -> dict[int, list[int]]:
    """{size: [thread counts]} of (size, threads) cells."""
    out: dict[int, list[int]] = {}
    for size, threads in sorted(cells):
        out.setdefault(size, []).append(threads)
    return out


def _ratio_changes(rows_a: pd.DataFrame, rows_b: pd.DataFrame, margin: float) -> list[Change]:
    """Each path against the baseline, per cell and per size: the ratio of ratios B/A."""
    diffs_a, diffs_b = path_diffs(rows_a), path_diffs(rows_b)
    criterion_of = {metric: criterion for criterion, (_, metric, _) in CRITERIA.items()}
    out = []
    for key in sorted(set(diffs_a) & set(diffs_b)):
        metric, impl, base = key
        if base != BASE or metric not in criterion_of:  # the criteria compared (not each side's CPU)
            continue
        a, b = diffs_a[key], diffs_b[key]
        shared = set(a) & set(b)
        for size, threads in sorted(shared):
            d = decide_diff(impl, base, size, threads, between_sweeps(a[(size, threads)], b[(size, threads)]), margin)
            out.append(Change(RATIO, criterion_of[metric], impl, size, threads, d,
                              math.exp(a[(size, threads)].d), math.exp(b[(size, threads)].d)))
        for size, threads in _by_size(shared).items():
            pa, pb = pool([a[(size, t)] for t in threads]), pool([b[(size, t)] for t in threads])
            d = decide_diff(impl, base, size, None, between_sweeps(pa, pb), margin)
            out.append(Change(RATIO, criterion_of[metric], impl, size, None, d, math.exp(pa.d), math.exp(pb.d)))
    return out


def _own_changes(rows_a: pd.DataFrame, rows_b: pd.DataFrame, margin: float) -> list[Change]:
    """Each path's own value per cell and per size: the ratio of B's geometric mean to A's."""
    out = []
    for criterion, (mode, metric, _) in CRITERIA.items():
        if metric not in rows_a or metric not in rows_b:
            continue
        ta = pass_tables(log_values(rows_a[rows_a["mode"] == mode], metric))
        tb = pass_tables(log_values(rows_b[rows_b["mode"] == mode], metric))
        for impl, size in sorted(set(ta) & set(tb)):
            shared = sorted(set(ta[(impl, size)].columns) & set(tb[(impl, size)].columns))
            for threads, over in [(int(t), [t]) for t in shared] + [(None, shared)]:
                ya, yb = pass_values(ta[(impl, size)], over), pass_values(tb[(impl, size)], over)
                if ya.empty or yb.empty:  # no pass measured every thread count of the size
                    continue
                d = decide_diff(impl, impl, size, threads, sample_diff(ya, yb), margin)
                out.append(Change(OWN, criterion, impl, size, threads, d, math.exp(ya.mean()), math.exp(yb.mean())))
    return out

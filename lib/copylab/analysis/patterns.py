"""Q6's numbers: every expectation the study checks, tested cell by cell and as patterns across cells,
with Holm's correction over all the tests made; the most robust surprise is a pattern.

Expectations (each a ratio that should not fall below 1):
- one_copy_slower: the one-copy path against the baseline at each (size, threads);
- falls_with_size: a path's throughput at the next larger size against this one, per thread count;
- fewer_with_threads: a path's throughput at the next larger thread count against this one, per size.

Each cell is a decisions.py comparison (log scale, pass effects removed, each point its own spread);
its p-value is that of the log ratio under Welch's t. A pattern is a region of cells (one check's
cells at sizes up to S or from S on, or one step over every thread count or every size); its pooled
test is the mean of its cells' log ratios (as decisions.py pools thread counts). Every cell and every
region tested enters Holm's step-down correction. A surprise is robust when every cell of its region
violates the expectation and the pooled test survives the correction; among those the widest wins.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import pandas as pd
from scipy import stats as sps

from .decisions import DEFAULT_MARGIN, Decision, compare_points, point_stats
from .roles import BASE, ONE_COPY, STUDY
from .stats import study_rows, throughput_rows

ALPHA = 0.05
KINDS = ("one_copy_slower", "falls_with_size", "fewer_with_threads")


@dataclass
class Test:
    """One test: a cell (one comparison) or a region's pooled comparison."""

    kind: str
    where: dict                 # what is compared: impl, size(s), threads
    decision: Decision
    cells: list = field(default_factory=list)   # a region: its cell tests
    p: float = math.nan
    p_holm: float = math.nan

    @property
    def violates(self) -> bool:
        return self.decision.ratio < 1

    @property
    def significant(self) -> bool:
        return self.p_holm == self.p_holm and self.p_holm < ALPHA

    def public(self) -> dict:
        d = self.decision
        out = {"kind": self.kind, **self.where, "ratio": d.ratio, "low": d.low, "high": d.high,
               "p": self.p, "p_holm": self.p_holm, "significant": self.significant}
        if self.cells:
            out["cells"] = [c.public() for c in self.cells]
        return out


def p_value(d: Decision) -> float:
    """Two-sided p of log(ratio) = 0 from a decision's 95% interval and degrees of freedom."""
    if not (d.low > 0 and d.high > 0) or d.df != d.df or d.df <= 0:
        return math.nan
    dist = sps.norm if math.isinf(d.df) else sps.t(d.df)
    half = (math.log(d.high) - math.log(d.low)) / 2
    if half == 0:
        return 1.0 if d.ratio == 1 else 0.0
    se = half / dist.ppf(0.975)
    return float(2 * dist.sf(abs(math.log(d.ratio)) / se))


def holm(pvalues: list[float]) -> list[float]:
    """Holm's step-down adjusted p-values (NaN stays NaN and does not count as a test)."""
    order = sorted((p, i) for i, p in enumerate(pvalues) if p == p)
    m, running, adjusted = len(order), 0.0, [math.nan] * len(pvalues)
    for k, (p, i) in enumerate(order):
        running = max(running, min(1.0, (m - k) * p))
        adjusted[i] = running
    return adjusted


# ------------------------------------------------------------------------------------------------
# cells and regions


def pooled_pairs(stats: pd.DataFrame, pairs: list[tuple[tuple, tuple]], margin: float) -> tuple[list, Decision | None]:
    """Each pair (x key, base key) of point_stats rows as one comparison, and their pooled comparison
    (the mean of the log ratios): relabelled so that decisions.compare_points pools them as it pools
    thread counts."""
    index = stats.set_index(["impl", "msg_size", "threads"])
    frames = []
    for k, (x, b) in enumerate(pairs):
        if x not in index.index or b not in index.index:
            continue
        for label, key in (("x", x), ("b", b)):
            frames.append({**index.loc[key].to_dict(), "impl": label, "msg_size": 0, "threads": k})
    if not frames:
        return [], None
    found = compare_points(pd.DataFrame(frames), "x", "b", margin)
    per = found["per_threads"]
    return [per[k][0] for k in sorted(per)], found["by_size"].get(0)


def _cells(stats: pd.DataFrame) -> dict[str, list[tuple[dict, tuple, tuple]]]:
    """(where, x key, base key) of every cell of every check, from the points measured."""
    keys = set(map(tuple, stats[["impl", "msg_size", "threads"]].itertuples(index=False)))
    sizes, threads = sorted({k[1] for k in keys}), sorted({k[2] for k in keys})
    out: dict[str, list] = {kind: [] for kind in KINDS}
    for s in sizes:
        for t in threads:
            if (ONE_COPY, s, t) in keys and (BASE, s, t) in keys:
                out["one_copy_slower"].append(({"impl": ONE_COPY, "size": s, "threads": t}, (ONE_COPY, s, t), (BASE, s, t)))
    for impl in STUDY:
        for t in threads:
            for a, b in zip(sizes, sizes[1:]):
                if (impl, a, t) in keys and (impl, b, t) in keys:
                    out["falls_with_size"].append(({"impl": impl, "threads": t, "from_size": a, "to_size": b},
                                                   (impl, b, t), (impl, a, t)))
        for s in sizes:
            for a, b in zip(threads, threads[1:]):
                if (impl, s, a) in keys and (impl, s, b) in keys:
                    out["fewer_with_threads"].append(({"impl": impl, "size": s, "from_threads": a, "to_threads": b},
                                                      (impl, s, b), (impl, s, a)))
    return out


def _regions(kind: str, cells: list) -> list[tuple[dict, list]]:
    """The regions tested as patterns: one_copy_slower at sizes up to S and from S on (every thread
    count); the others one step of one path over every thread count (size) or every size (threads)."""
    if kind == "one_copy_slower":
        sizes = sorted({w["size"] for w, _, _ in cells})
        out = [({"impl": ONE_COPY, "sizes": "up_to", "size": s}, [c for c in cells if c[0]["size"] <= s]) for s in sizes]
        out += [({"impl": ONE_COPY, "sizes": "from", "size": s}, [c for c in cells if c[0]["size"] >= s])
                for s in sizes[1:]]
        return out
    step = ("from_size", "to_size") if kind == "falls_with_size" else ("from_threads", "to_threads")
    groups: dict[tuple, list] = {}
    for c in cells:
        groups.setdefault((c[0]["impl"], c[0][step[0]], c[0][step[1]]), []).append(c)
    return [({"impl": i, step[0]: a, step[1]: b}, g) for (i, a, b), g in sorted(groups.items()) if len(g) > 1]


def tests(df: pd.DataFrame, margin: float = DEFAULT_MARGIN) -> tuple[list[Test], list[Test]]:
    """(cell tests, region tests) of every check, with Holm-adjusted p over all of them."""
    stats = point_stats(throughput_rows(study_rows(df)))
    if stats.empty:
        return [], []
    cells, regions = [], []
    for kind, found in _cells(stats).items():
        decided, _ = pooled_pairs(stats, [(x, b) for _, x, b in found], margin)
        mine = [Test(kind, w, d) for (w, _, _), d in zip(found, decided)]
        cells += mine
        by_where = {id(c): t for c, t in zip(found, mine)}
        for where, members in _regions(kind, found):
            _, pooled = pooled_pairs(stats, [(x, b) for _, x, b in members], margin)
            if pooled is not None:
                regions.append(Test(kind, where, pooled, [by_where[id(c)] for c in members]))
    everything = cells + regions
    for t in everything:
        t.p = p_value(t.decision)
    for t, adjusted in zip(everything, holm([t.p for t in everything])):
        t.p_holm = adjusted
    return cells, regions


def robust_surprise(cells: list[Test], regions: list[Test]) -> tuple[Test | None, str]:
    """(the surprise, its standing): "pattern" (every cell violates, pooled significant after Holm),
    "cell" (the most significant single violation, when no pattern holds), or (None, "none")."""
    patterns = [r for r in regions if r.significant and r.violates and all(c.violates for c in r.cells)]
    if patterns:
        best = max(patterns, key=lambda r: (len(r.cells), sum(c.significant for c in r.cells), -r.decision.ratio))
        return best, "pattern"
    single = [c for c in cells if c.significant and c.violates]
    if single:
        return min(single, key=lambda c: (c.p_holm, c.decision.ratio)), "cell"
    return None, "none"

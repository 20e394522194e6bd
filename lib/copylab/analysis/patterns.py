"""Q6's and Q3's comparisons: every expectation the study checks, tested cell by cell and as
patterns across cells (Q6), and each path's most against its fewest threads (Q3). The Study
(study.py) builds them once and corrects each family with Holm's procedure.

Expectations (each a ratio that should not fall below 1):
- one_copy_slower: the one-copy path against the baseline at each (size, threads): these cells are
  the Study's own Q4 comparisons (paired within passes), the same test and interval Q4 shows;
- falls_with_size: a path's throughput at the next larger size against this one, per thread count;
- fewer_with_threads: a path's throughput at the next larger thread count against this one, per size.

The last two compare a path with itself at two grid points measured minutes apart, so each point
keeps its own mean and spread (decisions.point_diff, unpaired). A pattern is a region of cells (one
check's cells at sizes up to S or from S on, or one step over every thread count or every size);
its pooled test is the mean of its cells' log ratios (decisions.pool, as thread counts are pooled).
A surprise is robust when every cell of its region violates the expectation and the pooled test
survives the correction; among those the widest wins.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import pandas as pd

from .decisions import (ALPHA, DEFAULT_MARGIN, Decision, Diff, cell_diffs, decide_diff, log_values, point_diff,
                        point_stats, pool)
from .roles import BASE, ONE_COPY, STUDY

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


def _cells(stats: pd.DataFrame) -> dict[str, list[tuple[dict, tuple, tuple]]]:
    """(where, x key, base key) of every self-comparison cell, from the points measured."""
    keys = set(map(tuple, stats[["impl", "msg_size", "threads"]].itertuples(index=False)))
    sizes, threads = sorted({k[1] for k in keys}), sorted({k[2] for k in keys})
    out: dict[str, list] = {"falls_with_size": [], "fewer_with_threads": []}
    for impl in STUDY:
        for t in threads:
            for a, b in zip(sizes, sizes[1:]):
                if (impl, a, t) in keys and (impl, b, t) in keys:
                    out["falls_with_size"].append(({"impl": impl, "threads": int(t), "from_size": int(a),
                                                    "to_size": int(b)}, (impl, b, t), (impl, a, t)))
        for s in sizes:
            for a, b in zip(threads, threads[1:]):
                if (impl, s, a) in keys and (impl, s, b) in keys:
                    out["fewer_with_threads"].append(({"impl": impl, "size": int(s), "from_threads": int(a),
                                                       "to_threads": int(b)}, (impl, s, b), (impl, s, a)))
    return out


def _regions(kind: str, cells: list[Test]) -> list[tuple[dict, list[Test]]]:
    """The regions tested as patterns: one_copy_slower at sizes up to S and from S on (every thread
    count); the others one step of one path over every thread count (size) or every size (threads)."""
    if kind == "one_copy_slower":
        sizes = sorted({c.where["size"] for c in cells})
        out = [({"impl": ONE_COPY, "sizes": "up_to", "size": s}, [c for c in cells if c.where["size"] <= s])
               for s in sizes]
        out += [({"impl": ONE_COPY, "sizes": "from", "size": s}, [c for c in cells if c.where["size"] >= s])
                for s in sizes[1:]]
        return out
    step = ("from_size", "to_size") if kind == "falls_with_size" else ("from_threads", "to_threads")
    groups: dict[tuple, list] = {}
    for c in cells:
        groups.setdefault((c.where["impl"], c.where[step[0]], c.where[step[1]]), []).append(c)
    return [({"impl": i, step[0]: a, step[1]: b}, g) for (i, a, b), g in sorted(groups.items()) if len(g) > 1]


def q6_tests(one_copy: dict[int, dict[int, Decision]], one_copy_diffs: dict[tuple[int, int], Diff],
             stats: pd.DataFrame, margin: float = DEFAULT_MARGIN) -> tuple[list[Test], list[Test]]:
    """(cell tests, region tests) of every check. one_copy, one_copy_diffs: the Study's per-thread
    decisions of the one-copy path against the baseline and their log differences; stats:
    point_stats() of the study's throughput rows. The p-values are the decisions' own; Holm's
    adjustment is the Study's (its family "q6")."""
    cells, regions = [], []
    found = {"one_copy_slower": [(Test("one_copy_slower", {"impl": ONE_COPY, "size": size, "threads": threads}, d),
                                  one_copy_diffs[(size, threads)])
                                 for threads, by in sorted(one_copy.items()) for size, d in sorted(by.items())]}
    for kind, members in _cells(stats).items():
        found[kind] = []
        for where, x, b in members:
            diff = point_diff(stats, x, b)
            if diff is not None:
                decision = decide_diff(x[0], b[0], int(x[1]), int(x[2]), diff, margin)
                found[kind].append((Test(kind, where, decision), diff))
    for kind in KINDS:
        mine = [t for t, _ in found[kind]]
        diff_of = {id(t): d for t, d in found[kind]}
        cells += mine
        for where, members in _regions(kind, mine):
            pooled = decide_diff(where["impl"], where["impl"] if kind != "one_copy_slower" else BASE,
                                 int(where.get("size", 0)), None, pool([diff_of[id(t)] for t in members]), margin)
            regions.append(Test(kind, where, pooled, members))
    for t in cells + regions:
        t.p = t.decision.p
    return cells, regions


def thread_decisions(stats: pd.DataFrame, margin: float) -> tuple[int, int, dict]:
    """Q3: (fewest, most threads, {size: {impl: Decision of the most against the fewest threads}})."""
    if stats.empty or stats["threads"].nunique() < 2:
        return 0, 0, {}
    lo, hi = int(stats["threads"].min()), int(stats["threads"].max())
    out: dict[int, dict] = {}
    for size in sorted(stats["msg_size"].unique()):
        for impl in STUDY:
            diff = point_diff(stats, (impl, size, hi), (impl, size, lo))
            if diff is not None:
                out.setdefault(int(size), {})[impl] = decide_diff(impl, impl, int(size), hi, diff, margin)
    return lo, hi, out


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


# ------------------------------------------------------------------------------------------------
# comparisons an explanation words (explain.py, explain_copies.py): made here, with the others


def per_byte_change(lo_rows: pd.DataFrame, hi_rows: pd.DataFrame, column: str, lo: int, hi: int) -> Decision | None:
    """One path's CPU per byte (column) at hi threads against lo, Welch on the runs' log values (unpaired: the
    thread counts' runs are not one block); None with fewer than two runs on a side or an open interval."""
    rows = pd.concat([lo_rows, hi_rows])
    if rows.empty or rows["impl"].nunique() != 1 or rows["msg_size"].nunique() != 1:
        return None
    impl, size = rows["impl"].iloc[0], int(rows["msg_size"].iloc[0])
    diff = point_diff(point_stats(rows, column, block=False), (impl, size, hi), (impl, size, lo))
    if diff is None:
        return None
    d = decide_diff(impl, impl, size, hi, diff, DEFAULT_MARGIN)
    return d if d.low == d.low and d.high == d.high else None


def switches_change(tp: pd.DataFrame, col: str, impls: tuple[str, str], size: int, threads: int) -> Decision | None:
    """impls[0]'s context switches per message (col over messages) against impls[1]'s in one cell, paired
    within passes; None with fewer than two passes of both or an open interval."""
    msgs = pd.to_numeric(tp["messages"], errors="coerce")
    per_message = tp.assign(cs_per_message=pd.to_numeric(tp[col], errors="coerce") / msgs.where(msgs > 0))
    diff = cell_diffs(log_values(per_message, "cs_per_message"), *impls).get((size, threads))
    if diff is None:
        return None
    d = decide_diff(impls[0], impls[1], size, threads, diff, DEFAULT_MARGIN)
    return d if d.low == d.low and d.high == d.high else None

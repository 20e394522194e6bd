"""Q2's and Q3's cache-level comparisons, for a sweep whose working set varies across this host's
cache levels (params/cache.yaml): the level the sender's source data sit in is set by construction
(cachelevels.py), not counted. The Study (study.py) builds them once and corrects them with Holm's
procedure in the families of the answers that claim them ("q2", and "q3" for the aggregate's contrast).

- Steps (Q2): per path, message size and metric (throughput, sender CPU time per byte; with a PMU
  also L1 and LLC misses per byte), each working set against the next smaller one at the fewest
  threads: a path against itself at two grid points in different blocks, so each point keeps its own
  mean and spread (inference.point_diff, unpaired), as Q3 compares.
- The extra copy (Q2): the two-copy path's sender CPU per byte over the one-copy path's at each working
  set (paired within passes: the two ran in one block), and how that ratio changes from one working
  set to the next (the difference of two independent log differences, with both spreads).
- The aggregate (Q3): threads x working set against the shared last-level cache. Per path and size,
  throughput per thread at the most threads over at the fewest, where the aggregate leaves the LLC
  only at the most threads, against the same where it stays inside at both: adding threads costs
  per-thread throughput anyway (the threads share the pinned CPUs), so only the contrast isolates
  what leaving the LLC adds.

Residency: a working set fits a level when it is at most the level's size (cachelevels.residency).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import pandas as pd

from .. import cachelevels, contract
from ..inference import Decision, Diff, cell_diffs, decide_diff, log_values, point_diff, point_stats, pool
from .roles import BASE, ONE_COPY, STUDY

THROUGHPUT = "throughput_gbps"
SENDER_CPU = contract.SENDER_CPU
MISSES = {"L1": "l1_misses_per_byte", "LLC": "llc_misses_per_byte"}
STEP_METRICS = (THROUGHPUT, SENDER_CPU, *MISSES.values())
COPY = "copy"  # the copy alone, timed by native/memcpyprobe: A1's user-space serialisation


@dataclass
class Step:
    """One path at one size, a metric at the next larger working set against this one."""

    impl: str
    size: int
    metric: str
    lower: str          # the working sets' keys (cache level names, or bytes)
    upper: str
    decision: Decision  # ratio upper / lower


@dataclass
class Aggregate:
    """Q3 at one size for one path: per-thread throughput, most threads against fewest."""

    impl: str
    size: int
    leaving: list       # keys whose aggregate leaves the LLC at the most threads only
    staying: list       # keys whose aggregate stays inside it at both
    beyond: list        # keys already beyond it at the fewest threads
    leave: Decision | None    # per-thread throughput ratio, pooled over the leaving keys
    stay: Decision | None     # the same over the staying keys
    contrast: Decision | None  # leave / stay: what leaving the LLC adds


@dataclass
class CacheLevels:
    caches: dict                        # {"L1d": bytes, ...}: meta.json's cpu_caches
    keys: list                          # working sets, smallest first
    levels: dict                        # key -> the level name it was asked by ("" : bytes)
    used: dict                          # (key, size) -> bytes cycled through (working_set_bytes)
    residency: dict                     # (key, size) -> "L1d" | "L2" | "L3" | "DRAM" | None
    threads: tuple = (0, 0)             # (fewest, most)
    sizes: list = field(default_factory=list)
    steps: list = field(default_factory=list)        # Steps at the fewest threads
    extra_copy: dict = field(default_factory=dict)   # size -> {"per_key": {key: Decision}, "steps": [Step]}
    aggregate: list = field(default_factory=list)    # Aggregates
    means: pd.DataFrame | None = None   # per (impl, msg_size, threads, key): the metrics' means
    counted: tuple = ()                 # the miss metrics measured (a PMU counted them)
    copy_steps: list = field(default_factory=list)   # Steps of the copy alone (meta.json memcpy.levels)
    copy_held: dict = field(default_factory=dict)    # its key -> bytes the probe's ring held
    copy_top_over: dict = field(default_factory=dict)  # (lower, upper) of another copy step -> Decision:
                                                       # the largest step's ratio over that step's (paired)

    def step(self, impl: str, size: int, metric: str) -> list[Step]:
        return [s for s in self.steps if (s.impl, s.size, s.metric) == (impl, size, metric)]

    def decisions(self, family: str) -> list[Decision]:
        if family == "q2":
            return ([s.decision for s in self.steps + self.copy_steps] + list(self.copy_top_over.values())
                    + [d for e in self.extra_copy.values() for d in e["per_key"].values()]
                    + [s.decision for e in self.extra_copy.values() for s in e["steps"]])
        return [a.contrast for a in self.aggregate if a.contrast is not None]  # the claim Q3 makes of them


def working_set_key(rows: pd.DataFrame) -> pd.Series:
    """Each row's working set as asked: its cache level's name, else the bytes asked (point_id's
    ws<bytes>B), else the bytes it cycled through."""
    level = rows["working_set_level"].map(lambda v: "" if v is None or v != v else str(v)) \
        if "working_set_level" in rows else pd.Series("", index=rows.index)
    asked = rows["point_id"].astype(str).str.extract(cachelevels.ASKED)[0] if "point_id" in rows else \
        pd.Series(None, index=rows.index, dtype=object)
    used = pd.to_numeric(rows.get("working_set_bytes"), errors="coerce") if "working_set_bytes" in rows else \
        pd.Series(math.nan, index=rows.index)
    fallback = asked.where(asked.notna(), used.map(lambda v: None if v != v else str(int(v))))
    return level.where(level != "", fallback.fillna("").astype(str).map(lambda b: f"{b} B" if b else ""))


def varies(rows: pd.DataFrame) -> bool:
    return rows.empty is False and working_set_key(rows).replace("", pd.NA).dropna().nunique() > 1


def primary(rows: pd.DataFrame, default: int) -> pd.DataFrame:
    """The rows of the working set the rest of Part E uses when a sweep varies it: the one whose bytes as
    asked are nearest (on a log scale) the default grid's working set (the bytes a ring cycles through
    depend on the message size: a ring is capped, so asked bytes compare alike)."""
    keys = working_set_key(rows)
    asked = pd.to_numeric(rows["point_id"].astype(str).str.extract(cachelevels.ASKED)[0], errors="coerce") \
        if "point_id" in rows else pd.Series(float("nan"), index=rows.index)
    used = asked.fillna(pd.to_numeric(rows["working_set_bytes"], errors="coerce"))
    size = used.groupby(keys).median()
    size = size[size > 0]
    if size.empty:
        return rows
    best = cachelevels.nearest(size.to_dict(), default)
    return rows[keys == best]


def one_working_set(rows: pd.DataFrame, default: int) -> pd.DataFrame:
    """The rows a figure or table of one working set shows: when the sweep varies it, the primary
    working set's (primary()) and those that have none (the reference programs); else every row."""
    if not varies(rows):
        return rows
    keys = working_set_key(rows)
    return rows[rows.index.isin(primary(rows, default).index) | keys.eq("")]


def _tag(rows: pd.DataFrame, keys: pd.Series) -> pd.DataFrame:
    """The rows with each (path, working set) as one contender "impl@key" of the decisions."""
    return rows.assign(impl=rows["impl"] + "@" + keys)


def cache_levels(rows: pd.DataFrame, meta: dict, margin: float) -> CacheLevels | None:
    """Every cache-level comparison of a sweep that varies the working set (None when it does not)."""
    tp = rows[(rows["mode"] == "throughput") & rows["impl"].isin(STUDY)]
    if tp.empty or not varies(tp):
        return None
    keys = working_set_key(tp)
    tp, keys = tp[keys != ""], keys[keys != ""]
    caches = cachelevels.cache_sizes(meta.get("cpu_caches"))
    used_bytes = pd.to_numeric(tp["working_set_bytes"], errors="coerce")
    used = used_bytes.groupby([keys, tp["msg_size"]]).median().to_dict()
    order = used_bytes.groupby(keys).median().sort_values().index.tolist()
    levels = tp["working_set_level"].fillna("").groupby(keys).first().to_dict() if "working_set_level" in tp \
        else {k: "" for k in order}
    out = CacheLevels(caches=caches, keys=order, levels=levels, used={(k, int(s)): float(v) for (k, s), v in used.items()},
                      residency={(k, int(s)): cachelevels.residency(v, caches) for (k, s), v in used.items()},
                      threads=(int(tp["threads"].min()), int(tp["threads"].max())),
                      sizes=sorted(int(s) for s in tp["msg_size"].unique()))
    tagged = _tag(tp, keys)
    metrics = [m for m in STEP_METRICS if m in tagged and pd.to_numeric(tagged[m], errors="coerce").gt(0).any()]
    out.counted = tuple(m for m in MISSES.values() if m in metrics)
    out.means = (tp.assign(working_set=keys).groupby(["impl", "msg_size", "threads", "working_set"])
                 [[m for m in metrics]].mean().reset_index())
    lo, hi = out.threads
    # the steps are between the levels the grid names (its cache part), not through the study's own
    # working set, whose ring is capped below what it asks at small messages
    named = [k for k in order if levels.get(k)]
    stepped = named if len(named) >= 2 else order
    for metric in metrics:
        stats = point_stats(tagged, metric)
        for impl in STUDY:
            for size in out.sizes:
                for lower, upper in zip(stepped, stepped[1:]):
                    diff = point_diff(stats, (f"{impl}@{upper}", size, lo), (f"{impl}@{lower}", size, lo))
                    if diff is not None:
                        out.steps.append(Step(impl, size, metric, lower, upper,
                                              decide_diff(impl, impl, size, lo, diff, margin)))
    if SENDER_CPU in metrics:
        _extra_copy(out, tagged, margin, stepped)
    _copy_steps(out, meta.get("memcpy"), margin)
    if hi > lo:
        _aggregate(out, point_stats(tagged, THROUGHPUT), margin)
    return out


def _difference(a: Diff, b: Diff) -> Diff:
    """a - b of two independent log differences, with both spreads."""
    return Diff(a.d - b.d, a.parts + b.parts, min(a.n_x, b.n_x), min(a.n_base, b.n_base))


def _shift(d: Diff, by: float) -> Diff:
    return Diff(d.d + by, d.parts, d.n_x, d.n_base)


def _copy_steps(out: CacheLevels, probe, margin: float) -> None:
    """The copy alone (meta.json memcpy.levels, memcpyref.measure_levels): its ns per byte at each working
    set over the next smaller one's, paired by the probe's round (both measured within it)."""
    levels = probe.get("levels") if isinstance(probe, dict) else None
    if not isinstance(levels, dict) or not isinstance(levels.get("ns_per_byte"), dict):
        return
    size, held = levels.get("msg_size"), levels.get("working_sets")
    # meta.json is the results folder's: only a cache level's name with a byte count is a key the text may show
    held = {k: v for k, v in held.items() if cachelevels.is_level_name(k) and isinstance(v, int)
            and not isinstance(v, bool) and v > 0} if isinstance(held, dict) else {}
    rows = [{"impl": key, "msg_size": size, "threads": 1, "rep": r, "y": math.log(v)}
            for key, costs in levels["ns_per_byte"].items() if isinstance(costs, list) and key in held
            for r, v in enumerate(costs)
            if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v > 0]
    if not isinstance(size, int) or not rows:
        return
    values = pd.DataFrame(rows)
    keys = sorted(values["impl"].unique(), key=lambda k: held[k])
    out.copy_held = {k: int(held[k]) for k in keys}
    for lower, upper in zip(keys, keys[1:]):
        diff = cell_diffs(values, upper, lower).get((size, 1))
        if diff is not None:
            out.copy_steps.append(Step(COPY, size, "copy_ns_per_byte", lower, upper,
                                       decide_diff(COPY, COPY, size, 1, diff, margin)))
    _copy_top_over(out, values, size, margin)


def _copy_top_over(out: CacheLevels, values: pd.DataFrame, size: int, margin: float) -> None:
    """Whether the copy's largest step is larger than each other step: the two steps' log ratios per round
    against each other (paired by round: a step and its neighbour share a working set, so their errors are
    not independent and two intervals' overlap would not tell)."""
    if len(out.copy_steps) < 2:
        return
    by_round = values.pivot_table(index="rep", columns="impl", values="y")
    def step_rows(step, name):
        logs = (by_round[step.upper] - by_round[step.lower]).dropna()
        return [{"impl": name, "msg_size": size, "threads": 1, "rep": r, "y": y} for r, y in logs.items()]
    top = max(out.copy_steps, key=lambda st: st.decision.ratio)
    for other in (st for st in out.copy_steps if st is not top):
        diff = cell_diffs(pd.DataFrame(step_rows(top, "top") + step_rows(other, "other")), "top", "other")
        if (size, 1) in diff:
            out.copy_top_over[(other.lower, other.upper)] = decide_diff(COPY, COPY, size, 1, diff[(size, 1)], margin)


def _extra_copy(out: CacheLevels, tagged: pd.DataFrame, margin: float, keys: list) -> None:
    """The two-copy path's sender CPU per byte over the one-copy path's, per working set, and its steps."""
    values = log_values(tagged, SENDER_CPU)
    lo = out.threads[0]
    for size in out.sizes:
        diffs = {}
        for key in keys:
            found = cell_diffs(values, f"{BASE}@{key}", f"{ONE_COPY}@{key}").get((size, lo))
            if found is not None:
                diffs[key] = found
        if not diffs:
            continue
        per_key = {k: decide_diff(BASE, ONE_COPY, size, lo, d, margin) for k, d in diffs.items()}
        present = [k for k in keys if k in diffs]
        steps = [Step(BASE, size, "extra_copy", a, b, decide_diff(BASE, BASE, size, lo, _difference(diffs[b], diffs[a]), margin))
                 for a, b in zip(present, present[1:])]
        out.extra_copy[size] = {"per_key": per_key, "steps": steps}


def _aggregate(out: CacheLevels, stats: pd.DataFrame, margin: float) -> None:
    """Q3: per-thread throughput at the most threads against the fewest, where the aggregate working
    set leaves the LLC and where it stays inside it."""
    lo, hi = out.threads
    llc = cachelevels.last_level(out.caches)
    if llc is None:
        return
    limit = out.caches[llc]
    per_thread = -math.log(hi / lo)  # log of (throughput / threads) at hi over at lo
    for impl in STUDY:
        for size in out.sizes:
            groups = {"leaving": [], "staying": [], "beyond": []}
            diffs = {}
            for key in out.keys:
                used = out.used.get((key, size))
                diff = point_diff(stats, (f"{impl}@{key}", size, hi), (f"{impl}@{key}", size, lo))
                if used is None or diff is None:
                    continue
                diffs[key] = _shift(diff, per_thread)
                fits_lo, fits_hi = lo * used < limit, hi * used < limit
                groups["staying" if fits_hi else "leaving" if fits_lo else "beyond"].append(key)
            if not diffs:
                continue
            leave = pool([diffs[k] for k in groups["leaving"]]) if groups["leaving"] else None
            stay = pool([diffs[k] for k in groups["staying"]]) if groups["staying"] else None
            decide = lambda d: decide_diff(impl, impl, size, hi, d, margin) if d is not None else None  # noqa: E731
            out.aggregate.append(Aggregate(impl, size, groups["leaving"], groups["staying"], groups["beyond"],
                                           decide(leave), decide(stay),
                                           decide(_difference(leave, stay)) if leave and stay else None))

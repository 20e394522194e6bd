"""The verdicts of every section: decided results and the evidence behind them, never sentences.

Each builder reads the Study (its decisions, families, cost model and cache levels) and the evidence
(evidence.py), chooses what the run's own numbers support, and returns a dataclass that the section's
template (analysis/templates/) words and answers.json serialises. A mechanism is named by a field the
template reads only where the evidence holds it (a share beyond another's interval, a decided cost).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import pandas as pd

from .. import cachelevels
from ..inference import Decision, Outcome, Verdict
from . import evidence as ev
from .costmodel import Estimate, Gap
from .roles import BASE, ONE_COPY, STUDY, ZERO_COPY, native
from .stats import numbers, throughput_rows
from .threads import ThreadVerdict


# ------------------------------------------------------------------------------------------------
# Q4 and Q5: from which size a path outperforms the baseline


@dataclass
class Row:
    """One comparison as a table row reads it: its decision and its standing in its family."""

    decision: Decision
    standing: Outcome      # the outcome after Holm's correction (undecided where it does not stand)
    p_holm: float
    stands: bool


@dataclass
class CrossoverVerdict:
    impl: str
    family: str
    by_size: dict = field(default_factory=dict)       # size -> Row
    per_threads: dict = field(default_factory=dict)   # threads -> {size -> Row}
    crossover: int | None = None                      # THE crossover (Study.crossover)
    crossover_higher: int | None = None               # decided faster at all, the other one shown
    per_threads_crossover: dict = field(default_factory=dict)
    gap: Gap | None = None                            # the cost model's line of the path against A1's
    repeat: dict = field(default_factory=dict)        # size -> (low, high): where a repeat run's ratio may lie
    profiles: tuple = ()                              # (path's, baseline's) PointProfile at the largest size both
                                                      # were profiled at (Q4: where the bytes are read)
    largest: int = 0
    cost_turns: tuple | None = None                   # (a, b): adjacent sizes between which the sender's measured
                                                      # extra CPU per message turns from more to less than A1's

    @property
    def answerable(self) -> bool:
        return bool(self.by_size)

    @property
    def top(self) -> Row | None:
        return self.by_size.get(self.largest)

    def sizes_with(self, *outcomes: Outcome) -> list[int]:
        return [size for size, row in self.by_size.items() if row.standing in outcomes]


def _row(d: Decision, fam) -> Row:
    return Row(d, fam.standing(d), fam.p_holm(d), fam.stands(d))


def repeat_range(d: Decision) -> tuple[float, float]:
    """Where a repeat run's ratio falls with 95% probability when nothing but chance differs (Cumming
    and Maillardet 2006): the ratio times exp(+-sqrt(2) x the interval's half-width), both runs' errors."""
    half = d.half_width
    if not math.isfinite(half):
        return math.nan, math.nan
    return d.ratio * math.exp(-math.sqrt(2) * half), d.ratio * math.exp(math.sqrt(2) * half)


def crossover_verdict(s, impl: str) -> CrossoverVerdict:
    found = s.compare(impl)
    name = "q4" if impl == ONE_COPY else "q5"
    out = CrossoverVerdict(impl, name)
    if not found["by_size"]:
        return out
    fam, per_fam = s.family(name), s.family(f"{name}_per_threads")
    out.by_size = {size: _row(d, fam) for size, d in sorted(found["by_size"].items())}
    out.per_threads = {t: {size: _row(d, per_fam) for size, d in sorted(by.items())}
                       for t, by in sorted(found["per_threads"].items())}
    out.crossover, out.crossover_higher = s.crossover(impl), s.crossover(impl, beyond_margin=False)
    out.per_threads_crossover = {t: s.crossover(impl, t) for t in out.per_threads}
    out.gap = s.model.gaps.get(impl) if s.model is not None else None
    if out.gap is not None:
        sizes = sorted(out.gap.measured)
        out.cost_turns = next(((a, b) for a, b in zip(sizes, sizes[1:])
                               if out.gap.measured[a] > 0 >= out.gap.measured[b] and a in out.by_size
                               and b in out.by_size), None)
    out.repeat = {size: repeat_range(row.decision) for size, row in out.by_size.items()}
    out.largest = max(out.by_size)
    sizes = ev.profiled_sizes(s.profiles, [impl, BASE]) if s.profiles is not None and len(s.profiles) else []
    if sizes and sizes[-1] == out.largest:  # where the bytes dominate: at a small size the ring sits in L1d
        found = tuple(ev.point_profile(s.profiles, who, sizes[-1], s.results_dir) for who in (impl, BASE))
        out.profiles = found if all(found) else ()
    return out


# ------------------------------------------------------------------------------------------------
# the summary: which path to use, per size and criterion


@dataclass
class Choice:
    choice: str                                   # the path to use (the baseline unless one is decided better)
    entries: dict = field(default_factory=dict)   # impl -> (Row, its decision read as a Verdict)


@dataclass
class SummaryVerdict:
    criteria: dict = field(default_factory=dict)  # criterion -> {size -> Choice}


def summary_verdict(s) -> SummaryVerdict:
    from .study import CRITERIA

    fam, out = s.family("summary"), SummaryVerdict()
    for criterion, (_, metric, higher) in CRITERIA.items():
        by_size: dict[int, Choice] = {}
        for impl in sorted(set(native(set(s.rows["impl"]))) - {BASE}):
            for size, d in s.compare(impl, BASE, metric)["by_size"].items():
                row = _row(d, fam)
                by_size.setdefault(size, Choice(BASE)).entries[impl] = (row, Verdict.of(d.decision, higher))
        for choice in by_size.values():
            better = [i for i, (row, v) in choice.entries.items() if v == Verdict.BETTER and row.stands]
            if better:
                pick = max if higher else min
                choice.choice = pick(better, key=lambda i: choice.entries[i][0].decision.ratio)
        if by_size:
            out.criteria[criterion] = dict(sorted(by_size.items()))
    return out


# ------------------------------------------------------------------------------------------------
# the data paths and the profile: where the copies are, measured


@dataclass
class DataPathsVerdict:
    user_copies: dict = field(default_factory=dict)     # impl -> bytes copied in user space per byte sent
    sender_cost: dict = field(default_factory=dict)     # size -> Row: A2's sender CPU per byte over A1's
    counts: ev.ZeroCopyCounts | None = None


@dataclass
class ProfileVerdict:
    size: int | None = None
    points: dict = field(default_factory=dict)          # impl -> PointProfile at the largest profiled size
    copy_removed: bool = False                          # A1's user copy above A2's beyond both intervals
    zero_copy_top: str = ""                             # the largest of A3's zero-copy work, beyond the next
    bounds: dict = field(default_factory=dict)          # impl -> Bound at that point
    apart: list = field(default_factory=list)           # (impl, size, threads) profiled while the vCPUs were apart


def data_paths_verdict(s) -> DataPathsVerdict:
    from .study import COST_FAMILY, SIDE_CPU

    fam = s.family(COST_FAMILY)
    return DataPathsVerdict(
        ev.user_copies(s.part_e),
        {size: _row(d, fam) for size, d in sorted(s.compare(ONE_COPY, metric=SIDE_CPU["sender"])["by_size"].items())},
        ev.zero_copy_counts(s.part_e, s.meta))


def profile_verdict(s) -> ProfileVerdict:
    out = ProfileVerdict(apart=[(str(r["impl"]), int(r["msg_size"]), int(r["threads"]))
                                for _, r in s.profiles_apart.iterrows()] if len(s.profiles_apart) else [])
    sizes = ev.profiled_sizes(s.profiles, [i for i in STUDY if i in set(s.profiles.get("impl", []))])
    if not sizes:
        return out
    out.size = sizes[-1]
    out.points = {impl: ev.point_profile(s.profiles, impl, out.size, s.results_dir) for impl in STUDY}
    out.points = {k: v for k, v in out.points.items() if v is not None}
    a1, a2, a3 = (out.points.get(i) for i in (BASE, ONE_COPY, ZERO_COPY))
    if a1 and a2:
        out.copy_removed = ev.above(a1.shares[("srv", "user_copy")], a2.shares[("srv", "user_copy")])
    if a3:
        ranked = sorted(ev.ZERO_COPY_WORK, key=lambda b: -a3.shares[("srv", b)].mean)
        if ev.above(a3.shares[("srv", ranked[0])], a3.shares[("srv", ranked[1])]):
            out.zero_copy_top = ranked[0]
    tp = throughput_rows(s.part_e)
    for impl, point in out.points.items():
        out.bounds[impl] = ev.bound(tp[(tp["impl"] == impl) & (tp["msg_size"] == out.size)
                                       & (tp["threads"] == point.threads)])
    return out


# ------------------------------------------------------------------------------------------------
# Q1: why zero-copy is not always the fastest


@dataclass
class ZeroCopyVerdict:
    lower_sizes: list = field(default_factory=list)     # sizes where A3 is decided slower than A1 (standing)
    sizes: list = field(default_factory=list)
    crossover: int | None = None                        # Q5's crossover: Q1's break-even
    counts: ev.ZeroCopyCounts | None = None
    gap: Gap | None = None                              # A3's sender line against A1's (per message, per byte)
    small: ev.PointProfile | None = None                # A3's profile at the smallest and largest profiled sizes
    large: ev.PointProfile | None = None
    base_small: ev.PointProfile | None = None           # A1's profile at A3's smallest profiled size
    pin_vs_copy: tuple = ()                             # there: (A3's pinning µs/msg, A1's user copy ns/msg, ratio)
    site: ev.DeferredCopySite | None = None
    sender_cost: Row | None = None                      # A3's sender CPU per byte over A1's at the largest size
    receiver_cost: Row | None = None
    largest: Row | None = None                          # A3 against A1 at the largest size (Q5's)
    waits: ev.SenderWaits | None = None                 # A3's and A1's senders at the smallest size: busy, switches


def zero_copy_verdict(s, q5: CrossoverVerdict) -> ZeroCopyVerdict:
    from .study import COST_FAMILY, SIDE_CPU

    out = ZeroCopyVerdict(q5.sizes_with(Outcome.LOSS, Outcome.LOSS_WITHIN), list(q5.by_size), q5.crossover,
                          ev.zero_copy_counts(s.part_e, s.meta), q5.gap, largest=q5.top)
    sizes = ev.profiled_sizes(s.profiles, [ZERO_COPY])
    if sizes:
        out.small = ev.point_profile(s.profiles, ZERO_COPY, sizes[0], s.results_dir)
        out.base_small = ev.point_profile(s.profiles, BASE, sizes[0], s.results_dir)
        if out.small and out.base_small:
            pin = out.small.us_per_message[("srv", "zerocopy_pin")]
            copy = out.base_small.us_per_message[("srv", "user_copy")]
            if pin == pin and copy == copy and copy > 0:
                out.pin_vs_copy = (pin, 1000 * copy, pin / copy)
        out.large = ev.point_profile(s.profiles, ZERO_COPY, sizes[-1], s.results_dir)
        out.site = ev.deferred_copy_site(s.profiles, sizes[-1], s.results_dir)
    if q5.by_size:
        out.waits = ev.sender_waits(s.part_e, (ZERO_COPY, BASE), min(q5.by_size))
        fam = s.family(COST_FAMILY)
        for side, attr in (("sender", "sender_cost"), ("receiver", "receiver_cost")):
            d = s.decision(ZERO_COPY, q5.largest, metric=SIDE_CPU[side])
            setattr(out, attr, _row(d, fam) if d is not None else None)
    return out


# ------------------------------------------------------------------------------------------------
# Q2: which cache level's step changes the cost most


@dataclass
class CacheVerdict:
    by_construction: bool = False                 # a sweep that places the working set across the levels
    size: int | None = None                       # the message size the steps are read at
    steps: list = field(default_factory=list)     # (impl, from, to, leaving, Row) of the sender's CPU per byte
    level: str | None = None                      # the level whose leaving costs most (decided)
    top: tuple | None = None                      # that step
    extra_copy: dict = field(default_factory=dict)  # working set -> Row: A1's sender CPU per byte over A2's
    working_sets: dict = field(default_factory=dict)  # working set -> (bytes, the level it resides in)
    counted: tuple = ()                           # miss metrics a PMU measured
    reduction: dict = field(default_factory=dict)  # counted: level -> mean % fewer misses per byte than A1's
    reason: str = ""
    memcpy: tuple = ()                            # the memcpy probe: (ns/B over the study's working set, its
                                                  # bytes, ns/B cache-resident, its bytes), when it ran
    copy_steps: list = field(default_factory=list)  # (from, to, leaving, Row) of the copy alone (the probe)
    copy_top: tuple | None = None                 # its largest decided rise where a level is left
    copy_size: int | None = None
    copy_others: list = field(default_factory=list)  # the copy's other steps decided to rise (before Holm at least)
    copy_over: list = field(default_factory=list)  # per copy_others: Row of the top step's ratio over its
    copy_overlap: bool = False                    # the top step is not decided larger than every other rising one
    copy_sets: dict = field(default_factory=dict)  # its working set -> (bytes held, the level it resides in)
    path_rising: int = 0                          # the send path's steps decided to raise the cost
    copy_delta_ns: float = math.nan               # the copy's top step in ns per byte (mean over the rounds)
    path_ns: float = math.nan                     # the two-copy sender's CPU per byte below that step
    copy_share: float = math.nan                  # copy_delta_ns over path_ns


def memcpy_levels(meta: dict) -> tuple:
    probe = meta.get("memcpy") if isinstance(meta.get("memcpy"), dict) else {}
    cached = probe.get("cache_resident") if isinstance(probe.get("cache_resident"), dict) else {}
    values = (probe.get("ns_per_byte"), probe.get("working_set_bytes"), cached.get("ns_per_byte"),
              cached.get("working_set_bytes"))
    ok = all(isinstance(v, (int, float)) and v > 0 for v in values)
    return tuple(float(v) for v in values) if ok else ()


MISSES = {"L1": "l1_misses_per_byte", "LLC": "llc_misses_per_byte"}


def placed_size(c) -> int:
    """The message size the cache-level answer reads: the one measured with the most working sets (the
    smallest of those: its ring is smallest, so its working sets reach the most levels)."""
    count = {size: len({k for k, n in c.used if n == size}) for size in c.sizes}
    return min(c.sizes, key=lambda size: (-count[size], size))


def miss_reduction(part_e) -> dict[str, float]:
    """Where perf counted misses: per level, the mean over the compared paths and cells of how many fewer
    misses per byte they take than the baseline (%); {} where a level was not counted."""
    tp = throughput_rows(part_e)
    out = {}
    for level, column in MISSES.items():
        if column not in tp or not tp[column].notna().any():
            return {}
        means = tp.groupby(["impl", "msg_size", "threads"])[column].mean()
        cuts = []
        for impl in (ONE_COPY, ZERO_COPY):
            if impl in means.index.get_level_values(0) and BASE in means.index.get_level_values(0):
                pair = pd.concat([means.loc[impl].rename("x"), means.loc[BASE].rename("b")], axis=1).dropna()
                cuts += list(100 * (1 - pair["x"] / pair["b"].where(pair["b"] > 0)).dropna())
        if cuts:
            out[level] = float(sum(cuts) / len(cuts))
    return out


def _mean_of(means, impl: str, size: int, threads: int, key: str, metric: str) -> float:
    """A point's mean of metric from CacheLevels.means (NaN where it was not measured)."""
    if means is None or metric not in means:
        return math.nan
    hit = means[(means["impl"] == impl) & (means["msg_size"] == size) & (means["threads"] == threads)
                & (means["working_set"] == key)]
    return float(hit[metric].iloc[0]) if len(hit) else math.nan


def _left(c, held: dict, lower: str, upper: str) -> str | None:
    """The cache level a working set leaves from lower to upper (None: both reside in one)."""
    here, there = (cachelevels.residency(held[k], c.caches) for k in (lower, upper))
    return here if here != there else None


def cache_verdict(s) -> CacheVerdict:
    from .levels import SENDER_CPU

    c = s.cache
    if c is None:
        reduction = miss_reduction(s.part_e)
        best = max(reduction, key=reduction.get) if reduction else None
        return CacheVerdict(reduction=reduction, level=best if best and reduction[best] > 0 else None,
                            counted=tuple(MISSES.values()) if reduction else (),
                            reason="" if reduction else "no_cache_part")
    fam = s.family("q2")
    size = placed_size(c)
    out = CacheVerdict(True, size, counted=c.counted, memcpy=memcpy_levels(s.meta))
    out.working_sets = {k: (c.used.get((k, size)), c.residency.get((k, size))) for k in c.keys}
    for step in c.steps:
        if step.metric == SENDER_CPU and step.size == size and step.impl in STUDY:
            leaving = c.residency.get((step.lower, size)) if c.residency.get((step.lower, size)) != \
                c.residency.get((step.upper, size)) else None
            out.steps.append((step.impl, step.lower, step.upper, leaving, _row(step.decision, fam)))
    rising = [st for st in out.steps if st[4].standing.higher and st[3]]
    out.path_rising = len(rising)
    if rising:
        out.top = max(rising, key=lambda st: st[4].decision.ratio)
    out.copy_sets = {k: (n, cachelevels.residency(n, c.caches)) for k, n in c.copy_held.items()}
    out.copy_steps = [(st.lower, st.upper, _left(c, c.copy_held, st.lower, st.upper), _row(st.decision, fam))
                      for st in c.copy_steps]
    out.copy_size = c.copy_steps[0].size if c.copy_steps else None
    rising = [st for st in out.copy_steps if st[3].standing.higher and st[2]]
    if rising:
        out.copy_top = max(rising, key=lambda st: st[3].decision.ratio)
        out.copy_others = [st for st in out.copy_steps
                           if st is not out.copy_top and st[3].decision.decision.higher and st[2]]
        over = {key: _row(d, fam) for key, d in c.copy_top_over.items()}
        out.copy_over = [over.get(st[:2]) for st in out.copy_others]
        out.copy_overlap = not all(r is not None and r.standing.higher for r in out.copy_over)
    out.level = out.top[3] if out.top else out.copy_top[2] if out.copy_top else None
    if out.copy_top:
        lower, upper = out.copy_top[:2]
        costs = s.meta["memcpy"]["levels"]["ns_per_byte"]
        out.copy_delta_ns = sum(costs[upper]) / len(costs[upper]) - sum(costs[lower]) / len(costs[lower])
        out.path_ns = _mean_of(c.means, BASE, size, c.threads[0], lower, SENDER_CPU)
        out.copy_share = out.copy_delta_ns / out.path_ns if out.path_ns > 0 else math.nan
    extra = c.extra_copy.get(size)
    if extra:
        out.extra_copy = {k: _row(d, fam) for k, d in extra["per_key"].items()}
    return out


# ------------------------------------------------------------------------------------------------
# Q6: one unexpected result, explained


@dataclass
class SurpriseVerdict:
    kind: str = "none"            # one_copy_slower | zero_copy_slower_at_largest | none
    size: int | None = None
    row: Row | None = None
    a2: ev.PointProfile | None = None   # one_copy_slower: both paths' profiles at that size (near runs)
    a1: ev.PointProfile | None = None
    gap: Gap | None = None
    measured_gap_us: float = math.nan   # A2's sender CPU per message minus A1's at that size
    copy_ns: float = math.nan           # what the copy A2 drops costs at that size, at this host's memcpy rate
    copy_profiled_ns: float = math.nan  # the same copy as A1's profile measures it (ns per message)
    measured_gap: Estimate | None = None  # measured_gap_us with its interval over the passes
    fades: list = field(default_factory=list)  # the larger sizes' Rows up to the first not decided slower
    busy: tuple = ()                   # (A2's, A1's) sender CPU busy share at the profiled thread count and size


def surprise_verdict(s, q4: CrossoverVerdict, q5: CrossoverVerdict) -> SurpriseVerdict:
    losses = q4.sizes_with(Outcome.LOSS, Outcome.LOSS_WITHIN)
    if losses:
        profiled = set(ev.profiled_sizes(s.profiles, [ONE_COPY, BASE]))
        size = next((x for x in losses if x in profiled), losses[0])
        out = SurpriseVerdict("one_copy_slower", size, q4.by_size[size], gap=q4.gap)
        out.a2 = ev.point_profile(s.profiles, ONE_COPY, size, s.results_dir)
        out.a1 = ev.point_profile(s.profiles, BASE, size, s.results_dir)
        if q4.gap is not None:
            out.measured_gap_us = q4.gap.measured.get(size, math.nan)
            out.measured_gap = q4.gap.measured_interval.get(size)
        for larger in (x for x in q4.by_size if x > size):
            out.fades.append(q4.by_size[larger])
            if not q4.by_size[larger].decision.decision.lower:
                break
        if s.model is not None:
            out.copy_ns = s.model.memcpy_ns_per_byte * size
        if out.a1 is not None:
            out.copy_profiled_ns = 1000 * out.a1.us_per_message[("srv", "user_copy")]
        if out.a2 is not None:
            tp = throughput_rows(s.part_e)
            at = tp[(tp["msg_size"] == size) & (tp["threads"] == out.a2.threads)]
            busy = numbers(at, "srv_cpu_busy").groupby(at["impl"]).mean()
            out.busy = tuple(float(busy.get(i, math.nan)) for i in (ONE_COPY, BASE))
        return out
    if q5.top is not None and q5.top.standing.lower:
        return SurpriseVerdict("zero_copy_slower_at_largest", q5.largest, q5.top, gap=q5.gap)
    return SurpriseVerdict()


def _thread_standing(s, q3: ThreadVerdict) -> ThreadVerdict:
    """Q3's comparisons as they stand after the correction over family q3."""
    fam = s.family("q3")
    q3.standing = {key: fam.standing(d) for key, d in q3.throughput.items()}
    if s.cache is not None:  # the threads' working sets together leaving the LLC (levels.py: the contrast)
        size = placed_size(s.cache)
        q3.aggregate = {a.impl: _row(a.contrast, fam) for a in s.cache.aggregate
                        if a.size == size and a.contrast is not None}
    q3.filling_standing = {key: _row(d, fam) for key, d in q3.filling.items()}
    for name in ("total", "task_cpu_per_byte", "outside_task", "switches_per_mb"):
        if getattr(q3, name) is not None:
            q3.standing[name] = fam.standing(getattr(q3, name))
    return q3


def verdicts(s) -> dict:
    """Every section's verdict, by section name (the templates' names)."""
    q4, q5 = crossover_verdict(s, ONE_COPY), crossover_verdict(s, ZERO_COPY)
    return {"summary": summary_verdict(s), "data_paths": data_paths_verdict(s), "profile": profile_verdict(s),
            "q1": zero_copy_verdict(s, q5), "q2": cache_verdict(s), "q3": _thread_standing(s, s.verdicts["q3"]),
            "q4": q4, "q5": q5, "q6": surprise_verdict(s, q4, q5)}

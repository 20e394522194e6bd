"""Q3: what more threads change, from the counters every host has.

With sender and receiver pinned to one CPU each, every connection of a side shares that side's CPU:
more threads add connections, not CPU. What they can change is measured, each as the most threads
against the fewest (a path against itself at two thread counts: the two points' runs were not measured
in one block, so each keeps its own mean and spread, unpaired):

- each path's total throughput, per size (family q3);
- the sender task's CPU per byte (task-clock over bytes): the cost of the work the program does,
  where the connections' working sets competing for the shared caches would show as a rise;
- the sender CPU's busy time over the task's own: CPU time outside the sender task on its CPU
  (softirq work in ksoftirqd, other threads, the scheduler), which the task's clock does not charge;
- context switches per MB (sender + receiver).

The last three are pooled over the paths and sizes (the mean of their log ratios, as thread counts are
pooled for a decision) and stand in the same family. The aggregate working set (threads x the working
set each connection cycles through) is set against the last-level cache.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .. import cachelevels
from ..inference import Decision, decide_diff, point_diff, point_stats, pool
from .roles import STUDY
from .stats import numbers, throughput_rows

POOLED = "all"  # the impl name of a pooled decision


@dataclass
class ThreadVerdict:
    fewest: int = 0
    most: int = 0
    throughput: dict = field(default_factory=dict)     # (impl, size) -> Decision: most over fewest threads
    total: Decision | None = None                       # the total throughput, pooled over paths and sizes
    task_cpu_per_byte: Decision | None = None           # pooled over paths and sizes
    outside_task: Decision | None = None                # the sender CPU's busy time over its task's, pooled
    switches_per_mb: Decision | None = None
    outside_share: tuple = (math.nan, math.nan)         # busy over task-clock at fewest and most (means)
    task_ns_per_byte: tuple = (math.nan, math.nan)      # the sender task's ns/B at fewest and most (means)
    total_gbps: tuple = (math.nan, math.nan)            # the total throughput at fewest and most (means)
    switches: tuple = (math.nan, math.nan)              # context switches per MB at fewest and most (means)
    sender_busy: tuple = (math.nan, math.nan)           # the sender CPU's busy share at fewest and most (medians)
    busy_at_fewest: dict = field(default_factory=dict)  # (impl, size) -> the sender CPU's busy share at fewest (mean)
    per_message: dict = field(default_factory=dict)     # (impl, size) -> the sender task's µs per message at
                                                        # fewest and most (geometric means of the runs)
    aggregate_max: float = math.nan                     # the most threads x the largest working set
    # where the most threads' working sets together pass half the LLC (no longer held in it, as the cache
    # part names its levels): (impl, size) -> Decision of the sender task's CPU per byte, most over fewest
    filling: dict = field(default_factory=dict)
    filling_bytes: dict = field(default_factory=dict)   # size -> the most threads x its working set
    filling_standing: dict = field(default_factory=dict)  # (impl, size) -> Row after q3's correction
    aggregate_bytes: tuple = (math.nan, math.nan)       # threads x working set at fewest and most
    llc_bytes: float = math.nan
    llc_name: str = ""
    standing: dict = field(default_factory=dict)        # (impl, size) | pooled name -> Outcome after Holm (q3)
    # a sweep across working sets: per path, per-thread throughput where the threads' working sets together
    # leave the LLC over where they stay inside it (levels.py's contrast), as it stands in family q3
    aggregate: dict = field(default_factory=dict)

    def outcome(self, key) -> str:
        """A comparison's outcome as it stands after its family's correction (undecided otherwise)."""
        return str(self.standing.get(key, "undecided"))

    def count(self, *outcomes: str) -> int:
        """How many of the throughput cells stand at one of outcomes."""
        return sum(1 for key in self.throughput if self.outcome(key) in outcomes)

    def rising(self) -> list:
        """The cells where throughput is decided to rise, before Holm's correction at least (the text marks
        those that do not stand after it)."""
        return [k for k, d in self.throughput.items() if d.decision.higher]

    def busiest_rising(self) -> float:
        """The highest busy share at the fewest threads among the cells where throughput rises (NaN: none)."""
        shares = [self.busy_at_fewest.get(k, math.nan) for k in self.rising()]
        return max(shares) if shares and all(v == v for v in shares) else math.nan

    def top_rise(self) -> tuple | None:
        """The cell whose throughput rises most (rising()): (impl, size, Decision, busy share at the fewest
        threads, what filling that idle time alone allows: 1 / busy); None where none rises."""
        rising = self.rising()
        if not rising:
            return None
        key = max(rising, key=lambda k: self.throughput[k].ratio)
        busy = self.busy_at_fewest.get(key, math.nan)
        return (*key, self.throughput[key], busy, 1 / busy if busy > 0 else math.nan)

    def members(self) -> list[Decision]:
        pooled = [self.total, self.task_cpu_per_byte, self.outside_task, self.switches_per_mb]
        return list(self.throughput.values()) + list(self.filling.values()) + [d for d in pooled if d is not None]

    @property
    def measured(self) -> bool:
        return self.most > self.fewest


def _with_columns(tp: pd.DataFrame) -> pd.DataFrame:
    """The runs with the sender's busy time over its task's, and sender + receiver switches per MB."""
    task = numbers(tp, "srv_task_clock_ms") / 1e3
    busy = numbers(tp, "srv_cpu_busy") * numbers(tp, "duration_s")
    return tp.assign(outside_task=(busy / task.where(task > 0)))


def _pooled(stats: pd.DataFrame, lo: int, hi: int, margin: float) -> Decision | None:
    """The mean over every path and size of the most threads' log value over the fewest's."""
    diffs = [point_diff(stats, (impl, size, hi), (impl, size, lo)) for impl in STUDY
             for size in sorted(stats["msg_size"].unique())]
    diffs = [d for d in diffs if d is not None]
    return decide_diff(POOLED, POOLED, 0, hi, pool(diffs), margin) if diffs else None


def _means(tp: pd.DataFrame, column: str, lo: int, hi: int, how: str = "geometric") -> tuple[float, float]:
    """column at the fewest and most threads over every path and size: the geometric mean of the runs (the
    pooled ratio's own scale: sizes a thousandfold apart weigh alike), or the median (a busy share)."""
    values = numbers(tp, column)
    if how == "median":
        out = values.groupby(tp["threads"]).median()
    else:
        out = np.exp(np.log(values.where(values > 0)).groupby(tp["threads"]).mean())
    return float(out.get(lo, math.nan)), float(out.get(hi, math.nan))


def _per_message(tp: pd.DataFrame, lo: int, hi: int) -> dict:
    """Per path and size, the sender task's CPU per message (µs) at the fewest and the most threads
    (geometric means of the runs)."""
    us = numbers(tp, "srv_cpu_ns_per_byte") * numbers(tp, "msg_size") / 1e3
    means = np.exp(np.log(us.where(us > 0)).groupby([tp["impl"], tp["msg_size"], tp["threads"]]).mean())
    return {(str(i), int(n)): (float(means.get((i, n, lo), math.nan)), float(means.get((i, n, hi), math.nan)))
            for i, n in {(i, n) for i, n, _ in means.index}}


def thread_verdict(part_e: pd.DataFrame, meta: dict, margin: float) -> ThreadVerdict:
    tp = throughput_rows(part_e)
    tp = tp[tp["impl"].isin(STUDY)]
    if tp.empty or tp["threads"].nunique() < 2:
        return ThreadVerdict()
    lo, hi = int(tp["threads"].min()), int(tp["threads"].max())
    tp = _with_columns(tp)
    out = ThreadVerdict(lo, hi)
    stats = point_stats(tp)
    for size in sorted(int(s) for s in stats["msg_size"].unique()):
        for impl in STUDY:
            diff = point_diff(stats, (impl, size, hi), (impl, size, lo))
            if diff is not None:
                out.throughput[(impl, size)] = decide_diff(impl, impl, size, hi, diff, margin)
    out.total = _pooled(stats, lo, hi, margin)
    for column, attr in (("srv_cpu_ns_per_byte", "task_cpu_per_byte"), ("outside_task", "outside_task"),
                         ("context_switches_per_mb", "switches_per_mb")):
        if column in tp and pd.to_numeric(tp[column], errors="coerce").gt(0).any():
            setattr(out, attr, _pooled(point_stats(tp, column, block=False), lo, hi, margin))
    out.outside_share = _means(tp, "outside_task", lo, hi)
    out.task_ns_per_byte = _means(tp, "srv_cpu_ns_per_byte", lo, hi)
    out.total_gbps = _means(tp, "throughput_gbps", lo, hi)
    out.switches = _means(tp, "context_switches_per_mb", lo, hi)
    out.sender_busy = _means(tp, "srv_cpu_busy", lo, hi, "median")
    fewest = tp[tp["threads"] == lo]
    out.busy_at_fewest = {(str(i), int(n)): float(v) for (i, n), v in
                          numbers(fewest, "srv_cpu_busy").groupby([fewest["impl"], fewest["msg_size"]]).mean().items()}
    out.per_message = _per_message(tp, lo, hi)
    caches = cachelevels.cache_sizes(meta.get("cpu_caches"))
    llc = cachelevels.last_level(caches)
    used = numbers(tp, "working_set_bytes")
    each = float(used.median()) if used.notna().any() else math.nan
    out.aggregate_bytes = (lo * each, hi * each)
    out.aggregate_max = hi * float(used.max()) if used.notna().any() else math.nan
    if llc is not None:
        out.llc_bytes, out.llc_name = float(caches[llc]), llc
        _filling(out, tp, margin)
    return out


def _filling(out: ThreadVerdict, tp: pd.DataFrame, margin: float) -> None:
    """The cells whose most threads' working sets together pass half the LLC, and there the sender task's
    CPU per byte at the most threads over the fewest: where contention for the LLC can show."""
    hi = tp[tp["threads"] == out.most]
    together = (numbers(hi, "working_set_bytes").groupby(hi["msg_size"]).median() * out.most).dropna()
    sizes = [int(n) for n, b in together.items() if b > out.llc_bytes / 2]
    out.filling_bytes = {n: float(together[n]) for n in sizes}
    if not sizes or "srv_cpu_ns_per_byte" not in tp:
        return
    stats = point_stats(tp, "srv_cpu_ns_per_byte", block=False)
    for size in sizes:
        for impl in STUDY:
            diff = point_diff(stats, (impl, size, out.most), (impl, size, out.fewest))
            if diff is not None:
                out.filling[(impl, size)] = decide_diff(impl, impl, size, out.most, diff, margin)

"""The numbers behind each Part E answer besides the decisions (study.py has those): means, shares,
counters, computed from one sweep and returned explicitly.

No English here but a finding's "reason" (why it cannot be computed): the text layer
(analysis/text/) turns these into sentences. Nothing is guessed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .decisions import trailing_start
from .roles import BASE, COMPARED, ONE_COPY, ZERO_COPY, name
from .stats import (aggregate, measured, over_threads, paired_means, reps_per_point, size_means,
                    throughput_rows, unmeasured_reason, zc_copied_share)

CPU_PER_BYTE = ["srv_cpu_ns_per_byte", "cli_cpu_ns_per_byte"]


@dataclass
class Crossover:
    """X against A1 in throughput mode: the crossover numbers and the per-size means behind them."""

    impl: str
    public: dict                              # what answers.json holds
    by_size: pd.DataFrame | None = None       # x, base per size (mean over thread counts)
    threads: list[int] = field(default_factory=list)
    have_throughput: list[str] = field(default_factory=list)

    @property
    def answerable(self) -> bool:
        return self.by_size is not None


def crossover_by_means(df: pd.DataFrame, impl: str, base: str = BASE) -> dict:
    """The crossover of impl over base by means (the first round's rule, kept in answers.json as
    `crossover_by_means`; it decides nothing): {"crossover_bytes": int|None, "per_threads": {...}}.

    Per thread count: the smallest grid size where impl's mean throughput beats base's and keeps
    beating it at every larger size; None when impl does not beat base at the largest size.
    Overall: the same rule on throughput averaged over the thread counts (only the (threads,
    size) points both were measured at, so neither side gains from an unshared point)."""
    pair = paired_means(df, impl, base)

    def start(table: pd.DataFrame) -> int | None:
        found = trailing_start(table.index, lambda size: table.loc[size, "x"] > table.loc[size, "base"])
        return None if found is None else int(found)

    per_threads = {str(int(t)): start(g.set_index("msg_size")) for t, g in pair.groupby("threads")}
    overall = over_threads(pair)
    return {"crossover_bytes": start(overall) if len(overall) else None, "per_threads": per_threads}


def crossover_finding(df: pd.DataFrame, impl: str) -> Crossover:
    public = crossover_by_means(df, impl)
    pair = paired_means(df, impl, BASE)
    if pair.empty:
        have = sorted(throughput_rows(df)["impl"].unique())
        return Crossover(impl, public, have_throughput=have)
    overall = over_threads(pair)
    sizes = list(overall.index)
    public["sizes_bytes"] = [int(s) for s in sizes]
    public["ratio_by_size"] = {str(int(s)): float(overall.loc[s, "x"] / overall.loc[s, "base"])
                                     for s in sizes}
    threads = sorted(int(t) for t in pair["threads"].unique())
    return Crossover(impl, public, overall, threads)


def reps_range(df: pd.DataFrame) -> tuple[int, int]:
    """(fewest, most) repetitions over the points; (0, 0) for an empty table."""
    reps = reps_per_point(df)
    return (0, 0) if reps.empty else (int(reps.min()), int(reps.max()))


@dataclass
class ZeroCopy:
    """A3's zero-copy accounting and per-side CPU time per byte at one size."""

    copied_share_pct: float            # NaN when no completions were recorded
    size: int
    cpu_at_size: pd.DataFrame          # impl -> srv/cli ns per byte


def zero_copy_finding(df: pd.DataFrame, size=None) -> ZeroCopy:
    size = size if size is not None else throughput_rows(df)["msg_size"].max()
    return ZeroCopy(zc_copied_share(df), size, size_means(df, CPU_PER_BYTE, size))


def q1_finding(df: pd.DataFrame, break_even) -> tuple[dict, pd.Series | None]:
    """Where the zero-copy path is not the fastest, the COPIED share and per-side CPU at the largest
    size. Returns (public numbers, best implementation per size)."""
    tp = throughput_rows(df)
    out: dict = {"break_even_bytes": break_even}
    if ZERO_COPY not in set(tp["impl"]):
        out["reason"] = f"{name(ZERO_COPY)} was not measured in throughput mode"
        return out, None
    by_size = tp.groupby(["msg_size", "impl"])["throughput_gbps"].mean().unstack("impl")
    best = by_size.idxmax(axis=1)
    out["best_impl_by_size"] = {str(int(s)): b for s, b in best.items()}
    out["zero_copy_not_best_sizes"] = [int(s) for s, b in best.items() if b != ZERO_COPY]
    share = zc_copied_share(df)
    out["zc_copied_share_pct"] = None if math.isnan(share) else share
    # the completions the device sent from the user's pages (what MSG_ZEROCOPY is for)
    out["zc_not_copied_share_pct"] = None if math.isnan(share) else 100.0 - share
    out["path"] = data_path(df)
    top = zero_copy_finding(df).cpu_at_size
    if {ONE_COPY, ZERO_COPY} <= set(top.dropna().index):
        out["cpu_ns_per_byte_at_largest_size"] = {
            "msg_size": int(tp["msg_size"].max()),
            "sender": {k: float(v) for k, v in top["srv_cpu_ns_per_byte"].items()},
            "receiver": {k: float(v) for k, v in top["cli_cpu_ns_per_byte"].items()}}
        srv = top["srv_cpu_ns_per_byte"]
        if BASE in srv.dropna().index and srv[BASE] > 0:
            out["sender_cpu_saving_vs_base_pct_at_largest_size"] = float((1 - srv[ZERO_COPY] / srv[BASE]) * 100)
    return out, best


def data_path(df: pd.DataFrame) -> str:
    """'local' when server and client shared a host (netns, loopback: the kernel copies every
    MSG_ZEROCOPY send on delivery), 'hosts' when they were two machines (topology ssh)."""
    kinds = set(df["topology"].dropna()) if "topology" in df.columns else set()
    return "hosts" if kinds == {"ssh"} else "local" if kinds and "ssh" not in kinds else "mixed" if kinds else "unknown"


CACHE_LEVELS = {"L1": "l1_misses_per_byte", "LLC": "llc_misses_per_byte"}


def unmeasured_levels(df: pd.DataFrame) -> list[str]:
    """The cache levels whose misses per byte no throughput row has."""
    tp = throughput_rows(df)
    return [lvl for lvl, col in CACHE_LEVELS.items() if not measured(tp, col)]


def unmeasured_levels_reason(df: pd.DataFrame, meta: dict, why) -> str:
    """'L1 and LLC misses were not measured: <why(df, meta, column)>' (why: stats.unmeasured_reason, the
    full note for answers.json, or stats.unmeasured_short, its line for the report's text)."""
    levels = unmeasured_levels(df)
    col = "l1_misses" if "L1" in levels else "llc_misses"
    return f"{' and '.join(levels)} misses were not measured: {why(df, meta, col)}"


def q2_finding(df: pd.DataFrame, meta: dict) -> tuple[dict, str]:
    """Reduction (%) of misses per byte relative to A1, per cache level and implementation.
    Returns (public numbers, outcome): outcome is "answered", "unmeasured", "no_pairs" or
    "no_reduction"; every outcome but "answered" leaves a "reason"."""
    out: dict = {"answer": None, "reduction_pct": {}}
    tp = throughput_rows(df)
    unmeasured = unmeasured_levels(df)
    if unmeasured:
        out["reason"] = unmeasured_levels_reason(df, meta, unmeasured_reason)
        return out, "unmeasured"
    agg = aggregate(tp, list(CACHE_LEVELS.values())).set_index(["impl", "msg_size", "threads"])
    impls = agg.index.get_level_values("impl")
    for lvl, col in CACHE_LEVELS.items():
        for impl in COMPARED:
            if impl not in impls or BASE not in impls:
                continue
            x, b = agg.loc[impl, col], agg.loc[BASE, col]
            joined = pd.concat([x.rename("x"), b.rename("b")], axis=1, join="inner").dropna()
            joined = joined[joined["b"] > 0]
            if len(joined):
                out["reduction_pct"].setdefault(lvl, {})[impl] = float(
                    (100 * (1 - joined["x"] / joined["b"])).mean())
    mean_red = {lvl: float(np.mean(list(v.values()))) for lvl, v in out["reduction_pct"].items() if v}
    out["mean_reduction_pct"] = mean_red
    if len(mean_red) < 2:
        out["reason"] = (f"no size/thread point where {name(BASE)} and another of the study's paths both have "
                         "L1 and LLC counts")
        return out, "no_pairs"
    best = max(mean_red, key=mean_red.get)
    if mean_red[best] <= 0:
        return out, "no_reduction"
    out["answer"] = best
    return out, "answered"


Q3_METRICS = ["throughput_gbps", "l1_misses_per_byte", "llc_misses_per_byte",
              "context_switches_per_mb", "srv_cpu_ns_per_byte", "cli_cpu_ns_per_byte"]


def q3_finding(df: pd.DataFrame, meta: dict) -> dict:
    """Scaling and per-byte misses / context switches from the fewest to the most threads."""
    tp = throughput_rows(df)
    out: dict = {}
    thread_counts = sorted(tp["threads"].unique())
    if len(thread_counts) < 2:
        out["reason"] = (f"throughput mode was measured at {len(thread_counts)} thread count(s); "
                         "need 2 or more")
        return out
    # average over sizes first so each thread count weighs every size equally
    by_threads = aggregate(tp, Q3_METRICS).groupby(["impl", "threads"])[Q3_METRICS].mean()
    lo, hi = int(thread_counts[0]), int(thread_counts[-1])
    out.update({"cores": meta.get("cores"), "threads": [int(t) for t in thread_counts], "per_impl": {}})
    for impl in sorted(by_threads.index.get_level_values("impl").unique()):
        t = by_threads.loc[impl]
        if lo not in t.index or hi not in t.index:
            continue
        entry = {"peak_threads": int(t["throughput_gbps"].idxmax()),
                 "throughput_ratio_hi_lo": float(t.loc[hi, "throughput_gbps"] / t.loc[lo, "throughput_gbps"])}
        for m in Q3_METRICS[1:]:
            if t[m].notna().all() and t.loc[lo, m] > 0:
                entry[f"{m}_ratio_hi_lo"] = float(t.loc[hi, m] / t.loc[lo, m])
        out["per_impl"][impl] = entry
    if not out["per_impl"]:
        out["reason"] = "no implementation measured at both the lowest and the highest thread count"
    return out


def copy_evidence(df: pd.DataFrame) -> dict:
    """What the counters say about the copy the one-copy path removes: user-space copy bytes per message
    (as a multiple of the message) and the sender's cost per byte at the largest size."""
    tp = throughput_rows(df)
    tp = tp[tp["impl"].isin([BASE, ONE_COPY])]
    out: dict = {"have_pair": {BASE, ONE_COPY} <= set(tp["impl"])}
    if not out["have_pair"]:
        return out
    if measured(tp, "user_copy_bytes_per_message"):
        share = (tp["user_copy_bytes_per_message"] / tp["msg_size"]).groupby(tp["impl"]).mean()
        out["user_copy_share"] = {BASE: share.get(BASE), ONE_COPY: share.get(ONE_COPY)}
    cost = next((m for m in ("srv_cycles_per_byte", "srv_cpu_ns_per_byte") if measured(tp, m)), None)
    if cost:
        largest = tp["msg_size"].max()
        at_top = size_means(tp, [cost], largest)[cost]
        out.update(cost_metric=cost, largest=largest,
                   cost_at_largest={i: at_top.get(i, math.nan) for i in (BASE, ONE_COPY)})
    return out

"""The numbers behind each Part E answer, computed once from one sweep and returned explicitly.

No English here: prose.py turns these into sentences, answers.py puts both into answers.json. A
finding that cannot be computed carries "reason" (why), and nothing else is guessed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..contract import STUDY_IMPLS
from .crossover import crossover
from .significance import compare, repetition_values
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


def crossover_finding(df: pd.DataFrame, impl: str) -> Crossover:
    public = crossover(df, impl)
    pair = paired_means(df, impl, "a1")
    if pair.empty:
        have = sorted(throughput_rows(df)["impl"].unique())
        return Crossover(impl, public, have_throughput=have)
    overall = over_threads(pair)
    sizes = list(overall.index)
    public["sizes_bytes"] = [int(s) for s in sizes]
    public["ratio_to_a1_by_size"] = {str(int(s)): float(overall.loc[s, "x"] / overall.loc[s, "base"])
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
    """Where A3 is not the fastest, the COPIED share and per-side CPU at the largest size.
    Returns (public numbers, best implementation per size)."""
    tp = throughput_rows(df)
    out: dict = {"break_even_bytes": break_even}
    if "a3" not in set(tp["impl"]):
        out["reason"] = "A3 was not measured in throughput mode"
        return out, None
    by_size = tp.groupby(["msg_size", "impl"])["throughput_gbps"].mean().unstack("impl")
    best = by_size.idxmax(axis=1)
    out["best_impl_by_size"] = {str(int(s)): b for s, b in best.items()}
    out["a3_not_best_sizes"] = [int(s) for s, b in best.items() if b != "a3"]
    share = zc_copied_share(df)
    out["zc_copied_share_pct"] = None if math.isnan(share) else share
    # the completions the device sent from the user's pages (what MSG_ZEROCOPY is for)
    out["zc_not_copied_share_pct"] = None if math.isnan(share) else 100.0 - share
    out["path"] = data_path(df)
    top = zero_copy_finding(df).cpu_at_size
    if {"a2", "a3"} <= set(top.dropna().index):
        out["cpu_ns_per_byte_at_largest_size"] = {
            "msg_size": int(tp["msg_size"].max()),
            "sender": {k: float(v) for k, v in top["srv_cpu_ns_per_byte"].items()},
            "receiver": {k: float(v) for k, v in top["cli_cpu_ns_per_byte"].items()}}
        srv = top["srv_cpu_ns_per_byte"]
        if "a1" in srv.dropna().index and srv["a1"] > 0:
            out["sender_cpu_saving_vs_a1_pct_at_largest_size"] = float((1 - srv["a3"] / srv["a1"]) * 100)
    return out, best


def data_path(df: pd.DataFrame) -> str:
    """'local' when server and client shared a host (netns, loopback: the kernel copies every
    MSG_ZEROCOPY send on delivery), 'hosts' when they were two machines (topology ssh)."""
    kinds = set(df["topology"].dropna()) if "topology" in df.columns else set()
    return "hosts" if kinds == {"ssh"} else "local" if kinds and "ssh" not in kinds else "mixed" if kinds else "unknown"


CACHE_LEVELS = {"L1": "l1_misses_per_byte", "LLC": "llc_misses_per_byte"}


def q2_finding(df: pd.DataFrame, meta: dict) -> tuple[dict, str]:
    """Reduction (%) of misses per byte relative to A1, per cache level and implementation.
    Returns (public numbers, outcome): outcome is "answered", "unmeasured", "no_pairs" or
    "no_reduction"; every outcome but "answered" leaves a "reason"."""
    out: dict = {"answer": None, "reduction_pct": {}}
    tp = throughput_rows(df)
    unmeasured = [lvl for lvl, col in CACHE_LEVELS.items() if not measured(tp, col)]
    if unmeasured:
        col = "l1_misses" if "L1" in unmeasured else "llc_misses"
        out["reason"] = f"{' and '.join(unmeasured)} misses were not measured: {unmeasured_reason(df, meta, col)}"
        return out, "unmeasured"
    agg = aggregate(tp, list(CACHE_LEVELS.values())).set_index(["impl", "msg_size", "threads"])
    impls = agg.index.get_level_values("impl")
    for lvl, col in CACHE_LEVELS.items():
        for impl in ("a2", "a3"):
            if impl not in impls or "a1" not in impls:
                continue
            x, b = agg.loc[impl, col], agg.loc["a1", col]
            joined = pd.concat([x.rename("x"), b.rename("b")], axis=1, join="inner").dropna()
            joined = joined[joined["b"] > 0]
            if len(joined):
                out["reduction_pct"].setdefault(lvl, {})[impl] = float(
                    (100 * (1 - joined["x"] / joined["b"])).mean())
    mean_red = {lvl: float(np.mean(list(v.values()))) for lvl, v in out["reduction_pct"].items() if v}
    out["mean_reduction_pct"] = mean_red
    if len(mean_red) < 2:
        out["reason"] = "no size/thread point where A1 and A2 or A3 both have L1 and LLC counts"
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


def anomalies(df: pd.DataFrame) -> list[dict]:
    """Expectation violations, each with a relative magnitude and whether it is significant (the
    95% Welch interval of the shortfall over repetitions excludes zero); largest first."""
    found = []
    tp = aggregate(throughput_rows(df), "throughput_gbps")
    reps = {impl: repetition_values(df, impl) for impl in tp["impl"].unique()}

    def values(impl, threads=None, size=None):
        v = reps[impl]
        if threads is not None:
            v = v[v["threads"] == threads]
        if size is not None:
            v = v[v["msg_size"] == size]
        return v["throughput_gbps"].tolist()

    for (impl, threads), g in tp.groupby(["impl", "threads"]):
        g = g.sort_values("msg_size")
        vals = g["throughput_gbps"].to_numpy()
        sizes = g["msg_size"].to_numpy()
        for i in range(1, len(vals)):
            if vals[i - 1] > 0 and vals[i] < vals[i - 1]:
                test = compare(values(impl, threads, sizes[i]), values(impl, threads, sizes[i - 1]))
                found.append({"kind": "throughput_falls_with_size", "impl": impl,
                              "threads": int(threads), "from_size": int(sizes[i - 1]),
                              "to_size": int(sizes[i]), "from": float(vals[i - 1]),
                              "to": float(vals[i]), "magnitude": float(1 - vals[i] / vals[i - 1]),
                              "significant": test.significant_loss, "repetitions": min(test.n_x, test.n_base)})
    means = tp.set_index(["impl", "threads", "msg_size"])["throughput_gbps"]
    impls = set(means.index.get_level_values("impl"))
    if {"a1", "a2"} <= impls:
        pair = pd.concat([means.loc["a2"].rename("x"), means.loc["a1"].rename("b")], axis=1, join="inner")
        for (threads, size), r in pair.iterrows():
            if r["b"] > 0 and r["x"] < r["b"]:
                test = compare(values("a2", threads, size), values("a1", threads, size))
                found.append({"kind": "one_copy_slower", "threads": int(threads), "size": int(size),
                              "a2": float(r["x"]), "a1": float(r["b"]),
                              "magnitude": float(1 - r["x"] / r["b"]),
                              "significant": test.significant_loss, "repetitions": min(test.n_x, test.n_base)})
    by_threads = tp.groupby(["impl", "threads"])["throughput_gbps"].mean()
    for impl in sorted(set(by_threads.index.get_level_values("impl"))):
        t = by_threads.loc[impl].sort_index()
        peak = t.idxmax()
        if t.index[-1] != peak and t.max() > 0:
            per_rep = reps[impl].groupby(["threads", "rep"])["throughput_gbps"].mean().reset_index()
            at = lambda n: per_rep[per_rep["threads"] == n]["throughput_gbps"].tolist()
            test = compare(at(t.index[-1]), at(peak))
            found.append({"kind": "more_threads_slower", "impl": impl, "peak_threads": int(peak),
                          "max_threads": int(t.index[-1]), "peak": float(t.max()),
                          "at_max": float(t.iloc[-1]), "magnitude": float(1 - t.iloc[-1] / t.max()),
                          "significant": test.significant_loss, "repetitions": min(test.n_x, test.n_base)})
    return sorted(found, key=lambda a: a["magnitude"], reverse=True)


def copy_evidence(df: pd.DataFrame) -> dict:
    """What the counters say about the copy A2 removes: user-space copy bytes per message (as a
    multiple of the message) and the sender's cost per byte at the largest size."""
    tp = throughput_rows(df)
    tp = tp[tp["impl"].isin(["a1", "a2"])]
    out: dict = {"have_a1_a2": {"a1", "a2"} <= set(tp["impl"])}
    if not out["have_a1_a2"]:
        return out
    if measured(tp, "user_copy_bytes_per_message"):
        share = (tp["user_copy_bytes_per_message"] / tp["msg_size"]).groupby(tp["impl"]).mean()
        out["user_copy_share"] = {"a1": share.get("a1"), "a2": share.get("a2")}
    cost = next((m for m in ("srv_cycles_per_byte", "srv_cpu_ns_per_byte") if measured(tp, m)), None)
    if cost:
        largest = tp["msg_size"].max()
        at_top = size_means(tp, [cost], largest)[cost]
        out.update(cost_metric=cost, largest=largest,
                   cost_at_largest={"a1": at_top.get("a1", math.nan), "a2": at_top.get("a2", math.nan)})
    return out


def study_impls(df: pd.DataFrame) -> list[str]:
    return [i for i in STUDY_IMPLS if i in set(df["impl"])]

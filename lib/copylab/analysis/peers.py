"""The harness made explicit: copylab's programs against the reference programs (registry role
`reference`: a bulk sender and a ping-pong) measured in the same sweep, the receive strategy's
effect, and what makes small messages slow."""

from __future__ import annotations

import math

import pandas as pd

from .roles import STUDY, peer_for
from .stats import throughput_rows


def _medians(df: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Median over the passes per (impl, threads, msg_size) of the rows with message-sized reads (a
    reference program has few passes, and one pass taken under heavy steal would decide a mean), with the
    lowest and highest pass: over 2 passes the median is their mean, and how far apart they are is what
    one pass can move a ratio by (review-fresh3 F4)."""
    rows = df[(df["receive"].fillna("message") == "message") & df[metric].notna()]
    return rows.groupby(["impl", "threads", "msg_size"])[metric].agg(["median", "min", "max"])


def harness_ratios(df: pd.DataFrame) -> pd.DataFrame:
    """Per size (and thread count): each implementation's throughput over the bulk reference's, and
    its p50 round trip over the ping-pong reference's, each the median of its passes, with each side's
    lowest and highest pass (peer_low, peer_high; impl_low, impl_high). Empty when the sweep measured no peer."""
    rows = []
    tp = _medians(throughput_rows(df), "throughput_gbps")
    lat = _medians(df[df["mode"] == "latency"], "latency_p50_us")
    for peer, means, metric in ((peer_for("throughput"), tp, "throughput"), (peer_for("latency"), lat, "p50 round trip")):
        if peer is None or peer not in means.index.get_level_values("impl"):
            continue
        reference = means.loc[peer]
        for impl in STUDY:
            if impl not in means.index.get_level_values("impl"):
                continue
            pair = pd.concat([means.loc[impl].rename(columns={"median": "impl_value", "min": "impl_low",
                                                              "max": "impl_high"}),
                              reference.rename(columns={"median": "peer_value", "min": "peer_low", "max": "peer_high"})],
                             axis=1, join="inner").dropna()
            for (threads, size), r in pair.iterrows():
                rows.append({"peer": peer, "metric": metric, "impl": impl, "threads": int(threads),
                             "msg_size": int(size), "impl_value": float(r["impl_value"]),
                             "peer_value": float(r["peer_value"]), "peer_low": float(r["peer_low"]),
                             "peer_high": float(r["peer_high"]), "impl_low": float(r["impl_low"]),
                             "impl_high": float(r["impl_high"]),
                             "ratio": float(r["impl_value"] / r["peer_value"]) if r["peer_value"] else math.nan})
    return pd.DataFrame(rows, columns=["peer", "metric", "impl", "threads", "msg_size", "impl_value",
                                       "peer_value", "peer_low", "peer_high", "impl_low", "impl_high", "ratio"])


def receive_comparison(df: pd.DataFrame) -> pd.DataFrame:
    """Throughput with bulk reads over throughput with message-sized reads, per implementation and
    size (mean over repetitions and thread counts). Empty unless the sweep measured both."""
    tp = throughput_rows(df)
    if not {"message", "bulk"} <= set(tp["receive"].dropna()):  # other strategies: other_paths.py
        return pd.DataFrame(columns=["impl", "msg_size", "message", "bulk", "bulk_over_message"])
    means = tp.groupby(["impl", "msg_size", "threads", "receive"])["throughput_gbps"].mean().unstack("receive")
    means = means.dropna(subset=["message", "bulk"]).groupby(["impl", "msg_size"])[["message", "bulk"]].mean()
    means["bulk_over_message"] = means["bulk"] / means["message"]
    return means.reset_index()


def small_message_evidence(df: pd.DataFrame) -> pd.DataFrame:
    """At the smallest size, fewest threads, throughput mode: per implementation (and peer) the
    throughput, each side's context switches and the client's recv calls per message, the CPUs'
    busy shares and the scheduling share of each side's profile."""
    tp = throughput_rows(df)
    if tp.empty:
        return pd.DataFrame()
    size, threads = tp["msg_size"].min(), tp["threads"].min()
    at = tp[(tp["msg_size"] == size) & (tp["threads"] == threads)].copy()
    at["srv_cs_per_message"] = at["srv_context_switches"] / at["messages"]
    at["cli_cs_per_message"] = at["cli_context_switches"] / at["messages"]
    at["recv_calls_per_message"] = at["recv_calls"] / at["messages"]
    cols = ["throughput_gbps", "srv_cs_per_message", "cli_cs_per_message", "recv_calls_per_message",
            "srv_cpu_busy", "cli_cpu_busy", "srv_prof_scheduling", "cli_prof_scheduling"]
    table = at.groupby(["impl", "receive"])[cols].mean().reset_index()
    table.insert(1, "msg_size", int(size))
    table.insert(2, "threads", int(threads))
    return table

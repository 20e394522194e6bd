"""Statistics over repetitions: means with Student-t intervals, and the canonical averages
(per point, then over thread counts) that every answer, table and figure uses."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ..contract import GROUP_KEYS
from ..inference import t_quantile
from ..perf import HARDWARE_EVENTS
from .roles import STUDY, ZERO_COPY


MIN_REPS_FOR_INTERVAL = 5  # figures draw an interval from this many repetitions on, the values below it


def aggregate(df: pd.DataFrame, metrics, by=GROUP_KEYS) -> pd.DataFrame:
    """Mean, 95% CI half-width (t-distribution), n, and the 95% interval on the log scale per group.

    Columns: the keys in `by`, then <metric>, <metric>_ci, <metric>_n, <metric>_lo, <metric>_hi. A
    group with one non-missing value has a mean and no CI (NaN); an all-missing group has NaN mean.
    _lo/_hi: exp(mean(log x) ± t·sd(log x)/√n), defined where every value is positive: an interval
    that respects a ratio scale and never crosses zero (what the figures draw).
    """
    if isinstance(metrics, str):
        metrics = [metrics]
    by = list(by)
    suffixes = ("", "_ci", "_n", "_lo", "_hi")
    if df.empty:
        return pd.DataFrame(columns=by + [f"{m}{s}" for m in metrics for s in suffixes])
    grouped = df.groupby(by, sort=True)
    out = grouped.size().rename("_rows").reset_index()[by]
    for m in metrics:
        stats = grouped[m].agg(["mean", "std", "count"]).reset_index(drop=True)
        n = stats["count"].astype(int)
        tcrit = n.map(lambda k: t_quantile(k - 1) if k >= 2 else math.nan)
        out[m] = stats["mean"].to_numpy()
        out[f"{m}_ci"] = (tcrit * stats["std"] / np.sqrt(n.where(n > 0))).to_numpy()
        out[f"{m}_n"] = n.to_numpy()
        positive = pd.to_numeric(df[m], errors="coerce")
        logs = np.log(positive.where(positive > 0))
        bad = (positive <= 0).groupby([df[k] for k in by], sort=True).any().reset_index(drop=True)
        lstats = logs.groupby([df[k] for k in by], sort=True).agg(["mean", "std"]).reset_index(drop=True)
        half = tcrit * lstats["std"] / np.sqrt(n.where(n > 0))
        out[f"{m}_lo"] = np.exp(lstats["mean"] - half).where(~bad).to_numpy()
        out[f"{m}_hi"] = np.exp(lstats["mean"] + half).where(~bad).to_numpy()
    return out


def numbers(df: pd.DataFrame, column: str) -> pd.Series:
    """A column as numbers, NaN where it is absent or not a number."""
    return pd.to_numeric(df[column], errors="coerce") if column in df else pd.Series(math.nan, index=df.index)


def measured(df: pd.DataFrame, column: str) -> bool:
    """Whether any row has a value for column (a VM without PMU leaves cache misses empty)."""
    return column in df.columns and df[column].notna().any()


def unmeasured_reason(df: pd.DataFrame, meta: dict, column: str) -> str:
    """Why `column` has no values: the sweep's own note if it left one, else what we can see."""
    notes = df["counters_note"].dropna().astype(str).str.strip() if "counters_note" in df else []
    notes = [n for n in notes if n]
    if notes:
        return notes[0].rstrip(".")
    if meta.get("perf_note"):
        return str(meta["perf_note"]).rstrip(".")
    events = meta.get("perf_events") or {}
    if events and not any(events.values()):
        return "perf could count none of the requested events on this host"
    return f"the {column} column of results.csv is empty (perf counters were not recorded)"


SEE_PERF_NOTE = "perf could not count it on this host (the perf note in \"System configuration\" lists what it counted)"


NO_HARDWARE = ("perf can read no hardware performance counters here (its hardware events read <not supported>, "
               "as inside most VMs)")


def perf_gap(meta: dict) -> str:
    """Why perf counted no hardware events here, in one line, from meta.json's perf_events ('' when it
    does not say): no hardware counters at all (a VM without a virtual PMU), or the events it lacked."""
    events = meta.get("perf_events") or {}
    hardware = [e for e in HARDWARE_EVENTS if e in events]
    if hardware and not any(events[e] for e in hardware):
        return NO_HARDWARE
    missing = [e for e, ok in events.items() if not ok]
    return f"perf could not count {', '.join(missing)} on this host" if missing else ""


def unmeasured_short(df: pd.DataFrame, meta: dict, column: str) -> str:
    """unmeasured_reason said once: where it is the host's perf note (printed in full in the system
    configuration), its reason in one line; otherwise the reason itself."""
    reason = unmeasured_reason(df, meta, column)
    note = str(meta.get("perf_note") or "").rstrip(".")
    return (perf_gap(meta) or SEE_PERF_NOTE) if note and reason == note else reason


NO_COUNTERS = "this host gives perf no hardware counters, as in most VMs (‡ in the method section)"


def unmeasured_pointer(df: pd.DataFrame, meta: dict, column: str) -> str:
    """unmeasured_short where the method section has said it already (its ‡): a host without hardware counters
    is then said in a few words with a pointer; any other reason is said as unmeasured_short says it."""
    short = unmeasured_short(df, meta, column)
    return NO_COUNTERS if short == NO_HARDWARE else short


def primary_receive(df: pd.DataFrame) -> str:
    """The receive strategy the report's answers and figures use: message when measured."""
    strategies = set(df["receive"].dropna()) if "receive" in df else set()
    return "message" if "message" in strategies or not strategies else sorted(strategies)[0]


def one_receive(df: pd.DataFrame) -> pd.DataFrame:
    """The rows of the primary receive strategy (a CSV without the column counts as message): two
    strategies are two experiments, never averaged together."""
    if "receive" not in df:
        return df
    return df[df["receive"].fillna("message") == primary_receive(df)]


def study_rows(df: pd.DataFrame) -> pd.DataFrame:
    """The rows of the study's roles (two_copy, one_copy, zero_copy: not the peers' nor the extra send
    paths') with the primary receive strategy: what Part E compares."""
    df = one_receive(df)
    return df[df["impl"].isin(STUDY)]


def throughput_rows(df: pd.DataFrame) -> pd.DataFrame:
    return df[df["mode"] == "throughput"]


def point_means(df: pd.DataFrame, metric: str = "throughput_gbps") -> pd.Series:
    """Mean over repetitions per (impl, threads, msg_size), throughput mode, measured values only."""
    tp = throughput_rows(df)
    tp = tp[tp[metric].notna()]
    return tp.groupby(["impl", "threads", "msg_size"])[metric].mean()


def paired_means(df: pd.DataFrame, impl: str, base: str) -> pd.DataFrame:
    """Mean throughput of impl ("x") and base at every (threads, msg_size) both were measured at."""
    means = point_means(df)
    levels = means.index.get_level_values("impl")
    if impl not in levels or base not in levels:
        return pd.DataFrame(columns=["threads", "msg_size", "x", "base"])
    pair = pd.concat([means.loc[impl].rename("x"), means.loc[base].rename("base")],
                     axis=1, join="inner")
    return pair.reset_index()


def over_threads(pair: pd.DataFrame) -> pd.DataFrame:
    """A paired table averaged over thread counts: one row per message size (sorted)."""
    return pair.groupby("msg_size")[["x", "base"]].mean().sort_index()


def size_means(df: pd.DataFrame, metrics, size=None) -> pd.DataFrame:
    """Throughput-mode mean of each metric per implementation (rows) at one size, over its rows."""
    tp = throughput_rows(df)
    if size is not None:
        tp = tp[tp["msg_size"] == size]
    return tp.groupby("impl")[list(metrics)].mean()


def zc_copied_share(df: pd.DataFrame) -> float:
    """Share (%) of the zero-copy implementation's completions, throughput mode, the kernel flagged
    COPIED; NaN if none."""
    zc = throughput_rows(df)
    zc = zc[zc["impl"] == ZERO_COPY]
    total = numbers(zc, "zc_completions").sum()
    return float(numbers(zc, "zc_copied").sum() / total * 100) if total > 0 else math.nan


def reps_per_point(df: pd.DataFrame) -> pd.Series:
    """Number of repetitions measured per point."""
    return df.groupby(list(GROUP_KEYS))["rep"].nunique()

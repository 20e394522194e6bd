"""Two states in one cell's runs: whether the throughput runs of a path at one size, measured alike,
fall into two separate states of which CPU is the busier (the receiver's busy share minus the
sender's), and what each state is (its busy shares, throughput and each side's CPU per byte).

A cell pools its thread counts, as the by-size decisions do. The test is Engelman and Hartigan's:
the best split of the runs' busy differences in two (intervals.best_splits) leaves a share of their
spread within the groups; its p is the share of normal samples of the same size whose best split
leaves as little (NULL_DRAWS seeded draws, so a report is reproducible), and Holm's correction runs
over every cell tested. A split counts only when each state has MIN_STATE_RUNS runs or more (one
outlying run is no state), the states are apart (the gap between them at least the larger state's
standard deviation: a flat spread, which splits cleanly against a normal null, has no such gap), and
some thread count has runs in both: states that follow the thread count are a thread effect (Q3),
not two states of the same settings. The Study calls this once
(study.py); the explanation that words it is explain.two_states.

A cell's runs can also move work between the sides along a continuum, with no gap to split at (A3 at
64 KiB in the fresh sweep of issue 33: a p of 0.02 before Holm's correction over 15 cells, the gap
between the best split's groups smaller than the receiver-busy group's spread). side_trades finds
those: the runs' sender and receiver CPU per byte correlate negatively (Pearson's r, its 95%
interval below 0, Holm's correction over the cells tested) while their sum varies less than either
side, so the same work changes sides instead of growing. Shared noise in the bytes moved makes the
two positively correlated, so a negative r is not the measurement's artefact. The explanation is
explain.side_trade."""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..intervals import BIMODAL_MIN_SHARE, best_splits
from .decisions import ALPHA, holm
from .stats import throughput_rows

NULL_DRAWS = 4000
MIN_STATE_RUNS = 3
MIN_RUNS = 2 * MIN_STATE_RUNS


@dataclass(frozen=True)
class State:
    """The runs of one state: how many, at which thread counts, and their means."""

    runs: int
    threads: tuple
    sender_busy: float
    receiver_busy: float
    gbps: float
    sender_ns_per_byte: float
    receiver_ns_per_byte: float

    def to_dict(self) -> dict:
        return {**self.__dict__, "threads": list(self.threads)}


@dataclass
class TwoStates:
    """One cell's runs split in two: sender_busier (the lower busy differences) and receiver_busier;
    gbps_ratio: receiver_busier's throughput over sender_busier's (geometric means, Welch's 95% interval)."""

    impl: str
    size: int
    runs: int
    p: float
    p_holm: float
    sender_busier: State
    receiver_busier: State
    gbps_ratio: tuple = (math.nan, math.nan, math.nan)

    @property
    def both_at(self) -> tuple:
        """The thread counts with runs in both states."""
        return tuple(sorted(set(self.sender_busier.threads) & set(self.receiver_busier.threads)))

    def to_dict(self) -> dict:
        return {"impl": self.impl, "msg_size": self.size, "runs": self.runs, "p": self.p, "p_holm": self.p_holm,
                "both_at_threads": list(self.both_at), "sender_busier": self.sender_busier.to_dict(),
                "receiver_busier": self.receiver_busier.to_dict(), "gbps_ratio": list(self.gbps_ratio)}


@functools.lru_cache(maxsize=64)
def _null(n: int) -> np.ndarray:
    """Engelman-Hartigan's statistic of NULL_DRAWS normal samples of n values (sorted)."""
    rng = np.random.default_rng(20240101 + n)
    return np.sort(best_splits(rng.normal(size=(NULL_DRAWS, n)))[1])


def split_p(values) -> tuple[int, float]:
    """(k, p): the best split of values in two (the lowest k sorted values against the rest) and the
    share of unimodal (normal) samples of as many values whose best split is as clean."""
    v = np.asarray(values, float)
    k, ratio = best_splits(v)
    null = _null(len(v))
    return int(k[0]), (1 + np.searchsorted(null, ratio[0], side="right")) / (1 + len(null))


def _state(rows: pd.DataFrame) -> State:
    mean = lambda c: float(pd.to_numeric(rows[c], errors="coerce").mean()) if c in rows else math.nan
    per_byte = lambda c: (float((pd.to_numeric(rows[c], errors="coerce") * 1e6 / rows["bytes"]).mean())
                          if c in rows else math.nan)
    return State(len(rows), tuple(sorted(int(t) for t in set(rows["threads"]))), mean("srv_cpu_busy"),
                 mean("cli_cpu_busy"), mean("throughput_gbps"), per_byte("srv_task_clock_ms"),
                 per_byte("cli_task_clock_ms"))


def _gbps_ratio(high: pd.DataFrame, low: pd.DataFrame) -> tuple[float, float, float]:
    a, b = (np.log(pd.to_numeric(r["throughput_gbps"], errors="coerce").dropna()) for r in (high, low))
    if len(a) < 2 or len(b) < 2:
        return math.nan, math.nan, math.nan
    import scipy.stats as sps  # here: importing the analysis (a refusal of bad input too) skips scipy

    ci = sps.ttest_ind(a, b, equal_var=False).confidence_interval(1 - ALPHA)
    return float(math.exp(a.mean() - b.mean())), float(math.exp(ci.low)), float(math.exp(ci.high))


def _candidate(rows: pd.DataFrame) -> tuple[float, pd.Series, bool] | None:
    """(p, in_receiver_busier_state per row, whether the two states have enough runs and lie apart) of
    one cell, or None when it has too few runs to be tested."""
    if not {"srv_cpu_busy", "cli_cpu_busy"} <= set(rows):  # a sweep without the busy shares: nothing to split on
        return None
    rows = rows.dropna(subset=["srv_cpu_busy", "cli_cpu_busy"])
    if len(rows) < MIN_RUNS:
        return None
    diff = (rows["cli_cpu_busy"] - rows["srv_cpu_busy"]).astype(float)
    if diff.max() == diff.min():
        return None
    k, p = split_p(diff)
    order = np.sort(diff.to_numpy())
    high = diff > (order[k - 1] + order[k]) / 2
    enough = min(k, len(rows) - k) >= max(MIN_STATE_RUNS, math.ceil(BIMODAL_MIN_SHARE * len(rows)))
    apart = enough and order[k] - order[k - 1] >= max(order[:k].std(ddof=1), order[k:].std(ddof=1))
    return p, high, apart


def two_state_splits(df: pd.DataFrame) -> dict[tuple[str, int], TwoStates]:
    """(impl, size) -> TwoStates for every throughput cell whose runs fall in two states (see the module)."""
    tp = throughput_rows(df)
    tested = []
    for (impl, size), rows in tp.groupby(["impl", "msg_size"]):
        found = _candidate(rows)
        if found is not None:
            tested.append((impl, int(size), rows.loc[found[1].index], *found))
    # every cell tested counts in the correction, those whose best split is no pair of states too
    adjusted = holm([t[3] for t in tested])
    out = {}
    for (impl, size, rows, p, high, apart), p_holm in zip(tested, adjusted):
        states = {flag: rows[high == flag] for flag in (False, True)}
        mixed = set(states[False]["threads"]) & set(states[True]["threads"])
        if apart and p_holm < ALPHA and mixed:
            out[(impl, size)] = TwoStates(impl, size, len(rows), float(p), float(p_holm), _state(states[False]),
                                          _state(states[True]), _gbps_ratio(states[True], states[False]))
    return out


@dataclass
class SideTrade:
    """One cell's runs whose sender and receiver CPU per byte trade places (see the module): r with its
    95% interval and Holm-adjusted p, each side's and their sum's standard deviation, and the mean
    ns/B of each side and of the sum per thread count."""

    impl: str
    size: int
    runs: int
    r: float
    r_interval: tuple
    p_holm: float
    sd: dict            # "sender", "receiver", "sum" -> standard deviation of the runs' ns/B
    by_threads: dict    # threads -> {"sender", "receiver", "sum"} mean ns/B

    def to_dict(self) -> dict:
        return {"impl": self.impl, "msg_size": self.size, "runs": self.runs, "r": self.r,
                "r_interval": list(self.r_interval), "p_holm": self.p_holm, "sd": self.sd,
                "by_threads": {str(t): v for t, v in self.by_threads.items()}}


def side_trades(df: pd.DataFrame) -> dict[tuple[str, int], SideTrade]:
    """(impl, size) -> SideTrade for every throughput cell whose runs move CPU per byte between the sides."""
    import scipy.stats as sps  # here: importing the analysis (a refusal of bad input too) skips scipy

    tp = throughput_rows(df)
    sides = {"sender": "srv_cpu_ns_per_byte", "receiver": "cli_cpu_ns_per_byte"}
    if not set(sides.values()) <= set(tp):
        return {}
    tested = []
    for (impl, size), rows in tp.groupby(["impl", "msg_size"]):
        rows = rows.dropna(subset=list(sides.values()))
        a, b = (rows[c].astype(float) for c in sides.values())
        if len(rows) < MIN_RUNS or a.nunique() < 2 or b.nunique() < 2:
            continue
        found = sps.pearsonr(a, b)
        tested.append((impl, int(size), rows, found, found.confidence_interval(1 - ALPHA)))
    out = {}
    for (impl, size, rows, found, ci), p_holm in zip(tested, holm([t[3].pvalue for t in tested])):
        ns = rows[list(sides.values())].set_axis(list(sides), axis=1).astype(float)
        ns["sum"] = ns["sender"] + ns["receiver"]
        sd = {k: float(v) for k, v in ns.std(ddof=1).items()}
        if ci.high < 0 and p_holm < ALPHA and sd["sum"] < min(sd["sender"], sd["receiver"]):
            means = ns.groupby(rows["threads"].astype(int)).mean()
            out[(impl, size)] = SideTrade(impl, size, len(rows), float(found.statistic), (float(ci.low), float(ci.high)),
                                          float(p_holm), sd, {int(t): {k: float(v) for k, v in m.items()}
                                                              for t, m in means.iterrows()})
    return out

"""A run's interval series: what happened inside its window, not just its total.

Every runner turns its program's own per-interval output (copylab's client bins, a peer's own
intervals or per-packet log) into one Series; summarise() gives the columns of the row:
how variable the window was (interval_cv) and whether its intervals fall into two separated levels
(bimodal: the system switched between modes while it was measured).

Bimodality: Hartigan's dip test (the diptest package) rejects unimodality of the window's interval
values at BIMODAL_P, and the best split of them in two (the optimal 2-means split of sorted values,
exact in 1-D) leaves at least BIMODAL_MIN_SHARE on each side; the two groups' means are the levels.
The dip test is conservative with the 10-40 intervals of a window (about 0.2% false alarms on normal
data at n=20), so a flagged run really switched between two modes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import diptest
import numpy as np

BIMODAL_P = 0.05
BIMODAL_MIN_SHARE = 0.15
MIN_INTERVALS = 6  # fewer whole intervals in a window say nothing about its shape


@dataclass
class Series:
    """Values per interval from the program's start: Gbit/s (throughput) or mean round trip in µs
    (latency); window_first/window_last index the whole intervals inside the measured window."""

    interval_s: float
    values: list[float] = field(default_factory=list)
    counts: list[float] = field(default_factory=list)  # latency: round trips per interval
    window_first: int = 0
    window_last: int = -1  # inclusive; -1 with window_first 0: no whole interval in the window
    # a run of several rounds (the client's --rounds): each later round's (first, last), its series
    # following the one before in values
    later_windows: list[tuple[int, int]] = field(default_factory=list)

    def windows(self) -> list[list[float]]:
        """Each round's whole intervals inside its window."""
        return [[v for v in self.values[first:last + 1] if v == v]
                for first, last in [(self.window_first, self.window_last), *self.later_windows]]

    def window(self) -> list[float]:
        return [v for values in self.windows() for v in values]

    def to_dict(self) -> dict:
        return {"interval_s": self.interval_s, "values": self.values, "counts": self.counts,
                "window_first": self.window_first, "window_last": self.window_last,
                "later_windows": [list(w) for w in self.later_windows]}


def whole_intervals(interval_s: float, start_s: float, end_s: float) -> tuple[int, int]:
    """Indexes (first, last) of the intervals lying wholly inside [start_s, end_s)."""
    first = math.ceil(start_s / interval_s - 1e-9)
    last = math.floor(end_s / interval_s + 1e-9) - 1
    return first, last


def round_windows(interval_s: float, lengths: list[int], warmups_s: list[float], window_s: float) -> list[tuple[int, int]]:
    """(first, last) of each round's whole intervals inside its window, the rounds' series one after
    another (lengths intervals each, its window opening warmups_s after its start)."""
    out, offset = [], 0
    for length, warmup in zip(lengths, warmups_s):
        first, last = whole_intervals(interval_s, warmup, warmup + window_s)
        out.append((offset + first, offset + min(last, length - 1)))
        offset += length
    return out


def from_bytes(interval_s: float, bytes_per_interval: list, window_start_s: float, duration_s: float,
               rounds: list[tuple[int, int]] | None = None) -> Series:
    """Throughput series (Gbit/s) from bytes per interval; rounds: each round's window (round_windows)."""
    values = [b * 8 / interval_s / 1e9 for b in bytes_per_interval]
    if rounds:
        return Series(interval_s, values, [], *rounds[0], later_windows=rounds[1:])
    first, last = whole_intervals(interval_s, window_start_s, window_start_s + duration_s)
    return Series(interval_s, values, [], first, min(last, len(values) - 1))


def from_round_trips(interval_s: float, counts: list, means_us: list, window_start_s: float,
                     duration_s: float, rounds: list[tuple[int, int]] | None = None) -> Series:
    values = [math.nan if m is None else float(m) for m in means_us]
    if rounds:
        return Series(interval_s, values, [float(c) for c in counts], *rounds[0], later_windows=rounds[1:])
    first, last = whole_intervals(interval_s, window_start_s, window_start_s + duration_s)
    return Series(interval_s, values, [float(c) for c in counts], first, min(last, len(values) - 1))


def best_splits(samples) -> tuple[np.ndarray, np.ndarray]:
    """For each row of samples: (k, within/total) of its best split in two by 2-means (exact in 1-D:
    the lowest k sorted values against the rest), within/total the share of the row's sum of squares
    left within the two groups (Engelman and Hartigan's statistic: small when the values fall in two
    separated groups). Rows need at least 2 values, not all equal."""
    v = np.sort(np.atleast_2d(np.asarray(samples, float)), axis=1)
    n = v.shape[1]
    total_sum, total_sq = np.cumsum(v, axis=1), np.cumsum(v * v, axis=1)
    k = np.arange(1, n)
    lo_sum, lo_sq = total_sum[:, :-1], total_sq[:, :-1]
    hi_sum, hi_sq = total_sum[:, -1:] - lo_sum, total_sq[:, -1:] - lo_sq
    within = (lo_sq - lo_sum ** 2 / k) + (hi_sq - hi_sum ** 2 / (n - k))
    best = within.argmin(axis=1)
    total = total_sq[:, -1] - total_sum[:, -1] ** 2 / n
    return best + 1, within[np.arange(len(v)), best] / total


def two_levels(values: list[float]) -> tuple[float, float, float] | None:
    """(low mean, high mean, high share) of the best 2-means split; None if too few or all equal."""
    v = np.sort(np.asarray(values, float))
    n = len(v)
    if n < MIN_INTERVALS or v[-1] == v[0]:
        return None
    k = int(best_splits(v)[0][0])
    return float(v[:k].mean()), float(v[k:].mean()), (n - k) / n


def summarise(series: Series | None) -> dict:
    """The row's columns from a series: interval_s, intervals, interval_cv, bimodal and the levels."""
    out = {"interval_s": math.nan, "intervals": math.nan, "interval_cv": math.nan, "bimodal": "",
           "level_low": math.nan, "level_high": math.nan, "level_high_share": math.nan}
    if series is None:
        return out
    rounds = series.windows()
    window = [v for values in rounds for v in values]
    out.update(interval_s=series.interval_s, intervals=len(window))
    cv = within_cv(rounds)
    if cv is not None:
        out["interval_cv"] = cv
    tested = [values for values in rounds if len(values) >= MIN_INTERVALS]
    if not tested:
        return out
    out["bimodal"] = False
    for values in tested:  # a round that switched between two levels inside its window
        levels = two_levels(values)
        if (levels is not None and BIMODAL_MIN_SHARE <= levels[2] <= 1 - BIMODAL_MIN_SHARE
                and diptest.diptest(np.asarray(values, float))[1] < BIMODAL_P):
            out.update(bimodal=True, level_low=levels[0], level_high=levels[1], level_high_share=levels[2])
            break
    return out


def within_cv(rounds: list[list[float]]) -> float | None:
    """The intervals' spread within the windows: the pooled standard deviation of each round's
    intervals about that round's own mean, over the mean (one round: its plain CV). The levels the
    rounds settle at differ; that is the spread between connections, not within a window."""
    usable = [np.asarray(v, float) for v in rounds if len(v) >= 2]
    dof = sum(len(v) - 1 for v in usable)
    mean = float(np.mean(np.concatenate(usable))) if usable else 0.0
    if not dof or mean <= 0:
        return None
    pooled = sum(float(((v - v.mean()) ** 2).sum()) for v in usable) / dof
    return math.sqrt(pooled) / mean

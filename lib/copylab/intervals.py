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

    def window(self) -> list[float]:
        return [v for v in self.values[self.window_first:self.window_last + 1] if v == v]

    def to_dict(self) -> dict:
        return {"interval_s": self.interval_s, "values": self.values, "counts": self.counts,
                "window_first": self.window_first, "window_last": self.window_last}


def whole_intervals(interval_s: float, start_s: float, end_s: float) -> tuple[int, int]:
    """Indexes (first, last) of the intervals lying wholly inside [start_s, end_s)."""
    first = math.ceil(start_s / interval_s - 1e-9)
    last = math.floor(end_s / interval_s + 1e-9) - 1
    return first, last


def from_bytes(interval_s: float, bytes_per_interval: list, window_start_s: float, duration_s: float) -> Series:
    """Throughput series (Gbit/s) from bytes per interval."""
    values = [b * 8 / interval_s / 1e9 for b in bytes_per_interval]
    first, last = whole_intervals(interval_s, window_start_s, window_start_s + duration_s)
    return Series(interval_s, values, [], first, min(last, len(values) - 1))


def from_round_trips(interval_s: float, counts: list, means_us: list, window_start_s: float,
                     duration_s: float) -> Series:
    values = [math.nan if m is None else float(m) for m in means_us]
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
    window = series.window()
    out.update(interval_s=series.interval_s, intervals=len(window))
    if len(window) >= 2 and np.mean(window) > 0:
        out["interval_cv"] = float(np.std(window, ddof=1) / np.mean(window))
    if len(window) < MIN_INTERVALS:
        return out
    levels = two_levels(window)
    bimodal = (levels is not None and BIMODAL_MIN_SHARE <= levels[2] <= 1 - BIMODAL_MIN_SHARE
               and diptest.diptest(np.asarray(window, float))[1] < BIMODAL_P)
    out["bimodal"] = bool(bimodal)
    if bimodal:
        out.update(level_low=levels[0], level_high=levels[1], level_high_share=levels[2])
    return out

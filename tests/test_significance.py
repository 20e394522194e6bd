"""The significance rule (docs/contracts.md, "Significance") on SYNTHETIC tables with known answers.

X wins significantly at a size when the 95% Welch interval of mean(X) - mean(A1) over the
repetitions lies above zero; the significant crossover is the smallest size from which that holds
there and at every larger size; null when not at the largest size or with fewer than 2 repetitions.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from copylab.analysis import significance as sig

SIZES = (64, 1024, 16384, 65536)
THREADS = (1, 4)


def table(delta_by_size: dict, reps: int = 4, noise: float = 0.02, seed: int = 1, threads=THREADS) -> pd.DataFrame:
    """A1 at 10 Gbit/s everywhere; X = A1 + delta[size] (Gbit/s); independent noise per repetition."""
    rng = np.random.default_rng(seed)
    rows = []
    for impl in ("a1", "a2"):
        for size in SIZES:
            for t in threads:
                for rep in range(reps):
                    value = 10.0 + (delta_by_size[size] if impl == "a2" else 0.0) + rng.normal(0, noise)
                    rows.append({"impl": impl, "mode": "throughput", "msg_size": size, "threads": t, "rep": rep,
                                 "throughput_gbps": value})
    return pd.DataFrame(rows)


@pytest.mark.parametrize("deltas,expected", [
    ({64: -1.0, 1024: 1.0, 16384: 1.0, 65536: 1.0}, 1024),        # clearly real from 1 KiB on
    ({64: 1.0, 1024: -1.0, 16384: 1.0, 65536: 1.0}, 16384),       # a win that does not last is not the crossover
    ({64: -1.0, 1024: -1.0, 16384: -1.0, 65536: 1.0}, 65536),     # a win only at the largest size
    ({64: 1.0, 1024: 1.0, 16384: 1.0, 65536: -1.0}, None),        # a win that stops before the largest size
    ({64: 0.0, 1024: 0.0, 16384: 0.0, 65536: 0.0}, None),         # ties
    ({64: -0.5, 1024: 0.003, 16384: 0.003, 65536: 0.003}, None),  # within the noise
])
def test_significant_crossover_follows_the_rule(deltas, expected):
    doc = sig.significance_answer(table(deltas), "a2")
    assert doc["significant_crossover_bytes"] == expected
    assert doc["significant_per_threads"] == {str(t): expected for t in THREADS}
    assert doc["repetitions"] == 4


def test_one_repetition_gives_no_significant_crossover():
    doc = sig.significance_answer(table({s: 5.0 for s in SIZES}, reps=1), "a2")
    assert doc["significant_crossover_bytes"] is None
    assert set(doc["significant_per_threads"].values()) == {None}
    one = doc["ratio_ci_by_size"]["65536"]
    assert one["n_x"] == 1 and math.isnan(one["diff_low"]) and one["significant"] is False


def test_exact_ties_without_spread_are_not_wins():
    rows = table({s: 0.0 for s in SIZES}, noise=0.0)
    assert sig.significance_answer(rows, "a2")["significant_crossover_bytes"] is None


def test_overall_uses_each_repetitions_mean_over_thread_counts():
    """Per repetition, the thread counts are averaged first: those means are the samples."""
    df = table({s: 1.0 for s in SIZES}, reps=3, threads=(1, 2, 8))
    found = sig.comparisons(df, "a2")
    c = found["overall"][65536]
    at = df[df["msg_size"] == 65536]
    x = at[at["impl"] == "a2"].groupby("rep")["throughput_gbps"].mean()
    b = at[at["impl"] == "a1"].groupby("rep")["throughput_gbps"].mean()
    expected = sps.ttest_ind(x, b, equal_var=False).confidence_interval(0.95)
    assert (c.n_x, c.n_base) == (3, 3)
    assert c.diff_low == pytest.approx(expected.low) and c.diff_high == pytest.approx(expected.high)
    assert c.ratio == pytest.approx(x.mean() / b.mean())


def test_fieller_interval_holds_the_ratio_and_is_undefined_near_a_zero_baseline():
    x, base = [11.0, 11.2, 10.8, 11.1], [10.0, 10.1, 9.9, 10.05]
    low, high = sig.fieller(x, base)
    assert low < np.mean(x) / np.mean(base) < high and 1.0 < low
    assert all(math.isnan(v) for v in sig.fieller([1.0, 2.0, 3.0], [0.1, -0.1, 0.05]))


def test_welch_matches_scipy():
    x, base = [5.1, 5.3, 4.9, 5.2], [4.0, 4.4, 3.9]
    diff, low, high = sig.welch(x, base)
    ci = sps.ttest_ind(x, base, equal_var=False).confidence_interval(0.95)
    assert diff == pytest.approx(np.mean(x) - np.mean(base)) and (low, high) == pytest.approx((ci.low, ci.high))

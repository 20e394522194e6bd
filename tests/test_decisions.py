"""analysis/decisions.py: a decision for every comparison (through the Study, analysis/study.py, the only
place the report decides), on synthetic results with known answers."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from copylab import contract
from copylab.analysis.decisions import ALPHA, Outcome, classify, point_stats, target_half_width
from copylab.analysis.load import load_results
from copylab.analysis.study import study
from copylab.analysis.text.answers import answers

SIZES = (64, 1024, 4096, 16384, 65536)
THREADS = (1, 2, 4, 8)
QUIET, NOISY = 0.02, 0.45  # log-scale spread of one run

# the true ratio to A1 of each size, and which (size, threads) cells are noisy
TRUTH = {
    "a2": {64: 0.60, 1024: 1.005, 4096: 1.30, 16384: 1.06, 65536: 1.0},
    "a3": {64: 0.40, 1024: 0.99, 4096: 0.97, 16384: 1.25, 65536: 1.50},
}
NOISY_CELLS = {("a2", 16384, t) for t in THREADS} | {("a2", 65536, 8)}
EXPECTED = {
    "a2": {"64": "loss", "1024": "equivalent", "4096": "win", "16384": "undecided", "65536": "undecided"},
    "a3": {"64": "loss", "1024": "equivalent", "4096": "equivalent", "16384": "win", "65536": "win"},
}


def synthetic(passes: int = 5, seed: int = 11, pass_spread: float = 0.08) -> pd.DataFrame:
    """Throughput rows of a1/a2/a3 over the grid, each pass shifted as a whole (the host's state)."""
    rng = np.random.default_rng(seed)
    rows = []
    for rep in range(passes):
        shift = rng.normal(0, pass_spread)
        for size in SIZES:
            for threads in THREADS:
                base = 10.0 * (1 + size / 65536)
                for impl in ("a1", "a2", "a3"):
                    ratio = 1.0 if impl == "a1" else TRUTH[impl][size]
                    spread = NOISY if (impl, size, threads) in NOISY_CELLS else QUIET
                    value = base * ratio * math.exp(shift + rng.normal(0, spread))
                    rows.append({"impl": impl, "mode": "throughput", "msg_size": size, "threads": threads,
                                 "rep": rep, "status": "ok", "receive": "message", "throughput_gbps": value,
                                 "bytes": value * 1e9 / 8, "duration_s": 1.0})
    return pd.DataFrame(rows).reindex(columns=list(contract.COLUMNS))


def decide(rows: pd.DataFrame, impl: str, base: str) -> dict:
    """The Study's decisions of impl against base."""
    return study(rows, {}).compare(impl, base)


def answers_of(frame: pd.DataFrame, folder, meta: dict | None = None) -> dict:
    """answers.json as the report computes it: results.csv written, loaded and analysed."""
    frame.to_csv(folder / "results.csv", index=False)
    if meta is not None:
        (folder / "meta.json").write_text(__import__("json").dumps(meta))
    df, loaded = load_results(folder)
    return answers(df, loaded)


@pytest.mark.slow
@pytest.mark.parametrize("seed", [11, 12, 13])
def test_answers_decide_every_size_exactly(seed, tmp_path):
    doc = answers_of(synthetic(seed=seed), tmp_path, {"params": {"equivalence_margin": 0.10}})
    for impl, key in (("a2", "q4_one_copy_vs_two_copy"), ("a3", "q5_zero_copy_vs_two_copy")):
        assert doc[key]["equivalence_margin"] == 0.10
        assert doc[key]["decision_by_size"] == EXPECTED[impl], (impl, doc[key]["decision_detail_by_size"])
    assert doc["q5_zero_copy_vs_two_copy"]["decided_crossover_bytes"] == 16384
    assert doc["q4_one_copy_vs_two_copy"]["decided_crossover_bytes"] is None  # undecided at the largest size


def test_a_noisy_cell_keeps_its_own_spread_among_quiet_ones():
    per_threads = decide(synthetic(), "a2", "a1")["per_threads"]
    assert per_threads[8][65536].decision == "undecided"
    assert all(per_threads[t][65536].decision == "equivalent" for t in (1, 2, 4))
    # pooled, the noisy cell's interval would shrink to its quiet neighbours' width
    noisy, quiet = per_threads[8][65536], per_threads[1][65536]
    assert noisy.half_width > 5 * quiet.half_width


def test_undecided_says_how_many_more_passes_would_decide():
    by_size = decide(synthetic(), "a2", "a1")["by_size"]
    undecided = by_size[16384]
    assert undecided.decision == "undecided"
    assert undecided.passes_needed is None or undecided.passes_needed >= 1
    assert all(d.passes_needed is None for d in by_size.values() if d.decision != "undecided")


@pytest.mark.slow
def test_a_pass_that_ran_faster_does_not_blur_the_comparison(tmp_path):
    # every pass shifted by up to +-40%: blocked by pass, the ties within 1% stay equivalent
    doc = answers_of(synthetic(pass_spread=0.4, seed=5), tmp_path)
    assert doc["q5_zero_copy_vs_two_copy"]["decision_by_size"]["1024"] == "equivalent"
    unblocked = point_stats(synthetic(pass_spread=0.4, seed=5), block=False)
    blocked = point_stats(synthetic(pass_spread=0.4, seed=5))
    assert blocked["var"].median() < unblocked["var"].median() / 10


@pytest.mark.slow
def test_one_pass_decides_nothing(tmp_path):
    doc = answers_of(synthetic(passes=1), tmp_path)
    assert set(doc["q4_one_copy_vs_two_copy"]["decision_by_size"].values()) == {"undecided"}


@pytest.mark.parametrize("low,high,expected", [
    (1.02, 1.08, "equivalent"),     # above 1 but inside the margin: equivalence wins
    (1.05, 1.20, "win"),
    (0.70, 0.95, "loss"),
    (0.92, 1.05, "equivalent"),
    (0.85, 1.05, "undecided"),
    (0.95, 1.15, "undecided"),
    (math.nan, math.nan, "undecided"),
    (1 / 1.1, 1.1, "equivalent"),   # the margin's edges are inside
])
def test_classify(low, high, expected):
    assert classify(low, high, 0.10) == expected


def test_the_target_width_always_decides():
    margin = 0.10
    half = target_half_width(margin)
    for centre in np.linspace(-0.3, 0.3, 601):
        assert classify(math.exp(centre - half), math.exp(centre + half), margin) != "undecided"


def test_two_sweeps_contradict_only_where_both_decided_differently():
    from copylab.analysis.decisions import contradictions

    first = {"q4_one_copy_vs_two_copy": {"decision_by_size": {"64": "loss", "1024": "win", "4096": "undecided"},
                                         "decision_per_threads": {"1": {"64": "loss"}}},
             "q5_zero_copy_vs_two_copy": {"decision_by_size": {"64": "equivalent"}}}
    second = {"q4_one_copy_vs_two_copy": {"decision_by_size": {"64": "loss", "1024": "equivalent", "4096": "win"},
                                          "decision_per_threads": {"1": {"64": "win"}}},
              "q5_zero_copy_vs_two_copy": {"decision_by_size": {"64": "undecided"}}}
    found = contradictions(first, second)
    assert [(c["question"][:2], c["threads"], c["size"], c["first"], c["second"]) for c in found] == [
        ("q4", "all", 1024, "win", "equivalent"), ("q4", "1", 64, "loss", "win")]
    assert contradictions(first, first) == []


def test_runs_of_one_block_are_compared_with_each_other():
    """The host's state drifts over seconds: a shift shared by a cell's runs of one pass (they ran
    back to back) cancels in the paired differences; taken apart, the same runs decide nothing."""
    rng = np.random.default_rng(3)
    rows = []
    for rep in range(4):
        for size in SIZES:
            for threads in THREADS:
                shift = rng.normal(0, 0.15)  # the block's common state
                for impl, ratio in (("a1", 1.0), ("a2", 1.03)):
                    rows.append({"impl": impl, "mode": "throughput", "msg_size": size, "threads": threads,
                                 "rep": rep, "status": "ok",
                                 "throughput_gbps": 5.0 * ratio * math.exp(shift + rng.normal(0, 0.01))})
    paired = pd.DataFrame(rows)
    by_size = decide(paired, "a2", "a1")["by_size"]
    assert {d.decision for d in by_size.values()} == {"equivalent"}
    assert all(0.99 < d.low and d.high < 1.07 for d in by_size.values())
    # the same values with the pairing lost (A2's passes renumbered): every interval is wide
    apart = paired.assign(rep=[r + 10 if i == "a2" else r for i, r in zip(paired["impl"], paired["rep"])])
    assert {d.decision for d in decide(apart, "a2", "a1")["by_size"].values()} == {"undecided"}


@pytest.mark.parametrize("seed", [11, 12])
def test_each_decisions_p_agrees_with_its_interval(seed):
    """One test per comparison: the p-value a family's correction adjusts is the interval's own, so a
    win or a loss has p below ALPHA exactly when its interval excludes 1, an equivalence its
    equivalence p exactly when the interval lies inside the margin."""
    s = study(synthetic(seed=seed), {})
    decisions = [d for found in s.comparisons.values() for by in [found["by_size"], *found["per_threads"].values()]
                 for d in by.values() if d.low == d.low]
    assert len(decisions) > 50
    for d in decisions:
        excludes_one = d.low > 1 or d.high < 1
        inside = d.low >= 1 / (1 + d.margin) and d.high <= 1 + d.margin
        if abs(d.low - 1) > 1e-9 and abs(d.high - 1) > 1e-9:
            assert (d.p < ALPHA) == excludes_one, d
        assert (d.p_equivalence < ALPHA) == inside or min(abs(d.low * (1 + d.margin) - 1),
                                                           abs(d.high - 1 - d.margin)) < 1e-9, d
        assert (d.decision == Outcome.EQUIVALENT) == inside

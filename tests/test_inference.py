"""copylab/inference: a decision for every comparison (through the Study, analysis/study.py, the only
place the report decides), on synthetic results with known answers; the outcome categories at the
margin's edges (issue 50) and Holm's correction."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from copylab import contract
from copylab.analysis.document import document
from copylab.analysis.load import load_results
from copylab.analysis.study import study
from copylab.inference import ALPHA, Decision, Family, Outcome, Verdict, classify, crossover, point_stats, \
    target_half_width

SIZES = (64, 1024, 4096, 16384, 65536)
THREADS = (1, 2, 4, 8)
QUIET, NOISY = 0.02, 0.45  # log-scale spread of one run

# the true ratio to A1 of each size, and which (size, threads) cells are noisy
TRUTH = {
    "a2": {64: 0.60, 1024: 1.005, 4096: 1.30, 16384: 1.06, 65536: 1.0},
    "a3": {64: 0.40, 1024: 0.99, 4096: 0.97, 16384: 1.25, 65536: 1.50},
}
NOISY_CELLS = {("a2", 16384, t) for t in THREADS} | {("a2", 65536, 8)}
# within the margin: equivalent, or decided higher/lower by less than the margin (the same verdict for issue 50)
WITHIN = "within"
EXPECTED = {
    "a2": {"64": "loss", "1024": WITHIN, "4096": "win", "16384": "undecided", "65536": "undecided"},
    "a3": {"64": "loss", "1024": WITHIN, "4096": WITHIN, "16384": "win", "65536": "win"},
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
    return document(study(df, loaded))


@pytest.mark.slow
@pytest.mark.parametrize("seed", [11, 12, 13])
def test_answers_decide_every_size_exactly(seed, tmp_path):
    doc = answers_of(synthetic(seed=seed), tmp_path, {"params": {"equivalence_margin": 0.10}})
    for impl, key in (("a2", "q4_one_copy_vs_two_copy"), ("a3", "q5_zero_copy_vs_two_copy")):
        assert doc[key]["equivalence_margin"] == 0.10
        found = {size: WITHIN if Outcome(d).within_margin else d for size, d in doc[key]["decision_by_size"].items()}
        assert found == EXPECTED[impl], (impl, doc[key]["decision_detail_by_size"])
    assert doc["q5_zero_copy_vs_two_copy"]["crossover_bytes"] == 16384  # 1.25 and 1.50, wholly beyond the margin
    assert doc["q4_one_copy_vs_two_copy"]["crossover_bytes"] is None  # undecided at the largest size


def test_a_noisy_cell_keeps_its_own_spread_among_quiet_ones():
    per_threads = decide(synthetic(), "a2", "a1")["per_threads"]
    assert per_threads[8][65536].decision == "undecided"
    assert all(per_threads[t][65536].decision.within_margin for t in (1, 2, 4))
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
    assert Outcome(doc["q5_zero_copy_vs_two_copy"]["decision_by_size"]["1024"]).within_margin
    unblocked = point_stats(synthetic(pass_spread=0.4, seed=5), block=False)
    blocked = point_stats(synthetic(pass_spread=0.4, seed=5))
    assert blocked["var"].median() < unblocked["var"].median() / 10


@pytest.mark.slow
def test_one_pass_decides_nothing(tmp_path):
    doc = answers_of(synthetic(passes=1), tmp_path)
    assert set(doc["q4_one_copy_vs_two_copy"]["decision_by_size"].values()) == {"undecided"}


@pytest.mark.parametrize("low,high,expected", [
    (1.02, 1.08, "win_within_margin"),   # above 1, inside the margin: decided higher, by less than it
    (1.037, 1.099, "win_within_margin"),  # issue 50's run 1, its upper end 0.4% lower ...
    (1.037, 1.104, "win"),                # ... and as it was: beyond the margin, possibly
    (0.978, 1.045, "equivalent"),         # issue 50's run 2
    (1.05, 1.20, "win"),
    (1.12, 1.30, "win"),                  # wholly beyond the margin
    (0.70, 0.95, "loss"),
    (0.92, 0.99, "loss_within_margin"),
    (0.92, 1.05, "equivalent"),
    (0.85, 1.05, "undecided"),
    (0.95, 1.15, "undecided"),
    (math.nan, math.nan, "undecided"),
    (1 / 1.1, 1.1, "equivalent"),   # the margin's edges are inside
])
def test_classify(low, high, expected):
    assert classify(low, high, 0.10) == expected


def _decision(ratio, low, high, margin=0.10):
    return Decision("x", "b", 16384, None, ratio, low, high, 5, 5, 4.0, margin, classify(low, high, margin), None)


def test_the_crossover_counts_only_wins_beyond_the_margin_so_an_end_moving_inside_it_does_not_move_it():
    """Issue 50: run 1 (1.070, 1.037-1.104) and run 2 (1.011, 0.978-1.045) at 16 KiB, both beyond the
    margin at 64 KiB. The crossover asks for the whole interval above 1 + m: both runs name 64 KiB,
    and so does run 1 with its upper end 0.4% lower; decided faster at all, they would differ."""
    top = _decision(1.25, 1.18, 1.32)
    runs = [{16384: _decision(1.070, 1.037, 1.104), 65536: top}, {16384: _decision(1.011, 0.978, 1.045), 65536: top},
            {16384: _decision(1.070, 1.037, 1.099), 65536: top}]
    beyond = [crossover(r, lambda d: d.decision.higher and d.beyond_margin) for r in runs]
    higher = [crossover(r, lambda d: d.decision.higher) for r in runs]
    assert beyond == [65536, 65536, 65536]
    assert higher == [16384, 65536, 16384]
    assert [r[16384].decision for r in runs] == ["win", "equivalent", "win_within_margin"]


@pytest.mark.parametrize("outcome, higher_is_better, verdict", [
    (Outcome.WIN, True, Verdict.BETTER), (Outcome.WIN, False, Verdict.WORSE),
    (Outcome.WIN_WITHIN, True, Verdict.BETTER_WITHIN), (Outcome.LOSS_WITHIN, False, Verdict.BETTER_WITHIN),
    (Outcome.LOSS, False, Verdict.BETTER), (Outcome.EQUIVALENT, False, Verdict.EQUIVALENT),
    (Outcome.UNDECIDED, True, Verdict.UNDECIDED)])
def test_one_reading_of_an_outcome_with_its_metrics_direction(outcome, higher_is_better, verdict):
    assert Verdict.of(outcome, higher_is_better) == verdict


def test_a_difference_within_the_margin_stands_only_when_both_of_its_claims_do():
    """Decided higher by less than the margin claims two things: the difference (p) and the equivalence
    (p_equivalence); its Holm p is the larger's (an intersection-union test)."""
    d = Decision("x", "b", 64, None, 1.05, 1.02, 1.08, 5, 5, 4.0, 0.1, Outcome.WIN_WITHIN, None, p=0.001,
                 p_equivalence=0.03)
    fam = Family("f", [d]).correct()
    assert fam.p_holm(d) == pytest.approx(0.03) and fam.stands(d)
    fam = Family("f", [d, _decision(1.0, 0.95, 1.05)]).correct()
    assert fam.p_holm(d) == pytest.approx(0.03 * 1) or fam.p_holm(d) >= 0.03


def test_the_target_width_always_decides():
    margin = 0.10
    half = target_half_width(margin)
    for centre in np.linspace(-0.3, 0.3, 601):
        assert classify(math.exp(centre - half), math.exp(centre + half), margin) != "undecided"


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
    assert all(d.decision.within_margin for d in by_size.values())
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
        assert d.decision.within_margin == inside

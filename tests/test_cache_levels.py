"""Q2 and Q3 by construction (issue 36): working sets placed at this host's cache levels
(cachelevels.py, params.py), held exactly (native --ring-memory, memory.py), refused before anything
runs when the host cannot hold them, and decided per level step by the Study (analysis/levels.py,
text/q2.py, text/q3.py). The analysis runs on SYNTHETIC sweeps (tests/data/analysis/cache_like.py)."""

from __future__ import annotations

import atexit
import copy
import json
import shutil
import tempfile
from dataclasses import replace
import sys
from pathlib import Path

import pytest
import yaml

from conftest import ROOT, run_copylab
from copylab import analysis, cachelevels, figures, memcpyref, memory
from copylab.analysis import sections
from copylab.errors import CopylabError
from copylab.params import load_grid, parse_grid
from copylab.sweep import estimate as est
from faults import TINY, assert_one_line_error

sys.path.insert(0, str(ROOT / "tests" / "data" / "analysis"))
import cache_like  # noqa: E402

CACHES = cachelevels.cache_sizes(cache_like.CACHES)
BASE = {"name": "c", "impls": ["a1", "a2", "a3"], "modes": ["throughput"], "msg_sizes": [4096], "threads": [1]}


_STUDIES: dict = {}


def study_of(tmp_path: Path, **kwargs) -> analysis.Study:
    """The Study of a cache-like sweep written with kwargs: built once per worker and kwargs (in a folder of
    its own, removed at exit), copied for each test (tests change its verdicts)."""
    key = tuple(sorted(kwargs.items()))
    if key not in _STUDIES:
        home = Path(tempfile.mkdtemp(prefix="copylab-cache-like-"))
        atexit.register(shutil.rmtree, home, True)
        folder = cache_like.write(home / "sweep", **kwargs)
        df, meta = analysis.load_results(folder)
        _STUDIES[key] = analysis.study(df, meta, analysis.load_profiles(folder, df))
    return copy.deepcopy(_STUDIES[key])


# ------------------------------------------------------------------------------------------------
# the grid: names resolved from the host's caches, validated like every key


def test_cache_level_names_resolve_from_the_hosts_caches():
    grid = parse_grid({**BASE, "working_set": ["L1d/2", "l2/2", "LLC/2", "LLC*4"]}, caches=CACHES)
    assert grid.working_set == (16 << 10, 512 << 10, 16 << 20, 128 << 20)
    assert grid.working_set_levels == ("L1d/2", "L2/2", "LLC/2", "LLC*4")
    specs = grid.pass_points(0, "netns")
    assert len(specs) == 3 * 4 and {s.working_set_level for s in specs} == set(grid.working_set_levels)
    # the levels are recorded by name and bytes (meta.json's params), one working set as before
    assert grid.to_dict()["working_set_levels"]["LLC*4"] == 128 << 20
    assert parse_grid(BASE, caches=CACHES).to_dict()["working_set"] == 4194304


@pytest.mark.parametrize("working_set, needle", [
    ("L5/2", "is neither a number of bytes nor a cache level"),
    (["L2/2", "L2/2"], "listed twice"),
    (["L3", "LLC"], "two entries come to the same bytes on this host"),
    ("LLC*100", "more than the 1073741824 a working set may be"),
    ("L4", "names L4, which this host's caches do not include"),
    ([4096, True], "entry 2: must be a number of bytes or a cache level"),
])
def test_a_bad_working_set_is_one_line_naming_the_key(working_set, needle):
    with pytest.raises(CopylabError) as err:
        parse_grid({**BASE, "working_set": working_set}, caches=CACHES)
    assert needle in str(err.value) and str(err.value).startswith("working_set") and "\n" not in str(err.value)


def test_a_level_working_set_is_held_exactly_past_the_default_bound():
    grid = parse_grid({**BASE, "working_set": ["LLC*4"]}, caches=CACHES)
    spec = grid.pass_points(0, "netns")[0]
    # 4 KiB in eight page-aligned fields: 8 pages a message, 32768 messages
    assert spec.ring_memory == 32768 * 8 * 4096
    assert memory.ring_messages(4096, spec.working_set, spec.ring_memory) == 32768
    # a working set given in bytes keeps the servers' default bound (the default grid is unchanged)
    plain = parse_grid({**BASE, "working_set": 128 << 20}, caches=CACHES).pass_points(0, "netns")[0]
    assert plain.ring_memory == 0 and memory.ring_messages(4096, plain.working_set) == 256


def test_the_memory_each_point_takes_is_said_and_a_host_that_cannot_give_it_refuses(monkeypatch):
    grid = parse_grid({**BASE, "threads": [1, 2], "working_set": ["L1d/2", "LLC*4"]}, caches=CACHES)
    estimate = est.estimate(grid)
    assert "working set LLC*4 = 134217728 B" in estimate.describe() and estimate.peak_bytes > 2 << 30
    monkeypatch.setattr(est, "available_memory", lambda: 1 << 30)
    with pytest.raises(CopylabError) as err:
        est.check(estimate, allow_large=False)
    assert "more than the 1.00 GiB this host has available" in str(err.value) and "\n" not in str(err.value)


@pytest.mark.slow
def test_a_working_set_the_host_cannot_hold_is_refused_in_one_line_before_anything_runs(tmp_path):
    llc = cachelevels.last_level(cachelevels.host_cache_sizes())
    assert llc, "this test needs a host whose sysfs reports caches"
    size = cachelevels.host_cache_sizes()[llc]
    factor = max(1, (1 << 30) // size)  # the largest working set a grid may ask, by level name
    grid = tmp_path / "grid.yaml"
    grid.write_text(yaml.safe_dump({**TINY, "threads": [1024], "working_set": [f"LLC*{factor}"]}))
    proc = run_copylab("sweep", str(grid), "--out", str(tmp_path / "out"), timeout=60)
    assert_one_line_error(proc, "grid too large")
    assert "working set LLC*" in proc.stderr and "this host has available" in proc.stderr
    assert not (tmp_path / "out").exists()


def test_the_cache_grid_keeps_the_default_grids_budget_rules():
    grid = load_grid(ROOT / "params" / "cache.yaml")
    assert grid.repetitions >= 3 and grid.budget_min is not None and grid.budget_min <= 10
    assert len(grid.working_set) == 4 and grid.working_set_levels[-1] == "LLC*4"
    assert set(grid.impls) == {"a1", "a2", "a3"} and len(grid.msg_sizes) == 2 and 1 in grid.threads


# ------------------------------------------------------------------------------------------------
# the answers


def test_where_the_cost_jumps_decides_which_levels_leaving_costs_most(tmp_path):
    at_l2 = study_of(tmp_path / "l2", jump="L2")
    at_llc = study_of(tmp_path / "llc", jump="LLC")
    assert at_l2.verdicts["q2"].level == "L1d" and at_llc.verdicts["q2"].level == "L3"
    assert at_llc.verdicts["q2"].top[:3] == ("a1", "LLC/2", "LLC*4")  # the two-copy path pays it twice
    text = sections.answer_text(at_llc, "q2")
    assert text.startswith("**Leaving the L3 changes the cost most: A1's sender spends ×")
    # the extra copy: A1 over A2 grows where the source leaves the level that costs
    extra = at_llc.verdicts["q2"].extra_copy
    assert extra["LLC*4"].decision.ratio > 1.2 * extra["LLC/2"].decision.ratio


def test_a_step_that_crosses_no_level_is_never_the_answer(tmp_path):
    """At 64 KiB the smallest ring (4 messages, 256 KiB) already leaves L1d: L1d/2 and L2/2 both sit in L2.
    The answer is read at the smallest message size, and names only a step that leaves a level."""
    v = study_of(tmp_path, jump="L2").verdicts["q2"]
    assert v.size == 4096 and v.top[3] == "L1d"
    assert all(leaving is not None or not row.standing.higher or row is not v.top[4]
               for _, _, _, leaving, row in v.steps)


def test_without_a_pmu_q2_says_it_answers_by_construction(tmp_path):
    s = study_of(tmp_path, jump="LLC", pmu=False)
    assert "placed by construction" in (text := sections.answer_text(s, "q2")) and "inferred from the time‡" in text
    assert s.cache.counted == ()


def test_with_a_pmu_the_misses_are_counted_and_the_caveat_is_not_said(tmp_path):
    s = study_of(tmp_path, jump="LLC", pmu=True)
    assert s.verdicts["q2"].counted == ("l1_misses_per_byte", "llc_misses_per_byte")
    assert "counts no misses" not in sections.answer_text(s, "q2")


def test_q3_decides_whether_per_thread_throughput_falls_once_the_aggregate_leaves_the_llc(tmp_path):
    falls = study_of(tmp_path / "falls", aggregate_fall=0.6)
    flat = study_of(tmp_path / "flat", aggregate_fall=1.0)
    for impl in ("a1", "a2", "a3"):
        assert falls.verdicts["q3"].aggregate[impl].standing == "loss"
        assert flat.verdicts["q3"].aggregate[impl].standing != "loss"
    assert "the contention shows where" in sections.answer_text(falls, "q3")
    assert "the contention shows nowhere" in sections.answer_text(flat, "q3")
    assert "show no cache contention" not in sections.answer_text(falls, "q3")


def test_the_cache_claims_are_families_and_reach_answers_json(tmp_path):
    s = study_of(tmp_path)
    assert s.families["q2"].size > 0 and s.families["q3"].size > len(s.verdicts["q3"].throughput)
    doc = json.loads(json.dumps(analysis.document(s)))
    assert doc["q2_cache_detail"]["by_construction"] is True and doc["q2_cache_level"] == "LLC"
    assert doc["q3_threads_cache_contention"]["llc_bytes"] == 32 << 20
    # Part E's other answers use one working set, the one nearest the default grid's 4 MiB
    assert set(s.rows["working_set_level"]) == {"LLC/2"}


def test_the_figure_marks_the_cache_sizes_on_a_log_axis(tmp_path):
    fig = figures.cost_vs_working_set(study_of(tmp_path))
    assert fig.layout.xaxis.type == "log" and fig.layout.yaxis.type == "log"
    assert {a.text for a in fig.layout.annotations} >= {"L1d", "L2", "L3"}
    assert len(fig.data) == 6 and all(t.hovertemplate for t in fig.data)  # 3 paths x 2 sizes
    assert fig.layout.title.subtitle.text  # the system configuration, as every figure states it
    assert {a.text for a in fig.layout.annotations} >= {
        "working set cycled through per connection (bytes, log scale)"}


def test_a_size_measured_at_one_working_set_gets_no_panel(tmp_path):
    """The default grid places only 4 KiB across the levels: its other sizes, one working set each, would
    be panels of one point."""
    s = study_of(tmp_path)
    lone = next(k for k, n in s.cache.used if n == 65536)
    s.cache.used = {(k, n): v for (k, n), v in s.cache.used.items() if n != 65536 or k == lone}
    fig = figures.cost_vs_working_set(s)
    assert len(fig.data) == 3 and [a.text for a in fig.layout.annotations if a.text.endswith("messages")] == [
        "4 KiB messages"]


def test_one_working_set_points_q2_to_the_cache_grid(tmp_path):
    folder = ROOT / "tests" / "data" / "analysis" / "default-like"
    df, meta = analysis.load_results(folder)
    s = analysis.study(df, meta, analysis.load_profiles(folder, df))
    assert s.cache is None and "params/cache.yaml" in sections.answer_text(s, "q2")
    assert isinstance(figures.cost_vs_working_set(s), figures.FigureNote)


def test_part_d_shows_one_working_set_of_a_sweep_that_varies_it(tmp_path):
    """Part D's figures and tables read study.shown: in a cache sweep one working set (Part E's), never
    a mean over cache levels; in a sweep of one working set, every row."""
    s = study_of(tmp_path)
    assert s.df["working_set_level"].nunique() == 4
    assert set(s.shown["working_set_level"]) == set(s.rows["working_set_level"]) == {"LLC/2"}
    assert len(s.shown) == (s.df["working_set_level"] == "LLC/2").sum()
    one = figures.throughput_vs_size(s.shown, s.meta)
    every = figures.throughput_vs_size(s.df, s.meta)
    assert [list(t.y) for t in one.data] != [list(t.y) for t in every.data]  # the mean over levels differs
    folder = ROOT / "tests" / "data" / "analysis" / "default-like"
    df, meta = analysis.load_results(folder)
    assert analysis.study(df, meta).shown is df and analysis.study(df, meta).working_sets_shown == []
    assert s.working_sets_shown == ["LLC/2"]


def test_the_budget_decides_and_adds_passes_on_part_e_s_working_set_only():
    """In a cache sweep the budget's comparisons are the Study's: the primary working set's rows alone
    (a pool over levels would average four cache levels), and an extra pass re-measures that working
    set's points only."""
    from copylab.sweep import budget

    grid = parse_grid({**BASE, "msg_sizes": list(cache_like.SIZES), "threads": list(cache_like.THREADS),
                       "working_set": ["L1d/2", "L2/2", "LLC/2", "LLC*4"]}, caches=CACHES)
    found = cache_like.rows(jump="L2")
    rows = {r["point_id"]: {**r, "run_kind": "measure", "congestion": grid.congestion[0]} for r in found}
    assert budget.primary_working_set(grid) == cache_like.LEVELS["LLC/2"]
    used = budget._study_rows(rows, grid)
    assert set(used["working_set_level"]) == {"LLC/2"} and len(used) == len(found) // 4
    planned = budget.plan_pass(rows, replace(grid, equivalence_margin=0.001), "netns", 4, 1e9, seed=1)
    assert planned is not None and planned.specs
    assert {s.working_set for s in planned.specs} == {cache_like.LEVELS["LLC/2"]}


@pytest.mark.parametrize("nbytes, words", [(16 << 10, "within L1d"), (32 << 10, "filling L1d"),
                                           (1 << 20, "filling L2"), (4 << 20, "within L3"),
                                           (64 << 20, "beyond the caches"), (float("nan"), None)])
def test_a_working_set_is_said_within_a_level_only_up_to_half_of_it(nbytes, words):
    sizes = {"L1d": 32 << 10, "L2": 1 << 20, "L3": 32 << 20}
    assert cachelevels.residency_words(nbytes, sizes) == words


def test_the_budget_adds_passes_where_a_cache_step_is_too_wide_to_decide():
    """Q2's steps (a path's sender CPU per byte at one working set over the next smaller's, at the cache
    part's fewest threads) are the budget's comparisons too: a step wider than the target gets a pass
    of its two points, and one narrow enough gets none."""
    from copylab.sweep import budget

    grid = parse_grid({**BASE, "msg_sizes": list(cache_like.SIZES), "threads": list(cache_like.THREADS),
                       "working_set": "LLC/2",
                       "cache": {"impls": ["a1", "a2"], "msg_sizes": [4096], "threads": [1],
                                 "working_set": ["L1d/2", "L2/2", "LLC/2", "LLC*4"]}}, caches=CACHES)
    rows = {r["point_id"]: {**r, "run_kind": "measure", "congestion": grid.congestion[0]}
            for r in cache_like.rows(jump="L2")}
    narrow = budget.wide_cache_steps(rows, grid, target=1.0)
    wide = budget.wide_cache_steps(rows, grid, target=1e-6)
    assert narrow == []
    assert {(w["impl"], w["msg_size"], tuple(w["working_sets"])) for w in wide} == {
        (impl, 4096, step) for impl in ("a1", "a2")
        for step in zip(sorted(cache_like.LEVELS.values()), sorted(cache_like.LEVELS.values())[1:])}
    planned = budget.plan_pass(rows, replace(grid, equivalence_margin=0.001), "netns", 4, 1e9, seed=1)
    cache_points = {(s.impl, s.working_set) for s in planned.specs if s.msg_size == 4096 and s.threads == 1}
    assert {(impl, ws) for impl in ("a1", "a2") for ws in cache_like.LEVELS.values()} <= cache_points
    assert any(w.get("working_sets") for w in planned.why)
    # Q4/Q5's comparisons come before every cache step, however wide the steps (Q2's level rests on
    # the copy alone): the budget's few seconds go to the crossovers first
    order = [bool(w.get("working_sets")) for w in budget.wide_comparisons(rows, replace(grid, equivalence_margin=0.001))]
    assert order == sorted(order) and order[0] is False and order[-1] is True


def test_the_copy_alone_names_the_level_when_no_path_step_is_decided(tmp_path):
    """meta.json memcpy.levels (memcpyref.measure_levels): the copy timed alone at each level, paired by
    round, decides Q2's level where the whole send path's steps do not (synthetic: no path step)."""
    s = study_of(tmp_path, jump="none", copy_jump="LLC/2")
    v = s.verdicts["q2"]
    assert v.top is None and v.level == "L2" and v.copy_top[:3] == ("L2/2", "LLC/2", "L2")
    assert [row.standing.higher for *_, row in v.copy_steps] == [False, True, False]
    text = sections.answer_text(s, "q2")
    assert text.startswith("**Leaving the L2 changes the cost most: the copy A1 adds, timed alone§, costs ×")
    assert f"none of the {len(v.steps)} steps is decided to raise the sender's CPU per byte" in text and "ns per byte to a sender that spends" in text
    assert s.families["q2"].size >= len(v.steps) + 3  # the copy's steps are corrected with the path's
    assert json.loads(json.dumps(analysis.document(s)))["q2_cache_level"] == "L2"
    # a path step that is decided stays the answer; the copy's steps are in its table all the same
    both = study_of(tmp_path / "both", jump="LLC", copy_jump="LLC/2").verdicts["q2"]
    assert both.level == "L3" and len(both.copy_steps) == 3


def test_the_probe_holds_a_cache_level_working_set_exactly(native_build):
    """native/memcpyprobe --ring-memory: 16 MiB of 4 KiB messages (8 page-aligned fields each) is past the
    default bound of 8 MiB of pages, and is held whole, as the servers hold a cache-level working set."""
    found = memcpyref.measure_levels(4096, {"L1d/2": 16 << 10, "LLC/2": 16 << 20}, None, rounds=2)
    assert found["working_sets"] == {"L1d/2": 16 << 10, "LLC/2": 16 << 20}, found
    assert all(len(v) == 2 and all(x > 0 for x in v) for v in found["ns_per_byte"].values())


def test_two_rising_copy_steps_are_both_said_and_their_overlap_too(tmp_path):
    """Where leaving L2 and leaving L3 both raise the copy's cost, the answer names the larger ratio and
    the other beside it (a fourth reading of issue 44)."""
    folder = cache_like.write(tmp_path / "sweep", jump="none", copy_jump="LLC/2")
    df, meta = analysis.load_results(folder)
    costs = meta["memcpy"]["levels"]["ns_per_byte"]
    costs["LLC*4"] = [2 * x for x in costs["LLC*4"]]  # a second rise, x2, out of L3 (x3 out of L2)
    s = analysis.study(df, meta, analysis.load_profiles(folder, df))
    v = s.verdicts["q2"]
    assert (v.copy_top[2], [o[2] for o in v.copy_others]) == ("L2", ["L3"])
    # x3 over x2 is not decided from these rounds, paired: the L2 step is the largest, not the most, said so
    assert v.copy_overlap and not v.copy_over[0].standing.higher
    text = sections.answer_text(s, "q2")
    assert text.startswith("**Leaving the L2 or the L3, not told apart") and "the larger step is not decided" in text, text


def test_a_copy_step_decided_larger_than_the_next_changes_the_cost_most(tmp_path):
    """The largest copy step is said to change the cost most only when its ratio over each other rising
    step is decided above 1, paired by round (two intervals that overlap may still differ)."""
    folder = cache_like.write(tmp_path / "sweep", jump="none", copy_jump="LLC/2")
    df, meta = analysis.load_results(folder)
    costs = meta["memcpy"]["levels"]["ns_per_byte"]
    llc = costs["LLC/2"]
    costs["LLC*4"] = [1.2 * x for x in llc]  # a second rise of exactly x1.2 in every round: x3 over it decided
    s = analysis.study(df, meta, analysis.load_profiles(folder, df))
    v = s.verdicts["q2"]
    assert [o[2] for o in v.copy_others] == ["L3"] and v.copy_over[0].standing.higher, v.copy_over
    text = sections.answer_text(s, "q2")
    assert "**Leaving the L2 changes the cost most" in text and "leaving the L3 also raises it" in text, text


def test_a_copy_probe_key_that_is_not_a_cache_level_is_not_read(tmp_path):
    """meta.json belongs to the results folder: a working-set key of memcpy.levels that is not a cache
    level's name (text the answer would print) or a count that is not bytes is left out, not shown."""
    folder = cache_like.write(tmp_path / "sweep", jump="none", copy_jump="LLC/2")
    df, meta = analysis.load_results(folder)
    levels = meta["memcpy"]["levels"]
    levels["working_sets"]["**x** $\\input{/etc/passwd}$"] = 1 << 30
    levels["ns_per_byte"]["**x** $\\input{/etc/passwd}$"] = [9.0] * 5
    levels["working_sets"]["LLC*4"] = "134217728"
    s = analysis.study(df, meta, analysis.load_profiles(folder, df))
    assert list(s.cache.copy_held) == ["L1d/2", "L2/2", "LLC/2"]
    assert "passwd" not in sections.answer_text(s, "q2")

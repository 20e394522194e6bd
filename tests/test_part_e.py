"""Part E answered from the decisions, patterns and per-size tests, on SYNTHETIC throughput with known
answers (tests/data/analysis/evidence.py): one answer for Q4/Q5, Q6's most robust surprise with Holm's
correction, Q3 per size, the summary for engineers, the harness and the configuration."""

from __future__ import annotations

import math
import re

import pytest

from copylab.analysis import configuration, crossover, harness, q3, q6, study, summary
from copylab.analysis.decisions import Outcome, holm
from data.analysis import evidence as ev

SLOW_SMALL = {"a2": {64: 0.60, 1024: 0.75}}  # A2 below A1 in every cell up to 1 KiB


def test_holm_matches_the_step_down_rule():
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    adjusted = holm([0.2, math.nan, 0.01])
    assert adjusted[0] == pytest.approx(0.2) and math.isnan(adjusted[1]) and adjusted[2] == pytest.approx(0.02)


def test_q6_reports_a_pattern_across_cells_with_its_correction():
    df = ev.throughput_grid(SLOW_SMALL)
    answer = q6.answer(study(df, {"cores": 2}, ev.frame([])))
    assert answer["kind"] == "one_copy_slower" and answer["standing"] == "pattern"
    details = answer["details"]
    assert details["sizes"] == "up_to" and details["size"] == 1024 and len(details["cells"]) == 8
    text = answer["text"]
    assert "A2 slower than A1 at sizes up to 1 KiB, over every thread count, pooled over its 8 cells" in text
    alone = sum(c["significant"] for c in details["cells"])
    assert ("but none of the 8 cells is significant on its own" if alone == 0 else
            f"but only {alone} of the 8 cells {'is' if alone == 1 else 'are'} significant on "
            f"{'its' if alone == 1 else 'their'} own" if alone < 8 else
            "and every one is significant on its own") in text
    assert f"Holm's correction over the {answer['tests_made']} tests made" in text
    assert answer["correction"] == "holm" and answer["tests_made"] > 8
    assert len(q6.surprise_table(answer)) == 8


def test_a_pattern_over_one_size_is_said_at_that_size():
    """review-fresh4 G9: "A2 slower than A1 at sizes up to 64 B", 64 B being the smallest size, is one size:
    said "at 64 B"; a region over several sizes keeps its range."""
    s = study(ev.throughput_grid({"a2": {64: 0.60}}), {"cores": 2}, ev.frame([]))
    answer = q6.answer(s)
    assert answer["details"]["sizes"] == "up_to" and answer["details"]["size"] == 64, answer["details"]
    assert "A2 slower than A1 at 64 B, over every thread count, pooled over its 4 cells" in answer["text"]
    assert "up to 64 B" not in answer["text"]
    regions = {(t.where["sizes"], t.where["size"]): q6.describe(t) for t in s.q6_regions if t.kind == "one_copy_slower"}
    assert regions[("from", 65536)] == "A2 slower than A1 at 64 KiB, over every thread count"
    assert regions[("up_to", 1024)] == "A2 slower than A1 at sizes up to 1 KiB, over every thread count"
    assert regions[("from", 4096)] == "A2 slower than A1 from 4 KiB on, over every thread count"


def test_a_pattern_no_cell_decides_alone_says_none():
    """Zero cells significant on their own reads "none of the 8 cells", never "only 0 of the 8"."""
    df = ev.throughput_grid({"a2": {64: 0.95, 1024: 0.95}}, spread=0.06)
    answer = q6.answer(study(df, {"cores": 2}, ev.frame([])))
    assert answer["standing"] == "pattern" and not any(c["significant"] for c in answer["details"]["cells"])
    assert "but none of the 8 cells is significant on its own: the shortfall is decided" in answer["text"]
    assert "only 0 of" not in answer["text"]


def test_one_outlier_cell_is_not_a_pattern_and_says_so():
    # one repetition of one cell far off: that cell is not significant; nothing else violates
    df = ev.throughput_grid({}, outliers={("a2", 4096, 4, 0): 0.5})
    answer = q6.answer(study(df, {"cores": 2}, ev.frame([])))
    assert answer["kind"] is None and answer["text"].startswith("No result contradicts the expectations checked")
    assert "beyond chance" in answer["text"] and "is what noise gives" in answer["text"]
    assert "Holm's correction" in answer["text"] and "adjusted p" in answer["text"]


def test_q6_explains_the_pattern_from_the_profile_with_its_numbers():
    df = ev.throughput_grid(SLOW_SMALL)
    a1 = [ev.profile_row("a1", 64, {"user_copy": 0.01, "kernel_copy_from_user": 0.02, "tcp_send": 0.5},
                         busy=(0.5, 0.9), rep=r) for r in range(3)]
    a2 = [ev.profile_row("a2", 64, {"kernel_copy_from_user": 0.30, "tcp_send": 0.5}, busy=(0.8, 0.9), rep=r)
          for r in range(3)]
    answer = q6.answer(study(df, {"cores": 2}, ev.frame(a1 + a2)))
    assert answer["explanation"]["verdict"] == "copy"
    assert "A2's kernel copy from its iovec is 30.0%" in answer["text"]


def test_q4_gives_one_answer_from_the_decisions():
    df = ev.throughput_grid({"a2": {64: 0.7, 1024: 1.0, 4096: 1.3, 65536: 1.4}})
    s = study(df, {})
    text = crossover.decision_text(s, "a2", "q4")
    assert text.count("**") == 2 and "**A2 outperforms A1 from 4 KiB to 64 KiB**" in text
    assert "64 B: loss" in text and "1 KiB: equivalent" in text
    assert "Holm's correction over the 4 comparisons of this answer leaves every decision standing" in text
    table = crossover.decision_table(s, "a2", "q4")
    assert list(table["decision"]) == ["loss", "equivalent", "win", "win"]
    per = crossover.per_threads_table(s, "a2", "q4")
    assert list(per.columns) == ["message size", "1 thr", "2 thr", "4 thr", "8 thr"]
    assert per.iloc[2, 1].startswith("win ")


def test_an_undecided_largest_size_says_how_many_more_passes():
    df = ev.throughput_grid({"a2": {65536: 1.08}}, passes=3, spread=0.12, seed=9)
    s = study(df, {})
    assert s.decision("a2", 65536).decision == "undecided"
    text = crossover.decision_text(s, "a2", "q4")
    assert "There is no size in this grid from which A2 is decided to outperform A1" in text
    assert re.search(r"about \d+ more pass(es)? would likely decide it|more than 100 more passes", text)


@pytest.mark.parametrize("ratio, verdict", [(1.6, "win"), (0.6, "loss"), (1.0, "equivalent")])
def test_q3_concludes_per_size_from_its_own_test(ratio, verdict):
    df = ev.throughput_grid({}, threads=(1, 8), thread_gain=0.0)
    boost = {(impl, 65536, 8): ratio for impl in ("a1", "a2", "a3")}
    df["throughput_gbps"] *= [boost.get((i, s, t), 1.0) for i, s, t in zip(df["impl"], df["msg_size"], df["threads"])]
    answer = q3.answer(study(df, {"cores": 2}))
    assert answer["per_size"]["65536"]["verdict"] == verdict
    line = next(l for l in answer["text"].splitlines() if l.startswith("**64 KiB"))
    assert q3.VERDICTS[verdict] in line
    # each size its own paragraph, even escaped: a "- " list ran into one paragraph in the PDF
    from copylab.analysis import md_escape
    assert "\n\n**64 KiB" in md_escape(answer["text"]) and "\n\\- " not in md_escape(answer["text"])
    assert "with a PMU each line above would carry L1 and LLC misses per byte" in answer["text"]


def test_q3_says_the_paths_differ_only_where_their_decisions_do():
    """Undecided beside equivalent is no difference between paths (the report's 64 KiB line)."""
    from types import SimpleNamespace as Decided

    some = {"a1": Decided(decision=Outcome.UNDECIDED, ratio=1.1, low=0.9, high=1.3),
            "a2": Decided(decision=Outcome.EQUIVALENT, ratio=1.0, low=0.95, high=1.05)}
    line = q3._size_line(65536, some, None, {})
    assert "the implementations differ" not in line and "no thread effect is decided (A2 equivalent)" in line
    some["a3"] = Decided(decision=Outcome.WIN, ratio=1.5, low=1.3, high=1.7)
    assert "the implementations differ: A2 decided (equivalent), A3 decided (win); A1 undecided" in \
        q3._size_line(65536, some, None, {})
    # a decided win beside undecided paths is no difference between paths: which is decided is said
    some["a2"] = Decided(decision=Outcome.UNDECIDED, ratio=1.0, low=0.8, high=1.2)
    line = q3._size_line(65536, some, None, {})
    assert "the implementations differ" not in line and "only A3 decided (win); A1 and A2 undecided" in line
    some["a1"] = Decided(decision=Outcome.WIN, ratio=1.4, low=1.2, high=1.6)
    assert "A1 and A3 decided (win); A2 undecided" in q3._size_line(65536, some, None, {})


def test_q3_calls_it_cache_contention_only_with_misses_rising():
    df = ev.throughput_grid({}, threads=(1, 8), thread_gain=0.0)
    for rising, expected in ((1.5, "cache contention"), (1.0, "not cache contention")):
        misses = df["bytes"] * 0.01 * [rising if t == 8 else 1.0 for t in df["threads"]]
        with_misses = df.assign(l1_misses=misses, llc_misses=misses / 10)
        from copylab.analysis.load import add_derived
        answer = q3.answer(study(add_derived(with_misses), {"cores": 2}))
        assert expected in answer["text"]


def test_the_summary_names_a_path_only_where_it_is_decided_better():
    df = ev.throughput_grid({"a2": {65536: 1.4}, "a3": {64: 0.5}})
    s = study(df, {})
    found = summary.choices(s, "throughput")
    assert found[65536]["choice"] == "a2" and found[64]["choice"] == "a1"
    text = summary.ranges_text(s, "throughput")
    assert "at 65536 B" not in text and "at 64 KiB: A2 (1.40×" in text.replace("1.39×", "1.40×").replace("1.41×", "1.40×")
    table = summary.table(s)
    assert table.iloc[-1, 1].startswith("A2 · A2 better")
    assert "two hosts" in summary.nic_text(s).lower() or "two machines" in summary.nic_text(s)


def test_the_summary_keeps_the_baseline_where_a_win_does_not_survive_the_correction():
    """A path decided better at one size on its own 95% interval, but not after Holm's correction over the
    summary's comparisons, is not named: the baseline stays, and the table marks the verdict with †."""
    df = ev.throughput_grid({"a2": {65536: 1.03}}, passes=4, spread=0.03, seed=1)
    s = study(df, {"params": {"equivalence_margin": 0.01}})
    d = s.decision("a2", 65536)
    fam = s.family("summary")
    assert d.decision == "win" and d.low > 1 and not fam.stands(d), (d, fam.p_holm(d))
    assert summary.choices(s, "throughput")[65536]["choice"] == "a1"
    assert "A2 better† " in summary.table(s).iloc[-1, 1]


def test_the_harness_says_how_far_one_pass_of_either_side_moves_a_ratio():
    """SYNTHETIC (review-fresh3 F4, review-fresh5 N9): iperf3 ran 2 passes, 30.6 and 15.0 Gbit/s at 64 KiB (their
    median is their mean) and 1.70 and 1.71 at 1 KiB; at 4 KiB its passes agree (3.25, 3.34) but A2's spread
    (3.00, 3.39, 4.05). The like-for-like paragraph brackets each ratio over both sides' passes, and the ratios
    are said not decided where either side's passes differ by more than the equivalence margin (64 KiB for
    iperf3, 4 KiB for A2); the 1 KiB one is kept."""
    a2 = {1024: (1.57,) * 3, 4096: (3.00, 3.39, 4.05), 65536: (28.5,) * 3}
    rows = ([ev.measured_row("a2", size, rep=r, gbps=g) for size, passes in a2.items() for r, g in enumerate(passes)]
            + [ev.measured_row("iperf3", size, rep=r, gbps=g, window_source="timer", warmup_end="timer")
               for size, passes in ((1024, (1.70, 1.71)), (4096, (3.25, 3.34)), (65536, (30.6, 15.0)))
               for r, g in enumerate(passes)])
    df = ev.frame(rows)
    text = harness.like_for_like_text(df, 0.10)
    assert ("A2/iperf3 throughput (in brackets: the ratio over both sides' passes, A2's lowest against iperf3's "
            "highest to its highest against the lowest):") in text, text
    assert "64 KiB: 1.25 (0.931–1.90)" in text and "1 KiB: 0.921 (0.918–0.924)" in text, text
    assert "4 KiB: 1.03 (0.898–1.25)" in text, text  # the reference's passes alone gave 1.01–1.04
    (caption, table), = harness.metric_tables(df, 0.10)
    assert list(table["iperf3 passes, lowest–highest"]) == ["1.70–1.71", "3.25–3.34", "15.0–30.6"]
    assert ("Not decided where the lowest and highest pass of iperf3 or of copylab's path differ by more than the "
            "10% equivalence margin, as at 4 KiB (A2) and 64 KiB (iperf3): one pass moves those ratios by more than "
            "it.") in caption, caption
    # the table's caption says it in full; the paragraph after it refers back (review-fresh4 G7)
    assert ("Not decided at 4 KiB (A2) and 64 KiB (iperf3), as in the iperf3 table above: the passes named differ "
            "there by more than the margin.") in text, text
    assert "Not decided where" not in text
    # a wider margin takes the passes' spread in: nothing is said undecided for it
    assert "Not decided" not in harness.like_for_like_text(df, 1.5)


def test_harness_warns_when_the_like_for_like_pair_is_bounded_by_different_sides():
    rows = [ev.measured_row("a2", 64, busy=(1.0, 0.5), gbps=0.2), ev.measured_row("a1", 64, busy=(1.0, 0.5), gbps=0.2),
            ev.measured_row("iperf3", 64, busy=(0.48, 1.0), gbps=0.12, window_source="timer", warmup_end="timer")]
    df = ev.frame(rows)
    text = harness.like_for_like_text(df)
    assert "A2/iperf3 throughput: 64 B: 1.67" in text
    assert "at 64 B iperf3 is bounded by its receiver (sender CPU busy 48%, receiver 100%) and A1 and A2 by their sender" in text
    bounds = harness.bounds_table(df)
    assert list(bounds["bounded by"]) == ["sender", "sender", "receiver"]
    (caption, table), = harness.metric_tables(df)
    assert "Gbit/s, higher is better" in caption and "A2 / iperf3" in table.columns
    # one pass of the reference: its values are not a median that one pass cannot move
    assert "iperf3 ran 1 pass, so its values are their mean and one pass can move a row" in caption
    three = ev.frame([ev.measured_row(impl, 64, rep=r, busy=(1.0, 0.5), gbps=0.2) for impl in ("a1", "iperf3")
                      for r in range(3)])
    (caption, _), = harness.metric_tables(three)
    assert "so one pass taken under heavy steal or apart does not decide a row" in caption
    windows = harness.windows_table(df).set_index("tool")
    assert windows.loc["iperf3", "window opened and closed by"] == "timer" and windows.loc["iperf3", "mode"] == "throughput"
    both = harness.windows_table(ev.frame([ev.measured_row("a1", 64, duration_s=1.0),
                                           ev.measured_row("a1", 64, mode="latency", duration_s=0.25)]))
    assert sorted(both["window (s, median)"]) == [0.25, 1.0], "a mode's windows are never pooled with another's"
    # the table says where a window did not open on a steady state (issue 21)
    note = harness.windows_note(df)
    assert note.startswith("Not on a detected steady state: A1 (warm-up ended by not recorded);")  # rows of before
    steady_rows = df.assign(warmup_end=["steady", "bound", "timer"])
    assert harness.windows_note(steady_rows).startswith("Not on a detected steady state: iperf3 (warm-up ended by timer).")
    steady = ev.frame([ev.measured_row("a1", 64, busy=(1.0, 0.5), gbps=0.2, warmup_end="steady")])
    assert harness.windows_note(steady) == "Every tool's window opened on a steady state."


def test_configuration_names_hypervisor_tools_congestion_and_warns_about_an_old_perf():
    meta = {"kernel": "6.18.44-fc", "perf_version": "6.1.187", "cpu_caches": {"L1d": "32K", "L3": "32768K"},
            "virtualization": {"vm": "kvm", "container": "none", "hypervisor_vendor": "KVM"},
            "tool_versions": {"iperf3": "iperf 3.12", "sockperf": None}, "qdisc": "noqueue",
            "client_net": {"qdisc": "noqueue"}, "tcp_congestion_control": "bbr"}
    df = ev.frame([ev.measured_row("a1", 64, congestion="cubic", srv_congestion="cubic", cli_congestion="cubic")])
    rows = dict(configuration.rows(meta, df))
    assert rows["hypervisor"].startswith("virtual machine (KVM")
    assert rows["CPU caches"].startswith("L1d 32K, L3 32768K")
    assert rows["iperf3"] == "iperf 3.12" and rows["sockperf"] == "not installed"
    assert rows["congestion control as run"] == "sender cubic; receiver cubic"
    assert rows["qdisc"] == "sender noqueue, receiver noqueue"
    assert "older than the kernel" in configuration.perf_warning(meta)
    assert configuration.perf_warning({**meta, "perf_version": "6.18.2"}) == ""
    assert "bare metal" in dict(configuration.rows({"virtualization": {"vm": "none"}}, df))["hypervisor"]


def test_the_introduction_claims_only_what_was_counted():
    meta = {"cycles_source": "tsc", "perf_note": "SYNTHETIC: no PMU"}
    df = ev.frame([ev.measured_row("a1", 64, cycles=1e9, srv_cycles=5e8, cli_cycles=5e8)])
    text = configuration.intro_markdown(meta, df)
    assert "TSC reference cycles" in text and "Cache misses could not be counted" in text
    assert "L1-dcache load misses" not in text
    with_misses = ev.frame([ev.measured_row("a1", 64, l1_misses=10.0, llc_misses=1.0)])
    assert "L1-dcache load misses" in configuration.intro_markdown({}, with_misses)


def test_the_analysis_names_roles_not_implementations():
    """The study's implementations are named in the registry only (native/registry.def): the analysis,
    its figures and the report's analysis text ask for roles."""
    from pathlib import Path

    from copylab import registry
    lib = Path(__file__).resolve().parents[1] / "lib" / "copylab"
    files = [*sorted((lib / "analysis").rglob("*.py")), lib / "figures" / "study.py", lib / "figures" / "evidence.py",
             lib / "figures" / "profiles.py", lib / "report.py"]
    for path in files:
        text = path.read_text()
        for impl in registry.names():
            assert f'"{impl}"' not in text and f"'{impl}'" not in text, f"{path.name} names {impl}"


def test_a_saturated_senders_cost_is_said_as_the_throughput_result_not_a_second_one():
    """With the sender's CPU saturated, CPU per byte is the inverse of throughput: the sentence after a
    decided throughput win and a decided lower sender cost says they are one result."""
    df = ev.throughput_grid({"a2": {65536: 1.3}}).assign(srv_cpu_busy=1.0, cli_cpu_busy=0.5)
    s = study(df, {"cores": 2}, ev.frame([]))
    assert s.decision("a2", 65536).decision == "win"
    text = crossover.gain_sentence(s, "a2", s.decision("a2", 65536).decision)
    assert "this is the throughput result seen from the sender, not a second one" in text
    assert "So the cheaper send shows as more throughput" not in text


def test_q4_refers_back_to_the_data_paths_section_for_the_one_copy_senders_cost():
    """SYNTHETIC (N5): where A2's sender bounds the largest size and no throughput win is decided, Q4 gives the
    verdict of its sender's CPU per byte and points at the data-paths section, which says it with its numbers."""
    from copylab.analysis import data_paths
    from copylab.analysis.text.words import DATA_PATHS_SECTION, cost_claim
    df = ev.throughput_grid({"a2": {65536: 1.0}}).assign(srv_cpu_busy=1.0, cli_cpu_busy=0.5)
    s = study(df, {"cores": 2}, ev.frame([]))
    decision = s.decision("a2", 65536).decision
    assert decision != "win"
    cost = s.decision("a2", 65536, metric="srv_cpu_ns_per_byte")
    text = crossover.gain_sentence(s, "a2", decision)
    assert f'("{DATA_PATHS_SECTION}")' in text and cost_claim(s, cost, "A2’s sender") not in text, text
    assert cost_claim(s, cost, "A2's sender") in data_paths.markdown(s)


def test_a_crossover_that_differs_per_thread_count_is_said():
    """The pooled crossover need not hold at each thread count: where one differs, Q4 says so."""
    faster = {("a2", 4096, 8, r): 1.3 for r in range(5)}
    s = study(ev.throughput_grid({"a2": {65536: 1.3}}, outliers=faster), {"cores": 2}, ev.frame([]))
    assert s.crossover("a2") == 65536
    text = crossover.decision_text(s, "a2", "q4")
    assert "**A2 outperforms A1 at 64 KiB**" in text
    assert "Per thread count the crossover differs (" in text and "8 threads: 4 KiB" in text
    assert "1 thread: 64 KiB" in text
    same = study(ev.throughput_grid({"a2": {65536: 1.3}}), {"cores": 2}, ev.frame([]))
    assert crossover.per_thread_crossovers(same, "a2", "q4", same.crossover("a2")) == ""


# ------------------------------------------------------------------------------------------------
# only standing decisions are said as wins or losses (review-fresh H3)


def _short_of_standing(s, family: str, decisions) -> None:
    """Holm's correction over family leaves these decisions short of standing (as a larger family would)."""
    for d in decisions:
        s.families[family].adjusted[id(d)] = 0.0901


def test_a_win_the_correction_does_not_leave_standing_is_not_said_as_decided():
    s = study(ev.throughput_grid({"a2": {4096: 1.3}}), {"cores": 2}, ev.frame([]))
    win = s.decision("a2", 4096)
    assert win.decision == "win" and s.family("q4").stands(win)
    text = crossover.decision_text(s, "a2", "q4")
    assert "It wins at 4 KiB, but not at every larger size" in text  # standing: said as decided
    _short_of_standing(s, "q4", [win])
    text = crossover.decision_text(s, "a2", "q4")
    assert "It wins at 4 KiB" not in text and "At 4 KiB it wins before the correction only (†)" in text
    assert "4 KiB: win, " in text and f"({interval_words(win)})†" in text
    table = crossover.decision_table(s, "a2", "q4").set_index("message size")
    assert table.loc["4 KiB", "decision"] == "win†" and table.loc["4 KiB", "to decide"] == "not standing after correction"
    assert table.loc["64 KiB", "to decide"] != "not standing after correction"


def interval_words(d) -> str:
    from copylab.analysis.text.words import interval
    return f"95% interval {interval(d)}"


def test_the_per_thread_table_and_crossovers_follow_the_per_thread_family():
    faster = {("a2", 4096, 8, r): 1.3 for r in range(5)}
    s = study(ev.throughput_grid({"a2": {65536: 1.3}}, outliers=faster), {"cores": 2}, ev.frame([]))
    eight = s.compare("a2")["per_threads"][8]
    assert s.crossover("a2", 8) == 4096
    assert "8 threads: 4 KiB" in crossover.decision_text(s, "a2", "q4")
    _short_of_standing(s, "q4_per_threads", [eight[4096]])
    # the standing crossovers are the pooled one at every thread count: nothing differs to say
    assert "Per thread count the crossover differs" not in crossover.decision_text(s, "a2", "q4")
    per = crossover.per_threads_table(s, "a2", "q4").set_index("message size")
    assert per.loc["4 KiB", "8 thr"].startswith("win† ") and per.loc["64 KiB", "8 thr"].startswith("win ")
    _short_of_standing(s, "q4_per_threads", [eight[65536]])
    assert "8 threads: none decided (4 KiB before the correction only)" in crossover.decision_text(s, "a2", "q4")


def test_the_ratio_figure_marks_a_decision_that_does_not_stand():
    from copylab.figures import ratio_to_baseline
    from copylab.figures.evidence import FALLEN_KEY
    s = study(ev.throughput_grid({"a2": {4096: 1.3}}), {"cores": 2}, ev.frame([]))
    assert FALLEN_KEY not in [t.name for t in ratio_to_baseline(s).data]
    _short_of_standing(s, "q4", [s.decision("a2", 4096)])
    fig = ratio_to_baseline(s)
    a2 = next(t for t in fig.data if t.name.startswith("A2"))
    at = list(a2.x).index(4096)
    assert a2.marker.symbol[at] == "triangle-up-open" and "not standing after correction" in a2.customdata[at][1]
    assert all(not sym.endswith("-open") for i, sym in enumerate(a2.marker.symbol) if i != at)
    assert FALLEN_KEY in [t.name for t in fig.data]
    # whose correction the markers follow (review-fresh3 F7: the summary's family can mark † what stands here)
    assert "Q4's or Q5's correction" in FALLEN_KEY


def test_the_ratio_figure_caption_says_whose_correction_its_markers_follow():
    """review-fresh3 F7: A2 at 64 B drawn a standing loss (Q4's family) beside the summary's "worse†" (its own):
    the notebook's caption under the figure says the decisions stand as in Q4 and Q5's correction."""
    import json
    from pathlib import Path

    cells = json.loads((Path(__file__).parents[1] / "notebooks" / "analysis.ipynb").read_text())["cells"]
    sources = ["".join(c["source"]) for c in cells]
    at = next(i for i, s in enumerate(sources) if "figures.ratio_to_baseline(study)" in s)
    assert cells[at + 1]["cell_type"] == "markdown"
    assert "standing as in Q4 and Q5's correction" in " ".join(sources[at + 1].split())


def test_a_sides_cost_is_said_and_drawn_as_it_stands_in_its_family():
    """review-fresh4 G2: A2/A1's sender CPU per byte at 64 KiB, decided lower before the correction only, was
    printed "decided lower" (data paths, Q4) and drawn a filled ▼. Standing: decided, filled. Not standing:
    "before the correction only (†, adjusted p ...)", an open marker with its key, and Q4 reasons from the
    throughput win, which stands in its own family, not from the cost."""
    from copylab.analysis import data_paths
    from copylab.figures import user_copy_per_message
    from copylab.figures.evidence import COST_FALLEN_KEY
    df = ev.throughput_grid({"a2": {65536: 1.3}}).assign(srv_cpu_busy=1.0, cli_cpu_busy=0.5)
    df["user_copy_bytes_per_message"] = df["msg_size"].where(df["impl"] == "a1", 0.0)
    s = study(df, {"cores": 2}, ev.frame([]))
    cost = s.decision("a2", 65536, metric="srv_cpu_ns_per_byte")
    win = s.decision("a2", 65536).decision
    assert cost.decision == "loss" and s.family("cpu_sides").stands(cost) and win == "win"

    def shown():
        fig = user_copy_per_message(s)
        trace = next(t for t in fig.data if t.name and t.name.startswith("A2 / A1"))
        at = list(trace.x).index(65536)
        return (data_paths.markdown(s), crossover.gain_sentence(s, "a2", win), trace.marker.symbol[at],
                trace.customdata[at][1], [t.name for t in fig.data])

    paths, q4_text, symbol, hover, names = shown()
    assert "A1's CPU time per byte: decided lower" in paths and "decided lower" in q4_text
    assert "the throughput result seen from the sender" in q4_text
    assert symbol == "triangle-down" and COST_FALLEN_KEY not in names
    _short_of_standing(s, "cpu_sides", [cost])
    paths, q4_text, symbol, hover, names = shown()
    for text in (paths, q4_text):
        assert "decided lower" not in text and "lower before the correction only (†, adjusted p 0.0901)" in text, text
    assert "the throughput win above, which stands in this answer's family, is this saving" in q4_text
    assert symbol == "triangle-down-open" and "not standing after correction" in hover and COST_FALLEN_KEY in names


def test_a_throughput_win_that_does_not_stand_is_not_reasoned_from():
    """The saturated sender's sentence calls its cost "the throughput result": only a win standing in the
    answer's family is one (crossover.answer reads the largest size's outcome after the correction)."""
    df = ev.throughput_grid({"a2": {65536: 1.3}}).assign(srv_cpu_busy=1.0, cli_cpu_busy=0.5)
    s = study(df, {"cores": 2}, ev.frame([]))
    assert "the throughput result seen from the sender" in crossover.answer(s, "a2", "q4", [])["text"]
    _short_of_standing(s, "q4", [s.decision("a2", 65536)])
    text = crossover.answer(s, "a2", "q4", [])["text"]
    assert "the throughput result seen from the sender" not in text and "Its saving has not shown" in text, text


def test_the_cost_family_counts_each_comparison_once():
    """review-fresh4 G2: A2/A1 and A1/A2 (one test, inverted) were both members, 10 of 40: Holm's m counts each
    unordered pair of paths once per side and size, and every cost a sentence cites is a member."""
    from collections import Counter
    from copylab.analysis.study import SIDE_CPU
    s = study(ev.throughput_grid({"a2": {65536: 1.3}}), {"cores": 2}, ev.frame([]))
    fam = s.family("cpu_sides")
    sizes = sorted(s.compare("a2")["by_size"])
    pairs = Counter((frozenset((d.impl, d.base)), d.size) for d in fam.members)
    assert set(pairs.values()) == {len(SIDE_CPU)}  # each pair once per side: no inverse duplicate
    assert fam.size == len(fam.members) == len(SIDE_CPU) * 3 * len(sizes)  # {a1,a2}, {a1,a3}, {a2,a3}
    members = {id(d) for d in fam.members}
    for metric in SIDE_CPU.values():
        for impl, base in (("a2", "a1"), ("a3", "a1"), ("a3", "a2")):  # what the sentences cite
            assert all(id(d) in members for d in s.compare(impl, base, metric)["by_size"].values())
        assert not any(id(d) in members for d in s.compare("a1", "a2", metric)["by_size"].values())
    from copylab.analysis.text import methods
    said = "(each pair once: A2/A1, not also A1/A2), per size: what the sentences and figures about a side's cost cite"
    assert f"{said}: {fam.size} comparisons" in methods.markdown(s)


def test_q4_says_once_that_standing_depends_on_the_family():
    s = study(ev.throughput_grid({"a2": {4096: 1.3}}), {"cores": 2}, ev.frame([]))
    win = s.decision("a2", 4096)
    _short_of_standing(s, "q4", [win])
    assert s.family("summary").stands(win)  # the same Decision, another family
    q4_text = crossover.correction_text(s, "a2", "q4", None)
    assert "A decision's standing depends on the family it is corrected in" in q4_text
    assert "A2/A1 at 4 KiB does not stand here and does in the summary" in q4_text
    assert "depends on the family" not in crossover.correction_text(s, "a3", "q5", None)


def test_the_bounds_tables_reading_states_the_rule_its_both_rows_follow():
    """A1 at 64 B in the fresh report: sender 99%, receiver 90%, "both": the reading must say when."""
    df = ev.throughput_grid({}).assign(srv_cpu_busy=0.99, cli_cpu_busy=0.90, srv_cpu_steal=0.0, cli_cpu_steal=0.0)
    assert set(harness.bounds_table(df)["bounded by"]) == {"both"}
    text = harness.bounds_markdown(df)
    assert ('"both" when one is busy at least 95% and the other within 10 points of it, so either may bound it'
            in text) and "at least 10 points more than the other's" in text


def test_q3_says_a_thread_effect_that_does_not_stand_as_before_the_correction_only():
    """Review-fresh2 N1: Q3's per-size lines and thread-effect explanations follow Q4/Q5's rule: a decision
    Holm's correction over Q3's family does not leave standing is marked † and said 'before the correction
    only', and its explanation explains a difference, not a decided win or loss."""
    df = ev.throughput_grid({}, threads=(1, 8), thread_gain=0.0)
    boost = {("a3", 64, 8): 1.6, ("a1", 65536, 8): 0.6}
    df["throughput_gbps"] *= [boost.get((i, s, t), 1.0) for i, s, t in zip(df["impl"], df["msg_size"], df["threads"])]
    df["bytes"] = (df["throughput_gbps"] * 1e9 / 8).round()  # 1 s windows: CPU per byte follows the throughput
    df["srv_cpu_busy"], df["cli_cpu_busy"] = 0.99, 0.5     # the sender saturated: the loss is a cost per byte
    from copylab.analysis.load import add_derived
    s = study(add_derived(df), {"cores": 2})
    win, loss = s.threads[2][64]["a3"], s.threads[2][65536]["a1"]
    assert (win.decision, loss.decision) == ("win", "loss") and s.family("q3").stands(win)

    def line(text, size):
        return next(l for l in text.splitlines() if l.startswith(f"**{size}"))
    standing = q3.answer(s)
    assert "A3 decided (win)" in line(standing["text"], "64 B") and "†" not in standing["text"]
    assert "A1 at 64 KiB (" in standing["text"] and "a higher cost per byte rather than switching behind the loss" in standing["text"]
    _short_of_standing(s, "q3", [win, loss])
    answer = q3.answer(s)
    text = answer["text"]
    at_64 = line(text, "64 B")
    assert "decided (win)" not in at_64 and "A3 win, adjusted p 0.0901, before the correction only: †" in at_64
    assert at_64.startswith("**64 B: no thread effect is decided (A1 equivalent, A2 equivalent) after Holm's correction")
    assert re.search(r"A3 1\.\d+× \(95% interval [^)]*\) win†", at_64)
    assert "A1 loss, adjusted p 0.0901, before the correction only: †" in line(text, "64 KiB")
    assert answer["per_size"]["64"]["verdict"] == "mixed"
    assert answer["per_size"]["64"]["verdict_before_correction"] == "mixed"
    assert "a win before the correction only (†, adjusted p 0.0901); what follows explains a difference not " \
           "decided after it" in text
    assert "behind the loss" not in text and "a higher cost per byte rather than switching behind the fall" in text

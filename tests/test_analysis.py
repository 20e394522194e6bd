"""copylab.analysis on SYNTHETIC results (tests/data/analysis/synthetic.py): loading, statistics,
the docs/contracts.md crossover rule and the Part E answers."""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pandas as pd
import pytest

from copylab import analysis
from copylab.errors import CopylabError
from data.analysis import synthetic


@pytest.fixture(scope="module")
def full(tmp_path_factory):
    folder = synthetic.write_sweep(tmp_path_factory.mktemp("synthetic-full"))
    return analysis.load_results(folder)


def test_load_keeps_ok_rows_and_counts_failed(full):
    df, meta = full
    assert df.attrs["rows_failed"] == 1
    assert df.attrs["rows_read"] == len(df) + 1
    assert df.attrs["failed"][0]["error"].startswith("SYNTHETIC")
    assert set(df["status"]) == {"ok"}
    assert meta["cores"] == 2


def test_crossovers_follow_the_design_rule(full):
    df, _ = full
    assert analysis.crossover_by_means(df, "a2") == synthetic.EXPECTED_Q4
    assert analysis.crossover_by_means(df, "a3") == synthetic.EXPECTED_Q5


@pytest.mark.slow
def test_answers_json_holds_the_known_crossovers(full, tmp_path):
    df, meta = full
    path = analysis.write_answers(analysis.answers(df, meta), tmp_path)
    doc = json.loads(path.read_text())
    for key, expected in (("q4_one_copy_vs_two_copy", synthetic.EXPECTED_Q4),
                          ("q5_zero_copy_vs_two_copy", synthetic.EXPECTED_Q5)):
        # the first round's rule by means, kept under a name that says what it is; crossover_bytes is
        # the decided crossover the text states (docs/contracts.md, "Analysis contract")
        by_means = doc[key]["crossover_by_means"]
        assert {k: by_means[k] for k in ("crossover_bytes", "per_threads")} == expected
        assert doc[key]["crossover_bytes"] == doc[key]["decided_crossover_bytes"]
    assert doc["q2_cache_level"] == "L1"
    assert doc["q2_cache_detail"]["mean_reduction_pct"]["L1"] == pytest.approx(42.5)
    for key in ("q1_zero_copy_not_always_best", "q3_threads_cache_contention", "q6_unexpected_result"):
        assert doc[key]["text"]
    assert "4 KiB" in doc["q4_one_copy_vs_two_copy"]["text"]
    assert doc["q1_zero_copy_not_always_best"]["zc_copied_share_pct"] == pytest.approx(100.0)


@pytest.mark.parametrize("x, base, expected", [
    ((1, 2, 3), (2, 1, 1), 2),        # wins from the 2nd size on
    ((3, 1, 3), (2, 2, 2), 3),        # wins at the first, loses, wins again: only the tail counts
    ((3, 3, 1), (2, 2, 2), None),     # loses at the largest size
    ((2, 2, 2), (2, 2, 2), None),     # a tie is not a win
    ((5, 5, 5), (1, 1, 1), 1),
])
def test_crossover_rule_cases(x, base, expected):
    rows = [{"impl": impl, "mode": "throughput", "msg_size": size, "threads": 1, "rep": 0,
             "throughput_gbps": v}
            for impl, vals in (("a2", x), ("a1", base)) for size, v in zip((1, 2, 3), vals)]
    df = pd.DataFrame(rows)
    assert analysis.crossover_by_means(df, "a2") == {"crossover_bytes": expected, "per_threads": {"1": expected}}


def test_overall_crossover_uses_the_mean_over_thread_counts():
    # per thread count A2 wins from size 2 (t=1) and never (t=2), but on the mean it wins from 2
    rows = []
    for threads, a2 in ((1, (0, 10, 10)), (2, (0, 1, 1.5))):
        for size, v in zip((1, 2, 3), a2):
            rows.append({"impl": "a2", "mode": "throughput", "msg_size": size, "threads": threads,
                         "rep": 0, "throughput_gbps": v})
            rows.append({"impl": "a1", "mode": "throughput", "msg_size": size, "threads": threads,
                         "rep": 0, "throughput_gbps": 2})
    got = analysis.crossover_by_means(pd.DataFrame(rows), "a2")
    assert got == {"crossover_bytes": 2, "per_threads": {"1": 2, "2": None}}


def test_aggregate_ci_uses_t_distribution_and_survives_one_rep():
    df = pd.DataFrame({"impl": ["a1"] * 4, "mode": "throughput", "msg_size": [64, 64, 64, 128],
                       "threads": 1, "v": [1.0, 2.0, 3.0, 5.0]})
    agg = analysis.aggregate(df, "v").set_index("msg_size")
    assert agg.loc[64, "v"] == pytest.approx(2.0)
    assert agg.loc[64, "v_ci"] == pytest.approx(4.303 * 1.0 / math.sqrt(3), rel=1e-4)  # t(0.975, 2) = 4.3027
    assert agg.loc[64, "v_n"] == 3
    assert agg.loc[128, "v"] == 5.0 and np.isnan(agg.loc[128, "v_ci"]) and agg.loc[128, "v_n"] == 1


def test_t_critical_is_monotone_and_tends_to_z():
    values = [analysis.t_critical_95(d) for d in range(1, 200)]
    assert all(a > b for a, b in zip(values, values[1:]))
    assert analysis.t_critical_95(1000) == pytest.approx(1.962, abs=1e-3)


@pytest.mark.slow
def test_empty_counters_say_why_q2_cannot_be_answered(tmp_path):
    folder = synthetic.write_sweep(tmp_path, reps=1, counters=False)
    df, meta = analysis.load_results(folder)
    doc = analysis.answers(df, meta)
    assert doc["q2_cache_level"] is None
    # answers.json is plain text for programs: the reason keeps the host's perf note verbatim, no HTML
    # entities anywhere; the text says its reason in a line (the note is printed once, in the system
    # configuration: test_report)
    assert "read <not supported> on this host (SYNTHETIC" in doc["q2_cache_detail"]["reason"]
    assert "read <not supported> on this host (SYNTHETIC" not in doc["q2_cache_detail"]["text"]
    # the opening says the no-PMU line in full; Q2 says it in a few words and points there (N5)
    assert analysis.stats.NO_COUNTERS in doc["q2_cache_detail"]["text"]
    assert "perf can read no hardware performance counters here" not in doc["q2_cache_detail"]["text"]
    assert not re.search(r"&(lt|gt|amp);", json.dumps(doc))
    # crossovers do not need counters: the means still give theirs (one rep, no noise -> same tables),
    # while one pass decides nothing, so the decided crossover is null
    assert doc["q4_one_copy_vs_two_copy"]["crossover_by_means"]["per_threads"] == synthetic.EXPECTED_Q4["per_threads"]
    assert doc["q4_one_copy_vs_two_copy"]["crossover_bytes"] is None
    assert "single repetition" in doc["q4_one_copy_vs_two_copy"]["text"]
    json.dumps(doc, allow_nan=False)  # strict JSON: NaN became null


@pytest.mark.slow
def test_required_columns_only_and_no_meta(tmp_path):
    folder = synthetic.write_sweep(tmp_path, reps=1, meta=False, required_only=True)
    df, meta = analysis.load_results(folder)
    assert meta == {}
    doc = analysis.answers(df, meta)
    assert doc["q4_one_copy_vs_two_copy"]["crossover_by_means"]["crossover_bytes"] == 4096
    assert doc["q1_zero_copy_not_always_best"]["zc_copied_share_pct"] is None
    assert "unknown" in analysis.system_summary(meta)


def test_missing_data_gives_reasons_not_crashes(tmp_path):
    pd.DataFrame({c: [] for c in analysis.REQUIRED_COLUMNS}).to_csv(tmp_path / "results.csv", index=False)
    df, meta = analysis.load_results(tmp_path)
    doc = analysis.answers(df, meta)
    for key in ("q1_zero_copy_not_always_best", "q3_threads_cache_contention",
                "q4_one_copy_vs_two_copy", "q5_zero_copy_vs_two_copy", "q6_unexpected_result"):
        assert doc[key].get("reason"), key
    assert doc["q4_one_copy_vs_two_copy"]["crossover_bytes"] is None


@pytest.mark.parametrize("content, message", [
    (None, "does not exist"),
    ("impl,mode\na1,throughput\n", "lacks required columns: msg_size, threads, rep"),
    ("", "not a readable CSV"),
])
def test_bad_results_are_one_line_errors(tmp_path, content, message):
    if content is not None:
        (tmp_path / "results.csv").write_text(content)
    with pytest.raises(CopylabError, match=message) as info:
        analysis.load_results(tmp_path)
    assert "\n" not in str(info.value)


def test_bad_values_name_the_row(tmp_path):
    folder = synthetic.write_sweep(tmp_path, reps=1, required_only=True, meta=False)
    text = (folder / "results.csv").read_text().splitlines()
    text[3] = text[3].replace("a1,", "a9,", 1)
    (folder / "results.csv").write_text("\n".join(text) + "\n")
    with pytest.raises(CopylabError, match=r"row 4, column impl: must be one of .* \(got 'a9'\)"):
        analysis.load_results(folder)


def test_bad_meta_json_is_an_error(tmp_path):
    folder = synthetic.write_sweep(tmp_path, reps=1)
    (folder / "meta.json").write_text("{not json")
    with pytest.raises(CopylabError, match="meta.json is not valid JSON"):
        analysis.load_results(folder)


def test_derived_metrics(full):
    df, _ = full
    a1 = df[(df["impl"] == "a1") & (df["mode"] == "throughput")]
    assert a1["cycles_per_byte"].to_numpy() == pytest.approx(synthetic.CYCLES_PER_BYTE["a1"])
    assert a1["user_copy_bytes_per_message"].to_numpy() == pytest.approx(
        (a1["bytes"] / (a1["bytes"] // a1["msg_size"])).to_numpy())
    a3 = df[(df["impl"] == "a3") & (df["mode"] == "throughput")]
    assert a3["zc_copied_share"].to_numpy() == pytest.approx(100.0)


@pytest.mark.slow
def test_q6_states_the_correction_over_the_tests_made(full):
    df, meta = full
    q6 = analysis.answers(df, meta)["q6_unexpected_result"]
    # the synthetic tables have no pattern across cells (the signs alternate), so the surprise is one
    # cell, said as one, with the correction it survived
    assert q6["standing"] == "cell" and q6["kind"] in ("one_copy_slower", "falls_with_size", "fewer_with_threads")
    assert "is one cell" in q6["text"] and f"Holm's correction over the {q6['tests_made']} tests made" in q6["text"]


def test_formatting_helpers():
    assert analysis.fmt_size(65536) == "64 KiB"
    assert analysis.fmt_size(1 << 20) == "1 MiB"
    assert analysis.fmt_size(1500) == "1500 B"
    assert analysis.fmt_num(float("nan")) == "n/a"
    assert analysis.fmt_num(0.000123) == "1.23e-04"
    table = analysis.markdown_table(pd.DataFrame({"a": ["x|y"], "b": [1.23456]}))
    assert table.splitlines()[2] == "| x\\|y | 1.23 |"


def test_md_escape_protects_tags_outside_code_spans_only():
    text = "events read <not supported> here; run `perf stat -e <event>` to see"
    md = analysis.md_escape(text)
    assert md == "events read \\<not supported\\> here\\; run `perf stat -e <event>` to see"
    # what the notebook renders: the unanswered list escapes the plain reason for markdown
    doc = {"q2_cache_detail": {"reason": "hardware events read <not supported>"}}
    assert "\\<not supported\\>" in analysis.unanswered_markdown(doc)


def test_plural():
    assert analysis.plural(1, "thread") == "1 thread"
    assert analysis.plural(8, "thread") == "8 threads"
    assert analysis.plural(None, "thread") == "None threads"


@pytest.mark.slow
@pytest.mark.parametrize("copied_fraction,copied", [(1.0, True), (0.0, False)])
def test_q5_says_the_kernel_copied_only_when_it_flagged_it(full, copied_fraction, copied):
    df, meta = full
    df = analysis.add_derived(df.copy())
    df["zc_copied"] = (df["zc_completions"] * copied_fraction).round()
    text = analysis.answers(df, meta)["q5_zero_copy_vs_two_copy"]["text"]
    assert f"{100 * copied_fraction:.1f}% of A3's completions" in text
    assert ("copies the pinned pages after all" in text) is copied
    assert ("left without a copy" in text) is not copied


def test_relative_results_dir_means_the_projects_from_the_notebooks_folder(tmp_path, monkeypatch):
    # JupyterLab runs analysis.ipynb in notebooks/; its default results_dir names a project folder
    synthetic.write_sweep(tmp_path / "project" / "output" / "mine")
    monkeypatch.setattr(analysis.load, "PROJECT_ROOT", tmp_path / "project")
    (tmp_path / "project" / "notebooks").mkdir()
    monkeypatch.chdir(tmp_path / "project" / "notebooks")
    df, _ = analysis.load_results("output/mine")
    assert len(df) > 0
    with pytest.raises(CopylabError, match="output/none does not exist"):
        analysis.load_results("output/none")

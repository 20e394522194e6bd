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


@pytest.mark.slow
def test_answers_json_holds_the_known_answers(full, tmp_path):
    df, meta = full
    s = analysis.study(df, meta)
    doc = json.loads(analysis.write_answers(analysis.document(s), tmp_path).read_text())
    for key, impl in (("q4_one_copy_vs_two_copy", "a2"), ("q5_zero_copy_vs_two_copy", "a3")):
        assert doc[key]["crossover_bytes"] == s.crossover(impl)
        assert set(doc[key]["decision_by_size"]) == {str(size) for size in synthetic.SIZES}
    assert doc["q2_cache_level"] == "L1"
    assert doc["q2_cache_detail"]["reduction"]["L1"] == pytest.approx(42.5)
    for key in ("q1_zero_copy_not_always_best", "q3_threads_cache_contention", "q6_unexpected_result"):
        assert doc[key]["text"]
    assert doc["q1_zero_copy_not_always_best"]["counts"]["copied_share"] == pytest.approx(100.0)


def test_aggregate_ci_uses_t_distribution_and_survives_one_rep():
    df = pd.DataFrame({"impl": ["a1"] * 4, "mode": "throughput", "msg_size": [64, 64, 64, 128],
                       "threads": 1, "v": [1.0, 2.0, 3.0, 5.0]})
    agg = analysis.aggregate(df, "v").set_index("msg_size")
    assert agg.loc[64, "v"] == pytest.approx(2.0)
    assert agg.loc[64, "v_ci"] == pytest.approx(4.303 * 1.0 / math.sqrt(3), rel=1e-4)  # t(0.975, 2) = 4.3027
    assert agg.loc[64, "v_n"] == 3
    assert agg.loc[128, "v"] == 5.0 and np.isnan(agg.loc[128, "v_ci"]) and agg.loc[128, "v_n"] == 1


def test_t_quantile_is_monotone_and_tends_to_z():
    from copylab.inference import t_quantile

    values = [t_quantile(d) for d in range(1, 200)]
    assert all(a > b for a, b in zip(values, values[1:]))
    assert t_quantile(1000) == pytest.approx(1.962, abs=1e-3) and math.isnan(t_quantile(0))


@pytest.mark.slow
def test_without_counters_or_a_second_pass_the_answers_say_what_they_cannot_decide(tmp_path):
    folder = synthetic.write_sweep(tmp_path, reps=1, counters=False)
    df, meta = analysis.load_results(folder)
    doc = analysis.document(analysis.study(df, meta))
    assert doc["q2_cache_level"] is None and "kept one working set" in doc["q2_cache_detail"]["text"]
    assert not re.search(r"&(lt|gt|amp);", json.dumps(doc))
    # one pass decides nothing: no crossover, every comparison undecided
    assert doc["q4_one_copy_vs_two_copy"]["crossover_bytes"] is None
    assert set(doc["q4_one_copy_vs_two_copy"]["decision_by_size"].values()) == {"undecided"}
    json.dumps(doc, allow_nan=False)  # strict JSON: NaN became null


@pytest.mark.slow
def test_required_columns_only_and_no_meta(tmp_path):
    folder = synthetic.write_sweep(tmp_path, reps=1, meta=False, required_only=True)
    df, meta = analysis.load_results(folder)
    assert meta == {}
    doc = analysis.document(analysis.study(df, meta))
    assert doc["q1_zero_copy_not_always_best"]["counts"]["copied_share"] is None
    assert "unknown" in analysis.system_summary(meta)


def test_an_empty_table_answers_that_nothing_was_measured(tmp_path):
    pd.DataFrame({c: [] for c in analysis.REQUIRED_COLUMNS}).to_csv(tmp_path / "results.csv", index=False)
    df, meta = analysis.load_results(tmp_path)
    doc = analysis.document(analysis.study(df, meta))
    for key in ("q1_zero_copy_not_always_best", "q3_threads_cache_contention", "q4_one_copy_vs_two_copy",
                "q5_zero_copy_vs_two_copy"):
        assert "Cannot be answered" in doc[key]["text"], key
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


def test_q6_explains_the_one_copy_path_losing_where_it_loses(full):
    df, meta = full
    s = analysis.study(df, meta)
    q6 = s.verdicts["q6"]
    losses = [size for size, row in s.verdicts["q4"].by_size.items() if row.standing.lower]
    assert (q6.kind == "one_copy_slower") == bool(losses)
    if losses:
        assert q6.size in losses and "iovec" in analysis.document(s)["q6_unexpected_result"]["text"]


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


def test_plural():
    assert analysis.plural(1, "thread") == "1 thread"
    assert analysis.plural(8, "thread") == "8 threads"
    assert analysis.plural(None, "thread") == "None threads"


@pytest.mark.parametrize("copied_fraction,copied", [(1.0, True), (0.0, False)])
def test_q1_says_the_kernel_copied_only_when_it_flagged_it(full, copied_fraction, copied):
    df, meta = full
    df = analysis.add_derived(df.copy())
    df["zc_copied"] = (df["zc_completions"] * copied_fraction).round()
    text = analysis.document(analysis.study(df, meta))["q1_zero_copy_not_always_best"]["text"]
    assert ("it saves no copy either" in text) is copied
    assert ("100% of completions carried" in text) is copied


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

"""One study result, computed once (issue 32): every interval and decision the report shows for a
comparison (answers.json, the summary, Part E's tables, the figures, the other-paths section and the
executed notebook) is the Study's, and changing one run changes them all together. On a stored
SYNTHETIC default-like sweep (tests/data/analysis/default-like, written by default_like.py)."""

from __future__ import annotations

import ast
import json
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest

from conftest import ROOT
from copylab import analysis, figures, other_paths, registry
from copylab.analysis import q3, q4, q5, q6, summary
from copylab.analysis.roles import BASE, ONE_COPY, ZERO_COPY
from copylab.analysis.study import COST_FAMILY, CRITERIA, THROUGHPUT
from copylab.analysis.text import crossover
from copylab.analysis.text.words import decision_cell, interval

STORED = ROOT / "tests" / "data" / "analysis" / "default-like"
LIB = ROOT / "lib" / "copylab"


def load(folder: Path = STORED) -> analysis.Study:
    df, meta = analysis.load_results(folder)
    return analysis.study(df, meta, analysis.load_profiles(folder, df))


def numbers(d) -> tuple:
    """What answers.json holds of a decision, as JSON gives it back."""
    return tuple(json.loads(json.dumps([str(d.decision), d.ratio, d.low, d.high])))


def _from_json(entry: dict) -> tuple:
    return (entry["decision"], entry["ratio"], entry["low"], entry["high"])


def shown(s: analysis.Study) -> dict:
    """{(consumer, metric, impl, base, size, threads): what it shows} for every comparison each consumer
    shows, read from the consumer's own output (answers.json through JSON, tables' cells, figure traces)."""
    doc = json.loads(json.dumps(analysis.document(s)))
    out = {}
    for module, impl in ((q4, ONE_COPY), (q5, ZERO_COPY)):
        answer = doc[module.KEY]
        for size, entry in answer["decision_detail_by_size"].items():
            out[("answers", THROUGHPUT, impl, BASE, int(size), None)] = _from_json(entry)
        for threads, by in answer["decision_detail_per_threads"].items():
            for size, entry in by.items():
                out[("answers", THROUGHPUT, impl, BASE, int(size), int(threads))] = _from_json(entry)
                assert answer["decision_per_threads"][threads][size] == entry["decision"]
        for size, decision in answer["decision_by_size"].items():
            assert decision == answer["decision_detail_by_size"][size]["decision"]
        # the tables the notebook shows under the answer
        table, per = (t for _, t in module.tables(s))
        for _, row in table.iterrows():
            size = next(k for k in answer["decision_detail_by_size"] if analysis.fmt_size(int(k)) == row["message size"])
            out[("table", THROUGHPUT, impl, BASE, int(size), None)] = (row["decision"].rstrip("†"), row["95% interval"])
        for _, row in per.iterrows():
            for column in per.columns[1:]:
                out[("per-threads table", THROUGHPUT, impl, BASE, row["message size"],
                     int(column.split()[0]))] = row[column].replace("†", "")
    for criterion, (_, metric, _) in CRITERIA.items():
        for size, entry in doc["summary"][criterion].items():
            for impl, d in entry["decisions"].items():
                out[("summary answers", metric, impl, BASE, int(size), None)] = _from_json(d)
    table = summary.table(s)
    for column in table.columns[1:]:
        metric = CRITERIA[next(c for c, w in summary.WORDS.items() if w == column)][1]
        for size_words, cell in zip(table["message size"], table[column]):
            for part in cell.split(" · ")[1:]:
                label, verdict, rest = part.split(" ", 2)
                impl = next(i for i in registry.names() if analysis.impl_name(i) == label)
                out[("summary table", metric, impl, BASE, size_words, None)] = rest
    for size, entry in doc[q3.KEY]["per_size"].items():
        for impl, d in entry["decisions"].items():
            out[("answers q3", THROUGHPUT, impl, impl, int(size), d["threads"])] = _from_json(d)
    for cell in (doc[q6.KEY].get("details") or {}).get("cells", []):
        if cell["kind"] == "one_copy_slower":
            out[("answers q6", THROUGHPUT, ONE_COPY, BASE, cell["size"], cell["threads"])] = (cell["low"], cell["high"])
    fig = figures.ratio_to_baseline(s)
    for trace in (t for t in fig.data if t.x[0] is not None):  # not the legend's entries (paths, the † marker)
        impl = next(i for i in (ONE_COPY, ZERO_COPY) if trace.name.startswith(analysis.impl_name(i)))
        for size, y, up, down in zip(trace.x, trace.y, trace.error_y.array, trace.error_y.arrayminus):
            out[("figure", THROUGHPUT, impl, BASE, int(size), None)] = (y, y + up, y - down)
    paths = other_paths.send_paths_table(s)
    for _, row in paths.iterrows():
        impl = next(i for i in registry.names() if analysis.impl_name(i) == row["path"])
        for base in (BASE, ONE_COPY):
            cell = row[f"vs {analysis.impl_name(base)}"]
            if cell != "—":
                out[("other paths", THROUGHPUT, impl, base, row["size"], None)] = cell.replace("†", "")
    return out


def expected(s: analysis.Study, key: tuple):
    """What the consumer of key must show, from the Study's decision."""
    consumer, metric, impl, base, size, threads = key
    if consumer == "answers q3":
        d = s.threads[2][size][impl]
        return numbers(d)
    if isinstance(size, str):  # a table's size column: the words of a size
        size = next(k for k in s.compare(impl, base, metric)["by_size"] if analysis.fmt_size(k) == size)
    d = s.decision(impl, size, threads, base, metric)
    assert d is not None, key
    if consumer in ("answers", "summary answers"):
        return numbers(d)
    if consumer == "table":
        return (str(d.decision), interval(d))
    if consumer in ("per-threads table", "other paths"):
        return decision_cell(d)
    if consumer == "summary table":
        return decision_cell(d).split(" ", 1)[1]
    if consumer == "answers q6":
        return (d.low, d.high)
    return (d.ratio, d.high, d.low)


def check_all(s: analysis.Study) -> dict:
    found = shown(s)
    consumers = {k[0] for k in found} - {"answers q6"}  # Q6 shows A2/A1 cells when its surprise is theirs
    assert consumers == {"answers", "table", "per-threads table", "summary answers", "summary table", "answers q3",
                         "figure", "other paths"}, consumers
    for key, value in found.items():
        want = expected(s, key)
        if key[0] == "figure":  # plotly keeps the bar lengths: ratio + length is the bound up to rounding
            assert value == pytest.approx(want, rel=1e-12, abs=0), key
        else:
            assert value == want, key
    return found


def test_every_consumer_shows_the_studys_interval_and_decision():
    s = load()
    found = check_all(s)
    # the comparison the issue found with two intervals: A2 against A1 at the smallest size, one thread
    size = min(s.compare(ONE_COPY)["by_size"])
    cell = s.decision(ONE_COPY, size, 1)
    assert found[("answers q6", THROUGHPUT, ONE_COPY, BASE, size, 1)] == (cell.low, cell.high)
    # Q4's answer states the crossover its decisions give, and answers.json says the same
    doc = analysis.document(s)
    q4_doc = doc[q4.KEY]
    assert q4_doc["crossover_bytes"] == q4_doc["decided_crossover_bytes"] == s.crossover(ONE_COPY)
    if s.crossover(ONE_COPY) is None:
        assert "There is no size in this grid from which" in q4_doc["text"]
    else:
        start, largest = analysis.fmt_size(s.crossover(ONE_COPY)), analysis.fmt_size(max(s.compare(ONE_COPY)["by_size"]))
        assert (f"outperforms A1 from {start} to {largest}**" if start != largest else f"outperforms A1 at {start}**") \
            in q4_doc["text"] and "upward" not in q4_doc["text"]
    # no earlier round's key with another test's interval is left beside the decisions
    for key in ("significant_crossover_bytes", "significant_per_threads", "ratio_ci_by_size", "ratio_to_base_by_size"):
        assert key not in q4_doc and key not in doc[q5.KEY]


def test_answers_text_agrees_with_its_decisions_for_every_comparison():
    """Every size's decision and interval named in Q4's and Q5's text is the one in answers.json."""
    doc = analysis.document(load())
    for key in (q4.KEY, q5.KEY):
        for size, d in doc[key]["decision_detail_by_size"].items():
            words = f"{analysis.fmt_size(int(size))}: {d['decision']}, {analysis.fmt_num(d['ratio'])}× (95% interval " \
                    f"{analysis.fmt_num(d['low'])}–{analysis.fmt_num(d['high'])})"
            assert words in doc[key]["text"], (key, size, words)
        decided = {int(s) for s, d in doc[key]["decision_by_size"].items() if d == "win"}
        start = doc[key]["crossover_bytes"]
        assert start is None or all(int(s) in decided for s in doc[key]["decision_by_size"] if int(s) >= start)


COST_SAID = re.compile(r"spends (\S+)× \(95% interval (\S+)–(\S+)\) (\S+)'s CPU time per byte: ([^;(]*(\(†[^)]*\))?)")
COST_WORDS = {"win": "decided higher", "loss": "decided lower", "equivalent": "equivalent within the margin",
              "undecided": "undecided"}


def cost_sentences(s: analysis.Study) -> list[tuple]:
    """(the decision of the cost family a sentence about a side's cost cites, what the sentence says of it) for
    every such sentence of answers.json's texts and the data-paths section."""
    from copylab.analysis.text import data_paths
    doc = json.loads(json.dumps(analysis.document(s)))
    texts = [v["text"] for v in doc.values() if isinstance(v, dict) and isinstance(v.get("text"), str)]
    fam, fmt = s.family(COST_FAMILY), analysis.fmt_num
    found = []
    for said in (m for text in texts + [data_paths.markdown(s)] for m in COST_SAID.finditer(text)):
        ratio, low, high, base, words = said.group(1, 2, 3, 4, 5)
        # the members with these numbers (the synthetic sweep repeats some): one outcome, one standing
        cited = [d for d in fam.members
                 if (fmt(d.ratio), fmt(d.low), fmt(d.high), analysis.impl_name(d.base)) == (ratio, low, high, base)]
        assert len({(str(d.decision), fam.stands(d)) for d in cited}) == 1, said.group(0)
        found.append((cited[0], words))
    return found


def test_a_sides_cost_is_said_with_its_decision_and_standing():
    """review-fresh4 G2: every sentence about a side's CPU per byte cites a member of the cost family and says
    its outcome as it stands there: "decided" only where Holm's correction leaves it standing, else † with
    the adjusted p (here every decided one is then made to fall, as a larger family would)."""
    s = load()
    for fallen in (False, True):
        found = cost_sentences(s)
        assert any(d.decision != "undecided" for d, _ in found), found
        for d, words in found:
            fam = s.family(COST_FAMILY)
            assert fam.fallen(d) is (fallen and d.decision != "undecided")
            if fam.fallen(d):
                assert "decided" not in words and "(†, adjusted p 0.0901)" in words, words
            else:
                assert words.startswith(COST_WORDS[str(d.decision)]) and "†" not in words, words
        for d in s.family(COST_FAMILY).members:
            s.family(COST_FAMILY).adjusted[id(d)] = 0.0901


@pytest.mark.slow
def test_changing_one_run_changes_every_consumer_together(tmp_path):
    folder = tmp_path / "sweep"
    shutil.copytree(STORED, folder)
    before = load(folder)
    frame = pd.read_csv(folder / "results.csv")
    size = min(frame["msg_size"])
    run = (frame["impl"] == ONE_COPY) & (frame["mode"] == "throughput") & (frame["msg_size"] == size) \
        & (frame["threads"] == 1) & (frame["rep"] == 0)
    assert run.sum() == 1
    frame.loc[run, "throughput_gbps"] *= 1.6
    frame.to_csv(folder / "results.csv", index=False)
    after = load(folder)
    old, new = shown(before), check_all(after)
    cell = [k for k in new if k[2:6] in ((ONE_COPY, BASE, size, 1), (ONE_COPY, BASE, analysis.fmt_size(size), 1))
            and k[1] == THROUGHPUT]
    by_size = [k for k in new if k[2:6] in ((ONE_COPY, BASE, size, None), (ONE_COPY, BASE, analysis.fmt_size(size), None))
               and k[1] == THROUGHPUT]
    assert {k[0] for k in cell} >= {"answers", "per-threads table"}
    assert {k[0] for k in by_size} >= {"answers", "table", "summary answers", "summary table", "figure", "other paths"}
    for key in cell + by_size:
        assert old[key] != new[key], key  # every consumer moved, to the new Study's value (check_all)


# ------------------------------------------------------------------------------------------------
# the layout: one builder, floors


DECIDING = {"cell_diffs", "decide_cells", "decide_diff", "point_diff", "pool", "compare_values", "log_values",
            "point_stats", "q6_tests", "thread_decisions", "between_sweeps", "sample_diff", "pass_values",
            "pass_tables", "path_diffs", "two_state_splits", "split_p"}
# the Study's builder, and the Comparison's (two sweeps: copylab compare, issue 37), built the same way
BUILDER = {"analysis/study.py", "analysis/decisions.py", "analysis/patterns.py", "analysis/levels.py",
           "analysis/comparison.py", "analysis/states.py"}
# the budget plans extra passes from a sweep still running: it decides nothing the report shows
PLANNER = {"sweep/budget.py"}


def _names_used(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    used = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            used |= {a.name for a in node.names}
        elif isinstance(node, ast.Attribute):
            used.add(node.attr)
        elif isinstance(node, ast.Name):
            used.add(node.id)
    return used


def _imports(path: Path) -> set[str]:
    """The modules path imports, resolved to paths under lib/copylab ("analysis/text/q4", "sweep", ...)."""
    rel = path.relative_to(LIB).with_suffix("")
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = list(rel.parts[:-node.level] if node.level <= len(rel.parts) else [])
            module = base + (node.module.split(".") if node.module else [])
            found.add("/".join(module))
            found |= {"/".join(module + [a.name]) for a in node.names}
    return found


def test_no_module_outside_the_study_builder_calls_the_decision_code():
    callers = sorted(str(p.relative_to(LIB)) for p in LIB.rglob("*.py")
                     if _names_used(p) & DECIDING and str(p.relative_to(LIB)) not in BUILDER | PLANNER)
    assert not callers, callers


def test_the_analysis_floors_import_only_downwards():
    analysis_dir = LIB / "analysis"
    explain = {"explain", "explain_copies", "explain_surprise"}
    builders = {"study", "comparison"}  # the floor above compute and explain: they build what text reads
    compute = {p.stem for p in analysis_dir.glob("*.py")} - explain - {"__init__"} - builders
    upper = {f"analysis/{m}" for m in builders} | {"analysis/text"} | {f"analysis/{m}" for m in explain}
    wrong = []
    for path in analysis_dir.rglob("*.py"):
        rel = path.relative_to(analysis_dir)
        imports = _imports(path)
        if rel.parts[0] != "text" and path.stem in compute:
            wrong += [f"{rel} imports {m}" for m in imports if any(m == u or m.startswith(u + "/") for u in upper)]
        if path.stem in explain:
            wrong += [f"{rel} imports {m}" for m in imports
                      if m.startswith(("analysis/study", "analysis/comparison", "analysis/text"))]
        wrong += [f"{rel} imports {m}" for m in imports
                  if m.split("/")[0] in ("sweep", "report", "figures", "other_paths", "explorer", "notebook")]
    assert not wrong, wrong


def test_limits_and_the_memory_model_do_not_import_the_sweep():
    for name in ("limits.py", "memory.py"):
        assert not [m for m in _imports(LIB / name) if m.startswith("sweep")], name


@pytest.mark.slow
def test_the_executed_notebook_shows_the_studys_intervals(tmp_path):
    """The analysis notebook, executed on the stored sweep, shows Q4's and Q5's per-thread cells, the
    summary's cells and the other paths' cells exactly as the Study words them."""
    from copylab import report, fsutil

    s = load()
    out = tmp_path / "out"
    out.mkdir()
    with fsutil.scratch_dir("copylab-test-", 1 << 20) as scratch:
        report._execute_analysis({"results_dir": str(STORED), "output_dir": str(out)}, out / "analysis.ipynb",
                                 out, 600, scratch)
    nb = json.loads((out / "analysis.ipynb").read_text())
    text = "\n".join("".join(o.get("data", {}).get("text/markdown", "")) for c in nb["cells"] for o in c.get("outputs", []))
    wanted = [decision_cell(d) for impl in (ONE_COPY, ZERO_COPY)
              for by in s.compare(impl)["per_threads"].values() for d in by.values()]
    wanted += [interval(d) for impl in (ONE_COPY, ZERO_COPY) for d in s.compare(impl)["by_size"].values()]
    wanted += [v for k, v in shown(s).items() if k[0] in ("summary table", "other paths")]
    text = text.replace("\\", "").replace("†", "")  # the tables' Markdown escapes, and the correction's mark
    missing = [w for w in wanted if w not in text]
    assert not missing, missing
    assert json.loads((out / "answers.json").read_text()) == json.loads(json.dumps(analysis.document(s)))

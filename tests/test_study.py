"""One Study, computed once: every interval and decision the report shows for a comparison (answers.json,
the summary, Part E's tables, the figures, the other-paths table) is the Study's, changing one run
changes them all together, and the layers import downwards only (issue 45). On a stored SYNTHETIC
default-like sweep (tests/data/analysis/default-like, written by default_like.py)."""

from __future__ import annotations

import ast
import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from conftest import ROOT
from copylab import analysis, figures, other_paths, registry
from copylab.analysis import tables
from copylab.analysis.document import KEYS, document
from copylab.analysis.roles import BASE, ONE_COPY, ZERO_COPY
from copylab.analysis.study import CRITERIA, THROUGHPUT

STORED = ROOT / "tests" / "data" / "analysis" / "default-like"
LIB = ROOT / "lib" / "copylab"


def load(folder: Path = STORED) -> analysis.Study:
    df, meta = analysis.load_results(folder)
    return analysis.study(df, meta, analysis.load_profiles(folder, df))


def _json(d) -> tuple:
    return tuple(json.loads(json.dumps([str(d.decision), d.ratio, d.low, d.high])))


def shown(s: analysis.Study) -> dict:
    """{(consumer, metric, impl, base, size, threads): what it shows} for every comparison each consumer
    shows, read from the consumer's own output (answers.json through JSON, tables' cells, figure traces)."""
    doc = json.loads(json.dumps(document(s)))
    out = {}
    for q, impl in (("q4", ONE_COPY), ("q5", ZERO_COPY)):
        answer = doc[KEYS[q]]
        for size, e in answer["decision_detail_by_size"].items():
            out[("answers", THROUGHPUT, impl, BASE, int(size), None)] = (e["decision"], e["ratio"], e["low"], e["high"])
        for threads, by in answer["decision_detail_per_threads"].items():
            for size, e in by.items():
                out[("answers", THROUGHPUT, impl, BASE, int(size), int(threads))] = (e["decision"], e["ratio"], e["low"],
                                                                                     e["high"])
        table = tables.decisions(s.verdicts[q])
        for _, row in table.iterrows():
            size = next(k for k in answer["decision_by_size"] if analysis.fmt_size(int(k)) == row["size"])
            out[("table", THROUGHPUT, impl, BASE, int(size), None)] = row["95% interval"]
        per = tables.per_threads(s.verdicts[q])
        for _, row in per.iterrows():
            for column in per.columns[1:]:
                out[("per-threads table", THROUGHPUT, impl, BASE, row["size"], int(column.split()[0]))] = row[column]
    for criterion, (_, metric, _) in CRITERIA.items():
        for size, choice in doc["summary"]["criteria"][criterion].items():
            for impl, (row, _) in choice["entries"].items():
                out[("summary answers", metric, impl, BASE, int(size), None)] = (row["decision"], row["ratio"],
                                                                                 row["low"], row["high"])
    fig = figures.ratio_to_baseline(s)
    for trace in (t for t in fig.data if t.x[0] is not None):
        impl = next(i for i in (ONE_COPY, ZERO_COPY) if trace.name.startswith(analysis.impl_name(i)))
        for size, y, up, down in zip(trace.x, trace.y, trace.error_y.array, trace.error_y.arrayminus):
            out[("figure", THROUGHPUT, impl, BASE, int(size), None)] = (y, y + up, y - down)
    paths = other_paths.send_paths_table(s)
    for _, row in paths.iterrows():
        impl = next(i for i in registry.names() if analysis.impl_name(i) == row["path"])
        for base in (BASE, ONE_COPY):
            cell = row[f"vs {analysis.impl_name(base)}"]
            if cell != "—":
                out[("other paths", THROUGHPUT, impl, base, row["size"], None)] = cell
    return out


def expected(s: analysis.Study, key: tuple):
    consumer, metric, impl, base, size, threads = key
    if isinstance(size, str):
        size = next(k for k in s.compare(impl, base, metric)["by_size"] if analysis.fmt_size(k) == size)
    d = s.decision(impl, size, threads, base, metric)
    assert d is not None, key
    if consumer in ("answers", "summary answers"):
        return _json(d)
    if consumer == "table":
        return tables.interval(d)
    if consumer in ("per-threads table", "other paths"):
        fam = s.family("other_paths" if consumer == "other paths" else f"{'q4' if impl == ONE_COPY else 'q5'}_per_threads")
        from copylab.analysis.questions import Row
        return tables.cell(Row(d, fam.standing(d), fam.p_holm(d), fam.stands(d)))
    return (d.ratio, d.high, d.low)


def check_all(s: analysis.Study) -> dict:
    found = shown(s)
    assert {k[0] for k in found} == {"answers", "table", "per-threads table", "summary answers", "figure",
                                      "other paths"}
    for key, value in found.items():
        want = expected(s, key)
        if key[0] == "figure":
            assert value == pytest.approx(want, rel=1e-12, abs=0), key
        else:
            assert value == want, key
    return found


def test_every_consumer_shows_the_studys_interval_and_decision():
    s = load()
    check_all(s)
    doc = document(s)
    for q, impl in (("q4", ONE_COPY), ("q5", ZERO_COPY)):
        assert doc[KEYS[q]]["crossover_bytes"] == s.crossover(impl) == s.verdicts[q].crossover
        for gone in ("decided_crossover_bytes", "crossover_by_means", "significant_crossover_bytes"):
            assert gone not in doc[KEYS[q]]


def test_one_crossover_everywhere_q1s_break_even_is_q5s():
    s = load()
    doc = document(s)
    assert doc[KEYS["q1"]]["break_even_bytes"] == doc[KEYS["q5"]]["crossover_bytes"] == s.verdicts["q1"].crossover
    model = doc["cost_model"] or {"predicted_crossover": {}}  # the stored sweep has no message counts
    for q, impl in (("q4", ONE_COPY), ("q5", ZERO_COPY)):
        if impl in model["predicted_crossover"]:
            assert model["predicted_crossover"][impl]["measured"] == doc[KEYS[q]]["crossover_bytes"]


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
    moved = [k for k in new if k[1] == THROUGHPUT and k[2:4] == (ONE_COPY, BASE)
             and k[4] in (size, analysis.fmt_size(size)) and k[5] in (None, 1)]
    assert {k[0] for k in moved} >= {"answers", "table", "per-threads table", "summary answers", "figure",
                                     "other paths"}
    for key in moved:
        assert old[key] != new[key], key


# ------------------------------------------------------------------------------------------------
# the layout: one builder, layers that import downwards, modules of one size


DECIDING = {"cell_diffs", "decide_cells", "decide_diff", "point_diff", "pool", "compare_values", "log_values",
            "point_stats", "between_sweeps", "sample_diff", "pass_values", "pass_tables", "path_diffs",
            "thread_verdict"}
# the Study's builder (and what it calls to decide), and the Comparison's (copylab compare), built the same way
BUILDER = {"analysis/study.py", "analysis/levels.py", "analysis/threads.py", "analysis/comparison.py"}
# the budget plans extra passes from a sweep still running: it decides nothing the report shows
PLANNER = {"sweep/budget.py"}


def _names_used(path: Path) -> set[str]:
    used = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            used |= {a.name for a in node.names}
        elif isinstance(node, ast.Attribute):
            used.add(node.attr)
        elif isinstance(node, ast.Name):
            used.add(node.id)
    return used


def _imports(path: Path, module_level: bool = False) -> set[str]:
    """The copylab modules path imports, as paths under lib/copylab ("analysis/study", "inference", ...).
    module_level: only those imported when the module loads (not inside a function)."""
    rel = path.relative_to(LIB).with_suffix("")
    package = rel.parts[:-1] if rel.name != "__init__" else rel.parts[:-1]
    tree = ast.parse(path.read_text())
    nodes = tree.body if module_level else list(ast.walk(tree))
    found = set()
    for node in nodes:
        if isinstance(node, ast.ImportFrom) and node.level:
            base = list(package[:len(package) - node.level + 1])
            module = base + (node.module.split(".") if node.module else [])
            found.add("/".join(module))
            found |= {"/".join(module + [a.name]) for a in node.names}
    return {m for m in found if (LIB / f"{m}.py").exists() or (LIB / m / "__init__.py").exists()}


def test_no_module_outside_the_study_builder_calls_the_decision_code():
    callers = sorted(str(p.relative_to(LIB)) for p in LIB.rglob("*.py")
                     if _names_used(p) & DECIDING and str(p.relative_to(LIB)) not in BUILDER | PLANNER
                     and p.relative_to(LIB).parts[0] != "inference")
    assert not callers, callers


def test_the_sweep_imports_nothing_of_the_analysis_and_the_statistics_nothing_above_them():
    wrong = [f"{p.relative_to(LIB)} imports {m}" for p in (LIB / "sweep").rglob("*.py") for m in _imports(p)
             if m.startswith("analysis")]
    wrong += [f"{p.relative_to(LIB)} imports {m}" for p in (LIB / "inference").rglob("*.py") for m in _imports(p)
              if m.split("/")[0] not in ("inference", "contract", "registry", "errors", "paths")]
    assert not wrong, wrong


def test_the_analysis_layers_import_only_downwards():
    """compute <- decide (study, questions) <- words (render, sections, tables, document): the words never
    reach into the sweep, a compute module never imports the Study, its verdicts or its words."""
    words = {"render", "sections", "tables", "document", "text"}
    decide = {"study", "questions", "comparison"}
    wrong = []
    for path in (LIB / "analysis").rglob("*.py"):
        name = path.relative_to(LIB / "analysis").parts[0].removesuffix(".py")
        imports = {m.split("/")[1] for m in _imports(path) if m.startswith("analysis/") and m.count("/") >= 1}
        if name not in words | decide | {"__init__"}:
            wrong += [f"{name} imports {m}" for m in imports & (words | decide)]
        if name in decide:
            wrong += [f"{name} imports {m}" for m in imports & words]
        wrong += [f"{name} imports {m}" for m in _imports(path) if m.split("/")[0] in ("sweep", "report", "figures")]
    assert not wrong, wrong


def test_no_import_cycles_among_copylabs_modules():
    """Module-level imports only (a function's own import runs after both modules are loaded)."""
    graph = {}
    for path in LIB.rglob("*.py"):
        rel = path.relative_to(LIB).with_suffix("")
        key = "/".join(rel.parts[:-1] if rel.name == "__init__" else rel.parts)
        graph[key] = {m for m in _imports(path, module_level=True) if m != key and not key.startswith(m + "/")}
    cycles = []

    def visit(node, stack, seen):
        for nxt in graph.get(node, ()):
            if nxt in stack:
                cycles.append(stack[stack.index(nxt):] + [nxt])
            elif nxt not in seen:
                seen.add(nxt)
                visit(nxt, stack + [nxt], seen)
    for start in graph:
        visit(start, [start], {start})
    assert not cycles, cycles[:3]


def test_the_analysis_is_at_most_about_five_thousand_lines_and_no_module_over_five_hundred():
    files = [p for p in (LIB / "analysis").rglob("*") if p.suffix in (".py", ".j2")]
    sizes = {str(p.relative_to(LIB)): len(p.read_text().splitlines()) for p in files}
    assert sum(sizes.values()) <= 5200, sum(sizes.values())
    assert not {k: n for k, n in sizes.items() if n > 520}, sizes


def test_limits_and_the_memory_model_do_not_import_the_sweep():
    for name in ("limits.py", "memory.py"):
        assert not [m for m in _imports(LIB / name) if m.startswith("sweep")], name

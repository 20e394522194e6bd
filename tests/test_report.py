"""The analysis notebook and the report: papermill runs on SYNTHETIC results with awkward shapes,
the PDF/HTML build, the CLI's error handling, and the PDF of a real quick sweep."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import papermill
import pytest

from copylab import analysis, report, tools
from copylab.errors import CopylabError
from data.analysis import synthetic

ROOT = Path(__file__).resolve().parents[1]
HEADINGS = [f"{k.upper()}. {q}" for k, q in analysis.QUESTIONS.items()]


def execute(results_dir: Path, out_dir: Path) -> tuple[str, dict]:
    """Run the analysis notebook with papermill; return all its output text and answers.json."""
    out_dir.mkdir(parents=True, exist_ok=True)
    nb_path = out_dir / "analysis.ipynb"
    papermill.execute_notebook(str(report.NOTEBOOK), str(nb_path), kernel_name="python3",
                               parameters={"results_dir": str(results_dir), "output_dir": str(out_dir)},
                               cwd=str(ROOT), progress_bar=False, execution_timeout=300)
    return notebook_text(nb_path), json.loads((out_dir / "answers.json").read_text())


def notebook_text(nb_path: Path) -> str:
    """Markdown cells and the text of every output of an executed notebook."""
    nb = nbformat.read(nb_path, as_version=4)
    texts = []
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            texts.append(cell.source)
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            texts.append(data.get("text/markdown", "") or data.get("text/plain", "") or out.get("text", ""))
    return "\n".join(texts)


def pdf_text(pdf: Path) -> str:
    return subprocess.run(["pdftotext", "-layout", str(pdf), "-"], capture_output=True, text=True,
                          check=True).stdout


def test_notebook_parameters_are_declared():
    params = papermill.inspect_notebook(str(report.NOTEBOOK))
    assert set(params) == {"results_dir", "output_dir", "author", "roll_no", "repo_url", "ai_declaration"}


def test_notebook_without_counters_and_one_rep_says_what_it_cannot_answer(tmp_path):
    results = synthetic.write_sweep(tmp_path / "sweep", reps=1, counters=False)
    text, doc = execute(results, tmp_path / "out")
    assert doc["q2_cache_level"] is None
    assert "Cannot be answered from this sweep" in text
    assert "Figure not drawn" in text and "virtual machine without PMU" in text
    assert "single repetition" in text
    assert "What this sweep could not answer" in text and "**Q2**" in text
    # markdown output escapes the perf note's <not supported> (a renderer drops it as an HTML
    # tag otherwise); answers.json keeps the plain text
    assert "read &lt;not supported&gt;" in text and "read <not supported>" not in text
    assert "read <not supported>" in doc["q2_cache_detail"]["text"]
    for heading in HEADINGS:
        assert heading in text


def test_report_pdf_and_html_from_synthetic_sweep(tmp_path):
    # profiles and both receive strategies, so that every figure has its data
    results = synthetic.write_sweep(tmp_path / "sweep", profiles=True, receives=("message", "bulk"))
    decl = tmp_path / "ai.txt"
    decl.write_text("SYNTHETIC declaration: no AI was harmed.")
    paths = report.build_report(results, output_dir=tmp_path / "report", author="Ada Synthetic",
                                ai_declaration=str(decl), progress=None)
    assert sorted(p.name for p in (tmp_path / "report").iterdir()) == [
        "analysis.ipynb", "answers.json", "report.html", "report.pdf"]
    doc = json.loads(paths["answers"].read_text())
    assert doc["q4_one_copy_vs_two_copy"] == {**doc["q4_one_copy_vs_two_copy"], **synthetic.EXPECTED_Q4}
    text = " ".join(pdf_text(paths["pdf"]).split())
    for heading in HEADINGS:
        assert heading in text, heading
    # the figures are embedded as vector PDF: their axis titles are text in the report
    for label in ("message size (bytes, log scale)", "throughput (Gbit/s)", "LLC load misses per byte",
                  "A1 two-copy: send()", "send calls completed / message", "sender saving vs A1 (%)",
                  "Summary for engineers", "Holm", "Which side bounds each tool"):
        assert label in text, label
    assert "Figure not drawn" not in text
    assert "VBox" not in text and "explore(" not in text  # widget cell left out
    assert "Ada Synthetic" in text and "no AI was harmed" in text
    html = paths["html"].read_text()
    assert "Plotly.newPlot" in html
    assert re.search(r"plotly\.js v\d", html)  # plotly.js itself embedded: works offline
    assert not re.findall(r'<script[^>]+src="https?://', html), "report.html must not load scripts from a CDN"
    assert "@jupyter-widgets/html-manager" not in html  # no widget state pulling a CDN script


def test_required_columns_only_no_meta_and_no_xelatex(tmp_path, monkeypatch):
    """The barest results.csv still gives a full notebook; without xelatex the HTML is still
    written and the error says how to install it."""
    results = synthetic.write_sweep(tmp_path / "sweep", reps=1, meta=False, required_only=True)
    real_which = tools.shutil.which
    monkeypatch.setattr(tools.shutil, "which", lambda name: None if name == "xelatex" else real_which(name))
    with pytest.raises(CopylabError, match=r"needs xelatex: apt-get install texlive-xetex"):
        report.build_report(results, progress=None)
    assert (results / "report.html").is_file()
    assert not (results / "report.pdf").exists()
    text = notebook_text(results / "analysis.ipynb")
    doc = json.loads((results / "answers.json").read_text())
    assert doc["q4_one_copy_vs_two_copy"]["crossover_bytes"] == synthetic.EXPECTED_Q4["crossover_bytes"]
    assert "host is unknown" in text
    assert "no `runs/` records" in text
    assert "zero-copy completion counts" in text  # A3 figure replaced by a note


@pytest.mark.parametrize("args, message", [
    (["/nonexistent/sweep"], "does not exist"),
    (["{sweep}", "--ai-declaration", "/nonexistent/decl.txt"], "--ai-declaration /nonexistent/decl.txt: no such file"),
])
def test_report_cli_bad_input_is_one_line_and_writes_nothing(tmp_path, args, message):
    sweep = synthetic.write_sweep(tmp_path / "sweep", reps=1)
    before = sorted(p.name for p in sweep.iterdir())
    argv = [a.replace("{sweep}", str(sweep)) for a in args]
    proc = subprocess.run([sys.executable, "-m", "copylab", "report", *argv], capture_output=True,
                          text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 2
    assert message in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert sorted(p.name for p in sweep.iterdir()) == before


def test_report_from_real_quick_sweep(quick_report):
    out, proc = quick_report["dir"], quick_report["proc"]
    pdf = Path(proc.stdout.strip().splitlines()[-1])
    assert pdf == out / "report.pdf" and pdf.stat().st_size > 50_000
    text = " ".join(pdf_text(pdf).split())
    for heading in HEADINGS:
        assert heading in text, heading
    assert "throughput (Gbit/s, log scale)" in text  # a measured figure (its y axis), as vector text
    assert "Summary for engineers" in text and "Which side bounds each tool" in text
    for impl in ("a1", "a2", "a3"):  # program output of a real run per implementation
        assert f"{impl}_server" in text
    assert "perf stat -x," in text
    doc = json.loads((out / "answers.json").read_text())
    assert set(doc["q4_one_copy_vs_two_copy"]["per_threads"]) == {"1", "2"}
    assert "[2/4] executing" in proc.stderr  # progress shown


def test_declaration_that_names_itself_is_not_labelled_twice():
    fields = {"author": "", "roll_no": "", "repo_url": "",
              "ai_declaration": "AI-usage declaration (draft): I used a linter."}
    md = report.author_markdown(fields)
    assert md.count("AI-usage declaration") == 1 and "**AI-usage declaration** (draft)" in md
    fields["ai_declaration"] = "I used a linter."
    assert "**AI-usage declaration.** I used a linter." in report.author_markdown(fields)

"""The analysis notebook and the report: papermill runs on SYNTHETIC results with awkward shapes,
the PDF/HTML build, the CLI's error handling, and the PDF of a real quick sweep."""

from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import papermill
import pytest
from conftest import run_copylab
from copylab import analysis, report, report_display
from copylab.errors import CopylabError
from data.analysis import synthetic
from faults import assert_one_line_error, cmdline, descendants, env_with, folder_state, path_without

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


def rendered(markdown: str) -> str:
    """Markdown with its backslash escapes resolved: the text a reader sees (values are escaped)."""
    return re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", markdown)


def pdf_text(pdf: Path) -> str:
    return subprocess.run(["pdftotext", "-layout", str(pdf), "-"], capture_output=True, text=True,
                          check=True).stdout


def test_notebook_parameters_are_declared():
    params = papermill.inspect_notebook(str(report.NOTEBOOK))
    assert set(params) == {"results_dir", "output_dir", "author", "roll_no", "repo_url", "ai_declaration"}


@pytest.mark.slow
def test_notebook_without_counters_and_one_rep_says_what_it_cannot_answer(tmp_path, monkeypatch):
    monkeypatch.setenv("BROWSER_PATH", "/nonexistent")  # the text is checked, not the PDF's images: no Chromium
    results = synthetic.write_sweep(tmp_path / "sweep", reps=1, counters=False)
    text, doc = execute(results, tmp_path / "out")
    assert doc["q2_cache_level"] is None
    assert "kept one working set" in text and doc["q4_one_copy_vs_two_copy"]["crossover_bytes"] is None
    assert "Figure not drawn" in text and "virtual machine without PMU" in text
    # the perf note is printed once, in the system configuration, its markdown escaping <not supported>
    # (a renderer drops it as an HTML tag otherwise); Q2 says its reason in a line, answers.json's reason
    # keeps the plain note
    note = "read \\<not supported\\> on this host"
    assert text.count(note) == 1 and "read <not supported>" not in text
    assert "counted no cache misses" in text or "reads no hardware counters" in text  # the method section's ‡
    # no caption under the cache-miss figure that is not there
    assert "Cache misses (L1 data, last level) per byte moved" not in text
    for heading in HEADINGS:
        assert heading in text


@pytest.mark.parametrize("args, message", [
    (["/nonexistent/sweep"], "does not exist"),
    (["{sweep}", "--ai-declaration", "/nonexistent/decl.txt"], "--ai-declaration /nonexistent/decl.txt: no such file"),
])
@pytest.mark.slow
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
    assert "Which send path to use on this host" in text and "Cost per message" in text
    for impl in ("a1", "a2", "a3"):  # program output of a real run per implementation
        assert f"{impl}_server" in text
    assert "perf stat -x," in text
    doc = json.loads((out / "answers.json").read_text())
    assert set(doc["q4_one_copy_vs_two_copy"]["per_threads"]) == {"1", "2"}
    assert "[2/4] executing" in proc.stderr  # progress shown


def test_declaration_that_names_itself_is_not_labelled_twice():
    fields = {"author": "", "roll_no": "", "repo_url": "",
              "ai_declaration": "AI-usage declaration (draft): I used a linter."}
    md = rendered(report_display.author_markdown(fields))
    assert md.count("AI-usage declaration") == 1 and "**AI-usage declaration** (draft): I used a linter." in md
    fields["ai_declaration"] = "I used a linter."
    assert "**AI-usage declaration.** I used a linter." in rendered(report_display.author_markdown(fields))


# ------------------------------------------------------------------------------------------------
# nothing a user writes becomes code, nothing stale is handed on (issue 23)

SECRET = "COPYLAB-SECRET-91c2 (a file of this machine)"
ORDINARY_NAMES = ["john_doe", "Tom & Jerry", "Ann #1", "50% done", "C:\\Users\\me\\newdir", "{", "<"]
SCRIPT_NAMES = "अदिति शर्मा 李小龙 山田太郎 דוד 😀"


def _hostile_sweep(folder: Path, secret: Path) -> Path:
    """A synthetic sweep whose every text reaching the report tries something: meta.json's host name,
    perf note and declaration path, a failed row's error, a run's program output."""
    import csv as csv_module

    # profiles and both receive strategies, so that every figure has its data (the whole report is checked on it)
    results = synthetic.write_sweep(folder, profiles=True, receives=("message", "bulk"))
    meta = json.loads((results / "meta.json").read_text())
    meta["hostname"] = f"host-\\protect\\input{{{secret}}}-<script>alert('h')</script>"
    meta["perf_note"] = "events read <not supported> [x](javascript:alert(2)) $\\input{" + str(secret) + "}$"
    meta["params"] = {**meta["params"], "ai_declaration": str(secret), "author": "", "roll_no": "", "repo_url": ""}
    (results / "meta.json").write_text(json.dumps(meta))
    with open(results / "results.csv", newline="") as handle:
        reader = csv_module.DictReader(handle)
        fields, rows = reader.fieldnames, list(reader)
    failed = next(r for r in rows if r["status"] == "failed")
    failed["error"] = f"[x](javascript:alert(3)) <img src=x onerror=alert(4)> \\input{{{secret}}}"
    with open(results / "results.csv", "w", newline="") as handle:
        writer = csv_module.DictWriter(handle, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)
    ok = next(r for r in rows if r["status"] == "ok" and r["impl"] == "a1" and r["mode"] == "throughput")
    row = {k: (float(v) if k in ("throughput_gbps", "bytes", "duration_s") and v else v) for k, v in ok.items()}
    row.update(msg_size=int(ok["msg_size"]), threads=int(ok["threads"]), rep=int(ok["rep"]))
    breakout = f"```\n\\end{{verbatim}}\n\\input{{{secret}}}\n<script>alert(5)</script>\n````"
    (results / "runs").mkdir()
    (results / "runs" / f"{ok['point_id']}.json").write_text(json.dumps({"row": row, "raw": {
        "server": {"argv": ["a1_server", "--bind", "$(touch /tmp/x)"], "stdout": breakout, "stderr": breakout,
                   "perf": ""},
        "client": {"argv": ["client"], "stdout": '{"bytes": 1}', "stderr": "", "perf": ""}}}))
    return results


@pytest.fixture(scope="module")
def hostile_report(tmp_path_factory) -> dict:
    """One report of the hostile sweep through the CLI, every author field hostile too, TMPDIR a
    folder of its own (so what Chromium and xelatex leave there can be seen)."""
    base = tmp_path_factory.mktemp("hostile")
    secret = base / "secret.txt"
    secret.write_text(SECRET)
    results = _hostile_sweep(base / "sweep", secret)
    declaration = base / "declaration.txt"
    declaration.write_text(f"AI-usage declaration: {' '.join(ORDINARY_NAMES)} <script>alert(6)</script>\n"
                           f"\\input{{{secret}}} {SCRIPT_NAMES}\n")
    tmpdir = base / "tmp"
    tmpdir.mkdir()
    author = f"Eve \\protect\\input{{{secret}}} " + " ".join(ORDINARY_NAMES) + " " + SCRIPT_NAMES
    proc = subprocess.run([sys.executable, "-m", "copylab", "report", str(results), "--author", author,
                           "--roll-no", "<b>R1</b>_#%", "--repo-url", "<img src=x onerror=alert(7)>",
                           "--ai-declaration", str(declaration)], capture_output=True, text=True, cwd=ROOT,
                          timeout=600, env={**os.environ, "TMPDIR": str(tmpdir)})
    assert proc.returncode == 0, proc.stderr[-3000:]
    return {"dir": results, "tmpdir": tmpdir, "author": author}


@pytest.mark.slow
def test_the_whole_report_from_a_synthetic_sweep(hostile_report):
    """The hostile sweep is a whole synthetic one (profiles, both receive strategies): every section and
    figure in the PDF, the figures as vector images (their labels are text), and an offline HTML."""
    out = hostile_report["dir"]
    assert {"analysis.ipynb", "answers.json", "report.html", "report.json", "report.pdf"} <= {p.name for p in out.iterdir()}
    doc = json.loads((out / "answers.json").read_text())
    assert doc["q1_zero_copy_not_always_best"]["break_even_bytes"] == doc["q5_zero_copy_vs_two_copy"]["crossover_bytes"]
    text = " ".join(pdf_text(out / "report.pdf").split())
    for heading in HEADINGS:
        assert heading in text, heading
    for label in ("message size (bytes, log scale)", "throughput (Gbit/s)", "LLC load misses per byte",
                  "A1 two-copy: send()", "Summary", "Holm", "Cost per message", "Reference programs"):
        assert label in text, label
    assert "Figure not drawn" not in text
    assert "VBox" not in text and "explore(" not in text  # widget cell left out
    html = (out / "report.html").read_text()
    assert "Plotly.newPlot" in html
    assert re.search(r"plotly\.js v\d", html)  # plotly.js itself embedded: works offline
    assert not re.findall(r'<script[^>]+src="https?://', html), "report.html must not load scripts from a CDN"
    assert "@jupyter-widgets/html-manager" not in html  # no widget state pulling a CDN script


@pytest.mark.slow
def test_no_field_shows_a_file_or_runs_tex_in_the_pdf(hostile_report):
    pdf = hostile_report["dir"] / "report.pdf"
    text = pdf_text(pdf)
    flat = " ".join(text.split())
    assert SECRET not in text, "a file's content reached the PDF"
    for name in ORDINARY_NAMES:  # rendered literally
        assert name in flat, name
    assert "Eve \\protect\\input{" in flat and "<b>R1</b>_#%" in flat and "<img src=x onerror=alert(7)>" in flat
    assert "host-\\protect\\input{" in flat  # meta.json's host name, as text
    assert "\\end{verbatim}" in flat  # a program's output that tried to close its code block
    assert "[x](javascript:alert(3))" in flat  # a failed row's error, as text


def test_no_field_is_live_html_in_the_report(hostile_report):
    page = (hostile_report["dir"] / "report.html").read_text()
    assert SECRET not in page
    for live in ("<script>alert(", "<img src=x", 'href="javascript:', "<b>R1</b>", "onerror=alert(4)>"):
        assert live not in page, live
    assert "&lt;b&gt;R1&lt;/b&gt;" in page and "&lt;img src=x onerror=alert(7)&gt;" in page
    assert "&lt;script&gt;alert(6)&lt;/script&gt;" in page


def test_the_pdf_carries_fonts_for_the_scripts_names_are_written_in(hostile_report):
    fonts = subprocess.run(["pdffonts", str(hostile_report["dir"] / "report.pdf")], capture_output=True, text=True,
                           check=True).stdout
    for font in ("NotoSansDevanagari", "NotoSansCJK", "NotoSansHebrew", "Symbola"):
        assert font in fonts, f"{font} not embedded:\n{fonts}"
    text = pdf_text(hostile_report["dir"] / "report.pdf")
    for word in ("李小龙", "山田太郎", "😀"):
        assert word in text, word


def test_a_declaration_path_in_meta_json_stays_unread_and_tmpdir_is_left_clean(hostile_report):
    manifest = json.loads((hostile_report["dir"] / "report.json").read_text())
    assert manifest["fields"]["author"] == hostile_report["author"]
    assert manifest["fields"]["ai_declaration"].startswith("AI-usage declaration: john_doe")
    for name, digest in manifest["files"].items():
        assert hashlib.sha256((hostile_report["dir"] / name).read_bytes()).hexdigest() == digest, name
    assert list(hostile_report["tmpdir"].iterdir()) == [], "Chromium's profile or xelatex's files were left"
    chromium = subprocess.run(["pgrep", "-af", str(hostile_report["tmpdir"])], capture_output=True, text=True).stdout
    assert not chromium.strip(), chromium
    assert not [p for p in hostile_report["dir"].iterdir() if p.name.startswith(".report-staging")]


def _previous_report(folder: Path) -> dict:
    """A complete earlier report in folder (stand-in files and their manifest)."""
    for name in report.REPORT_FILES:
        (folder / name).write_bytes(b"%PDF-1.5 earlier\n" if name == "report.pdf" else f"earlier {name}\n".encode())
    (folder / report.MANIFEST).write_text(json.dumps({"earlier": True}))
    return {p.name: p.read_bytes() for p in folder.iterdir()}


def _fake_analysis(params, record, output_dir, timeout_s, scratch):
    """_execute_analysis without a kernel: an executed-looking notebook and answers.json."""
    import nbformat

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# stand-in")])
    nbformat.write(nb, record)
    (Path(params["output_dir"]) / "answers.json").write_text("{}")


def test_a_report_whose_pdf_fails_leaves_the_previous_report_whole(tmp_path, monkeypatch):
    folder = synthetic.write_sweep(tmp_path / "sweep", reps=1)
    before = _previous_report(folder)

    def failing_pdf(*args, **kwargs):
        raise CopylabError("xelatex failed to build report.pdf: Undefined control sequence")

    monkeypatch.setattr(report, "_execute_analysis", _fake_analysis)
    monkeypatch.setattr(report, "_export_pdf", failing_pdf)
    with pytest.raises(CopylabError, match="xelatex failed"):
        report.build_report(folder, progress=None)
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before, "a half-replaced report"


def test_an_html_only_report_takes_the_old_pdf_and_manifest_away(tmp_path, monkeypatch):
    folder = synthetic.write_sweep(tmp_path / "sweep", reps=1)
    _previous_report(folder)
    monkeypatch.setattr(report, "_execute_analysis", _fake_analysis)
    monkeypatch.setattr(report, "_missing_tools", lambda: ["xelatex"])
    with pytest.raises(CopylabError, match="report.html written, but report.pdf needs xelatex"):
        report.build_report(folder, progress=None)
    names = {p.name for p in folder.iterdir()}
    assert "report.pdf" not in names and report.MANIFEST not in names, "an old PDF beside a new HTML"
    assert (folder / "report.html").read_bytes() != b"earlier report.html\n"
    assert not [n for n in names if n.startswith(".report-staging")]


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["a regular file", "a FIFO (named pipe)"])
def test_a_tmpdir_that_is_not_a_folder_is_named_for_what_it_is(tmp_path, kind):
    """It said "no such folder" of a file that exists."""
    folder = synthetic.write_sweep(tmp_path / "sweep", reps=1)
    tmpdir = tmp_path / "tmpdir"
    if kind == "a regular file":
        tmpdir.write_text("not a folder\n")
    else:
        os.mkfifo(tmpdir)
    before = folder_state(folder)
    proc = subprocess.run([sys.executable, "-m", "copylab", "report", str(folder)], capture_output=True, text=True,
                          cwd=ROOT, timeout=120, env={**os.environ, "TMPDIR": str(tmpdir)})
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    errors = [line for line in proc.stderr.splitlines() if "error:" in line]  # after the progress line
    assert len(errors) == 1 and f"TMPDIR {tmpdir}: is {kind}, not a folder" in errors[0], proc.stderr
    assert folder_state(folder) == before


@pytest.mark.slow
def test_a_full_tmpdir_is_one_line_naming_it_and_nothing_is_left(tmp_path):
    folder = synthetic.write_sweep(tmp_path / "sweep", reps=1)
    full = tmp_path / "full"
    full.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(full)], check=True)
    try:
        subprocess.run(["dd", "if=/dev/zero", f"of={full}/filler", "bs=64k"], capture_output=True)
        before = {p.name: p.read_bytes() for p in folder.iterdir()}
        proc = subprocess.run([sys.executable, "-m", "copylab", "report", str(folder)], capture_output=True,
                              text=True, cwd=ROOT, timeout=300, env={**os.environ, "TMPDIR": str(full)})
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
        lines = proc.stderr.strip().splitlines()
        assert lines[-1].startswith("copylab report: error: TMPDIR " + str(full)), proc.stderr
        assert len([line for line in lines if "error:" in line]) == 1
        assert {p.name: p.read_bytes() for p in folder.iterdir()} == before
        assert sorted(p.name for p in full.iterdir()) == ["filler"]
    finally:
        subprocess.run(["umount", str(full)], check=True)


# ------------------------------------------------------------------------------------------------
# report tools missing

@pytest.mark.slow
def test_report_without_chromium_and_xelatex_writes_html_and_says_how_to_install(tmp_path):
    """The barest results.csv (required columns, one pass, no meta.json, no runs/) still gives a full
    notebook; without xelatex and Chromium the HTML is still written and the one error line says how to
    install both."""
    results = synthetic.write_sweep(tmp_path / "sweep", reps=1, meta=False, required_only=True)
    out = tmp_path / "report"
    proc = run_copylab("report", str(results), "--output-dir", str(out), timeout=600,
                       env=env_with(PATH=path_without(tmp_path, "chromium", "xelatex"), BROWSER_PATH=""))
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr
    error = [line for line in proc.stderr.splitlines() if "error:" in line]
    assert len(error) == 1, proc.stderr
    assert "xelatex" in error[0] and "chromium" in error[0] and "apt-get install" in error[0]
    assert (out / "report.html").stat().st_size > 0
    assert not (out / "report.pdf").exists(), "no PDF may be claimed without xelatex"
    assert not [p.name for p in out.iterdir() if p.name.endswith(".tmp")], "no half-written file left"
    text = notebook_text(out / "analysis.ipynb")
    doc = json.loads((out / "answers.json").read_text())
    assert doc["q4_one_copy_vs_two_copy"]["crossover_bytes"] is None  # one pass decides nothing
    assert "host is unknown" in text and "no `runs/` records" in text


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT], ids=lambda s: s.name)
def test_an_ending_signal_during_report_leaves_no_temporary_notebook(tmp_path, signum):
    from data.analysis import synthetic

    folder = synthetic.write_sweep(tmp_path / "sweep")
    before = folder_state(folder)
    proc = subprocess.Popen([sys.executable, "-m", "copylab", "report", str(folder)], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not [p for p in descendants(proc.pid) if "ipykernel" in cmdline(p)] and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(1.0)  # inside the analysis notebook
    proc.send_signal(signum)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130 and "Traceback" not in stderr, stderr
    # copylab's last word (a kernel caught mid-start may still say it saw its parent go, on a loaded host)
    assert [line for line in stderr.splitlines() if line.startswith("copylab")][-1] == "copylab report: interrupted"
    assert not [p for p in descendants(os.getpid()) if "ipykernel" in cmdline(p)], "the kernel was orphaned"
    left = set(folder_state(folder)) - set(before)
    assert not [name for name in left if "tmp" in name], left


# ------------------------------------------------------------------------------------------------
# reports over tables that answer little

def test_report_over_a_table_without_any_throughput(tmp_path):
    import pandas as pd
    from data.analysis import synthetic

    folder = synthetic.write_sweep(tmp_path / "sweep", reps=1)
    table = pd.read_csv(folder / "results.csv")
    table["throughput_gbps"] = float("nan")
    table.to_csv(folder / "results.csv", index=False)
    from copylab import analysis

    df, meta = analysis.load_results(folder)
    doc = analysis.document(analysis.study(df, meta))
    assert set(df["mode"]) == {"latency"} and df.attrs["rows_empty"] > 0
    assert "Cannot be answered" in doc["q4_one_copy_vs_two_copy"]["text"]
    assert doc["q4_one_copy_vs_two_copy"]["crossover_bytes"] is None


def test_answers_over_zero_successful_rows_say_so(tmp_path):
    import pandas as pd
    from copylab import analysis
    from data.analysis import synthetic

    folder = synthetic.write_sweep(tmp_path / "sweep", reps=1)
    table = pd.read_csv(folder / "results.csv")
    table["status"] = "failed"
    table.to_csv(folder / "results.csv", index=False)
    df, meta = analysis.load_results(folder)
    doc = analysis.document(analysis.study(df, meta))
    for key in ("q1_zero_copy_not_always_best", "q4_one_copy_vs_two_copy", "q5_zero_copy_vs_two_copy"):
        assert "Cannot be answered" in doc[key]["text"]
    assert "Unexpected" not in doc["q6_unexpected_result"]["text"]


def test_make_report_names_the_placeholders_in_one_line_before_it_builds(tmp_path):
    """The hand-in (issue 33): `copylab report` warns in one line which author fields and the declaration
    are still placeholders, before anything is built (the bundle refuses them: test_bundle)."""
    results = synthetic.write_sweep(tmp_path / "sweep", reps=2)
    meta = json.loads((results / "meta.json").read_text())
    meta["params"] = {**meta["params"], "author": "", "repo_url": ""}
    (results / "meta.json").write_text(json.dumps(meta))
    template = (Path(__file__).resolve().parents[1] / "params" / "AI_DECLARATION.md").read_text()
    said = []

    class Stop(Exception):
        pass

    def progress(line):
        said.append(line)
        if line.startswith("[1/4]"):
            raise Stop  # the warning comes before the build: nothing more is needed here

    with pytest.raises(Stop):
        report.build_report(results, tmp_path / "out", progress=progress, declaration_text=template)
    assert said[0] == "copylab report: warning: " + report_display.placeholder_line(["author", "repo_url",
                                                                                        "ai_declaration"])
    assert "\n" not in said[0]
    said.clear()
    with pytest.raises(Stop):
        report.build_report(results, tmp_path / "out", progress=progress, author="A", repo_url="https://x.invalid",
                            declaration_text="AI-usage declaration: none used.")
    assert not any("warning" in line for line in said)


# ------------------------------------------------------------------------------------------------
# issue 46: the folders a report reads and writes


def test_output_dir_of_the_users_own_files_is_refused_and_one_copylab_made_is_written(tmp_path, monkeypatch):
    """--output-dir into a folder holding the user's own report.pdf would have replaced it: refused in
    one line naming a few of its files, nothing written; a new folder is made and marked copylab's,
    and a report into it again is allowed."""
    from copylab import fsutil

    folder = synthetic.write_sweep(tmp_path / "sweep", reps=1)
    mine = tmp_path / "thesis"
    mine.mkdir()
    (mine / "report.pdf").write_bytes(b"%PDF my own")
    (mine / "answers.json").write_text("{}")
    before = folder_state(mine), folder_state(folder)
    proc = run_copylab("report", str(folder), "--output-dir", str(mine), timeout=120)
    assert_one_line_error(proc, f"--output-dir {str(mine)!r}: not empty and not a folder copylab made (it holds "
                                "answers.json, report.pdf); copylab report would overwrite files there")
    assert (folder_state(mine), folder_state(folder)) == before
    monkeypatch.setattr(report, "_execute_analysis", _fake_analysis)
    monkeypatch.setattr(report, "_missing_tools", lambda: ["xelatex"])  # the HTML is enough here
    made = tmp_path / "made"
    for _ in range(2):  # made and marked, then written again
        with pytest.raises(CopylabError, match="report.html written"):
            report.build_report(folder, output_dir=made, progress=None)
    assert (made / fsutil.OUTPUT_MARK).is_file() and (made / "report.html").is_file()


def test_a_sweep_measuring_now_is_refused_and_an_interrupted_one_is_said(tmp_path, monkeypatch):
    """report, compare and bundle read a sweep's state one way (sweep/folder.check_state)."""
    import fcntl

    folder = synthetic.write_sweep(tmp_path / "sweep", reps=1)
    before = folder_state(folder)
    with open(folder / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        proc = run_copylab("report", str(folder), timeout=120)
    assert_one_line_error(proc, "is mid-sweep: a sweep is measuring into it now (it holds the folder's lock)")
    assert folder_state(folder) == {**before, ".lock": b""}
    meta = json.loads((folder / "meta.json").read_text())
    (folder / "meta.json").write_text(json.dumps({**meta, "status": "interrupted", "finished_at": "2026-11-28T10:00:00"}))
    monkeypatch.setattr(report, "_execute_analysis", _fake_analysis)
    monkeypatch.setattr(report, "_missing_tools", lambda: ["xelatex"])
    said = []
    with pytest.raises(CopylabError, match="report.html written"):
        report.build_report(folder, progress=said.append)
    warnings = [line for line in said if "warning" in line and "placeholders" not in line]
    assert len(warnings) == 1 and warnings[0].startswith(f"copylab report: warning: {str(folder)!r} is an interrupted "
                                                         "sweep: its sweep was interrupted at 2026-11-28T10:00:00")


def test_rows_marked_ok_without_their_value_are_said_not_dropped_silently(tmp_path, monkeypatch):
    import pandas as pd

    folder = synthetic.write_sweep(tmp_path / "sweep", reps=1)
    table = pd.read_csv(folder / "results.csv")
    throughput = table.index[(table["mode"] == "throughput") & (table["status"] == "ok")][:3]
    table.loc[throughput, "throughput_gbps"] = float("nan")
    table.to_csv(folder / "results.csv", index=False)
    monkeypatch.setattr(report, "_execute_analysis", _fake_analysis)
    monkeypatch.setattr(report, "_missing_tools", lambda: ["xelatex"])
    said = []
    with pytest.raises(CopylabError, match="report.html written"):
        report.build_report(folder, progress=said.append)
    assert [line for line in said if "warning" in line and "placeholders" not in line] == [
        f"copylab report: warning: 3 row(s) of {folder}/results.csv are marked ok but carry no value of their mode "
        "(throughput_gbps in throughput mode, latency_us in latency mode): left out of the statistics, as failed "
        "points are"]

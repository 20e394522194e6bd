"""Build the report: execute notebooks/analysis.ipynb with papermill, export PDF and HTML, install
them together with their manifest. The notebook's own display helpers (the author block, the
system and measurement sections, the program output of real runs) are in report_display.py."""

from __future__ import annotations

import os
import sys
import warnings
from pathlib import Path

from . import escape, fsutil, tools, userfiles
from .analysis import load_results
from .fsutil import atomic_write_bytes, atomic_write_json, atomic_write_text
from .errors import CopylabError
from .escape import quoted_path
from .report_display import placeholder_line, placeholders, resolve_author
from .paths import NOTEBOOKS_DIR, PROJECT_ROOT

NOTEBOOK = NOTEBOOKS_DIR / "analysis.ipynb"
TEMPLATES_DIR = Path(__file__).parent / "templates"  # copylab_offline: lab without CDN scripts
WIDGET_TAG = "widget"  # cells that need a live kernel: left out of PDF and HTML
NOTEBOOK_ONLY_TAG = "notebook_only"  # what the executed notebook records for itself (answers.json written)
HTML_ONLY_TAG = "html_only"  # interactive figures too large or too deep for a page: left out of the PDF


# ---------------------------------------------------------------------------------------------
# building the report

def _say(progress, msg: str) -> None:
    if progress:
        progress(msg)


def _exporter_config(nb, fields: dict, sweep: str, remove_tags: set[str] = frozenset({WIDGET_TAG, NOTEBOOK_ONLY_TAG}), title: str = ""):
    """Export settings shared by HTML and PDF: no code, no widget cells, a title and author.
    The title and author stay plain text here: each template escapes them for its language (the
    HTML one with nbconvert's HTML escaping, copylab_pdf with escape.latex)."""
    from traitlets.config import Config

    # the explorer's saved widget state would make the HTML fetch a widget manager from a CDN,
    # for a widget that is not in the report anyway
    nb.metadata.pop("widgets", None)
    nb.metadata["title"] = title or f"copylab: the cost of data movement in Linux TCP I/O ({sweep})"
    if fields.get("author"):
        nb.metadata["authors"] = [{"name": fields["author"]}]
    c = Config()
    c.TemplateExporter.exclude_input = True
    c.TemplateExporter.exclude_input_prompt = True
    c.TemplateExporter.exclude_output_prompt = True
    c.TagRemovePreprocessor.enabled = True
    c.TagRemovePreprocessor.remove_cell_tags = set(remove_tags)
    return c


def _missing_tools() -> list[str]:
    return [t for t in ("xelatex", "pandoc", "chromium") if tools.find(t) is None]


# what one report is: written together into a staging folder, then moved into place together, the
# manifest last (it names the results and author fields it was built from, and each file's digest)
REPORT_FILES = ("analysis.ipynb", "answers.json", "report.html", "report.pdf")
MANIFEST = "report.json"
SCRATCH_BYTES = 200 << 20  # TMPDIR space a report needs: Chromium's profile, xelatex's files


def empty_rows_line(df) -> str:
    """What load_results left out besides the failed points: rows marked ok without their mode's measure."""
    n = df.attrs.get("rows_empty", 0)
    return (f"{n} row(s) of {df.attrs.get('results_dir', 'results.csv')}/results.csv are marked ok but carry no "
            "value of their mode (throughput_gbps in throughput mode, latency_us in latency mode): left out of the "
            "statistics, as failed points are")


def _check_folders(results_dir: Path, output_dir: Path, df, meta: dict, progress) -> None:
    """Before anything is written: the sweep's state (one measuring now is refused, an interrupted one
    said), rows left out without a word, and an --output-dir of the user's own files (refused)."""
    from .sweep.folder import check_state

    state = check_state(results_dir, meta, len(df), quoted_path(results_dir))
    for warning in (state, empty_rows_line(df) if df.attrs.get("rows_empty") else ""):
        if warning:
            _say(progress, f"copylab report: warning: {warning}")
    if output_dir != results_dir:  # a folder of the user's own report.pdf is not overwritten
        fsutil.check_output_dir(output_dir, "--output-dir", "copylab report")


def build_report(results_dir, output_dir=None, author=None, roll_no=None, repo_url=None,
                 ai_declaration=None, progress=print, timeout_s: int = 600, declaration_text=None) -> dict:
    """Execute the analysis notebook on results_dir; write analysis.ipynb, answers.json,
    report.html, report.pdf and report.json (the manifest) into output_dir (default results_dir).
    Returns their paths. ai_declaration names a file (read as UTF-8 text), declaration_text is
    the text itself (the bundle rebuilding a report keeps the declaration it showed).

    All or nothing: everything is built in a staging folder first and replaces the previous report
    only once the PDF exists; a failure leaves the previous report as it was. The one exception is
    a host without xelatex/pandoc/chromium, known before anything runs: the HTML report is written
    and an older report.pdf removed (it would not match), then a CopylabError says what to install.
    Raises CopylabError on bad input, a failing notebook, a missing tool or TMPDIR trouble."""
    results_dir = Path(results_dir).resolve()
    output_dir = Path(output_dir).resolve() if output_dir else results_dir
    df, meta = load_results(results_dir)  # fails fast, one line, before anything is written
    _check_folders(results_dir, output_dir, df, meta, progress)
    sources = _source_digests(results_dir)  # what the report is built from, for its manifest
    declaration = userfiles.read_declaration(ai_declaration) if ai_declaration else declaration_text
    fields = resolve_author(meta, results_dir, author=author, roll_no=roll_no, repo_url=repo_url,
                            ai_declaration=declaration)
    unfilled = placeholders(fields)
    if unfilled:  # the report is built all the same: a draft is worth reading; the bundle refuses it
        _say(progress, f"copylab report: warning: {placeholder_line(unfilled)}")
    # imported once the input is known good: nbconvert alone takes ~2 s to import
    import nbformat

    _say(progress, f"[1/4] {results_dir / 'results.csv'}: {len(df)} measurements used, "
                   f"{df.attrs['rows_failed']} failed point(s) left out")
    from .sweep.kernel import check_kernel_folders

    check_kernel_folders()  # before anything is made: HOME=/sys is named, not blamed on TMPDIR
    if output_dir != results_dir:
        fsutil.make_output_dir(output_dir, "copylab report")
    else:
        output_dir.mkdir(parents=True, exist_ok=True)
    missing = _missing_tools()
    with fsutil.scratch_dir("copylab-report-", SCRATCH_BYTES) as scratch, \
            fsutil.staging_dir(output_dir, ".report-staging-") as staging:
        _say(progress, f"[2/4] executing {NOTEBOOK.relative_to(PROJECT_ROOT)} with papermill")
        params = {"results_dir": str(results_dir), "output_dir": str(staging), **fields}
        _execute_analysis(params, staging / "analysis.ipynb", output_dir, timeout_s, scratch)
        nb = nbformat.read(staging / "analysis.ipynb", as_version=4)
        _say(progress, "[3/4] writing report.html (interactive figures, plotly.js embedded)")
        _export_html(nb, fields, results_dir.name, staging / "report.html")
        if missing:
            _install(staging, output_dir, REPORT_FILES[:3], None)
            raise CopylabError(f"report.html written, but report.pdf needs {', '.join(missing)}: "
                               + "; ".join(tools.install_hint(m) for m in missing))
        _say(progress, "[4/4] writing report.pdf (nbconvert via xelatex)")
        _export_pdf(nb, fields, results_dir.name, staging / "report.pdf", output_dir, scratch)
        _install(staging, output_dir, REPORT_FILES, _manifest(results_dir, sources, fields, staging))
    return {"notebook": output_dir / "analysis.ipynb", "answers": output_dir / "answers.json",
            "html": output_dir / "report.html", "pdf": output_dir / "report.pdf", "manifest": output_dir / MANIFEST}


def _export_html(nb, fields: dict, sweep: str, path: Path, title: str = "") -> None:
    from nbconvert import HTMLExporter

    # LaTeX cannot show the text/html that loads plotly.js; expected, not worth a warning
    warnings.filterwarnings("ignore", message="Your element with mimetype")
    exporter = HTMLExporter(config=_exporter_config(nb, fields, sweep, title=title), template_name="copylab_offline",
                            extra_template_basedirs=[str(TEMPLATES_DIR)])
    html, _ = exporter.from_notebook_node(nb)
    atomic_write_text(path, html)


def _export_pdf(nb, fields: dict, sweep: str, path: Path, output_dir: Path, scratch: Path, title: str = "") -> None:
    """report.pdf through copylab's LaTeX template (escaped title and author, fonts for the scripts
    names are written in). xelatex's own error, when it fails, is named in the one line."""
    from nbconvert import PDFExporter
    from nbconvert.exporters.pdf import LatexFailed

    exporter = PDFExporter(config=_exporter_config(nb, fields, sweep, {WIDGET_TAG, HTML_ONLY_TAG, NOTEBOOK_ONLY_TAG}, title),
                           template_name="copylab_pdf", extra_template_basedirs=[str(TEMPLATES_DIR)])
    exporter.register_filter("copylab_latex", escape.latex)
    # two xelatex passes, not nbconvert's three: the template has no table of contents or cross-reference,
    # and pandoc's longtables settle their column widths on the second
    exporter.latex_count = 2
    try:
        with fsutil.tempdir_in(scratch):  # xelatex's files go where the clean-up takes them
            pdf, _ = exporter.from_notebook_node(nb)
    except LatexFailed as exc:
        log = output_dir / f"{path.stem}.latex.log"
        atomic_write_text(log, exc.output or "")
        raise CopylabError(f"xelatex failed to build {path.name}: {_latex_error(exc.output or '')} "
                           f"(log: {log}); the previous report is unchanged") from None
    atomic_write_bytes(path, pdf)


def _latex_error(log: str) -> str:
    """The first error line of a LaTeX log ("! Undefined control sequence."), with its context."""
    lines = log.splitlines()
    for k, line in enumerate(lines):
        if line.startswith("!"):
            context = next((ln.strip() for ln in lines[k + 1:k + 4] if ln.startswith("l.")), "")
            return (line[1:].strip() + (f" at {context}" if context else ""))[:200]
    return "no error line in its log"


def _source_digests(results_dir: Path) -> dict:
    """sha256 of results.csv and meta.json as the report starts (meta.json: None when absent)."""
    import hashlib

    from .analysis.load import MAX_CSV_BYTES, MAX_META_BYTES

    digests = {}
    for key, name, limit in (("results_csv_sha256", "results.csv", MAX_CSV_BYTES),
                             ("meta_json_sha256", "meta.json", MAX_META_BYTES)):
        data = userfiles.read_inside(results_dir, name, limit)
        digests[key] = None if data is None else hashlib.sha256(data).hexdigest()
    return digests


def _manifest(results_dir: Path, sources: dict, fields: dict, staging: Path) -> dict:
    from . import __version__

    return {**sources, "results_dir": str(results_dir), "fields": fields, "created_at": _now(),
            "copylab_version": __version__,
            "files": {name: fsutil.sha256_file(staging / name) for name in REPORT_FILES if (staging / name).is_file()}}


def _now() -> str:
    from datetime import datetime, timezone

    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _install(staging: Path, output_dir: Path, names, manifest: dict | None) -> None:
    """Move a finished report into place: the old manifest goes first (a report being replaced is
    no report a bundle may take), then every file, then the new manifest. Without a manifest (an
    HTML-only report) an older report.pdf is removed: it would not match the rest."""
    (output_dir / MANIFEST).unlink(missing_ok=True)
    if manifest is None:
        (output_dir / "report.pdf").unlink(missing_ok=True)
    for name in names:
        os.replace(staging / name, output_dir / name)
    if manifest is not None:
        atomic_write_json(output_dir / MANIFEST, manifest)


def read_manifest(folder: Path) -> dict | None:
    """report.json of a results folder (None when there is none or it is not one)."""
    try:
        data = userfiles.read_inside(folder, MANIFEST, 1 << 20)
        manifest = userfiles.loads_json(data) if data is not None else None
    except (CopylabError, ValueError):
        return None
    if not isinstance(manifest, dict) or not isinstance(manifest.get("files"), dict) \
            or not isinstance(manifest.get("fields"), dict):
        return None
    return manifest


def _execute_analysis(params: dict, record: Path, output_dir: Path, timeout_s: int, scratch: Path,
                      notebook: Path = NOTEBOOK) -> None:
    """The analysis notebook, run like a sweep's notebooks (a watchdog, the kernel's chatter in a log
    that is dropped afterwards). The kernel's TMPDIR is the scratch folder, so Chromium's profile
    (kaleido) goes where the clean-up removes it. A failure keeps the executed notebook as
    analysis.failed.ipynb; an interruption leaves nothing half-written."""
    from .sweep.kernel import WarmKernel, execute

    with fsutil.socket_safe_dir(scratch) as kernel_tmp:
        kernel = WarmKernel(cwd=PROJECT_ROOT, log_path=scratch / "kernel.log",
                            env={**os.environ, "TMPDIR": str(kernel_tmp)})
        try:
            outcome = execute(notebook, record, params, kernel, timeout_s=timeout_s, cwd=PROJECT_ROOT)
        finally:
            kernel.stop()
    if not outcome.ok:
        failed = output_dir / f"{record.stem}.failed.ipynb"
        if record.exists():
            os.replace(record, failed)
            outcome.error += f" (executed notebook kept as {failed})"
        short = fsutil.space_problem(scratch.parent, SCRATCH_BYTES)
        raise CopylabError(f"{notebook.stem} notebook did not finish: {outcome.error}" + (f"; {short}" if short else ""))


def main_progress(msg: str) -> None:
    """Progress goes to stderr so the last line of stdout is the PDF path."""
    print(msg, file=sys.stderr, flush=True)

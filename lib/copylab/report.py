"""Build the report: execute notebooks/analysis.ipynb with papermill, export PDF and HTML.

Also holds the small display helpers the analysis notebook calls (author block, program
output of real runs), so the notebook stays narrative + calls.
"""

from __future__ import annotations

import json
import shlex
import sys
import textwrap
import warnings
from pathlib import Path

from . import tools
from .analysis import configuration, load_results, roles
from .fmt import fmt_num, fmt_size, md_escape, plural, system_fields
from .fsutil import atomic_write_bytes, atomic_write_text
from .errors import CopylabError
from .paths import NOTEBOOKS_DIR, PROJECT_ROOT

NOTEBOOK = NOTEBOOKS_DIR / "analysis.ipynb"
TEMPLATES_DIR = Path(__file__).parent / "templates"  # copylab_offline: lab without CDN scripts
WIDGET_TAG = "widget"  # cells that need a live kernel: left out of PDF and HTML
HTML_ONLY_TAG = "html_only"  # interactive figures too large or too deep for a page: left out of the PDF
AUTHOR_FIELDS = ("author", "roll_no", "repo_url", "ai_declaration")
KEY_OFFLOADS = ("scatter-gather", "tcp-segmentation-offload", "generic-segmentation-offload",
                "generic-receive-offload", "tx-checksumming", "rx-checksumming")
WRAP = 78  # characters per line of program output; longer lines would run off the PDF page


# ---------------------------------------------------------------------------------------------
# helpers for the notebook

def _text_or_file(value: str) -> str:
    """An AI declaration may be given as text or as a path to a file holding it."""
    value = (value or "").strip()
    if not value:
        return ""
    for candidate in (Path(value), PROJECT_ROOT / value):
        try:
            if candidate.is_file():
                return candidate.read_text().strip()
        except OSError:  # a long text is not a valid path
            break
    return value


def resolve_author(meta: dict, **given) -> dict:
    """Author fields: the ones given, else meta.json["params"], else empty. Text, not paths."""
    params = meta.get("params") or {}
    out = {}
    for field in AUTHOR_FIELDS:
        value = given.get(field) or params.get(field) or ""
        out[field] = _text_or_file(str(value)) if field == "ai_declaration" else str(value).strip()
    return out


def author_markdown(fields: dict) -> str:
    rows = [("Author", fields["author"]), ("Roll number", fields["roll_no"]),
            ("Repository", fields["repo_url"])]
    lines = [f"- **{k}:** {v if v else '_not given_'}" for k, v in rows]
    decl = fields["ai_declaration"]
    lines.append("")
    label = "AI-usage declaration"
    if decl.lower().startswith(label.lower()):
        # the text names itself (the template in params/ does): bold its own label, do not repeat it
        lines.append(f"**{decl[:len(label)]}**{decl[len(label):]}")
    else:
        lines.append(f"**{label}.** " + (decl if decl else "_not given (pass "
                     "`--ai-declaration FILE` or set `ai_declaration` in the params YAML)_"))
    return "\n".join(lines)


def system_markdown(meta: dict, df) -> str:
    """The host the numbers come from, as a table, plus the grid the sweep covered."""
    if not meta:
        head = "_No meta.json beside results.csv: the host is unknown._\n\n"
    else:
        head = ""
    f = system_fields(meta)
    extra = configuration.rows(meta, df)  # caches, hypervisor, tools, congestion and qdisc per side ...
    if meta.get("hosts"):  # the network settings are the hosts' own, in their table
        extra = [(k, v) for k, v in extra if k not in ("net.core.optmem_max", "tcp_wmem", "tcp_rmem", "veth MTU")]
    rows = list(f.items()) + [(k, v) for k, v in extra if v not in (None, "")]
    events = meta.get("perf_events") or {}
    if events:
        rows.append(("perf events counted", ", ".join(e for e, ok in events.items() if ok) or "none"))
        rows.append(("perf events not supported", ", ".join(e for e, ok in events.items() if not ok) or "none"))
    offloads = meta.get("offloads") or {}
    if offloads and not meta.get("hosts"):
        # the ones that change how much a send costs; the full list stays in meta.json
        key = [k for k in KEY_OFFLOADS if k in offloads]
        shown = ", ".join(f"{k}={'on' if offloads[k] in (True, 'on') else 'off'}" for k in key)
        rows.append(("veth offloads", f"{shown} ({len(offloads)} in meta.json)"))
    table = "| setting | value |\n|:---|:---|\n" + "\n".join(
        f"| {k} | {md_escape(v).replace('|', '/')} |" for k, v in rows)
    if meta.get("hosts"):
        table = (hosts_markdown(meta["hosts"]) + "\n\nThe driver (this table) ran the notebooks, the records and "
                 "the report; the programs ran on the hosts above.\n\n" + table)
    sizes = ", ".join(fmt_size(s) for s in sorted(df["msg_size"].unique()))
    threads = ", ".join(str(t) for t in sorted(df["threads"].unique()))
    reps = df.groupby(["impl", "mode", "msg_size", "threads"])["rep"].nunique()
    grid = (f"\n\n**Grid measured:** implementations {', '.join(sorted(df['impl'].unique()))}; "
            f"modes {', '.join(sorted(df['mode'].unique()))}; message sizes {sizes}; "
            f"thread counts {threads}; {plural(int(reps.max()) if len(reps) else 0, 'repetition')} per point; "
            f"{len(df)} measurements used.")
    failed = df.attrs.get("rows_failed", 0)
    if failed:
        first = df.attrs["failed"][0]
        grid += (f" **{failed} point(s) failed and are left out**, e.g. {first.get('impl')} "
                 f"{first.get('mode')} {first.get('msg_size')} B × {first.get('threads')} threads: "
                 f"{first.get('error') or 'no error recorded'}.")
    warning = configuration.perf_warning(meta)
    return head + table + grid + (f"\n\n{warning}" if warning else "")


def hosts_markdown(hosts: dict) -> str:
    """topology ssh: the two hosts side by side, as each contributed itself to meta.json."""
    def cell(side: str, key: str) -> str:
        h = hosts.get(side) or {}
        if key == "nic":
            nic = h.get("nic") or {}
            value = ", ".join(f"{k} {v}" for k, v in nic.items() if v) if nic else None
        elif key == "offloads":
            offloads = h.get("offloads") or {}
            value = ", ".join(f"{k}={'on' if offloads[k] else 'off'}" for k in KEY_OFFLOADS if k in offloads) or None
        else:
            value = h.get(key)
        return "unknown" if value in (None, "", []) else md_escape(value).replace("|", "/")
    rows = [("ssh destination", "destination"), ("data-path address", "address"), ("interface", "interface"),
            ("NIC (ethtool -i)", "nic"), ("MTU", "veth_mtu"), ("offloads", "offloads"), ("hostname", "hostname"),
            ("kernel", "kernel"), ("CPU", "cpu_model"), ("cores", "cores"), ("memory (GiB)", "memory_gib"),
            ("perf", "perf_version"), ("compiler", "compiler"), ("compile command", "compile_command"),
            ("net.core.optmem_max", "optmem_max"), ("tcp_wmem", "tcp_wmem"), ("tcp_rmem", "tcp_rmem")]
    return ("| host | server (sender) | client (receiver) |\n|:---|:---|:---|\n"
            + "\n".join(f"| {label} | {cell('server', key)} | {cell('client', key)} |" for label, key in rows))


def measurement_markdown(meta: dict, df) -> str:
    """How the numbers were taken: window, repetitions and order, the receiver, pinning, peers,
    profiling, and what a VM changes. All read from the sweep's own grid and rows."""
    params = meta.get("params") or {}
    reps = df.groupby(["impl", "mode", "msg_size", "threads"])["rep"].nunique()
    warmups = sorted(set(df["warmup_s"].dropna()))
    durations = df["duration_s"].dropna()
    receive = sorted(set(df["receive"].dropna())) or ["message (not recorded)"]
    lines = [
        f"- **Window:** {_joined(warmups, 's')} of warm-up discarded, then a measured window of "
        f"{fmt_num(params.get('duration_s')) if params.get('duration_s') else fmt_num(durations.median())} s "
        f"(median measured {fmt_num(durations.median())} s); perf counts both sides over the same window, which "
        "copylab's client announces as it opens and closes it.",
        f"- **Repetitions:** {int(reps.min()) if len(reps) else 0}–{int(reps.max()) if len(reps) else 0} per point"
        + (", each repetition a freshly shuffled pass over the grid (a slow drift of the host cannot line up "
           "with one implementation)" if params.get("shuffle") else ", in grid order") + ".",
        f"- **Receiver:** {', '.join(receive)} reads (`message`: each `recv` asks for the rest of one message, "
        "as an application reading whole messages does and as iperf3 does; `bulk`: up to 256 KiB per `recv`).",
        f"- **Pinning:** sender on CPU {params.get('pin_server') or 'any'}, receiver on CPU "
        f"{params.get('pin_client') or 'any'}.",
    ]
    peers = [p for p in roles.peers() if p in set(df["impl"])]
    if peers:
        lines.append(f"- **Reference programs:** {', '.join(peers)} measured by the same engine, in the same "
                     "namespaces and pinning under perf, each over its own window (the harness section says how "
                     "each window opened); iperf3 `-R -l <size>`; sockperf ping-pong `--full-rtt`, whose request "
                     "is as large as its reply, where copylab's is 8 bytes.")
    prof = df[df["profile_mode"].fillna("").astype(str) != ""]
    if len(prof):
        lines.append(f"- **Profiles:** {len(prof)} points profiled ({', '.join(sorted(set(prof['profile_mode'])))}; "
                     f"{prof['profile_event'].iloc[0]}), folded stacks in `profiles/`.")
    return "\n".join(lines)


def _joined(values, unit: str) -> str:
    return ", ".join(f"{fmt_num(v)} {unit}" for v in values) or "n/a"


def _wrap(text: str) -> str:
    lines = []
    for line in text.splitlines():
        lines.extend(textwrap.wrap(line, WRAP, subsequent_indent="    ", break_on_hyphens=False,
                                   drop_whitespace=False) or [""])
    return "\n".join(lines)


def pick_runs(results_dir, df) -> dict:
    """One real, successful run per implementation: throughput mode, the grid's middle size,
    fewest threads, first repetition (falling back to whatever record exists)."""
    runs_dir = Path(results_dir) / "runs"
    picked = {}
    if not runs_dir.is_dir():
        return picked
    sizes = sorted(df["msg_size"].unique())
    mid = sizes[len(sizes) // 2] if sizes else 0
    candidates = {}
    for path in sorted(runs_dir.glob("*.json")):
        try:
            rec = json.loads(path.read_text())
        except (json.JSONDecodeError, OSError, UnicodeDecodeError):
            continue
        row = rec.get("row") or {}
        if str(row.get("status", "ok")) != "ok" or row.get("impl") not in roles.STUDY:
            continue
        score = (row.get("mode") != "throughput", abs(int(row.get("msg_size") or 0) - mid),
                 int(row.get("threads") or 0), int(row.get("rep") or 0), path.name)
        if row["impl"] not in candidates or score < candidates[row["impl"]][0]:
            candidates[row["impl"]] = (score, path, rec)
    for impl, (_, path, rec) in sorted(candidates.items()):
        picked[impl] = {"path": path, **rec}
    return picked


def program_output_markdown(run: dict) -> str:
    """Command lines, JSON output and perf stat output of one run, as the programs printed them."""
    row = run.get("row") or {}
    parts = [f"**{str(row.get('impl', '?')).upper()}**: {row.get('mode')} mode, "
             f"{fmt_size(row.get('msg_size'))} messages, {plural(row.get('threads'), 'thread')}; "
             f"record:\n\n```\n{Path(run['path']).name}\n```"]
    raw = run.get("raw") or {}
    for side, who in (("server", "server (sender)"), ("client", "client (receiver)")):
        r = raw.get(side) or {}
        if not r:
            parts.append(f"_No {who} output recorded._")
            continue
        argv = r.get("argv") or []
        parts.append(f"**{who}** command line:\n\n```\n{_wrap(shlex.join(map(str, argv)))}\n```")
        if r.get("stdout"):
            parts.append(f"{who} stdout:\n\n```\n{_wrap(r['stdout'].strip())}\n```")
        if r.get("stderr", "").strip():
            tail = "\n".join(r["stderr"].strip().splitlines()[-8:])
            parts.append(f"{who} stderr (last lines):\n\n```\n{_wrap(tail)}\n```")
        if r.get("perf", "").strip():
            parts.append(f"{who} `perf stat -x,` output:\n\n```\n{_wrap(r['perf'].strip())}\n```")
    return "\n\n".join(parts)


# ---------------------------------------------------------------------------------------------
# building the report

def _say(progress, msg: str) -> None:
    if progress:
        progress(msg)


def _exporter_config(nb, fields: dict, sweep: str, remove_tags: set[str] = frozenset({WIDGET_TAG})):
    """Export settings shared by HTML and PDF: no code, no widget cells, a title and author."""
    from traitlets.config import Config

    # the explorer's saved widget state would make the HTML fetch a widget manager from a CDN,
    # for a widget that is not in the report anyway
    nb.metadata.pop("widgets", None)
    nb.metadata["title"] = f"copylab: the cost of data movement in Linux TCP I/O ({sweep})"
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


def build_report(results_dir, output_dir=None, author=None, roll_no=None, repo_url=None,
                 ai_declaration=None, progress=print, timeout_s: int = 600) -> dict:
    """Execute the analysis notebook on results_dir; write analysis.ipynb, answers.json,
    report.html and report.pdf into output_dir (default results_dir). Returns their paths.

    Raises CopylabError on bad input, a failing notebook or a missing tool (after writing
    what it could: without xelatex or chromium the HTML is still written)."""
    results_dir = Path(results_dir).resolve()
    output_dir = Path(output_dir).resolve() if output_dir else results_dir
    df, meta = load_results(results_dir)  # fails fast, one line, before anything is written
    if ai_declaration and not Path(ai_declaration).is_file():
        raise CopylabError(f"--ai-declaration {ai_declaration}: no such file")
    # imported once the input is known good: nbconvert alone takes ~2 s to import
    from nbconvert import HTMLExporter, PDFExporter
    from nbconvert.exporters.pdf import LatexFailed
    import nbformat

    _say(progress, f"[1/4] {results_dir / 'results.csv'}: {len(df)} measurements used, "
                   f"{df.attrs['rows_failed']} failed point(s) left out")
    fields = resolve_author(meta, author=author, roll_no=roll_no, repo_url=repo_url,
                            ai_declaration=str(ai_declaration or ""))
    output_dir.mkdir(parents=True, exist_ok=True)
    missing = _missing_tools()

    _say(progress, f"[2/4] executing {NOTEBOOK.relative_to(PROJECT_ROOT)} with papermill")
    record = output_dir / "analysis.ipynb"
    tmp_record = output_dir / ".analysis.tmp.ipynb"  # papermill wants the .ipynb suffix
    params = {"results_dir": str(results_dir), "output_dir": str(output_dir), **fields}
    _execute_analysis(params, tmp_record, output_dir, timeout_s)
    tmp_record.replace(record)
    paths = {"notebook": record, "answers": output_dir / "answers.json"}

    nb = nbformat.read(record, as_version=4)
    # LaTeX cannot show the text/html that loads plotly.js; expected, not worth a warning
    warnings.filterwarnings("ignore", message="Your element with mimetype")
    config = _exporter_config(nb, fields, results_dir.name)
    _say(progress, "[3/4] writing report.html (interactive figures, plotly.js embedded)")
    exporter = HTMLExporter(config=config, template_name="copylab_offline",
                            extra_template_basedirs=[str(TEMPLATES_DIR)])
    html, _ = exporter.from_notebook_node(nb)
    atomic_write_text(output_dir / "report.html", html)
    paths["html"] = output_dir / "report.html"

    if missing:
        raise CopylabError(f"report.html written, but report.pdf needs {', '.join(missing)}: "
                           + "; ".join(tools.install_hint(m) for m in missing))
    _say(progress, "[4/4] writing report.pdf (nbconvert via xelatex)")
    try:
        pdf_config = _exporter_config(nb, fields, results_dir.name, {WIDGET_TAG, HTML_ONLY_TAG})
        pdf, _ = PDFExporter(config=pdf_config).from_notebook_node(nb)
    except LatexFailed as exc:
        log = output_dir / "report.latex.log"
        log.write_text(exc.output or "")
        raise CopylabError(f"xelatex failed to build report.pdf (log: {log})") from exc
    atomic_write_bytes(output_dir / "report.pdf", pdf)
    paths["pdf"] = output_dir / "report.pdf"
    return paths


def _execute_analysis(params: dict, tmp_record: Path, output_dir: Path, timeout_s: int) -> None:
    """The analysis notebook, run like a sweep's notebooks (a watchdog, the kernel's chatter in a log
    that is dropped afterwards); a failure keeps the executed notebook as analysis.failed.ipynb, an
    interruption leaves nothing half-written."""
    import tempfile

    from .sweep.kernel import WarmKernel, execute

    with tempfile.TemporaryDirectory(prefix="copylab-report-") as scratch:
        kernel = WarmKernel(cwd=PROJECT_ROOT, log_path=Path(scratch) / "kernel.log")
        try:
            outcome = execute(NOTEBOOK, tmp_record, params, kernel, timeout_s=timeout_s, cwd=PROJECT_ROOT)
        except BaseException:
            tmp_record.unlink(missing_ok=True)  # Ctrl-C or SIGTERM: no half-written notebook stays
            raise
        finally:
            kernel.stop()
    if not outcome.ok:
        failed = output_dir / "analysis.failed.ipynb"
        if tmp_record.exists():
            tmp_record.replace(failed)
            outcome.error += f" (executed notebook kept as {failed})"
        raise CopylabError(f"analysis notebook did not finish: {outcome.error}")


def main_progress(msg: str) -> None:
    """Progress goes to stderr so the last line of stdout is the PDF path."""
    print(msg, file=sys.stderr, flush=True)

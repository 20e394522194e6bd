"""`copylab bundle`: the course submission, from one results folder, named as the course asks.

<ROLL>_PA02/ (and <ROLL>_PA02.zip, whose top folder it is) holds the programs as one C file each
under the course's names with a Makefile (csource), the Part C run-all script (runall), one Part D
plot script per required plot with the values as literals (plots), the results CSV and report PDF
of the same folder, a README for the grader and bundle.json (where it all came from).

Everything is checked before anything is written; the bundle is built in a hidden folder next to
the target, its C is built there once, and only a complete bundle is renamed into place. A bad
input or a failure leaves the output folder as it was.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from .. import __version__, userfiles
from ..analysis import load_results, resolve_results_dir
from ..analysis.levels import one_working_set
from ..contract import WORKING_SET_DEFAULT
from ..errors import CopylabError
from ..escape import quoted_path
from ..fsutil import atomic_write_bytes, atomic_write_json, atomic_write_text
from ..hostmeta import git_revision
from ..analysis.load import MAX_CSV_BYTES
from ..report import MANIFEST, read_manifest
from ..report_display import AUTHOR_FIELDS, placeholder_line, placeholders, resolve_author
from ..sweep.folder import check_state, records_holding
from ..sweep.records import now
from . import csource, plots, readme, runall

ROLL_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,31}")
MARK = "bundle.json"  # what makes a folder a bundle this command may replace
MAX_PDF_BYTES = 256 << 20


@dataclass
class Inputs:
    """Everything a bundle is made from, read and checked before anything is written."""

    results_dir: Path
    out_dir: Path
    roll: str
    fields: dict        # author, roll_no, repo_url, ai_declaration as text
    meta: dict
    df: object          # analysis.load_results' table (ok rows, derived metrics)
    report_checked: bool  # whether the report's own author fields could be compared
    stale_fields: list    # author fields the report shows otherwise: it is rebuilt with these first
    declaration: str | None = None  # the text of --ai-declaration FILE, read once
    pdf: bytes = b""      # report.pdf and results.csv as checked (the bundle copies these bytes)
    csv: bytes = b""

    @property
    def name(self) -> str:
        return f"{self.roll}_PA02"


def check_roll(roll: str, source: str) -> str:
    if not ROLL_PATTERN.fullmatch(roll):
        raise CopylabError(f"roll number {roll!r} (from {source}) is not a plain identifier: letters, "
                           "digits, '_' and '-', at most 32, starting with a letter or digit")
    return roll


def report_fields(results_dir: Path) -> dict | None:
    """The author fields report.pdf was built with (its manifest, report.json, records them), or
    None when there is no complete report."""
    manifest = read_manifest(results_dir)
    if manifest is None:
        return None
    return {f: str(manifest["fields"].get(f) or "").strip() for f in AUTHOR_FIELDS}


def check_report(results_dir: Path) -> tuple[bytes, bytes]:
    """report.pdf and results.csv of results_dir, checked to belong together: report.pdf a real
    PDF inside the folder (no link out of it), complete (its manifest is there), built from this
    results.csv and meta.json and unchanged since. Returns (pdf bytes, csv bytes); CopylabError
    naming what does not match otherwise."""
    again = f"run `copylab report {results_dir}` again"
    pdf = userfiles.read_inside(results_dir, "report.pdf", MAX_PDF_BYTES)
    if pdf is None:
        raise CopylabError(f"{results_dir} has no report.pdf yet: run `copylab report {results_dir}` first")
    if not pdf.startswith(b"%PDF-"):
        raise CopylabError(f"{results_dir / 'report.pdf'} is not a PDF (it does not start with %PDF-): {again}")
    manifest = read_manifest(results_dir)
    if manifest is None:
        raise CopylabError(f"{results_dir / 'report.pdf'} has no manifest ({MANIFEST}): the report was not "
                           f"completed, or was made by an older copylab; {again}")
    csv = userfiles.read_inside(results_dir, "results.csv", MAX_CSV_BYTES) or b""
    if hashlib.sha256(csv).hexdigest() != manifest.get("results_csv_sha256"):
        raise CopylabError(f"{results_dir / 'report.pdf'} was built from other results than results.csv beside it "
                           f"(the results changed after the report, or the report is older): {again}")
    meta = userfiles.read_inside(results_dir, "meta.json", MAX_CSV_BYTES)
    if (hashlib.sha256(meta).hexdigest() if meta is not None else None) != manifest.get("meta_json_sha256"):
        raise CopylabError(f"{results_dir / 'report.pdf'} was built from another meta.json than the one beside it: "
                           f"{again}")
    if hashlib.sha256(pdf).hexdigest() != manifest["files"].get("report.pdf"):
        raise CopylabError(f"{results_dir / 'report.pdf'} is not the PDF its report built (it changed since): {again}")
    return pdf, csv


def check_inputs(results_dir, roll=None, out_dir=None, author=None, repo_url=None,
                 ai_declaration=None, draft: bool = False) -> Inputs:
    """Read and check everything; raise CopylabError naming the first problem. Writes nothing.
    Author fields or a declaration still placeholders are refused unless draft."""
    if roll is not None:
        check_roll(roll, "--roll")
    results_dir = resolve_results_dir(results_dir).resolve()
    df, meta = load_results(results_dir)
    check_state(results_dir, meta, len(df), quoted_path(results_dir))  # a sweep measuring now: refused (an
    # interrupted one is bundled with a warning: readme.warnings)
    df = one_working_set(df, WORKING_SET_DEFAULT)  # Part D's plots: one working set, as the report's figures
    pdf, csv = check_report(results_dir)
    declaration = userfiles.read_declaration(ai_declaration) if ai_declaration else None
    recorded = report_fields(results_dir)
    given = {"author": author, "roll_no": roll, "repo_url": repo_url, "ai_declaration": declaration}
    # a flag wins, then what the report shows, then the grid's fields in meta.json
    fields = resolve_author(meta, results_dir, **{f: given[f] or (recorded or {}).get(f) for f in AUTHOR_FIELDS})
    if not fields["roll_no"]:
        raise CopylabError("no roll number: pass --roll ROLL (or set roll_no in the grid's params YAML "
                           "and rebuild the report)")
    check_roll(fields["roll_no"], "--roll" if roll else "the report's roll_no" if (recorded or {}).get("roll_no")
               else "roll_no in meta.json's params")
    unfilled = placeholders(fields)
    if unfilled and not draft:
        raise CopylabError(f"not bundled: {placeholder_line(unfilled, '--roll')}; or pass --draft to bundle it as it is")
    stale = [f for f in AUTHOR_FIELDS if recorded is not None and fields[f] != recorded[f]]
    out_dir = Path(out_dir).resolve() if out_dir else results_dir
    _check_out_dir(out_dir, f"{fields['roll_no']}_PA02")
    return Inputs(results_dir, out_dir, fields["roll_no"], fields, meta, df, recorded is not None, stale,
                  declaration, pdf, csv)


def _check_out_dir(out_dir: Path, name: str) -> None:
    holder = records_holding(out_dir)  # runs/ of a sweep: a resume, a report or the lab would read it as a record
    if holder is not None:
        raise CopylabError(f"--out {quoted_path(out_dir)}: among the records of the sweep {quoted_path(holder)}, "
                           "where a file would be read as the sweep's own; choose another --out")
    if not out_dir.is_dir():
        raise CopylabError(f"--out {out_dir}: no such folder" if not out_dir.exists()
                           else f"--out {out_dir}: not a folder")
    if not os.access(out_dir, os.W_OK | os.X_OK):
        raise CopylabError(f"--out {out_dir}: not writable")
    folder, archive = out_dir / name, out_dir / f"{name}.zip"
    if folder.exists() and not (folder / MARK).is_file():
        raise CopylabError(f"{folder} exists and is not a bundle (no {MARK}): move it away or use --out")
    if archive.exists() and not _is_bundle_zip(archive, name):
        raise CopylabError(f"{archive} exists and is not a bundle: move it away or use --out")


def _is_bundle_zip(path: Path, name: str) -> bool:
    try:
        with zipfile.ZipFile(path) as archive:
            return f"{name}/{MARK}" in archive.namelist()
    except (OSError, zipfile.BadZipFile):
        return False


# ---------------------------------------------------------------------------------------------

def course_names(roll: str, build: csource.NativeBuild) -> dict[str, list[str]]:
    """Program -> its course-named C files: <ROLL>_Part_A1_Server.c, and for the client (one
    program drives every server) one identical <ROLL>_Part_<X>_Client.c per server part."""
    parts = [p[: -len("_server")].upper() for p in build.programs if p.endswith("_server")]
    names = {}
    for program in build.programs:
        if program.endswith("_server"):
            names[program] = [f"{roll}_Part_{program[: -len('_server')].upper()}_Server.c"]
        elif program == "client":
            names[program] = [f"{roll}_Part_{part}_Client.c" for part in parts]
        else:
            names[program] = [f"{roll}_{program}.c"]
    return names


def provenance(inputs: Inputs) -> dict:
    meta, params = inputs.meta, inputs.meta.get("params") or {}
    return {
        "sweep": params.get("name") or inputs.results_dir.name,
        "results_dir": str(inputs.results_dir),
        "started_at": meta.get("started_at"),
        "finished_at": meta.get("finished_at"),
        "sweep_status": meta.get("status"),
        "git_revision": meta.get("git_revision"),  # what measured the results
        "points": len(inputs.df),
        "failed_points": inputs.df.attrs.get("rows_failed", 0),
        "cycles_source": meta.get("cycles_source"),
        "perf_note": meta.get("perf_note"),
    }


def grid(inputs: Inputs, build: csource.NativeBuild) -> dict:
    """The sweep's grid from meta.json (what a CSV from elsewhere lacks, from its rows), for the
    bundle's own programs: reference programs the sweep also measured (registry role `reference`) are not in it."""
    params, df = dict(inputs.meta.get("params") or {}), inputs.df
    for key, column in (("impls", "impl"), ("modes", "mode"), ("msg_sizes", "msg_size"), ("threads", "threads")):
        if not params.get(key):
            params[key] = sorted(df[column].unique().tolist())
    servers = [p[: -len("_server")] for p in build.programs if p.endswith("_server")]
    params["impls"] = [i for i in params["impls"] if i in servers] or servers
    if not params.get("repetitions") and len(df):
        params["repetitions"] = int(df["rep"].max()) + 1
    return params


def _write_sources(folder: Path, roll: str, build: csource.NativeBuild) -> dict:
    names = course_names(roll, build)
    renamed = {}
    for program, files in names.items():
        amalgam = csource.amalgamate(program, build)
        renamed.update({f"native/{k}": v for k, v in amalgam.renamed.items()})
        for name in files:
            atomic_write_text(folder / name, amalgam.text)
    makefile = csource.makefile_text(build, {p: files[0] for p, files in names.items()}, roll)
    atomic_write_text(folder / "Makefile", makefile)
    return {"programs": {p: files for p, files in names.items()}, "renamed": renamed,
            "git_revision": git_revision()}


def _write_bundle(folder: Path, inputs: Inputs) -> dict:
    roll, origin = inputs.roll, provenance(inputs)
    build = csource.read_native_build()
    sources = _write_sources(folder, roll, build)
    script = folder / f"{roll}_Part_C_run_all.sh"
    atomic_write_text(script, runall.run_all_script(roll, origin["sweep"], grid(inputs, build)))
    script.chmod(0o755)
    for spec in plots.PLOTS:
        atomic_write_text(folder / f"{roll}_Part_D_{spec.name}.py",
                          plots.plot_script(spec, inputs.df, inputs.meta, origin, roll))
    atomic_write_bytes(folder / f"{roll}_results.csv", inputs.csv)  # the bytes checked against the report
    atomic_write_bytes(folder / f"{roll}_Report.pdf", inputs.pdf)
    record = {"roll_no": roll, **{f: inputs.fields[f] for f in AUTHOR_FIELDS if f != "roll_no"},
              "created_at": now(), "copylab_version": __version__, "results": origin,
              "sources": sources, "report_fields_checked": inputs.report_checked}
    atomic_write_text(folder / "README.md", readme.readme_text(inputs, record))
    record["files"] = {p.name: hashlib.sha256(p.read_bytes()).hexdigest()
                       for p in sorted(folder.iterdir()) if p.is_file()}
    atomic_write_json(folder / MARK, record)
    return record


def _zip(folder: Path, archive: Path) -> None:
    """The archive's top folder is the bundle's; modes (the script's x bit) go in external_attr."""
    with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.write(folder, folder.name)
        for path in sorted(folder.iterdir()):
            zf.write(path, f"{folder.name}/{path.name}")  # ZipInfo.from_file: st_mode -> external_attr


def build_bundle(results_dir, roll=None, out_dir=None, author=None, repo_url=None,
                 ai_declaration=None, progress=None, draft: bool = False) -> dict:
    """Write <ROLL>_PA02/ and <ROLL>_PA02.zip into out_dir (default results_dir).

    When the flags give author fields the report does not show (a roll number given only now),
    the report is rebuilt with them first, so the PDF in the bundle carries them. Returns
    {"folder", "zip", "record", "warnings"}. Raises CopylabError (or OSError) and leaves out_dir
    as it was on any bad input."""
    inputs = check_inputs(results_dir, roll, out_dir, author, repo_url, ai_declaration, draft)
    if inputs.stale_fields:
        from ..report import build_report

        if progress:
            progress(f"report.pdf shows other {', '.join(inputs.stale_fields)} than the bundle: rebuilding it")
        build_report(inputs.results_dir, author=inputs.fields["author"], roll_no=inputs.roll,
                     repo_url=inputs.fields["repo_url"], declaration_text=inputs.fields["ai_declaration"],
                     progress=progress)
        inputs = check_inputs(results_dir, roll, out_dir, author, repo_url, ai_declaration, draft)
    name = inputs.name
    staging = Path(tempfile.mkdtemp(prefix=f".{name}.", dir=inputs.out_dir))
    try:
        folder = staging / name
        folder.mkdir()
        record = _write_bundle(folder, inputs)
        csource.check_build(folder)
        _zip(folder, staging / f"{name}.zip")
        target, archive = inputs.out_dir / name, inputs.out_dir / f"{name}.zip"
        _install(staging, folder, target, staging / f"{name}.zip", archive)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return {"folder": target, "zip": archive, "record": record, "warnings": readme.warnings(inputs, record)}


def _install(staging: Path, folder: Path, target: Path, new_zip: Path, archive: Path) -> None:
    """Swap the new bundle in; an earlier one (checked to be a bundle) goes to staging."""
    previous = staging / "previous"
    if target.exists():
        os.rename(target, previous)
    try:
        os.rename(folder, target)
        os.replace(new_zip, archive)
    except BaseException:
        with contextlib.suppress(OSError):
            if target.exists() and not folder.exists():  # the new folder was moved in: take it out
                shutil.rmtree(target)
            if previous.exists():
                os.rename(previous, target)
        raise

"""`copylab compare A B`: two sweep folders checked, then notebooks/compare.ipynb executed with papermill
and exported to HTML and PDF as the study report is (report.py: the offline template, xelatex, the
escaping of escape.py), beside comparison.json (docs/contracts.md, "Comparisons of two sweeps").

Nothing is ever written into either sweep folder: the comparison goes to its own folder, built in a
staging folder and moved into place whole."""

from __future__ import annotations

import os
from pathlib import Path

from . import contract, escape, fsutil, tools
from .analysis import load_results, resolve_results_dir
from .analysis.text.comparison import COMPARISON_JSON
from .errors import CopylabError
from .escape import quoted, quoted_path
from .paths import NOTEBOOKS_DIR, OUTPUT_DIR, PROJECT_ROOT

NOTEBOOK = NOTEBOOKS_DIR / "compare.ipynb"
FILES = ("compare.ipynb", COMPARISON_JSON, "comparison.html", "comparison.pdf")
MAX_LABEL = 60
SHOWN_MISSING = 6  # columns named in the one line; the rest counted


def load_sweep(folder, side: str, say=None) -> tuple:
    """(df, meta) of one sweep folder, or a CopylabError naming the side and what is wrong: no
    results.csv (an unrelated folder), no meta.json, a sweep measuring into it now. An interrupted
    sweep, or rows marked ok without a value, are compared with a warning (say) naming them."""
    path = resolve_results_dir(folder)
    who = f"{side} ({quoted_path(folder)})"
    try:
        df, meta = load_results(path)
    except CopylabError as exc:
        raise CopylabError(f"{who}: {exc}") from None
    if not (path / "meta.json").is_file():
        raise CopylabError(f"{who}: no meta.json beside results.csv, so what the sweep ran on is "
                           "unknown (copylab compare needs it to say what differs)")
    from .report import empty_rows_line
    from .sweep.folder import check_state

    warning = check_state(path, meta, len(df), who)
    if df.attrs.get("rows_empty"):
        warning = "; ".join(filter(None, [warning, f"{who}: {empty_rows_line(df)}"]))
    if warning and say:
        say(f"copylab compare: warning: {warning}")
    return df, meta


def check_not_itself(path_a: Path, path_b: Path) -> None:
    """A sweep compared with itself (the same folder, through a link, or a copy of it) shows no change
    whatever the code did: said, not compared."""
    if path_a == path_b:
        raise CopylabError(f"A and B are the same folder ({quoted_path(path_a)}): a sweep compared with itself shows "
                           "no change; name two sweeps")
    same = [name for name in ("results.csv", "meta.json")
            if (path_a / name).is_file() and (path_b / name).is_file()
            and fsutil.sha256_file(path_a / name) == fsutil.sha256_file(path_b / name)]
    if len(same) == 2:
        raise CopylabError(f"B ({quoted_path(path_b)}) holds the same sweep as A ({quoted_path(path_a)}): identical "
                           "results.csv and meta.json, a copy; a sweep compared with itself shows no change")


def check_same_contract(df_a, df_b, folder_a, folder_b) -> None:
    """Two folders written under different versions of the results contract are refused, naming the
    contract columns one has and the other lacks."""
    read_a, read_b = set(df_a.attrs.get("columns_read", ())), set(df_b.attrs.get("columns_read", ()))
    for lacking, folder, having in ((read_a, folder_a, read_b), (read_b, folder_b, read_a)):
        missing = [c for c in contract.COLUMNS if c in having and c not in lacking]
        if missing:
            named = ", ".join(missing[:SHOWN_MISSING]) + (f" and {len(missing) - SHOWN_MISSING} more"
                                                          if len(missing) > SHOWN_MISSING else "")
            raise CopylabError(f"{folder}: results.csv lacks {named}, which the other folder's has: the two were "
                               "written under different versions of the results contract (docs/contracts.md); "
                               "compare sweeps of one version")


def check_labels(label_a: str, label_b: str) -> None:
    """Labels reach the PDF's and the page's titles: printable, on one line, with no bidi control
    (B\\u202eevil.exe printed as Bexe.live), the first such character named by its code point."""
    for flag, label in (("--label-a", label_a), ("--label-b", label_b)):
        unsafe = escape.unsafe_character(label)
        if not label.strip() or len(label) > MAX_LABEL or unsafe:
            why = f": it holds {unsafe}" if unsafe else ""
            raise CopylabError(f"{flag}: must be 1 to {MAX_LABEL} printable characters (no control, bidi or line "
                               f"separator character), got {quoted(label)}{why}")
    if label_a == label_b:
        raise CopylabError(f"--label-a and --label-b must differ (both {quoted(label_a)})")


def default_labels(folder_a: Path, folder_b: Path) -> tuple[str, str]:
    """Each folder's name; two folders of one name (runs1/quick, runs2/quick) by as much of their paths
    as tells them apart (a suffix "(A)" doubled in titles that add the side: "quick (A) (A)")."""
    parts_a, parts_b = [_plain(p) for p in folder_a.parts], [_plain(p) for p in folder_b.parts]
    for k in range(1, max(len(parts_a), len(parts_b)) + 1):
        a, b = "/".join(parts_a[-k:]), "/".join(parts_b[-k:])
        if a != b:
            break
    a, b = a[-MAX_LABEL:].lstrip("/") or str(folder_a), b[-MAX_LABEL:].lstrip("/") or str(folder_b)
    return (a, b) if a != b else (f"{a} (1)", f"{b} (2)")


def _plain(name: str) -> str:
    """A folder name as a label can show it: one line, no control or bidi character."""
    return " ".join(escape.clean(name).split())


def check_out(out: Path, folders) -> None:
    """The output folder is neither sweep folder nor inside one, nor among any sweep's records, and
    holds nothing copylab did not write (its mark, or empty): nothing of the user's is replaced."""
    for folder in folders:
        if out == folder or folder in out.parents:
            raise CopylabError(f"--out {quoted_path(out)}: inside the sweep folder {quoted_path(folder)}; copylab "
                               "compare writes nothing into the folders it compares, choose another --out")
    from .sweep.folder import records_holding

    holder = records_holding(out)
    if holder is not None:
        raise CopylabError(f"--out {quoted_path(out)}: among the records of the sweep {quoted_path(holder)}, where "
                           "a file would be read as the sweep's own; choose another --out")
    fsutil.check_output_dir(out, "--out", "copylab compare")


def prepare(folder_a, folder_b, label_a=None, label_b=None, out=None, say=None) -> dict:
    """Everything checked before anything is written: both folders loaded (their state said through
    say), the contract and the shared points, the labels and the output folder. Returns the
    notebook's parameters."""
    from .analysis.comparison import shared_points

    path_a, path_b = resolve_results_dir(folder_a).resolve(), resolve_results_dir(folder_b).resolve()
    check_not_itself(path_a, path_b)
    defaults = default_labels(path_a, path_b)
    label_a, label_b = label_a if label_a is not None else defaults[0], label_b if label_b is not None else defaults[1]
    check_labels(label_a, label_b)
    out_dir = Path(out).resolve() if out else OUTPUT_DIR / f"compare-{path_a.name}-vs-{path_b.name}"
    check_out(out_dir, (path_a, path_b))
    df_a, _ = load_sweep(folder_a, "A", say)
    df_b, _ = load_sweep(folder_b, "B", say)
    check_same_contract(df_a, df_b, folder_a, folder_b)
    if not shared_points(df_a, df_b):
        raise CopylabError(f"{folder_a} and {folder_b} share no measured point (path, mode, size, thread count) of "
                           "copylab's own senders: nothing to compare")
    return {"a_dir": str(path_a), "b_dir": str(path_b), "label_a": label_a, "label_b": label_b,
            "output_dir": str(out_dir)}


def build_comparison(folder_a, folder_b, label_a=None, label_b=None, out=None, progress=print,
                     timeout_s: int = 600) -> dict:
    """Check both folders (one line on bad input, nothing written), execute notebooks/compare.ipynb and
    write compare.ipynb, comparison.json, comparison.html and comparison.pdf into the output folder
    (default output/compare-<A>-vs-<B>), all or nothing. Returns their paths."""
    from .report import _execute_analysis, _export_html, _export_pdf, _missing_tools, _say

    params = prepare(folder_a, folder_b, label_a, label_b, out, say=lambda text: _say(progress, text))
    out_dir = Path(params["output_dir"])
    import nbformat

    from .sweep.kernel import check_kernel_folders

    check_kernel_folders()
    fsutil.make_output_dir(out_dir, "copylab compare")
    missing = _missing_tools()
    title = f"copylab: from {params['label_a']} (A) to {params['label_b']} (B)"
    with fsutil.scratch_dir("copylab-compare-", 200 << 20) as scratch, \
            fsutil.staging_dir(out_dir, ".compare-staging-") as staging:
        _say(progress, f"[1/3] executing {NOTEBOOK.relative_to(PROJECT_ROOT)} with papermill")
        _execute_analysis({**params, "output_dir": str(staging)}, staging / "compare.ipynb", out_dir, timeout_s,
                          scratch, notebook=NOTEBOOK)
        nb = nbformat.read(staging / "compare.ipynb", as_version=4)
        _say(progress, "[2/3] writing comparison.html")
        _export_html(nb, {}, "", staging / "comparison.html", title=title)
        if missing:
            _install(staging, out_dir, FILES[:3])
            raise CopylabError(f"comparison.html written, but comparison.pdf needs {', '.join(missing)}: "
                               + "; ".join(tools.install_hint(m) for m in missing))
        _say(progress, "[3/3] writing comparison.pdf (nbconvert via xelatex)")
        _export_pdf(nb, {}, "", staging / "comparison.pdf", out_dir, scratch, title=title)
        _install(staging, out_dir, FILES)
    return {"notebook": out_dir / FILES[0], "comparison": out_dir / FILES[1], "html": out_dir / FILES[2],
            "pdf": out_dir / FILES[3]}


def _install(staging: Path, out_dir: Path, names) -> None:
    """The finished files into place; without a PDF an older comparison.pdf goes (it would not match)."""
    if "comparison.pdf" not in names:
        (out_dir / "comparison.pdf").unlink(missing_ok=True)
    for name in names:
        os.replace(staging / name, out_dir / name)

"""`copylab compare A B`: two sweep folders checked, then notebooks/compare.ipynb executed with papermill
and exported to HTML and PDF as the study report is (report.py: the offline template, xelatex, the
escaping of escape.py), beside comparison.json (docs/contracts.md, "Comparisons of two sweeps").

Nothing is ever written into either sweep folder: the comparison goes to its own folder, built in a
staging folder and moved into place whole."""

from __future__ import annotations

import os
from pathlib import Path

from . import contract, fsutil, tools
from .analysis import load_results, resolve_results_dir
from .analysis.text.comparison import COMPARISON_JSON
from .errors import CopylabError
from .paths import NOTEBOOKS_DIR, OUTPUT_DIR, PROJECT_ROOT

NOTEBOOK = NOTEBOOKS_DIR / "compare.ipynb"
FILES = ("compare.ipynb", COMPARISON_JSON, "comparison.html", "comparison.pdf")
MAX_LABEL = 60
SHOWN_MISSING = 6  # columns named in the one line; the rest counted


def load_sweep(folder, side: str) -> tuple:
    """(df, meta) of one finished sweep folder, or a CopylabError naming the side and what is wrong: no
    results.csv (an unrelated folder), no meta.json, a sweep still running."""
    path = resolve_results_dir(folder)
    try:
        df, meta = load_results(path)
    except CopylabError as exc:
        raise CopylabError(f"{side} ({folder}): {exc}") from None
    if not (path / "meta.json").is_file():
        raise CopylabError(f"{side} ({folder}): no meta.json beside results.csv, so what the sweep ran on is "
                           "unknown (copylab compare needs it to say what differs)")
    if meta.get("status") == "running":
        raise CopylabError(f"{side} ({folder}) is mid-sweep (meta.json status 'running'): compare it once the "
                           "sweep has finished (or resume it: copylab sweep ... --out the same folder)")
    return df, meta


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
    for flag, label in (("--label-a", label_a), ("--label-b", label_b)):
        if not label.strip() or len(label) > MAX_LABEL or any(ord(ch) < 32 for ch in label):
            raise CopylabError(f"{flag}: must be 1 to {MAX_LABEL} printable characters, got {label!r}")
    if label_a == label_b:
        raise CopylabError(f"--label-a and --label-b must differ (both {label_a!r})")


def default_labels(folder_a: Path, folder_b: Path) -> tuple[str, str]:
    """The folders' names; where those are alike, the shortest ends of their paths that differ
    (runs-1/default, runs-2/default); one folder compared with itself: its name, and its name again."""
    a, b = folder_a.name or str(folder_a), folder_b.name or str(folder_b)
    if a != b:
        return a, b
    pa, pb = Path(folder_a).parts, Path(folder_b).parts
    for n in range(2, max(len(pa), len(pb)) + 1):
        x, y = "/".join(pa[-n:]), "/".join(pb[-n:])
        if x != y:
            return (x, y) if max(len(x), len(y)) <= MAX_LABEL else (f"{a} (A)", f"{b} (B)")
    return a, f"{a}, again"


def check_out(out: Path, folders) -> None:
    """The output folder is neither sweep folder nor inside one: nothing of either is ever written."""
    for folder in folders:
        if out == folder or folder in out.parents:
            raise CopylabError(f"--out {out}: inside the sweep folder {folder}; copylab compare writes nothing "
                               "into the folders it compares, choose another --out")


def prepare(folder_a, folder_b, label_a=None, label_b=None, out=None) -> dict:
    """Everything checked before anything is written: both folders loaded, the contract and the shared
    points, the labels and the output folder. Returns the notebook's parameters."""
    from .analysis.comparison import shared_points

    path_a, path_b = resolve_results_dir(folder_a).resolve(), resolve_results_dir(folder_b).resolve()
    defaults = default_labels(path_a, path_b)
    label_a, label_b = label_a if label_a is not None else defaults[0], label_b if label_b is not None else defaults[1]
    check_labels(label_a, label_b)
    out_dir = Path(out).resolve() if out else OUTPUT_DIR / f"compare-{path_a.name}-vs-{path_b.name}"
    check_out(out_dir, (path_a, path_b))
    df_a, _ = load_sweep(folder_a, "A")
    df_b, _ = load_sweep(folder_b, "B")
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

    params = prepare(folder_a, folder_b, label_a, label_b, out)
    out_dir = Path(params["output_dir"])
    import nbformat

    from .sweep.kernel import check_kernel_folders

    check_kernel_folders()
    out_dir.mkdir(parents=True, exist_ok=True)
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

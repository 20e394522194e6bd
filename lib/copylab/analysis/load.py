"""Reading a sweep: results.csv against the contract, meta.json, and the derived per-byte metrics."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pandas as pd

from .. import contract, userfiles
from ..contract import MAX_WALL_S as _DAY_S
from ..contract import PER_POINT_OVERHEAD_S as _PER_POINT_S
from ..errors import CopylabError
from ..paths import PROJECT_ROOT
from . import validate
from ..inference.passes import repetition_spread

PROFILES_CSV = "profiles.csv"  # sweep/records.py writes it beside results.csv
MAX_CSV_BYTES = 512 << 20   # a sweep of a million points is about 1 GiB... of a grid nobody runs
# rows a table may hold: what a day of measuring (the longest sweep the grid check allows without
# --allow-large) makes of 1 s points (the default grid's window) with the measured per-point overhead.
# Reading costs about 6 KiB of memory and 0.1 ms per row here (docs/reliability.md): 80,000 rows ~ 0.5
# GiB; a million rows took 4.9 GB and more than 300 s.
MAX_ROWS = int(_DAY_S / (1.0 + _PER_POINT_S))
MAX_META_BYTES = 16 << 20

# Derived metric -> (label with unit, description). Figures and the explorer read labels from here.
METRICS = {
    "throughput_gbps": ("throughput (Gbit/s)", "application payload rate over the measured window"),
    "latency_us": ("latency, mean (µs)", "latency mode: mean round trip; throughput mode: mean time per "
                                          "message per connection, not a round trip"),
    "latency_p50_us": ("latency p50 (µs)", "median round trip (latency mode)"),
    "latency_p99_us": ("latency p99 (µs)", "99th percentile round trip (latency mode)"),
    "cycles_per_byte": ("CPU cycles per byte, sender + receiver", "cycles / bytes"),
    "srv_cycles_per_byte": ("sender CPU cycles per byte", "server (sender) cycles / bytes"),
    "cli_cycles_per_byte": ("receiver CPU cycles per byte", "client (receiver) cycles / bytes"),
    "srv_cpu_ns_per_byte": ("sender CPU time per byte (ns/B)", "server task-clock / bytes"),
    "cli_cpu_ns_per_byte": ("receiver CPU time per byte (ns/B)", "client task-clock / bytes"),
    "l1_misses_per_byte": ("L1-dcache load misses per byte", "sender + receiver"),
    "llc_misses_per_byte": ("LLC load misses per byte", "sender + receiver"),
    "context_switches_per_mb": ("context switches per MB", "sender + receiver, per 10^6 bytes"),
    "user_copy_bytes_per_message": ("bytes copied in user space per message (B)",
                                    "server user_copy_bytes / server_messages"),
    "zc_completions_per_message": ("send calls completed per message",
                                   "send calls the zero-copy completions covered (the server's own count; 1.0 when "
                                   "every send was notified, however many notifications) / messages sent"),
    "zc_copied_share": ("share of completions the kernel copied (%)",
                        "completions flagged SO_EE_CODE_ZEROCOPY_COPIED / all completions"),
    "zc_not_copied_share": ("share of completions sent without a copy (%)",
                            "completions not flagged COPIED / all completions: the NIC read the user pages"),
}
# metrics that mean a round trip only in latency mode (in throughput mode latency_us is the time per
# message per connection, and the percentiles are empty)
ROUND_TRIP_METRICS = ("latency_us", "latency_p50_us", "latency_p99_us")


def resolve_results_dir(results_dir) -> Path:
    """A relative folder that is not under the working directory is taken from the project root:
    the notebook opened in JupyterLab runs in notebooks/, where "output/default" means the project's."""
    path = Path(results_dir)
    if not path.is_absolute() and not path.is_dir() and (PROJECT_ROOT / path).is_dir():
        return PROJECT_ROOT / path
    return path


def load_profiles(results_dir, measured: pd.DataFrame | None = None) -> pd.DataFrame:
    """The profiled runs (profiles.csv: extra runs under perf record, never in the statistics), read
    and checked as results.csv is; for a sweep of an earlier round, whose results.csv rows carried
    the profile columns themselves, those rows of measured."""
    folder = resolve_results_dir(results_dir)
    if (folder / PROFILES_CSV).is_file():
        return load_results(folder, table=PROFILES_CSV, allow_empty=True)[0]
    if measured is not None and "srv_prof_samples" in measured:
        return measured[measured["srv_prof_samples"].notna()]
    return measured.iloc[0:0] if measured is not None else pd.DataFrame(columns=list(contract.COLUMNS))


def _read_table(results_dir: Path, table: str, allow_empty: bool) -> pd.DataFrame:
    """The table read and validated (types, ranges, duplicates: one line naming row and column),
    with every engine column present (a CSV from elsewhere gets the missing ones empty)."""
    csv_path = results_dir / table
    if not results_dir.is_dir():
        raise CopylabError(f"results directory {results_dir} does not exist")
    # counted before it is read whole (not a link out of the folder, as read_inside)
    lines = userfiles.count_lines_inside(results_dir, table, stop_after=MAX_ROWS + 1)
    if lines is not None and lines > MAX_ROWS + 1:
        raise CopylabError(f"{csv_path}: more than {MAX_ROWS:,} rows, the most a table is read with (a day of "
                           "measuring 1 s points makes about that many); split the sweep or keep the rows you need")
    data = userfiles.read_inside(results_dir, table, MAX_CSV_BYTES)
    if data is None:
        raise CopylabError(f"{csv_path} does not exist (run a sweep first)")
    try:
        df = pd.read_csv(io.BytesIO(data), encoding="utf-8")
    except pd.errors.EmptyDataError:
        if not allow_empty:
            raise CopylabError(f"{csv_path} is not a readable CSV: it is empty") from None
        df = pd.DataFrame(columns=list(contract.COLUMNS))
    except (pd.errors.ParserError, UnicodeDecodeError, OSError) as exc:
        raise CopylabError(f"{csv_path} is not a readable CSV: {str(exc).splitlines()[0]}") from exc
    missing = [c for c in contract.REQUIRED_COLUMNS if c not in df.columns]
    if missing:
        raise CopylabError(f"{csv_path} lacks required columns: {', '.join(missing)}")
    # types, ranges, duplicates: one line naming row and column, the cell shown as the file has it
    validate.check_results(df, csv_path, pd.read_csv(io.BytesIO(data), dtype=str, keep_default_na=False)
                           if len(df) else None)
    header = tuple(df.columns)  # as the file has it (copylab compare refuses two contracts' folders)
    # a CSV from elsewhere may lack the engine's extra columns: they are added empty, so every
    # consumer can use them without checking
    added = {col: pd.Series([None] * len(df), dtype="object", index=df.index)
             for col in contract.TEXT_COLUMNS if col not in df.columns}
    added.update({col: pd.Series(np.nan, index=df.index) for col in contract.NUMERIC_COLUMNS if col not in df.columns})
    if added:  # at once: one column at a time fragments the frame (and pandas warns about it)
        df = pd.concat([df, pd.DataFrame(added)], axis=1)
    df.attrs["columns_read"] = Shared(header)
    return df


class Shared(tuple):
    """A read-only value of df.attrs that pandas passes on as it is: pandas deep-copies attrs into
    every frame an operation makes, and a comparison makes thousands (a third of its time)."""

    def __deepcopy__(self, memo):
        return self


def load_results(results_dir, table: str = "results.csv", allow_empty: bool = False) -> tuple[pd.DataFrame, dict]:
    """Read results.csv (+ meta.json if present), keep the ok rows, add the derived metrics.

    df.attrs carries the bookkeeping the report states: rows_read, rows_failed, failed (the
    failed points with their errors). Raises CopylabError (one line) on anything unusable.
    """
    results_dir = resolve_results_dir(results_dir)
    csv_path = results_dir / table
    df = _read_table(results_dir, table, allow_empty)
    meta = load_meta(results_dir)
    rows_read, columns_read = len(df), df.attrs.get("columns_read", ())
    status = df["status"].astype("string").str.strip().str.lower()
    failed_mask = status.notna() & (status != "ok") & (status != "")
    failed = df[failed_mask]
    df = df[~failed_mask].copy()

    df["impl"] = df["impl"].astype(str).str.strip().str.lower()
    df["mode"] = df["mode"].astype(str).str.strip().str.lower()
    _check_values(df, csv_path)
    for col in contract.NUMERIC_COLUMNS:
        df[col] = pd.to_numeric(df[col], errors="coerce").astype(float)
    for col in ("msg_size", "threads", "rep"):
        bad = df[df[col].isna()]
        if len(bad):
            raise CopylabError(f"{csv_path}: column {col} is empty or not a number "
                               f"in row {int(bad.index[0]) + 2}")
        df[col] = df[col].astype(int)
    # a row without its mode's measurement (throughput, or the round trip) measured nothing: it is
    # counted and left out, like a failed one, rather than averaged as if it were a value
    primary = df["throughput_gbps"].where(df["mode"] == "throughput", df["latency_us"])
    empty = df[primary.isna()]
    df = df[primary.notna()]
    df = repetition_spread(add_derived(df.reset_index(drop=True)))  # also for a CSV from elsewhere
    df.attrs = {
        "results_dir": str(results_dir), "rows_read": rows_read, "rows_failed": len(failed),
        "rows_empty": len(empty), "columns_read": columns_read,
        "failed": Shared(
            {k: (None if pd.isna(v) else v) for k, v in row.items()}
            for row in failed[["impl", "mode", "msg_size", "threads", "rep", "error"]]
            .to_dict("records")
        ),
    }
    return df, meta


def load_meta(results_dir) -> dict:
    """meta.json beside results.csv, or {} when there is none (a CSV from elsewhere)."""
    path = Path(results_dir) / "meta.json"
    data = userfiles.read_inside(results_dir, "meta.json", MAX_META_BYTES)
    if data is None:
        return {}
    try:
        meta = userfiles.loads_json(data)  # depth checked: 100,000 levels were a RecursionError
    except ValueError as exc:  # not JSON, not UTF-8, nested too deep
        raise CopylabError(f"{path} is not valid JSON: {exc}") from None
    if not isinstance(meta, dict):
        raise CopylabError(f"{path} must hold a JSON object, not {type(meta).__name__}")
    validate.check_meta(meta, path)
    return meta


def _check_values(df: pd.DataFrame, csv_path: Path) -> None:
    for col, allowed in (("impl", contract.ALL_IMPLS), ("mode", contract.MODES)):
        bad = df[~df[col].isin(allowed)]
        if len(bad):
            raise CopylabError(f"{csv_path}: row {int(bad.index[0]) + 2} has {col} "
                               f"{bad[col].iloc[0]!r}, expected one of {', '.join(allowed)}")


_ratio = contract.per_byte


def add_derived(df: pd.DataFrame) -> pd.DataFrame:
    """Per-byte and per-message figures. The counters and `bytes` cover the same window."""
    derived = {
        "cycles_per_byte": _ratio(df["cycles"], df["bytes"]),
        "srv_cycles_per_byte": _ratio(df["srv_cycles"], df["bytes"]),
        "cli_cycles_per_byte": _ratio(df["cli_cycles"], df["bytes"]),
        # task-clock works where the PMU does not (VMs): CPU time per byte is the fallback cost
        contract.SENDER_CPU: _ratio(df["srv_task_clock_ms"], df["bytes"], 1e6),
        "cli_cpu_ns_per_byte": _ratio(df["cli_task_clock_ms"], df["bytes"], 1e6),
        "l1_misses_per_byte": _ratio(df["l1_misses"], df["bytes"]),
        "llc_misses_per_byte": _ratio(df["llc_misses"], df["bytes"]),
        "context_switches_per_mb": _ratio(df["context_switches"], df["bytes"], 1e6),
        # server totals cover the whole run incl. warm-up: normalise by the server's own counts
        "user_copy_bytes_per_message": _ratio(df["user_copy_bytes"], df["server_messages"]),
        "zc_completions_per_message": _ratio(df["zc_completions"], df["server_messages"]),
        "zc_copied_share": _ratio(df["zc_copied"], df["zc_completions"], 100.0),
        "zc_not_copied_share": _ratio(df["zc_completions"] - df["zc_copied"], df["zc_completions"], 100.0),
    }
    kept = df.drop(columns=[c for c in derived if c in df.columns])
    return pd.concat([kept, pd.DataFrame(derived, index=df.index)], axis=1)

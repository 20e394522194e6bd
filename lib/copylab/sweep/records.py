"""Point records (runs/<point_id>.json) and results.csv, which is always rebuilt from the records
that exist: a row without a record on disk is never reported."""

from __future__ import annotations

import contextlib
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd

from .. import userfiles
from ..inference.passes import repetition_spread
from ..contract import COLUMNS
from ..fsutil import atomic_write_text
from ..point import empty_row
from ..pointspec import PointSpec

SORT_KEYS = ["impl", "mode", "msg_size", "threads", "receive", "congestion", "rep"]
PROFILES_CSV = "profiles.csv"  # the profiled runs: same columns, never part of the statistics


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def record_path(runs: Path, point_id: str) -> Path:
    return runs / f"{point_id}.json"


def read_row(path: Path) -> dict | None:
    """The row of a record, or None when the record is missing, half-written or not ours."""
    with contextlib.suppress(OSError, ValueError, KeyError, TypeError, UnicodeDecodeError):
        row = userfiles.loads_json(path.read_bytes())["row"]
        if isinstance(row, dict) and "status" in row:
            return row
    return None


def load_rows(runs: Path, point_ids) -> dict[str, dict]:
    rows = {}
    for point_id in point_ids:
        row = read_row(record_path(runs, point_id))
        if row is not None:
            rows[point_id] = row
    return rows


def failed_row(spec: PointSpec, kind: str, error: str) -> dict:
    """A row for a point that produced no row of its own (its notebook failed, its kernel died)."""
    row = empty_row(spec, spec.topology)
    row.update(error=error, error_kind=kind, started_at=now())
    return row


def write_results(out_dir: Path, runs: Path, rows: dict[str, dict]) -> Path:
    """results.csv (the measured runs) and profiles.csv (the extra runs under perf record) from the
    rows whose record is still on disk, in a stable order (a resumed sweep rebuilds the same files)."""
    kept = [row for point_id, row in rows.items() if record_path(runs, point_id).is_file()]
    frame = pd.DataFrame(kept, columns=list(COLUMNS))
    frame = frame.sort_values(SORT_KEYS, kind="stable").reset_index(drop=True)
    profiled = frame["run_kind"] == "profile"
    atomic_write_text(out_dir / PROFILES_CSV, frame[profiled].to_csv(index=False))
    measured = repetition_spread(frame[~profiled].reset_index(drop=True))
    return atomic_write_text(out_dir / "results.csv", measured.to_csv(index=False))

"""What a results folder may hold before anything is computed from it.

results.csv and meta.json are data that may come from anywhere (another machine, a shared folder,
a hand edit). Every value the analysis, the report or the bundle uses is checked here, once, on
load: types, ranges, duplicates, the known implementations, modes and receive strategies. The first
problem is one CopylabError naming the file, the row and the column (or the key), and the value.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pandas as pd

from .. import contract
from ..errors import CopylabError

U64 = contract.U64  # perf's counters are u64; nothing measured here can exceed one
POINT_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,254}")  # a file name, never a path
STATUSES = ("ok", "failed")
IDENTITY = ("impl", "mode", "msg_size", "threads", "rep", "receive")


def _row(index) -> int:
    return int(index) + 2  # the CSV's line: header is line 1


def _shown(value) -> str:
    text = repr(value) if isinstance(value, str) else str(value)
    return text if len(text) <= 60 else text[:57] + "..."


_RAW: dict = {}  # csv path -> the table as the file writes it (text), for the messages


def _fail(csv_path: Path, index, column: str, problem: str, value) -> CopylabError:
    raw = _RAW.get(str(csv_path))
    if raw is not None and column in raw.columns and index in raw.index:
        value = raw.at[index, column]  # as written in the file, not as pandas read it
    return CopylabError(f"{csv_path}: row {_row(index)}, column {column}: {problem} (got {_shown(value)})")


def check_results(df: pd.DataFrame, csv_path: Path, raw: pd.DataFrame | None = None) -> None:
    """Every row of results.csv as read (ok and failed ones): raises CopylabError on the first bad
    cell. raw, the same table read as text, lets the message show the cell as the file has it."""
    _RAW[str(csv_path)] = raw
    try:
        _check_choices(df, csv_path)
        _check_identity_numbers(df, csv_path)
        _check_measurements(df, csv_path)
        _check_text(df, csv_path)
        _check_duplicates(df, csv_path)
    finally:
        _RAW.pop(str(csv_path), None)


def _check_choices(df, csv_path) -> None:
    for column, allowed, required in (("impl", contract.ALL_IMPLS, True), ("mode", contract.MODES, True),
                                      ("receive", contract.RECEIVE_STRATEGIES, False),
                                      ("status", STATUSES, False)):
        if column not in df.columns:
            continue
        values = df[column].astype("string").str.strip().str.lower()
        empty = values.isna() | (values == "")
        bad = ~values.isin(allowed) & ~(empty & (not required))
        if bad.any():
            index = bad.idxmax()
            raise _fail(csv_path, index, column, f"must be one of {', '.join(allowed)}", df.at[index, column])


def _numbers(df, column, csv_path) -> pd.Series:
    """The column as floats; a cell that is not empty and not a number is an error."""
    raw = df[column]
    values = pd.to_numeric(raw, errors="coerce")
    text = raw.astype("string").str.strip()
    bad = values.isna() & text.notna() & (text != "") & (text.str.lower() != "nan")
    if bad.any():
        index = bad.idxmax()
        raise _fail(csv_path, index, column, "not a number", raw[index])
    return values.astype(float)


def _check_identity_numbers(df, csv_path) -> None:
    limits = {"msg_size": contract.MSG_SIZE_RANGE, "threads": contract.THREADS_RANGE,
              "rep": (0, contract.REPETITIONS_RANGE[1] - 1)}
    for column, (low, high) in limits.items():
        values = _numbers(df, column, csv_path)
        if values.isna().any():
            index = values.isna().idxmax()
            raise _fail(csv_path, index, column, "is empty; every row names its point", df.at[index, column])
        bad = ~np.isfinite(values) | (values != np.floor(values))
        if bad.any():
            index = bad.idxmax()
            raise _fail(csv_path, index, column, "must be a whole number", df.at[index, column])
        bad = (values < low) | (values > high)
        if bad.any():
            index = bad.idxmax()
            raise _fail(csv_path, index, column, f"must be from {low} to {high}", df.at[index, column])


def _check_measurements(df, csv_path) -> None:
    for column in contract.NUMERIC_COLUMNS:
        if column not in df.columns or column in ("msg_size", "threads", "rep"):
            continue
        values = _numbers(df, column, csv_path)
        present = values.notna()
        bad = present & ~np.isfinite(values)
        if bad.any():
            index = bad.idxmax()
            raise _fail(csv_path, index, column, "must be a finite number or empty", df.at[index, column])
        bad = present & (values < 0)
        if bad.any():
            index = bad.idxmax()
            raise _fail(csv_path, index, column, "cannot be negative", df.at[index, column])
        high, what = contract.ceiling(column)  # a share above 1, a rate no host moves, beyond a counter
        bad = present & (values > high)
        if bad.any():
            index = bad.idxmax()
            raise _fail(csv_path, index, column, f"impossible: {what}", df.at[index, column])
    if "duration_s" in df.columns and "status" in df.columns:
        ok = df["status"].astype("string").str.strip().str.lower() == "ok"
        duration = pd.to_numeric(df["duration_s"], errors="coerce")
        bad = ok & duration.notna() & (duration <= 0)
        if bad.any():
            index = bad.idxmax()
            raise _fail(csv_path, index, "duration_s", "a measured window lasts more than 0 s", df.at[index, "duration_s"])


def _check_text(df, csv_path) -> None:
    if "point_id" not in df.columns:
        return
    ids = df["point_id"].astype("string").str.strip()
    bad = ids.notna() & (ids != "") & ~ids.fillna("").str.fullmatch(POINT_ID.pattern)
    if bad.any():
        index = bad.idxmax()
        raise _fail(csv_path, index, "point_id", "must be a plain name (letters, digits, '.', '_', '-')",
                    df.at[index, "point_id"])


def _check_duplicates(df, csv_path) -> None:
    """A point measured once is one row: a second row with the same point (the same point_id, or
    where there is none the same implementation, mode, size, threads, repetition and receive
    strategy) would count twice."""
    if "point_id" in df.columns:
        ids = df["point_id"].astype("string").str.strip()
        named = ids.notna() & (ids != "")
        dup = ids[named].duplicated(keep=False)
        if dup.any():
            rows = ids[named][dup]
            first = rows.index[0]
            second = rows[rows == rows[first]].index[1]
            raise CopylabError(f"{csv_path}: rows {_row(first)} and {_row(second)} are the same point "
                               f"(column point_id {_shown(rows[first])}): a measurement would count twice")
    keys = [k for k in IDENTITY if k in df.columns]
    unnamed = df if "point_id" not in df.columns else df[~named]
    if len(unnamed) < 2:
        return
    frame = unnamed[keys].astype("string").apply(lambda s: s.str.strip().str.lower())
    dup = frame.duplicated(keep=False)
    if dup.any():
        rows = frame[dup]
        first = rows.index[0]
        same = rows[(rows == rows.loc[first]).all(axis=1)].index
        raise CopylabError(f"{csv_path}: rows {_row(same[0])} and {_row(same[1])} are the same point "
                           f"(columns {', '.join(keys)}): a measurement would count twice")


# ------------------------------------------------------------------------------------------------
# meta.json

TEXT_KEYS = ("hostname", "kernel", "cpu_model", "compiler", "git_revision", "started_at", "finished_at", "perf_note",
             "perf_version", "topology", "cycles_source", "status", "params_file", "build_id")
# shown in the report's tables as they are: a value, or a list of values (tcp_wmem: min default max)
SETTING_KEYS = ("veth_mtu", "optmem_max", "tcp_wmem", "tcp_rmem")
PARAM_TEXT = ("name", "author", "roll_no", "repo_url", "ai_declaration", "description", "pin_server", "pin_client",
              "topology")
PARAM_LISTS = {"impls": str, "modes": str, "receive": str, "msg_sizes": int, "threads": int}


def _kind(value) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "text"
    return "a list" if isinstance(value, list) else "an object" if isinstance(value, dict) else type(value).__name__


def _meta_fail(path: Path, key: str, problem: str, value) -> CopylabError:
    return CopylabError(f"{path}: key {key}: {problem}, got {_shown(value)} ({_kind(value)})")


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def check_meta(meta: dict, path: Path) -> None:
    """The keys of meta.json copylab reads, by type and range (unknown keys are left alone)."""
    for key in TEXT_KEYS:
        value = meta.get(key)
        if value is not None and not isinstance(value, str):
            raise _meta_fail(path, key, "must be text", value)
    for key in SETTING_KEYS:
        value = meta.get(key)
        items = value if isinstance(value, list) else [value]
        if any(isinstance(v, (bool, dict, list)) or not isinstance(v, (str, int, float, type(None))) for v in items):
            raise _meta_fail(path, key, "must be a value or a list of values", value)
    for key, low in (("cores", 1), ("memory_gib", 0)):
        value = meta.get(key)
        if value is not None and (not _number(value) or value < low or value > U64):
            raise _meta_fail(path, key, f"must be a number of at least {low}", value)
    for key in ("perf_events", "offloads", "hosts", "peers_missing"):
        value = meta.get(key)
        if value is not None and not isinstance(value, dict):
            raise _meta_fail(path, key, "must be an object", value)
    for key, value in (meta.get("perf_events") or {}).items():
        if not isinstance(value, bool):
            raise _meta_fail(path, f"perf_events.{key}", "must be true or false", value)
    for side, host in (meta.get("hosts") or {}).items():
        if not isinstance(host, dict):
            raise _meta_fail(path, f"hosts.{side}", "must be an object", host)
        if host.get("cores") is not None and not _number(host["cores"]):
            raise _meta_fail(path, f"hosts.{side}.cores", "must be a number", host["cores"])
    if meta.get("sessions") is not None and not isinstance(meta["sessions"], list):
        raise _meta_fail(path, "sessions", "must be a list", meta["sessions"])
    if "params" in meta:
        _check_params(meta["params"], path)


def _check_params(params, path: Path) -> None:
    if params is None:
        return
    if not isinstance(params, dict):
        raise _meta_fail(path, "params", "must be an object (the sweep's grid)", params)
    for key in PARAM_TEXT:
        value = params.get(key)
        if value is not None and not isinstance(value, str):
            raise _meta_fail(path, f"params.{key}", "must be text", value)
    for key, kind in PARAM_LISTS.items():
        value = params.get(key)
        if value is None:
            continue
        if not isinstance(value, list) or not all(isinstance(v, kind) and not isinstance(v, bool) for v in value):
            raise _meta_fail(path, f"params.{key}", f"must be a list of {'text' if kind is str else 'whole numbers'}",
                             value)
    for key, bounds in (("msg_sizes", contract.MSG_SIZE_RANGE), ("threads", contract.THREADS_RANGE)):
        for value in params.get(key) or []:
            if not bounds[0] <= value <= bounds[1]:
                raise _meta_fail(path, f"params.{key}", f"values must be from {bounds[0]} to {bounds[1]}", value)
    for key, allowed in (("impls", contract.ALL_IMPLS), ("modes", contract.MODES),
                         ("receive", contract.RECEIVE_STRATEGIES)):
        for value in params.get(key) or []:
            if value not in allowed:
                raise _meta_fail(path, f"params.{key}", f"values must be among {', '.join(allowed)}", value)
    for key, bounds in (("duration_s", contract.DURATION_RANGE), ("warmup_s", contract.WARMUP_RANGE),
                        ("repetitions", contract.REPETITIONS_RANGE)):
        value = params.get(key)
        if value is not None and (not _number(value) or not bounds[0] <= value <= bounds[1]):
            raise _meta_fail(path, f"params.{key}", f"must be a number from {bounds[0]:g} to {bounds[1]:g}", value)
    for key in ("shuffle", "verify"):
        value = params.get(key)
        if value is not None and not isinstance(value, bool):
            raise _meta_fail(path, f"params.{key}", "must be true or false", value)

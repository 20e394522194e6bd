"""copylab.analysis.validate (issue 23): results.csv and meta.json are data from anywhere; every
value the report uses is checked on load, and the first bad one is one line naming the file, the
row and the column (or the key). The report was claiming nonsense from such files."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from conftest import run_copylab
from copylab import analysis
from copylab.errors import CopylabError
from data.analysis import synthetic
from faults import assert_one_line_error, folder_state


def _rows(folder: Path) -> tuple[list[str], list[dict]]:
    with open(folder / "results.csv", newline="") as handle:
        reader = csv.DictReader(handle)
        return list(reader.fieldnames), list(reader)


def _write(folder: Path, fields: list[str], rows: list[dict]) -> None:
    with open(folder / "results.csv", "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)


def _ok_row_index(rows: list[dict], mode: str = "throughput") -> int:
    return next(k for k, r in enumerate(rows) if r["status"] == "ok" and r["mode"] == mode)


# case -> (column, value written into an ok throughput row, what the error line says)
BAD_CELLS = {
    "negative throughput": ("throughput_gbps", "-3.5", "cannot be negative"),
    "negative size": ("msg_size", "-64", "must be from 8 to"),
    "fractional size": ("msg_size", "64.7", "must be a whole number"),
    "enormous size": ("msg_size", "1e30", "must be from 8 to"),
    "text in cycles": ("cycles", "lots", "not a number"),
    "infinite latency": ("latency_us", "inf", "must be a finite number or empty"),
    "counter beyond 64 bits": ("cycles", "2e32", "more than any counter can hold"),
    "negative context switches": ("context_switches", "-1", "cannot be negative"),
    "share above one": ("srv_cpu_busy", "1.5", "a share, at most 1"),
    "zero threads": ("threads", "0", "must be from 1 to"),
    "unknown implementation": ("impl", "a9", "must be one of"),
    "unknown mode": ("mode", "bulk", "must be one of"),
    "unknown receive strategy": ("receive", "sometimes", "must be one of"),
    "unknown status": ("status", "maybe", "must be one of"),
    "a path as point id": ("point_id", "../../etc/passwd", "must be a plain name"),
    "an empty window": ("duration_s", "0", "more than 0 s"),
    # issue 46: a rate no host's memory moves (1.8e19 passed)
    "throughput beyond any memory": ("throughput_gbps", "1.8e19", "more than 10000 Gbit/s, beyond what any host's memory moves"),
    "throughput of a unit slip": ("throughput_gbps", "1.2e10", "beyond what any host's memory moves"),
}


@pytest.mark.parametrize("case", BAD_CELLS)
def test_a_bad_cell_is_one_line_naming_file_row_and_column(tmp_path, case):
    column, value, needle = BAD_CELLS[case]
    folder = synthetic.write_sweep(tmp_path / "sweep", reps=2)
    fields, rows = _rows(folder)
    index = _ok_row_index(rows)
    rows[index][column] = value
    _write(folder, fields, rows)
    with pytest.raises(CopylabError) as info:
        analysis.load_results(folder)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(f"{folder / 'results.csv'}: row {index + 2}, column {column}: "), message
    assert needle in message and repr(value) in message, message


def test_a_fast_host_is_not_refused():
    """The throughput ceiling lies orders of magnitude above what a host moves: a whole DDR5 socket's
    memory bandwidth still loads."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        folder = synthetic.write_sweep(Path(tmp) / "fast", reps=2)
        fields, rows = _rows(folder)
        rows[_ok_row_index(rows)]["throughput_gbps"] = "3700"  # 12-channel DDR5: ~460 GB/s
        _write(folder, fields, rows)
        df, _ = analysis.load_results(folder)
    assert df["throughput_gbps"].max() == 3700.0


def test_a_duplicated_row_is_refused_naming_both_rows(tmp_path):
    folder = synthetic.write_sweep(tmp_path / "sweep", reps=2)
    fields, rows = _rows(folder)
    index = _ok_row_index(rows)
    rows.append(dict(rows[index]))
    _write(folder, fields, rows)
    with pytest.raises(CopylabError, match=rf"rows {index + 2} and {len(rows) + 1} are the same point "
                                           r"\(column point_id .*\): a measurement would count twice"):
        analysis.load_results(folder)


def test_duplicates_without_point_ids_are_found_by_the_points_identity(tmp_path):
    folder = synthetic.write_sweep(tmp_path / "sweep", reps=1, required_only=True, meta=False)
    fields, rows = _rows(folder)
    rows.append(dict(rows[3]))
    _write(folder, fields, rows)
    with pytest.raises(CopylabError, match=r"rows 5 and \d+ are the same point \(columns impl, mode, msg_size"):
        analysis.load_results(folder)


def test_a_failed_row_with_empty_measurements_is_valid(tmp_path):
    folder = synthetic.write_sweep(tmp_path / "sweep", reps=2)  # carries a failed row with empty cells
    df, _ = analysis.load_results(folder)
    assert df.attrs["rows_failed"] >= 1


# case -> (what meta.json holds, the key named, what the line says)
BAD_META = {
    "params a string": ({"params": "a string"}, "params", "must be an object"),
    "author a number": ({"params": {"author": 3}}, "params.author", "must be text"),
    "sizes as text": ({"params": {"msg_sizes": ["64"]}}, "params.msg_sizes", "whole numbers"),
    "a size out of range": ({"params": {"msg_sizes": [-64]}}, "params.msg_sizes", "from 8 to"),
    "an unknown implementation": ({"params": {"impls": ["a9"]}}, "params.impls", "among"),
    "duration not a number": ({"params": {"duration_s": "long"}}, "params.duration_s", "a number"),
    "shuffle not a flag": ({"params": {"shuffle": "yes"}}, "params.shuffle", "true or false"),
    "hostname an object": ({"hostname": {"x": 1}}, "hostname", "must be text"),
    "cores text": ({"cores": "two"}, "cores", "a number of at least 1"),
    "memory negative": ({"memory_gib": -1}, "memory_gib", "a number of at least 0"),
    "perf events not flags": ({"perf_events": {"cycles": "yes"}}, "perf_events.cycles", "true or false"),
    "hosts a list": ({"hosts": ["a"]}, "hosts", "must be an object"),
    "tcp_wmem nested": ({"tcp_wmem": [[1]]}, "tcp_wmem", "a value or a list of values"),
}


@pytest.mark.parametrize("case", BAD_META)
def test_a_bad_meta_json_value_is_one_line_naming_the_key(tmp_path, case):
    extra, key, needle = BAD_META[case]
    folder = synthetic.write_sweep(tmp_path / "sweep", reps=1)
    meta = json.loads((folder / "meta.json").read_text())
    for name, value in extra.items():
        if isinstance(value, dict) and isinstance(meta.get(name), dict):
            meta[name] = {**meta[name], **value}
        else:
            meta[name] = value
    (folder / "meta.json").write_text(json.dumps(meta))
    with pytest.raises(CopylabError) as info:
        analysis.load_results(folder)
    message = str(info.value)
    assert "\n" not in message and f"meta.json: key {key}: " in message and needle in message, message


@pytest.mark.slow
@pytest.mark.parametrize("case", ["negative throughput", "text in cycles"])
def test_copylab_report_refuses_in_one_line_and_writes_nothing(tmp_path, case):
    column, value, needle = BAD_CELLS[case]
    folder = synthetic.write_sweep(tmp_path / "sweep", reps=2)
    fields, rows = _rows(folder)
    rows[_ok_row_index(rows)][column] = value
    _write(folder, fields, rows)
    before = folder_state(folder)
    proc = run_copylab("report", str(folder), timeout=120)
    assert_one_line_error(proc, f"column {column}: {needle}")
    assert folder_state(folder) == before


@pytest.mark.slow
def test_meta_json_params_a_string_is_one_line_not_a_traceback(tmp_path):
    folder = synthetic.write_sweep(tmp_path / "sweep", reps=1)
    meta = json.loads((folder / "meta.json").read_text())
    meta["params"] = "a string"
    (folder / "meta.json").write_text(json.dumps(meta))
    before = folder_state(folder)
    proc = run_copylab("report", str(folder), timeout=120)
    assert_one_line_error(proc, "key params: must be an object")
    assert folder_state(folder) == before

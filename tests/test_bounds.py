"""Memory bounded by design where input is read from a results folder: JSON nesting, folded
profiles' lines, the rows of a table. Each bound refuses (or skips) in one line what a sweep could
not have written, without holding it first. Peaks measured: docs/reliability.md."""

from __future__ import annotations

import csv
import gzip
import json
import tracemalloc

import pytest
from conftest import run_copylab
from copylab import userfiles
from copylab.analysis import load, stacks
from copylab.errors import CopylabError
from copylab.sweep import folder, records
from data.analysis import synthetic
from faults import folder_state

DEEP = 100_000


def nested(depth: int, kind: str = "object") -> str:
    return ('{"a": ' * depth + "1" + "}" * depth) if kind == "object" else ("[" * depth + "1" + "]" * depth)


# ------------------------------------------------------------------------------------------------
# JSON nesting

def test_nesting_is_counted_outside_strings_only():
    text = json.dumps({"a": ["[[[{{{", {"b": '"]]]}\\'}], "c": nested(userfiles.MAX_JSON_DEPTH - 1)})
    assert userfiles.loads_json(text)["a"][0] == "[[[{{{"
    assert userfiles.loads_json(nested(userfiles.MAX_JSON_DEPTH)) is not None
    for kind in ("object", "array"):
        with pytest.raises(ValueError, match="nested deeper than 64 levels"):
            userfiles.loads_json(nested(userfiles.MAX_JSON_DEPTH + 1, kind))


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["object", "array"])
def test_a_meta_json_nested_100000_deep_is_one_line(tmp_path, kind):
    """It was a RecursionError traceback from load_meta."""
    sweep = synthetic.write_sweep(tmp_path / "sweep", reps=1)
    (sweep / "meta.json").write_text(nested(DEEP, kind))
    before = folder_state(sweep)
    with pytest.raises(CopylabError, match="meta.json is not valid JSON: nested deeper than 64 levels"):
        load.load_meta(sweep)
    proc = run_copylab("report", str(sweep), timeout=120)
    errors = [line for line in proc.stderr.splitlines() if "error:" in line]
    assert proc.returncode != 0 and "Traceback" not in proc.stderr and len(errors) == 1, proc.stderr
    assert "nested deeper than 64 levels" in errors[0]
    assert folder_state(sweep) == before


def test_deep_records_and_a_deep_meta_on_resume_are_unusable_not_tracebacks(tmp_path):
    runs = tmp_path / "runs"
    runs.mkdir()
    (runs / "a1-deep.json").write_text('{"row": ' + nested(DEEP) + "}")
    assert records.read_row(runs / "a1-deep.json") is None  # re-measured, as a half-written record is
    (tmp_path / "meta.json").write_text(nested(DEEP, "array"))
    with pytest.raises(CopylabError, match="not JSON .*nested deeper than 64 levels.*--restart"):
        folder.previous_meta(tmp_path)


# ------------------------------------------------------------------------------------------------
# folded profiles: streamed, a line at most MAX_FOLDED_LINE long

def test_a_folded_line_beyond_the_cap_is_skipped_without_being_held(tmp_path):
    """One 1 GiB line (gzipped to 1 MB) took `copylab report` to 2.3 GB: the size cap was checked
    after the whole line was read. Here a 64 MiB line, with stacks before and after it."""
    profiles = tmp_path / "profiles"
    profiles.mkdir()
    with gzip.open(profiles / "p1.srv.folded.gz", "wb", compresslevel=1) as out:
        out.write(b"main;send;tcp_sendmsg 5\n")
        chunk = b"f;" * (1 << 19)
        for _ in range(64):
            out.write(chunk)
        out.write(b" 9\nmain;send;skb_copy_ubufs 3\n")
    tracemalloc.start()
    try:
        counts = stacks.folded_counts(profiles, ["p1"], "srv")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert dict(counts) == {"main;send;tcp_sendmsg": 5, "main;send;skb_copy_ubufs": 3}
    assert peak < 4 * stacks.MAX_FOLDED_LINE + (1 << 20), f"peak {peak >> 20} MiB: the long line was held"


def test_lines_are_capped_and_the_file_is_bounded_too():
    import io

    lines = b"a 1\n" + b"x" * 50 + b" 2\n" + b"b 3\n" + b"c 4\n"
    assert list(stacks.capped_lines(io.BytesIO(lines), 10, 1 << 20)) == [b"a 1\n", b"b 3\n", b"c 4\n"]
    assert list(stacks.capped_lines(io.BytesIO(lines), 10, 4)) == [b"a 1\n"]  # the byte budget ends the read


# ------------------------------------------------------------------------------------------------
# results tables: at most MAX_ROWS rows, counted before the table is read

def write_rows(source, dest, n: int) -> None:
    """n valid rows of distinct points, made from the rows of a synthetic sweep."""
    with open(source, newline="") as f:
        rows = [r for r in csv.DictReader(f) if r.get("status", "ok") == "ok"]
    with open(dest, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        for i in range(n):
            row, k = dict(rows[i % len(rows)]), i // len(rows)
            row["msg_size"] = str(int(row["msg_size"]) + 8 * (k + 1))
            row["point_id"] = f"{row['point_id']}-x{k}"
            writer.writerow(row)


def test_a_table_beyond_the_row_cap_is_refused_before_it_is_read(tmp_path, monkeypatch):
    sweep = synthetic.write_sweep(tmp_path / "sweep", reps=1)
    rows = sum(1 for _ in open(sweep / "results.csv")) - 1
    monkeypatch.setattr(load, "MAX_ROWS", rows)
    assert len(load.load_results(sweep)[0]) > 0  # at the cap: read
    monkeypatch.setattr(load, "MAX_ROWS", rows - 1)
    with pytest.raises(CopylabError, match=f"more than {rows - 1:,} rows"):
        load.load_results(sweep)


@pytest.mark.slow
def test_a_table_of_more_rows_than_a_day_of_points_is_one_line_quickly(tmp_path):
    """A results.csv of a million valid rows (485 MB, under the byte cap) ran `copylab report` past
    300 s and 4.9 GB; one row past the cap is enough to show the refusal."""
    sweep = synthetic.write_sweep(tmp_path / "sweep", reps=1)
    write_rows(sweep / "results.csv", sweep / "results.csv.new", load.MAX_ROWS + 1)
    (sweep / "results.csv.new").replace(sweep / "results.csv")
    before = folder_state(sweep)
    proc = run_copylab("report", str(sweep), timeout=120)  # read whole it took over 300 s: TimeoutExpired
    errors = [line for line in proc.stderr.splitlines() if "error:" in line]
    assert proc.returncode != 0 and len(errors) == 1 and f"more than {load.MAX_ROWS:,} rows" in errors[0], proc.stderr
    assert folder_state(sweep) == before

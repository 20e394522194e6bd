"""copylab.sides (issue 23): a program's output is held in bounded memory, however much it prints
and however long its lines, and what the engine reads from it (the JSON line, the last error)
survives."""

from __future__ import annotations

import pytest

import tracemalloc

from copylab import sides
from copylab.sides import Side

MB = 1 << 20


@pytest.mark.slow
def test_60_mb_of_lines_are_held_as_head_and_tail():
    # 60 MB: six times what is kept (KEEP_HEAD + KEEP_TAIL); 300 MB took 11 s of the suite
    side = Side("client", ["sh", "-c", "head -c 60000000 /dev/zero | tr '\\0' x | fold -w 99 >&2; echo >&2; "
                                       "echo 'accept: Too many open files' >&2; echo '{\"bytes\": 1}'"])
    assert side.finish(timeout=300) == 0
    kept = sum(len(line) for line in side.stderr_lines)
    assert kept < sides.KEEP_HEAD + sides.KEEP_TAIL + MB
    assert side.stderr_lines.dropped > 48_000_000
    assert side.last_error() == "accept: Too many open files"
    assert side.json_output() == {"bytes": 1}
    assert any(line.startswith("[copylab: ") and "dropped here" in line for line in side.stderr_lines)
    assert len(side.raw()["stderr"]) < sides.KEEP_HEAD + sides.KEEP_TAIL + MB


def test_one_300_mb_line_without_an_end_is_read_in_pieces_in_bounded_memory():
    tracemalloc.start()
    try:
        side = Side("server", ["sh", "-c", "head -c 300000000 /dev/zero | tr '\\0' y; echo; echo last >&2"])
        assert side.finish(timeout=300) == 0
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 64 * MB, f"{peak / MB:.0f} MiB held at the peak"
    assert sum(len(line) for line in side.stdout_lines) < sides.KEEP_HEAD + sides.KEEP_TAIL + MB
    assert side.stderr_lines == ["last\n"]


def test_small_output_is_kept_whole_and_reads_as_a_list():
    side = Side("server", ["sh", "-c", "echo one; echo two; echo err >&2"])
    assert side.finish(timeout=30) == 0
    assert side.stdout_lines == ["one\n", "two\n"] and list(reversed(side.stdout_lines)) == ["two\n", "one\n"]
    assert side.stdout() == "one\ntwo\n" and side.stderr_lines.dropped == 0

"""The sweep's progress (sweep/progress.py) and its last lines (sweep.describe): they fit an 80-column
terminal, show the failures whatever the width, write plain lines where there is no terminal, and
end with the command that comes next."""

from __future__ import annotations

import io
import os
import re
from pathlib import Path

import pytest

from copylab.pointspec import PointSpec
from copylab.sweep import SweepSummary, describe
from copylab.sweep.progress import PLAIN_WIDTH, Progress, label, terminal_columns

# the longest label a grid can make: the longest implementation name, 1 MiB, 256 threads, pass 10
LONG = PointSpec(impl="uring_zc", mode="throughput", msg_size=1 << 20, threads=256, rep=9, profile=True)
SHORT = PointSpec(impl="a2", mode="latency", msg_size=64, threads=1, rep=0)


def _screen_lines(text: str) -> list[str]:
    """What a terminal shows: each redraw (\\r) and each line."""
    return [part for line in text.split("\n") for part in line.split("\r") if part.strip()]


def test_the_bar_fits_80_columns_and_always_shows_the_failures():
    stream = io.StringIO()
    progress = Progress(total=1234, done=0, stream=stream, columns=80)
    for i in range(30):
        progress.point(LONG, ok=i % 7 != 3)
    progress.total += 100  # the budget's pass, planned on the way
    progress.point(LONG, ok=False)
    progress.close()
    shown = _screen_lines(stream.getvalue())
    assert shown and all(len(line) <= 80 for line in shown), max(shown, key=len)
    assert re.match(r"31/1334 points, 5 failed, FAILED uring_zc tput", shown[-1]), shown[-1]
    assert "|" in shown[-1] and "<" in shown[-1]  # the bar and the time left stayed


def test_a_narrow_terminal_cuts_the_label_not_the_count():
    stream = io.StringIO()
    progress = Progress(total=36, done=0, stream=stream, columns=60)
    progress.point(LONG, ok=False)
    progress.close()
    last = _screen_lines(stream.getvalue())[-1]
    assert len(last) <= 60 and last.startswith("1/36 points, 1 failed, ") and "…" in last


def test_without_a_terminal_plain_lines_and_every_failure():
    said: list[str] = []
    stream = io.StringIO()  # a pipe, a log file: columns 0
    progress = Progress(total=40, done=4, stream=stream, say=said.append, columns=0)
    for i in range(36):
        progress.point(SHORT if i != 20 else LONG, ok=i != 20)
    progress.close()
    assert stream.getvalue() == ""  # nothing redrawn in place
    prefix = len("copylab sweep: ")
    assert all(len(line) + prefix <= PLAIN_WIDTH and "\r" not in line for line in said), said
    assert said[0].startswith("5/40 points, 0 failed, ") and said[-1].startswith("40/40 points, 1 failed, ")
    assert any("left: FAILED uring_zc" in line for line in said)
    assert 3 <= len(said) <= 36  # now and then, not every point
    assert all(re.search(r" failed, \d\d:\d\d left: ", line) for line in said)


def test_a_terminal_without_a_width_counts_as_none(monkeypatch):
    """A pseudo-terminal nobody sized (CI runners, `script`) reports 0 columns: plain lines there."""
    monkeypatch.delenv("COLUMNS", raising=False)
    leader, follower = os.openpty()
    with os.fdopen(follower, "w") as tty:
        assert tty.isatty() and terminal_columns(tty) == 0
        assert Progress(total=3, done=0, stream=tty).bar is None
        monkeypatch.setenv("COLUMNS", "100")
        assert terminal_columns(tty) == 100
    os.close(leader)
    assert terminal_columns(io.StringIO()) == 0


def test_labels_are_short():
    assert label(SHORT) == "a2 lat 64 B 1thr pass 1"
    assert label(LONG) == "uring_zc tput 1 MiB 256thr pass 10 profiled"


def test_the_last_lines_fit_and_name_the_next_command(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "output" / "quick"
    summary = SweepSummary(out, total=36, measured=34, skipped=2, failed=1, wall_s=95.2, point_seconds=60.0,
                           placement_s=12.0)
    lines = describe(summary).splitlines()
    assert all(len(line) <= 80 for line in lines), lines
    assert lines[0] == "sweep finished: 36 points in 95 s (34 measured, 2 already done, 1 failed)"
    assert lines[-3:] == ["results: output/quick/results.csv", "next: copylab report output/quick",
                          "  or: make lab RESULTS=output/quick"]
    # `--report` (make report) goes on to the report, whose path is the last line
    assert describe(summary, next_step=False).splitlines()[-1] == "results: output/quick/results.csv"
    assert Path(tmp_path).is_dir()


@pytest.mark.parametrize("name", ["my results", "-rf", "it's $(here)"])
def test_the_next_command_takes_the_folder_as_one_path_however_it_is_named(tmp_path, monkeypatch, name):
    """"next: copylab report PATH" is a command to paste: a folder with a space, a quote or a leading
    dash stays one word that the command reads as a path (it was printed unquoted)."""
    import shlex

    monkeypatch.chdir(tmp_path)
    out = tmp_path / name
    summary = SweepSummary(out, total=2, measured=2, skipped=0, failed=0, wall_s=3.0, point_seconds=2.0)
    report, lab = describe(summary).splitlines()[-2:]
    words = shlex.split(report.removeprefix("next: "))
    assert words[:2] == ["copylab", "report"] and len(words) == 3 and not words[2].startswith("-")
    assert (tmp_path / words[2]).resolve() == out.resolve()
    words = shlex.split(lab.removeprefix("  or: "))
    assert words[:2] == ["make", "lab"] and len(words) == 3
    assert (tmp_path / words[2].removeprefix("RESULTS=")).resolve() == out.resolve()

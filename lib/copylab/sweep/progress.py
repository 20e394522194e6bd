"""The sweep's progress: a bar that fits its terminal, or plain lines where there is none.

In a terminal: one line, `12/36 points, 0 failed, a2 tput 64 KiB 1thr pass 1 |####   | 00:41<01:23`,
redrawn in place. It is cut to the terminal's width, from the point's label only: the count and the
failures always show. Without a terminal (a pipe, a log file, CI, or a terminal that reports 0
columns) nothing can be redrawn, so a plain line is written now and then (see Progress._plain), and
at every failure. One count of points: the sweep's own (every point of the grid, plus the budget's
extra passes as they are planned), the same number the sweep's first line gives.
"""

from __future__ import annotations

import os
import sys
import time

from ..fmt import fmt_size

PLAIN_WIDTH = 80  # the line's width where there is no terminal to ask (a pipe, a CI log)
MIN_BAR = 10  # columns the bar keeps before the label gives way
PLAIN_EVERY_S = 30.0  # a plain line at least this often while points finish...
PLAIN_EVERY_SHARE = 0.05  # ...and at every 5% of the points
MODES = {"throughput": "tput", "latency": "lat"}


def label(spec) -> str:
    """A point in a few words: implementation, mode, size, threads and pass (repetition + 1)."""
    text = (f"{spec.impl} {MODES.get(spec.mode, spec.mode)} {fmt_size(spec.msg_size)} {spec.threads}thr "
            f"pass {spec.rep + 1}")
    return text + " profiled" if spec.profile else text


def terminal_columns(stream) -> int:
    """The width of the terminal `stream` writes to; 0 when it is not a terminal or reports no width.
    COLUMNS, when set, wins (as for every program that asks)."""
    try:
        if not stream.isatty():
            return 0
        return int(os.environ.get("COLUMNS") or 0) or os.get_terminal_size(stream.fileno()).columns
    except (OSError, ValueError, AttributeError):
        return 0


def clock(seconds: float) -> str:
    seconds = int(max(seconds, 0))
    h, rest = divmod(seconds, 3600)
    return f"{h}:{rest // 60:02d}:{rest % 60:02d}" if h else f"{rest // 60:02d}:{rest % 60:02d}"


def fit(head: str, tail: str, width: int) -> str:
    """head + tail in `width` columns, cutting the tail (never the head)."""
    room = width - len(head)
    if len(tail) <= room:
        return head + tail
    return head + (tail[:room - 1] + "…" if room > 1 else "")


class Progress:
    """Points done / total, failures and time left; `total` may grow (the budget's passes)."""

    def __init__(self, total: int, done: int, enabled: bool = True, stream=None, say=None,
                 columns: int | None = None):
        self.stream = stream if stream is not None else sys.stderr
        self.say = say or (lambda text: print(text, file=self.stream, flush=True))
        self.columns = terminal_columns(self.stream) if columns is None else columns
        self.done, self.failed, self.enabled = done, 0, enabled
        self._total = total
        self.started, self.done_at_start = time.monotonic(), done
        self.last_plain, self.done_at_plain = time.monotonic(), done
        self.bar = None
        if enabled and self.columns > 0:
            from tqdm import tqdm

            self.bar = tqdm(total=total, initial=done, file=self.stream, ncols=self.columns, dynamic_ncols=False,
                            desc=f"{self.failed} failed", mininterval=0.5,
                            bar_format="{n_fmt}/{total_fmt} points, {desc} |{bar}| {elapsed}<{remaining}")

    @property
    def total(self) -> int:
        return self._total

    @total.setter
    def total(self, value: int) -> None:
        self._total = value
        if self.bar is not None:
            self.bar.total = value
            self.bar.refresh()

    def point(self, spec, ok: bool) -> None:
        """One point finished (ok or failed)."""
        self.done += 1
        self.failed += not ok
        if not self.enabled:
            return
        what = ("" if ok else "FAILED ") + label(spec)
        if self.bar is None:
            self._plain(what, ok)
            return
        columns = terminal_columns(self.stream) or self.columns  # the terminal may have been resized
        self.bar.ncols = columns
        # what surrounds the label: the count, the bar (at least MIN_BAR) and the times
        around = len(f"{self.done}/{self.total} points, ") + len(" || ") + MIN_BAR + len("00:00<00:00") + 4
        self.bar.set_description_str(fit(f"{self.failed} failed, ", what, columns - around), refresh=False)
        self.bar.update(1)

    def _plain(self, what: str, ok: bool) -> None:
        """A line when a point failed, at the first and the last point, and otherwise every
        PLAIN_EVERY_S seconds or PLAIN_EVERY_SHARE of the points, whichever comes first."""
        now = time.monotonic()
        due = (not ok or self.done in (self.done_at_start + 1, self.total)
               or now - self.last_plain >= PLAIN_EVERY_S
               or self.done - self.done_at_plain >= max(1, round(self.total * PLAIN_EVERY_SHARE)))
        if not due:
            return
        self.last_plain, self.done_at_plain = now, self.done
        measured = self.done - self.done_at_start
        left = (now - self.started) / measured * (self.total - self.done) if measured else 0.0
        head = f"{self.done}/{self.total} points, {self.failed} failed, {clock(left)} left: "
        self.say(fit(head, what, PLAIN_WIDTH - len("copylab sweep: ")))

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()

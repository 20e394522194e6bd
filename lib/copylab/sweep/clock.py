"""The sweep's time against its budget: elapsed over every session of the sweep (a resumed one
counts its earlier sessions), this host's pace (wall time over the grid's arithmetic, placement left
out), and whether what is still queued fits in what is left of budget_min."""

from __future__ import annotations

import time

from .budget import pass_seconds


class SweepClock:
    def __init__(self, budget_min: float | None, earlier_s: float = 0.0):
        self.budget_min = budget_min
        self.started = time.monotonic() - earlier_s
        self.estimated_done = 0.0  # the grid's arithmetic for the points measured so far (pass_seconds)
        self.reserve_s = 0.0       # the profiled runs' arithmetic, while the runs before them are measured

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def left(self) -> float | None:
        return None if self.budget_min is None else self.budget_min * 60 - self.elapsed()

    def point(self, spec) -> None:
        self.estimated_done += pass_seconds([spec])

    def pace(self, accounting) -> float:
        """This host's wall seconds per second of the grid's arithmetic over the points measured so
        far, placement's cost left out; 1 before any. Below 1 too: the arithmetic counts each
        steady-state warm-up at its bound, which a settled host seldom needs (2026-11-26 13:03: the
        whole sweep took 0.76x its arithmetic), and a pace held at 1 planned extra passes, and judged
        the queue behind the budget, a third too dear."""
        if self.estimated_done <= 0:
            return 1.0
        return (accounting.wall - accounting.placement) / self.estimated_done

    def need(self, specs, accounting) -> float:
        """Seconds specs (and the profiled runs held in reserve) take at this host's pace."""
        return (pass_seconds(specs) + self.reserve_s) * self.pace(accounting)

    def behind(self, specs, accounting) -> bool:
        """Would specs, at this host's pace, end after the budget?"""
        left = self.left()
        return left is not None and self.need(specs, accounting) > left

    def pace_line(self, measured: int, specs, accounting) -> str:
        """After the first (short) group: what the queue needs at the pace just shown, against the budget."""
        need, pace = self.need(specs, accounting), self.pace(accounting)
        text = (f"pace: the first {measured} points took {pace:.2f}x the grid's arithmetic; at that pace this host "
                f"needs about {need / 60:.1f} min for the {len(specs)} points queued")
        left = self.left()
        if left is not None:
            text += (f", {'within' if need <= left else 'MORE than'} the {max(left, 0) / 60:.1f} min left of the "
                     f"{self.budget_min:g}-minute budget")
            if need > left:
                text += ": no extra pass will run, placement will not measure runs again"
        return text

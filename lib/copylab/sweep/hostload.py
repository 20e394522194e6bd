"""Other programs' share of this host's CPUs while the sweep measures.

A busy host widens the spread between repetitions (the median coefficient of variation of the
study's throughput points was 2.6% on a quiet stretch of the development VM and 12.2% while another
session worked on it), and no row shows it: the pinned CPUs' busy share counts the measured
programs too. So, per group of points, the sweep compares the CPU time all CPUs spent running
anything (/proc/stat: user, nice, system, irq, softirq; idle, iowait and steal apart) with the CPU
time of its own process tree (itself, its Jupyter kernel, and every program they started, reaped
ones included). The rest is other programs' (and interrupt work no task was running for).
Tick-based accounting charges a task for the softirq work done while it runs, and /proc/stat books
the same ticks as softirq: both sides count them, so they cancel.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

PROC = Path("/proc")
# above this share of all CPUs' time, the host was busy: its spread is not a quiet host's
QUIET_SHARE = 0.05
_BUSY_FIELDS = (0, 1, 2, 5, 6)  # user nice system irq softirq (guest time is inside user)


def system_ticks(stat_text: str | None = None) -> tuple[int, int]:
    """(ticks spent running anything, all ticks) over all CPUs since boot, from /proc/stat."""
    text = stat_text if stat_text is not None else (PROC / "stat").read_text()
    fields = [int(v) for v in text.splitlines()[0].split()[1:]]
    total = sum(fields[:8])  # user..steal; guest and guest_nice are already inside user and nice
    return sum(fields[k] for k in _BUSY_FIELDS if k < len(fields)), total


def _stat_fields(pid: int) -> list[str] | None:
    try:
        text = (PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    return text.rsplit(")", 1)[1].split()  # after the command name, which may hold spaces


def tree_ticks(root: int) -> int:
    """CPU ticks of root and its live descendants, each with its reaped children's (utime, stime,
    cutime, cstime)."""
    parents: dict[int, int] = {}
    ticks: dict[int, int] = {}
    for entry in PROC.iterdir():
        if not entry.name.isdigit():
            continue
        fields = _stat_fields(int(entry.name))
        if fields is None:
            continue
        # fields[0] is the state; ppid is fields[1]; utime..cstime are fields[11:15]
        parents[int(entry.name)] = int(fields[1])
        ticks[int(entry.name)] = sum(int(v) for v in fields[11:15])
    ours, frontier = {root}, [root]
    children: dict[int, list[int]] = {}
    for pid, ppid in parents.items():
        children.setdefault(ppid, []).append(pid)
    while frontier:
        for child in children.get(frontier.pop(), []):
            if child not in ours:
                ours.add(child)
                frontier.append(child)
    return sum(ticks.get(pid, 0) for pid in ours)


class HostLoad:
    """Other programs' CPU share per group of points, and over the sweep."""

    def __init__(self, root: int | None = None):
        self.root = root or os.getpid()
        self.groups: list[tuple[float, float]] = []  # (seconds, other programs' share of all CPUs)
        self._start: tuple | None = None

    def begin(self) -> None:
        self._start = (system_ticks(), tree_ticks(self.root), time.monotonic())

    def end(self) -> float | None:
        """The share since begin(), kept and returned (None when too short to tell)."""
        if self._start is None:
            return None
        (busy0, total0), ours0, t0 = self._start
        (busy1, total1), ours1 = system_ticks(), tree_ticks(self.root)
        self._start = None
        if total1 - total0 <= 0:
            return None
        share = min(1.0, max(0.0, ((busy1 - busy0) - (ours1 - ours0)) / (total1 - total0)))
        self.groups.append((time.monotonic() - t0, share))
        return share

    def summary(self) -> dict:
        """For meta.json: the time-weighted mean and the largest group share, and how many groups
        were above QUIET_SHARE."""
        seconds = sum(s for s, _ in self.groups)
        mean = sum(s * share for s, share in self.groups) / seconds if seconds else None
        return {"other_cpu_share": round(mean, 4) if mean is not None else None,
                "other_cpu_share_max": round(max(share for _, share in self.groups), 4) if self.groups else None,
                "busy_groups": sum(share > QUIET_SHARE for _, share in self.groups), "groups": len(self.groups),
                "quiet_below": QUIET_SHARE}

    def warning(self) -> str:
        """One sentence when other programs used more than QUIET_SHARE of the CPUs, else ""."""
        mean = self.summary()["other_cpu_share"]
        if mean is None or mean <= QUIET_SHARE:
            return ""
        return (f"other programs used {100 * mean:.0f}% of this host's CPU time while the sweep measured "
                f"(a quiet host: under {100 * QUIET_SHARE:.0f}%): the spread between repetitions is wider "
                "than this host gives when quiet; measure again with nothing else running")

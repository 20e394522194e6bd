"""Other programs' share of this host's CPUs while the sweep measures.

A busy host widens the spread between repetitions, and no row shows it: the pinned CPUs' busy
share counts the measured programs too. So, per group of points, the sweep adds up the CPU time of
every process that is neither its own (itself, its Jupyter kernel, the programs they start) nor a
kernel thread, with what their reaped children used (cutime, cstime: a build's short compiler runs
land in make's, an orphan's in init's), over all CPUs' ticks in that time. Kernel threads are left
out: they serve everyone, the measured traffic included (ksoftirqd, kworkers, DAMON: about 0.1% of
the CPUs in a quick sweep on the idle development VM). The measured servers must end as their
perf's children (measurement.stop_server): orphaned, init reaped them and booked their CPU time as
another program's, 33-49% of the CPUs in the default sweep.

What the guest cannot see stays unseen: the hypervisor's other tenants. On the idle development VM
(this meter at 0.2-0.3%, no steal) the median coefficient of variation of the default sweep's
throughput points ranged from 5.4% to 16.4% within one day (docs/methodology.md, "Noise").
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from ..procfs import stat_fields

PROC = Path("/proc")
# above this share of all CPUs' time, the host was busy: its spread is not a quiet host's
QUIET_SHARE = 0.05
PF_KTHREAD = 0x00200000  # include/linux/sched.h


def total_ticks(stat_text: str | None = None) -> int:
    """All CPUs' ticks since boot (user..steal; guest time is inside user), from /proc/stat."""
    text = stat_text if stat_text is not None else (PROC / "stat").read_text()
    return sum(int(v) for v in text.splitlines()[0].split()[1:9])


def _processes() -> dict[int, tuple[int, int, int]]:
    """pid -> (ppid, flags, utime + stime + cutime + cstime) of every process readable now."""
    out = {}
    for entry in PROC.iterdir():
        fields = stat_fields(entry.name) if entry.name.isdigit() else None  # None: gone since the listing
        if fields:
            out[int(entry.name)] = (int(fields[1]), int(fields[6]), sum(int(v) for v in fields[11:15]))
    return out


def descendants(root: int, processes: dict[int, tuple[int, int, int]]) -> set[int]:
    """root and every process below it."""
    children: dict[int, list[int]] = {}
    for pid, (ppid, _, _) in processes.items():
        children.setdefault(ppid, []).append(pid)
    ours, frontier = {root}, [root]
    while frontier:
        for child in children.get(frontier.pop(), []):
            if child not in ours:
                ours.add(child)
                frontier.append(child)
    return ours


def foreign_ticks(root: int) -> int:
    """CPU ticks of the processes outside root's tree that are not kernel threads, their reaped
    children's included."""
    processes = _processes()
    ours = descendants(root, processes)
    return sum(ticks for pid, (_, flags, ticks) in processes.items() if pid not in ours and not flags & PF_KTHREAD)


class HostLoad:
    """Other programs' CPU share per group of points, and over the sweep."""

    def __init__(self, root: int | None = None):
        self.root = root or os.getpid()
        self.groups: list[tuple[float, float]] = []  # (seconds, other programs' share of all CPUs)
        self._start: tuple | None = None

    def begin(self) -> None:
        self._start = (total_ticks(), foreign_ticks(self.root), time.monotonic())

    def end(self) -> float | None:
        """The share since begin(), kept and returned (None when too short to tell)."""
        if self._start is None:
            return None
        total0, foreign0, t0 = self._start
        total1, foreign1 = total_ticks(), foreign_ticks(self.root)
        self._start = None
        if total1 - total0 <= 0:
            return None
        # a foreign process that exited unreaped, or whose reaper exited too, takes its ticks along
        share = min(1.0, max(0.0, (foreign1 - foreign0) / (total1 - total0)))
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

"""What a grid will cost before it runs: wall time and peak memory, from arithmetic on the grid
(never by expanding a million points), refused beyond sane limits unless the user insists."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from ..errors import CopylabError
from ..fmt import fmt_num
from ..contract import PEER_MODES
from ..params import Grid

PER_POINT_OVERHEAD_S = 0.08   # measured: process start, connection set-up, drain and stop, record
PROFILE_S = 0.5               # perf record's start-up and perf script, per profiled point
SOCKPERF_FIXED_S = 0.4        # sockperf's own pauses around a test (its 2 s sleep is preloaded away)
PER_GROUP_OVERHEAD_S = 0.5    # papermill on a warm kernel, once per group of points
BUILD_S = 10.0
MAX_WALL_S = 24 * 3600
# memory the native programs hold (native/a3_server.c, native/client.c): A3's rings share a budget
# but every connection keeps at least A3_SLOTS_MIN whole messages
A3_SLOTS_MIN = 4
A3_RING_BUDGET = 256 << 20
A3_RING_MEMORY = 8 << 20
PAGE = 4096
# kernel socket memory per connection, as a typical (not worst) case: default send + receive buffers
SOCKET_BYTES = (16 << 10) + (128 << 10)


@dataclass(frozen=True)
class Estimate:
    points: int
    wall_s: float
    peak_bytes: int
    peak_where: str

    def describe(self) -> str:
        return (f"{self.points} points, about {_duration(self.wall_s)} of wall time, peak memory "
                f"about {_bytes(self.peak_bytes)} ({self.peak_where})")


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def _bytes(n: float) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{fmt_num(n / scale)} {unit}"
    return f"{n:.0f} B"


def _paged(size: int) -> int:
    """What an 8-field message holds in page-aligned fields (A3)."""
    field = math.ceil(size / 8)
    return 8 * math.ceil(field / PAGE) * PAGE


def point_memory(impl: str, msg_size: int, threads: int) -> int:
    """Bytes the server and client of one point hold at most (the programs' own allocations plus
    typical socket buffers)."""
    if impl == "a1":
        server = threads * 2 * msg_size              # the 8 fields + the serialised copy
    elif impl == "a3":
        slot = _paged(msg_size)
        wanted = max(A3_SLOTS_MIN, math.ceil((4 << 20) / msg_size)) * slot
        ring = min(wanted, max(A3_SLOTS_MIN * slot, A3_RING_MEMORY))
        server = max(min(threads * ring, A3_RING_BUDGET), threads * A3_SLOTS_MIN * slot)
    else:
        server = threads * msg_size
    client = msg_size + threads * (max(msg_size, 256 << 10))  # the pattern + one receive buffer each
    return server + client + threads * SOCKET_BYTES


def _matching(grid: Grid, values: dict) -> int:
    """How many of the grid's (impl, mode, size, threads) combinations a profile selection holds:
    a conjunction over independent dimensions, so a product of counts (never an expansion)."""
    if isinstance(grid.profile, bool):
        return math.prod(len(v) for v in values.values()) if grid.profile else 0
    count = 1
    for key, dim in values.items():
        wanted = getattr(grid.profile, key)
        count *= len(dim) if wanted is None else len(set(dim) & set(wanted))
    return count


def estimate(grid: Grid) -> Estimate:
    variants = len(grid.receive) * len(grid.congestion)
    per_mode = len(grid.impls) * len(grid.msg_sizes) * len(grid.threads) * variants
    # a steady-state warm-up is at most steady_max_s longer; latency points wait for none
    seconds = {mode: grid.warmup_s + grid.duration_of(mode) + PER_POINT_OVERHEAD_S
               + (grid.steady_max_s if mode == "throughput" else 0.0) for mode in grid.modes}
    point_s = sum(seconds.values()) / len(seconds)
    per_rep = per_mode * len(grid.modes)
    # the profiled runs are extra runs, one per selected point
    profiled = _matching(grid, {"impls": grid.impls, "modes": grid.modes, "msg_sizes": grid.msg_sizes,
                                "threads": grid.threads}) * variants
    points = per_rep * grid.repetitions + profiled
    wall = per_mode * grid.repetitions * sum(seconds.values()) + profiled * (point_s + PROFILE_S)
    peers = grid.peers
    if peers is not None:
        for tool in peers.tools:
            if PEER_MODES[tool] not in grid.modes:
                continue
            threads = [t for t in peers.threads if tool != "sockperf" or t == 1]
            n = len(grid.msg_sizes) * len(threads) * peers.repetitions
            points += n
            if tool == "iperf3":
                wall += n * (math.ceil(grid.warmup_s + grid.duration_s) + PER_POINT_OVERHEAD_S)
            else:
                wall += n * (math.ceil(grid.duration_of("latency") + 0.45) + SOCKPERF_FIXED_S)
    groups = math.ceil(points / 16)
    wall += BUILD_S + groups * PER_GROUP_OVERHEAD_S
    if grid.budget_min is not None and grid.repetitions >= 3:  # extra passes fill the budget
        wall = max(wall, grid.budget_min * 60)
    # memory grows with size and threads: the largest of each is the peak for every implementation
    size, threads = max(grid.msg_sizes), max(grid.threads)
    impl = max(grid.impls, key=lambda i: point_memory(i, size, threads))
    peak = point_memory(impl, size, threads)
    return Estimate(points, wall, peak, f"{impl}, {threads} threads x {size} B messages")


def available_memory(meminfo: Path = Path("/proc/meminfo")) -> int | None:
    try:
        for line in meminfo.read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def check(est: Estimate, allow_large: bool) -> None:
    """Refuse a grid beyond a day of wall time or the memory this host has, unless allow_large."""
    if allow_large:
        return
    if est.wall_s > MAX_WALL_S:
        raise CopylabError(f"grid too large: {est.describe()}; more than {MAX_WALL_S // 3600} h. Shrink it, "
                           "or pass --allow-large if you really mean it")
    memory = available_memory()
    if memory is not None and est.peak_bytes > memory:
        raise CopylabError(f"grid too large: {est.describe()}, more than the {_bytes(memory)} this host has "
                           "available. Shrink it, or pass --allow-large if you really mean it")

"""What a grid will cost before it runs: wall time and peak memory, from arithmetic on the grid
(never by expanding a million points), refused beyond sane limits unless the user insists."""

from __future__ import annotations

import math
from dataclasses import dataclass
from types import SimpleNamespace

from ..errors import CopylabError
from ..fmt import fmt_num
from ..contract import MAX_WALL_S, PEER_MODES, PER_POINT_OVERHEAD_S
from ..memory import available_memory
from ..params import Grid, peak_memory

PROFILE_S = 0.5               # perf record's start-up and perf script, per profiled point
PER_GROUP_OVERHEAD_S = 0.5    # papermill on a warm kernel, once per group of points
BUILD_S = 10.0

@dataclass(frozen=True)
class Estimate:
    points: int
    wall_s: float
    peak_bytes: int
    peak_where: str
    base_s: float = 0.0  # the base passes (and peers, profiled runs) alone, before any extra pass
    budget_s: float | None = None  # budget_min, when extra passes fill it

    def describe(self) -> str:
        if self.budget_s is None:
            time = f"about {_duration(self.wall_s)} of wall time"
        elif self.base_s > self.budget_s:
            time = (f"about {_duration(self.base_s)} for the base passes: MORE than the budget of "
                    f"{_duration(self.budget_s)}, so no extra pass will run and placement will not measure "
                    "runs again")
        else:
            time = (f"about {_duration(self.base_s)} for the base passes, extra passes for the undecided "
                    f"up to the budget of {_duration(self.budget_s)}")
        return f"{self.points} points, {time}; peak memory about {_bytes(self.peak_bytes)} ({self.peak_where})"


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.1f}".removesuffix(".0") + " min"
    return f"{seconds / 3600:.1f} h"


def _bytes(n: float) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{fmt_num(n / scale)} {unit}"
    return f"{n:.0f} B"


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
    per_mode = len(grid.impls) * len(grid.msg_sizes) * len(grid.threads) * variants * len(grid.working_set)
    # a steady-state warm-up is at most steady_max_s longer; latency points wait for none. Rounds
    # (a number) each warm up; auto holds the pass's cost (rounds.py), so counts as one
    rounds = grid.rounds if isinstance(grid.rounds, int) else 1
    seconds = {mode: (grid.warmup_s + (grid.steady_max_s if mode == "throughput" else 0.0))
               * (rounds if mode == "throughput" else 1) + grid.duration_of(mode) + PER_POINT_OVERHEAD_S
               for mode in grid.modes}
    point_s = sum(seconds.values()) / len(seconds)
    per_rep = per_mode * len(grid.modes)
    # the profiled runs are extra runs, one per selected point
    profiled = _matching(grid, {"impls": grid.impls, "modes": grid.modes, "msg_sizes": grid.msg_sizes,
                                "threads": grid.threads}) * variants * len(grid.working_set)
    points = per_rep * grid.repetitions + profiled
    wall = per_mode * grid.repetitions * sum(seconds.values()) + profiled * (point_s + PROFILE_S)
    if grid.peers is not None:
        extra_points, extra_wall = _peers(grid)
        points += extra_points
        wall += extra_wall
    if grid.cache is not None:  # its throughput points in every pass
        cached = len(grid.pass_points(0, "netns")) - per_rep
        points += cached * grid.repetitions
        wall += cached * grid.repetitions * seconds.get("throughput", point_s)
    groups = math.ceil(points / 16)
    wall += BUILD_S + groups * PER_GROUP_OVERHEAD_S
    base, budget = wall, None
    if grid.budget_min is not None and grid.repetitions >= 3:  # extra passes fill the budget
        budget = grid.budget_min * 60
        wall = max(wall, budget)
    peak, where = peak_memory(grid)
    return Estimate(points, wall, peak, where, base, budget)


def unused_budget(grid: Grid) -> str:
    """What a budget_min the extra passes cannot use does (and does not) do, or "" when they use it."""
    if grid.budget_min is None or grid.repetitions >= 3:  # budget.MIN_BASE_PASSES (see estimate())
        return ""
    return (f"budget_min {grid.budget_min:g}: no extra pass will run, since extra passes need at least 3 "
            f"repetitions to decide from (this grid has {grid.repetitions}); the budget only stops placement's "
            "waits and re-measurements once the points left need the rest of it")


def _peers(grid: Grid) -> tuple[int, float]:
    """Points and seconds of the reference programs: each runs as long as its runner says (whole
    seconds, fixed sleeps); a latency peer answers one connection (point.py)."""
    from ..runners import runner_for

    points, wall = 0, 0.0
    peers = grid.peers
    for tool in peers.tools:
        mode = PEER_MODES[tool]
        if mode not in grid.modes:
            continue
        threads = [t for t in peers.threads if mode != "latency" or t == 1]
        spec = SimpleNamespace(warmup_s=grid.warmup_s, duration_s=grid.duration_of(mode),
                               steady_max_s=grid.steady_max_s, mode=mode, msg_size=max(grid.msg_sizes),
                               threads=max(threads, default=1))
        n = len(grid.msg_sizes) * len(threads) * peers.repetitions
        # and the profiled runs of the peer points the profile selection names (params.profile_points)
        profiled = _matching(grid, {"impls": [tool], "modes": [mode], "msg_sizes": grid.msg_sizes,
                                    "threads": threads}) * len(grid.congestion)
        points += n + profiled
        per_point = runner_for(tool).expected_seconds(spec) + PER_POINT_OVERHEAD_S
        wall += n * per_point + profiled * (per_point + PROFILE_S)
    return points, wall


def point_seconds(spec) -> float:
    """What one point is expected to take: its warm-up (a steady-state one at most steady_max_s
    longer; one per round) and window, or a reference program's own run, plus the per-point overhead and, for a
    profiled run, perf record's."""
    from ..runners import runner_for

    return runner_for(spec.impl).expected_seconds(spec) + PER_POINT_OVERHEAD_S + (PROFILE_S if spec.profile else 0.0)


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

"""The time budget (grid key budget_min): extra passes where a comparison is still too wide to decide.

After the grid's base passes, the study's comparisons (one_copy and zero_copy against two_copy, per
message size over all thread counts: the ones Part E's Q4 and Q5 answer) and, in a grid with a cache
part, Q2's steps from one working set to the next are computed from the rows measured so far
(inference/passes.py). A comparison whose 95% interval is wider than
target_half_width() on either side (log(1+m)/2: an interval that narrow always decides) gets
another pass: all throughput points of both implementations at that size, at every thread count (of the one
working set Part E decides on, when the grid varies it), or a step's two points,
in shuffled blocks (each cell's implementations back to back, params.shuffled_blocks). Passes are added while the sweep's elapsed time plus the next pass's
estimate (and the profiled runs still to come) fit in budget_min.

The allocation looks at the intervals' widths only, never at where they lie: which comparisons get
more passes does not depend on the ratios measured, so it cannot steer a comparison towards a
verdict (the fixed-width sequential intervals of Chow and Robbins, 1965, stop on width alone for
this reason; for normal data the mean of a sample is independent of its variance). Each decision is
taken once, at the end, on all passes. docs/methodology.md gives the numbers this was checked with.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field, replace

import pandas as pd

from .. import registry
from ..cachelevels import ASKED as ASKED_WORKING_SET, nearest
from ..inference import compare_values, decide_diff, log_values, point_diff, point_stats, target_half_width
from ..contract import SENDER_CPU, WORKING_SET_DEFAULT, per_byte
from ..fmt import plural
from ..params import Grid, shuffled_blocks
from ..pointspec import PointSpec
from . import estimate as est
from . import retake as retaking

MIN_BASE_PASSES = 3


@dataclass
class PlannedPass:
    """One extra pass: its index, its points, and why (the comparisons that were too wide)."""

    rep: int
    specs: list[PointSpec]
    why: list[dict] = field(default_factory=list)
    estimated_s: float = 0.0

    def to_dict(self) -> dict:
        return {"pass": self.rep, "points": len(self.specs), "estimated_s": round(self.estimated_s, 1),
                "comparisons": self.why}


def _study_rows(rows: dict[str, dict], grid: Grid) -> pd.DataFrame:
    """The measured throughput rows of the grid's first receive strategy and congestion control."""
    frame = pd.DataFrame([r for r in rows.values() if r.get("run_kind", "measure") == "measure"])
    if frame.empty:
        return frame
    keep = (frame["mode"] == "throughput") & (frame["receive"] == grid.receive[0])
    if "congestion" in frame:
        keep &= frame["congestion"] == grid.congestion[0]
    if len(grid.working_set) > 1 or grid.cache is not None:  # the working set Part E decides on: never pooled
        asked = frame["point_id"].astype(str).str.extract(ASKED_WORKING_SET)[0]
        keep &= asked == str(primary_working_set(grid))
    return frame[keep]


def primary_working_set(grid: Grid) -> int:
    """The working set Part E's comparisons use when the grid varies it: the one nearest the default
    grid's on a log scale (the Study's rule, analysis/levels.py's primary())."""
    return nearest({ws: ws for ws in grid.working_set}, WORKING_SET_DEFAULT)


def wide_comparisons(rows: dict[str, dict], grid: Grid) -> list[dict]:
    """The study's per-size comparisons whose interval is wider than the deciding width, widest first,
    then the cache part's steps that are, widest first."""
    base = registry.baseline()
    target = target_half_width(grid.equivalence_margin)
    frame = _study_rows(rows, grid)
    values = log_values(frame) if not frame.empty else frame
    wide = []
    for impl in registry.study_impls():
        if impl == base or impl not in grid.impls or base not in grid.impls:
            continue
        found = compare_values(values, impl, base, grid.equivalence_margin) if not values.empty else {"by_size": {}}
        for size, decision in found["by_size"].items():
            half = decision.half_width
            if not half <= target:  # NaN (too few passes) counts as wide
                wide.append({"impl": impl, "base": base, "msg_size": size,
                             "half_width": None if math.isinf(half) or math.isnan(half) else round(half, 4),
                             "target": round(target, 4)})
    # Q4/Q5's comparisons first, widest first; Q2's path steps only with what is left: Q2's level is
    # decided by the copy alone (memcpyref.measure_levels), the steps are its evidence in the send path
    wide.sort(key=lambda w: -(w["half_width"] if w["half_width"] is not None else math.inf))
    steps = wide_cache_steps(rows, grid, target)
    return wide + sorted(steps, key=lambda w: -(w["half_width"] if w["half_width"] is not None else math.inf))


def wide_cache_steps(rows: dict[str, dict], grid: Grid, target: float) -> list[dict]:
    """The cache part's steps (a path's sender CPU per byte at one working set over the next smaller's,
    at its fewest threads: Q2's comparisons, analysis/levels.py) whose interval is wider than target."""
    part = grid.cache
    frame = pd.DataFrame([r for r in rows.values() if r.get("run_kind", "measure") == "measure"])
    if part is None or frame.empty or "srv_task_clock_ms" not in frame:
        return []
    threads = min(part.threads)
    frame = frame[(frame["mode"] == "throughput") & (frame["threads"] == threads) & frame["impl"].isin(part.impls)
                  & frame["msg_size"].isin(part.msg_sizes)]
    asked = pd.to_numeric(frame["point_id"].astype(str).str.extract(ASKED_WORKING_SET)[0], errors="coerce")
    frame = frame[asked.notna()].assign(impl=frame["impl"] + "@" + asked.dropna().astype(int).astype(str))
    if frame.empty:
        return []
    frame[SENDER_CPU] = per_byte(pd.to_numeric(frame["srv_task_clock_ms"], errors="coerce"),
                                 pd.to_numeric(frame["bytes"], errors="coerce"), 1e6)
    stats = point_stats(frame, SENDER_CPU)
    wide = []
    for (impl, size), cells in stats.assign(path=stats["impl"].str.split("@").str[0]).groupby(["path", "msg_size"]):
        sets = sorted(int(k.split("@")[1]) for k in cells["impl"])
        for lower, upper in zip(sets, sets[1:]):
            diff = point_diff(stats, (f"{impl}@{upper}", size, threads), (f"{impl}@{lower}", size, threads))
            half = decide_diff(impl, impl, size, threads, diff, grid.equivalence_margin).half_width \
                if diff is not None else math.nan
            if not half <= target:
                wide.append({"impl": impl, "base": impl, "msg_size": int(size), "working_sets": [lower, upper],
                             "half_width": None if math.isinf(half) or math.isnan(half) else round(half, 4),
                             "target": round(target, 4)})
    return wide


def pass_seconds(specs: list[PointSpec]) -> float:
    return sum(est.point_seconds(s) for s in specs)


def plan_pass(rows: dict[str, dict], grid: Grid, topology: str, rep: int, seconds_left: float,
              seed: int) -> PlannedPass | None:
    """The next extra pass within seconds_left, or None when every comparison is narrow enough or no
    comparison's points fit in the time left."""
    wide = wide_comparisons(rows, grid)
    working_set = primary_working_set(grid)
    chosen, specs, seen = [], [], set()
    for comparison in wide:  # widest first, while their points fit
        size, sets = comparison["msg_size"], comparison.get("working_sets")
        if sets:  # a cache step: its path's two working sets at the cache part's fewest threads
            keep = (lambda s, size=size, impl=comparison["impl"], sets=tuple(sets):
                    s.mode == "throughput" and s.msg_size == size and s.impl == impl
                    and s.threads == min(grid.cache.threads) and s.working_set in sets)
        else:
            keep = (lambda s, size=size, impls=(comparison["impl"], comparison["base"]):
                    s.mode == "throughput" and s.msg_size == size and s.impl in impls
                    and s.working_set == working_set)
        new = [s for s in grid.pass_points(rep, topology, keep) if s.point_id() not in seen]
        if pass_seconds(specs + new) > seconds_left:
            continue
        specs += new
        seen.update(s.point_id() for s in new)
        chosen.append(comparison)
    if not specs:
        return None
    specs = shuffled_blocks(specs, random.Random(seed + rep))
    return PlannedPass(rep, specs, chosen, pass_seconds(specs))


def applies(grid: Grid) -> bool:
    return grid.budget_min is not None and grid.repetitions >= MIN_BASE_PASSES


def extra_specs_from(records: list[dict], grid: Grid, topology: str) -> list[PointSpec]:
    """The extra passes' points an earlier session measured (so a resumed sweep keeps them)."""
    found = []
    for spec_dict in records:
        try:
            spec = replace(PointSpec(**spec_dict), topology=topology)
        except TypeError:
            continue
        if spec.rep >= grid.repetitions and not spec.profile and spec.impl in grid.impls:
            found.append(spec)
    return found


def _named(comparison: dict) -> str:
    sets = comparison.get("working_sets")
    if sets:
        return f"{comparison['impl']} {comparison['msg_size']} B working set {sets[0]} -> {sets[1]} B"
    return f"{comparison['impl']}/{comparison['base']} {comparison['msg_size']} B"


def spend(sweep) -> None:
    """Extra passes where a comparison is too wide to decide, while they fit in budget_min
    (sweep/budget.py); each pass and the reason for stopping go to sweep.log and meta.json."""
    if not applies(sweep.grid):
        return
    rep = max([s.rep for s in sweep.specs.values() if not s.profile] + [sweep.grid.repetitions - 1]) + 1
    record = {"budget_min": sweep.grid.budget_min, "margin": sweep.grid.equivalence_margin,
              "target_half_width": round(target_half_width(sweep.grid.equivalence_margin), 4),
              "allocation": "by interval width only (sweep/budget.py)", "passes": []}
    while True:
        pace = sweep.clock.pace(sweep.accounting)  # this host's seconds per second of the grid's arithmetic
        left = sweep.clock.left() - sweep.clock.reserve_s * pace  # the profiled runs still to come
        planned = plan_pass(sweep.rows, sweep.grid, sweep.topology, rep, left / pace, sweep.grid.seed)
        if planned is None:
            wide = wide_comparisons(sweep.rows, sweep.grid)
            record["stopped"] = (f"stopped with {plural(len(wide), 'comparison')} still wider than the target and "
                                 f"{max(left, 0):.0f} s of the budget left, too little for another pass" if wide else
                                 "stopped: every comparison is narrow enough to decide")
            break
        for spec in planned.specs:
            sweep.specs[spec.point_id()] = spec
        sweep.bar.total += len(planned.specs)
        record["passes"].append(planned.to_dict())
        sweep.log(f"budget: pass {rep}, {len(planned.specs)} points (about {planned.estimated_s * pace:.0f} s at "
                  f"this host's pace, {pace:.2f}x the arithmetic) for "
                  + ", ".join(f"{_named(w)} (half-width {w['half_width']})" for w in planned.why))
        sweep.meta.update(budget=record)
        sweep.measure([s.point_id() for s in planned.specs])
        # a stretch apart that outlasted waiting in this pass left its runs kept apart (0.86x their points'
        # other passes at 15:55, 2026-11-26): measured again before another pass, as after the base passes
        retaking.retake(sweep, after=f"pass {rep}")
        rep += 1
    sweep.log(f"budget: {record['stopped']}")
    sweep.meta.update(budget=record)

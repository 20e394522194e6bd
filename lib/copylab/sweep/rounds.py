"""The sweep's side of the rounds (rounds.py): a calibration before the first point measures the
host's per-connection and within-window spread and a round's cost, and the grid's `rounds: auto`
becomes the number rounds.choose() gives. CALIBRATION_POINTS throughput runs of CALIBRATION_ROUNDS
short rounds each, through the engine the sweep uses (about 5 s). A resumed sweep keeps the choice
its folder records, so its points stay the same points.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import replace

from ..contract import DURATION_RANGE, ROUNDS_RANGE
from ..fmt import plural
from ..placement import RETRIES, CpuDistance, placed
from ..rounds import Choice, choose, components
from ..sides import last_json_object

CALIBRATION_ROUNDS = 6
CALIBRATION_WINDOW_S = 0.2
CALIBRATION_POINTS = 2


def calibration_specs(grid, topology: str) -> list:
    """CALIBRATION_POINTS throughput points of copylab's senders, spread over the grid's sizes."""
    from ..pointspec import PointSpec

    sizes = sorted(grid.msg_sizes)
    picks = [(grid.impls[i % len(grid.impls)], sizes[min(len(sizes) - 1, (i + 1) * len(sizes) // (CALIBRATION_POINTS + 1))])
             for i in range(CALIBRATION_POINTS)]
    return [PointSpec(impl=impl, mode="throughput", msg_size=size, threads=min(grid.threads),
                      duration_s=CALIBRATION_ROUNDS * CALIBRATION_WINDOW_S, warmup_s=grid.warmup_s,
                      topology=topology, pin_server=grid.pin_server, pin_client=grid.pin_client,
                      congestion=grid.congestion[0], working_set=grid.working_set[0],
                      working_set_level=grid.working_set_levels[0], steady_max_s=grid.steady_max_s,
                      rounds=CALIBRATION_ROUNDS).validate()
            for impl, size in picks]


def calibration_run(raw: dict) -> dict | None:
    """What components() needs from one run's record: its series and the client's round_gap_s."""
    series = raw.get("series")
    if not series:
        return None
    values = series["values"]
    windows = [(series["window_first"], series["window_last"]), *map(tuple, series.get("later_windows", []))]
    client = last_json_object(((raw.get("client") or {}).get("stdout") or "").splitlines()) or {}
    gaps = client.get("round_gap_s") or []
    return {"rounds": [values[f:l + 1] for f, l in windows], "interval_s": series["interval_s"], "gaps": gaps}


def calibrate(sweep) -> tuple[Choice, list[dict]]:
    """Measure the host's spread and choose (see the module's docstring): the choice, and each
    calibration run's point, status and per-round rates and gaps (meta.json rounds)."""
    from ..point import run_point
    from ..topology import open_topology

    grid, started = sweep.grid, time.monotonic()
    runs, evidence, apart = [], [], 0
    specs = calibration_specs(grid, sweep.topology)
    # topology ssh: the hosts the session connected (a second connection would take their addresses again)
    scope = contextlib.nullcontext(sweep.remote) if sweep.remote is not None else open_topology(sweep.topology, grid.ssh)
    cpus, reason = _cpus(sweep)
    with scope as topo, _distance(sweep, specs) as distance:
        for spec in specs:
            attempts = placed(distance, cpus, reason, lambda: run_point(spec, sweep.plan, topo))
            (row, raw), columns = attempts[-1]
            run = calibration_run(raw) if row.get("status") == "ok" else None
            evidence.append({
                "point": spec.point_id(), "status": row.get("status"), "error": row.get("error") or "",
                "round_gbps": [round(sum(r) / len(r), 3) for r in run["rounds"] if r] if run else [],
                "round_gap_s": run["gaps"] if run else [], "cpus_apart": columns["cpus_apart"],
                "set_aside": len(attempts) - 1, "placement_s": columns["placement_s"],
                # the report judges them again by the line the sweep learns later (run_facts)
                "round_trip_ns": [columns[k] for k in ("cpu_round_trip_before_ns", "cpu_round_trip_after_ns")]})
            if run and columns["cpus_apart"] == "True":  # the sweep's runs are taken near: so is its choice
                apart += 1
            elif run:
                runs.append(run)
        _learned(sweep, distance, evidence)
    found = components(runs)
    seconds = time.monotonic() - started
    kept_apart = f", {apart} more taken while the CPUs were apart and left out" if apart else ""
    if found is None:
        too_little = (f"one connection per pass: the calibration measured too little ({len(runs)} of "
                      f"{CALIBRATION_POINTS} runs{kept_apart}) in {seconds:.0f} s")
        return Choice(1, grid.duration_s, too_little), evidence
    choice = choose(found.a, found.b, found.cost_s, window_s=grid.duration_s, dof=found.dof)
    return replace(choice, why=f"{choice.why} (calibration: {plural(len(runs), 'run')} of {CALIBRATION_ROUNDS} rounds"
                              f"{kept_apart}, {seconds:.0f} s)"), evidence


def _cpus(sweep) -> tuple[tuple[int, int] | None, str]:
    placing = sweep.placing
    if placing is None:
        return None, "not probed: no placement in this session"
    return placing.cpus, placing.reason


def _distance(sweep, specs) -> CpuDistance:
    """The placement rule as the sweep has learned it, allowed to wait and measure again as long as
    the calibration's own runs take RETRIES times over (as a profiled run's group is): a run taken
    while the vCPUs were apart would give the per-connection spread of another host state."""
    from .estimate import point_seconds

    history = sweep.placing.history if sweep.placing is not None else []
    return CpuDistance(history, allowance_s=RETRIES * sum(point_seconds(s) for s in specs))


def _learned(sweep, distance: CpuDistance, evidence: list[dict]) -> None:
    """The calibration's probes join the sweep's history, and its placement seconds the accounts,
    counted as a point's are (each kept run's placement_s: probes, waits, runs set aside)."""
    if sweep.placing is not None:
        sweep.placing.history = distance.history
        if distance.off:  # its probe misbehaved: off for the sweep's points too
            sweep.placing.turn_off(distance.off)
    for run in evidence:
        sweep.accounting.setup_placement(run["placement_s"])


def settle(sweep) -> None:
    """A resumed sweep of rounds: auto takes the choice its folder's meta.json records, before
    anything is loaded, so its points are the points it measured."""
    from .folder import previous_meta

    earlier = previous_meta(sweep.out).get("rounds")
    if sweep.grid.rounds != "auto" or not isinstance(earlier, dict):
        return
    k, duration = earlier.get("rounds"), earlier.get("duration_s")
    # the rule holds a pass's cost, so the window it sets is never longer than the grid's
    if isinstance(k, int) and not isinstance(k, bool) and ROUNDS_RANGE[0] <= k <= ROUNDS_RANGE[1] and \
            isinstance(duration, (int, float)) and k * DURATION_RANGE[0] <= duration <= sweep.grid.duration_s + 1e-9:
        sweep.recorded_rounds = earlier
        _apply(sweep, k, float(duration))


def _apply(sweep, rounds: int, duration_s: float) -> None:
    """The grid with the rounds and the throughput window chosen; latency points keep their window
    (the grid's duration_s when it sets no latency_duration_s of its own)."""
    grid = sweep.grid
    sweep.grid = replace(grid, rounds=rounds, duration_s=duration_s,
                         latency_duration_s=grid.latency_duration_s or grid.duration_s)
    sweep.specs = {spec.point_id(): spec for spec in sweep.grid.points(sweep.topology)}


def resolve(sweep, queue: list[str]) -> list[str]:
    """The grid's rounds made a number for this sweep and recorded in meta.json; the queue with it.
    auto: a resumed sweep kept its folder's choice (settle); a folder holding points measured with
    no recorded choice keeps one round (its points stay the same points); else calibrate()."""
    grid = sweep.grid
    if grid.rounds != "auto":
        sweep.meta.update(rounds=sweep.recorded_rounds or {"rounds": grid.rounds, "duration_s": grid.duration_s,
                                                           "why": "set by the grid"})
        return queue
    if sweep.skipped:  # grid.rounds stays auto: its points take one round (Grid.rounds_of)
        sweep.meta.update(rounds=Choice(1, grid.duration_s, "one connection per pass: this folder holds points "
                                                            "measured before any choice was recorded").to_dict())
        return queue
    choice, evidence = calibrate(sweep)
    sweep.meta.update(rounds={**choice.to_dict(), "calibration": evidence})
    sweep.log(f"rounds: {choice.why}")
    _apply(sweep, choice.rounds, choice.duration_s)
    sweep.specs = {pid: s for pid, s in sweep.specs.items() if s.impl not in sweep.missing_peers}
    return [pid for pid in sweep.specs if pid not in sweep.rows or sweep.rows[pid].get("status") != "ok"
            or sweep.force]

"""Emulated hosts for the placement rule (lib/copylab/placement.py), and a sweep simulated through it
the way the sweep drives it (sweep/placing.py, experiment.measure_points, sweep/retake.py).

A host is a set of levels of the round trip between its two vCPUs (level 0 its near mode, the others
apart) and, per seed, the stretches of simulated time it spends at the apart levels; lone spikes (a
probe that waited out the hypervisor, 1-60 us) may come at any level. The simulated sweep calibrates
(40 probes over 2 s), then measures groups of runs through `placement.placed`, each group given the
allowance the sweep gives it and only the probes the rows carry (as the notebook's kernels get
them), and finally measures again the runs kept apart (the retake). Its clock is simulated: every
probe costs PROBE_MS, every run run_s.

Used by tests/test_placement.py and tools/placement_check.py (which prints the per-seed table).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from copylab import placement
from copylab.placement import CpuDistance, placed


class Clock:
    """Simulated time for placement.time: sleep advances it."""

    def __init__(self):
        self.now = 0.0

    def monotonic(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds


Sampler = Callable[[np.random.Generator], float]


def uniform(low: float, high: float) -> Sampler:
    return lambda rng: float(rng.uniform(low, high))


def clipped_lognormal(median: float, sigma: float, low: float, high: float) -> Sampler:
    return lambda rng: float(np.clip(rng.lognormal(math.log(median), sigma), low, high))


def normal(mean: float, sd: float, low: float) -> Sampler:
    return lambda rng: float(max(rng.normal(mean, sd), low))


@dataclass(frozen=True)
class Host:
    """levels[0] is the near mode (the only one of a host whose vCPUs never move); stretches(rng,
    horizon_s) -> [(start_s, end_s, level)] apart; spikes: the chance that a probe is a lone spike."""

    name: str
    levels: tuple[Sampler, ...]
    stretches: Callable[[np.random.Generator, float], list[tuple[float, float, int]]] = lambda rng, horizon: []
    spikes: float = 0.003
    note: str = ""


def _wide_stretches(rng, horizon):
    """Two or three stretches of 3-8 s, the first soon after the calibration: a few apart runs."""
    count = int(rng.integers(2, 4))
    starts = [float(rng.uniform(5, 40))] + sorted(float(s) for s in rng.uniform(60, horizon - 30, count - 1))
    return [(s, s + float(rng.uniform(3.0, 8.0)), 1) for s in starts]


def _first_before_second(rng, horizon):
    """A first stretch of 4-10 s a few seconds into the sweep, before the rule has seen a second
    mode, then 8 s stretches about a tenth of the time."""
    start = float(rng.uniform(2, 10))
    out = [(start, start + float(rng.uniform(4, 10)), 1)]
    t = out[0][1] + float(rng.uniform(40, 80))
    while t < horizon:
        out.append((t, t + 8.0, 1))
        t += 8.0 + float(rng.uniform(50, 100))
    return out


def _three_modes(rng, horizon):
    """Stretches at the middle level first, then the far one, then either: about 15% of the time."""
    out, t, k = [], float(rng.uniform(5, 30)), 0
    while t < horizon:
        level = 1 if k == 0 else 2 if k == 1 else int(rng.integers(1, 3))
        length = float(rng.uniform(3, 6))
        out.append((t, t + length, level))
        t += length + float(rng.uniform(20, 40))
        k += 1
    return out


HOSTS = {host.name: host for host in [
    Host("wide", (clipped_lognormal(92, 0.17, 64, 130), uniform(485, 550)), _wide_stretches,
         note="near 64-130 ns, apart 485-550 ns in 2-3 stretches of 3-8 s, the first before any second mode"),
    Host("metal", (normal(41, 1.0, 37),), note="bare metal: one tight mode (41 ns), lone spikes"),
    Host("always far", (normal(505, 18, 440),), note="vCPUs that never share a cache: one mode at ~505 ns"),
    Host("first apart before a second mode", (uniform(49, 62), uniform(300, 370)), _first_before_second,
         note="the development VM's levels; a 4-10 s stretch apart 2-10 s into the sweep, then a tenth"),
    Host("three modes", (uniform(48, 60), uniform(160, 200), uniform(450, 560)), _three_modes,
         note="near 48-60 ns, apart at 160-200 ns and at 450-560 ns in stretches, ~15% of the time"),
]}
HELD_OUT_LIKE = tuple(HOSTS)  # every host above: the ones the check of issue 48 names and two harder


class EmulatedDistance(CpuDistance):
    """A CpuDistance whose probes come from an emulated host at the simulated clock's time; each
    probe costs PROBE_MS of it."""

    def __init__(self, host: Host, apart: list, clock: Clock, rng, history=(), allowance_s=math.inf,
                 futile_waits: int = 0):
        super().__init__(history, allowance_s, futile_waits)
        self.host, self.apart_stretches, self.clock, self.rng = host, apart, clock, rng

    def level_at(self, t: float) -> int:
        return next((level for start, end, level in self.apart_stretches if start <= t < end), 0)

    def probe(self, cpus):
        self.clock.sleep(placement.PROBE_MS / 1000)
        if self.rng.random() < self.host.spikes:
            value = float(self.rng.uniform(1000, 60000))
        else:
            value = self.host.levels[self.level_at(self.clock.now)](self.rng)
        self.observe(value)
        return value


@dataclass
class Outcome:
    """One simulated sweep: every run measured (set aside, kept, measured again by the retake) with
    whether the host was apart at any moment of it and whether the rule judged it apart."""

    host: str
    seed: int
    wall_s: float = 0.0
    placement_s: float = 0.0
    runs: list[tuple[bool, bool, bool]] = field(default_factory=list)  # (truly apart, judged apart, kept)
    modes: placement.Modes | None = None  # what the rule learned by the end
    calibration: placement.Modes | None = None  # what it knew after the calibration

    @property
    def apart_runs(self) -> int:
        return sum(truth for truth, _, _ in self.runs)

    @property
    def caught(self) -> int:
        return sum(truth and judged for truth, judged, _ in self.runs)

    @property
    def near_judged_apart(self) -> int:
        """Runs taken near that the rule set aside, or kept flagged (which the retake sets aside)."""
        return sum(judged and not truth for truth, judged, _ in self.runs)

    @property
    def kept_apart(self) -> int:
        """Runs apart left in the statistics at the end (after the retake)."""
        return sum(truth and kept for truth, _, kept in self.runs)

    @property
    def placement_share(self) -> float:
        return self.placement_s / self.wall_s if self.wall_s else 0.0


def simulate(host: Host, seed: int, runs: int = 300, run_s: float = 1.2, group: int = 20) -> Outcome:
    """A sweep of `runs` runs of run_s on host (its stretches drawn from seed); placement.time is
    the simulated clock while it runs."""
    rng = np.random.default_rng(seed)
    clock = Clock()
    stretches = host.stretches(rng, runs * run_s * 1.5)
    outcome = Outcome(host.name, seed)
    saved, placement.time = placement.time, clock
    try:
        def distance(history, allowance=math.inf, futile=0):
            return EmulatedDistance(host, stretches, clock, rng, history, allowance, futile)

        calibration = distance([])
        calibration.calibrate((0, 1))
        history = list(calibration.history)
        outcome.calibration = placement.learn(history)
        outcome.placement_s = clock.now  # the calibration is placement's time too
        kept: dict[int, dict] = {}
        last_apart = False
        for first in range(0, runs, group):
            allowance = max(placement.SHARE_OF_SWEEP * (clock.now + group * run_s) - outcome.placement_s, 0.0)
            judge = distance(history, allowance, placement.FUTILE_WAITS if last_apart else 0)
            for k in range(first, min(first + group, runs)):
                columns = _placed_run(judge, clock, stretches, run_s, outcome, history)
                outcome.placement_s += columns["placement_s"]
                kept[k] = columns
                last_apart = columns["cpus_apart"] == "True"
            history = history[-placement.HISTORY:]
        _retake(distance(history), clock, stretches, run_s, outcome, kept)
        outcome.wall_s = clock.now
        outcome.modes = placement.learn(history)
    finally:
        placement.time = saved
    return outcome


def _placed_run(distance: EmulatedDistance, clock: Clock, stretches, run_s: float, outcome: Outcome,
                history: list) -> dict:
    """One point through placed(): each attempt recorded in outcome.runs, its probes in history (the
    rows'); the kept attempt's columns."""
    truths = []

    def run():
        start = clock.now
        clock.sleep(run_s)
        truths.append(any(s < clock.now and start < e for s, e, _ in stretches))
        return {"status": "ok"}, {}
    attempts = placed(distance, (0, 1), "", run)
    for n, ((_, columns), truth) in enumerate(zip(attempts, truths)):
        outcome.runs.append((truth, columns["cpus_apart"] == "True", n == len(attempts) - 1))
        history += [columns["cpu_round_trip_before_ns"], columns["cpu_round_trip_after_ns"]]
    return attempts[-1][1]


def _retake(distance: EmulatedDistance, clock: Clock, stretches, run_s: float, outcome: Outcome,
            kept: dict[int, dict]) -> None:
    """sweep/retake.py: the runs kept apart measured again, unless a probe finds the CPUs apart now;
    every second of it is placement's."""
    flagged = [k for k, columns in kept.items() if columns["cpus_apart"] == "True"]
    if not flagged:
        return
    started = clock.now
    if distance.apart(distance.look((0, 1))):
        outcome.placement_s += clock.now - started
        return
    positions = _kept_positions(outcome)
    for k in flagged:
        position = positions[k]
        truth, judged, _ = outcome.runs[position]
        outcome.runs[position] = (truth, judged, False)  # set aside once its new run lands
        _placed_run(distance, clock, stretches, run_s, outcome, [])
    outcome.placement_s += clock.now - started


def _kept_positions(outcome: Outcome) -> list[int]:
    """Where each point's kept run sits in outcome.runs, in point order."""
    return [i for i, (_, _, kept) in enumerate(outcome.runs) if kept]

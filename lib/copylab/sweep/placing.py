"""The sweep's side of the vCPUs' placement (placement.py): a calibration before the first point,
the round trips every group learns from, the allowance each group may spend, and what was learned
in meta.json.

The allowance keeps placement within SHARE_OF_SWEEP of the sweep's time whatever the host does:
before each group it is that share of the time so far plus the group's own, minus what placement
has already cost (the rows' placement_s, and the rounds calibration's). Once the sweep cannot finish
its base passes within its budget, the allowance is nothing: base passes come before re-measurements.

Measuring again is worth its time only where runs taken apart measure differently. Every run set
aside has a run kept in its place moments later, so the host answers that itself: once
EFFECT_PAIRS such pairs are in (throughput, or the inverse of the p50 round trip), if the 95% interval of their ratio lies
within the grid's equivalence margin, runs are no longer measured again (still probed and flagged) and the sweep says why.
Only runs apart at both their probes can show that: a run that went apart while it ran (most runs
set aside, since none is started apart while waiting may go on) was apart for part of it only.
"""

from __future__ import annotations

import math
import time

import numpy as np

from .. import placement as rule
from ..errors import CopylabError
from ..inference import DEFAULT_MARGIN, mean_interval
from .records import read_row


EFFECT_PAIRS = 12  # set-aside/kept pairs before the sweep judges whether apart runs differ here


def apart_effect(pairs: list[tuple[float, float, bool]], margin: float = DEFAULT_MARGIN) -> dict:
    """(set-aside, kept, whole) speeds of the same points (throughput, or 1 / p50 round trip; whole:
    the run set aside was apart at both its probes) -> the geometric mean ratio, its 95% interval and
    whether runs taken apart measure differently on this host: False when the interval of the whole
    pairs alone lies within the equivalence margin [1/(1+m), 1+m] (any difference is smaller than
    the study decides on; no difference is decided, never assumed from a wide interval), True when
    the interval excludes 1, None otherwise or before EFFECT_PAIRS pairs of the kind that decides.
    A run that went apart while it ran was apart for part of it only, which pulls its ratio towards
    1: such pairs can show a difference, never its absence."""
    out = {"pairs": 0, "whole_pairs": 0, "ratio": None, "low": None, "high": None, "differs": None, "margin": margin}
    every, ci = _log_ratio_interval(pairs)
    whole, whole_ci = _log_ratio_interval([p for p in pairs if p[2]])
    out.update(pairs=int(every.size), whole_pairs=int(whole.size))
    if ci is None:
        return out
    out.update(ratio=round(math.exp(every.mean()), 3), low=round(math.exp(ci[0]), 3), high=round(math.exp(ci[1]), 3))
    if whole.size >= EFFECT_PAIRS and -math.log1p(margin) <= whole_ci[0] and whole_ci[1] <= math.log1p(margin):
        out["differs"] = False  # any difference is smaller than the margin: not worth a re-measurement
    elif every.size >= EFFECT_PAIRS and not ci[0] <= 0.0 <= ci[1]:
        out["differs"] = True
    return out


def _log_ratio_interval(pairs) -> tuple[np.ndarray, tuple | None]:
    """The pairs' log ratios and their mean's 95% interval (low, high; None for fewer than two)."""
    logs = np.log([a / k for a, k, _ in pairs if a > 0 and k > 0])
    found = mean_interval(logs)
    return logs, None if found is None else found[1:]


def earlier_retakes(previous_meta: dict) -> dict[str, set[str]]:
    """The points the retakes of the sweep's earlier sessions found kept apart, and those they
    measured again (meta.json placement.retaken's lists); empty for a new sweep."""
    placed = previous_meta.get("placement")
    recorded = placed.get("retaken") if isinstance(placed, dict) else None
    points: dict[str, set[str]] = {"kept_apart": set(), "measured_again": set()}
    for key in points:
        ids = recorded.get(f"{key}_points") if isinstance(recorded, dict) else None
        if isinstance(ids, list):
            points[key] = {pid for pid in ids if isinstance(pid, str)}
    return points


def retake_counts(points: dict[str, set[str]]) -> dict | None:
    """meta.json placement.retaken: how many runs were kept apart when a retake began and how many
    of them were measured again, over the whole sweep, with their point ids (a resume carries
    them on); None before any retake."""
    if not points["kept_apart"]:
        return None
    return {"kept_apart": len(points["kept_apart"]), "measured_again": len(points["measured_again"]),
            **{f"{key}_points": sorted(ids) for key, ids in points.items()}}


class SweepPlacement:
    def __init__(self, sweep):
        self.sweep = sweep
        self.cpus, self.reason = rule.probe_cpus(sweep.grid.pin_server, sweep.grid.pin_client, sweep.topology,
                                                 sweep.grid.placement)
        self.history: list[float] = []
        self.calibration: dict | None = None
        self.starved = False  # the budget had no room for placement (said once)
        self.pairs: list[tuple[float, float, bool]] = []  # (set-aside, kept, whole) speeds of one point
        self.effect = apart_effect([])  # do runs taken apart measure differently here?
        self.retaking: dict[str, dict] = {}  # point id -> the kept row and its pending copy (retake.py)
        self.aside_seen: set[str] = set()  # runs/apart/ records already learned from (each once)
        # the runs a retake found kept apart, and those it measured again: the earlier sessions' too (a resume)
        self.retake_points = earlier_retakes(sweep.meta.previous)
        self.off = ""  # why placement is off for the rest of the sweep: its probe misbehaved (placement.py)

    @property
    def active(self) -> bool:
        return self.cpus is not None

    def turn_off(self, why: str) -> None:
        """A probe answered something that is not a round trip, or nothing in time (why; "": nothing
        happened): no point of this sweep is probed from here (each row's note says why), said once."""
        if why and not self.off:
            self.off, self.cpus, self.reason = why, None, f"not probed: {why}"
            self.sweep.log(f"WARNING: placement: {why}")
            self.record()

    def calibrate(self) -> None:
        """Probes over a couple of seconds before the first point, after the earlier sessions' probes
        (a resumed sweep learns from everything its folder holds)."""
        aside = self._apart_rows()
        self.history = rule.round_trips(self.sweep.rows.values()) + rule.round_trips(row for _, row in aside)
        self.pairs = self._pairs(aside)
        self.effect = apart_effect(self.pairs, self.sweep.grid.equivalence_margin)
        if not self.active:
            return
        started = time.monotonic()
        try:
            with rule.CpuDistance(self.history) as distance:
                modes = distance.calibrate(self.cpus)
                self.history = distance.history
        except rule.ProbeMisbehaved as exc:
            self.turn_off(str(exc))
            return
        except CopylabError as exc:  # the points will say why they were not probed
            self.sweep.say(f"WARNING: placement: {exc}")
            return
        self.calibration = {"probes": rule.CALIBRATION_PROBES, "seconds": round(time.monotonic() - started, 2),
                            "cpus": list(self.cpus)}
        self.sweep.say(f"placement: {modes.why}")
        self.record()

    def group_params(self, group_s: float, elapsed_s: float, behind: bool, profiled: bool = False) -> dict:
        """The notebook's placement parameters for the next group: the round trips to learn from and
        the seconds placement may spend in it."""
        spent = self.sweep.accounting.placement_all
        allowance = max(rule.SHARE_OF_SWEEP * (elapsed_s + group_s) - spent, 0.0)
        if self.effect["differs"] is False:
            allowance = 0.0
        if profiled:  # the few runs the report's explanations stand on are taken again when apart
            allowance = max(allowance, rule.RETRIES * group_s)
        if behind:
            allowance = 0.0
            if not self.starved:
                self.starved = True
                self.sweep.log("placement: no more waits or re-measurements: the points still to measure need "
                               "the rest of the budget")
        return {"history": self.history[-rule.HISTORY:], "allowance_s": round(allowance, 2),
                "futile_waits": self._stretch_goes_on(), "off": self.off}

    def _stretch_goes_on(self) -> int:
        """rule.FUTILE_WAITS when the last run measured was kept while the CPUs were apart: the next
        group starts as if inside a stretch longer than waiting (no wait, no run measured again), which
        its first probe ends at no cost if the CPUs have come together since; else 0."""
        last = self.sweep.last_row  # this session's; a resumed one starts out of any stretch
        return rule.FUTILE_WAITS if last is not None and str(last.get("cpus_apart")) == "True" else 0

    def learned(self, point_ids) -> None:
        """After a group: its probes (kept runs and runs set aside) join the history, and its set-aside
        runs beside the runs kept in their place tell whether re-measuring is worth it here."""
        rows = [self.sweep.rows[p] for p in point_ids if p in self.sweep.rows]
        self.turn_off(probe_gone_off(rows))  # a probe that misbehaved inside the group
        aside = self._apart_rows(point_ids)
        self.history += rule.round_trips(rows) + rule.round_trips(row for _, row in aside)
        del self.history[:-rule.HISTORY]
        self.pairs += self._pairs(aside)
        decided = self.effect["differs"]
        self.effect = apart_effect(self.pairs, self.sweep.grid.equivalence_margin)
        if decided is None and self.effect["differs"] is False:
            self.sweep.log(f"placement: runs taken apart measured {self.effect['ratio']}x the runs kept in their place "
                           f"({self.effect['low']}-{self.effect['high']}, {self.effect['pairs']} pairs): equivalent within "
                           f"{self.effect['margin']:g}, so no run is measured again from here (still probed and flagged)")
        self.record()

    def record(self) -> None:
        modes = rule.learn(self.history)
        self.sweep.meta.update(placement={
            **modes.to_dict(), "cpus": list(self.cpus) if self.cpus else None, "note": self.reason,
            "calibration": self.calibration, "mode_ratio": rule.MODE_RATIO, "apart_effect": self.effect,
            "retaken": retake_counts(self.retake_points), "futile_waits": rule.FUTILE_WAITS,
            "share_of_sweep": rule.SHARE_OF_SWEEP, "retries": rule.RETRIES, "wait_s": rule.WAIT_S})

    def _pairs(self, aside: list[tuple[str, dict]]) -> list[tuple[float, float, bool]]:
        """(set-aside, kept, whole) speeds: each run set aside beside the run kept in its place, and
        whether it was apart at both its probes (apart_effect)."""
        pairs = []
        for pid, row in aside:
            first, kept = _speed(row), _speed(self.sweep.rows.get(pid, {}))
            if first is not None and kept is not None:
                pairs.append((first, kept, _apart_throughout(row)))
        return pairs

    def apart_now(self) -> str:
        """Why runs kept apart should not be measured again this moment ("" when they may): one probe
        finds the CPUs apart, or cannot probe."""
        try:
            with rule.CpuDistance(self.history) as distance:
                value = distance.look(self.cpus)  # apart when the next probe agrees (a lone spike is not)
                self.history = distance.history
        except CopylabError as exc:
            self.turn_off(str(exc) if isinstance(exc, rule.ProbeMisbehaved) else "")
            return f"the CPUs could not be probed: {exc}"
        return f"the CPUs are apart now ({value:.0f} ns): they would be taken apart again" \
            if distance.apart(value) else ""

    def _apart_rows(self, point_ids=None) -> list[tuple[str, dict]]:
        """(point id, row) of every run set aside (runs/apart/<point_id>.<n>.json) not learned from
        before, of point_ids or all: a point measured again has older ones, already counted."""
        folder = self.sweep.runs / "apart"
        if not folder.is_dir():
            return []
        wanted = None if point_ids is None else set(point_ids)
        rows = []
        for path in sorted(folder.glob("*.json")):
            pid = path.name.rsplit(".", 2)[0]
            if (wanted is not None and pid not in wanted) or path.name in self.aside_seen:
                continue
            self.aside_seen.add(path.name)
            row = read_row(path)
            if row is not None:
                rows.append((pid, row))
        return rows


def probe_gone_off(rows) -> str:
    """Why a probe turned placement off inside a group, as its rows' notes say ("" when none did)."""
    notes = (str(row.get("placement_note") or "") for row in rows)
    return next((note.split(": ", 1)[-1] for note in notes if rule.OFF_FOR_RUN in note), "")


def _speed(row: dict) -> float | None:
    """A run's speed, higher is better: its throughput, or the inverse of its median round trip."""
    if row.get("status") != "ok":
        return None
    value = row.get("throughput_gbps" if row.get("mode") == "throughput" else "latency_p50_us")
    if not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        return None
    return value if row.get("mode") == "throughput" else 1.0 / value


def _apart_throughout(row: dict) -> bool:
    """Was the run apart at both its probes, before and after (against the line in force)?"""
    line = row.get("cpu_apart_line_ns")
    probes = [row.get("cpu_round_trip_before_ns"), row.get("cpu_round_trip_after_ns")]
    return isinstance(line, (int, float)) and math.isfinite(line) and \
        all(isinstance(v, (int, float)) and math.isfinite(v) and v > line for v in probes)

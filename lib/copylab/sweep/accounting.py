"""Where a sweep's time goes: the seconds it measured (warm-ups and windows as the rows report
them) against the wall time it took, per kind of point, so the overhead of each kind is known.

A point's wall time runs from the end of the previous point to the end of this one: its start-up,
its run, its stop and record, and the notebook's cost when it opened a group. Setting up (build,
perf probe, the calibrations) is counted apart, with its share of placement (placement_before_s).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

from .. import registry


def kind_of(spec) -> str:
    """study (copylab's senders), peer:<tool>, or profile (the extra runs under perf record)."""
    if spec.profile:
        return "profile"
    return "study" if registry.get(spec.impl).native else f"peer:{spec.impl}"


def measured_seconds(spec, row: dict) -> float:
    """Warm-up and window as the row says they were (a steady-state warm-up, a peer's whole-second
    run), else as the spec asked."""
    warmup, duration = row.get("warmup_s"), row.get("duration_s")
    if not (isinstance(warmup, (int, float)) and math.isfinite(warmup)):
        warmup = spec.warmup_s
    if not (isinstance(duration, (int, float)) and math.isfinite(duration)):
        duration = spec.duration_s
    return float(warmup) + float(duration)


@dataclass
class Accounting:
    setup_s: float = 0.0
    placement_before_s: float = 0.0  # the set-up's placement: the rounds calibration's waits, runs set aside
    by_kind: dict = field(default_factory=dict)  # kind -> [points, measured seconds, wall seconds, placement seconds]
    _last: float | None = None

    def start(self, setup_s: float) -> None:
        self.setup_s = setup_s
        self._last = time.monotonic()

    def point(self, spec, row: dict, retake: bool = False) -> None:
        """retake: a run kept while the CPUs were apart, measured again after its pass
        (sweep/placing.py): its whole wall time is placement's, none of it measured."""
        now = time.monotonic()
        wall = now - (self._last if self._last is not None else now)
        self._last = now
        entry = self.by_kind.setdefault(kind_of(spec), [0, 0.0, 0.0, 0.0])
        entry[0] += 1
        entry[2] += wall
        if retake:
            entry[3] += wall
            return
        entry[1] += measured_seconds(spec, row)
        entry[3] += _seconds(row.get("placement_s"))

    def setup_placement(self, placement_s) -> None:
        """A run of the set-up (the rounds calibration) placed as the points are: its placement_s."""
        self.placement_before_s += _seconds(placement_s)

    @property
    def measured(self) -> float:
        return sum(e[1] for e in self.by_kind.values())

    @property
    def wall(self) -> float:
        return sum(e[2] for e in self.by_kind.values())

    @property
    def placement(self) -> float:
        """The points' placement seconds (the pace of the points measured leaves them out)."""
        return sum(e[3] for e in self.by_kind.values())

    @property
    def placement_all(self) -> float:
        """And the set-up's: what the host's vCPUs cost the whole sweep."""
        return self.placement_before_s + self.placement

    def summary(self) -> dict:
        """{kind: {points, measured_s, wall_s, overhead, placement_s, overhead_without_placement}}, the
        setup time and its placement seconds (setup_placement_s). placement_s: waiting for the host's
        vCPUs to come together and measuring again the runs taken while they were apart (placement.py),
        the host's cost, not the harness's."""
        out = {kind: {"points": n, "measured_s": round(m, 2), "wall_s": round(w, 2),
                      "overhead": round(w / m, 3) if m else None, "placement_s": round(p, 2),
                      "overhead_without_placement": round((w - p) / m, 3) if m else None}
               for kind, (n, m, w, p) in sorted(self.by_kind.items())}
        return {"setup_s": round(self.setup_s, 2), "setup_placement_s": round(self.placement_before_s, 2),
                "by_kind": out}

    def lines(self) -> list[str]:
        return [f"overhead {kind}: {e['points']} points, {e['wall_s']:.0f} s for {e['measured_s']:.0f} s measured "
                f"({e['overhead']}x; {e['overhead_without_placement']}x without the {e['placement_s']:.0f} s spent "
                "on the CPUs' placement)" for kind, e in self.summary()["by_kind"].items()] + \
            [f"setup (build, perf probe, calibrations): {self.setup_s:.0f} s, of which {self.placement_before_s:.0f} s "
             "on the CPUs' placement"]


def _seconds(value) -> float:
    """A row's placement seconds, 0 where none were recorded (an unprobed run: NaN)."""
    return float(value) if isinstance(value, (int, float)) and math.isfinite(value) else 0.0

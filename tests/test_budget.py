"""The time budget bounds the whole sweep: its estimate against the budget before it starts, the
pace this host shows, and the earlier sessions of a resumed sweep counted in."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from copylab.params import load_grid
from copylab.sweep import estimate as est
from copylab.sweep.driver import earlier_wall


def test_the_estimate_names_the_base_passes_against_the_budget():
    grid = load_grid("params/default.yaml")
    found = est.estimate(grid)
    assert found.budget_s == grid.budget_min * 60 and 0 < found.base_s <= found.budget_s
    assert f"for the base passes, extra passes for the undecided up to the budget of {grid.budget_min:g} min" \
        in found.describe()
    tight = est.estimate(replace(grid, budget_min=2.0))
    assert tight.base_s > tight.budget_s and "MORE than the budget of 2 min" in tight.describe()
    assert "no extra pass will run" in tight.describe()
    assert est.estimate(replace(grid, budget_min=None)).budget_s is None


def test_a_resumed_sweep_counts_its_earlier_sessions_against_the_budget(tmp_path):
    assert earlier_wall(tmp_path) == 0.0
    (tmp_path / "meta.json").write_text(json.dumps({"sessions": [{"wall_s": 100.5}, {"wall_s": 20}, {"wall_s": "x"},
                                                                 {}, "junk"]}))
    assert earlier_wall(tmp_path) == 120.5


def test_a_point_is_expected_to_take_its_window_or_its_peers_own_run():
    from copylab.pointspec import PointSpec

    native = PointSpec(impl="a1", mode="throughput", msg_size=1024, threads=1, duration_s=1.0, warmup_s=0.1,
                       steady_max_s=0.4)
    assert est.point_seconds(native) == 1.5 + est.PER_POINT_OVERHEAD_S
    assert est.point_seconds(replace(native, profile=True)) == 1.5 + est.PER_POINT_OVERHEAD_S + est.PROFILE_S
    from copylab.runners import runner_for

    sockperf = PointSpec(impl="sockperf", mode="latency", msg_size=64, threads=1, duration_s=0.25, warmup_s=0.1)
    own = runner_for("sockperf").expected_seconds(sockperf)
    assert own >= 1.0 > 0.35 and est.point_seconds(sockperf) == own + est.PER_POINT_OVERHEAD_S, \
        "a peer runs whole seconds, not the grid's window"


def test_the_pace_is_this_hosts_own_below_the_arithmetic_too():
    """The pace is the wall time (placement left out) over the grid's arithmetic for the points done:
    1 before any, and below 1 where the host settles before the steady-state warm-up's bound (it was
    held at 1, so extra passes were planned a third too dear on 2026-11-26)."""
    from types import SimpleNamespace

    from copylab.pointspec import PointSpec
    from copylab.sweep.budget import pass_seconds
    from copylab.sweep.clock import SweepClock

    clock = SweepClock(8.5)
    spec = PointSpec(impl="a1", mode="throughput", msg_size=1024, threads=1, steady_max_s=0.4, rounds=2)
    assert clock.pace(SimpleNamespace(wall=5.0, placement=0.0)) == 1.0, "no point measured yet"
    for _ in range(10):
        clock.point(spec)
    arithmetic = 10 * pass_seconds([spec])
    assert clock.pace(SimpleNamespace(wall=0.76 * arithmetic + 20.0, placement=20.0)) == pytest.approx(0.76)
    assert clock.pace(SimpleNamespace(wall=1.3 * arithmetic, placement=0.0)) == pytest.approx(1.3)
    assert clock.need([spec], SimpleNamespace(wall=0.76 * arithmetic, placement=0.0)) == \
        pytest.approx(0.76 * pass_seconds([spec]))


def test_the_runs_kept_apart_in_an_extra_pass_are_measured_again_before_the_next(monkeypatch):
    """15:55, 2026-11-26: a stretch apart that outlasted waiting in the first extra pass kept 8 runs apart (at
    0.86x), and the retake ran only after the base passes: they stayed in the statistics. Each extra pass
    is now followed by the retake, as the base passes are."""
    from types import SimpleNamespace

    from copylab.pointspec import PointSpec
    from copylab.sweep import budget

    grid = replace(load_grid("params/default.yaml"), repetitions=3)
    events = []
    spec = PointSpec(impl="a1", mode="throughput", msg_size=64, threads=1, rep=3).validate()
    later = replace(spec, rep=4)
    passes = [budget.PlannedPass(3, [spec], [], 1.0), budget.PlannedPass(4, [later], [], 1.0)]

    def plan_pass(*args, **kwargs):
        events.append("plan")
        return passes.pop(0) if passes else None
    monkeypatch.setattr(budget, "plan_pass", plan_pass)
    monkeypatch.setattr(budget, "wide_comparisons", lambda rows, grid: [])
    monkeypatch.setattr(budget.retaking, "retake", lambda sweep, after: events.append(("retake", after)))
    sweep = SimpleNamespace(
        grid=grid, specs={}, rows={}, topology="netns", bar=SimpleNamespace(total=0), log=lambda text: None,
        meta=SimpleNamespace(update=lambda **kw: None), accounting=None,
        measure=lambda pids: events.append(("measure", tuple(pids))),
        clock=SimpleNamespace(pace=lambda accounting: 1.0, left=lambda: 60.0, reserve_s=0.0))
    budget.spend(sweep)
    assert events == ["plan", ("measure", (spec.point_id(),)), ("retake", "pass 3"),
                      "plan", ("measure", (later.point_id(),)), ("retake", "pass 4"), "plan"]


def test_a_budget_the_extra_passes_cannot_use_is_said_not_ignored(tmp_path, monkeypatch):
    """budget_min with fewer than 3 repetitions added no pass without a word: the sweep's first lines
    say what it does and does not do (it still bounds placement)."""
    from types import SimpleNamespace

    from copylab.params import parse_grid
    from copylab.sweep import driver

    data = {"name": "g", "impls": ["a1"], "modes": ["throughput"], "msg_sizes": [1024], "threads": [1],
            "duration_s": 0.2, "warmup_s": 0.1, "topology": "loopback", "budget_min": 5, "repetitions": 2}
    line = est.unused_budget(parse_grid(data))
    assert line.startswith("budget_min 5: no extra pass will run, since extra passes need at least 3 repetitions")
    assert "(this grid has 2)" in line and "placement" in line
    assert est.unused_budget(parse_grid({**data, "repetitions": 3})) == ""
    assert est.unused_budget(parse_grid({k: v for k, v in data.items() if k != "budget_min"})) == ""
    said = []
    monkeypatch.setattr(driver, "Sweep", lambda *args: SimpleNamespace(run=lambda: "measured", mixed_builds=False))
    assert driver.run_sweep("g.yaml", tmp_path / "out", grid=parse_grid(data), say=said.append) == "measured"
    assert f"WARNING: {line}" in said

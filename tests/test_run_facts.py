"""The report's "How this run went": wall time against the budget with the overhead split into the
harness's and the host's, passes, placement, steal and precision, from the run's own files (synthetic
ones here, so each statement can be made to flip)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from copylab.analysis.render import render
from copylab.analysis.run_facts import CV_TARGET, STEAL_FLAG, precision, run_facts


def how_this_run_went(facts: dict) -> str:
    return render("run", r=facts)


def _rows(steal=0.0, apart=("False",) * 6, gbps=(10.0, 10.5, 9.5, 5.0, 5.2, 4.8)) -> pd.DataFrame:
    return pd.DataFrame({
        "impl": ["a1"] * 3 + ["a2"] * 3, "mode": ["throughput"] * 6, "msg_size": [1024] * 6, "threads": [1] * 6,
        "rep": [0, 1, 2] * 2, "status": ["ok"] * 6, "throughput_gbps": list(gbps),
        "srv_cpu_steal": [steal, 0.0, 0.0, 0.0, 0.0, 0.0], "cli_cpu_steal": [0.0] * 6,
        "cpus_apart": list(apart), "placement_retries": [1, 0, 0, 0, 2, 0]})


META = {"params": {"repetitions": 3, "budget_min": 7.5},
        "sessions": [{"wall_s": 480.0, "pace": 1.08, "overhead": 1.32, "overhead_without_placement": 1.11,
                      "time": {"by_kind": {"study": {"placement_s": 30.0}, "profile": {"placement_s": 2.0}}},
                      "host_load": {"other_cpu_share": 0.004, "quiet_below": 0.05}}],
        "budget": {"budget_min": 7.5, "passes": [{"pass": 3, "points": 8}], "stopped": "stopped: every comparison is narrow enough to decide"},
        "placement": {"why": "two modes: near 62-125 ns (300 probes), apart 430-570 ns (100)", "line_ns": 232.0,
                      "apart_effect": {"pairs": 14, "ratio": 0.99, "low": 0.95, "high": 1.03, "differs": False}}}


def test_the_section_states_time_overhead_passes_placement_steal_and_precision():
    text = how_this_run_went(run_facts(_rows(), META))
    assert "8.0 min of sweeping against a budget of 7.5 min" in text
    assert "×1.32 the seconds measured: ×1.11 the harness's" in text and "the rest the host's" in text
    assert "3 base passes and 1 extra pass (8 points)" in text
    assert "3 runs taken while the two vCPUs were apart were set aside and measured again (32 s, 6.7% of the wall" in text
    assert "measured ×0.990 (0.950–1.03) the runs kept in their place" in text
    assert "in 0 of 6 runs" in text and "Precision" in text


def test_each_statement_follows_its_numbers():
    stolen = how_this_run_went(run_facts(_rows(steal=STEAL_FLAG + 0.2, gbps=(6.0, 10.5, 9.5, 5.0, 5.2, 4.8)), META))
    assert "in 1 of 6 runs" in stolen
    apart = how_this_run_went(run_facts(_rows(apart=("True",) + ("False",) * 5, gbps=(8.0, 10.0, 10.0, 5, 5, 5)), META))
    assert "1 run kept while apart (flagged `cpus_apart`)" in apart
    quiet = how_this_run_went(run_facts(_rows().assign(placement_retries=0), {**META, "placement": {}}))
    assert "Where the vCPUs were" not in quiet
    # the rounds calibration's runs are placed too: their runs set aside and their seconds are placement's
    calibrated = {**META, "rounds": {"calibration": [{"set_aside": 1}, {"set_aside": 0}]},
                  "sessions": [{**META["sessions"][0], "time": {**META["sessions"][0]["time"], "setup_placement_s": 4.0}}]}
    facts = run_facts(_rows(), calibrated)
    assert facts["calibration_set_aside"] == 1 and facts["placement_s"] == 36
    profiled = pd.DataFrame({"impl": ["a2"], "msg_size": [64], "threads": [1], "cpus_apart": ["True"]})
    assert run_facts(_rows(), META, profiled.assign(placement_retries=[2]))["runs_set_aside"] == 5


def test_precision_is_the_median_cv_of_the_study_points():
    found = precision(_rows())
    assert found["points"] == 2 and math.isclose(found["median_cv"], (0.05 + 0.04) / 2, rel_tol=0.01)
    assert found["within_target"] == 2 and CV_TARGET == 0.08
    assert precision(_rows().iloc[[0, 3]])["median_cv"] is None, "one pass has no spread"


def test_a_hostile_or_empty_meta_gives_a_section_not_a_traceback():
    hostile = {"sessions": "x", "budget": [], "params": None, "placement": {"why": 3, "apart_effect": "no"}}
    text = how_this_run_went(run_facts(_rows(), hostile))
    assert "Steal" in text and "Time" not in text
    assert "Time" not in how_this_run_went(run_facts(pd.DataFrame(columns=["impl", "mode", "status", "msg_size",
                                                                           "threads"]), {}))


def _passes(rounds: int, per_connection: float, rng) -> list[dict]:
    """40 passes of two points, each pass the mean of `rounds` connections whose levels spread by
    per_connection (log sd), within the window 2% at 1 s."""
    rows = []
    for rep in range(40):
        for impl, level in (("a1", 10.0), ("a2", 8.0)):
            # each round: its connection's level and its window's own 2% (over 1/rounds of a second)
            gbps = level * float(np.mean(np.exp(rng.normal(0, per_connection, rounds)
                                                + rng.normal(0, 0.02 * math.sqrt(rounds), rounds))))
            rows.append({"impl": impl, "mode": "throughput", "msg_size": 1024, "threads": 1, "rep": rep, "status": "ok",
                         "throughput_gbps": gbps, "interval_cv": 0.02 * math.sqrt(20), "interval_s": 0.05,
                         "duration_s": 1.0, "warmup_s": 0.1 * rounds, "rounds": rounds})
    return rows


def test_the_spread_between_connections_is_read_through_the_rounds_that_averaged_it():
    """Per connection 10%, within the window 2% at 1 s: a pass of 3 rounds shows about 10%/sqrt(3)
    between passes, and the section gives the per-connection 10%, the rounds taken and whether this
    run's own spread calls for the same (with the calibration's round cost)."""
    from copylab.analysis.run_facts import window_choice

    rng = np.random.default_rng(1)
    meta = {"params": {"duration_s": 1.0},
            "rounds": {"rounds": 3, "duration_s": 1.0, "why": "3 rounds of 0.33 s per pass", "round_cost_s": 0.25}}
    for rounds in (1, 3):
        found = window_choice(pd.DataFrame(_passes(rounds, 0.10, rng)), meta)
        assert 0.06 < found["per_connection_cv"] < 0.14, (rounds, found["per_connection_cv"])
        assert math.isclose(found["within_cv"], 0.02, rel_tol=0.01) and found["rounds"] == rounds
        assert found["best_rounds"] >= 2, "connections 10% apart: a split pays"
    text = how_this_run_went(run_facts(pd.DataFrame(_passes(3, 0.10, rng)), meta))
    assert "split its window over 3 fresh sets of connections (3 rounds of 0\\.33 s per pass)" in text
    calm = _passes(3, 0.0, rng)  # split, on a host whose connections settled alike
    found = window_choice(pd.DataFrame(calm), meta)
    assert found["best_rounds"] == 1, "connections alike: one long window"
    assert window_choice(pd.DataFrame(calm), {})["best_rounds"] is None, "no calibration: no round cost to weigh"
    assert window_choice(pd.DataFrame(calm).drop(columns="interval_cv"), meta)["per_connection_cv"] is None


def test_a_calibration_taken_apart_is_found_by_the_line_learned_later():
    """At 13:52 (2026-11-26) the sweep began wholly apart: the placement calibration's 40 probes found one
    mode, and the rounds calibration could not be judged. Its runs are judged again by the line the sweep
    learned by its end."""
    rng = np.random.default_rng(3)
    calibration = [{"point": "p1", "status": "ok", "round_trip_ns": [312.0, 318.0]},
                   {"point": "p2", "status": "ok", "round_trip_ns": [51.0, 52.0]}]
    meta = {"params": {"duration_s": 1.0}, "placement": {"line_ns": 140.0},
            "rounds": {"rounds": 2, "duration_s": 0.8, "why": "2 rounds of 0.40 s per pass", "round_cost_s": 0.21,
                       "calibration": calibration}}
    assert run_facts(pd.DataFrame(_passes(2, 0.05, rng)), meta)["window_calibration_apart"] == 1
    one_mode = {**meta, "placement": {"line_ns": None}}
    assert not run_facts(pd.DataFrame(_passes(2, 0.05, rng)), one_mode)["window_calibration_apart"]

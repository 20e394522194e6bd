"""Rounds: a throughput pass's window split over fresh sets of connections (the client's --rounds),
and the rule that chooses how many from the host's own spread (lib/copylab/rounds.py, fed by sweep/rounds.py).

The rule is driven with stand-in hosts whose spreads we choose (a quiet host, the development VM,
the VM of issue 31 whose connections settled 14% apart, a host whose rounds cost much): the choice,
and a simulation of passes taken with it, must hold on each."""

from __future__ import annotations

import json
import math
import subprocess
import time
from types import SimpleNamespace

import numpy as np
import pytest

from copylab import intervals
from copylab.params import parse_grid
from copylab.sides import Window
from copylab import rounds
from copylab.placement import CpuDistance
from copylab.sweep import rounds as sweep_rounds
from native_helpers import run_client, sanitizer_findings, start_server

# stand-in hosts: (per-connection variance a, within-window variance per second b, a round's cost c)
HOSTS = {
    "quiet (connections alike)": (0.0, 0.0004, 0.25),
    "development VM": (0.01, 0.0004, 0.25),
    "issue 31's VM": (0.02, 0.0009, 0.30),
    "wide windows, alike connections": (0.0005, 0.004, 0.25),
    "costly rounds": (0.02, 0.0004, 1.2),
}


def simulated_cv(a: float, b: float, k: int, window_s: float, passes: int, rng) -> float:
    """Median over points of the CV of `passes` passes, each the mean of k rounds of window_s / k s
    whose log levels draw a per-connection level (variance a) and the window's own noise (b / w)."""
    w = window_s / k
    cvs = []
    for _ in range(400):
        logs = rng.normal(0.0, math.sqrt(a), (passes, k)) + rng.normal(0.0, math.sqrt(b / w), (passes, k))
        values = np.exp(logs).mean(axis=1)
        cvs.append(values.std(ddof=1) / values.mean())
    return float(np.median(cvs))


@pytest.mark.parametrize("host", list(HOSTS))
def test_the_choice_holds_the_pass_cost_and_never_predicts_worse(host):
    a, b, c = HOSTS[host]
    choice = rounds.choose(a, b, c, window_s=1.0)
    w = choice.duration_s / choice.rounds
    assert choice.rounds == 1 or w >= rounds.ROUND_WINDOW_MIN_S - 1e-3
    assert choice.rounds * (w + c) == pytest.approx(1.0 + c, abs=0.01)  # the budget is unchanged
    assert choice.predicted_cv[choice.rounds] <= choice.predicted_cv[1]


def test_connections_that_settle_apart_are_split_and_alike_ones_are_not():
    assert rounds.choose(*HOSTS["quiet (connections alike)"], window_s=1.0).rounds == 1
    assert rounds.choose(*HOSTS["wide windows, alike connections"], window_s=1.0).rounds == 1
    assert rounds.choose(*HOSTS["costly rounds"], window_s=1.0).rounds == 1  # a second round leaves no window
    assert rounds.choose(*HOSTS["development VM"], window_s=1.0).rounds >= 2
    assert rounds.choose(*HOSTS["issue 31's VM"], window_s=1.0).rounds >= 2


@pytest.mark.parametrize("host", list(HOSTS))
def test_passes_taken_as_chosen_spread_as_predicted_and_no_more_than_one_window(host):
    """The prediction is what passes show: simulate three-pass points on the stand-in host, with the
    rule's choice and with one window."""
    a, b, c = HOSTS[host]
    choice = rounds.choose(a, b, c, window_s=1.0)
    rng = np.random.default_rng(31)
    chosen = simulated_cv(a, b, choice.rounds, choice.duration_s, 3, rng)
    single = simulated_cv(a, b, 1, 1.0, 3, rng)
    assert chosen <= single * 1.05
    # the median CV of three passes runs a little under sigma (c4); the prediction is sigma
    assert chosen == pytest.approx(choice.predicted_cv[choice.rounds], rel=0.25)


def calibration_runs(a: float, b: float, c: float, rng, runs: int = 2, k: int = sweep_rounds.CALIBRATION_ROUNDS,
                     interval_s: float = 0.05, window_s: float = sweep_rounds.CALIBRATION_WINDOW_S) -> list[dict]:
    """What calibrate() reads from a stand-in host: per round its window's interval rates."""
    n = round(window_s / interval_s)
    out = []
    for _ in range(runs):
        levels = rng.normal(0.0, math.sqrt(a), k)
        rounds_ = [list(np.exp(level + rng.normal(0.0, math.sqrt(b / interval_s), n)) * 10.0) for level in levels]
        out.append({"rounds": rounds_, "interval_s": interval_s, "gaps": [None] + [c] * (k - 1)})
    return out


def test_components_recover_the_stand_in_hosts_spread():
    rng = np.random.default_rng(7)
    a, b, c = HOSTS["issue 31's VM"]
    found = rounds.components(calibration_runs(a, b, c, rng, runs=60))
    assert found is not None
    assert found[0] == pytest.approx(a, rel=0.3)
    assert found[1] == pytest.approx(b, rel=0.15)
    assert found[2] == pytest.approx(c)


@pytest.mark.parametrize("host", ["quiet (connections alike)", "development VM", "issue 31's VM"])
def test_a_two_run_calibration_chooses_as_the_host_needs_most_of_the_time(host):
    """The sweep calibrates with two runs of six rounds: on each stand-in host, most calibrations
    choose what the host's true spread calls for, and a wrong choice costs little."""
    a, b, c = HOSTS[host]
    truth = rounds.choose(a, b, c, window_s=1.0)
    rng = np.random.default_rng(2026)
    costs = []
    for _ in range(200):
        found = rounds.components(calibration_runs(a, b, c, rng))
        k = rounds.choose(found.a, found.b, found.cost_s, window_s=1.0, dof=found.dof).rounds
        costs.append(truth.predicted_cv.get(k, math.inf) / truth.predicted_cv[truth.rounds])
    assert np.mean([x == 1.0 for x in costs]) >= 0.6
    assert np.median(costs) <= 1.05 and max(costs) <= 1.5


@pytest.mark.parametrize("host", list(HOSTS))
def test_calibrations_of_one_host_choose_alike(host):
    """Issue 50: two reports on one host measured differently (2 rounds, then 1) from calibrations of the same
    spread. Chosen at the lower bound of the per-connection variance, 200 calibrations of one stand-in host
    agree in at least 80%, and where one window is right, more often than the point estimate's choices do."""
    a, b, c = HOSTS[host]
    rng = np.random.default_rng(50)
    cautious, plain = [], []
    for _ in range(200):
        found = rounds.components(calibration_runs(a, b, c, rng))
        cautious.append(rounds.choose(found.a, found.b, found.cost_s, window_s=1.0, dof=found.dof).rounds)
        plain.append(rounds.choose(found.a, found.b, found.cost_s, window_s=1.0).rounds)
    agree = max(cautious.count(k) for k in set(cautious)) / len(cautious)
    assert agree >= 0.8, (host, agree)
    if rounds.choose(a, b, c, window_s=1.0).rounds == 1:  # where one window is right, the point estimate flips more
        assert agree >= max(plain.count(k) for k in set(plain)) / len(plain)


def test_too_little_calibration_says_so():
    assert rounds.components([]) is None
    one_round = [{"rounds": [[1.0, 1.1, 0.9]], "interval_s": 0.05, "gaps": [None]}]
    assert rounds.components(one_round) is None


def test_rounds_pool_the_window_spread_about_each_rounds_own_level():
    """Two rounds at different levels, flat inside: no spread within a window, though the values differ."""
    series = intervals.Series(0.05, [0.0, 5.0, 5.0, 5.0, 0.0, 9.0, 9.0, 9.0], [], 1, 3, later_windows=[(5, 7)])
    assert series.windows() == [[5.0, 5.0, 5.0], [9.0, 9.0, 9.0]]
    assert intervals.summarise(series)["interval_cv"] == 0.0
    assert intervals.summarise(series)["intervals"] == 6
    one = intervals.Series(0.05, [5.0, 9.0, 5.0, 9.0], [], 0, 3)
    assert intervals.summarise(one)["interval_cv"] == pytest.approx(np.std([5, 9, 5, 9], ddof=1) / 7)


def test_round_windows_place_each_rounds_window_in_the_joined_series():
    # round 1: 6 intervals, window from 0.1 s; round 2: 5 intervals, window from 0.05 s; windows 0.2 s
    assert intervals.round_windows(0.05, [6, 5], [0.1, 0.05], 0.2) == [(2, 5), (7, 10)]


def test_a_window_of_rounds_sums_its_segments(monkeypatch):
    clock = SimpleNamespace(now=0.0)
    monkeypatch.setattr("copylab.sides.time", SimpleNamespace(monotonic=lambda: clock.now))
    ticks = iter([{0: (0, 0, 0)}, {0: (10, 1, 20)}, {0: (10, 1, 20)}, {0: (30, 1, 40)}])
    monkeypatch.setattr("copylab.sides.cpu_times", lambda: next(ticks))
    sent = []
    control = SimpleNamespace(send=sent.append)
    window = Window([control], {"srv": (0,)})
    for _ in range(2):
        window.open("client")
        clock.now += 0.4  # open 0.4 s, then 1 s closed between the rounds
        window.close()
        clock.now += 1.0
    window.close()  # a close with nothing open does nothing
    assert window.segments == 2 and sent == ["enable", "disable", "enable", "disable"]
    assert window.busy("srv") == pytest.approx(30 / 40)
    assert window.steal("srv") == pytest.approx(1 / 40)
    assert window.open_s == pytest.approx(0.8), "the rounds' windows, not the span between them"


def test_a_grid_of_rounds_splits_throughput_passes_of_its_own_senders_only():
    grid = parse_grid({"name": "g", "impls": ["a1"], "modes": ["throughput", "latency"], "msg_sizes": [64],
                       "threads": [1], "rounds": 2, "peers": {"tools": ["iperf3"]}})
    by_mode = {(s.impl, s.mode): s.rounds for s in grid.points("netns")}
    assert by_mode == {("a1", "throughput"): 2, ("a1", "latency"): 1, ("iperf3", "throughput"): 1}


def test_a_resumed_sweep_keeps_the_rounds_its_folder_recorded(tmp_path):
    grid = parse_grid({"name": "g", "impls": ["a1"], "modes": ["throughput"], "msg_sizes": [64], "threads": [1],
                       "rounds": "auto"})
    (tmp_path / "meta.json").write_text(json.dumps({"rounds": {"rounds": 3, "duration_s": 0.6, "why": "x"}}))
    sweep = SimpleNamespace(grid=grid, out=tmp_path, topology="netns", specs={}, recorded_rounds=None)
    sweep_rounds.settle(sweep)
    assert (sweep.grid.rounds, sweep.grid.duration_s) == (3, 0.6)
    assert sweep.specs and {s.rounds for s in sweep.specs.values()} == {3}  # the profiled run too
    # a record that is not a choice leaves auto (one round for points measured before any)
    (tmp_path / "meta.json").write_text(json.dumps({"rounds": {"rounds": "many", "duration_s": 0.6}}))
    sweep = SimpleNamespace(grid=grid, out=tmp_path, topology="netns", specs={}, recorded_rounds=None)
    sweep_rounds.settle(sweep)
    assert sweep.grid.rounds == "auto" and grid.points("netns")[0].rounds == 1


@pytest.mark.parametrize("sanitize", [False, True], ids=["build", "sanitizers"])
def test_client_rounds_are_fresh_connections_one_after_another(native_build, sanitize):
    server = start_server("a2", "throughput", 4096, sanitize=sanitize)
    try:
        run = run_client("127.0.0.1", server.port, "throughput", 4096, threads=2, duration=0.6, warmup=0.0,
                         sanitize=sanitize, extra=["--rounds", "3"])
    finally:
        status, served = server.stop()
    assert run.returncode == 0, run.stderr
    assert not sanitizer_findings(run.stderr + server.stderr())
    got = run.result
    assert got["rounds"] == 3 and got["connections"] == 6 and served["threads"] == 6
    assert got["verified"] is True
    assert len(got["round_intervals"]) == 3 and sum(got["round_intervals"]) == len(got["interval_bytes"])
    assert got["round_gap_s"][0] is None and all(g >= w for g, w in zip(got["round_gap_s"][1:], got["round_warmup_s"][1:]))
    assert got["warmup_s"] == pytest.approx(sum(got["round_warmup_s"]))
    # three 0.2 s windows, not the rounds' whole span, which holds the two reconnects between them too. A
    # receiver's window runs from the window's opening (no warm-up: its round's start) to its last recv
    # inside it, so no round counts more than 0.2 s, however loaded the host; a descheduled receiver
    # counts less (0.36 s in all, once, beside other tests), which is why there is no lower bound
    assert 0 < got["duration_s"] <= 3 * 0.2 + 1e-6 and all(g > 0 for g in got["round_gap_s"][1:])
    assert got["throughput_gbps"] == pytest.approx(got["bytes"] * 8 / got["duration_s"] / 1e9)


def test_the_report_says_a_window_of_rounds_and_the_window_the_rule_set():
    import pandas as pd

    from copylab.contract import COLUMNS
    from copylab.report_display import measurement_markdown

    rows = [{"impl": "a1", "mode": "throughput", "msg_size": 64, "threads": 1, "rep": r, "duration_s": 0.8,
             "warmup_s": 0.5, "warmup_end": "steady", "rounds": 2, "receive": "message"} for r in range(3)]
    rows += [{"impl": "a1", "mode": "latency", "msg_size": 64, "threads": 1, "rep": r, "duration_s": 0.25,
              "warmup_s": 0.1, "warmup_end": "fixed", "rounds": 1, "receive": "message"} for r in range(3)]
    meta = {"params": {"duration_s": 1.0, "latency_duration_s": 0.25, "rounds": "auto"},
            "rounds": {"rounds": 2, "duration_s": 0.8, "why": "2 rounds of 0.40 s per pass"}}
    frame = pd.DataFrame(rows).reindex(columns=list(COLUMNS))
    frame[["profile_mode", "pin_server", "pin_client"]] = ""
    text = measurement_markdown(meta, frame)
    assert "0.800 s in throughput mode, split over 2 rounds of 0.400 s" in text
    assert "per run, summed over its rounds" in text
    assert "0.250 s in latency mode (median" in text


class _PlacedHost(CpuDistance):
    """The calibration's placement on a stand-in host: its probes return the given round trips in
    turn, learned from a bimodal host's history (near 50-60 ns, apart 300-370 ns)."""

    def __init__(self, trips, history=(), allowance_s=math.inf):
        super().__init__([50.0 + (k % 11) for k in range(60)] + [300.0 + 7 * (k % 10) for k in range(10)], allowance_s)
        self.trips = list(trips)

    def probe(self, cpus):
        value = self.trips.pop(0)
        self.observe(value)
        return value


def _calibration_record(levels: list[float], gap_s: float = 0.25) -> tuple[dict, dict]:
    """A calibration run's row and raw record: per round four 50 ms intervals at its level."""
    values, windows = [], []
    for level in levels:
        values += [0.0, level, level * 1.01, level * 0.99, level]
        windows.append((len(values) - 4, len(values) - 1))
    series = {"values": values, "interval_s": 0.05, "window_first": windows[0][0], "window_last": windows[0][1],
              "later_windows": [list(w) for w in windows[1:]]}
    client = json.dumps({"round_gap_s": [None] + [gap_s] * (len(levels) - 1)})
    return {"status": "ok", "throughput_gbps": float(np.mean(levels))}, {"series": series, "client": {"stdout": client}}


RUN_S = 0.05


def _calibrating_sweep(monkeypatch, trips, records):
    """A sweep stand-in whose calibration runs return records in turn, probed by trips."""
    import contextlib

    from copylab import point, topology
    from copylab.sweep.accounting import Accounting

    grid = parse_grid({"name": "g", "impls": ["a1", "a2"], "modes": ["throughput"], "msg_sizes": [64, 16384],
                       "threads": [1], "rounds": "auto", "profile": False, "pin_server": "0", "pin_client": "1"})
    monkeypatch.setattr(sweep_rounds, "CpuDistance", lambda history, allowance_s: _PlacedHost(trips, allowance_s=allowance_s))
    monkeypatch.setattr(topology, "open_topology", lambda kind, ssh: contextlib.nullcontext(None))
    def run_point(spec, plan, topo):
        time.sleep(RUN_S)  # a run's time: a run set aside costs it (placement's)
        return records.pop(0)
    monkeypatch.setattr(point, "run_point", run_point)
    placing = SimpleNamespace(cpus=(0, 1), reason="", history=[])
    return SimpleNamespace(grid=grid, topology="netns", remote=None, plan=None, placing=placing,
                           accounting=Accounting())


def test_the_calibration_measures_again_a_run_taken_apart_and_chooses_from_near_runs(monkeypatch):
    """At 13:33 and 13:52 (2026-11-26) a calibration run was taken while the vCPUs were apart (A2 16 KiB
    at 6.8 Gbit/s in every round, near 12-14), one round flipping to 12.9: 18.7% between connections
    where the sweep's near runs showed 4.5%. Its runs are placed as the sweep's: once the rule knows
    the host's two modes (here from its history), one that ended apart is set aside and measured
    again, and the choice comes from runs taken near."""
    near_a1, near_a2 = [1.70, 1.72, 1.69, 1.71, 1.70, 1.72], [12.1, 12.3, 12.0, 12.2, 12.1, 12.2]
    taken_apart = [6.8, 6.8, 6.7, 6.8, 6.7, 12.9]
    records = [_calibration_record(near_a1), _calibration_record(taken_apart), _calibration_record(near_a2)]
    # run 1: near at both probes; run 2: ended apart (set aside: the next probe agreed); its retry: near at both
    sweep = _calibrating_sweep(monkeypatch, [52.0, 53.0, 51.0, 340.0, 340.0, 52.0, 54.0], records)
    choice, evidence = sweep_rounds.calibrate(sweep)
    assert not records  # three runs: the one set aside was measured again
    assert [e["set_aside"] for e in evidence] == [0, 1]
    assert [e["cpus_apart"] for e in evidence] == ["False", "False"]
    assert evidence[1]["round_gbps"] == pytest.approx(near_a2, rel=0.01)
    assert choice.per_connection_cv < 0.02  # the near runs' spread, not the apart run's
    assert sweep.accounting.placement_before_s >= RUN_S  # the run set aside is placement's cost
    assert len(sweep.placing.history) == 70 + 7  # the sweep learns from the calibration's probes


def test_a_calibration_run_kept_apart_does_not_feed_the_choice(monkeypatch):
    """With no allowance to measure again (RETRIES x nothing), a run kept apart is recorded, left out of
    the choice, and said in its why."""
    monkeypatch.setattr(sweep_rounds, "RETRIES", 0)
    records = [_calibration_record([1.7, 1.72, 1.69, 1.71, 1.70, 1.72]), _calibration_record([6.8, 6.8, 6.7, 6.8, 6.7, 12.9])]
    sweep = _calibrating_sweep(monkeypatch, [52.0, 53.0, 340.0, 345.0, 345.0, 350.0], records)  # apart, confirmed
    choice, evidence = sweep_rounds.calibrate(sweep)
    assert [e["cpus_apart"] for e in evidence] == ["False", "True"] and [e["set_aside"] for e in evidence] == [0, 0]
    assert choice.per_connection_cv < 0.02
    assert "1 run of 6 rounds, 1 more taken while the CPUs were apart and left out" in choice.why


def test_a_new_sweep_takes_the_calibrations_choice_and_an_old_folder_keeps_one_round(monkeypatch, tmp_path):
    grid = parse_grid({"name": "g", "impls": ["a1"], "modes": ["throughput", "latency"], "msg_sizes": [64],
                       "threads": [1], "rounds": "auto", "profile": False})
    recorded, said = {}, []
    meta = SimpleNamespace(update=lambda **fields: recorded.update(fields))

    def sweep(skipped: int):
        specs = {s.point_id(): s for s in grid.points("netns")}
        return SimpleNamespace(grid=grid, topology="netns", specs=specs, rows={}, force=False, skipped=skipped,
                               missing_peers={}, meta=meta, log=said.append, recorded_rounds=None)

    monkeypatch.setattr(sweep_rounds, "calibrate", lambda s: (rounds.Choice(2, 0.8, "2 rounds of 0.40 s per pass"),
                                                              [{"point": "p", "round_gbps": [1.0, 1.1]}]))
    old = sweep(skipped=3)
    assert sweep_rounds.resolve(old, ["x"]) == ["x"] and old.grid.rounds == "auto"
    assert recorded["rounds"]["rounds"] == 1 and "before any choice" in recorded["rounds"]["why"]
    new = sweep(skipped=0)
    queue = sweep_rounds.resolve(new, [])
    assert {new.specs[p].rounds for p in queue if new.specs[p].mode == "throughput"} == {2}
    assert {new.specs[p].duration_s for p in queue if new.specs[p].mode == "throughput"} == {0.8}
    assert {(new.specs[p].rounds, new.specs[p].duration_s) for p in queue if new.specs[p].mode == "latency"} == {(1, 1.0)}
    assert recorded["rounds"]["calibration"] == [{"point": "p", "round_gbps": [1.0, 1.1]}]
    assert said == ["rounds: 2 rounds of 0.40 s per pass"]

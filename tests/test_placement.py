"""placement.py and native/cpuprobe: the round trip between the two pinned CPUs, probed around each
run; a run taken while they were apart set aside (its record kept) and measured again."""

from __future__ import annotations

import json
import math
import re
import subprocess
from pathlib import Path

import pandas as pd
import pytest
from faults import assert_one_line_error

from copylab import experiment, placement
from copylab.analysis.text.configuration import NOT_RECORDED, _placement
from copylab.errors import CopylabError
from copylab.point import empty_row
from copylab.placement import APART_FACTOR, RETRIES, CpuDistance, placed, placement_columns, probe_cpus
from copylab.sweep.groups import _nearest_round_trip


class ScriptedDistance(CpuDistance):
    """A CpuDistance whose probes return the given round trips in turn (an exception is raised)."""

    def __init__(self, trips, nearest_ns=None):
        super().__init__(nearest_ns)
        self.trips = list(trips)

    def probe(self, cpus):
        value = self.trips.pop(0)
        if isinstance(value, Exception):
            raise value
        self.nearest_ns = min(self.nearest_ns, value)
        return value


def ok_run(counter):
    def measure():
        counter.append(1)
        return {"status": "ok", "throughput_gbps": float(len(counter))}, {"raw": len(counter)}
    return measure


# ---------------------------------------------------------------------------------------------
# the native probe


def test_cpuprobe_answers_each_request_with_one_round_trip(native_build):
    proc = subprocess.run([str(native_build / "cpuprobe"), "0", "1", "--ms", "1"], input="a\nb\nc\n",
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    values = [float(line) for line in proc.stdout.splitlines()]
    assert len(values) == 3 and all(0 < v < 1e6 for v in values), values


@pytest.mark.parametrize("argv, needle, code", [
    (["0"], "usage", 2), (["0", "x"], "CPU_B: 'x' is not a CPU number", 2), (["-1", "1"], "CPU_A", 2),
    (["0", "1", "--ms", "0"], "--ms: '0'", 2), (["0", "1", "--ms", "abc"], "--ms: 'abc'", 2),
    (["0", "1", "--sec", "1"], "usage", 2), (["0", "1000"], "cannot start a thread on CPU 1000", 1),
])
def test_cpuprobe_bad_invocation_is_one_line(native_build, argv, needle, code):
    proc = subprocess.run([str(native_build / "cpuprobe"), *argv], input="probe\n", capture_output=True,
                          text=True, timeout=30)
    assert_one_line_error(proc, needle)
    assert proc.returncode == code and proc.stdout == ""


def test_cpu_distance_probes_and_keeps_the_nearest(native_build):
    with CpuDistance() as distance:
        first, second = distance.probe((0, 1)), distance.probe((0, 1))
    assert 0 < distance.nearest_ns == min(first, second)
    assert not distance.apart(distance.nearest_ns) and distance.apart(APART_FACTOR * distance.nearest_ns + 1)


def test_a_cpu_that_does_not_exist_is_one_line(native_build):
    with CpuDistance() as distance, pytest.raises(CopylabError, match="cannot start a thread on CPU 1000") as err:
        distance.probe((0, 1000))
    assert "\n" not in str(err.value)


def test_a_probe_that_is_not_built_is_named(monkeypatch, tmp_path):
    monkeypatch.setattr(placement, "PROBE", tmp_path / "cpuprobe")
    with pytest.raises(CopylabError, match="not built"):
        CpuDistance().probe((0, 1))


# ---------------------------------------------------------------------------------------------
# the rule


@pytest.mark.parametrize("pins, topology, expect", [
    (("0", "1"), "netns", (0, 1)), (("2,3", "1-2"), "loopback", (2, 1)),
    ((None, "1"), "netns", "not both pinned"), (("0", "0"), "netns", "both sides on one CPU"),
    (("0", "1"), "ssh", "different hosts"),
])
def test_probe_cpus_pairs_the_first_cpu_of_each_side(pins, topology, expect):
    cpus, reason = probe_cpus(*pins, topology)
    if isinstance(expect, tuple):
        assert cpus == expect and reason == ""
    else:
        assert cpus is None and expect in reason


def test_a_run_taken_near_is_kept_at_once():
    runs = []
    attempts = placed(ScriptedDistance([50.0, 55.0]), (0, 1), "", ok_run(runs))
    assert len(attempts) == 1 and len(runs) == 1
    columns = attempts[0][1]
    assert columns["cpu_round_trip_ns"] == 55.0 and columns["cpus_apart"] == "False"
    assert columns["placement_retries"] == 0 and columns["placement_note"] == ""


def test_a_run_that_ended_apart_is_set_aside_and_measured_again():
    runs = []
    # before near, after apart (the hypervisor moved a vCPU during the run); then near both times
    attempts = placed(ScriptedDistance([50.0, 300.0, 52.0, 51.0]), (0, 1), "", ok_run(runs))
    assert len(runs) == 2
    (first, first_cols), (kept, kept_cols) = attempts
    assert first_cols["cpus_apart"] == "True" and first_cols["cpu_round_trip_ns"] == 300.0
    assert kept_cols["cpus_apart"] == "False" and kept_cols["placement_retries"] == 1
    assert kept[0]["throughput_gbps"] == 2.0, "the kept run is the last one measured"


def test_the_run_waits_for_the_cpus_to_come_together(monkeypatch):
    monkeypatch.setattr(placement, "WAIT_STEP_S", 0.001)
    runs = []
    distance = ScriptedDistance([300.0, 310.0, 50.0, 51.0], nearest_ns=50.0)
    attempts = placed(distance, (0, 1), "", ok_run(runs))
    assert len(runs) == 1 and attempts[0][1]["cpus_apart"] == "False"
    assert attempts[0][1]["placement_wait_s"] > 0 and distance.trips == []


def test_cpus_apart_through_every_retry_keep_the_last_run_flagged(monkeypatch):
    monkeypatch.setattr(placement, "WAIT_STEP_S", 0.001)
    monkeypatch.setattr(placement, "WAIT_S", 0.0)  # one probe before each run, apart every time
    runs = []
    attempts = placed(ScriptedDistance([300.0] * 2 * (RETRIES + 1), nearest_ns=50.0), (0, 1), "", ok_run(runs))
    assert len(runs) == RETRIES + 1 == len(attempts)
    assert [c["cpus_apart"] for _, c in attempts] == ["True"] * (RETRIES + 1)
    assert attempts[-1][1]["placement_retries"] == RETRIES


def test_a_failed_run_is_not_measured_again():
    runs = []

    def failing():
        runs.append(1)
        return {"status": "failed"}, {}
    attempts = placed(ScriptedDistance([50.0, 300.0]), (0, 1), "", failing)
    assert len(runs) == 1 and attempts[0][1]["cpus_apart"] == "True"


def test_a_probe_that_fails_leaves_the_run_unplaced_with_the_reason():
    runs = []
    attempts = placed(ScriptedDistance([CopylabError("cpuprobe 0 1: no answer")]), (0, 1), "", ok_run(runs))
    assert len(runs) == 1 and math.isnan(attempts[0][1]["cpu_round_trip_ns"])
    assert attempts[0][1]["placement_note"] == "not probed: cpuprobe 0 1: no answer"
    attempts = placed(ScriptedDistance([50.0, CopylabError("gone")]), (0, 1), "", ok_run(runs))
    assert "not probed after the run: gone" == attempts[0][1]["placement_note"]


def test_an_unpinned_point_is_measured_once_with_why_it_was_not_probed():
    runs = []
    attempts = placed(ScriptedDistance([]), None, "not probed: the sides are not both pinned", ok_run(runs))
    assert len(runs) == 1 and attempts[0][1]["placement_note"] == "not probed: the sides are not both pinned"


def test_measure_points_keeps_the_set_aside_run_under_apart(monkeypatch, tmp_path):
    trips = [50.0, 300.0, 50.0, 52.0]
    monkeypatch.setattr(experiment, "CpuDistance", lambda nearest: ScriptedDistance(trips, nearest))
    monkeypatch.setattr(experiment, "probe_topology", lambda topo: None)
    calls = []

    def fake_run_point(spec, plan, topo, workdir=None, profile_dir=None):
        calls.append(spec.point_id())
        row = empty_row(spec, topo.kind)
        row.update(status="ok", throughput_gbps=float(len(calls)), point_id=spec.point_id(), mode=spec.mode)
        return row, {"spec": spec.point_id()}
    monkeypatch.setattr(experiment, "run_point", fake_run_point)
    point = dict(impl="a1", mode="throughput", msg_size=1024, threads=1, duration_s=0.5, warmup_s=0.1,
                 pin_server="0", pin_client="1")
    records = experiment.measure_points([point], topology="loopback", record_dir=str(tmp_path), say=lambda _t: None)
    pid = calls[0]
    kept = json.loads((tmp_path / f"{pid}.json").read_text())["row"]
    aside = json.loads((tmp_path / "apart" / f"{pid}.0.json").read_text())["row"]
    assert len(calls) == 2 and records[0]["row"]["throughput_gbps"] == 2.0 == kept["throughput_gbps"]
    assert aside["throughput_gbps"] == 1.0 and aside["cpus_apart"] == "True"
    assert kept["placement_retries"] == 1 and kept["cpus_apart"] == "False"
    assert sorted(p.name for p in tmp_path.glob("*.json")) == [f"{pid}.json"], "results.csv reads runs/*.json only"


# ---------------------------------------------------------------------------------------------
# what the sweep and the report make of it


def test_the_next_group_starts_from_the_nearest_round_trip_seen():
    rows = {"a": {"cpu_round_trip_ns": 61.0}, "b": {"cpu_round_trip_ns": float("nan")}, "c": {},
            "d": {"cpu_round_trip_ns": 55.5}}
    assert _nearest_round_trip(rows) == 55.5
    assert _nearest_round_trip({"a": {"cpu_round_trip_ns": float("nan")}}) is None


def test_the_report_states_the_placement_and_the_runs_set_aside():
    df = pd.DataFrame({"cpu_round_trip_ns": [50.2, 60.0, 320.0], "placement_retries": [0, 2, 1],
                       "cpus_apart": ["False", "False", "True"], "placement_note": ["", "", ""]})
    text = _placement(df)
    assert "50 ns at the nearest, 60 ns median" in text and "3 runs taken while they were apart" in text
    assert f"1 run still apart after {RETRIES} retries" in text
    assert _placement(pd.DataFrame({"impl": ["a1"]})) == NOT_RECORDED
    unpinned = pd.DataFrame({"cpu_round_trip_ns": [math.nan], "placement_note": ["not probed: the sides are not both pinned"]})
    assert _placement(unpinned) == "not probed: the sides are not both pinned"


def test_columns_of_an_unprobed_run_are_empty_with_a_reason():
    columns = placement_columns(None, 0, "not probed: x")
    assert math.isnan(columns["cpu_round_trip_ns"]) and columns["cpus_apart"] == "" and columns["placement_note"]


def test_the_kept_run_carries_the_time_spent_on_placement(monkeypatch):
    monkeypatch.setattr(placement, "WAIT_STEP_S", 0.05)
    runs = []
    attempts = placed(ScriptedDistance([300.0, 50.0, 300.0, 50.0, 50.0], nearest_ns=50.0), (0, 1), "", ok_run(runs))
    # waited once (0.05 s), set one run aside, then kept the second: all but the kept run is placement
    assert len(runs) == 2 and attempts[-1][1]["placement_s"] >= 0.05
    assert math.isnan(attempts[0][1]["placement_s"]), "a set-aside run's time is counted in the kept run's"


def test_the_sweep_counts_placement_apart_from_the_harness(monkeypatch):
    from copylab.point import PointSpec
    from copylab.sweep import accounting

    clock = iter([0.0, 2.0, 3.0])
    monkeypatch.setattr(accounting.time, "monotonic", lambda: next(clock))
    book = accounting.Accounting()
    book.start(0.0)
    spec = PointSpec(impl="a1", mode="throughput", msg_size=1024, threads=1, duration_s=0.5, warmup_s=0.1)
    book.point(spec, {"warmup_s": 0.1, "duration_s": 0.5, "placement_s": 1.1})   # 2 s wall, 1.1 s of it placement
    book.point(spec, {"warmup_s": 0.1, "duration_s": 0.5, "placement_s": float("nan")})  # 1 s wall, not probed
    study = book.summary()["by_kind"]["study"]
    assert study["overhead"] == round(3.0 / 1.2, 3) and study["placement_s"] == 1.1
    assert study["overhead_without_placement"] == round(1.9 / 1.2, 3) and book.placement == 1.1
    assert "without the 1 s spent on the CPUs' placement" in book.lines()[0]


@pytest.mark.network
@pytest.mark.root
def test_a_pinned_point_records_where_its_cpus_were(native_build):
    from conftest import run_copylab

    proc = run_copylab("run", "--impl", "a2", "--mode", "throughput", "--msg-size", "4096", "--duration", "0.3",
                       "--warmup", "0.1", "--pin-server", "0", "--pin-client", "1", "--json", timeout=120)
    assert proc.returncode == 0, proc.stderr
    row = json.loads(proc.stdout)
    assert 0 < row["cpu_round_trip_ns"] < 1e5 and row["cpus_apart"] in ("True", "False")
    assert row["placement_note"] == "" and row["placement_s"] >= 0 and row["placement_retries"] in range(RETRIES + 1)


def test_the_grid_key_placement_is_on_by_default_and_can_be_turned_off():
    from copylab.params import load_grid, parse_grid

    assert load_grid("params/default.yaml").placement is True
    data = {"name": "g", "impls": ["a1"], "modes": ["throughput"], "msg_sizes": [1024], "threads": [1]}
    assert parse_grid(data).placement is True and parse_grid({**data, "placement": False}).placement is False
    with pytest.raises(CopylabError, match="placement"):
        parse_grid({**data, "placement": "yes"})
    assert probe_cpus("0", "1", "netns", wanted=False) == (None, placement.OFF)


def test_measure_points_with_placement_off_probes_nothing(monkeypatch, tmp_path):
    monkeypatch.setattr(experiment, "CpuDistance", lambda nearest: ScriptedDistance([], nearest))  # a probe would fail
    monkeypatch.setattr(experiment, "probe_topology", lambda topo: None)

    def fake_run_point(spec, plan, topo, workdir=None, profile_dir=None):
        row = empty_row(spec, topo.kind)
        row.update(status="ok", throughput_gbps=1.0)
        return row, {}
    monkeypatch.setattr(experiment, "run_point", fake_run_point)
    point = dict(impl="a1", mode="throughput", msg_size=1024, threads=1, duration_s=0.5, warmup_s=0.1,
                 pin_server="0", pin_client="1")
    records = experiment.measure_points([point], topology="loopback", record_dir=str(tmp_path), placement=False,
                                        say=lambda _t: None)
    row = records[0]["row"]
    assert row["placement_note"] == placement.OFF and row["cpu_round_trip_ns"] is None  # NaN in the record: null


def test_a_probe_that_answers_nonsense_is_stopped_and_named(monkeypatch, tmp_path):
    from copylab.topology import pid_alive

    script = tmp_path / "cpuprobe"
    script.write_text(f"#!/bin/sh\necho $$ > {tmp_path}/pid\nread line\necho nonsense\nexec sleep 100\n")
    script.chmod(0o755)
    monkeypatch.setattr(placement, "PROBE", script)
    distance = CpuDistance()
    with pytest.raises(CopylabError, match=r"^cpuprobe 0 1: no answer$"):
        distance.probe((0, 1))
    assert not pid_alive(int((tmp_path / "pid").read_text())), "the probe that answered nonsense still runs"
    distance.close()


def test_a_placement_note_from_a_results_folder_reaches_the_report_escaped():
    from copylab import report_display

    hostile = "not probed: <img src=x onerror=alert(1)> $\\input{/etc/passwd}$ [link](http://x)"
    df = pd.DataFrame({"impl": ["a1"], "mode": ["throughput"], "msg_size": [1024], "threads": [1], "rep": [0],
                       "cpu_round_trip_ns": [math.nan], "placement_note": [hostile]})
    table = report_display.system_markdown({}, df)
    line = next(l for l in table.splitlines() if l.startswith("| CPU placement"))
    assert not re.search(r"(?<!\\)[<>$\[\]]", line.split("|")[2]), "a character Markdown, HTML or TeX reads went through"
    assert "\\<img" in line and "\\$\\\\input" in line and "\\[link\\]" in line

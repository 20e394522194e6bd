"""measurement.build_row: the results row from what a point collected, without running anything."""

from __future__ import annotations

import math

from copylab.contract import COLUMNS, COUNTER_KEYS
from copylab.errors import ErrorKind
from copylab.intervals import Series
from copylab.measurement import Collected, build_row
from copylab.perf import PerfPlan
from copylab.pointspec import PointSpec
from copylab.runners import Result

SPEC = PointSpec(impl="a2", mode="throughput", msg_size=4096, threads=2, rep=1, duration_s=1.0, warmup_s=0.1,
                 topology="netns", pin_server="0", pin_client="1")


def plan(cycles_source="tsc", note="no PMU here") -> PerfPlan:
    return PerfPlan(perf_path="/usr/bin/perf", version="6.1", cycles_source=cycles_source, note=note)


def counters(**values) -> dict:
    return {key: values.get(key) for key in COUNTER_KEYS}


def collected(result=None, srv=None, cli=None, notes=(), profile=None) -> Collected:
    series = Series(0.05, [10.0, 10.0, 9.0, 11.0, 10.0, 10.0, 10.0, 9.5, 10.5], [], 1, 8)
    result = result or Result({"throughput_gbps": 10.0, "bytes": 1.25e9, "duration_s": 1.0, "cli_congestion": "cubic"},
                              None, series)
    return Collected(result, {"srv": srv or counters(cycles=100.0, context_switches=3.0),
                              "cli": cli or counters(cycles=50.0, context_switches=4.0)},
                     list(notes), "client", {"srv_cpu_busy": 0.9, "cli_cpu_busy": 0.5, "srv_cpu_steal": 0.01,
                                             "cli_cpu_steal": 0.0},
                     {"srv": "reno", "cli": "bbr"}, profile)


def test_a_row_sums_both_sides_and_keeps_every_column():
    row = build_row(SPEC, "netns", plan(), collected(), None)
    assert set(row) == set(COLUMNS)
    assert row["cycles"] == 150.0 and row["context_switches"] == 7.0 and row["cycles_source"] == "tsc"
    assert row["status"] == "ok" and row["error_kind"] == "" and row["run_kind"] == "measure"
    assert math.isnan(row["l1_misses"]) and row["counters_note"] == "no PMU here"  # an empty counter says why
    assert row["srv_cpu_steal"] == 0.01 and row["interval_cv"] > 0 and row["intervals"] == 8
    # the runner said what the client ran; the sender's side falls back to what its host runs
    assert row["cli_congestion"] == "cubic" and row["srv_congestion"] == "reno"


def test_a_missing_side_leaves_the_sums_empty_with_its_reason():
    got = collected(cli=counters(), notes=["perf stat of the client wrote no counters"])
    row = build_row(SPEC, "netns", plan(), got, None)
    assert math.isnan(row["cycles"]) and row["srv_cycles"] == 100.0 and row["cycles_source"] == ""
    assert row["counters_note"] == "perf stat of the client wrote no counters"


def test_the_stages_failure_comes_before_the_runners_verdict():
    got = collected(Result({"throughput_gbps": math.nan}, (ErrorKind.NO_RESULT, "client printed no JSON result")))
    row = build_row(SPEC, "netns", plan(), got, (ErrorKind.SERVER, "server exited with status 1: boom"))
    assert (row["status"], row["error_kind"], row["error"]) == ("failed", ErrorKind.SERVER,
                                                                 "server exited with status 1: boom")
    row = build_row(SPEC, "netns", plan(), got, None)
    assert (row["error_kind"], row["error"]) == (ErrorKind.NO_RESULT, "client printed no JSON result")


def test_a_profiled_run_is_marked_and_carries_its_columns():
    spec = PointSpec(**{**SPEC.__dict__, "profile": True})
    row = build_row(spec, "netns", plan(), collected(profile={"profile_mode": "per_cpu", "srv_prof_samples": 480}),
                    None)
    assert row["run_kind"] == "profile" and row["profile_mode"] == "per_cpu" and row["srv_prof_samples"] == 480
    assert row["point_id"].endswith("_prof")


import pandas as pd  # noqa: E402
import pytest  # noqa: E402

# what a program may print that no measurement can be (issue 46: a client's 1.8e19 Gbit/s gave an ok row
# that validation took; a string, a negative count) -> the words the point's error says
IMPOSSIBLE = {
    "throughput no memory moves": ({"throughput_gbps": 1.8e19}, "throughput_gbps = '1.8e+19': impossible: more than "
                                                                "10000 Gbit/s"),
    "a negative count": ({"send_calls": -3.0}, "send_calls = '-3.0': cannot be negative"),
    "text for a number": ({"latency_p99_us": "fast"}, "latency_p99_us = 'fast': not a number"),
    "an infinite rate": ({"throughput_gbps": math.inf}, "throughput_gbps = 'inf': must be a finite number"),
    "a share above one": ({"srv_cpu_busy": 7.0}, "srv_cpu_busy = '7.0': impossible: a share, at most 1"),
}


@pytest.mark.parametrize("case", IMPOSSIBLE)
def test_a_value_no_measurement_can_be_fails_the_point_and_is_left_empty(tmp_path, case):
    """Checked where the programs' answers become columns: the point fails (values_invalid) naming the
    value, the value is left empty (the record's raw output keeps it), and the row is one that
    `copylab report` reads (validate.py refuses the same values at load)."""
    from copylab import analysis
    from copylab.contract import COLUMNS as ALL

    fields, needle = IMPOSSIBLE[case]
    base = collected().result
    got = collected(Result({**base.fields, **{k: v for k, v in fields.items() if k != "srv_cpu_busy"}}, None, base.series))
    if "srv_cpu_busy" in fields:
        got.cpu["srv_cpu_busy"] = fields["srv_cpu_busy"]
    row = build_row(SPEC, "netns", plan(), got, None)
    assert (row["status"], row["error_kind"]) == ("failed", ErrorKind.VALUES) and needle in row["error"], row["error"]
    column = next(iter(fields))
    assert math.isnan(row[column])
    pd.DataFrame([row], columns=list(ALL)).to_csv(tmp_path / "results.csv", index=False)
    df, _ = analysis.load_results(tmp_path)  # read, not refused (a failed row stays out of the statistics)
    assert df.empty


def test_an_ok_row_without_its_measure_fails_as_no_result():
    base = collected().result
    row = build_row(SPEC, "netns", plan(), collected(Result({**base.fields, "throughput_gbps": math.nan}, None,
                                                            base.series)), None)
    assert (row["status"], row["error_kind"]) == ("failed", ErrorKind.NO_RESULT)
    assert row["error"] == "the result holds no throughput_gbps: nothing measured to report"


def test_a_stretched_window_is_named_before_the_answer_it_cost():
    """A client stopped inside its window can lose its answer too (its perf stat, seeing it stopped and
    continued, returns early, and the program dies with it: sides.PARENT_DEATH): the row names the
    stretched window, what went wrong first."""
    stretched = (ErrorKind.STRETCHED, "the window lasted 3.60 s of wall clock for a 1 s window")
    got = collected(Result({"throughput_gbps": math.nan}, (ErrorKind.NO_RESULT, "client printed no JSON result")))
    got.doubts = got.stretched = stretched
    row = build_row(SPEC, "netns", plan(), got, None)
    assert (row["error_kind"], row["error"]) == stretched
    row = build_row(SPEC, "netns", plan(), got, (ErrorKind.STOPPED, "the client was stopped"))
    assert row["error_kind"] == ErrorKind.STOPPED, "the stages' own failure still comes first"

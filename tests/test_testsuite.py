"""tools/testsuite.py (make test): the phases, the retry as a safety net, and the record of every test
the retry rescued (issue 48: a suite green only through its retry is not green)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys

import pytest
from conftest import ROOT


def _tool(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "tools" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


suite_tool = _tool("testsuite")


def _fake(outcomes: dict[str, int], failed_after: dict[str, list[str]], tmp_path):
    """A runner whose phases end with the given statuses, leaving pytest's lastfailed file as given."""
    cache = tmp_path / suite_tool.LASTFAILED
    cache.parent.mkdir(parents=True, exist_ok=True)
    calls = []

    def runner(python, args, root):
        name = "retry" if args[:len(suite_tool.RETRY)] == suite_tool.RETRY else "alone" if "alone" == args[-1] \
            else "shared"
        calls.append(name if name != "retry" else ("retry", tuple(args[len(suite_tool.RETRY):])))
        cache.write_text(json.dumps({test: True for test in failed_after.get(name, [])}))
        return outcomes[name], 1.0
    return runner, calls


def test_a_test_that_passes_only_alone_is_rescued_named_and_recorded(tmp_path):
    runner, calls = _fake({"alone": 0, "shared": 1, "retry": 0},
                          {"shared": ["tests/test_x.py::test_race"], "retry": []}, tmp_path)
    record = suite_tool.suite("python", 4, root=tmp_path, runner=runner)
    assert calls == ["alone", "shared", ("retry", ("tests/test_x.py::test_race",))] and record["status"] == 0
    assert record["failed_beside_others"] == ["tests/test_x.py::test_race"] == record["rescued"]
    line = suite_tool.summary(record)
    assert "RESCUED 1 test" in line and "tests/test_x.py::test_race" in line and "\n" not in line
    log = tmp_path / "make-test.jsonl"
    suite_tool.append(log, record)
    suite_tool.append(log, record)
    assert [json.loads(x)["rescued"] for x in log.read_text().splitlines()] == [["tests/test_x.py::test_race"]] * 2


def test_a_test_that_fails_alone_too_fails_the_suite(tmp_path):
    failing = ["tests/test_x.py::test_broken", "tests/test_y.py::test_race"]
    runner, calls = _fake({"alone": 1, "shared": 0, "retry": 1},
                          {"alone": failing, "shared": failing, "retry": failing[:1]}, tmp_path)
    record = suite_tool.suite("python", 4, root=tmp_path, runner=runner)
    assert record["status"] == 1 and record["failed_alone"] == failing[:1] and record["rescued"] == failing[1:]
    line = suite_tool.summary(record)
    assert line.startswith("make test: retry: FAILED alone too: tests/test_x.py::test_broken") and "test_race" in line


def test_the_retry_names_a_grouped_test_as_pytest_collects_it(tmp_path):
    """xdist's loadgroup records a grouped test's failure as test@group: the retry runs that one test, by
    the id pytest collects (--last-failed could not find it and ran the whole suite again, serially)."""
    grouped = "tests/test_ssh.py::test_quick_sweep_over_ssh@ssh_rig"
    runner, calls = _fake({"alone": 0, "shared": 1, "retry": 0},
                          {"shared": [grouped, "tests/test_x.py::test_p[a@b]"], "retry": []}, tmp_path)
    record = suite_tool.suite("python", 4, root=tmp_path, runner=runner)
    assert calls[-1] == ("retry", ("tests/test_ssh.py::test_quick_sweep_over_ssh", "tests/test_x.py::test_p[a@b]"))
    assert record["rescued"] == ["tests/test_ssh.py::test_quick_sweep_over_ssh", "tests/test_x.py::test_p[a@b]"]
    # a phase that failed without a failed test runs nothing again and fails the suite
    runner, calls = _fake({"alone": 0, "shared": 3}, {"shared": []}, tmp_path / "crash")
    record = suite_tool.suite("python", 4, root=tmp_path / "crash", runner=runner)
    assert calls == ["alone", "shared"] and record["status"] == 3
    assert suite_tool.summary(record) == "make test: retry: FAILED alone too: not a test (see above)"


def test_no_retry_when_nothing_failed_and_a_phase_without_tests_is_no_failure(tmp_path):
    runner, calls = _fake({"alone": suite_tool.NO_TESTS, "shared": 0}, {}, tmp_path)
    record = suite_tool.suite("python", 4, root=tmp_path, runner=runner)
    assert calls == ["alone", "shared"] and record["status"] == 0 and record["rescued"] == []
    assert suite_tool.summary(record) == "make test: retry: none needed (every test passed beside the others)"


def test_tests_over_the_time_limits_without_slow_are_recorded_not_failed(tmp_path):
    """tests/conftest.py notes such a test in the file the tool names (COPYLAB_TEST_NOTES); the tool
    records it beside the verdict, which it does not change."""
    runner, _ = _fake({"alone": 0, "shared": 0}, {}, tmp_path)
    outer = os.environ.get(suite_tool.NOTES_VAR)  # set when this suite itself runs under tools/testsuite.py

    def noting(python, args, root):
        with open(os.environ[suite_tool.NOTES_VAR], "a") as handle:
            handle.write(json.dumps({"unmarked_slow": ["tests/test_x.py::test_long: took 12 s (6 s of CPU)"]}) + "\n")
        return runner(python, args, root)
    record = suite_tool.suite("python", 4, root=tmp_path, runner=noting)
    assert record["status"] == 0 and record["unmarked_slow"] == ["tests/test_x.py::test_long: took 12 s (6 s of CPU)"]
    assert os.environ.get(suite_tool.NOTES_VAR) == outer  # the outer value is back


@pytest.mark.slow
def test_the_tool_reads_pytests_own_record_of_failures(tmp_path):
    """Through pytest itself: a test that fails while a file is missing, which its first run creates (a
    stand-in for a race), fails beside the others, passes alone, and is recorded as rescued."""
    (tmp_path / "test_flaky.py").write_text(
        "from pathlib import Path\n\n"
        "def test_flaky():\n"
        "    mark = Path(__file__).with_name('ran')\n"
        "    first = not mark.exists()\n"
        "    mark.touch()\n"
        "    assert not first\n\n"
        "def test_steady():\n"
        "    pass\n")
    log = tmp_path / "log.jsonl"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    # --workers 0: xdist runs the shared phase in pytest's own process (a worker's start is the cost here)
    proc = subprocess.run([sys.executable, str(ROOT / "tools" / "testsuite.py"), "--workers", "0", "--log", str(log),
                           "--root", str(tmp_path)], capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    last = proc.stdout.strip().splitlines()[-1]
    assert last.startswith("make test: retry: RESCUED 1 test ") and "test_flaky.py::test_flaky" in last, last
    record = json.loads(log.read_text())
    assert record["rescued"] == ["test_flaky.py::test_flaky"] and [p["name"] for p in record["phases"]] == [
        "alone", "shared", "retry"]
    assert record["status"] == 0 and record["failed_alone"] == [] and record["date"] and record["cpus"]


def test_the_measurement_record_counts_the_runs_that_needed_the_retry():
    """tools/measurements.py from-test-runs: the record's numbers are the log's lines, not typed."""
    measurements = _tool("measurements")
    clean = {"date": "2026-11-28T10:00:00+00:00", "commit": "abc1234", "host": "vm", "cpus": 2, "seconds": 450.0,
             "phases": [{"name": "alone", "status": 0, "seconds": 20.0}, {"name": "shared", "status": 0, "seconds": 400.0}],
             "failed_beside_others": [], "rescued": [], "failed_alone": [], "status": 0}
    retried = {**clean, "date": "2026-11-28T11:00:00+00:00",
               "phases": clean["phases"] + [{"name": "retry", "status": 0, "seconds": 5.0}],
               "failed_beside_others": ["tests/test_x.py::test_race"], "rescued": ["tests/test_x.py::test_race"]}
    lines = [json.dumps(r) for r in (clean, retried, retried)]
    record = measurements.from_test_runs(lines, "make test, five runs")
    values = {v["quantity"]: v["value"] for v in record["values"]}
    assert values["runs"] == "3" and values["runs that needed the retry"] == "2 of 3"
    assert values["tests the retry rescued (runs)"] == "tests/test_x.py::test_race (2)"
    assert record["host"] == "vm (2 CPUs)" and len(record["table"]["rows"]) == 3
    later = measurements.from_test_runs(lines, "t", since="2026-11-28T10:30")
    assert {v["quantity"]: v["value"] for v in later["values"]}["runs that needed the retry"] == "2 of 2"
    assert "| runs that needed the retry | 2 of 3 |" in measurements.render([{**record, "file": "x.json"}])


def test_the_reproducibility_record_is_evidence_pys_own_numbers():
    measurements = _tool("measurements")
    evidence = {"sweeps": ["r1", "r2", "r3"], "covered": 3, "pairs": 4, "in_repeat_range": 4,
                "crossovers": {"q4": [65536, 65536, None], "q5": [None, None, None]},
                "comparisons": {"q4 4096": {"ratios": [1.0, 1.02, 0.99], "decisions": ["equivalent"] * 3,
                                            "verdict": "within the margin", "same_verdict": 3, "of": 3,
                                            "var_between_sweeps": 2e-4, "var_within_sweep": 1e-4,
                                            "next_covered": [True, False], "next_in_repeat_range": [True, True]}}}
    record = measurements.from_reproducibility(evidence, "t", "c", "", "2026-11-28", "vm")
    values = {v["quantity"]: v["value"] for v in record["values"]}
    assert values["Q4 crossover named"] == "65536 B in 2 of 3; none in 1 of 3"
    assert values["pairs of consecutive runs where the first's 95% interval holds the next's ratio"] == "3 of 4"
    assert record["table"]["rows"][0][-2:] == ["1 of 2", "2 of 2"]

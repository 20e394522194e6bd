#!/usr/bin/env python3
"""make test: the suite in its phases, the retry as a safety net, and a record of what the retry rescued.

    .venv/bin/python tools/testsuite.py [--workers N] [--log output/make-test.jsonl]

1. `alone`: the tests that must have the host to themselves (`-m alone`: they measure its CPU load,
   or switch io_uring off for everyone), one after another, first (with --cache-clear: pytest's
   record of failures starts empty).
2. `shared`: every other test on N workers (`-n N --dist loadgroup`; the tests of one real sweep
   stay on one worker, tests/conftest.py).
3. `retry`, only when a test failed above: the failed tests (pytest's lastfailed cache) once more,
   one after another, with nothing beside them. The verdict is theirs: a test that passes alone is
   *rescued*, and the suite passes, but never silently.

Whatever happens, one summary line is printed last ("make test: retry: ...") and one JSON line is
appended to the log (default output/make-test.jsonl: git-ignored, kept by `make clean`, outside the
pytest cache that phase 1 clears): when, which commit, the phases' exit statuses and seconds, the
tests that failed beside the others, those the retry rescued and those that failed alone, and the
tests over the time limits without the `slow` marker (tests/conftest.py notes them; a line before
the last names them). A test
rescued is a bug to find (a race, a shared port, a clock, a load-sensitive bound): the log is how
it is found, and `tools/measurements.py from-test-runs` turns it into a measurement record
(docs/measurements/) that counts the runs that needed the retry. Exit status: 0 when nothing
failed, else the retry's.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LOG = ROOT / "output" / "make-test.jsonl"
LASTFAILED = Path(".pytest_cache") / "v" / "cache" / "lastfailed"  # pytest's cache layout, under the rootdir


def phases(workers: int) -> list[tuple[str, list[str]]]:
    return [("alone", ["--cache-clear", "-m", "alone"]),
            ("shared", ["-n", str(workers), "--dist", "loadgroup", "-m", "not alone"])]


# the failed tests by node id, the cache cleared first: afterwards it holds the retry's own failures only
RETRY = ["--cache-clear", "-ra"]
NO_TESTS = 5  # pytest's exit status when it collected no test


def collectable(nodeid: str) -> str:
    """A node id as pytest collects it. Under xdist's --dist loadgroup a grouped test fails as
    test_x.py::test_y@group, an id no collection holds: --last-failed then ran the whole suite again,
    one test after another."""
    head, sep, group = nodeid.rpartition("@")
    return head if sep and "::" in head and group and not any(c in group for c in "[]/:") else nodeid


def last_failed(root: Path = ROOT) -> list[str]:
    """The node ids pytest's cache holds as failed (its lastfailed file), as collectable, sorted."""
    try:
        data = json.loads((root / LASTFAILED).read_text())
    except (OSError, ValueError):
        return []
    return sorted({collectable(k) for k, v in data.items() if v}) if isinstance(data, dict) else []


NOTES_VAR = "COPYLAB_TEST_NOTES"  # tests/conftest.py appends each run's notes (tests over the time limits
                                  # without the `slow` marker) to this file


def run_pytest(python: str, args: list[str], root: Path = ROOT) -> tuple[int, float]:
    started = time.monotonic()
    status = subprocess.run([python, "-m", "pytest", *args], cwd=root).returncode
    return status, round(time.monotonic() - started, 1)


def suite(python: str, workers: int, root: Path = ROOT, runner=run_pytest) -> dict:
    """The phases run; the record of the run (see the module's docstring)."""
    with tempfile.TemporaryDirectory(prefix="copylab-testsuite-") as folder:
        notes = Path(folder) / "notes.jsonl"
        saved = os.environ.get(NOTES_VAR)
        os.environ[NOTES_VAR] = str(notes)
        try:
            record = _phases(python, workers, root, runner)
        finally:
            os.environ.pop(NOTES_VAR) if saved is None else os.environ.__setitem__(NOTES_VAR, saved)
        slow = set()
        for line in notes.read_text().splitlines() if notes.is_file() else []:
            with contextlib.suppress(ValueError, AttributeError, TypeError):
                slow.update(json.loads(line).get("unmarked_slow", []))
        record["unmarked_slow"] = sorted(slow)
    return record


def _phases(python: str, workers: int, root: Path, runner) -> dict:
    record: dict = {"phases": []}
    for name, args in phases(workers):
        status, seconds = runner(python, args, root)
        status = 0 if status == NO_TESTS else status  # a phase with no test of its kind failed nothing
        record["phases"].append({"name": name, "status": status, "seconds": seconds})
    failed = [p for p in record["phases"] if p["status"] != 0]
    record["failed_beside_others"] = last_failed(root) if failed else []
    record["rescued"], record["failed_alone"] = [], []
    record["status"] = 0
    if failed:
        print("make test: the tests that failed above are run again, one after another, with nothing beside them:",
              flush=True)
        if record["failed_beside_others"]:
            status, seconds = runner(python, [*RETRY, *record["failed_beside_others"]], root)
        else:  # a phase failed without a failed test (a crash, a collection error): nothing to run again
            status, seconds = failed[0]["status"], 0.0
        record["phases"].append({"name": "retry", "status": status, "seconds": seconds})
        still = set(last_failed(root))
        record["failed_alone"] = [t for t in record["failed_beside_others"] if t in still]
        record["rescued"] = [t for t in record["failed_beside_others"] if t not in still]
        record["status"] = status
    return record


def summary(record: dict) -> str:
    """The one line make test ends with."""
    rescued, alone = record["rescued"], record["failed_alone"]
    if not any(p["status"] for p in record["phases"] if p["name"] != "retry"):
        return "make test: retry: none needed (every test passed beside the others)"
    if record["status"] == 0 and rescued:
        return (f"make test: retry: RESCUED {len(rescued)} test{'s' * (len(rescued) != 1)} that failed beside "
                f"the others and passed alone (a race, a shared resource or a load-sensitive bound to find): "
                + ", ".join(rescued))
    if record["status"] == 0:
        return "make test: retry: a phase failed without a failed test (named above), and nothing failed alone"
    return (f"make test: retry: FAILED alone too: {', '.join(alone) if alone else 'not a test (see above)'}"
            + (f"; rescued: {', '.join(rescued)}" if rescued else ""))


def describe(root: Path = ROOT) -> dict:
    """Where and when: UTC time, the commit, the host's name and CPU count."""
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True,
                            text=True).stdout.strip()
    return {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "commit": commit or None, "host": platform.node(), "cpus": os.cpu_count(),
            "ci": bool(os.environ.get("CI"))}


def append(log: Path, record: dict) -> None:
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "a") as handle:
        handle.write(json.dumps(record, sort_keys=True) + "\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2 * (os.cpu_count() or 1))
    parser.add_argument("--log", type=Path, default=LOG)
    parser.add_argument("--root", type=Path, default=ROOT, help="the project whose tests run (default: this one)")
    args = parser.parse_args()
    started = time.monotonic()
    try:
        record = suite(sys.executable, args.workers, args.root.resolve())
    except KeyboardInterrupt:  # Ctrl-C reached pytest too (one process group): no verdict, no record
        print("make test: interrupted", file=sys.stderr)
        return 130
    record = {**describe(args.root), "workers": args.workers, "seconds": round(time.monotonic() - started, 1),
              **record}
    line = summary(record)
    try:
        append(args.log, record)
        line += f" (recorded in {args.log})"
    except OSError as exc:
        line += f" (not recorded: {args.log}: {exc.strerror})"
    if record["unmarked_slow"]:  # make check runs them: its minute is spent there
        print(f"make test: {len(record['unmarked_slow'])} tests over the time limits without the `slow` marker: "
              + "; ".join(record["unmarked_slow"]), flush=True)
    print(line, flush=True)
    return record["status"]


if __name__ == "__main__":
    sys.exit(main())

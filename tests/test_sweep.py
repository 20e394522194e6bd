"""Papermill sweeps: one row and one executed notebook per point, provenance, resume, kill and re-run."""

from __future__ import annotations

import json
import os
import re
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pandas as pd
import pytest
import yaml
from conftest import ROOT, benchmark_processes, copylab_namespaces, run_copylab, start_sweep
from copylab.contract import REQUIRED_COLUMNS
from copylab.params import load_grid, parse_grid
from faults import (
    TINY_GRID,
    UNPRIVILEGED,
    assert_one_line_error,
    cmdline,
    dead_pid,
    descendants,
    env_with,
    folder_state,
    grid_file,
    make_namespace,
    path_without,
    small_tmpfs,
    sweep,
)

QUICK = ROOT / "params" / "quick.yaml"


def test_quick_sweep_has_one_row_per_point_and_a_notebook_per_group(quick_sweep_dir: Path):
    grid = load_grid(QUICK)
    specs = grid.points("netns" if os.geteuid() == 0 else "loopback")
    results = pd.read_csv(quick_sweep_dir / "results.csv")
    profiles = pd.read_csv(quick_sweep_dir / "profiles.csv")
    assert list(results.columns[: len(REQUIRED_COLUMNS)]) == list(REQUIRED_COLUMNS)
    measured = [s for s in specs if not s.profile]
    # the statistics' runs in results.csv, the extra runs under perf record in profiles.csv
    assert len(results) == len(measured) and len(profiles) == len(specs) - len(measured) > 0
    assert (results["status"] == "ok").all(), results.loc[results["status"] != "ok", "error"].tolist()
    assert set(results["point_id"]) == {s.point_id() for s in measured}
    assert set(results["run_kind"]) == {"measure"} and set(profiles["run_kind"]) == {"profile"}
    # a side without samples says so, and so does a run with none on either side (a 0.2 s window on a
    # loaded host can close before perf record has attached to it); most runs have them
    for side, who in (("srv", "sender"), ("cli", "receiver")):
        empty = profiles[~profiles[f"{side}_prof_samples"].gt(0)]
        said = empty["profile_note"].astype(str)
        assert (said.str.contains(f"no samples of the {who}") | said.eq("perf record wrote no samples in the window")
                ).all(), empty
    assert profiles["srv_prof_samples"].gt(0).sum() >= len(profiles) / 2 and results["srv_prof_samples"].isna().all()
    assert (results["bytes"] > 0).all() and (results["throughput_gbps"] > 0).all()
    notebooks = set()
    for spec in specs:
        # the record's file name encodes every parameter; the record names the notebook that measured it
        record = json.loads((quick_sweep_dir / "runs" / f"{spec.point_id()}.json").read_text())
        for part in (spec.impl, spec.mode, f"{spec.msg_size}B", f"{spec.threads}thr", f"rep{spec.rep}"):
            assert part in spec.point_id()
        assert record["row"]["point_id"] == spec.point_id()
        notebook = quick_sweep_dir / record["notebook"]
        assert notebook.is_file(), notebook
        notebooks.add(notebook)
    assert 1 < len(notebooks) < len(specs), "points are measured in groups, one notebook per group"
    for notebook in notebooks:
        executed = nbformat.read(notebook, as_version=4)
        injected = [c for c in executed.cells if "injected-parameters" in c.metadata.get("tags", [])]
        assert injected and "points = [" in injected[0].source
        outputs = "".join(o.get("text", "") for c in executed.cells if c.cell_type == "code"
                          for o in c.get("outputs", []))
        assert "[server] $ " in outputs and "[client] $ " in outputs, "the program output must be in the record"
        measured_here = [s for s in specs if s.point_id() in outputs]
        assert measured_here and f'"impl": "{measured_here[0].impl}"' in injected[0].source
    meta = json.loads((quick_sweep_dir / "meta.json").read_text())
    for key in ("kernel", "cpu_model", "cores", "perf_events", "cycles_source", "params", "started_at",
                "finished_at", "git_revision", "compiler", "tcp_wmem", "optmem_max"):
        assert key in meta, key
    assert meta["params"]["name"] == "quick"
    build = nbformat.read(quick_sweep_dir / "build.ipynb", as_version=4)
    assert any("%%bash" in c.source for c in build.cells if c.cell_type == "code")


def test_quick_sweep_records_other_programs_cpu_share(quick_sweep_dir: Path):
    """Each group's share of the CPUs other programs used is in sweep.log, the session's summary in
    meta.json (the report's configuration states it)."""
    meta = json.loads((quick_sweep_dir / "meta.json").read_text())
    load = meta["sessions"][0]["host_load"]
    assert load["groups"] >= 2 and 0 <= load["other_cpu_share"] <= load["other_cpu_share_max"] <= 1
    lines = [line for line in (quick_sweep_dir / "sweep.log").read_text().splitlines()
             if "other programs used" in line and "% of the CPU time" in line]
    assert len(lines) >= load["groups"]
    assert all("runs set aside (CPUs apart)" in line for line in lines)


def test_quick_sweep_says_why_its_unpinned_points_were_not_placed(quick_sweep_dir: Path):
    """The quick grid pins nothing, so no run is probed for the vCPUs' placement, and each row says why."""
    results = pd.read_csv(quick_sweep_dir / "results.csv", keep_default_na=False)
    assert set(results["placement_note"]) == {"not probed: the sides are not both pinned"}
    assert set(results["cpu_round_trip_ns"]) == {""} and not (quick_sweep_dir / "runs" / "apart").exists()


@pytest.mark.slow
def test_second_run_skips_finished_points_and_keeps_results(quick_sweep_dir: Path):
    before = (quick_sweep_dir / "results.csv").read_bytes()
    records = sorted((quick_sweep_dir / "runs").glob("*.json"))
    mtimes = [p.stat().st_mtime_ns for p in records]
    untouched = {name: (quick_sweep_dir / name).stat().st_mtime_ns for name in ("build.ipynb", "perf_plan.json")}
    proc = run_copylab("sweep", str(QUICK), "--out", str(quick_sweep_dir), "--no-progress", timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "0 measured" in proc.stdout and "already measured" in proc.stderr
    assert (quick_sweep_dir / "results.csv").read_bytes() == before
    assert [p.stat().st_mtime_ns for p in records] == mtimes, "a finished point was measured again"
    # nothing left to measure: nothing is built or probed (a resume took 20-33 s of building)
    assert {name: (quick_sweep_dir / name).stat().st_mtime_ns for name in untouched} == untouched


def _still_running(patience_s: float = 10.0) -> list[str]:
    """This worker's benchmark programs and perf processes still running once patience_s has passed
    (a SIGKILL'd parent's children get theirs within milliseconds; a loaded host, a little later)."""
    from conftest import is_ours

    deadline = time.monotonic() + patience_s
    while True:
        perf = [cmdline(int(e.name)) for e in Path("/proc").iterdir() if e.name.isdigit()
                and _exe(e).endswith("/perf") and is_ours(int(e.name))]
        left = benchmark_processes() + perf
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.1)


def _exe(entry: Path) -> str:
    try:
        return os.readlink(entry / "exe")
    except OSError:
        return ""


def _small_grid(tmp_path: Path, name: str) -> Path:
    grid = {"name": name, "impls": ["a1", "a2", "a3"], "modes": ["throughput"], "msg_sizes": [1024, 65536],
            "threads": [1, 2], "duration_s": 0.2, "warmup_s": 0.05, "profile": False}
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(grid))
    return path


@pytest.mark.root
@pytest.mark.network
@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGKILL, signal.SIGINT])
def test_sweep_stopped_half_way_then_resumed_ends_complete(tmp_path, native_build, signum):
    params = _small_grid(tmp_path, "resume")
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-m", "copylab", "sweep", str(params), "--out", str(out),
                             "--no-progress"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    deadline = time.monotonic() + 120
    while len(list((out / "runs").glob("*.json"))) < 4 and time.monotonic() < deadline:
        time.sleep(0.05)
    finished_before = {p.name: p.read_bytes() for p in (out / "runs").glob("*.json")}
    assert len(finished_before) >= 4, "the sweep did not get going"
    os.killpg(proc.pid, signum)  # the whole group: driver and its kernel, as a terminal's Ctrl-C does
    proc.communicate(timeout=60)
    assert proc.returncode != 0
    # issue 46: after kill -9, perf stat and the server (their own process groups) ran on until the next
    # sweep; now each dies with the process that started it (sides.PARENT_DEATH), before any command
    assert not _still_running(), "left running after the sweep was killed"
    if signum == signal.SIGINT:
        assert not [ns for ns in copylab_namespaces() if ns.startswith(f"copylab-{proc.pid}-")]
    rerun = run_copylab("sweep", str(params), "--out", str(out), "--no-progress", timeout=300)
    assert rerun.returncode == 0, rerun.stderr
    results = pd.read_csv(out / "results.csv")
    assert len(results) == 12 and (results["status"] == "ok").all()
    for name, content in finished_before.items():
        assert (out / "runs" / name).read_bytes() == content, f"{name} was lost or re-measured"
    assert not copylab_namespaces() and not benchmark_processes()


@pytest.mark.slow
@pytest.mark.network  # the first sweep may open its namespaces before the SIGINT reaches it
def test_two_sweeps_cannot_write_one_folder(tmp_path, native_build):
    params = _small_grid(tmp_path, "locked")
    out = tmp_path / "out"
    first = subprocess.Popen([sys.executable, "-m", "copylab", "sweep", str(params), "--out", str(out),
                              "--no-progress"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not (out / ".lock").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    second = run_copylab("sweep", str(params), "--out", str(out), "--no-progress", timeout=60)
    first.send_signal(signal.SIGINT)
    first.communicate(timeout=60)
    assert second.returncode == 2 and "another sweep is writing" in second.stderr


# ------------------------------------------------------------------------------------------------
# a folder is a sweep's, and a sweep's points come from one build (issue 23)

TINY = {"name": "tiny", "impls": ["a1"], "modes": ["throughput"], "msg_sizes": [4096], "threads": [1],
        "duration_s": 0.2, "warmup_s": 0.1, "profile": False, "topology": "loopback"}


def _grid(tmp_path: Path, **changes) -> Path:
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump({**TINY, **changes}))
    return path


@pytest.mark.slow
def test_out_into_a_users_folder_that_is_not_a_sweep_is_refused(tmp_path):
    out = tmp_path / "thesis"
    out.mkdir()
    (out / "thesis.tex").write_text("\\documentclass{article}\n")
    (out / "results.csv").write_text("my,own,results\n1,2,3\n")
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    proc = run_copylab("sweep", str(_grid(tmp_path)), "--out", str(out), "--no-progress", timeout=120)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "not empty and not a copylab sweep" in lines[0], proc.stderr
    assert "results.csv" in lines[0] and "thesis.tex" in lines[0]
    after = {p.name: p.read_bytes() for p in out.iterdir() if p.name != ".lock"}
    assert after == before
    restart = run_copylab("sweep", str(_grid(tmp_path)), "--out", str(out), "--restart", timeout=120)
    assert restart.returncode == 2 and "not a copylab sweep" in restart.stderr
    assert {p.name: p.read_bytes() for p in out.iterdir() if p.name != ".lock"} == before


@pytest.mark.slow
@pytest.mark.network  # its sweeps remove the dead runs' namespaces they find, another worker's too
def test_a_resume_refuses_points_of_another_build_unless_asked(tmp_path, native_build):
    from copylab import buildinfo

    params, out = _grid(tmp_path, impls=["a1", "a2"], ai_declaration=str(_declaration(tmp_path))), tmp_path / "out"
    first = run_copylab("sweep", str(params), "--out", str(out), "--no-progress", timeout=300)
    assert first.returncode == 0, first.stderr
    records = sorted((out / "runs").glob("*.json"))
    rows = [json.loads(p.read_text())["row"] for p in records]
    assert {r["build_id"] for r in rows} == {buildinfo.build_id()}
    assert pd.read_csv(out / "results.csv")["build_id"].tolist() == [buildinfo.build_id()] * 2
    # the declaration was read at sweep time and copied in; the path stays in meta.json as provenance
    assert (out / "ai_declaration.txt").read_text() == "AI-usage declaration: tiny.\n"
    # one finished point of another build (as after editing native/*.c and resuming)
    record = json.loads(records[0].read_text())
    record["row"]["build_id"] = "0123456789abcdef"
    records[0].write_text(json.dumps(record))
    before = {p.name: p.read_bytes() for p in (out / "runs").iterdir()}
    refused = run_copylab("sweep", str(params), "--out", str(out), "--no-progress", timeout=300)
    assert refused.returncode == 2 and "Traceback" not in refused.stderr, refused.stderr
    error = [line for line in refused.stderr.splitlines() if "error:" in line]
    assert len(error) == 1 and "1 finished point(s) were measured by another build of native/" in error[0]
    assert "0123456789abcdef" in error[0] and "--mixed-builds" in error[0] and "--force" in error[0]
    assert {p.name: p.read_bytes() for p in (out / "runs").iterdir()} == before
    kept = run_copylab("sweep", str(params), "--out", str(out), "--no-progress", "--mixed-builds", timeout=300)
    assert kept.returncode == 0 and "kept (--mixed-builds)" in kept.stderr, kept.stderr
    builds = pd.read_csv(out / "results.csv")["build_id"].tolist()
    assert sorted(builds) == sorted(["0123456789abcdef", buildinfo.build_id()])


def _declaration(tmp_path: Path) -> Path:
    path = tmp_path / "ai.txt"
    path.write_text("AI-usage declaration: tiny.")
    return path


def test_the_build_id_follows_the_sources_the_compiler_and_the_flags(tmp_path, monkeypatch):
    import shutil

    from copylab import buildinfo, hosts

    native = tmp_path / "native"
    shutil.copytree(ROOT / "native", native, ignore=shutil.ignore_patterns("build"))
    monkeypatch.setattr(hosts, "NATIVE_DIR", native)
    first = buildinfo.fingerprint()
    assert first == buildinfo.fingerprint() and len(first) == 16
    source = next(native.glob("*.c"))
    source.write_text(source.read_text() + "\n/* edited */\n")
    edited = buildinfo.fingerprint()
    assert edited != first
    monkeypatch.setenv("CFLAGS", "-march=native")
    assert buildinfo.fingerprint() not in (first, edited)


@pytest.mark.slow
@pytest.mark.alone  # it takes native/build/libnosleep.so away, which other workers' peers load
def test_a_fresh_clone_keeps_the_peer_whose_shim_the_build_makes(tmp_path, native_build):
    """On a fresh clone native/build/ is empty as the sweep starts: sockperf's points were left out
    as "libnosleep.so is missing" before the sweep's own build made it. The build comes first now."""
    shim = native_build / "libnosleep.so"
    shim.unlink()
    try:
        grid = _grid(tmp_path, impls=["a1"], modes=["latency"], msg_sizes=[64], threads=[1],
                     peers={"tools": ["sockperf"], "threads": [1], "repetitions": 1})
        proc = run_copylab("sweep", str(grid), "--out", str(tmp_path / "out"), "--no-progress", timeout=300)
    finally:
        if not shim.exists():  # the next tests need it whatever happened here
            subprocess.run(["make", "-C", str(ROOT / "native")], capture_output=True, check=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "left out" not in proc.stderr and shim.exists()
    rows = pd.read_csv(tmp_path / "out" / "results.csv")
    assert set(rows["impl"]) == {"a1", "sockperf"} and (rows["status"] == "ok").all()


# ------------------------------------------------------------------------------------------------
# one sweep under three faults at once: perf missing from PATH, a dead run's namespace, and a
# half-written record plus .pending debris from an earlier crash. Each test below checks one.

@pytest.fixture(scope="module")
def faulty_sweep(tmp_path_factory, native_build):
    tmp = tmp_path_factory.mktemp("faulty-sweep")
    params = tmp / "tiny.yaml"
    params.write_text(yaml.safe_dump(TINY_GRID))
    out = tmp / "out"
    runs = out / "runs"
    (runs / ".pending").mkdir(parents=True)
    (runs / ".pending" / "a1_half.ipynb").write_text('{"cells": [')  # what a crash mid-point leaves
    a1 = next(p for p in parse_grid(TINY_GRID).points("netns") if p.impl == "a1")
    half_record = runs / f"{a1.point_id()}.json"
    half_record.write_text('{"row": {"status": "ok", "impl": "a1"')  # truncated: must be re-measured
    # what a full disk left before issue 46: an earlier session's notebook and a run set aside, cut off
    (runs / "group-s0-0001.ipynb").write_text('{"cells": [{"cell_type": "code", "source": "x')
    (runs / "apart").mkdir()
    (runs / "apart" / f"{a1.point_id()}.0.json").write_text('{"row": {"status": "ok"')
    leftover = f"copylab-{dead_pid()}-abc123-srv"
    make_namespace(leftover)
    # a program an earlier, killed session left running in its own process group, registered by its point
    orphan = subprocess.Popen(["sleep", "600"], start_new_session=True)
    (out / ".work" / "a1_point").mkdir(parents=True)
    (out / ".work" / "a1_point" / "process-groups").write_text(f"{orphan.pid}\n")
    try:
        proc = run_copylab("sweep", str(params), "--out", str(out), "--no-progress", timeout=300,
                           env=env_with(PATH=path_without(tmp, "perf")))
    finally:
        subprocess.run(["ip", "netns", "del", leftover], capture_output=True)  # if the sweep did not
        orphan_status = orphan.poll()  # what the sweep did to it (None: still running)
        orphan.kill()
        orphan.wait()
    return {"proc": proc, "out": out, "leftover": leftover, "half_record": half_record, "a1": a1.point_id(),
            "orphan": (orphan.pid, orphan_status)}


@pytest.mark.root
@pytest.mark.network
@pytest.mark.slow
def test_sweep_without_perf_on_path_still_gives_rows_with_the_reason(faulty_sweep):
    proc, out = faulty_sweep["proc"], faulty_sweep["out"]
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "perf is not installed" in proc.stderr, "the sweep must say up front that counters will be empty"
    results = pd.read_csv(out / "results.csv")
    assert len(results) == 2 and (results["status"] == "ok").all(), results["error"].tolist()
    assert (results["bytes"] > 0).all()
    assert results["cycles"].isna().all() and results["context_switches"].isna().all()
    assert results["counters_note"].str.contains("perf is not installed").all()


@pytest.mark.slow
@pytest.mark.network
@pytest.mark.root
def test_sweep_removes_a_dead_runs_namespace(faulty_sweep):
    assert f"removed namespace {faulty_sweep['leftover']}" in faulty_sweep["proc"].stderr
    assert faulty_sweep["leftover"] not in copylab_namespaces()


@pytest.mark.slow
@pytest.mark.network
@pytest.mark.root
def test_the_next_sweep_stops_what_a_killed_one_left_running_and_says_so(faulty_sweep):
    pid, status = faulty_sweep["orphan"]
    assert status == -signal.SIGKILL, "the sweep did not stop the program its earlier session registered"
    said = " ".join(faulty_sweep["proc"].stderr.split())
    assert f"stopped 1 program(s) an earlier crashed run left running (process groups {pid})" in said, said


@pytest.mark.slow
@pytest.mark.network
@pytest.mark.root
def test_sweep_remeasures_a_half_written_record(faulty_sweep):
    record = json.loads(faulty_sweep["half_record"].read_text())  # whole JSON now
    assert record["row"]["status"] == "ok" and record["row"]["bytes"] > 0
    assert not (faulty_sweep["out"] / "runs" / ".pending").exists(), "crash debris must be cleared"


@pytest.mark.slow
@pytest.mark.network
@pytest.mark.root
def test_a_resume_removes_what_an_earlier_session_left_cut_off_and_says_so(faulty_sweep):
    """A group's notebook cut off mid-JSON was kept by every later resume: records that are not whole
    are removed (a point's measured again), in one line naming them."""
    runs, a1 = faulty_sweep["out"] / "runs", faulty_sweep["a1"]
    assert not (runs / "group-s0-0001.ipynb").exists() and not (runs / "apart" / f"{a1}.0.json").exists()
    said = " ".join(faulty_sweep["proc"].stderr.split())  # the sweep's lines are wrapped to the terminal
    assert (f"copylab sweep: removed 3 file(s) an earlier session left cut off mid-write (runs/{a1}.json, "
            f"runs/apart/{a1}.0.json, runs/group-s0-0001.ipynb); 1 point(s) among them measured again") in said, said
    for notebook in runs.glob("*.ipynb"):
        assert json.loads(notebook.read_text())["cells"]


# ------------------------------------------------------------------------------------------------
# file-system faults: one line naming the path and the cause

@pytest.mark.root
def test_output_folder_on_a_read_only_file_system(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", str(ro)], check=True)
    try:
        proc = sweep(grid_file(tmp_path), ro / "out", timeout=60)
    finally:
        subprocess.run(["umount", str(ro)], check=True)
    assert_one_line_error(proc, "Read-only file system")


@pytest.mark.root
def test_output_name_longer_than_the_file_system_allows(tmp_path):
    proc = sweep(grid_file(tmp_path), tmp_path / ("x" * 300), timeout=60)
    assert_one_line_error(proc, "File name too long")


@pytest.mark.root
def test_a_file_where_runs_should_be_a_folder(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "runs").write_text("not a folder\n")
    before = folder_state(out)
    proc = sweep(grid_file(tmp_path), out, timeout=120)
    assert_one_line_error(proc, "is not a folder")
    assert folder_state(out)["runs"] == before["runs"]


@pytest.mark.slow
def test_unreadable_meta_json_of_another_user(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "meta.json").write_text("{}")
    (out / "meta.json").chmod(0)
    # congestion host: an unprivileged program may not pick every congestion control on every host
    proc = subprocess.run([*UNPRIVILEGED, sys.executable, "-m", "copylab", "sweep", str(grid_file(tmp_path, congestion=["host"])),
                           "--out", str(out), "--no-progress"], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert_one_line_error(proc, "meta.json")


@pytest.mark.root
def test_corrupt_meta_json_on_resume_is_one_line(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "meta.json").write_text('{"started_at": "2026-')
    proc = sweep(grid_file(tmp_path), out, timeout=60)
    assert_one_line_error(proc, "meta.json")
    assert "--restart" in proc.stderr


@pytest.mark.slow
@pytest.mark.root
def test_disk_full_mid_sweep_keeps_what_was_finished(tmp_path, native_build):
    small = tmp_path / "small"
    small.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=160k", "tmpfs", str(small)], check=True)
    try:
        params = grid_file(tmp_path, msg_sizes=[64, 256, 1024, 4096, 16384, 65536], repetitions=3)
        proc = sweep(params, small / "out", timeout=300)
        records = [json.loads(p.read_text()) for p in (small / "out" / "runs").glob("*.json")]
        notebooks = {p.name: p.read_bytes() for p in (small / "out" / "runs").glob("*.ipynb")}
        meta = json.loads((small / "out" / "meta.json").read_text())
        left = sorted(p.name for p in (small / "out").iterdir())
    finally:
        subprocess.run(["umount", str(small)], check=True)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert "No space left on device" in last and str(small / "out") in last, last
    assert all(r["row"]["status"] in ("ok", "failed") for r in records), "a record on disk is whole or absent"
    # issue 46: a group's notebook was moved into place cut off mid-JSON, and meta.json still said running
    for name, data in notebooks.items():
        assert json.loads(data)["cells"], f"runs/{name} was put in place cut off"
    assert meta["status"] == "failed" and "No space left on device" in meta["sessions"][-1]["error"], meta["status"]
    assert ".meta-reserve" not in left and ".pending" not in left, left
    assert not benchmark_processes()


@pytest.mark.root
def test_meta_json_is_closed_on_a_disk_filled_to_the_last_byte(tmp_path):
    """The room meta.json's last write needs is kept from the session's start and given back then."""
    from copylab.sweep.meta import RESERVE, SweepMeta

    with small_tmpfs(tmp_path / "small", "256k") as small:
        meta = SweepMeta(small / "meta.json", {}, {"params": {"name": "x" * 20_000}})
        meta.open_session(to_measure=3)
        assert (small / RESERVE).stat().st_size > 0
        with open(small / "filler", "wb", buffering=0) as filler, pytest.raises(OSError, match="No space left"):
            while True:
                filler.write(bytes(4096))
                filler.flush()
        with pytest.raises(OSError, match="No space left"):
            meta.update(placement={"why": "y" * 20_000})
        meta.close("failed", error="No space left on device (ENOSPC)")
        closed = json.loads((small / "meta.json").read_text())
        left = sorted(p.name for p in small.iterdir())
    assert closed["status"] == "failed" and closed["sessions"][-1]["error"] == "No space left on device (ENOSPC)"
    assert left == ["filler", "meta.json"]


# ------------------------------------------------------------------------------------------------
# the notebook kernel killed mid-point: that point fails within its deadline, the sweep goes on



@pytest.mark.network
@pytest.mark.slow
@pytest.mark.root
def test_killed_kernel_fails_its_point_and_the_sweep_goes_on(tmp_path, native_build):
    params = grid_file(tmp_path, impls=["a1", "a2", "a3"], msg_sizes=[4096, 65536], duration_s=1.0,
                       topology="netns")
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-m", "copylab", "sweep", str(params), "--out", str(out), "--no-progress"],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not list((out / "runs").glob("*.json")) and time.monotonic() < deadline:
        time.sleep(0.1)
    kernels = [p for p in descendants(proc.pid) if "ipykernel" in cmdline(p)]
    assert kernels, "no notebook kernel found"
    os.kill(kernels[0], signal.SIGKILL)
    stdout, stderr = proc.communicate(timeout=240)  # a sweep that waited on its dead kernel would outlast it
    rows = [json.loads(p.read_text())["row"] for p in (out / "runs").glob("*.json")]
    died = [r for r in rows if r["error_kind"] == "kernel_died"]
    assert len(died) == 1, [(r["point_id"], r["status"], r["error"]) for r in rows]
    assert sum(r["status"] == "ok" for r in rows) == 5, "the other points must still be measured"
    assert "Traceback" not in stderr
    assert not benchmark_processes() and not [n for n in copylab_namespaces() if n.startswith(f"copylab-{proc.pid}-")]


# ------------------------------------------------------------------------------------------------
# signals: the bookkeeping is finished exactly once, whatever follows

@pytest.mark.network
@pytest.mark.slow
@pytest.mark.root
# each ending signal once, and a burst of one (signals.ENDING share one handler: a burst of SIGHUP
# repeated the SIGTERMs' path, 9 s of the suite)
@pytest.mark.parametrize("signum, count", [(signal.SIGTERM, 1), (signal.SIGTERM, 3), (signal.SIGHUP, 1),
                                           (signal.SIGQUIT, 1)],
                         ids=["one SIGTERM", "three SIGTERMs", "one SIGHUP", "one SIGQUIT"])
def test_an_ending_signal_mid_sweep_closes_the_books(tmp_path, native_build, signum, count):
    """SIGHUP (a closed terminal, a dropped ssh connection) and SIGQUIT (Ctrl-\\) close the books as
    SIGTERM does; SIGHUP used to end the driver at once with its namespaces and programs left."""
    params = grid_file(tmp_path, impls=["a1", "a2", "a3"], msg_sizes=[1024, 4096, 65536], duration_s=0.5,
                       topology="netns")
    out = tmp_path / "out"
    proc = start_sweep(params, out, records=2)
    for _ in range(count):
        proc.send_signal(signum)
        time.sleep(0.05)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130 and "Traceback" not in stderr, stderr
    assert stderr.strip().splitlines()[-1].endswith("interrupted")
    meta = json.loads((out / "meta.json").read_text())
    assert meta["status"] == "interrupted" and meta["finished_at"] and meta["sessions"][-1]["status"] == "interrupted"
    assert not (out / ".pending").exists() and not (out / ".work").exists()
    assert not [n for n in copylab_namespaces() if n.startswith(f"copylab-{proc.pid}-")]
    assert not benchmark_processes()
    assert not [p for p in descendants(os.getpid()) if "ipykernel" in cmdline(p)], "the kernel was orphaned"


# ------------------------------------------------------------------------------------------------
# data that silently changes

@pytest.mark.slow
def test_a_folder_belongs_to_its_grid(tmp_path, native_build):
    out = tmp_path / "out"
    first = sweep(grid_file(tmp_path, "a.yaml"), out)
    assert first.returncode == 0, first.stderr
    assert "points, about" in first.stderr, "the estimate is printed before the sweep starts"
    finished = folder_state(out)
    other = grid_file(tmp_path, "b.yaml", msg_sizes=[1024])
    refused = sweep(other, out, timeout=60)
    assert refused.returncode == 2
    assert_one_line_error(refused, "different grid")
    assert folder_state(out) == finished, "a refused grid must not touch the finished sweep"
    restarted = sweep(other, out, "--restart")
    assert restarted.returncode == 0, restarted.stderr
    aside = [p for p in tmp_path.iterdir() if p.name.startswith("out.superseded-")]
    assert len(aside) == 1 and (aside[0] / "results.csv").read_bytes() == finished["results.csv"]


@pytest.mark.network
@pytest.mark.slow
@pytest.mark.root
def test_output_folder_deleted_mid_sweep_stops_without_recreating_it(tmp_path, native_build):
    import shutil

    params = grid_file(tmp_path, impls=["a1", "a2", "a3"], msg_sizes=[1024, 4096, 65536], duration_s=0.5,
                       topology="netns")
    out = tmp_path / "out"
    proc = start_sweep(params, out, records=1)
    assert proc.poll() is None, "the sweep ended before its first point"
    # as a user does: rm -rf, again if the sweep wrote a file into it meanwhile ("Directory not empty")
    deadline = time.monotonic() + 30
    while out.exists() and time.monotonic() < deadline:
        shutil.rmtree(out, ignore_errors=True)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode != 0 and "Traceback" not in stderr
    assert "removed during the sweep" in stderr.strip().splitlines()[-1]
    assert not out.exists(), "the sweep must not recreate a folder the user removed"
    assert not benchmark_processes()


@pytest.mark.slow
def test_results_are_readable_by_others_and_relative_paths_work(tmp_path, native_build):
    grid_file(tmp_path)
    out = tmp_path / "out"
    # paths relative to where the user stands (papermill changes the working folder while it runs)
    proc = subprocess.run([sys.executable, "-m", "copylab", "sweep", "grid.yaml", "--out", "out", "--no-progress"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert len(list((out / "runs").glob("*.json"))) == 2
    for path in [out / "results.csv", out / "meta.json", *(out / "runs").glob("*.json")]:
        assert stat.S_IMODE(path.stat().st_mode) & 0o044 == 0o044, f"{path} is not readable by others"


@pytest.mark.root
@pytest.mark.network
@pytest.mark.slow
def test_a_sweep_into_a_pipe_fits_80_columns_with_one_count_and_the_next_command(tmp_path, native_build):
    """No terminal (stdout and stderr are pipes): plain progress lines, every line within 80 columns,
    the same number of points on the grid line, the sweep line and the progress, and the commands
    that come next as the last line."""
    _small_grid(tmp_path, "pipe")
    # where a user stands: the folders it names are relative to it (a long absolute path is as long as it is)
    proc = subprocess.run([sys.executable, "-m", "copylab", "sweep", "pipe.yaml", "--out", "out"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines() + proc.stderr.splitlines()
    assert all(len(line) <= 80 and "\r" not in line for line in lines), max(lines, key=len)
    counts = {int(n) for n in re.findall(r"(?:grid pipe:|sweep pipe:) (\d+) points", proc.stderr)}
    counts |= {int(n) for n in re.findall(r"\d+/(\d+) points, \d+ failed", proc.stderr)}
    assert counts == {12}, proc.stderr
    assert re.search(r"copylab sweep: 12/12 points, 0 failed, 00:00 left: ", proc.stderr), proc.stderr
    assert proc.stdout.splitlines()[-2:] == ["next: copylab report out", "  or: make lab RESULTS=out"]


@pytest.mark.slow
def test_the_sweeps_kernel_talks_over_unix_sockets_in_a_private_folder(tmp_path):
    """As make lab's kernels: ipc, not local TCP that any user could reach (and ipykernel's warning
    about it stays out of kernel.log); the sockets' folder goes with the kernel."""
    from copylab.sweep.kernel import WarmKernel, execute

    kernel = WarmKernel(cwd=tmp_path, log_path=tmp_path / "kernel.log")
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1", metadata={"tags": ["parameters"]}),
                                               nbformat.v4.new_code_cell("open('ran', 'w').write(str(x))")])
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(notebook, tmp_path / "in.ipynb")
    try:
        outcome = execute(tmp_path / "in.ipynb", tmp_path / "out.ipynb", {"x": 7}, kernel, timeout_s=60, cwd=tmp_path)
        assert outcome.ok, outcome.error
        assert (tmp_path / "ran").read_text() == "7"
        folder = kernel.ipc_dir
        connection = json.loads((folder / "kernel.json").read_text())
        assert connection["transport"] == "ipc" and connection["ip"].startswith(str(folder))
        assert stat.S_IMODE(folder.stat().st_mode) & 0o777 == 0o700  # (jupyter_client adds the sticky bit)
        assert any(p.is_socket() for p in folder.iterdir())
    finally:
        kernel.stop()
    assert not folder.exists()
    assert "TCP without encryption" not in (tmp_path / "kernel.log").read_text()


def test_an_ending_signal_during_the_kernels_shutdown_waits_until_it_is_done(tmp_path):
    """Three SIGTERMs mid-sweep once printed jupyter_client's half-done shutdown task ("Task exception was
    never retrieved") at exit: the second came inside the shutdown's event loop. The stop now holds ending
    signals until the kernel is gone, then delivers them."""
    import os
    import signal as sig

    from copylab import signals
    from copylab.sweep.kernel import WarmKernel

    steps = []

    class StandInManager:
        def shutdown_kernel(self, now=False):
            os.kill(os.getpid(), sig.SIGTERM)  # arrives mid-shutdown
            time.sleep(0.05)
            steps.append("shut down")

    kernel = WarmKernel(cwd=tmp_path, log_path=tmp_path / "kernel.log")
    kernel.km = StandInManager()
    old = sig.getsignal(sig.SIGTERM)
    signals.unwind_on_ending()
    try:
        with pytest.raises(KeyboardInterrupt):
            kernel.stop()
            steps.append("after stop")
    finally:
        sig.signal(sig.SIGTERM, old)
    assert steps == ["shut down"] and kernel.km is None  # finished, then the signal took effect


# ------------------------------------------------------------------------------------------------
# a sweep or a report that cannot start leaves nothing half made

@pytest.mark.slow
@pytest.mark.parametrize("home", ["/sys", "a-file"], ids=["HOME=/sys", "HOME a regular file"])
def test_a_home_the_kernels_cannot_write_fails_in_one_line_and_makes_nothing(tmp_path, home):
    """HOME=/sys failed in one line but left a results folder with results.csv, runs/, a lock and a
    kernel log behind (and blamed the results folder, or TMPDIR for a report)."""
    from data.analysis import synthetic

    if home == "a-file":
        home = str(tmp_path / "home-file")
        Path(home).write_text("not a folder\n")
    env = {k: v for k, v in os.environ.items() if k not in ("IPYTHONDIR", "JUPYTER_RUNTIME_DIR")}
    env["HOME"] = home
    out = tmp_path / "out"
    proc = run_copylab("sweep", str(grid_file(tmp_path)), "--out", str(out), "--no-progress", env=env, timeout=120)
    errors = [line for line in proc.stderr.splitlines() if "error:" in line]
    assert proc.returncode != 0 and "Traceback" not in proc.stderr and len(errors) == 1, proc.stderr
    assert f"HOME={home}" in errors[0] and "set HOME" in errors[0] and str(out) not in errors[0], errors[0]
    assert not out.exists(), sorted(p.name for p in out.iterdir())
    sweep_dir = synthetic.write_sweep(tmp_path / "sweep", reps=1)
    before = folder_state(sweep_dir)
    report_out = tmp_path / "report"
    proc = run_copylab("report", str(sweep_dir), "--output-dir", str(report_out), env=env, timeout=120)
    errors = [line for line in proc.stderr.splitlines() if "error:" in line]
    assert proc.returncode != 0 and len(errors) == 1 and f"HOME={home}" in errors[0], proc.stderr
    assert "TMPDIR" not in errors[0] and not report_out.exists() and folder_state(sweep_dir) == before

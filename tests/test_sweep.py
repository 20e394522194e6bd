"""Papermill sweeps: one row and one executed notebook per point, provenance, resume, kill and re-run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pandas as pd
import pytest
import yaml

from conftest import ROOT, benchmark_processes, copylab_namespaces, run_copylab
from copylab.params import load_grid
from copylab.contract import REQUIRED_COLUMNS

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
    assert profiles["srv_prof_samples"].gt(0).all() and results["srv_prof_samples"].isna().all()
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


def test_second_run_skips_finished_points_and_keeps_results(quick_sweep_dir: Path):
    before = (quick_sweep_dir / "results.csv").read_bytes()
    records = sorted((quick_sweep_dir / "runs").glob("*.json"))
    mtimes = [p.stat().st_mtime_ns for p in records]
    proc = run_copylab("sweep", str(QUICK), "--out", str(quick_sweep_dir), "--no-progress", timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "0 measured" in proc.stdout
    assert (quick_sweep_dir / "results.csv").read_bytes() == before
    assert [p.stat().st_mtime_ns for p in records] == mtimes, "a finished point was measured again"


def _small_grid(tmp_path: Path, name: str) -> Path:
    grid = {"name": name, "impls": ["a1", "a2", "a3"], "modes": ["throughput"], "msg_sizes": [1024, 65536],
            "threads": [1, 2], "duration_s": 0.2, "warmup_s": 0.05, "profile": False}
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(grid))
    return path


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
    if signum == signal.SIGINT:
        assert not [ns for ns in copylab_namespaces() if ns.startswith(f"copylab-{proc.pid}-")]
    rerun = run_copylab("sweep", str(params), "--out", str(out), "--no-progress", timeout=300)
    assert rerun.returncode == 0, rerun.stderr
    results = pd.read_csv(out / "results.csv")
    assert len(results) == 12 and (results["status"] == "ok").all()
    for name, content in finished_before.items():
        assert (out / "runs" / name).read_bytes() == content, f"{name} was lost or re-measured"
    assert not copylab_namespaces() and not benchmark_processes()


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

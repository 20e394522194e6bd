"""Reliability, second round (issue 16): hostile input, grids beyond reason, file-system faults, a dead
kernel, repeated signals, peers that are not copylab, data that changes under a sweep. Each class is
tried through its examples: non-zero exit where it is an error, one line naming the cause, no
traceback, nothing half-written, nothing lost, nothing left behind, no hang."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import yaml

from conftest import ROOT, benchmark_processes, copylab_namespaces, run_copylab, start_sweep
from copylab.errors import CopylabError
from copylab.params import load_grid
from copylab.point import WORKDIR_PREFIX
from native_helpers import client_argv
from test_reliability import UNPRIVILEGED, assert_one_line_error, folder_state

TINY = {"name": "tiny", "impls": ["a1", "a2"], "modes": ["throughput"], "msg_sizes": [4096], "threads": [1],
        "duration_s": 0.2, "warmup_s": 0.1, "profile": False, "topology": "loopback"}


def grid_file(tmp_path: Path, name: str = "grid.yaml", **changes) -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump({**TINY, **changes}))
    return path


def sweep(params: Path, out: Path, *extra: str, timeout: float = 300, **kw) -> subprocess.CompletedProcess:
    return run_copylab("sweep", str(params), "--out", str(out), "--no-progress", *extra, timeout=timeout, **kw)


# ------------------------------------------------------------------------------------------------
# hostile or absurd YAML: refused in one line, quickly, before anything exists

def _laughs(depth: int = 9) -> str:
    lines = ["name: x", "impls: [a1]", "modes: [throughput]", "msg_sizes: [64]", "threads: [1]",
             "a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    lines += [f"a{k}: &a{k} [" + ", ".join([f"*a{k - 1}"] * 9) + "]" for k in range(1, depth)]
    lines.append(f"description: *a{depth - 1}")
    return "\n".join(lines) + "\n"


HOSTILE = [
    ("duplicate key", "name: x\nimpls: [a4]\nimpls: [a1]\nmodes: [throughput]\nmsg_sizes: [64]\nthreads: [1]\n",
     "appears twice"),
    ("20 000 nested brackets", "name: x\nimpls: " + "[" * 20000 + "]" * 20000 + "\n", "nested deeper"),
    ("billion laughs in a text field", _laughs(), "aliases expand"),
    ("a file of 2 MiB", "description: " + "x" * (2 << 20) + "\n", "too large for a grid"),
    ("60 000 sizes then a bad key", yaml.safe_dump({**TINY, "msg_sizes": list(range(8, 60008)), "colour": 1}),
     "colour"),
    ("a key that is a list", "[a, b]: 1\nname: x\n", "not a plain value"),
]


@pytest.mark.parametrize("what,text,needle", HOSTILE, ids=[h[0] for h in HOSTILE])
def test_hostile_yaml_is_refused_quickly_in_one_line(tmp_path, what, text, needle):
    params = tmp_path / "grid.yaml"
    params.write_text(text)
    started = time.monotonic()
    proc = sweep(params, tmp_path / "out", timeout=60)
    assert time.monotonic() - started < 20, f"{what}: took too long to refuse"
    assert proc.returncode == 2
    assert_one_line_error(proc, needle)
    assert not (tmp_path / "out").exists()


# ------------------------------------------------------------------------------------------------
# grids beyond reason: an estimate, and a refusal past a day or the host's memory

@pytest.mark.parametrize("changes,needle", [
    ({"msg_sizes": list(range(8, 60008)), "threads": [1, 2], "duration_s": 2.0}, "more than 24 h"),
    ({"impls": ["a1", "a2", "a3"], "msg_sizes": list(range(64, 64 + 1000)), "threads": list(range(1, 1001)),
      "duration_s": 0.1}, "more than 24 h"),
    ({"impls": ["a1", "a3"], "msg_sizes": [64 << 20], "threads": [1024]}, "available"),
], ids=["60 000 points x 2 s", "a million points", "64 MiB x 1024 threads"])
def test_grids_beyond_reason_are_refused_unless_asked(tmp_path, changes, needle):
    params = grid_file(tmp_path, **changes)
    started = time.monotonic()
    proc = sweep(params, tmp_path / "out", timeout=60)
    assert time.monotonic() - started < 30
    assert proc.returncode == 2
    assert_one_line_error(proc, needle)
    assert "--allow-large" in proc.stderr and not (tmp_path / "out").exists()


# ------------------------------------------------------------------------------------------------
# file-system faults: one line naming the path and the cause

def test_output_folder_on_a_read_only_file_system(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", str(ro)], check=True)
    try:
        proc = sweep(grid_file(tmp_path), ro / "out", timeout=60)
    finally:
        subprocess.run(["umount", str(ro)], check=True)
    assert_one_line_error(proc, "Read-only file system")


def test_output_name_longer_than_the_file_system_allows(tmp_path):
    proc = sweep(grid_file(tmp_path), tmp_path / ("x" * 300), timeout=60)
    assert_one_line_error(proc, "File name too long")


def test_a_file_where_runs_should_be_a_folder(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "runs").write_text("not a folder\n")
    before = folder_state(out)
    proc = sweep(grid_file(tmp_path), out, timeout=120)
    assert_one_line_error(proc, "is not a folder")
    assert folder_state(out)["runs"] == before["runs"]


def test_unreadable_meta_json_of_another_user(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "meta.json").write_text("{}")
    (out / "meta.json").chmod(0)
    # congestion host: an unprivileged program may not pick every congestion control on every host
    proc = subprocess.run([*UNPRIVILEGED, sys.executable, "-m", "copylab", "sweep", str(grid_file(tmp_path, congestion=["host"])),
                           "--out", str(out), "--no-progress"], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert_one_line_error(proc, "meta.json")


def test_corrupt_meta_json_on_resume_is_one_line(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "meta.json").write_text('{"started_at": "2026-')
    proc = sweep(grid_file(tmp_path), out, timeout=60)
    assert_one_line_error(proc, "meta.json")
    assert "--restart" in proc.stderr


@pytest.mark.root
def test_disk_full_mid_sweep_keeps_what_was_finished(tmp_path, native_build):
    small = tmp_path / "small"
    small.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=160k", "tmpfs", str(small)], check=True)
    try:
        params = grid_file(tmp_path, msg_sizes=[64, 256, 1024, 4096, 16384, 65536], repetitions=3)
        proc = sweep(params, small / "out", timeout=300)
        records = [json.loads(p.read_text()) for p in (small / "out" / "runs").glob("*.json")]
    finally:
        subprocess.run(["umount", str(small)], check=True)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert "No space left on device" in last and str(small / "out") in last, last
    assert all(r["row"]["status"] in ("ok", "failed") for r in records), "a record on disk is whole or absent"
    assert not benchmark_processes()


# ------------------------------------------------------------------------------------------------
# the notebook kernel killed mid-point: that point fails within its deadline, the sweep goes on

def _descendants(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError, ValueError, IndexError):
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
                children.setdefault(ppid, []).append(int(entry.name))
    found, todo = [], list(children.get(pid, []))
    while todo:
        p = todo.pop()
        found.append(p)
        todo += children.get(p, [])
    return found


def _cmdline(pid: int) -> str:
    with contextlib.suppress(OSError):
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    return ""


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
    kernels = [p for p in _descendants(proc.pid) if "ipykernel" in _cmdline(p)]
    assert kernels, "no notebook kernel found"
    os.kill(kernels[0], signal.SIGKILL)
    killed_at = time.monotonic()
    stdout, stderr = proc.communicate(timeout=240)
    rows = [json.loads(p.read_text())["row"] for p in (out / "runs").glob("*.json")]
    died = [r for r in rows if r["error_kind"] == "kernel_died"]
    assert len(died) == 1, [(r["point_id"], r["status"], r["error"]) for r in rows]
    assert sum(r["status"] == "ok" for r in rows) == 5, "the other points must still be measured"
    assert "Traceback" not in stderr
    assert time.monotonic() - killed_at < 200
    assert not benchmark_processes() and not [n for n in copylab_namespaces() if n.startswith(f"copylab-{proc.pid}-")]


# ------------------------------------------------------------------------------------------------
# signals: the bookkeeping is finished exactly once, whatever follows

@pytest.mark.root
@pytest.mark.parametrize("signals", [1, 3], ids=["one SIGTERM", "three SIGTERMs"])
def test_sigterm_mid_sweep_closes_the_books(tmp_path, native_build, signals):
    params = grid_file(tmp_path, impls=["a1", "a2", "a3"], msg_sizes=[1024, 4096, 65536], duration_s=0.5,
                       topology="netns")
    out = tmp_path / "out"
    proc = start_sweep(params, out, records=2)
    for _ in range(signals):
        proc.send_signal(signal.SIGTERM)
        time.sleep(0.05)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130 and "Traceback" not in stderr, stderr
    assert stderr.strip().splitlines()[-1].endswith("interrupted")
    meta = json.loads((out / "meta.json").read_text())
    assert meta["status"] == "interrupted" and meta["finished_at"] and meta["sessions"][-1]["status"] == "interrupted"
    assert not (out / ".pending").exists() and not (out / ".work").exists()
    assert not [n for n in copylab_namespaces() if n.startswith(f"copylab-{proc.pid}-")]
    assert not benchmark_processes()
    assert not [p for p in _descendants(os.getpid()) if "ipykernel" in _cmdline(p)], "the kernel was orphaned"


def test_sigterm_during_report_leaves_no_temporary_notebook(tmp_path):
    from data.analysis import synthetic

    folder = synthetic.write_sweep(tmp_path / "sweep")
    before = folder_state(folder)
    proc = subprocess.Popen([sys.executable, "-m", "copylab", "report", str(folder)], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not [p for p in _descendants(proc.pid) if "ipykernel" in _cmdline(p)] and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(1.0)  # inside the analysis notebook
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130 and "Traceback" not in stderr, stderr
    assert stderr.strip().splitlines()[-1].endswith("interrupted")
    assert not [p for p in _descendants(os.getpid()) if "ipykernel" in _cmdline(p)], "the kernel was orphaned"
    left = set(folder_state(folder)) - set(before)
    assert not [name for name in left if "tmp" in name], left


# ------------------------------------------------------------------------------------------------
# peers that are not copylab: the native client gives up in one line

def _silent_server(reply: bytes | None):
    """A TCP server that accepts and then says nothing (reply None) or something that is not copylab."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    conns = []

    def serve():
        with contextlib.suppress(OSError):
            while True:
                conn, _ = server.accept()
                conns.append(conn)
                if reply is not None:
                    conn.recv(64)
                    conn.sendall(reply)

    threading.Thread(target=serve, daemon=True).start()
    return server, conns


@pytest.mark.parametrize("reply,needle", [
    (None, "did not answer"),
    (b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n", "not a copylab server"),
], ids=["accepts and never answers", "an HTTP server"])
def test_client_against_a_peer_that_is_not_copylab(native_build, reply, needle):
    server, conns = _silent_server(reply)
    try:
        started = time.monotonic()
        proc = subprocess.run(client_argv("127.0.0.1", server.getsockname()[1], "throughput", 4096, threads=1,
                                          duration=1, warmup=0), capture_output=True, text=True, timeout=30)
    finally:
        server.close()
        for conn in conns:
            conn.close()
    assert time.monotonic() - started < 15
    assert proc.returncode == 1 and proc.stdout == ""
    assert len(proc.stderr.strip().splitlines()) == 1 and needle in proc.stderr, proc.stderr


# ------------------------------------------------------------------------------------------------
# data that silently changes

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


@pytest.mark.root
def test_output_folder_deleted_mid_sweep_stops_without_recreating_it(tmp_path, native_build):
    import shutil

    params = grid_file(tmp_path, impls=["a1", "a2", "a3"], msg_sizes=[1024, 4096, 65536], duration_s=0.5,
                       topology="netns")
    out = tmp_path / "out"
    proc = start_sweep(params, out, records=1)
    assert proc.poll() is None, "the sweep ended before its first point"
    shutil.rmtree(out)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode != 0 and "Traceback" not in stderr
    assert "removed during the sweep" in stderr.strip().splitlines()[-1]
    assert not out.exists(), "the sweep must not recreate a folder the user removed"
    assert not benchmark_processes()


def test_report_over_a_table_without_any_throughput(tmp_path):
    from data.analysis import synthetic

    import pandas as pd

    folder = synthetic.write_sweep(tmp_path / "sweep", reps=1)
    table = pd.read_csv(folder / "results.csv")
    table["throughput_gbps"] = float("nan")
    table.to_csv(folder / "results.csv", index=False)
    from copylab import analysis

    df, meta = analysis.load_results(folder)
    doc = analysis.answers(df, meta)
    assert set(df["mode"]) == {"latency"} and df.attrs["rows_empty"] > 0
    assert doc["q4_one_copy_vs_two_copy"]["reason"] and doc["q4_one_copy_vs_two_copy"]["crossover_bytes"] is None


def test_answers_over_zero_successful_rows_say_so(tmp_path):
    from data.analysis import synthetic

    import pandas as pd

    from copylab import analysis

    folder = synthetic.write_sweep(tmp_path / "sweep", reps=1)
    table = pd.read_csv(folder / "results.csv")
    table["status"] = "failed"
    table.to_csv(folder / "results.csv", index=False)
    df, meta = analysis.load_results(folder)
    doc = analysis.answers(df, meta)
    for key in ("q1_zero_copy_not_always_best", "q4_one_copy_vs_two_copy", "q6_unexpected_result"):
        assert "no successful measurement" in doc[key]["text"]
    assert "contradicts" not in doc["q6_unexpected_result"]["text"]


# ------------------------------------------------------------------------------------------------
# smaller

def test_run_with_a_cpu_the_host_lacks_is_refused_before_anything_starts(native_build):
    before = copylab_namespaces()
    proc = run_copylab("run", "--impl", "a1", "--mode", "throughput", "--msg-size", "4096", "--pin-server", "7",
                       timeout=60)
    assert proc.returncode == 2
    assert_one_line_error(proc, "--pin-server")
    assert copylab_namespaces() == before


def test_clean_without_privileges_does_not_claim_a_removal(tmp_path):
    name = "copylab-999999-feed01-srv"
    subprocess.run(["ip", "netns", "add", name], check=True)
    try:
        proc = subprocess.run([*UNPRIVILEGED, sys.executable, "-m", "copylab", "clean"], capture_output=True,
                              text=True, cwd=ROOT, timeout=60)
        assert f"removed namespace {name}" not in proc.stdout
        assert f"could not remove namespace {name}" in proc.stdout and proc.returncode == 1
        assert sum(name in line for line in proc.stdout.splitlines()) == 1, "each namespace is reported once"
    finally:
        subprocess.run(["ip", "netns", "del", name], capture_output=True)


def test_killed_run_leaves_a_folder_that_clean_removes(native_build, tmp_path):
    proc = subprocess.Popen([sys.executable, "-m", "copylab", "run", "--impl", "a1", "--mode", "throughput",
                             "--msg-size", "4096", "--duration", "5", "--topology", "loopback"], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    tmp = Path("/tmp")
    deadline = time.monotonic() + 30
    while not list(tmp.glob(f"{WORKDIR_PREFIX}{proc.pid}-*")) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert list(tmp.glob(f"{WORKDIR_PREFIX}{proc.pid}-*"))
    os.killpg(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=30)
    cleaned = run_copylab("clean", timeout=60)
    assert f"{WORKDIR_PREFIX}{proc.pid}-" in cleaned.stdout
    assert not list(tmp.glob(f"{WORKDIR_PREFIX}{proc.pid}-*"))


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


def test_params_module_refuses_a_file_larger_than_a_grid(tmp_path):
    path = tmp_path / "big.yaml"
    path.write_text("name: x\n" + "# pad\n" * 300000)
    with pytest.raises(CopylabError, match="too large"):
        load_grid(path)

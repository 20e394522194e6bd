"""Topologies (topology.py): namespaces left by a crash, `copylab clean`, and running without root
(netns refused in one line, auto falls back to loopback loudly)."""

from __future__ import annotations

import pytest

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from conftest import ROOT, benchmark_processes, copylab_namespaces, run_copylab
from copylab.point import WORKDIR_PREFIX
from faults import UNPRIVILEGED, assert_one_line_error, dead_pid, env_with, make_namespace

# ------------------------------------------------------------------------------------------------
# namespaces left by an earlier crash



@pytest.mark.root
@pytest.mark.network
@pytest.mark.alone  # another worker's sweep would remove the dead run's namespace first
def test_clean_removes_a_dead_runs_namespace_and_keeps_a_live_one():
    dead = f"copylab-{dead_pid()}-abc123-srv"
    holder = subprocess.Popen(["sleep", "60"])  # stands for a copylab run that is still alive
    live = f"copylab-{holder.pid}-abc123-srv"
    make_namespace(dead)
    make_namespace(live)
    try:
        proc = run_copylab("clean", timeout=60)
        assert proc.returncode == 0, proc.stderr
        assert f"removed namespace {dead}" in proc.stdout
        assert f"kept {live}" in proc.stdout
        present = copylab_namespaces()
        assert dead not in present and live in present
    finally:
        holder.kill()
        holder.wait()
        for ns in (dead, live):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)


# ------------------------------------------------------------------------------------------------
# running without root (privileges dropped)

def _unprivileged(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([*UNPRIVILEGED, sys.executable, "-m", "copylab", *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=timeout, env=env_with(HOME="/tmp"))


def test_without_root_netns_is_refused_in_one_line():
    proc = _unprivileged("run", "--impl", "a1", "--mode", "throughput", "--msg-size", "4096", "--topology", "netns")
    assert proc.returncode == 2
    assert_one_line_error(proc, "topology netns")
    assert "root" in proc.stderr


@pytest.mark.slow
def test_without_root_auto_falls_back_to_loopback_loudly(native_build):
    proc = _unprivileged("run", "--impl", "a2", "--mode", "throughput", "--msg-size", "4096", "--duration", "0.3",
                      "--warmup", "0.1", "--congestion", "host", "--json")
    assert proc.returncode == 0, proc.stderr
    row = json.loads(proc.stdout)
    assert row["topology"] == "loopback" and row["status"] == "ok" and row["bytes"] > 0
    warning = [line for line in proc.stderr.splitlines() if "WARNING" in line]
    assert warning and "two namespaces" in warning[0] and "root" in warning[0], proc.stderr


@pytest.mark.slow
def test_without_root_a_congestion_control_the_host_withholds_is_one_line(native_build):
    """cubic is the default; a host whose unprivileged programs may not pick it (this VM allows
    reno and bbr) says so before anything runs, with the way out; where it is allowed it runs."""
    allowed = Path("/proc/sys/net/ipv4/tcp_allowed_congestion_control").read_text().split()
    proc = _unprivileged("run", "--impl", "a1", "--mode", "throughput", "--msg-size", "4096", "--duration", "0.3",
                         "--warmup", "0.1", "--json")
    if "cubic" in allowed:
        assert proc.returncode == 0 and json.loads(proc.stdout)["srv_congestion"] == "cubic", proc.stderr
    else:
        assert proc.returncode == 2
        assert_one_line_error(proc, "congestion cubic")
        assert "tcp_allowed_congestion_control" in proc.stderr and "--congestion host" in proc.stderr


@pytest.mark.root
@pytest.mark.slow
@pytest.mark.parametrize("name", ["dctcp", "no_such_cc"])
@pytest.mark.parametrize("topology", ["netns", "loopback"])
def test_a_congestion_control_this_kernel_lacks_is_named_as_not_available(name, topology):
    """As root, `--congestion dctcp` said the host "does not let a program choose it ... run as root";
    the kernel does not offer it: the line says so and lists the ones it offers. Nothing starts."""
    available = Path("/proc/sys/net/ipv4/tcp_available_congestion_control").read_text().split()
    assert name not in available, f"{name} is available on this kernel: the test needs one that is not"
    proc = run_copylab("run", "--impl", "a1", "--mode", "throughput", "--msg-size", "4096", "--duration", "0.3",
                       "--topology", topology, "--congestion", name, "--json", timeout=60)
    assert proc.returncode == 2 and proc.stdout == ""
    assert_one_line_error(proc, f"congestion {name}: not available on this kernel, which offers "
                                f"{' '.join(available)}")
    assert "run as root" not in proc.stderr


# ------------------------------------------------------------------------------------------------
# clean

@pytest.mark.root
@pytest.mark.network
@pytest.mark.alone  # another worker's sweep removes the dead run's namespace it plants first
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


@pytest.mark.slow
@pytest.mark.alone  # another worker's sweep removes dead runs' folders too: once it took this one before clean
def test_killed_run_leaves_a_folder_that_clean_removes(native_build, tmp_path):
    proc = subprocess.Popen([sys.executable, "-m", "copylab", "run", "--impl", "a1", "--mode", "throughput",
                             "--msg-size", "4096", "--duration", "5", "--topology", "loopback"], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    tmp = Path("/tmp")
    deadline = time.monotonic() + 30
    while not list(tmp.glob(f"{WORKDIR_PREFIX}{proc.pid}-*")) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert list(tmp.glob(f"{WORKDIR_PREFIX}{proc.pid}-*"))
    while len(benchmark_processes()) < 2 and time.monotonic() < deadline:  # its server and client running
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=30)
    # its programs died with it (sides.PARENT_DEATH), well before their 5 s window ends (they used to run
    # on in their own groups until then, or until `clean`)
    deadline = time.monotonic() + 2
    while benchmark_processes() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not benchmark_processes(), "a program of the killed run is still running"
    cleaned = run_copylab("clean", timeout=60)
    assert f"{WORKDIR_PREFIX}{proc.pid}-" in cleaned.stdout
    assert not list(tmp.glob(f"{WORKDIR_PREFIX}{proc.pid}-*"))

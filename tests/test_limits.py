"""copylab.limits (issue 23): a point's threads and messages against the process limits and the
host, before anything starts. `ulimit -n 64` with 128 threads blamed the server mid-point, a 48 GiB
point started on a 22 GiB host, `ulimit -v` was a traceback."""

from __future__ import annotations

import resource
import subprocess
import sys

import pytest
import yaml
from conftest import run_copylab
from copylab import limits
from faults import TINY, assert_one_line_error

RUN = ["run", "--impl", "a1", "--mode", "throughput", "--msg-size", "4096", "--duration", "0.2", "--warmup", "0.1"]


def _limited(kind: int, soft: int, hard: int):
    return lambda: resource.setrlimit(kind, (soft, hard))


@pytest.mark.slow
def test_too_few_open_files_for_the_threads_is_one_line_before_anything_starts(native_build):
    proc = run_copylab(*RUN, "--threads", "128", timeout=60,
                       preexec_fn=_limited(resource.RLIMIT_NOFILE, 64, 64))
    assert_one_line_error(proc, "128 threads need about 192 open files per program")
    assert "ulimit -n" in proc.stderr and "server" not in proc.stderr
    assert proc.stdout == ""  # no row: nothing was measured


@pytest.mark.slow
def test_a_low_soft_limit_is_raised_to_what_the_threads_need(native_build):
    proc = run_copylab(*RUN, "--threads", "128", "--topology", "loopback", "--json", timeout=120,
                       preexec_fn=_limited(resource.RLIMIT_NOFILE, 64, 4096))
    assert proc.returncode == 0, proc.stderr
    assert '"status": "ok"' in proc.stdout


@pytest.mark.slow
def test_an_address_space_too_small_for_the_threads_is_one_line(native_build):
    proc = run_copylab(*RUN, "--threads", "256", timeout=60,
                       preexec_fn=_limited(resource.RLIMIT_AS, 1 << 30, 1 << 30))
    assert_one_line_error(proc, "a program of 256 threads needs about")
    assert "ulimit -v" in proc.stderr


@pytest.mark.slow
def test_more_memory_than_the_host_has_is_refused_unless_asked(native_build):
    proc = run_copylab("run", "--impl", "a1", "--mode", "throughput", "--msg-size", str(64 << 20),
                       "--threads", "1024", timeout=60)
    assert_one_line_error(proc, "of memory estimated")
    assert "more than the" in proc.stderr and "--allow-large" in proc.stderr


@pytest.mark.root
def test_a_grid_needing_more_open_files_than_allowed_is_refused_before_its_folder_exists(tmp_path):
    grid = tmp_path / "grid.yaml"
    grid.write_text(yaml.safe_dump({**TINY, "threads": [1, 512]}))
    proc = run_copylab("sweep", str(grid), "--out", str(tmp_path / "out"), timeout=60,
                       preexec_fn=_limited(resource.RLIMIT_NOFILE, 128, 128))
    assert_one_line_error(proc, "grid tiny: 512 threads need about 576 open files")
    assert not (tmp_path / "out").exists()


def test_the_checks_in_a_process_of_their_own():
    """check_open_files raises the soft limit within the hard one, and refuses beyond it (in a
    child: a hard limit once lowered cannot be raised again here)."""
    code = ("import resource; from copylab import limits; from copylab.errors import CopylabError\n"
            "limits.check_open_files(100, '')\n"
            "assert resource.getrlimit(resource.RLIMIT_NOFILE) == (limits.fds_needed(100), 4096)\n"
            "try:\n    limits.check_open_files(5000, '')\nexcept CopylabError as exc:\n    print(exc)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          preexec_fn=_limited(resource.RLIMIT_NOFILE, 64, 4096))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("5000 threads need about 5064 open files per program"), proc.stdout
    assert limits.virtual_bytes(0, 8) > limits.virtual_bytes(0, 1) > 0

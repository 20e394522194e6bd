"""uring (IORING_OP_SENDMSG through an io_uring, the control for io_uring itself): verified bytes in
the namespaces in both modes with its counters, and the refusals when io_uring cannot be used."""

from __future__ import annotations


import pytest

from copylab import registry
from native_helpers import check_sender_counters, run_client, run_row, start_server

URING_PATHS = [i.name for i in registry.all_impls() if "io_uring" in i.needs]


@pytest.mark.network
@pytest.mark.slow
@pytest.mark.root
@pytest.mark.parametrize("mode", ["throughput", "latency"])
def test_uring_measures_verified_bytes_in_the_namespaces(native_build, mode):
    row = run_row("uring", mode, 65536)
    check_sender_counters(row, registry.get("uring").counters)
    assert row["send_calls"] >= row["server_messages"]  # one submission per message, more if short


@pytest.mark.root
@pytest.mark.parametrize("impl", URING_PATHS)
def test_io_uring_disabled_by_sysctl_refuses_each_connection_with_the_reason(native_build, io_uring_disabled,
                                                                             impl):
    server = start_server(impl, "throughput", 65536, sanitize=True)
    try:
        run = run_client("127.0.0.1", server.port, "throughput", 65536, threads=2, sanitize=True)
        assert server.proc.poll() is None, "one refused connection must not end the server"
    finally:
        rc, s = server.stop()
    assert run.returncode == 1 and run.result is None
    assert run.stderr.count("\n") == 1 and "could not set the connection up" in run.stderr
    assert rc == 0 and s["threads"] == 0 and s["errors"] == 2
    lines = [line for line in server.stderr().splitlines() if "connection from" in line]
    assert len(lines) == 2
    assert all("io_uring_queue_init: Operation not permitted (kernel.io_uring_disabled=2" in line for line in lines)


@pytest.mark.root
@pytest.mark.network
def test_copylab_run_gives_the_servers_reason_when_it_refuses_the_connection(native_build, io_uring_disabled):
    """The client only knows the server "could not set the connection up"; the server, alive, said
    why on its stderr: `copylab run` ends with that line, not with "see the server's stderr" alone."""
    from conftest import run_copylab

    proc = run_copylab("run", "--impl", "uring", "--mode", "throughput", "--msg-size", "65536", "--duration", "0.3",
                       "--warmup", "0.1", "--topology", "netns", "--json", timeout=120)
    import json

    row = json.loads(proc.stdout)
    assert proc.returncode != 0 and row["status"] == "failed"
    error = proc.stderr.strip().splitlines()[-1]
    assert row["error"] in error
    assert error.startswith("copylab run: error: client exited with status 1"), proc.stderr
    assert "; the server said: uring_server: connection from " in error
    assert "io_uring_queue_init: Operation not permitted (kernel.io_uring_disabled=2" in error


@pytest.mark.slow
def test_a_server_whose_library_is_missing_is_skipped_not_fatal(tmp_path):
    """The native build on a host without a server's library (as without liburing-dev): make says
    which server it skips and builds the rest."""
    import shutil
    import subprocess

    from conftest import ROOT

    native = tmp_path / "native"
    shutil.copytree(ROOT / "native", native, ignore=shutil.ignore_patterns("build"))
    with open(native / "registry.def", "a") as fh:
        fh.write('IMPL(nolib, 99, extra, "needs a missing library", "nothing", "#000000", "send_calls", "")\n')
    (native / "nolib_server.c").write_text("/* ldlibs: -lcopylab_no_such_library */\n"
                                           "int main(void) { return 0; }\n")
    proc = subprocess.run(["make", "-C", str(native), "-j2"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "native: skipping nolib_server: cannot link -lcopylab_no_such_library" in proc.stdout
    built = {p.name for p in (native / "build").iterdir() if p.is_file()}
    assert "nolib_server" not in built
    assert {f"{name}_server" for name in registry.study_impls()} | {"client"} <= built

"""uring_zc (IORING_OP_SEND_ZC over registered buffers): verified bytes in the namespaces in both
modes, every zero-copy send completed by its notification and, between namespaces, reported copied;
the set-up refused when the buffers cannot be registered; back-pressure (a receiver that stops
reading) absorbed by every new sender without losing or reordering a byte.

A lost notification cannot be provoked from outside the kernel; the server ends such a connection
with "io_uring zero-copy notifications still missing after 10 s" (uring_zc_server.c), and a
notification that matches no send with "notification mismatch"."""

from __future__ import annotations

import shutil
import signal
import subprocess
import time

import pytest

from copylab import registry
from native_helpers import check_sender_counters, client_argv, run_client, run_row, start_server

NEW_PATHS = registry.names(kind="native", roles=("extra",))


@pytest.mark.network
@pytest.mark.slow
@pytest.mark.root
@pytest.mark.parametrize("mode", ["throughput", "latency"])
def test_uring_zc_measures_verified_bytes_with_every_notification(native_build, mode):
    row = run_row("uring_zc", mode, 65536)
    check_sender_counters(row, registry.get("uring_zc").counters)
    assert row["zc_sends"] == row["send_calls"] >= 8 * row["server_messages"]  # one request per field
    assert row["zc_completions"] == row["zc_sends"]
    # veth between namespaces of one host is local delivery: the kernel copies at delivery and says so
    assert row["zc_copied"] == row["zc_completions"]


@pytest.mark.skipif(shutil.which("setpriv") is None, reason="needs setpriv (util-linux)")
def test_a_ring_without_locked_memory_refuses_the_connection(native_build):
    """Without CAP_IPC_LOCK, io_uring charges its rings and registered buffers to RLIMIT_MEMLOCK
    (per user: what other processes of the user lock counts too). 1 MiB cannot hold the ring's
    4 MiB of registered buffers: io_uring_register_buffers (or, when the user's other locked memory
    leaves less, io_uring_queue_init) fails with ENOMEM and the connection is refused, saying why."""
    prefix = ["prlimit", f"--memlock={1 << 20}", "--", "setpriv", "--inh-caps=-ipc_lock",
              "--bounding-set=-ipc_lock", "--"]
    server = start_server("uring_zc", "throughput", 65536, sanitize=True, prefix=prefix)
    try:
        run = run_client("127.0.0.1", server.port, "throughput", 65536, sanitize=True)
        assert server.proc.poll() is None
    finally:
        rc, s = server.stop()
    assert run.returncode == 1 and "could not set the connection up" in run.stderr
    assert rc == 0 and s["errors"] == 1 and s["threads"] == 0
    why = server.stderr()
    assert ("io_uring_register_buffers" in why or "io_uring_queue_init" in why), why
    assert "Cannot allocate memory" in why and ("RLIMIT_MEMLOCK" in why), why


@pytest.mark.slow
@pytest.mark.parametrize("impl", NEW_PATHS)
def test_a_receiver_that_stops_reading_only_slows_the_sender(native_build, impl):
    """SIGSTOP the client for a second mid-stream: the socket fills, sends wait (io_uring arms a poll,
    sendfile blocks); after SIGCONT every byte still arrives in order and every send completes."""
    server = start_server(impl, "throughput", 65536, sanitize=True)
    try:
        client = subprocess.Popen(client_argv("127.0.0.1", server.port, "throughput", 65536, threads=2,
                                              duration=2.0, warmup=0.1, sanitize=True),
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(0.5)
        client.send_signal(signal.SIGSTOP)
        time.sleep(1.0)
        client.send_signal(signal.SIGCONT)
        out, err = client.communicate(timeout=60)
    finally:
        rc, s = server.stop()
    assert client.returncode == 0, err
    assert '"verified":true' in out.replace(" ", "")
    assert rc == 0 and s["errors"] == 0 and s["threads"] == 2
    if "zc_completions" in registry.get(impl).counters:
        assert s["zc_completions"] == s["zc_sends"] > 0

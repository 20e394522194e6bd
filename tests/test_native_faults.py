"""The servers under faults: a client SIGKILLed mid-stream ends only its own connection; hundreds
of connect/disconnect cycles leave no file descriptor or thread behind; SIGTERM and SIGINT end the
server with exit status 0 and its JSON, also while clients are connected."""

from __future__ import annotations

import signal
import socket
import struct
import subprocess
import time

import pytest

from copylab import registry
from copylab.contract import IMPLS
from native_helpers import (
    client_argv,
    hello,
    open_fds,
    recv_exactly,
    run_client,
    start_server,
    thread_count,
    wait_until,
)

MSG_SIZE = 65536


def wait_for_streams(server, connections: int) -> None:
    """Let the streams get going: every connection has its server thread, then a little more."""
    assert wait_until(lambda: thread_count(server.pid) == 1 + connections, timeout=60), "clients never connected"
    time.sleep(0.3)


@pytest.mark.root
@pytest.mark.parametrize("impl", IMPLS)
def test_client_killed_mid_stream_does_not_take_the_server_down(native_build, impl):
    server = start_server(impl, "throughput", MSG_SIZE)
    try:
        victim = subprocess.Popen(client_argv("127.0.0.1", server.port, "throughput", MSG_SIZE, threads=4,
                                              duration=60, warmup=0),
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_for_streams(server, 4)
        victim.kill()
        victim.wait()
        assert server.proc.poll() is None, "the server died with its client"
        after = run_client("127.0.0.1", server.port, "throughput", MSG_SIZE, threads=2)
        assert after.returncode == 0 and after.result["verified"] is True, after.stderr
    finally:
        rc, s = server.stop()
    assert rc == 0
    assert s["threads"] == 6 and s["errors"] == 4  # the 4 killed connections, nothing else
    if "zc_completions" in registry.get(impl).counters:
        # even connections that died mid-stream got every completion before their buffers were freed
        assert s["zc_completions"] == s["zc_sends"]
    assert server.stderr().count("connection from") == 4


@pytest.mark.slow
@pytest.mark.parametrize("impl", IMPLS)
def test_connect_disconnect_cycles_leave_no_fd_or_thread(native_build, impl):
    server = start_server(impl, "throughput", MSG_SIZE)
    try:
        # one served connection first, so lazily opened resources are already counted in the baseline
        assert run_client("127.0.0.1", server.port, "throughput", MSG_SIZE).returncode == 0
        assert wait_until(lambda: thread_count(server.pid) == 1)
        fds_before = open_fds(server.pid)
        for cycle in range(200):
            with socket.create_connection(("127.0.0.1", server.port)) as sock:
                kind = cycle % 3
                if kind == 1:  # hello, then vanish in the middle of the stream
                    sock.sendall(hello("throughput", MSG_SIZE))
                    recv_exactly(sock, 24)
                    recv_exactly(sock, 3 * MSG_SIZE)
                elif kind == 2:  # half a hello
                    sock.sendall(hello("throughput", MSG_SIZE)[:7])
                if cycle % 2:  # every other close is an RST (SO_LINGER on, timeout 0)
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        assert wait_until(lambda: thread_count(server.pid) == 1, timeout=60), "connection threads left running"
        assert wait_until(lambda: open_fds(server.pid) == fds_before, timeout=60), \
            f"{open_fds(server.pid)} fds open after 200 cycles, {fds_before} before"
    finally:
        rc, s = server.stop()
    assert rc == 0
    assert s["threads"] == 1 + 67  # the client run and every cycle that completed the handshake
    assert s["errors"] == 200  # every cycle ended abnormally, and the server says so


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
@pytest.mark.parametrize("mode", ["throughput", "latency"])
def test_signal_stops_server_with_json_while_clients_run(native_build, sig, mode):
    server = start_server("a3", mode, MSG_SIZE)
    client = subprocess.Popen(client_argv("127.0.0.1", server.port, mode, MSG_SIZE, threads=4, duration=60,
                                          warmup=0),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for_streams(server, 4)
        rc, s = server.stop(sig, timeout=20)
        out, err = client.communicate(timeout=40)
    finally:
        if client.poll() is None:
            client.kill()
            client.communicate()
    assert rc == 0 and s is not None, server.stderr()
    assert s["role"] == "server" and s["threads"] == 4 and s["bytes"] > 0
    assert s["errors"] == 0, "a requested stop is not an error"
    assert s["zc_completions"] == s["zc_sends"]
    # the client lost its server mid-run: one line, no numbers
    assert client.returncode == 1 and out == "" and len(err.splitlines()) == 1, err


def test_idle_server_stops_with_empty_totals(native_build):
    server = start_server("a1", "latency", 8)
    rc, s = server.stop()
    assert rc == 0
    assert s["threads"] == 0 and s["bytes"] == 0 and s["messages"] == 0
    assert s["throughput_gbps"] is None  # nothing was active: no rate, rather than a made-up one
    assert s["duration_s"] > 0


def test_connection_the_server_cannot_set_up_is_refused_not_fatal(native_build):
    # a3 keeps at least 4 messages in flight: 4 x 64 MiB cannot fit under a 192 MiB address-space limit
    size = 64 << 20
    server = start_server("a3", "throughput", size, prefix=["prlimit", f"--as={192 << 20}", "--"])
    try:
        run = run_client("127.0.0.1", server.port, "throughput", size)
        assert server.proc.poll() is None
    finally:
        rc, s = server.stop()
    assert run.returncode == 1 and run.result is None
    assert run.stderr.count("\n") == 1 and "could not set the connection up" in run.stderr
    assert rc == 0 and s["errors"] == 1 and s["threads"] == 0
    assert "cannot allocate" in server.stderr()

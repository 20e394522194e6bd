"""The native programs' command lines and handshake: bad input is one line naming the flag and
exit status 2; a mismatched client is refused with a clear line on both sides; the client's
pattern check catches corrupted and shifted streams (against a fake server written here)."""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest
from copylab.paths import client_binary, server_binary
from native_helpers import PROTO_MAGIC, client_argv, hello, pattern, recv_exactly, reply, run_client, start_server

SERVER_OK = ["--bind", "127.0.0.1", "--port", "0", "--msg-size", "64", "--mode", "throughput"]
CLIENT_OK = ["--connect", "127.0.0.1", "--port", "9", "--msg-size", "64", "--mode", "throughput",
             "--threads", "1", "--duration", "1", "--warmup", "0"]


def with_flag(base: list[str], flag: str, value: str | None) -> list[str]:
    """base with flag's value replaced (value None: the flag and its value removed)."""
    argv = list(base)
    i = argv.index(flag)
    if value is None:
        del argv[i:i + 2]
    else:
        argv[i + 1] = value
    return argv


# (program, argv, text the one line must contain)
BAD = [
    ("a1_server", with_flag(SERVER_OK, "--msg-size", "abc"), "--msg-size"),
    ("a1_server", with_flag(SERVER_OK, "--msg-size", "7"), "--msg-size"),
    ("a2_server", with_flag(SERVER_OK, "--msg-size", "67108865"), "--msg-size"),
    ("a2_server", with_flag(SERVER_OK, "--msg-size", "-8"), "--msg-size"),
    ("a3_server", with_flag(SERVER_OK, "--port", "65536"), "--port"),
    ("a3_server", with_flag(SERVER_OK, "--port", "80x"), "--port"),
    ("a1_server", with_flag(SERVER_OK, "--mode", "fast"), "--mode"),
    ("a2_server", with_flag(SERVER_OK, "--bind", "999.1.1.1"), "--bind"),
    ("a3_server", with_flag(SERVER_OK, "--bind", "localhost"), "--bind"),
    ("a1_server", with_flag(SERVER_OK, "--mode", None), "--mode"),
    ("a2_server", SERVER_OK + ["--verbose"], "--verbose"),
    ("a3_server", SERVER_OK + ["extra"], "extra"),
    ("a1_server", SERVER_OK + ["--port", "1"], "--port"),
    ("a2_server", SERVER_OK + ["--json=yes"], "--json"),
    ("a3_server", SERVER_OK + ["--max-connections", "0"], "--max-connections"),
    ("a1_server", SERVER_OK + ["--max-connections", "1025"], "--max-connections"),  # above THREADS_MAX
    # below the default bound (it only raises it), above RING_MEMORY_LIMIT
    ("a1_server", SERVER_OK + ["--ring-memory", "4096"], "--ring-memory"),
    ("a3_server", SERVER_OK + ["--ring-memory", "17179869185"], "--ring-memory"),
    ("client", with_flag(CLIENT_OK, "--threads", "0"), "--threads"),
    ("client", with_flag(CLIENT_OK, "--threads", "1025"), "--threads"),
    ("client", with_flag(CLIENT_OK, "--threads", "2.5"), "--threads"),
    ("client", with_flag(CLIENT_OK, "--duration", "0"), "--duration"),
    ("client", with_flag(CLIENT_OK, "--duration", "nan"), "--duration"),
    ("client", with_flag(CLIENT_OK, "--duration", "3601"), "--duration"),
    ("client", with_flag(CLIENT_OK, "--warmup", "-1"), "--warmup"),
    ("client", CLIENT_OK + ["--rounds", "0"], "--rounds"),
    ("client", CLIENT_OK + ["--rounds", "17"], "--rounds"),
    ("client", CLIENT_OK + ["--rounds", "two"], "--rounds"),
    ("client", with_flag(CLIENT_OK, "--duration", "0.3") + ["--rounds", "4"], "--rounds"),  # 0.075 s each
    ("client", CLIENT_OK + ["--setup-timeout", "0"], "--setup-timeout"),
    ("client", CLIENT_OK + ["--setup-timeout", "soon"], "--setup-timeout"),
    ("client", with_flag(CLIENT_OK, "--port", "0"), "--port"),
    ("client", with_flag(CLIENT_OK, "--connect", "1.2.3"), "--connect"),
    ("client", with_flag(CLIENT_OK, "--msg-size", ""), "--msg-size"),
    ("client", with_flag(CLIENT_OK, "--warmup", None), "--warmup"),
    ("client", CLIENT_OK[:-1], "--warmup"),  # flag without its value
    ("client", CLIENT_OK + ["--threads", "2"], "--threads"),
    ("client", CLIENT_OK + ["--bind", "127.0.0.1"], "--bind"),
    ("client", with_flag(CLIENT_OK, "--port", None), "--port"),  # neither --port nor --port-from
    ("client", CLIENT_OK + ["--port-from", "/tmp/p"], "--port-from"),  # both
    ("client", with_flag(CLIENT_OK, "--port", None) + ["--port-from", ""], "--port-from"),
    ("client", with_flag(CLIENT_OK, "--port", None) + ["--port-from", "/nonexistent/copylab-port"], "--port-from"),
]


def program_path(program: str):
    return client_binary() if program == "client" else server_binary(program.split("_")[0])


@pytest.mark.parametrize("program,argv,names", BAD, ids=[f"{p}:{' '.join(a)[-40:]}" for p, a, _ in BAD])
def test_bad_invocation_is_one_line_and_exit_2(native_build, program, argv, names):
    proc = subprocess.run([str(program_path(program)), *argv], capture_output=True, text=True, timeout=10)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith(f"{program}: ") and names in lines[0], lines[0]
    assert proc.stdout == ""


def test_bad_invocation_table_is_large_enough():
    assert len(BAD) >= 15


@pytest.mark.parametrize("program", ["a1_server", "a2_server", "a3_server", "client"])
def test_help_prints_usage(native_build, program):
    proc = subprocess.run([str(program_path(program)), "--help"], capture_output=True, text=True, timeout=10)
    assert proc.returncode == 0 and proc.stdout.startswith(f"usage: {program} ") and "--msg-size" in proc.stdout


def test_server_cannot_listen_is_one_line(native_build):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        argv = with_flag(SERVER_OK, "--port", str(port))
        proc = subprocess.run([str(server_binary("a2")), *argv], capture_output=True, text=True, timeout=10)
    assert proc.returncode != 0
    assert proc.stderr.splitlines() == [f"a2_server: cannot listen on 127.0.0.1:{port}: Address already in use"]


@pytest.mark.parametrize("content", ["", "abc", "0", "65536", "80 81", "-1"])
def test_port_from_a_file_without_a_port_is_one_line(native_build, tmp_path, content):
    source = tmp_path / "port"
    source.write_text(content + "\n")
    argv = with_flag(CLIENT_OK, "--port", None) + ["--port-from", str(source)]
    proc = subprocess.run([str(client_binary()), *argv], capture_output=True, text=True, timeout=10)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.splitlines() == [f"client: --port-from: {source}: must hold a port number from 1 to 65535, "
                                        f"got '{content}'"]


def test_client_waits_for_its_port_on_a_fifo(native_build, tmp_path):
    """--port-from: the client starts before the server exists, waits without connecting, and runs
    once the port arrives (what the engine does to overlap the two start-ups)."""
    fifo = tmp_path / "port"
    os.mkfifo(fifo)
    argv = client_argv("127.0.0.1", 1, "throughput", 4096, threads=2)
    argv[argv.index("--port"):argv.index("--port") + 2] = ["--port-from", str(fifo)]
    client = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(0.3)
        assert client.poll() is None, "the client must wait for its port, not fail or run"
        server = start_server("a1", "throughput", 4096)
        try:
            fifo.write_text(f"{server.port}\n")
            out, err = client.communicate(timeout=30)
        finally:
            server.kill()
    finally:
        client.kill()
    assert client.returncode == 0, err
    result = json.loads(out.strip().splitlines()[-1])
    assert result["bytes"] > 0 and result["verified"] is True


def test_client_without_server_is_one_line(native_build):
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    run = run_client("127.0.0.1", port, "throughput", 64, threads=3)
    assert run.returncode == 1 and run.result is None
    assert len(run.stderr.splitlines()) == 1 and "Connection refused" in run.stderr


@pytest.mark.parametrize("server_mode,server_size,client_mode,client_size,flag", [
    ("throughput", 4096, "latency", 4096, "--mode"),
    ("latency", 4096, "latency", 8192, "--msg-size"),
])
def test_handshake_mismatch_refused_on_both_sides(native_build, server_mode, server_size, client_mode,
                                                  client_size, flag):
    server = start_server("a2", server_mode, server_size)
    try:
        run = run_client("127.0.0.1", server.port, client_mode, client_size, threads=2)
    finally:
        rc, s = server.stop()
    assert run.returncode == 1 and run.result is None
    lines = run.stderr.splitlines()
    assert len(lines) == 1 and "refused" in lines[0] and flag in lines[0], run.stderr
    assert rc == 0 and s["connections_refused"] == 2 and s["threads"] == 0 and s["errors"] == 0
    refusals = [line for line in server.stderr().splitlines() if "refused client" in line]
    assert len(refusals) == 2 and all(flag in line for line in refusals), server.stderr()


def test_client_of_another_protocol_is_refused(native_build):
    server = start_server("a1", "throughput", 64)
    try:
        with socket.create_connection(("127.0.0.1", server.port)) as sock:
            sock.sendall(hello("throughput", 64, magic=0x47455420))  # "GET "
            answer = recv_exactly(sock, 24)
    finally:
        rc, s = server.stop()
    assert int.from_bytes(answer[:4], "big") == PROTO_MAGIC and int.from_bytes(answer[4:6], "big") == 3
    assert rc == 0 and s["connections_refused"] == 1


class FakeServer:
    """Speaks the throughput protocol but sends a stream we choose, to test the client's checks."""

    def __init__(self, msg_size: int, stream_for):
        self.msg_size = msg_size
        self.stream_for = stream_for  # callable(message bytes) -> bytes to send repeatedly
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        conn, _ = self.listener.accept()
        with conn:
            recv_exactly(conn, 16)
            conn.sendall(reply(0, 2, "throughput", self.msg_size))
            block = self.stream_for(pattern(self.msg_size)) * 16
            pos = 0
            while True:
                readable, writable, _ = select.select([conn], [conn], [], 10)
                if readable:
                    break  # STOP (or the client went away)
                if writable:
                    pos = (pos + conn.send(block[pos:])) % len(block)
            conn.sendall(block[pos:])  # finish the block, as a server finishes its message
            conn.shutdown(socket.SHUT_WR)
            while conn.recv(4096):
                pass

    def close(self) -> None:
        self.thread.join(timeout=30)
        self.listener.close()


def run_against_fake(stream_for, verify: bool, msg_size: int = 4096):
    fake = FakeServer(msg_size, stream_for)
    try:
        return run_client("127.0.0.1", fake.port, "throughput", msg_size, duration=0.1, warmup=0, verify=verify)
    finally:
        fake.close()


def flip_middle_byte_outside_samples(msg: bytes) -> bytes:
    i = len(msg) // 4  # not in the first, middle or last 8 bytes
    return msg[:i] + bytes([msg[i] ^ 0xFF]) + msg[i + 1:]


@pytest.mark.parametrize("verify", [True, False], ids=["full", "sampled"])
def test_client_accepts_the_exact_pattern(native_build, verify):
    run = run_against_fake(lambda msg: msg, verify)
    assert run.returncode == 0, run.stderr
    assert run.result["verified"] is True and run.result["impl"] == "a2"


def test_full_check_catches_one_corrupt_byte(native_build):
    run = run_against_fake(flip_middle_byte_outside_samples, verify=True)
    assert run.returncode == 1 and run.result["verified"] is False
    assert "verification failed" in run.stderr and "offset 1024" in run.stderr


@pytest.mark.parametrize("verify", [True, False], ids=["full", "sampled"])
def test_check_catches_a_framing_slip(native_build, verify):
    # one byte lost per message: every message after the first starts one byte early
    run = run_against_fake(lambda msg: msg[1:], verify)
    assert run.returncode == 1 and run.result["verified"] is False, run.stderr
    assert run.result["verify"] == ("full" if verify else "sampled")


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
@pytest.mark.slow
def test_client_against_a_peer_that_is_not_copylab(native_build, reply, needle):
    server, conns = _silent_server(reply)
    try:
        proc = subprocess.run(client_argv("127.0.0.1", server.getsockname()[1], "throughput", 4096, threads=1,
                                          duration=1, warmup=0), capture_output=True, text=True, timeout=30)
    finally:
        server.close()
        for conn in conns:
            conn.close()
    assert proc.returncode == 1 and proc.stdout == ""  # a client that hung would have met the timeout
    assert len(proc.stderr.strip().splitlines()) == 1 and needle in proc.stderr, proc.stderr


@pytest.mark.parametrize("mode, stop", [("throughput", '"S"'), ("latency", '"\\377\\377\\377\\377\\377\\377\\377\\377"')])
def test_the_client_acks_at_once_once_it_has_sent_stop(native_build, tmp_path, mode, stop):
    """After STOP the client sets TCP_QUICKACK before each wait for the server's close: A3 closes only
    once every zero-copy send has completed, which waits for the ACK of its last bytes, and a delayed
    ACK held the end of each A3 connection about 40 ms (on 2026-11-26: 113 ms of harness time per
    two-round point against 43 ms for A2). strace shows the option set after the STOP is sent."""
    server = start_server("a3", mode, 4096)
    trace = tmp_path / "trace"
    try:
        run = run_client("127.0.0.1", server.port, mode, 4096, duration=0.1,
                         prefix=["strace", "-f", "-qq", "-e", "trace=setsockopt,sendto", "-o", str(trace)])
    finally:
        server.stop()
    assert run.returncode == 0, run.stderr
    calls = trace.read_text().splitlines()
    sent_stop = [i for i, call in enumerate(calls) if "sendto(" in call and stop in call]
    assert sent_stop, "\n".join(calls)
    assert any("TCP_QUICKACK, [1]" in call for call in calls[sent_stop[0] + 1:]), "\n".join(calls)


def test_a_slow_sender_looks_for_stop_by_time_not_only_by_bytes(native_build, tmp_path):
    """The server looks for STOP after 256 KiB sent or once a millisecond has passed, whichever first:
    A3's zero-copy sends of 64 B needed ~100 ms per connection to reach 256 KiB, and each round's end
    waited for the slowest. Traced (every system call slowed), the sender looks far more often than
    once per 4096 messages. strace starts the server (attaching to a sibling needs more than root
    has under some ptrace policies), and the server, its child, is the one told to stop."""
    trace = tmp_path / "trace"
    server = start_server("a3", "throughput", 64, prefix=["strace", "-f", "-qq", "-e", "trace=recvfrom", "-o", str(trace)])
    traced = None
    try:
        traced = int(Path(f"/proc/{server.proc.pid}/task/{server.proc.pid}/children").read_text().split()[0])
        run = run_client("127.0.0.1", server.port, "throughput", 64, duration=0.3, warmup=0.05)
        os.kill(traced, signal.SIGTERM)
        out, _ = server.proc.communicate(timeout=30)  # strace ends with its child, with its status
    finally:
        if traced is not None and server.proc.poll() is None:  # a tracer killed would leave its child running
            with contextlib.suppress(ProcessLookupError):
                os.kill(traced, signal.SIGKILL)
        server.kill()
    assert run.returncode == 0 and server.proc.returncode == 0, run.stderr + server.stderr()
    messages = json.loads(out.strip().splitlines()[-1])["messages"]
    looks = [call for call in trace.read_text().splitlines() if "recvfrom(" in call and ", 16, MSG_DONTWAIT" in call]
    by_bytes = messages // (256 * 1024 // 64)
    assert len(looks) > 2 * by_bytes + 3, f"{len(looks)} looks for STOP over {messages} messages"

"""Running the native servers and client from tests: start a server and learn its port, run a
client, stop the server and read its JSON, look for sanitizer reports, count a process's fds.

The build itself is conftest's `native_build` session fixture; these helpers only launch binaries.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field

from copylab.paths import client_binary, server_binary

# LeakSanitizer on, UBSan fatal with a stack: any finding shows up on stderr and fails the test
SANITIZER_ENV = {
    "ASAN_OPTIONS": "detect_leaks=1",
    "UBSAN_OPTIONS": "halt_on_error=1:print_stacktrace=1",
}
_SANITIZER_MARKERS = ("AddressSanitizer", "LeakSanitizer", "UndefinedBehaviorSanitizer", "runtime error:")
_LISTENING = re.compile(r"^listening on (\S+):(\d+)$", re.M)


def sanitizer_findings(stderr: str) -> list[str]:
    """Lines of a sanitizer report in stderr (empty when clean)."""
    return [line for line in stderr.splitlines() if any(m in line for m in _SANITIZER_MARKERS)]


def _env(sanitize: bool) -> dict[str, str]:
    env = dict(os.environ)
    if sanitize:
        env.update(SANITIZER_ENV)
    return env


@dataclass
class Server:
    """A running server; its stderr goes to an unnamed file so it can never block on a full pipe."""

    proc: subprocess.Popen
    port: int
    _stderr: object = field(repr=False)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def stderr(self) -> str:
        return os.pread(self._stderr.fileno(), 1 << 22, 0).decode(errors="replace")

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 30) -> tuple[int, dict | None]:
        """Signal the server, wait for it; (exit status, its JSON or None)."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            out, _ = self.proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(f"server did not stop within {timeout} s of signal {sig}:\n{self.stderr()}")
        lines = [line for line in out.splitlines() if line.strip()]
        return self.proc.returncode, (json.loads(lines[-1]) if lines else None)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.communicate()


def start_server(impl: str, mode: str, msg_size: int, *, bind: str = "127.0.0.1", sanitize: bool = False,
                 prefix: list[str] | tuple = (), timeout: float = 60, extra: list[str] | tuple = ()) -> Server:
    """Start IMPL's server on a free port (--port 0) and wait for its `listening on` line.

    prefix: argv run in front of the binary, e.g. ["ip", "netns", "exec", NS] (which execs, so the
    pid stays the server's); extra: more flags.
    """
    argv = [*prefix, str(server_binary(impl, sanitize)), "--bind", bind, "--port", "0",
            "--msg-size", str(msg_size), "--mode", mode, "--json", *extra]
    err = tempfile.TemporaryFile()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=err, text=True, env=_env(sanitize))
    server = Server(proc, 0, err)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        match = _LISTENING.search(server.stderr())
        if match:
            server.port = int(match.group(2))
            return server
        if proc.poll() is not None:
            raise AssertionError(f"{argv} exited {proc.returncode} before listening:\n{server.stderr()}")
        time.sleep(0.01)
    server.kill()
    raise AssertionError(f"{argv} did not print 'listening on' within {timeout} s:\n{server.stderr()}")


@dataclass
class ClientRun:
    returncode: int
    result: dict | None  # the JSON line, if any
    stdout: str
    stderr: str


def client_argv(addr: str, port: int, mode: str, msg_size: int, threads: int = 1, duration: float = 0.2,
                warmup: float = 0.05, verify: bool = True, sanitize: bool = False,
                receive: str | None = None, extra: list[str] | tuple = ()) -> list[str]:
    argv = [str(client_binary(sanitize)), "--connect", addr, "--port", str(port), "--msg-size", str(msg_size),
            "--mode", mode, "--threads", str(threads), "--duration", str(duration), "--warmup", str(warmup),
            "--json", *extra]
    return argv + (["--verify"] if verify else []) + (["--receive", receive] if receive else [])


def run_client(addr: str, port: int, mode: str, msg_size: int, *, threads: int = 1, duration: float = 0.2,
               warmup: float = 0.05, verify: bool = True, sanitize: bool = False,
               prefix: list[str] | tuple = (), timeout: float = 120, receive: str | None = None,
               extra: list[str] | tuple = ()) -> ClientRun:
    argv = [*prefix, *client_argv(addr, port, mode, msg_size, threads, duration, warmup, verify, sanitize, receive,
                                  extra)]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=_env(sanitize))
    lines = [line for line in proc.stdout.splitlines() if line.strip()]
    result = json.loads(lines[-1]) if lines and lines[-1].startswith("{") else None
    return ClientRun(proc.returncode, result, proc.stdout, proc.stderr)


def open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def thread_count(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/task"))


def wait_until(predicate, timeout: float = 60, interval: float = 0.02) -> bool:
    """Poll predicate() until true or timeout; returns its last value. A wait, not a bound: it returns
    as soon as the predicate holds, so the timeout only says when a loaded host's moment is a failure."""
    deadline = time.monotonic() + timeout
    while True:
        if predicate():
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(interval)


# --- the wire protocol, for fake peers (mirrors native/protocol.h and native/message.c) ---

PROTO_MAGIC = 0x434C4142
PROTO_VERSION = 1
MODE_IDS = {"throughput": 1, "latency": 2}
_M64 = (1 << 64) - 1


def _mix64(x: int) -> int:
    x = (x + 0x9E3779B97F4A7C15) & _M64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _M64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _M64
    return x ^ (x >> 31)


def pattern(msg_size: int) -> bytes:
    """One message as the servers send it: byte i is byte (i % 8) of mix64(i // 8), little-endian."""
    words = (msg_size + 7) // 8
    return b"".join(_mix64(w).to_bytes(8, "little") for w in range(words))[:msg_size]


def hello(mode: str, msg_size: int, magic: int = PROTO_MAGIC, version: int = PROTO_VERSION) -> bytes:
    return magic.to_bytes(4, "big") + version.to_bytes(2, "big") + MODE_IDS[mode].to_bytes(2, "big") \
        + msg_size.to_bytes(8, "big")


def reply(status: int, impl: int, mode: str, msg_size: int) -> bytes:
    return PROTO_MAGIC.to_bytes(4, "big") + status.to_bytes(2, "big") + impl.to_bytes(2, "big") \
        + MODE_IDS[mode].to_bytes(2, "big") + PROTO_VERSION.to_bytes(2, "big") + bytes(4) \
        + msg_size.to_bytes(8, "big")


def recv_exactly(sock: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            break
        data += chunk
    return data


def run_row(impl: str, mode: str, msg_size: int, *extra: str, timeout: float = 180) -> dict:
    """`copylab run --json` of one point in the namespaces (the study's topology): its results row.
    A failed run fails the test with both programs' words."""
    from conftest import run_copylab

    proc = run_copylab("run", "--impl", impl, "--mode", mode, "--msg-size", str(msg_size), "--duration", "0.3",
                       "--warmup", "0.1", "--topology", "netns", *extra, "--json", timeout=timeout)
    assert proc.returncode == 0, proc.stderr
    row = json.loads(proc.stdout)
    assert row["status"] == "ok" and row["impl"] == impl and row["topology"] == "netns", row
    return row


def check_sender_counters(row: dict, counters: tuple[str, ...]) -> None:
    """A sender's row: its bytes arrived verified, and it reports exactly the counters its registry
    entry lists (the others empty: null in the JSON row, not 0)."""
    assert row["verified"] is True and row["bytes"] > 0 and row["throughput_gbps"] > 0
    assert row["server_bytes"] == row["total_bytes"]
    for key in ("send_calls", "user_copy_bytes", "zc_sends", "zc_completions", "zc_copied", "enobufs"):
        assert (key in counters) == (row[key] is not None), key
    assert row["send_calls"] >= row["server_messages"] > 0


EMPTY_WINDOW = "lengthen --duration"  # the client's refusal of a window in which nothing completed
LONGER_WINDOW_S = 1.0  # the sweeps' own throughput window


def run_client_once_more_if_empty(addr: str, port: int, mode: str, size: int, threads: int, **kw) -> tuple:
    """A client run, and a second one with a longer window when the first saw nothing complete (seen in
    loaded `make test` runs: uring_zc at 64 B on 4 threads, and a sanitized 1 MiB run on 2 threads, likely a
    segment waiting out TCP's retransmission timeout on the busy host, or the sanitizer's slowdown): (the
    run to check, the bytes and connections the empty run took from the server)."""
    run = run_client(addr, port, mode, size, threads=threads, **kw)
    if run.returncode == 0 or EMPTY_WINDOW not in run.stderr:
        return run, (0, 0)
    taken = ((run.result or {}).get("total_bytes", 0), threads)
    return run_client(addr, port, mode, size, threads=threads, **{**kw, "duration": LONGER_WINDOW_S}), taken

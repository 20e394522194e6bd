"""What each implementation runs and how its output becomes the common result fields.

The engine (point.py) starts a server and a client, opens and closes the counting window, stops
the server, and asks the Program for the numbers. copylab's own programs (a1/a2/a3 and the client)
announce their window themselves; the peers are measured by the same engine with the same pinning
and perf, with their own ways of timing:
  - iperf3 (Debian's 3.12), reverse mode (-R: the server sends, as in the study), -l = the message
    size, which is also its read size: one block per recv(), the "message" receive strategy.
    Fractions of -t/-O are silently truncated by iperf3, so it runs whole seconds with -i 0.1
    intervals and the window is cut from those intervals; perf's window follows a timer.
  - sockperf (3.7) ping-pong with --full-rtt (by default it prints half the round trip). Its
    request is as large as its reply (copylab's request is 8 bytes); it discards a fixed 400 ms
    warm-up after "Starting test...", which is where the window opens; the round trips are read
    from its --full-log and summarised like copylab's client does (nearest-rank percentiles).
Both peers exit 0 on most failures (iperf3 with -J, sockperf always), so success is decided from
their output, never from the exit status alone.
"""

from __future__ import annotations

import json
import math
import re
import shutil
from dataclasses import dataclass

from .contract import SERVER_KEYS
from .errors import CopylabError, ErrorKind
from .paths import BUILD_DIR, client_binary, server_binary

Failure = tuple[str, str]  # (ErrorKind, one-line message)

# stderr lines of copylab's programs (and perf's notices) that are not errors
NATIVE_NOT_ERRORS = ("listening on", "window open", "window closed")


@dataclass
class Result:
    """The common fields every implementation yields (NaN/None where a program cannot tell)."""

    fields: dict
    failure: Failure | None = None


def _nan(value):
    return math.nan if value is None else value


class Native:
    """copylab's own servers and client."""

    window_source = "client"
    server_exits_by_itself = False

    def __init__(self, impl: str, sanitize: bool = False):
        self.impl, self.sanitize = impl, sanitize

    def check_installed(self, host=None) -> None:
        if host is not None and host.remote:
            return  # built there when the topology was set up (sweep.remote)
        for binary in (server_binary(self.impl, self.sanitize), client_binary(self.sanitize)):
            if not binary.exists():
                raise CopylabError(f"{binary} is missing: build the native programs first (make -C native)")

    def server_argv(self, spec, addr: str, port: int, workdir: str, build_dir: str = str(BUILD_DIR)) -> list[str]:
        return [f"{build_dir}/{server_binary(self.impl, self.sanitize).name}", "--bind", addr, "--port", str(port),
                "--msg-size", str(spec.msg_size), "--mode", spec.mode, "--json"]

    def client_argv(self, spec, addr: str, port: int, workdir: str, build_dir: str = str(BUILD_DIR)) -> list[str]:
        argv = [f"{build_dir}/{client_binary(self.sanitize).name}", "--connect", addr, "--port", str(port),
                "--msg-size", str(spec.msg_size), "--mode", spec.mode, "--threads", str(spec.threads),
                "--duration", f"{spec.duration_s:g}", "--warmup", f"{spec.warmup_s:g}",
                "--receive", spec.receive, "--announce-window", "--json"]
        return argv + (["--verify"] if spec.verify else [])

    @staticmethod
    def server_ready(stream: str, line: str) -> bool:
        return stream == "stderr" and line.startswith("listening on")

    @staticmethod
    def client_event(stream: str, line: str) -> str | None:
        """'open'/'close' when the client announces its measured window."""
        if stream == "stderr":
            if line.startswith("window open"):
                return "open"
            if line.startswith("window closed"):
                return "close"
        return None

    def error_of(self, side) -> str:
        return side.last_error(NATIVE_NOT_ERRORS)

    def result(self, spec, server, client, read_file) -> Result:
        cli = client.json_output() if client else None
        srv = server.json_output()
        fields = {key: _nan((cli or {}).get(key)) for key in (
            "throughput_gbps", "latency_us", "bytes", "duration_s", "messages", "total_bytes", "latency_p50_us",
            "latency_p99_us", "latency_min_us", "latency_max_us", "recv_calls")}
        fields["verified"] = (cli or {}).get("verified", "")
        fields["receive"] = (cli or {}).get("receive", spec.receive)
        fields["server_bytes"] = _nan((srv or {}).get("bytes"))
        fields["server_messages"] = _nan((srv or {}).get("messages"))
        for key in SERVER_KEYS:
            fields[key] = _nan((srv or {}).get(key))
        failure = None
        if not cli:
            failure = (ErrorKind.NO_RESULT, "client printed no JSON result")
        elif not srv:
            failure = (ErrorKind.NO_RESULT, "server printed no JSON result")
        elif cli.get("verified") is False:
            failure = (ErrorKind.NOT_VERIFIED, "client could not verify the received data")
        return Result(fields, failure)


def _peer_fields(spec) -> dict:
    """The fields a peer cannot report (copylab's servers count them; iperf3/sockperf do not)."""
    fields = {key: math.nan for key in SERVER_KEYS}
    fields.update(verified="", receive="message", recv_calls=math.nan, total_bytes=math.nan,
                  server_bytes=math.nan, server_messages=math.nan)
    return fields


class Iperf3:
    window_source = "timer"
    server_exits_by_itself = True  # -1: one test, then exit
    INTERVAL_S = 0.1

    def check_installed(self, host=None) -> None:
        _check_tool("iperf3", host)

    def server_argv(self, spec, addr: str, port: int, workdir: str, build_dir: str = "") -> list[str]:
        # --forceflush: its "Server listening" line reaches the pipe at once; --idle-timeout: a
        # client that never comes cannot leave it running
        return ["iperf3", "-s", "-1", "-B", addr, "-p", str(port), "--forceflush", "--idle-timeout", "30"]

    def run_seconds(self, spec) -> int:
        return max(1, math.ceil(spec.warmup_s + spec.duration_s - 1e-9))

    def client_argv(self, spec, addr: str, port: int, workdir: str, build_dir: str = "") -> list[str]:
        return ["iperf3", "-c", addr, "-p", str(port), "-R", "-l", str(spec.msg_size), "-P", str(spec.threads),
                "-t", str(self.run_seconds(spec)), "-i", f"{self.INTERVAL_S:g}", "-J"]

    @staticmethod
    def server_ready(stream: str, line: str) -> bool:
        return stream == "stdout" and line.startswith("Server listening on")

    @staticmethod
    def client_event(stream: str, line: str) -> str | None:
        return None

    def error_of(self, side) -> str:
        return side.last_error()

    def result(self, spec, server, client, read_file) -> Result:
        fields = _peer_fields(spec)
        try:
            doc = json.loads(client.stdout()) if client else None
        except json.JSONDecodeError:
            doc = None
        if not isinstance(doc, dict):
            message = (client.last_error() if client else "") or "no JSON result"
            return Result(fields, (ErrorKind.NO_RESULT, f"iperf3 client: {message}"))
        if doc.get("error"):
            return Result(fields, (ErrorKind.CLIENT, f"iperf3 client: {doc['error']}"))
        window = iperf3_window(doc, spec.warmup_s, spec.duration_s)
        if window is None:
            return Result(fields, (ErrorKind.NO_RESULT, "iperf3 reported no intervals inside the window"))
        nbytes, seconds = window
        messages = nbytes // spec.msg_size
        fields.update(bytes=nbytes, duration_s=seconds, throughput_gbps=nbytes * 8 / seconds / 1e9,
                      messages=messages, total_bytes=_nan(doc.get("end", {}).get("sum_received", {}).get("bytes")),
                      server_bytes=_nan(doc.get("end", {}).get("sum_sent", {}).get("bytes")),
                      latency_us=seconds * spec.threads / messages * 1e6 if messages else math.nan,
                      latency_p50_us=math.nan, latency_p99_us=math.nan, latency_min_us=math.nan,
                      latency_max_us=math.nan)
        return Result(fields)


def iperf3_window(doc: dict, warmup_s: float, duration_s: float) -> tuple[int, float] | None:
    """(bytes, seconds) of the intervals inside [warmup, warmup + duration]: those whose middle lies
    in it (iperf3's interval boundaries drift by a few ms from the nominal 0.1 s grid)."""
    nbytes, seconds = 0, 0.0
    for interval in doc.get("intervals") or []:
        total = interval.get("sum") or {}
        start, end = total.get("start"), total.get("end")
        if start is None or end is None or total.get("omitted"):
            continue
        if warmup_s <= (start + end) / 2 <= warmup_s + duration_s:
            nbytes += int(total.get("bytes", 0))
            seconds += float(total.get("seconds", end - start))
    return (nbytes, seconds) if seconds > 0 and nbytes > 0 else None


ANSI = re.compile(r"\x1b\[[0-9;]*m")
SOCKPERF_WARMUP_S = 0.4  # compiled into sockperf 3.7 (TEST_START_WARMUP_MSEC)


class Sockperf:
    window_source = "peer"
    server_exits_by_itself = False
    LOG = "sockperf-full.log"

    def __init__(self):
        self.log_path = ""  # its --full-log, in the client's folder on the client's host

    def check_installed(self, host=None) -> None:
        _check_tool("sockperf", host)

    def server_argv(self, spec, addr: str, port: int, workdir: str, build_dir: str = "") -> list[str]:
        # -m: without it the server drops messages larger than 65507 bytes
        return ["sockperf", "server", "--tcp", "-i", addr, "-p", str(port), "-m", "1048575"]

    def run_seconds(self, spec) -> int:
        # it measures -t minus its 0.4 s warm-up and 0.05 s cool-down
        return max(1, math.ceil(spec.duration_s + 0.45 - 1e-9))

    def client_argv(self, spec, addr: str, port: int, workdir: str, build_dir: str = "") -> list[str]:
        self.log_path = f"{workdir}/{self.LOG}"
        return ["sockperf", "ping-pong", "--tcp", "-i", addr, "-p", str(port), "-m", str(spec.msg_size),
                "-t", str(self.run_seconds(spec)), "--full-rtt", "--full-log", self.log_path]

    @staticmethod
    def server_ready(stream: str, line: str) -> bool:
        return stream == "stdout" and bool(re.match(r"^\[ *\d+\] IP = \S+\s+PORT =\s*\d+ # TCP", ANSI.sub("", line)))

    @staticmethod
    def client_event(stream: str, line: str) -> str | None:
        text = ANSI.sub("", line)
        if "sockperf: Starting test" in text:
            return "open_after_warmup"
        if "sockperf: Test end" in text:
            return "close"
        return None

    def error_of(self, side) -> str:
        errors = [m.group(1) for m in re.finditer(r"sockperf: ERROR: (.*)", ANSI.sub("", side.stdout()))]
        return errors[-1].strip() if errors else side.last_error()

    def result(self, spec, server, client, read_file) -> Result:
        fields = _peer_fields(spec)
        text = ANSI.sub("", client.stdout()) if client else ""
        error = re.search(r"sockperf: ERROR: (.*)", text)
        if error:
            return Result(fields, (ErrorKind.CLIENT, f"sockperf: {error.group(1).strip()}"))
        nodata = re.search(r"sockperf: (No messages were .*|No valid observations found.*)$", text, re.M)
        if nodata or "Test end (interrupted by timer)" not in text:
            why = nodata.group(1) if nodata else "the test did not run to its end"
            return Result(fields, (ErrorKind.NO_RESULT, f"sockperf: {why}"))
        valid = re.search(r"\[Valid Duration\] RunTime=([\d.]+) sec", text)
        try:
            rtts = sockperf_rtts(read_file(self.log_path))
        except (OSError, ValueError) as exc:
            return Result(fields, (ErrorKind.NO_RESULT, f"sockperf's --full-log could not be read: {exc}"))
        if not rtts or not valid:
            return Result(fields, (ErrorKind.NO_RESULT, "sockperf recorded no round trips"))
        seconds = float(valid.group(1))
        rtts.sort()
        fields.update(duration_s=seconds, messages=len(rtts), bytes=len(rtts) * spec.msg_size,
                      throughput_gbps=len(rtts) * spec.msg_size * 8 / seconds / 1e9,
                      latency_us=sum(rtts) / len(rtts), latency_p50_us=nearest_rank(rtts, 50),
                      latency_p99_us=nearest_rank(rtts, 99), latency_min_us=rtts[0], latency_max_us=rtts[-1])
        return Result(fields)


def sockperf_rtts(log: str) -> list[float]:
    """Round trips (µs) from a sockperf --full-rtt --full-log file."""
    rows, inside = [], False
    for line in log.splitlines():
        if line.startswith("packet, txTime"):
            if "rtt(usec)" not in line:
                raise ValueError("the log holds one-way latencies (run with --full-rtt)")
            inside = True
            continue
        if inside:
            if line.startswith("---"):
                break
            parts = line.split(",")
            if len(parts) >= 4:
                rows.append(float(parts[3]))
    return rows


def nearest_rank(sorted_values: list[float], p: float) -> float:
    """The p-th percentile as copylab's client computes it (nearest rank)."""
    rank = max(1, math.ceil(p / 100 * len(sorted_values)))
    return sorted_values[rank - 1]


def _check_tool(tool: str, host) -> None:
    """A peer tool on the host that runs it (one line naming the host when it is missing)."""
    if host is not None and host.remote:
        if host.which(tool) is None:
            raise CopylabError(f"host {host.name}: {tool} is not installed there (Debian: apt-get install {tool})")
    elif shutil.which(tool) is None:
        raise CopylabError(f"{tool} is not installed (Debian: apt-get install {tool})")


def program_for(impl: str, sanitize: bool = False):
    if impl == "iperf3":
        return Iperf3()
    if impl == "sockperf":
        return Sockperf()
    return Native(impl, sanitize)

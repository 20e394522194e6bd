"""sockperf (3.7) ping-pong, the latency reference.

--full-rtt (by default it prints half the round trip). Its request is as large as its reply
(copylab's request is 8 bytes). It sleeps 2 s before every test (no option avoids it): the client
runs with native/build/libnosleep.so preloaded, which returns from that one sleep(2) at once (our
server is already listening; tools/harness.py measures sockperf with and without it). It then
discards a fixed 400 ms warm-up after "Starting test...", which is where the window opens; the round
trips are read from its --full-log and summarised as copylab's client does (nearest-rank
percentiles). It has no congestion-control option: in topology netns the namespaces' route sets it
(topology.py), elsewhere it runs the host's. It exits 0 on most failures, so success is decided from
its output.
"""

from __future__ import annotations

import math
import re

from ..contract import SERVER_KEYS
from ..errors import CopylabError, ErrorKind
from ..intervals import Series
from ..paths import BUILD_DIR
from . import Result, Runner, WindowEvent, check_tool, peer_fields

ANSI = re.compile(r"\x1b\[[0-9;]*m")
WARMUP_S = 0.4        # compiled into sockperf 3.7 (TEST_START_WARMUP_MSEC)
COOLDOWN_S = 0.05     # and the end it drops
START_S = 0.2         # its two usleep(100000), before and after the test (the sleep(2) is preloaded away)
NOSLEEP = "libnosleep.so"
INTERVAL_S = 0.05


class SockperfRunner(Runner):
    window_source = "peer"
    port_taken = ("Address already in use", "Can`t bind socket", "Can't bind socket")  # no SO_REUSEADDR
    LOG = "sockperf-full.log"
    method = ("sockperf ping-pong `--full-rtt`, whose request is as large as its reply, where copylab's "
              "is 8 bytes")

    def __init__(self):
        self.log_path = ""  # its --full-log, in the client's folder on the client's host

    def check_installed(self, host=None) -> None:
        check_tool("sockperf", host)
        if (host is None or not host.remote) and not (BUILD_DIR / NOSLEEP).exists():
            raise CopylabError(f"{BUILD_DIR / NOSLEEP} is missing: build the native programs first (make -C native)")

    def server_argv(self, spec, addr, port, workdir, build_dir="") -> list[str]:
        # -m: without it the server drops messages larger than 65507 bytes
        return ["sockperf", "server", "--tcp", "-i", addr, "-p", str(port), "-m", "1048575"]

    def test_seconds(self, spec) -> int:
        # it measures -t minus its warm-up and cool-down
        return max(1, math.ceil(spec.duration_s + WARMUP_S + COOLDOWN_S - 1e-9))

    def run_seconds(self, spec) -> float:
        return self.test_seconds(spec) + START_S + 1.0

    def expected_seconds(self, spec) -> float:
        return self.test_seconds(spec) + 2 * START_S

    def client_argv(self, spec, addr, port, workdir, build_dir=str(BUILD_DIR)) -> list[str]:
        self.log_path = f"{workdir}/{self.LOG}"
        return ["env", f"LD_PRELOAD={build_dir}/{NOSLEEP}", "sockperf", "ping-pong", "--tcp", "-i", addr, "-p", str(port), "-m", str(spec.msg_size),
                "-t", str(self.test_seconds(spec)), "--full-rtt", "--full-log", self.log_path]

    def server_ready(self, stream, line) -> bool:
        return stream == "stdout" and bool(re.match(r"^\[ *\d+\] IP = \S+\s+PORT =\s*\d+ # TCP", ANSI.sub("", line)))

    def client_event(self, stream, line) -> WindowEvent | None:
        text = ANSI.sub("", line)
        if "sockperf: Starting test" in text:
            return WindowEvent("open", WARMUP_S, "peer")
        if "sockperf: Test end" in text:
            return WindowEvent("close")
        return None

    def error_of(self, side) -> str:
        errors = [m.group(1) for m in re.finditer(r"sockperf: ERROR: (.*)", ANSI.sub("", side.stdout()))]
        return errors[-1].strip() if errors else side.last_error()

    def result(self, spec, server, client, read_file) -> Result:
        fields = peer_fields(SERVER_KEYS)
        fields["warmup_end"] = "peer"
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
            samples = sockperf_samples(read_file(self.log_path))
        except (OSError, ValueError) as exc:
            return Result(fields, (ErrorKind.NO_RESULT, f"sockperf's --full-log could not be read: {exc}"))
        if not samples or not valid:
            return Result(fields, (ErrorKind.NO_RESULT, "sockperf recorded no round trips"))
        seconds = float(valid.group(1))
        rtts = sorted(rtt for _, rtt in samples)
        fields.update(duration_s=seconds, messages=len(rtts), bytes=len(rtts) * spec.msg_size,
                      throughput_gbps=len(rtts) * spec.msg_size * 8 / seconds / 1e9, warmup_s=WARMUP_S,
                      latency_us=sum(rtts) / len(rtts), latency_p50_us=nearest_rank(rtts, 50),
                      latency_p99_us=nearest_rank(rtts, 99), latency_min_us=rtts[0], latency_max_us=rtts[-1])
        return Result(fields, None, sockperf_series(samples))


def sockperf_samples(log: str) -> list[tuple[float, float]]:
    """(send time s, round trip µs) per packet of a sockperf --full-rtt --full-log file."""
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
                rows.append((float(parts[1]), float(parts[3])))
    return rows


def sockperf_rtts(log: str) -> list[float]:
    """Round trips (µs) from a sockperf --full-rtt --full-log file."""
    return [rtt for _, rtt in sockperf_samples(log)]


def sockperf_series(samples: list[tuple[float, float]]) -> Series:
    """Mean round trip per INTERVAL_S from the first logged packet (the log holds the window only)."""
    start = samples[0][0]
    sums: dict[int, list[float]] = {}
    for sent, rtt in samples:
        sums.setdefault(int((sent - start) / INTERVAL_S), []).append(rtt)
    last = max(sums)
    values = [sum(sums[k]) / len(sums[k]) if k in sums else math.nan for k in range(last + 1)]
    counts = [float(len(sums.get(k, []))) for k in range(last + 1)]
    # the last interval is cut short by the end of the test
    return Series(INTERVAL_S, values, counts, 0, last - 1 if last > 0 else 0)


def nearest_rank(sorted_values: list[float], p: float) -> float:
    """The p-th percentile as copylab's client computes it (nearest rank)."""
    rank = max(1, math.ceil(p / 100 * len(sorted_values)))
    return sorted_values[rank - 1]


RUNNER = SockperfRunner

"""iperf3 (Debian's 3.12) in reverse mode (-R: the server sends, as in the study).

-l is the message size, which is also its read size (one block per recv(): the "message" receive
strategy). Fractions of -t/-O are silently truncated by iperf3, so it runs whole seconds with -i
intervals and the window is cut from those intervals: everything after the warm-up up to the end of
its run (at least the duration asked for; the rest of its whole second is measured, not wasted);
perf's window follows a timer. -C sets the
congestion control of its data connections on both ends (the client passes it to the server), and
its JSON reports what each end ran. It exits 0 on most failures with -J, so success is decided from
its output, never from the exit status alone.
"""

from __future__ import annotations

import json
import math

from ..contract import CONGESTION_HOST, SERVER_KEYS
from ..errors import ErrorKind
from ..intervals import Series
from . import Result, Runner, check_tool, nan, peer_fields


class Iperf3Runner(Runner):
    window_source = "timer"
    server_exits_by_itself = True  # -1: one test, then exit
    server_stops_with_status = (1,)  # stopped by our SIGINT after a finished test
    INTERVAL_S = 0.1
    method = "iperf3 `-R -l <size>`, its window cut from its 0.1 s intervals"

    def check_installed(self, host=None) -> None:
        check_tool("iperf3", host)

    def server_argv(self, spec, addr, port, workdir, build_dir="") -> list[str]:
        # --forceflush: its "Server listening" line reaches the pipe at once; --idle-timeout: a
        # client that never comes cannot leave it running
        return ["iperf3", "-s", "-1", "-B", addr, "-p", str(port), "--forceflush", "--idle-timeout", "30"]

    def run_seconds(self, spec) -> int:
        return max(1, math.ceil(spec.warmup_s + spec.duration_s - 1e-9))

    def client_argv(self, spec, addr, port, workdir, build_dir="") -> list[str]:
        congestion = [] if spec.congestion == CONGESTION_HOST else ["-C", spec.congestion]
        return ["iperf3", "-c", addr, "-p", str(port), "-R", "-l", str(spec.msg_size), "-P", str(spec.threads),
                "-t", str(self.run_seconds(spec)), "-i", f"{self.INTERVAL_S:g}", *congestion, "-J"]

    def server_ready(self, stream, line) -> bool:
        return stream == "stdout" and line.startswith("Server listening on")

    def window_seconds(self, spec) -> float:
        """The window's length: from the warm-up to the end of its whole-second run."""
        return self.run_seconds(spec) - spec.warmup_s

    def timer_window(self, spec) -> tuple[float, float]:
        return spec.warmup_s, spec.warmup_s + self.window_seconds(spec)

    def result(self, spec, server, client, read_file) -> Result:
        fields = peer_fields(SERVER_KEYS)
        fields["warmup_end"] = "timer"
        try:
            doc = json.loads(client.stdout()) if client else None
        except json.JSONDecodeError:
            doc = None
        if not isinstance(doc, dict):
            message = (client.last_error() if client else "") or "no JSON result"
            return Result(fields, (ErrorKind.NO_RESULT, f"iperf3 client: {message}"))
        if doc.get("error"):
            return Result(fields, (ErrorKind.CLIENT, f"iperf3 client: {doc['error']}"))
        window = iperf3_window(doc, spec.warmup_s, self.window_seconds(spec))
        if window is None:
            return Result(fields, (ErrorKind.NO_RESULT, "iperf3 reported no intervals inside the window"))
        nbytes, seconds = window
        messages = nbytes // spec.msg_size
        end = doc.get("end", {})
        fields.update(bytes=nbytes, duration_s=seconds, throughput_gbps=nbytes * 8 / seconds / 1e9,
                      messages=messages, total_bytes=nan(end.get("sum_received", {}).get("bytes")),
                      server_bytes=nan(end.get("sum_sent", {}).get("bytes")),
                      latency_us=seconds * spec.threads / messages * 1e6 if messages else math.nan,
                      warmup_s=spec.warmup_s,
                      # reverse mode: the sender is iperf3's server
                      srv_congestion=end.get("sender_tcp_congestion", ""),
                      cli_congestion=end.get("receiver_tcp_congestion", ""))
        return Result(fields, None, iperf3_series(doc, spec.warmup_s, self.window_seconds(spec)))


def _sums(doc: dict):
    for interval in doc.get("intervals") or []:
        total = interval.get("sum") or {}
        start, end = total.get("start"), total.get("end")
        if start is None or end is None or total.get("omitted"):
            continue
        yield total, start, end


def iperf3_window(doc: dict, warmup_s: float, duration_s: float) -> tuple[int, float] | None:
    """(bytes, seconds) of the intervals inside [warmup, warmup + duration]: those whose middle lies
    in it (iperf3's interval boundaries drift by a few ms from the nominal 0.1 s grid)."""
    nbytes, seconds = 0, 0.0
    for total, start, end in _sums(doc):
        if warmup_s <= (start + end) / 2 <= warmup_s + duration_s:
            nbytes += int(total.get("bytes", 0))
            seconds += float(total.get("seconds", end - start))
    return (nbytes, seconds) if seconds > 0 and nbytes > 0 else None


def iperf3_series(doc: dict, warmup_s: float, duration_s: float) -> Series | None:
    """Gbit/s per -i interval from the client's start; the window is the intervals iperf3_window counts."""
    values, middles = [], []
    for total, start, end in _sums(doc):
        seconds = float(total.get("seconds", end - start)) or math.nan
        values.append(int(total.get("bytes", 0)) * 8 / seconds / 1e9)
        middles.append((start + end) / 2)
    inside = [k for k, m in enumerate(middles) if warmup_s <= m <= warmup_s + duration_s]
    if not values or not inside:
        return None
    return Series(Iperf3Runner.INTERVAL_S, values, [], inside[0], inside[-1])


RUNNER = Iperf3Runner

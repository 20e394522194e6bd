"""copylab's own servers (one per registry IMPL) and its client."""

from __future__ import annotations

import math

from ..contract import CONGESTION_HOST, SERVER_KEYS, native_limits
from ..errors import CopylabError, ErrorKind
from ..intervals import from_bytes, from_round_trips, round_windows
from ..paths import BUILD_DIR, client_binary, server_binary
from .. import registry
from . import Result, Runner, WindowEvent, nan

# stderr lines of copylab's programs that are not errors
NOT_ERRORS = ("listening on", "window open", "window closed")


class NativeRunner(Runner):
    window_source = "client"
    port_later = True  # --port-from

    def __init__(self, impl: str, sanitize: bool = False):
        self.impl, self.sanitize = impl, sanitize

    def check_installed(self, host=None) -> None:
        if host is not None and host.remote:
            return  # built there when the topology was set up (sweep.remote)
        for binary in (server_binary(self.impl, self.sanitize), client_binary(self.sanitize)):
            if not binary.exists():
                raise CopylabError(f"{binary} is missing: build the native programs first (make -C native)")

    @staticmethod
    def _congestion(spec) -> list[str]:
        return [] if spec.congestion == CONGESTION_HOST else ["--congestion", spec.congestion]

    def server_argv(self, spec, addr, port, workdir, build_dir=str(BUILD_DIR)) -> list[str]:
        return [f"{build_dir}/{server_binary(self.impl, self.sanitize).name}", "--bind", addr, "--port", str(port),
                "--msg-size", str(spec.msg_size), "--mode", spec.mode, "--working-set", str(spec.working_set),
                *(["--ring-memory", str(spec.ring_memory)] if spec.ring_memory else []),
                *self._congestion(spec), "--json"]

    def client_argv(self, spec, addr, port: int | str, workdir, build_dir=str(BUILD_DIR)) -> list[str]:
        """port: the server's port, or the path of the FIFO the engine writes it to (port_later)."""
        where = ["--port-from", port] if isinstance(port, str) else ["--port", str(port)]
        argv = [f"{build_dir}/{client_binary(self.sanitize).name}", "--connect", addr, *where,
                "--msg-size", str(spec.msg_size), "--mode", spec.mode, "--threads", str(spec.threads),
                "--duration", f"{spec.duration_s:g}", "--warmup", f"{spec.warmup_s:g}",
                "--steady-max", f"{spec.steady_max_s:g}", *(["--rounds", str(spec.rounds)] if spec.rounds > 1 else []),
                "--receive", spec.receive,
                *self._congestion(spec), *setup_timeout(spec), "--announce-window", "--json"]
        return argv + (["--verify"] if spec.verify else [])

    def server_ready(self, stream, line) -> bool:
        return stream == "stderr" and line.startswith("listening on")

    def client_event(self, stream, line) -> WindowEvent | None:
        if stream == "stderr":
            if line.startswith("window open"):
                return WindowEvent("open")
            if line.startswith("window closed"):
                return WindowEvent("close")
        return None

    def error_of(self, side) -> str:
        return side.last_error(NOT_ERRORS)

    def result(self, spec, server, client, read_file) -> Result:
        cli = client.json_output() if client else None
        srv = server.json_output()
        fields = {key: nan((cli or {}).get(key)) for key in (
            "throughput_gbps", "latency_us", "bytes", "duration_s", "messages", "total_bytes", "latency_p50_us",
            "latency_p99_us", "latency_min_us", "latency_max_us", "recv_calls", "warmup_s")}
        verified = (cli or {}).get("verified", "")
        fields["verified"] = "" if verified is None else verified  # null: nothing could be checked
        fields["receive"] = (cli or {}).get("receive", spec.receive)
        for key in ("mapped_bytes", "recv_copied_bytes", "rcv_mss"):
            fields[key] = nan((cli or {}).get(key))
        fields["receive_note"] = receive_note(cli) if cli else ""
        fields["warmup_end"] = (cli or {}).get("warmup_end", "")
        fields["cli_congestion"] = (cli or {}).get("congestion", "")
        fields["srv_congestion"] = (srv or {}).get("congestion", "")
        fields["server_bytes"] = nan((srv or {}).get("bytes"))
        fields["server_messages"] = nan((srv or {}).get("messages"))
        fields["ring_messages"] = nan((srv or {}).get("ring_messages"))
        if fields["ring_messages"] > 0:  # what was cycled, not what was asked (ring.h rounds and bounds it)
            fields["working_set_bytes"] = fields["ring_messages"] * spec.msg_size
        counted = registry.get(self.impl).counters
        for key in SERVER_KEYS:  # what this implementation does not count stays empty, not 0
            fields[key] = nan((srv or {}).get(key)) if key in counted else math.nan
        failure = None
        if not cli:
            failure = (ErrorKind.NO_RESULT, "client printed no JSON result")
        elif not srv:
            failure = (ErrorKind.NO_RESULT, "server printed no JSON result")
        elif cli.get("verified") is False:
            failure = (ErrorKind.NOT_VERIFIED, "client could not verify the received data")
        return Result(fields, failure, _series(spec, cli))


# the MTU of an IPv4 path whose TCP segments (with timestamps) carry exactly one 4 KiB page
PAGE_MSS_MTU = 4096 + 20 + 20 + 12


def receive_note(cli: dict) -> str:
    """What the client's receive strategy could not do, in one sentence (empty when nothing)."""
    receive, total = cli.get("receive"), cli.get("bytes") or 0
    if receive == "discard":
        return ("not verified: MSG_TRUNC drops the bytes in the kernel unseen; what the receive copy costs "
                "is this row's difference to a copying receiver")
    if receive != "zerocopy" or not total:
        return ""
    mapped, mss, page = cli.get("mapped_bytes") or 0, cli.get("rcv_mss") or 0, cli.get("page_size") or 4096
    if mapped >= total:
        return f"all bytes mapped (receive MSS {mss})"
    if mapped > 0:
        why = (f"the receive MSS {mss} is not a multiple of the {page}-byte page, so the last partial page of "
               f"each segment is copied; an MTU of {PAGE_MSS_MTU} (MSS {page}) maps whole segments"
               if mss % page else "the rest arrived in fragments that are not whole pages")
        return f"{100 * mapped / total:.1f}% mapped, the rest copied: {why}"
    return ("nothing mapped, all copied: TCP_ZEROCOPY_RECEIVE maps only whole-page fragments at offset 0 of "
            "pages that are neither compound nor in the page cache, and this sender's bytes arrived in none "
            "(a send that copies fills compound page fragments; sendfile hands over page-cache pages; between "
            "namespaces only a zero-copy sender's deferred copy makes mappable pages)")


def _series(spec, cli: dict | None):
    """The client's per-interval counts as a Series (None when it printed none)."""
    if not cli or not cli.get("interval_s") or cli.get("interval_bytes") is None:
        return None
    start = cli.get("warmup_s")
    if start is None or (isinstance(start, float) and math.isnan(start)):
        return None
    rounds = _rounds(spec, cli)
    if spec.mode == "latency" and cli.get("interval_rtts") is not None:
        return from_round_trips(cli["interval_s"], cli["interval_rtts"], cli.get("interval_rtt_mean_us") or [],
                                start, spec.duration_s, rounds)
    return from_bytes(cli["interval_s"], cli["interval_bytes"], start, spec.duration_s, rounds)


def _rounds(spec, cli: dict) -> list[tuple[int, int]] | None:
    """Each round's window in the client's series (its round_intervals and round_warmup_s); None for
    one round, or when the client did not say (its series is then one window)."""
    lengths, warmups = cli.get("round_intervals"), cli.get("round_warmup_s")
    if spec.rounds <= 1 or not isinstance(lengths, list) or not isinstance(warmups, list) or \
            len(lengths) != len(warmups) or any(w is None or w != w for w in warmups):
        return None
    return round_windows(cli["interval_s"], lengths, warmups, spec.duration_s / spec.rounds)


SLOWEST_FILL_BYTES_S = 50e6  # a floor under any host's page-fault-and-fill rate (1 GiB in 20 s), loaded or not


def setup_timeout(spec) -> list[str]:
    """The client's --setup-timeout when the point's rings are larger than the servers' default
    bound (a cache-level working set, --ring-memory): every server thread builds its ring before it
    answers, and they share the CPUs; [] otherwise (the native default)."""
    if not getattr(spec, "ring_memory", 0):
        return []
    usual = native_limits()["HANDSHAKE_TIMEOUT_S"]  # what a server normally has to answer (protocol.h)
    return ["--setup-timeout", f"{usual + spec.threads * spec.ring_memory / SLOWEST_FILL_BYTES_S:.0f}"]


"""The results contract in one place: names, columns, limits and CPU lists (docs/contracts.md).

Everything that writes or reads results.csv, validates a grid or a `copylab run` flag, or parses a
CPU list imports it from here, so the contract is spelled out once.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import lru_cache

from . import registry
from .errors import CopylabError
from .paths import NATIVE_DIR

# what a sweep may take: the grid check refuses a longer one without --allow-large (sweep/estimate.py),
# and a results table is read up to what such a sweep can write (analysis/load.py)
MAX_WALL_S = 24 * 3600
PER_POINT_OVERHEAD_S = 0.08   # measured: process start, connection set-up, drain and stop, record

# what can be measured: native/registry.def, read by registry.py
IMPLS = registry.names(kind="native")       # copylab's own senders (the study's and the extra ones)
STUDY_IMPLS = registry.study_impls()        # the ones Part E compares (roles two_copy, one_copy, zero_copy)
PEERS = registry.names(kind="peer")         # reference programs measured by the same engine
PEER_MODES = registry.peer_modes()          # the one mode each peer measures
ALL_IMPLS = IMPLS + PEERS
MODES = ("throughput", "latency")
# how the receiver asks for data (registry.def: RECEIVE)
RECEIVE_STRATEGIES = registry.receive_strategies()
TOPOLOGIES = ("netns", "loopback", "ssh")  # what a measurement runs on; grids also accept "auto"
# TCP congestion control of every connection: a kernel name, or "host" for what the host defaults
# to. cubic is Linux's default and what most hosts run (docs/methodology.md: it moves the answers)
CONGESTION_DEFAULT = "cubic"
CONGESTION_HOST = "host"
_CONGESTION_NAME = re.compile(r"[A-Za-z0-9_-]{1,15}")


@lru_cache(maxsize=None)
def native_limits() -> dict[str, float]:
    """The #define NAME VALUE lines of native/limits.h and protocol.h: the limits C and Python share."""
    values = {}
    for line in [line for header in ("limits.h", "protocol.h") for line in (NATIVE_DIR / header).read_text().splitlines()]:
        match = re.match(r"#define\s+([A-Z_]+)\s+([0-9.]+)\s*(?:/\*.*)?$", line)
        if match:
            text = match.group(2)
            values[match.group(1)] = float(text) if "." in text else int(text)
    return values


_L = native_limits()
# Limits shared by `copylab run`, the grid schema and the native programs' own flags (limits.h)
MSG_SIZE_RANGE = (_L["MSG_SIZE_MIN"], _L["MSG_SIZE_MAX"])       # bytes; 8: one byte per field
THREADS_RANGE = (1, _L["THREADS_MAX"])
ROUNDS_RANGE = (1, _L["ROUNDS_MAX"])                            # fresh sets of connections a window is split over
DURATION_RANGE = (_L["DURATION_MIN_S"], _L["SECONDS_MAX"])      # measured seconds
WARMUP_RANGE = (0.0, _L["WARMUP_MAX_S"])                        # seconds discarded before the window
STEADY_MAX_RANGE = (0.0, _L["WARMUP_MAX_S"])                    # how much later a steady state may open it
WORKING_SET_RANGE = (1, _L["WORKING_SET_MAX"])                  # bytes of distinct messages cycled through
WORKING_SET_DEFAULT = _L["WORKING_SET_DEFAULT"]
INTERVAL_DEFAULT_S = _L["INTERVAL_DEFAULT_S"]
REPETITIONS_RANGE = (1, 100)
SEED_RANGE = (0, 2**32 - 1)


@dataclass(frozen=True)
class Column:
    name: str
    numeric: bool
    meaning: str


def _numeric(name: str, meaning: str) -> Column:
    return Column(name, True, meaning)


def _text(name: str, meaning: str) -> Column:
    return Column(name, False, meaning)


# perf stat counters recorded per side (srv_* = server = sender, cli_* = client = receiver)
COUNTER_KEYS = ("cycles", "instructions", "l1_misses", "llc_misses", "cache_misses",
                "context_switches", "cpu_migrations", "task_clock_ms")
SUMMED_COUNTERS = ("cycles", "l1_misses", "llc_misses", "context_switches")  # sender + receiver
# what the servers count themselves (their JSON), per run
SERVER_KEYS = ("send_calls", "user_copy_bytes", "zc_sends", "zc_completions", "zc_copied", "enobufs")

# profile buckets (profile/rules.py says what each holds) and Cai et al.'s categories
PROFILE_BUCKETS = ("user_copy", "kernel_copy_from_user", "zerocopy_pin", "deferred_copy", "kernel_copy_to_user",
                   "zerocopy_completion", "uring_submit", "page_cache_ref", "receive_map", "tcp_send",
                   "tcp_receive", "scheduling", "syscall", "other_process", "idle", "other")
CAI_CATEGORIES = ("data_copy", "tcp_ip", "netdevice", "skb_mgmt", "mem_alloc", "lock", "scheduling", "other")

REQUIRED = (
    _text("impl", "implementation: a name of native/registry.def (a sender of copylab's or a reference peer)"),
    _text("mode", "throughput or latency"),
    _numeric("msg_size", "bytes per message"),
    _numeric("threads", "client threads = connections"),
    _numeric("rep", "repetition index, from 0"),
    _numeric("throughput_gbps", "application payload, Gbit/s (10^9), over the measured window"),
    _numeric("latency_us", "latency mode: mean round trip; throughput mode: mean time per message per connection"),
    _numeric("cycles", "sender + receiver CPU cycles over the window (see cycles_source); empty if unmeasurable"),
    _numeric("l1_misses", "sender + receiver L1-dcache-load-misses; empty if unsupported"),
    _numeric("llc_misses", "sender + receiver LLC-load-misses; empty if unsupported"),
    _numeric("context_switches", "sender + receiver context switches over the window"),
    _numeric("bytes", "payload bytes the counters' window covers"),
    _numeric("duration_s", "measured seconds"),
)

EXTRA = (
    _text("point_id", "file-name-safe name encoding every parameter of the point"),
    _text("run_kind", "measure (a run of the statistics, results.csv) or profile (an extra run under perf "
                      "record, profiles.csv: never in the statistics)"),
    _text("status", "ok or failed"),
    _text("error", "why the point failed, one line"),
    _text("error_kind", "why the point failed, as a word: server_failed, client_failed, namespace_lost, "
                        "timeout, no_result, not_verified, notebook_failed, kernel_died, stopped, "
                        "window_stretched, counters_invalid, values_invalid"),
    _text("started_at", "UTC time the point started"),
    _text("build_id", "fingerprint of the native build that measured the point (sources, compiler, flags)"),
    _text("topology", "netns, loopback or ssh"),
    _text("pin_server", "taskset CPU list of the server (sender), empty if not pinned"),
    _text("pin_client", "taskset CPU list of the client (receiver), empty if not pinned"),
    _numeric("warmup_s", "seconds discarded before the window"),
    _text("receive", "how the receiver asked for data (registry.def RECEIVE): message (one message's bytes per "
                     "recv), bulk (large reads), zerocopy (TCP_ZEROCOPY_RECEIVE) or discard (MSG_TRUNC)"),
    _numeric("mapped_bytes", "bytes of the window the receiver mapped with TCP_ZEROCOPY_RECEIVE instead of "
                             "copying (receive zerocopy; 0 otherwise)"),
    _numeric("recv_copied_bytes", "bytes of the window the kernel copied into the receiver's memory (0 with "
                                  "receive discard)"),
    _numeric("rcv_mss", "the receiver's TCP receive MSS (what decides whether whole pages arrive)"),
    _text("receive_note", "what the receive strategy could not do: why nothing was verified (discard), how "
                          "much was mapped and why not more (zerocopy); empty otherwise"),
    _text("congestion", "the TCP congestion control asked for: a kernel name, or host (the host's default)"),
    _text("srv_congestion", "the congestion control the sender's connections ran, as the kernel reported it"),
    _text("cli_congestion", "the congestion control the receiver's connections ran, as the kernel reported it"),
    _text("rps", "True when each side's receive softirq work was steered to its own pinned CPUs (RPS)"),
    _numeric("working_set_bytes", "bytes of distinct messages each sender connection cycled through, as used: "
                                  "ring_messages x msg_size (the working set asked for, rounded up to whole "
                                  "messages, at least 4, within the ring's memory bounds: native/ring.h)"),
    _numeric("ring_messages", "distinct messages the sender's connections cycled through (the fewest of any)"),
    _text("working_set_level", "the cache level the working set was placed by (L1d/2, L2/2, LLC/2, LLC*4: "
                               "cachelevels.py, resolved from the host's caches), empty when given in bytes"),
    _numeric("rounds", "fresh sets of connections the window was split over, one after another, each after its "
                       "own warm-up (copylab's client; 1 for the peers): warmup_s and duration_s are their sums"),
    _numeric("steady_max_s", "how much later than warmup_s a steady state was awaited (0: fixed warm-up)"),
    _text("warmup_end", "what ended the warm-up: fixed, steady (the rates settled), bound (steady_max_s "
                        "reached), timer or peer (the peer's own)"),
    _numeric("interval_s", "length of the reporting intervals inside the window"),
    _numeric("intervals", "whole intervals inside the window"),
    _numeric("interval_cv", "coefficient of variation of the window's interval rates (throughput; round "
                            "trips in latency mode); over several rounds, about each round's own mean (pooled)"),
    _text("bimodal", "True when the window's interval values fall into two levels (Hartigan's dip test, p < 0.05)"),
    _numeric("level_low", "the lower level of a bimodal window (Gbit/s; latency mode: mean round trip, us)"),
    _numeric("level_high", "the higher level of a bimodal window"),
    _numeric("level_high_share", "share of the window's intervals at the higher level"),
    _text("window_source", "what opened and closed the counting window: client (its own markers), timer, peer"),
    _numeric("latency_p50_us", "median round trip (latency mode)"),
    _numeric("latency_p99_us", "99th percentile round trip (latency mode)"),
    _numeric("latency_min_us", "fastest round trip (latency mode)"),
    _numeric("latency_max_us", "slowest round trip (latency mode)"),
    _numeric("messages", "whole messages received in the window"),
    _numeric("total_bytes", "bytes the client received in all (warm-up, window, drain)"),
    _numeric("server_bytes", "bytes the server sent in all"),
    _numeric("server_messages", "messages the server sent in all"),
    _numeric("recv_calls", "recv() calls of the client that returned data in the window"),
    _numeric("send_calls", "send/sendmsg calls of the server that returned > 0"),
    _numeric("user_copy_bytes", "bytes the server copied in user space (A1's serialisation)"),
    _numeric("zc_sends", "zero-copy senders: send calls that returned > 0"),
    _numeric("zc_completions", "zero-copy senders: send calls whose completion arrived"),
    _numeric("zc_copied", "zero-copy senders: of those, completions saying the kernel copied after all"),
    _numeric("enobufs", "zero-copy senders: send calls refused with ENOBUFS (back-pressure)"),
    _text("verified", "the client found every checked byte as sent"),
    _numeric("rep_cv", "coefficient of variation of the point's repetitions (throughput, or p50 round trip)"),
    _text("unstable", "True when rep_cv exceeds 10%: the point's repetitions disagree"),
    _text("cycles_source", "pmu (core cycles) or tsc (TSC reference cycles, no PMU); empty if none"),
    _text("counters_note", "why a counter is empty"),
    *(_numeric(f"{side}_{key}", f"{'server (sender)' if side == 'srv' else 'client (receiver)'} {key}")
      for key in COUNTER_KEYS for side in ("srv", "cli")),
    _numeric("srv_cpu_busy", "share of the sender's CPU busy in the window (/proc/stat; pinned local runs)"),
    _numeric("cli_cpu_busy", "share of the receiver's CPU busy in the window (/proc/stat; pinned local runs)"),
    _numeric("srv_cpu_steal", "share of the sender's CPU time stolen by the hypervisor in the window"),
    _numeric("cli_cpu_steal", "share of the receiver's CPU time stolen by the hypervisor in the window"),
    _numeric("cpu_round_trip_ns", "round trip of a cache line between the sender's and the receiver's CPUs "
                                  "(native/cpuprobe), the larger of the probes just before and just after the run"),
    _numeric("cpu_round_trip_before_ns", "that round trip just before the run (after any wait)"),
    _numeric("cpu_round_trip_after_ns", "that round trip just after the run"),
    _numeric("cpu_apart_line_ns", "the line the rule had learned from this host's round trips when the run was "
                                  "judged (placement.py): between its two modes or, while it showed one, the "
                                  "bound beyond which a probe is far outside it (apart on first sight); empty "
                                  "with too few probes"),
    _text("cpus_apart", "True when a round trip exceeded that line: the hypervisor had put the two vCPUs "
                        "apart (placement.py); such a run is measured again while the placement allowance lasts"),
    _numeric("placement_retries", "runs of this point set aside (runs/apart/) because the CPUs were apart"),
    _numeric("placement_wait_s", "seconds waited before the run for the CPUs to come together"),
    _numeric("placement_s", "seconds the point spent on placement beyond its kept run: probes, waits, runs set aside"),
    _text("placement_note", "why the placement columns are empty"),
    _text("profile_mode", "per_cpu (perf record -a on the pinned CPUs) or per_process; empty if not profiled"),
    _text("profile_event", "the sampled event (cpu-clock without a PMU, cycles with one) and its rate"),
    _text("profile_note", "why the profile columns are empty, or what limits them"),
    *(_numeric(f"{side}_prof_samples", f"profile samples of the {name} in the window")
      for side, name in (("srv", "sender"), ("cli", "receiver"))),
    *(_numeric(f"{side}_prof_skid", f"share of the {name}'s samples whose leaf was an irq-enable site")
      for side, name in (("srv", "sender"), ("cli", "receiver"))),
    *(_numeric(f"{side}_prof_{bucket}", f"share of the {name}'s profile samples in bucket {bucket}")
      for side, name in (("srv", "sender"), ("cli", "receiver")) for bucket in PROFILE_BUCKETS),
    *(_numeric(f"{side}_cai_{cat}", f"share of the {name}'s non-idle samples in Cai et al.'s category {cat}")
      for side, name in (("srv", "sender"), ("cli", "receiver")) for cat in CAI_CATEGORIES),
)

ALL = REQUIRED + EXTRA
REQUIRED_COLUMNS = tuple(c.name for c in REQUIRED)
COLUMNS = tuple(c.name for c in ALL)
NUMERIC_COLUMNS = tuple(c.name for c in ALL if c.numeric)
TEXT_COLUMNS = tuple(c.name for c in ALL if not c.numeric)

# What no measurement can be, checked where a program's answer becomes a row (measurement.py: the
# point fails and the value is left empty) and again where a results folder is loaded
# (analysis/validate.py: refused): not a number, infinite, negative, more than a 64-bit counter
# holds, a share above 1, or a rate no host can move.
U64 = float(2**64)  # perf's counters are u64; nothing counted here can exceed one
SHARE_SLACK = 1e-6
# Every payload byte crosses memory at least twice (the sender's buffer read, the receiver's
# written). A 12-channel DDR5 socket moves about 460 GB/s (3.7 Tbit/s), HBM3 a few TB/s; veth and
# loopback carry 10-100 Gbit/s. 10 Tbit/s is above any host's memory and orders of magnitude above
# anything measured here: a value beyond it is a unit slip or garbage (1.8e19 passed validation).
THROUGHPUT_MAX_GBPS = 10_000.0
# the measure an ok row of each mode stands for: a row without it says nothing (it was dropped silently)
MODE_MEASURE = {"throughput": "throughput_gbps", "latency": "latency_us"}


def is_share(column: str) -> bool:
    """Columns that hold a share of something: between 0 and 1."""
    if column.endswith(("_cpu_busy", "_cpu_steal", "_prof_skid", "_share")):
        return True
    if column.startswith(("srv_prof_", "cli_prof_")) and not column.endswith("_samples"):
        return True
    return column.startswith(("srv_cai_", "cli_cai_"))


def ceiling(column: str) -> tuple[float, str]:
    """The largest value a numeric column can hold, and why, in the words of a refusal."""
    if is_share(column):
        return 1.0 + SHARE_SLACK, "a share, at most 1"
    if column == "throughput_gbps":
        return THROUGHPUT_MAX_GBPS, f"more than {THROUGHPUT_MAX_GBPS:g} Gbit/s, beyond what any host's memory moves"
    return U64, "more than any counter can hold (2^64)"


def value_problem(column: str, value) -> str | None:
    """What is wrong with value in numeric column (None, NaN: not measured, fine), or None."""
    if value is None or isinstance(value, bool) or not isinstance(value, (int, float)):
        return None if value is None else "not a number"
    if math.isnan(value):
        return None
    if not math.isfinite(value):
        return "must be a finite number or empty"
    if value < 0:
        return "cannot be negative"
    high, why = ceiling(column)
    return f"impossible: {why}" if value > high else None
GROUP_KEYS = ("impl", "mode", "msg_size", "threads")  # a point, over its repetitions
UNSTABLE_CV = 0.10  # repetitions of a point that vary more than this are flagged


# ------------------------------------------------------------------------------------------------
# CPU lists (taskset syntax: "0", "0-3", "0,2-3")

_CPU_LIST = re.compile(r"\d+(-\d+)?(,\d+(-\d+)?)*")


def parse_cpu_list(key: str, text) -> tuple[int, ...]:
    """'0-1,3' -> (0, 1, 3); a CopylabError naming key when text is not such a list."""
    if isinstance(text, int) and not isinstance(text, bool):
        text = str(text)
    if not isinstance(text, str) or not _CPU_LIST.fullmatch(text):
        raise CopylabError(f"{key}: must be a CPU list like '0' or '0-1,3', got {text!r}")
    cpus: list[int] = []
    for part in text.split(","):
        low, _, high = part.partition("-")
        if high and int(high) < int(low):
            raise CopylabError(f"{key}: range {part} runs backwards in {text!r}")
        cpus.extend(range(int(low), int(high or low) + 1))
    return tuple(sorted(set(cpus)))


def check_cpus_available(key: str, text: str | None, usable: set[int]) -> None:
    """Refuse a CPU list naming a CPU this process may not run on."""
    if text is None:
        return
    for cpu in parse_cpu_list(key, text):
        if cpu not in usable:
            raise CopylabError(f"{key}: CPU {cpu} is not available on this host "
                               f"(usable CPUs: {','.join(map(str, sorted(usable)))})")


def check_int(key: str, value, bounds: tuple[int, int]) -> int:
    low, high = bounds
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise CopylabError(f"{key}: must be an integer from {low} to {high}, got {value!r}")
    return value


def check_seconds(key: str, value, bounds: tuple[float, float]) -> float:
    import math

    low, high = bounds
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if not ok or not low <= value <= high:
        raise CopylabError(f"{key}: must be a number of seconds from {low:g} to {high:g}, got {value!r}")
    return float(value)


def check_congestion(key: str, value) -> str:
    """"host", or a congestion control's name as the kernel spells them."""
    if not isinstance(value, str) or not (value == CONGESTION_HOST or _CONGESTION_NAME.fullmatch(value)):
        raise CopylabError(f"{key}: must be a TCP congestion control (cubic, bbr, reno, ...) or 'host', "
                           f"got {value!r}")
    return value


def check_choice(key: str, value, options) -> str:
    if value not in options:
        raise CopylabError(f"{key}: must be one of {', '.join(options)}, got {value!r}")
    return value


# the sender's CPU time per byte: the cost every per-byte comparison reads where no PMU counts cycles
# (task-clock works in VMs); analysis/load.py derives the column, the budget (sweep/budget.py) Q2's steps
SENDER_CPU = "srv_cpu_ns_per_byte"


def per_byte(num, den, scale: float = 1.0):
    """num/den of two pandas Series, times scale; a 0 or missing denominator gives NaN, not inf."""
    return num * scale / den.where(den > 0)

"""PointSpec: everything that defines one measurement, and every default of a point (POINT_DEFAULTS),
written once. A module of its own, light to import: the command line's parser reads the defaults
for every command's start, and measuring a point (point.py) needs much more."""

from __future__ import annotations

from dataclasses import MISSING, dataclass, fields

from . import contract
from .errors import CopylabError


@dataclass(frozen=True)
class PointSpec:
    """Everything that defines one measurement; point_id() encodes all of it."""

    impl: str
    mode: str
    msg_size: int
    threads: int
    rep: int = 0
    # the measured window and the warm-up before it: the study's default (docs/methodology.md, "Noise");
    # the grids, `copylab run` and the experiment notebook take these (POINT_DEFAULTS)
    duration_s: float = 1.0
    warmup_s: float = 0.1
    topology: str = "netns"
    pin_server: str | None = None  # CPU list for taskset, e.g. "0"
    pin_client: str | None = None
    verify: bool = False  # full byte-by-byte check on the receiver (costs receiver CPU)
    sanitize: bool = False  # use the ASan/UBSan builds
    receive: str = "message"  # how the client asks for data (contract.RECEIVE_STRATEGIES)
    profile: bool = False  # record call graphs over the window
    congestion: str = contract.CONGESTION_DEFAULT  # TCP congestion control of every connection, or "host"
    working_set: int = contract.WORKING_SET_DEFAULT  # bytes of distinct messages each sender connection cycles
    # the cache level the working set was placed by (cachelevels.py: "L2/2"), "" when given in bytes;
    # such a working set is held exactly: the ring may grow past the default bound (ring_memory)
    working_set_level: str = ""
    steady_max_s: float = 0.0  # > 0: after warmup_s, open the window once the rates are steady, at most this later
    # the window split over this many fresh sets of connections, one after another, each after its own
    # warm-up: each connection settles at its own level, so a pass averages that many (copylab's client)
    rounds: int = 1
    rps: bool = False  # netns, pinned: each side's receive softirq work on its own CPUs (RPS)

    def validate(self) -> "PointSpec":
        contract.check_choice("impl", self.impl, contract.ALL_IMPLS)
        contract.check_choice("mode", self.mode, contract.MODES)
        contract.check_int("msg_size", self.msg_size, contract.MSG_SIZE_RANGE)
        contract.check_int("threads", self.threads, contract.THREADS_RANGE)
        contract.check_int("rep", self.rep, (0, contract.REPETITIONS_RANGE[1] - 1))
        contract.check_seconds("duration_s", self.duration_s, contract.DURATION_RANGE)
        contract.check_seconds("warmup_s", self.warmup_s, contract.WARMUP_RANGE)
        contract.check_choice("topology", self.topology, contract.TOPOLOGIES)
        contract.check_choice("receive", self.receive, contract.RECEIVE_STRATEGIES)
        contract.check_congestion("congestion", self.congestion)
        contract.check_int("working_set", self.working_set, contract.WORKING_SET_RANGE)
        contract.check_seconds("steady_max_s", self.steady_max_s, contract.STEADY_MAX_RANGE)
        contract.check_int("rounds", self.rounds, contract.ROUNDS_RANGE)
        if self.duration_s / self.rounds < contract.DURATION_RANGE[0]:
            raise CopylabError(f"rounds: {self.rounds} rounds split the {self.duration_s:g} s window into "
                               f"{self.duration_s / self.rounds:.3g} s each, under the {contract.DURATION_RANGE[0]:g} s "
                               "a window needs")
        if self.rps and (self.pin_server is None or self.pin_client is None):
            raise CopylabError("rps: steers each side's receive work to its pinned CPUs, so it needs "
                               "pin_server and pin_client")
        for name in ("pin_server", "pin_client"):
            if getattr(self, name) is not None:
                contract.parse_cpu_list(name, getattr(self, name))
        peer_mode = contract.PEER_MODES.get(self.impl)
        if peer_mode and self.mode != peer_mode:
            raise CopylabError(f"impl {self.impl}: measures {peer_mode} mode only, not {self.mode}")
        if peer_mode and self.mode == "latency" and self.threads != 1:
            raise CopylabError(f"impl {self.impl}: its server answers one client at a time, so threads must be 1")
        if peer_mode and self.rounds != 1:
            raise CopylabError(f"impl {self.impl}: runs one connection set per run, so rounds must be 1")
        if peer_mode and self.receive != "message":
            raise CopylabError(f"impl {self.impl}: reads one message per call; receive must be 'message'")
        return self

    @property
    def ring_memory(self) -> int:
        """The servers' --ring-memory: what holds a cache-level working set exactly; 0 (their default
        bound, 8 MiB per connection) for a working set given in bytes."""
        from .memory import exact_ring_memory

        return exact_ring_memory(self.msg_size, self.working_set) if self.working_set_level else 0

    def point_id(self) -> str:
        """A file-name-safe name that encodes every parameter of the point."""
        warmup = f"w{self.warmup_s:g}s" if not self.steady_max_s else f"w{self.warmup_s:g}-{self.warmup_s + self.steady_max_s:g}s"
        parts = [self.impl, self.mode, f"{self.msg_size}B", f"{self.threads}thr", f"r{self.receive}",
                 f"rep{self.rep}", f"d{self.duration_s:g}s", warmup, self.topology, f"cc{self.congestion}"]
        if self.impl in contract.IMPLS:
            parts.append(f"ws{self.working_set}B")
        if self.rounds > 1:
            parts.append(f"k{self.rounds}")
        if self.rps:
            parts.append("rps")
        if self.pin_server is not None or self.pin_client is not None:
            parts.append(f"pin{self.pin_server or 'any'}-{self.pin_client or 'any'}".replace(",", "."))
        for flag in ("verify", "profile"):
            if getattr(self, flag):
                parts.append("prof" if flag == "profile" else flag)
        if self.sanitize:
            parts.append("san")
        return "_".join(parts)



# every default of a point, written once (in PointSpec above): the grid (params.py), `copylab run`, the
# experiment notebook's parameters and spec_from_params take them from here
POINT_DEFAULTS = {f.name: f.default for f in fields(PointSpec) if f.default is not MISSING}

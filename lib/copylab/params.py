"""YAML sweep grids: the schema (pydantic), validation (one line naming the key), expansion into points.

A grid file is read by yamlsafe (no duplicate keys, no alias bombs, bounded nesting) and checked
against GridSchema; the first problem becomes one CopylabError naming the key. Limits come from
contract.py, the same ones `copylab run` and the native programs enforce.
"""

from __future__ import annotations

import ipaddress
import random
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Annotated, Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from . import cachelevels, contract, userfiles, yamlsafe
from .errors import CopylabError
from .fmt import plural
from .hosts import SshSettings, is_destination
from .paths import PROJECT_ROOT
from .memory import point_memory
from .inference.decide import DEFAULT_MARGIN
from .pointspec import POINT_DEFAULTS, PointSpec

_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"

MsgSize = Annotated[int, Field(ge=contract.MSG_SIZE_RANGE[0], le=contract.MSG_SIZE_RANGE[1])]
Threads = Annotated[int, Field(ge=contract.THREADS_RANGE[0], le=contract.THREADS_RANGE[1])]


def _seconds(bounds: tuple[float, float]):
    return Annotated[float, Field(ge=bounds[0], le=bounds[1], allow_inf_nan=False)]


class ProfileSelection(BaseModel):
    """Which points to profile: those matching every list given (a missing list matches all)."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    impls: Optional[list[Literal[contract.ALL_IMPLS]]] = None  # type: ignore[valid-type]
    modes: Optional[list[Literal[contract.MODES]]] = None  # type: ignore[valid-type]
    msg_sizes: Optional[list[MsgSize]] = None
    threads: Optional[list[Threads]] = None

    def matches(self, spec) -> bool:
        return all(values is None or getattr(spec, key) in values
                   for key, values in (("impl", self.impls), ("mode", self.modes),
                                       ("msg_size", self.msg_sizes), ("threads", self.threads)))


# every throughput point at one thread: where the copies are easiest to see, at a modest cost
DEFAULT_PROFILE = {"modes": ["throughput"], "threads": [1]}


class PeerSelection(BaseModel):
    """Reference programs measured in the same sweep (registry.def PEER lines, each in its one
    mode), at the grid's sizes and these thread counts, with their own repetition count."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    tools: Annotated[list[Literal[contract.PEERS]], Field(min_length=1)]  # type: ignore[valid-type]
    # the throughput peer runs its streams on one thread; the latency peer answers one client at a time
    threads: Annotated[list[Threads], Field(min_length=1)] = [1]
    repetitions: Annotated[int, Field(ge=contract.REPETITIONS_RANGE[0], le=contract.REPETITIONS_RANGE[1])] = 1


class CacheSelection(BaseModel):
    """A cache-level part beside the grid (Q2 in the default report): these paths, sizes and thread counts,
    throughput mode, measured in every pass with each of these working sets (cache levels of this host, or
    bytes) as well as the grid's own."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    impls: Annotated[list[Literal[contract.IMPLS]], Field(min_length=1)]  # type: ignore[valid-type]
    msg_sizes: Annotated[list[MsgSize], Field(min_length=1)]
    threads: Annotated[list[Threads], Field(min_length=1)] = [1]
    working_set: Annotated[list[Union[int, str]], Field(min_length=2)]

    @field_validator("working_set", mode="before")
    @classmethod
    def _levels(cls, value):
        return _working_sets(value)


class GridSchema(BaseModel):
    """What a params/*.yaml file may say. Strict: "64" is not 64, true is not 1."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    name: Annotated[str, Field(pattern=_NAME_PATTERN)]
    impls: Annotated[list[Literal[contract.IMPLS]], Field(min_length=1)]  # type: ignore[valid-type]
    modes: Annotated[list[Literal[contract.MODES]], Field(min_length=1)]  # type: ignore[valid-type]
    msg_sizes: Annotated[list[MsgSize], Field(min_length=1)]
    threads: Annotated[list[Threads], Field(min_length=1)]
    receive: Annotated[list[Literal[contract.RECEIVE_STRATEGIES]], Field(min_length=1)] = [POINT_DEFAULTS["receive"]]  # type: ignore[valid-type]
    congestion: Annotated[list[str], Field(min_length=1)] = [POINT_DEFAULTS["congestion"]]
    # bytes, a cache level of this host (cachelevels.py: L1d/2, LLC*4), or a list of them: the working-set axis
    working_set: Union[int, str, Annotated[list[Union[int, str]], Field(min_length=1)]] = POINT_DEFAULTS["working_set"]
    steady_max_s: _seconds(contract.STEADY_MAX_RANGE) = POINT_DEFAULTS["steady_max_s"]
    # a throughput pass's window over this many fresh connection sets, or auto (rounds.py)
    rounds: Union[Annotated[int, Field(ge=1, le=contract.ROUNDS_RANGE[1])], Literal["auto"]] = POINT_DEFAULTS["rounds"]
    rps: bool = POINT_DEFAULTS["rps"]
    placement: bool = True  # runs taken while the two pinned CPUs are near (placement.py)
    equivalence_margin: Annotated[float, Field(gt=0.0, le=1.0, allow_inf_nan=False)] = DEFAULT_MARGIN
    budget_min: Optional[Annotated[float, Field(ge=0.0, le=24 * 60, allow_inf_nan=False)]] = None
    profile: Union[bool, ProfileSelection] = ProfileSelection(**DEFAULT_PROFILE)
    peers: Optional[PeerSelection] = None
    cache: Optional[CacheSelection] = None
    repetitions: Annotated[int, Field(ge=contract.REPETITIONS_RANGE[0], le=contract.REPETITIONS_RANGE[1])] = 1
    duration_s: _seconds(contract.DURATION_RANGE) = POINT_DEFAULTS["duration_s"]
    # round trips' medians settle in far fewer seconds than a throughput's mean: their own window
    latency_duration_s: Optional[_seconds(contract.DURATION_RANGE)] = None
    warmup_s: _seconds(contract.WARMUP_RANGE) = POINT_DEFAULTS["warmup_s"]
    topology: Literal["auto", *contract.TOPOLOGIES] = "auto"  # type: ignore[valid-type]
    pin_server: Optional[str] = None
    pin_client: Optional[str] = None
    # topology ssh: OpenSSH destinations ([user@]host or a ~/.ssh/config Host) and the addresses
    # of the measured data path (the client connects to server_addr)
    server_host: Optional[str] = None
    client_host: Optional[str] = None
    server_addr: Optional[str] = None
    client_addr: Optional[str] = None
    ssh_config: Optional[str] = None  # an ssh_config file instead of ~/.ssh/config (ssh -F)
    shuffle: bool = False
    seed: Annotated[int, Field(ge=contract.SEED_RANGE[0], le=contract.SEED_RANGE[1])] = 0
    verify: bool = False
    description: Optional[str] = ""
    author: Optional[str] = None
    roll_no: Optional[str] = None
    repo_url: Optional[str] = None
    ai_declaration: Optional[str] = None  # a text file, relative to the params file or the project

    @field_validator("congestion")
    @classmethod
    def _congestion(cls, value: list) -> list:
        for item in value:
            contract.check_congestion("congestion", item)
        return value

    @field_validator("msg_sizes", "threads", mode="before")
    @classmethod
    def _whole_numbers(cls, value):
        """1e3 and 64.0 are the integers they write (YAML reads them as floats); 1.5 stays refused."""
        if isinstance(value, list):
            return [_whole(v) for v in value]
        return value

    @field_validator("repetitions", "seed", "rounds", mode="before")
    @classmethod
    def _whole_number(cls, value, info):
        return _rounds(value) if info.field_name == "rounds" else _whole(value)

    @field_validator("working_set", mode="before")
    @classmethod
    def _working_sets(cls, value):
        return _working_sets(value)

    @field_validator("impls", "modes", "msg_sizes", "threads", "receive", "congestion")
    @classmethod
    def _no_repeats(cls, value: list) -> list:
        seen = set()
        for item in value:
            if item in seen:
                raise ValueError(f"{item!r} is listed twice")
            seen.add(item)
        return value

    @field_validator("profile", mode="before")
    @classmethod
    def _profile(cls, value):
        if isinstance(value, dict):
            try:
                return ProfileSelection.model_validate(value)
            except ValidationError as exc:
                err = exc.errors(include_url=False)[0]
                what = ("unknown key (known: impls, modes, msg_sizes, threads)" if err["type"] == "extra_forbidden"
                        else err["msg"].removeprefix("Value error, "))
                raise ValueError(f"{'.'.join(map(str, err['loc']))}: {what}") from None
        if not isinstance(value, (bool, ProfileSelection)):
            raise ValueError("must be true, false or a mapping of impls/modes/msg_sizes/threads lists")
        return value

    @field_validator("pin_server", "pin_client", mode="before")
    @classmethod
    def _cpu_list(cls, value, info):
        if value is None:
            return None
        contract.parse_cpu_list(info.field_name, value)
        return str(value)

    @field_validator("server_host", "client_host")
    @classmethod
    def _destination(cls, value):
        if value is not None and not is_destination(value):
            raise ValueError("must be an ssh destination: [user@]host, or a Host of your ssh config")
        return value

    @field_validator("server_addr", "client_addr")
    @classmethod
    def _address(cls, value):
        if value is not None:
            try:
                ipaddress.ip_address(value)
            except ValueError:
                raise ValueError("must be an IP address of the data path (the host's NIC)") from None
        return value

    @model_validator(mode="after")
    def _point_settings(self):
        if self.rps and (self.pin_server is None or self.pin_client is None):
            raise ValueError("rps steers each side's receive work to its pinned CPUs: set pin_server and pin_client")
        _rounds_fit(self.rounds, self.duration_s)
        return self

    @model_validator(mode="after")
    def _ssh_keys(self):
        keys = ("server_host", "client_host", "server_addr", "client_addr")
        if self.topology == "ssh":
            missing = [k for k in keys if getattr(self, k) is None]
            if missing:
                raise ValueError(f"topology ssh needs {', '.join(missing)}")
        else:
            given = [k for k in keys + ("ssh_config",) if getattr(self, k) is not None]
            if given:
                raise ValueError(f"{given[0]} is only for topology ssh (topology is {self.topology})")
        return self

    @field_validator("description", "author", "roll_no", "repo_url", "ai_declaration", mode="before")
    @classmethod
    def _text(cls, value):
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return str(value)  # a roll number written without quotes
        return value


def _rounds(value):
    """rounds: a whole number, or the word auto as written (strict: "Auto" is refused, naming auto)."""
    value = _whole(value)
    if value == "auto" or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    raise ValueError(f"must be a whole number from 1 to {contract.ROUNDS_RANGE[1]} or auto (lower case)")


def _rounds_fit(rounds, duration_s: float) -> None:
    low = contract.DURATION_RANGE[0]
    if isinstance(rounds, int) and duration_s / rounds < low:
        raise ValueError(f"rounds: {rounds} rounds split the {duration_s:g} s window into "
                         f"{duration_s / rounds:.3g} s each, under the {low:g} s a window needs")


def _working_sets(value):
    """Each entry of working_set a number of bytes in range or a cache level's name (resolved in
    parse_grid)."""
    many = isinstance(value, list)
    items = [_whole(v) for v in value] if many else [_whole(value)]
    for k, item in enumerate(items):
        where = f"entry {k + 1}: " if many else ""
        if isinstance(item, bool) or not isinstance(item, (int, str)):
            raise ValueError(f"{where}must be a number of bytes or a cache level such as L2/2 or LLC*4")
        low, high = contract.WORKING_SET_RANGE
        if isinstance(item, int) and not low <= item <= high:
            raise ValueError(f"{where}must be a number of bytes from {low} to {high}")
        if isinstance(item, str) and not cachelevels.is_level_name(item):
            raise ValueError(f"{where}{item!r} is neither a number of bytes nor a cache level such as L1d/2, "
                             "L2/2, LLC/2 or LLC*4")
    if len(set(map(str, items))) < len(items):
        raise ValueError("an entry is listed twice")
    return items if many else items[0]


def _whole(value):
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return int(value)
    return value


REQUIRED_KEYS = tuple(k for k, f in GridSchema.model_fields.items() if f.is_required())
_FIELDS = tuple(GridSchema.model_fields)


@dataclass(frozen=True)
class Grid:
    """A validated sweep grid (one params/*.yaml file). Every field comes from GridSchema, the one place
    a default is written (parse_grid builds it from the schema's values)."""

    name: str
    impls: tuple[str, ...]
    modes: tuple[str, ...]
    msg_sizes: tuple[int, ...]
    threads: tuple[int, ...]
    receive: tuple[str, ...]
    congestion: tuple[str, ...]
    working_set: tuple[int, ...]  # bytes, one per level of the axis
    working_set_levels: tuple[str, ...]  # the cache level each was placed by ("" : given in bytes)
    steady_max_s: float
    rounds: int | str  # "auto" until the sweep chooses (rounds.py)
    rps: bool
    placement: bool
    equivalence_margin: float
    budget_min: float | None
    profile: object  # True (every point), False, or a ProfileSelection
    peers: object  # a PeerSelection, or None
    cache: object  # a CachePart (its working sets resolved to bytes), or None
    repetitions: int
    duration_s: float
    latency_duration_s: float | None
    warmup_s: float
    topology: str
    pin_server: str | None
    pin_client: str | None
    server_host: str | None
    client_host: str | None
    server_addr: str | None
    client_addr: str | None
    ssh_config: str | None  # resolved path
    shuffle: bool
    seed: int
    verify: bool
    description: str
    author: str | None
    roll_no: str | None
    repo_url: str | None
    ai_declaration: str | None  # resolved path of the declaration file
    source: str = field(default="", compare=False)  # the file it came from

    @property
    def ssh(self) -> SshSettings | None:
        if self.topology != "ssh":
            return None
        return SshSettings(self.server_host, self.client_host, self.server_addr, self.client_addr, self.ssh_config)

    def points(self, topology: str) -> list[PointSpec]:
        """Every (impl, mode, size, threads, receive, congestion, working set, rep), repetition by repetition,
        then the profiled runs. With shuffle each repetition is a freshly shuffled full pass, in
        blocks (shuffled_blocks): the implementations of one (mode, size, threads, receive,
        congestion) cell one after another in random order, the cells in random order. A slow drift
        of the host cannot line up with one implementation, every repetition completes before the
        next, and the runs an implementation is compared with ran seconds apart: the host's state
        drifts over seconds (docs/methodology.md), so comparing within a block cancels most of it.
        The profiled runs are extra runs of the points the profile selection names (perf record
        costs the programs CPU: they never enter the statistics), together at the end so that their
        perf script work never runs next to a measured point."""
        rng = random.Random(self.seed)
        specs = []
        peers = self.peers
        for rep in range(max(self.repetitions, peers.repetitions if peers else 0)):
            one_pass = self.pass_points(rep, topology) if rep < self.repetitions else []
            if peers and rep < peers.repetitions:
                one_pass += [self._spec(tool, contract.PEER_MODES[tool], size, thr, "message", cc, rep, topology)
                             for tool in peers.tools for size in self.msg_sizes for thr in peers.threads
                             for cc in self.congestion
                             if contract.PEER_MODES[tool] in self.modes
                             and (contract.PEER_MODES[tool] != "latency" or thr == 1)]
            specs.extend(shuffled_blocks(one_pass, rng) if self.shuffle else one_pass)
        return specs + self.profile_points(topology)

    def pass_points(self, rep: int, topology: str, keep=None, cache: bool = True) -> list[PointSpec]:
        """One pass over the study's grid and (cache) its cache part, unshuffled; keep(spec) selects a part."""
        specs = [self._spec(impl, mode, size, thr, receive, cc, rep, topology, ws)
                 for impl in self.impls for mode in self.modes for size in self.msg_sizes
                 for thr in self.threads for receive in self.receive for cc in self.congestion
                 for ws in range(len(self.working_set))]
        if self.cache is not None and cache:
            seen = {(s.impl, s.mode, s.msg_size, s.threads, s.working_set) for s in specs}
            specs += [s for s in cache_points(self, rep, topology)
                      if (s.impl, s.mode, s.msg_size, s.threads, s.working_set) not in seen]
        return [s for s in specs if keep is None or keep(s)]

    def profile_points(self, topology: str) -> list[PointSpec]:
        """The extra runs that record call graphs: one per selected point (and peer point)."""
        if self.profile is False:
            return []
        selected = (lambda s: True) if self.profile is True else self.profile.matches
        candidates = self.pass_points(0, topology, cache=False)
        if self.peers:
            candidates += [self._spec(tool, contract.PEER_MODES[tool], size, thr, "message", cc, 0, topology)
                           for tool in self.peers.tools for size in self.msg_sizes for thr in self.peers.threads
                           for cc in self.congestion
                           if contract.PEER_MODES[tool] in self.modes
                           and (contract.PEER_MODES[tool] != "latency" or thr == 1)]
        return [replace(s, profile=True) for s in candidates if selected(s)]

    def duration_of(self, mode: str) -> float:
        return self.latency_duration_s if mode == "latency" and self.latency_duration_s else self.duration_s

    def _spec(self, impl, mode, size, threads, receive, congestion, rep, topology, ws: int = 0) -> PointSpec:
        """ws: which of the grid's working sets (a peer point takes the first: it has no ring)."""
        return PointSpec(impl=impl, mode=mode, msg_size=size, threads=threads, rep=rep, duration_s=self.duration_of(mode),
                         warmup_s=self.warmup_s, topology=topology, pin_server=self.pin_server,
                         pin_client=self.pin_client, verify=self.verify, receive=receive, congestion=congestion,
                         working_set=self.working_set[ws], working_set_level=self.working_set_levels[ws], rps=self.rps,
                         # the steady-state test is for streams; round trips take a fixed warm-up
                         steady_max_s=self.steady_max_s if mode == "throughput" else 0.0,
                         rounds=self.rounds_of(impl, mode))

    def rounds_of(self, impl: str, mode: str) -> int:
        """A throughput pass of copylab's senders splits its window over the grid's rounds (1 until
        an auto choice is made); round trips and the peers take one connection set."""
        native = impl not in contract.PEER_MODES
        return self.rounds if isinstance(self.rounds, int) and mode == "throughput" and native else 1

    def to_dict(self) -> dict:
        out = {key: getattr(self, key) for key in _FIELDS}
        for key in ("impls", "modes", "msg_sizes", "threads", "receive", "congestion"):
            out[key] = list(out[key])
        if isinstance(self.profile, ProfileSelection):
            out["profile"] = self.profile.model_dump(exclude_none=True)
        if self.peers is not None:
            out["peers"] = self.peers.model_dump()
        if self.cache is not None:
            out["cache"] = self.cache.to_dict()
        # one working set in bytes is written as before (a folder's fingerprint stays); levels by name too
        out["working_set"] = self.working_set[0] if len(self.working_set) == 1 else list(self.working_set)
        if any(self.working_set_levels):
            out["working_set_levels"] = dict(zip(self.working_set_levels, self.working_set))
        return out

    @property
    def varies_working_set(self) -> bool:
        return len(self.working_set) > 1


def cache_points(grid: Grid, rep: int, topology: str, threads=None) -> list[PointSpec]:
    """The cache part's points of one pass: its paths, sizes and thread counts (threads: these instead),
    throughput mode, at each of its working sets, held exactly (their levels named)."""
    part = grid.cache
    return [replace(grid._spec(impl, "throughput", size, thr, grid.receive[0], grid.congestion[0], rep, topology),
                    working_set=ws, working_set_level=level)
            for impl in part.impls for size in part.msg_sizes for thr in (threads or part.threads)
            for ws, level in zip(part.working_set, part.levels)]


def peak_memory(grid: Grid) -> tuple[int, str]:
    """(bytes, which point) of the grid's largest point in memory: over every implementation, size and
    working set at the most threads, and the cache part's points (a ring of small page-aligned messages
    may cost more than one of large ones: memory.py), each with the --ring-memory it will ask for."""
    threads = max(grid.threads)
    candidates = [grid._spec(impl, grid.modes[0], size, threads, grid.receive[0], grid.congestion[0], 0, "netns", ws)
                  for impl in grid.impls for size in grid.msg_sizes for ws in range(len(grid.working_set))]
    if grid.cache is not None:
        candidates += cache_points(grid, 0, "netns", [max(grid.cache.threads)])
    best = (0, "")
    for spec in candidates:
        need = point_memory(spec.impl, spec.msg_size, spec.threads, spec.working_set, spec.ring_memory)
        if need > best[0]:
            where = f"{spec.impl}, {plural(spec.threads, 'thread')} x {spec.msg_size} B messages" + (
                f", working set {spec.working_set_level or spec.working_set} = {spec.working_set} B"
                if grid.varies_working_set or spec.working_set_level else "")
            best = (need, where)
    return best


def block_key(spec: PointSpec) -> tuple:
    """The cell a run is compared within: everything but the implementation and the repetition."""
    return (spec.mode, spec.msg_size, spec.threads, spec.receive, spec.congestion, spec.working_set)


def shuffled_blocks(specs: list[PointSpec], rng: random.Random) -> list[PointSpec]:
    """specs in blocks of one cell each (block_key), the blocks and the runs within each shuffled."""
    blocks: dict[tuple, list[PointSpec]] = {}
    for spec in specs:
        blocks.setdefault(block_key(spec), []).append(spec)
    order = list(blocks.values())
    rng.shuffle(order)
    out = []
    for block in order:
        rng.shuffle(block)
        out.extend(block)
    return out


def _first_error(exc: ValidationError, source: str) -> str:
    """pydantic's first error as one line naming the key."""
    err = exc.errors(include_url=False)[0]
    if not err["loc"]:  # a rule across keys (topology ssh): its message names them
        return f"{source}: {err['msg'].removeprefix('Value error, ')}"
    key = str(err["loc"][0])
    if err["type"] == "extra_forbidden":
        return f"{key}: unknown key in {source} (known keys: {', '.join(_FIELDS)})"
    if err["type"] == "missing":
        return f"{key}: required key missing from {source}"
    where = f" (entry {err['loc'][1] + 1})" if len(err["loc"]) > 1 and isinstance(err["loc"][1], int) else ""
    message = err["msg"].removeprefix("Value error, ")
    shown = repr(err.get("input"))
    if len(shown) > 80:
        shown = shown[:77] + "..."
    return f"{key}{where}: {message}, got {shown}"


def parse_grid(data, source: str = "<params>", caches: dict[str, int] | None = None) -> Grid:
    """Validate a loaded YAML mapping; every problem is a CopylabError naming the key. Working sets
    named by cache level are resolved from caches ({"L1d": bytes, ...}; default: this host's)."""
    if not isinstance(data, dict):
        raise CopylabError(f"{source}: must be a YAML mapping of keys (name, impls, modes, msg_sizes, threads, ...)")
    bad_keys = [k for k in data if not isinstance(k, str)]
    if bad_keys:
        raise CopylabError(f"{bad_keys[0]!r}: unknown key in {source} (keys are names: {', '.join(_FIELDS)})")
    try:
        schema = GridSchema.model_validate(data)
    except ValidationError as exc:
        raise CopylabError(_first_error(exc, source)) from None
    values = schema.model_dump()
    for key in ("impls", "modes", "msg_sizes", "threads", "receive", "congestion"):
        values[key] = tuple(values[key])
    values["working_set"], values["working_set_levels"] = _resolve_working_sets(schema.working_set, caches)
    values["profile"] = schema.profile
    values["peers"] = schema.peers
    if schema.cache is not None:
        sizes, levels = _resolve_working_sets(schema.cache.working_set, caches, "cache.working_set")
        values["cache"] = CachePart(tuple(schema.cache.impls), tuple(schema.cache.msg_sizes),
                                    tuple(schema.cache.threads), sizes, levels)
    values["description"] = values["description"] or ""
    if values.get("ai_declaration"):
        values["ai_declaration"] = _declaration_file(values["ai_declaration"], source, "ai_declaration")
    if values.get("ssh_config"):
        values["ssh_config"] = _declaration_file(values["ssh_config"], source, "ssh_config")
    return Grid(**values, source=source)


@dataclass(frozen=True)
class CachePart:
    """The grid's cache part (CacheSelection), its working sets resolved to this host's bytes."""

    impls: tuple[str, ...]
    msg_sizes: tuple[int, ...]
    threads: tuple[int, ...]
    working_set: tuple[int, ...]
    levels: tuple[str, ...]

    def to_dict(self) -> dict:
        return {"impls": list(self.impls), "msg_sizes": list(self.msg_sizes), "threads": list(self.threads),
                "working_set": [level or size for size, level in zip(self.working_set, self.levels)],
                "working_set_levels": dict(zip(self.levels, self.working_set))}


def _resolve_working_sets(asked, caches: dict[str, int] | None,
                          key: str = "working_set") -> tuple[tuple[int, ...], tuple[str, ...]]:
    """(bytes, level names) of the grid's working sets, level names resolved from the host's caches."""
    items = asked if isinstance(asked, list) else [asked]
    if caches is None and any(isinstance(v, str) for v in items):
        caches = cachelevels.host_cache_sizes()
    sizes, names = [], []
    for k, item in enumerate(items):
        where = f"{key} (entry {k + 1})" if isinstance(asked, list) else key
        if isinstance(item, int):
            sizes.append(item)
            names.append("")
            continue
        try:
            size = cachelevels.resolve(item, caches or {})
        except ValueError as exc:
            raise CopylabError(f"{where}: {exc}") from None
        if size > contract.WORKING_SET_RANGE[1]:
            raise CopylabError(f"{where}: {item} is {size} bytes on this host, more than the "
                               f"{contract.WORKING_SET_RANGE[1]} a working set may be")
        sizes.append(size)
        names.append(cachelevels.canonical(item))
    if len(set(sizes)) < len(sizes):
        raise CopylabError(f"{key}: two entries come to the same bytes on this host ("
                           + ", ".join(f"{n} = {b}" if n else str(b) for n, b in zip(names, sizes)) + ")")
    return tuple(sizes), tuple(names)


def _declaration_file(text: str, source: str, key: str) -> str:
    """A file a grid names: relative to the grid file, else to the project root. It must be a
    regular file (a FIFO or a device is named as such); the AI declaration must also be UTF-8 text
    of a sensible size (the sweep copies it into the results folder)."""
    path = Path(text).expanduser()
    base = Path(source).parent if source != "<params>" else PROJECT_ROOT
    resolved = path if path.is_absolute() else (base / path)
    if not resolved.exists():
        resolved = PROJECT_ROOT / path  # also accept paths relative to the project root
    if not resolved.exists():
        raise CopylabError(f"{key}: file not found: {path}")
    if key == "ai_declaration":
        userfiles.read_declaration(resolved, key)
    else:
        userfiles.check_regular(resolved, key)
    return str(resolved.resolve())


def load_grid(path: str | Path) -> Grid:
    """Read and validate a params YAML file (a regular file: a FIFO, a device or a folder is
    named for what it is)."""
    path = Path(path)
    if not path.exists() and not path.is_symlink():
        raise CopylabError(f"params file not found: {path}")
    userfiles.check_regular(path, "params file")
    return parse_grid(yamlsafe.load(path), source=str(path))

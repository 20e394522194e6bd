"""YAML sweep grids: schema, validation (one line naming the key), expansion into points."""

from __future__ import annotations

import itertools
import random
import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from .errors import CopylabError
from .paths import IMPLS, MODES, PROJECT_ROOT
from .point import MSG_SIZE_RANGE, THREADS_RANGE, PointSpec

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
_CPU_LIST = re.compile(r"^\d+(-\d+)?(,\d+(-\d+)?)*$")


@dataclass(frozen=True)
class Grid:
    """A validated sweep grid (one params/*.yaml file)."""

    name: str
    impls: tuple[str, ...]
    modes: tuple[str, ...]
    msg_sizes: tuple[int, ...]
    threads: tuple[int, ...]
    repetitions: int = 1
    duration_s: float = 2.0
    warmup_s: float = 0.5
    topology: str = "auto"
    pin_server: str | None = None
    pin_client: str | None = None
    shuffle: bool = False
    seed: int = 0
    verify: bool = False
    description: str = ""
    author: str | None = None
    roll_no: str | None = None
    repo_url: str | None = None
    ai_declaration: str | None = None  # path of a text file, resolved against the params file's folder
    source: str = field(default="", compare=False)  # the file it came from

    def points(self, topology: str) -> list[PointSpec]:
        """Every (impl, mode, size, threads, rep), in grid order or shuffled with the seed (flent's default)."""
        specs = [
            PointSpec(impl=impl, mode=mode, msg_size=size, threads=thr, rep=rep, duration_s=self.duration_s,
                      warmup_s=self.warmup_s, topology=topology, pin_server=self.pin_server,
                      pin_client=self.pin_client, verify=self.verify)
            for rep, impl, mode, size, thr in itertools.product(
                range(self.repetitions), self.impls, self.modes, self.msg_sizes, self.threads)
        ]
        if self.shuffle:
            random.Random(self.seed).shuffle(specs)
        return specs

    def to_dict(self) -> dict:
        out = {key: getattr(self, key) for key in _FIELDS}
        for key in ("impls", "modes", "msg_sizes", "threads"):
            out[key] = list(out[key])
        return out


# key -> (type check description, validator returning the normalised value)
def _list_of(kind, check, what):
    def validate(key, value):
        if not isinstance(value, list) or not value:
            raise CopylabError(f"{key}: must be a non-empty list of {what}, got {value!r}")
        out = []
        for item in value:
            if not isinstance(item, kind) or isinstance(item, bool) or not check(item):
                raise CopylabError(f"{key}: every entry must be {what}, got {item!r}")
            if item in out:
                raise CopylabError(f"{key}: {item!r} is listed twice")
            out.append(item)
        return tuple(out)
    return validate


def _int_in(low, high):
    def validate(key, value):
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise CopylabError(f"{key}: must be an integer from {low} to {high}, got {value!r}")
        return value
    return validate


def _seconds(low, high):
    def validate(key, value):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:
            raise CopylabError(f"{key}: must be a number of seconds from {low:g} to {high:g}, got {value!r}")
        return float(value)
    return validate


def _choice(*options):
    def validate(key, value):
        if value not in options:
            raise CopylabError(f"{key}: must be one of {', '.join(options)}, got {value!r}")
        return value
    return validate


def _bool(key, value):
    if not isinstance(value, bool):
        raise CopylabError(f"{key}: must be true or false, got {value!r}")
    return value


def _text(key, value):
    if value is None:
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        value = str(value)  # a roll number written without quotes
    if not isinstance(value, str):
        raise CopylabError(f"{key}: must be text, got {value!r}")
    return value


def _cpus(key, value):
    if value is None:
        return None
    value = str(value) if isinstance(value, int) and not isinstance(value, bool) else value
    if not isinstance(value, str) or not _CPU_LIST.match(value):
        raise CopylabError(f"{key}: must be a CPU list like '0' or '0-1,3', got {value!r}")
    return value


def _name(key, value):
    if not isinstance(value, str) or not _NAME.match(value):
        raise CopylabError(f"{key}: must be 1-64 letters, digits, '.', '_' or '-' (it names the output folder), got {value!r}")
    return value


_VALIDATORS = {
    "name": _name,
    "description": _text,
    "impls": _list_of(str, lambda v: v in IMPLS, f"one of {', '.join(IMPLS)}"),
    "modes": _list_of(str, lambda v: v in MODES, f"one of {', '.join(MODES)}"),
    "msg_sizes": _list_of(int, lambda v: MSG_SIZE_RANGE[0] <= v <= MSG_SIZE_RANGE[1],
                          f"an integer number of bytes from {MSG_SIZE_RANGE[0]} to {MSG_SIZE_RANGE[1]}"),
    "threads": _list_of(int, lambda v: THREADS_RANGE[0] <= v <= THREADS_RANGE[1],
                        f"an integer from {THREADS_RANGE[0]} to {THREADS_RANGE[1]}"),
    "repetitions": _int_in(1, 100),
    "duration_s": _seconds(0.1, 3600),
    "warmup_s": _seconds(0, 600),
    "topology": _choice("auto", "netns", "loopback"),
    "pin_server": _cpus,
    "pin_client": _cpus,
    "shuffle": _bool,
    "seed": _int_in(0, 2**32 - 1),
    "verify": _bool,
    "author": _text,
    "roll_no": _text,
    "repo_url": _text,
    "ai_declaration": _text,
}
_FIELDS = tuple(_VALIDATORS)
REQUIRED_KEYS = ("name", "impls", "modes", "msg_sizes", "threads")


def parse_grid(data, source: str = "<params>") -> Grid:
    """Validate a loaded YAML mapping; every problem is a CopylabError naming the key."""
    if not isinstance(data, dict):
        raise CopylabError(f"{source}: must be a YAML mapping of keys (name, impls, modes, msg_sizes, threads, ...)")
    unknown = sorted(str(k) for k in data if k not in _VALIDATORS)
    if unknown:
        raise CopylabError(f"{unknown[0]}: unknown key in {source} (known keys: {', '.join(_FIELDS)})")
    missing = [k for k in REQUIRED_KEYS if k not in data]
    if missing:
        raise CopylabError(f"{missing[0]}: required key missing from {source}")
    values = {key: _VALIDATORS[key](key, value) for key, value in data.items()}
    if values.get("ai_declaration"):
        path = Path(values["ai_declaration"])
        base = Path(source).parent if source != "<params>" else PROJECT_ROOT
        resolved = path if path.is_absolute() else (base / path)
        if not resolved.is_file():
            resolved = PROJECT_ROOT / path  # also accept paths relative to the project root
        if not resolved.is_file():
            raise CopylabError(f"ai_declaration: file not found: {path}")
        values["ai_declaration"] = str(resolved.resolve())
    return Grid(**values, source=source)


def load_grid(path: str | Path) -> Grid:
    """Read and validate a params YAML file."""
    path = Path(path)
    if not path.is_file():
        raise CopylabError(f"params file not found: {path}")
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise CopylabError(f"{path}: not valid YAML{where}: {getattr(exc, 'problem', None) or exc}") from None
    except UnicodeDecodeError:
        raise CopylabError(f"{path}: not a text file") from None
    return parse_grid(data, source=str(path))

"""The registry of implementations, peers and receive strategies: native/registry.def, read here.

native/registry.def is the one place an implementation is named: C includes it as X-macros, and
this module parses the same lines. Everything in lib/ that needs to know which implementations
exist, what role each plays in the study, its label, colour, counters or host needs asks here;
Part E compares roles (two_copy, one_copy, zero_copy), never names.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from .paths import NATIVE_DIR

REGISTRY_FILE = NATIVE_DIR / "registry.def"
ROLES = ("two_copy", "one_copy", "zero_copy", "reference", "extra")
STUDY_ROLES = ("two_copy", "one_copy", "zero_copy")  # what Part E compares, in this order
BASELINE_ROLE = "two_copy"                           # every comparison is against it

_ENTRY = re.compile(r"^(IMPL|PEER|RECEIVE)\((.*)\)\s*$", re.S)
_TOKEN = re.compile(r'"((?:[^"\\]|\\.)*)"|([A-Za-z0-9_.+-]+)')


@dataclass(frozen=True)
class Impl:
    """A way of sending the study's message (kind "native") or a reference program (kind "peer")."""

    name: str
    kind: str                 # "native" (native/<name>_server.c) or "peer"
    role: str                 # one of ROLES
    label: str                # short, for legends and tables
    path: str                 # what it does, in a phrase
    colour: str
    counters: tuple[str, ...] = ()   # server counters it reports (registry.def)
    needs: tuple[str, ...] = ()      # host needs doctor checks
    wire_id: int = 0                 # native: the id its server announces
    mode: str | None = None          # peers: the one mode they measure

    @property
    def native(self) -> bool:
        return self.kind == "native"

    @property
    def process(self) -> str:
        """The name its server process runs under (what the profiler attributes samples to)."""
        return f"{self.name}_server" if self.native else self.name


@dataclass(frozen=True)
class Receive:
    name: str
    wire_id: int
    description: str


def _tokens(args: str) -> list[str]:
    return [m.group(1) if m.group(1) is not None else m.group(2) for m in _TOKEN.finditer(args)]


def _entries(text: str):
    """(kind, [arguments]) for each IMPL/PEER/RECEIVE line of registry.def (continuation lines joined)."""
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    statement = ""
    for line in text.splitlines():
        if not line.strip():
            continue
        statement = f"{statement} {line.strip()}" if statement else line.strip()
        if statement.count("(") == statement.count(")"):
            match = _ENTRY.match(statement)
            if not match:
                raise ValueError(f"{REGISTRY_FILE}: cannot read {statement!r}")
            yield match.group(1), _tokens(match.group(2))
            statement = ""


@lru_cache(maxsize=None)
def _load() -> tuple[tuple[Impl, ...], tuple[Receive, ...]]:
    impls, receives = [], []
    for kind, args in _entries(REGISTRY_FILE.read_text()):
        if kind == "IMPL":
            name, wire, role, label, path, colour, counters, needs = args
            impls.append(Impl(name, "native", role, label, path, colour, tuple(counters.split()),
                              tuple(needs.split()), wire_id=int(wire)))
        elif kind == "PEER":
            name, role, mode, label, path, colour, needs = args
            impls.append(Impl(name, "peer", role, label, path, colour, (), tuple(needs.split()), mode=mode))
        else:
            name, wire, description = args
            receives.append(Receive(name, int(wire), description))
    for impl in impls:
        if impl.role not in ROLES:
            raise ValueError(f"{REGISTRY_FILE}: {impl.name}: unknown role {impl.role!r} (roles: {', '.join(ROLES)})")
    return tuple(impls), tuple(receives)


def all_impls() -> tuple[Impl, ...]:
    return _load()[0]


def get(name: str) -> Impl:
    for impl in all_impls():
        if impl.name == name:
            return impl
    raise KeyError(name)


def names(kind: str | None = None, roles: tuple[str, ...] | None = None) -> tuple[str, ...]:
    """Registry names in registry order, of one kind ("native"/"peer") and/or some roles."""
    return tuple(i.name for i in all_impls()
                 if (kind is None or i.kind == kind) and (roles is None or i.role in roles))


def by_role(role: str) -> str | None:
    """The (first) implementation playing a role, e.g. by_role("two_copy") -> the baseline."""
    found = names(roles=(role,))
    return found[0] if found else None


def study_impls() -> tuple[str, ...]:
    """The implementations Part E compares, baseline first (two_copy, one_copy, zero_copy)."""
    return tuple(n for role in STUDY_ROLES for n in names(roles=(role,)))


def baseline() -> str:
    return by_role(BASELINE_ROLE)


def role(name: str) -> str | None:
    try:
        return get(name).role
    except KeyError:
        return None


def label(name: str) -> str:
    try:
        return get(name).label
    except KeyError:
        return str(name)


def colour(name: str, default: str = "#7f7f7f") -> str:
    try:
        return get(name).colour
    except KeyError:
        return default


def peer_modes() -> dict[str, str]:
    return {i.name: i.mode for i in all_impls() if not i.native}


def receive_strategies() -> tuple[str, ...]:
    return tuple(r.name for r in _load()[1])

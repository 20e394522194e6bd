"""The study's implementations by role (native/registry.def via copylab.registry): the analysis never
names an implementation; it asks which one plays the baseline, the one-copy or the zero-copy role,
and which reference program measures which mode."""

from __future__ import annotations

from .. import registry
from ..fmt import impl_name

BASE = registry.baseline()                   # two_copy: every comparison is against it
ONE_COPY = registry.by_role("one_copy")
ZERO_COPY = registry.by_role("zero_copy")
STUDY = registry.study_impls()               # what Part E compares, baseline first
COMPARED = tuple(i for i in STUDY if i != BASE)  # each against the baseline


def peers(mode: str | None = None) -> tuple[str, ...]:
    """The reference programs (registry role "reference"), those measuring one mode if given."""
    modes = registry.peer_modes()
    return tuple(n for n in registry.names(roles=("reference",)) if mode is None or modes.get(n) == mode)


def peer_for(mode: str) -> str | None:
    found = peers(mode)
    return found[0] if found else None


def native(names) -> list[str]:
    """The names among names that are copylab's own senders (not reference programs)."""
    own = set(registry.names(kind="native"))
    return [n for n in names if n in own]


def name(impl: str | None) -> str:
    """How prose names an implementation: a sender of copylab's by its short name ("A1"), a reference
    program by the name of the program it runs; "?" for none."""
    if not impl:
        return "?"
    try:
        return impl_name(impl) if registry.get(impl).native else registry.get(impl).name
    except KeyError:
        return impl_name(impl)

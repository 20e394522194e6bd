"""Working sets placed by this host's own cache sizes: a grid may name `working_set: [L1d/2, L2/2,
LLC/2, LLC*4]` and each name is resolved here, when the grid is loaded, to bytes from the host's
caches (sysfs, as hostmeta.cpu_caches reads them). Every row records the bytes it cycled through
(working_set_bytes) and the name it was asked by (working_set_level); residency() says, from those
bytes and meta.json's cpu_caches, which level a working set of that size fits in.

A name is a level, optionally scaled: `L1d`, `L2`, `L3`, `LLC` (the largest cache level the host
reports), then `/N` or `*N` with N a positive whole number. Anything else, or a level the host
does not report, is one line naming the entry.
"""

from __future__ import annotations

import math
import re

from .errors import CopylabError

LEVELS = ("L1d", "L2", "L3", "L4")          # data/unified levels, smallest first
BEYOND = "DRAM"                             # a working set larger than the last-level cache
_NAME = re.compile(r"^\s*(L1d|L2|L3|L4|LLC)\s*(?:([*/])\s*(\d+))?\s*$", re.IGNORECASE)
_SIZE = re.compile(r"^\s*(\d+)\s*([KMG]?)", re.IGNORECASE)


def parse_size(text: str) -> int | None:
    """sysfs's "32K" (or hostmeta's "32768K shared by CPUs 0-1") in bytes; None if unreadable."""
    m = _SIZE.match(text or "")
    if not m:
        return None
    return int(m.group(1)) << {"": 0, "K": 10, "M": 20, "G": 30}[m.group(2).upper()]


def cache_sizes(caches: dict | None) -> dict[str, int]:
    """{"L1d": bytes, "L2": bytes, "L3": bytes} from hostmeta.cpu_caches()' strings (instruction
    caches left out: no data of ours lives there), smallest level first."""
    out = {}
    for level in LEVELS:
        size = parse_size((caches or {}).get(level, ""))
        if size:
            out[level] = size
    return out


def last_level(sizes: dict[str, int]) -> str | None:
    return max(sizes, key=lambda lvl: LEVELS.index(lvl)) if sizes else None


def host_cache_sizes() -> dict[str, int]:
    from .hostmeta import cpu_caches  # the host's own, as meta.json records them

    return cache_sizes(cpu_caches())


def is_level_name(value) -> bool:
    return isinstance(value, str) and bool(_NAME.match(value))


def resolve(name: str, sizes: dict[str, int]) -> int:
    """The bytes a level name stands for on a host with these cache sizes (ValueError: one line)."""
    m = _NAME.match(name) if isinstance(name, str) else None
    if not m:
        raise ValueError(f"{name!r} is neither a number of bytes nor a cache level such as L1d/2, L2/2, LLC/2 "
                         "or LLC*4")
    level = m.group(1)
    level = {"llc": "LLC", "l1d": "L1d"}.get(level.lower(), level.upper())
    real = last_level(sizes) if level == "LLC" else level
    if real is None or real not in sizes:
        found = ", ".join(f"{lvl} {size >> 10} KiB" for lvl, size in sizes.items()) or "none"
        raise ValueError(f"{name!r} names {level}, which this host's caches do not include (found: {found})")
    size = sizes[real]
    if m.group(2) is None:
        return size
    factor = int(m.group(3))
    if factor < 1:
        raise ValueError(f"{name!r}: the factor must be a whole number from 1")
    return size * factor if m.group(2) == "*" else max(1, size // factor)


def canonical(name: str) -> str:
    """The name as the report writes it: `llc*4` -> `LLC*4`."""
    m = _NAME.match(name)
    level = {"llc": "LLC", "l1d": "L1d"}.get(m.group(1).lower(), m.group(1).upper())
    return level + (f"{m.group(2)}{int(m.group(3))}" if m.group(2) else "")


def residency(nbytes: float, sizes: dict[str, int]) -> str | None:
    """The smallest cache level a working set of nbytes fits in, or BEYOND (DRAM); None when the
    host's caches are unknown or nbytes is not a size."""
    if not sizes or not (nbytes == nbytes) or nbytes <= 0 or math.isinf(nbytes):
        return None
    for level in sorted(sizes, key=LEVELS.index):
        if nbytes <= sizes[level]:
            return level
    return BEYOND


def residency_words(nbytes: float, sizes: dict[str, int]) -> str | None:
    """residency() for a reader: "within L2" up to half the level (the cache grid's own placement: the
    rest of the cache holds the socket's buffers, stacks and page tables), "filling L2" above that (a
    1 MiB working set in a 1 MiB L2 competes with everything else for it), "beyond the caches" past the
    last level; None as residency()."""
    level = residency(nbytes, sizes)
    if level is None:
        return None
    if level == BEYOND:
        return "beyond the caches"
    return f"within {level}" if nbytes <= sizes[level] / 2 else f"filling {level}"


def level_order(level: str) -> int:
    """Smallest first: L1d, L2, L3, L4, then DRAM."""
    return LEVELS.index(level) if level in LEVELS else len(LEVELS)


def check_host_caches(names: list[str], sizes: dict[str, int]) -> None:
    if any(is_level_name(n) for n in names) and not sizes:
        raise CopylabError("working_set: names cache levels, but this host reports no caches in sysfs "
                           "(/sys/devices/system/cpu/cpu0/cache): give the working sets in bytes")


ASKED = re.compile(r"_ws(\d+)B")  # a point id's working set as asked, in bytes


def nearest(sizes: dict, default: int):
    """Of {key: bytes}, the key whose bytes are nearest default on a log scale: the one rule for which
    working set Part E answers from (the Study's rows, the budget's passes, the copy limit's probe)."""
    return min(sizes, key=lambda k: abs(math.log(sizes[k]) - math.log(default)))

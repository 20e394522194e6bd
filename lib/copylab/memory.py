"""What one point holds in memory: the native servers' rings of messages (native/ring.h,
native/limits.h), the client's buffers and typical socket buffers; and what the host has available.
limits.py refuses a point that cannot fit, sweep/estimate.py sums a grid's peak from it."""

from __future__ import annotations

import math
from pathlib import Path

from . import registry
from .contract import native_limits

# memory the native servers hold (native/ring.h, native/limits.h): every connection cycles through
# a ring of messages; the rings share a process budget, but each keeps at least RING_MESSAGES_MIN
_LIMITS = native_limits()
RING_MESSAGES_MIN = _LIMITS["RING_MESSAGES_MIN"]
RING_BUDGET = _LIMITS["RING_BUDGET"]
RING_MEMORY_MAX = _LIMITS["RING_MEMORY_MAX"]
RECV_BULK_BYTES = _LIMITS["RECV_BULK_BYTES"]
PAGE = 4096
CHUNK_HEADER = 16  # posix_memalign's chunk header before each field (ring.c, slot_cost)
# kernel socket memory per connection, as a typical (not worst) case: default send + receive buffers
SOCKET_BYTES = (16 << 10) + (128 << 10)


def _field_lengths(size: int) -> list[int]:
    return [size // 8 + (1 if k < size % 8 else 0) for k in range(8)]


def _paged(msg_size: int) -> int:
    return sum(math.ceil(n / PAGE) * PAGE for n in _field_lengths(msg_size))


def ring_messages(msg_size: int, working_set: int, ring_max: int = 0) -> int:
    """Distinct messages per connection, as native/ring.c's ring_messages() counts them (ring_max:
    the servers' --ring-memory, 0 for their default bound)."""
    want = math.ceil(working_set / msg_size)
    return max(RING_MESSAGES_MIN, min(want, max(ring_max, RING_MEMORY_MAX) // _paged(msg_size)))


def exact_ring_memory(msg_size: int, working_set: int) -> int:
    """The --ring-memory that holds working_set exactly (whole messages, at least the minimum ring):
    0 when the default bound already does; the cache-level points ask for it (point.py)."""
    need = max(RING_MESSAGES_MIN, math.ceil(working_set / msg_size)) * _paged(msg_size)
    return need if need > RING_MEMORY_MAX else 0


def ring_memory(msg_size: int, threads: int, working_set: int, ring_max: int = 0) -> int:
    """What the rings of all connections hold (ring.c: the page-aligned layout's cost, within the
    process budget, never below the minimum ring per connection; ring_max raises both as
    --ring-memory does)."""
    slot = sum(math.ceil((n + CHUNK_HEADER) / PAGE) * PAGE for n in _field_lengths(msg_size))
    ring = ring_messages(msg_size, working_set, ring_max) * slot
    budget = RING_BUDGET * (max(ring_max, RING_MEMORY_MAX) // RING_MEMORY_MAX)
    return max(min(threads * ring, budget), threads * RING_MESSAGES_MIN * slot)


def point_memory(impl: str, msg_size: int, threads: int, working_set: int = _LIMITS["WORKING_SET_DEFAULT"],
                 ring_max: int = 0) -> int:
    """Bytes the server and client of one point hold at most (the programs' own allocations plus
    typical socket buffers), from the implementation's registry entry."""
    entry = registry.get(impl)
    if entry.native:
        server = ring_memory(msg_size, threads, working_set, ring_max)
        if "user_copy_bytes" in entry.counters:  # a serialised copy of the message per connection
            server += threads * msg_size
        if "memfd" in entry.needs:  # the ring laid out again in a memfd (tmpfs pages)
            server += threads * ring_messages(msg_size, working_set, ring_max) * msg_size
    else:
        server = threads * msg_size
    client = msg_size + threads * (max(msg_size, RECV_BULK_BYTES))  # the pattern + one receive buffer each
    return server + client + threads * SOCKET_BYTES


def available_memory(meminfo: Path = Path("/proc/meminfo")) -> int | None:
    try:
        for line in meminfo.read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None

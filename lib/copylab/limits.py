"""What a point needs from the process limits and the host, checked before anything starts.

The programs inherit copylab's limits: a connection per client thread is a file descriptor on each
side (RLIMIT_NOFILE), every thread reserves a stack and glibc a malloc arena in the address space
(RLIMIT_AS), and the messages and socket buffers take memory the host must have. A grid or a
`copylab run` that cannot fit is refused in one line naming the limit and how to raise it, instead
of failing mid-point with a program's "Too many open files" blamed on the wrong side.
"""

from __future__ import annotations

import os
import resource

from .errors import CopylabError
from .memory import available_memory, point_memory

FD_BASE = 64          # per program beyond one socket per connection: stdio, the listening socket,
                      # perf's event and control descriptors, the pattern, the loader
ARENA_BYTES = 64 << 20  # glibc reserves this much address space per malloc arena (one per thread,
                        # up to 8 per core)
BASE_VIRTUAL = 256 << 20  # the program, its libraries, perf's wrapper, a sanitizer's shadow aside


def _prefix(what: str) -> str:
    return f"{what}: " if what else ""


def _gib(n: float) -> str:
    return f"{n / (1 << 30):.1f} GiB"


def fds_needed(threads: int) -> int:
    return threads + FD_BASE


def check_open_files(threads: int, what: str) -> None:
    """Enough file descriptors for `threads` connections per program. A soft limit below the need
    is raised up to the hard limit (the programs inherit it); beyond the hard limit, one line."""
    need = fds_needed(threads)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft >= need:
        return
    if hard == resource.RLIM_INFINITY or hard >= need:
        resource.setrlimit(resource.RLIMIT_NOFILE, (need, hard))
        return
    raise CopylabError(f"{_prefix(what)}{threads} threads need about {need} open files per program (a socket per "
                       f"connection), but the limit here is {hard} (ulimit -n); raise it (ulimit -n {need * 2}) "
                       "or use fewer threads")


def virtual_bytes(memory: int, threads: int) -> int:
    """Address space one program of a point reserves: its memory, a stack and (up to 8 per core)
    a malloc arena per thread, and a base."""
    stack = resource.getrlimit(resource.RLIMIT_STACK)[0]
    if stack == resource.RLIM_INFINITY or stack <= 0:
        stack = 8 << 20
    arenas = min(threads, 8 * (os.cpu_count() or 1))
    return memory + threads * stack + arenas * ARENA_BYTES + BASE_VIRTUAL


def check_address_space(memory: int, threads: int, what: str) -> None:
    """The point's programs fit in RLIMIT_AS (ulimit -v), when one is set."""
    limit = resource.getrlimit(resource.RLIMIT_AS)[0]
    if limit == resource.RLIM_INFINITY:
        return
    need = virtual_bytes(memory, threads)
    if need > limit:
        raise CopylabError(f"{_prefix(what)}a program of {threads} threads needs about {_gib(need)} of address space, "
                           f"but the limit here is {_gib(limit)} (ulimit -v); raise it (ulimit -v unlimited) "
                           "or use fewer threads or smaller messages")


def check_memory(peak: int, what: str, allow_large: bool) -> None:
    """The point's estimated memory against what the host has available (unless allow_large)."""
    available = available_memory()
    if allow_large or available is None or peak <= available:
        return
    raise CopylabError(f"{_prefix(what)}about {_gib(peak)} of memory estimated (messages and socket buffers of both "
                       f"programs), more than the {_gib(available)} this host has available; use fewer threads or "
                       "smaller messages, or pass --allow-large if you really mean it")


def check_point(impl: str, msg_size: int, threads: int, what: str, allow_large: bool = False,
                working_set: int | None = None, ring_memory: int = 0) -> None:
    """Everything above for one point on this host."""
    memory = point_memory(impl, msg_size, threads, *([working_set, ring_memory] if working_set else []))
    check_open_files(threads, what)
    check_address_space(memory, threads, what)
    check_memory(memory, what, allow_large)


def check_grid(grid, what: str) -> None:
    """A grid's largest point against the process limits (host memory: estimate.check)."""
    from .params import peak_memory  # here: params' grid is what it checks, and limits sits below it

    threads = max(list(grid.threads) + (list(grid.peers.threads) if grid.peers else []))
    memory, _ = peak_memory(grid)
    check_open_files(threads, what)
    check_address_space(memory, max(grid.threads), what)

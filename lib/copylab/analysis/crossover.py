"""The crossover rule (docs/contracts.md, "Analysis contract"): from which message size does an
implementation beat A1 for good."""

from __future__ import annotations

from .roles import BASE
from .stats import over_threads, paired_means


def trailing_win_start(sizes, x, base):
    """Smallest size from which x > base at that size and every larger one; None if not at the top."""
    start = None
    for size in sorted(sizes, reverse=True):
        if x[size] > base[size]:
            start = size
        else:
            break
    return start


def crossover(df, impl: str, base: str = BASE) -> dict:
    """{"crossover_bytes": int|None, "per_threads": {"<threads>": int|None}} for impl over base.

    Per thread count: the smallest grid size where impl's mean throughput beats base's and keeps
    beating it at every larger size; None when impl does not beat base at the largest size.
    Overall: the same rule on throughput averaged over the thread counts (only the (threads,
    size) points both were measured at, so neither side gains from an unshared point).
    """
    pair = paired_means(df, impl, base)
    per_threads = {}
    for threads, grp in pair.groupby("threads"):
        g = grp.set_index("msg_size")
        start = trailing_win_start(g.index, g["x"], g["base"])
        per_threads[str(int(threads))] = None if start is None else int(start)
    overall = over_threads(pair)
    start = trailing_win_start(overall.index, overall["x"], overall["base"]) if len(overall) else None
    return {"crossover_bytes": None if start is None else int(start), "per_threads": per_threads}

"""The rule that explains Q6's surprise, by its kind, from this run's profiles and counters (the explain
floor: evidence in, an Explanation out; the Study keeps it, analysis/text/q6.py says it)."""

from __future__ import annotations

import pandas as pd

from ..fmt import fmt_size, plural
from .decisions import DEFAULT_MARGIN
from .explain import Explanation, bound_side, hypothesis
from .explain_copies import per_message_gap, profiled_sizes
from .patterns import Test
from .roles import BASE, ONE_COPY, name
from .stats import throughput_rows


def explain_surprise(t: Test, df: pd.DataFrame, profiles: pd.DataFrame, meta: dict,
                     margin: float = DEFAULT_MARGIN) -> Explanation:
    """The rule that explains a surprise of its kind, from this run's profiles and counters."""
    tp = throughput_rows(df)
    if t.kind == "one_copy_slower":
        sizes = sorted({c.where["size"] for c in (t.cells or [t])})
        size = next((s for s in sizes if s in profiled_sizes(profiles, [ONE_COPY, BASE])), sizes[0])
        gap = per_message_gap(profiles, ONE_COPY, BASE, size, margin=margin)
        at = tp[(tp["impl"] == ONE_COPY) & (tp["msg_size"] == size)]
        threads = t.where.get("threads", at["threads"].min() if len(at) else 1)
        bound = bound_side(at[at["threads"] == threads], f"{name(ONE_COPY)} at {fmt_size(size)}, "
                           f"{plural(int(threads), 'thread')}")
        return Explanation(gap.rule, gap.verdict, f"{gap.text} {bound.text}", {**gap.evidence, "bound": bound.evidence},
                           gap.hypothesis or bound.hypothesis, gap.decide_by or bound.decide_by)
    if t.kind == "fewer_with_threads":
        w = t.where
        cores = meta.get("cores")
        busy = f"{2 * w['to_threads']} busy threads (a sender and a receiver per connection)"
        claim = (f"{busy} on {cores} cores time-share them; each switch costs a context switch and refills "
                 "the caches." if cores else f"{busy} share the host's cores.")
        return hypothesis("fewer_threads", "time_sharing", claim, "context switches and, with a PMU, cache "
                          "misses per byte at both thread counts (perf stat on a host whose PMU perf can use)",
                          {"cores": cores, "to_threads": w["to_threads"]})
    w = t.where
    return hypothesis("falls_with_size", "unknown", f"a larger message of {name(w['impl'])} may leave the caches "
                      "or the socket's send buffer (tcp_wmem) behind.", "cache misses per byte with a PMU and the "
                      "send buffer's fill (ss -tm) at both sizes", {"impl": w["impl"]})

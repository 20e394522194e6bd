"""Q2. Which cache level shows the most reduction in misses and why?

Misses per byte against the baseline per cache level (findings.q2_finding); the why is the design's,
stated as what the profile supports (the Study's removed_copy explanation) or else as a hypothesis
with the measurement that would decide it."""

from __future__ import annotations

import pandas as pd

from ...fmt import fmt_pct
from .. import findings as fnd
from ..roles import BASE, name
from ..stats import measured
from ..study import Study
from .tables import per_impl_table
from .words import unanswerable

KEY = "q2_cache_level"


def answer(study: Study) -> dict:
    """The numbers with their text; "answer" is answers.json's q2_cache_level (the rest q2_cache_detail)."""
    numbers, outcome = fnd.q2_finding(study.part_e, study.meta)
    if outcome == "no_reduction":
        numbers["reason"] = q2_no_reduction_reason(numbers)
    return {**numbers, "text": q2_text(numbers, outcome, study.explanations.get("removed_copy"))}


def tables(study: Study) -> list[tuple[str, pd.DataFrame]]:
    metrics = ["l1_misses_per_byte", "llc_misses_per_byte"]
    if not any(measured(study.part_e, m) for m in metrics):
        return []
    return [("", per_impl_table(study.part_e, metrics))]


WHY_CACHE_LEVEL = {
    "L1": ("the serialisation memcpy streams every message through the sender's small L1 data cache (tens "
           "of KiB per core); removing that copy removes a full pass of loads, and L1 sees those loads first, "
           "while the LLC holds the message either way."),
    "LLC": ("the messages and socket buffers exceed what the private caches hold, so the copies the other "
            "paths avoid were mostly LLC-missing streams to DRAM, while L1 misses come mostly from the "
            "kernel's own copy and protocol processing that every path performs."),
}
HOW_TO_COUNT_CACHES = ("Re-run the sweep on a host whose PMU perf can use (bare metal, or a "
                       "VM with a virtual PMU, e.g. KVM with `-cpu host`) to answer it.")


def q2_text(f: dict, outcome: str, removed=None) -> str:
    """Q2 from the misses per byte; the why is the design's, stated as what the profile supports
    (removed: explain_copies.removed_copy) or else as a hypothesis with the measurement to decide it."""
    if outcome == "unmeasured":
        return unanswerable(f["reason"], HOW_TO_COUNT_CACHES)
    if outcome == "no_pairs":
        return unanswerable(f["reason"])
    detail = _reduction_detail(f)
    if outcome == "no_reduction":
        return (f"Neither cache level shows a reduction: the other paths incur as many or more misses per byte "
                f"than {name(BASE)} (reduction relative to {name(BASE)}, averaged over sizes and thread counts: "
                f"{detail}).")
    best = f["answer"]
    other = "LLC" if best == "L1" else "L1"
    mean_red = f["mean_reduction_pct"]
    text = (f"**{best}** shows the larger reduction: relative to {name(BASE)}, misses per byte fall by "
            f"{fmt_pct(mean_red[best])} at {best} against {fmt_pct(mean_red[other])} at {other} (averaged over "
            f"sizes and thread counts; {detail}).")
    why = f"The likely reason: {WHY_CACHE_LEVEL[best]}"
    if removed is not None and removed.verdict in ("removed", "reduced"):
        return f"{text} {why} The profile agrees that the user-space copy is what went: {removed.text}"
    return (f"{text} Hypothesis (the profile here does not show the removed copy): {WHY_CACHE_LEVEL[best]} What "
            "would decide it: misses sampled by function (perf record -e L1-dcache-load-misses) on both paths.")


def _reduction_detail(f: dict) -> str:
    return "; ".join(f"{lvl}: " + ", ".join(f"{name(i)} {fmt_pct(v)}" for i, v in d.items())
                     for lvl, d in f["reduction_pct"].items())


def q2_no_reduction_reason(f: dict) -> str:
    return (f"neither level shows fewer misses per byte for the other paths than for {name(BASE)} "
            f"(mean change {_reduction_detail(f)})")



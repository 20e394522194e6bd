"""The words of the report's answers, kept apart from the statistics (findings.py).

Each function takes numbers already computed and returns text. Why a result came out as it did is
not written here: explain.py and explain_copies.py choose that by rules from the run's evidence.
"""

from __future__ import annotations

import math

from ..fmt import fmt_num, fmt_pct, fmt_size
from .roles import BASE, ONE_COPY, ZERO_COPY, name
from .stats import MIN_REPS_FOR_INTERVAL

# ------------------------------------------------------------------------------------------------
# fixed text: what the study's design says, not why a result came out as it did (explain.py chooses that)

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


def unanswerable(reason: str, advice: str = "") -> str:
    return f"Cannot be answered from this sweep: {reason}." + (f" {advice}" if advice else "")


def reps_note(reps: tuple[int, int]) -> str:
    low, high = reps
    if high <= 1:
        return (" This sweep has a single repetition per point, so there is no confidence "
                "interval: a difference of a few percent may be noise.")
    span = f"{low}" if low == high else f"{low}–{high}"
    drawn = ("the figures draw each point's repetitions" if high < MIN_REPS_FOR_INTERVAL else
             "the figures draw 95% intervals on the log scale")
    return f" Means are over {span} repetitions per point; {drawn}."


# ------------------------------------------------------------------------------------------------
# Q4 / Q5 (their answers: decided.py)

def no_pair_reason(finding) -> str:
    return (f"no throughput-mode measurements of both {name(finding.impl)} and {name(BASE)} "
            f"(throughput rows exist for: {', '.join(finding.have_throughput) or 'none'})")


def zero_copy_evidence_text(zc, sender_cpu_said: bool = False) -> str:
    """What the COPIED share (the program's own count of the kernel's flags) and per-side CPU say at the
    crossover size (or the largest); only the receiver's CPU when a sentence before gave the sender's."""
    share = zc.copied_share_pct
    text = (f"{fmt_pct(share)} of {name(ZERO_COPY)}'s completions were flagged SO_EE_CODE_ZEROCOPY_COPIED "
            "(counted by its server)")
    if share >= 50:
        text += ": on this path the kernel copies the pinned pages after all, at delivery"
    else:
        text += (f"; the other {fmt_pct(100 - share)} left without a copy: the device read the pinned user pages "
                 "itself (DMA), the case MSG_ZEROCOPY exists for")
    at = zc.cpu_at_size
    if {BASE, ZERO_COPY} <= set(at.dropna().index):
        srv, cli = at["srv_cpu_ns_per_byte"], at["cli_cpu_ns_per_byte"]
        if sender_cpu_said:
            text += (f". At {fmt_size(zc.size)} the receiver spends {fmt_num(cli[ZERO_COPY])} ns of CPU per byte "
                     f"with {name(ZERO_COPY)} against {fmt_num(cli[BASE])} with {name(BASE)} (perf task-clock)")
        else:
            text += (f". At {fmt_size(zc.size)} the sender spends {fmt_num(srv[ZERO_COPY])} ns of CPU per byte "
                     f"with {name(ZERO_COPY)} against {fmt_num(srv[BASE])} with {name(BASE)}, the receiver "
                     f"{fmt_num(cli[ZERO_COPY])} against {fmt_num(cli[BASE])} (perf task-clock)")
    return text + "."


# ------------------------------------------------------------------------------------------------
# Q1

def zero_copy_share_sentence(share: float, path: str, saving_pct: float | None) -> str:
    """What the COPIED share means on this sweep's path: between namespaces every send is copied
    on delivery; between hosts the share not copied is what the NIC sent from user pages."""
    zc = name(ZERO_COPY)
    if path == "local" or (share >= 99.5 and path != "hosts"):
        return (f"Of {zc}'s zero-copy completions, {fmt_pct(share)} carried SO_EE_CODE_ZEROCOPY_COPIED (its "
                "server's own count): the kernel copied the data after all, because delivery to a socket on the "
                "same host (veth between namespaces) must not leave the receiver holding references to the "
                "sender's pinned pages.")
    text = (f"Of {zc}'s zero-copy completions, {fmt_pct(share)} carried SO_EE_CODE_ZEROCOPY_COPIED and "
            f"{fmt_pct(100 - share)} did not: ")
    if share >= 99.5:
        text += ("between these two hosts the kernel still copied every send, so the device cannot "
                 "send from user pages (no scatter-gather or checksum offload on the sending NIC, or "
                 "a virtual or loopback device in the path: see the hosts' offloads in the system table).")
    else:
        text += ("those sends left the sender without a copy, the NIC reading the pinned user pages "
                 "by DMA")
        text += (", and a copied completion is the kernel falling back (a device or route that "
                 "cannot take user pages, or sends the kernel chose to copy)." if share >= 0.5 else ".")
    if saving_pct is not None:
        text += (f" At the largest size the sender spends {fmt_pct(abs(saving_pct))} "
                 f"{'less' if saving_pct >= 0 else 'more'} CPU per byte with {zc} than with {name(BASE)}.")
    return text


def q1_text(f: dict, best, decisions: dict) -> str:
    """Q1's facts: where the zero-copy path is not the fastest, its decisions against the baseline, the
    kernel's COPIED flags and each side's CPU per byte (the explanations follow, chosen by rules)."""
    zc, parts = name(ZERO_COPY), []
    not_best = f["zero_copy_not_best_sizes"]
    if len(not_best) == len(best):
        parts.append(f"{zc} is the fastest path at none of the {len(best)} message sizes (means over thread counts).")
    elif not_best:
        parts.append(f"{zc} is not the fastest path at {len(not_best)} of {len(best)} message sizes "
                     f"({', '.join(fmt_size(s) for s in not_best)}; means over thread counts).")
    else:
        parts.append(f"In this sweep {zc} is the fastest path at every one of the {len(best)} message sizes (means "
                     "over thread counts).")
    if decisions:
        listed = "; ".join(f"{fmt_size(int(s))} {d['decision']} ({fmt_num(d['ratio'])}×)"
                           for s, d in sorted(decisions.items(), key=lambda kv: int(kv[0])))
        parts.append(f"Against {name(BASE)} its decisions by size (Q5) are: {listed}.")
    parts.append(f"It is decided to beat {name(BASE)} from {fmt_size(f['break_even_bytes'])} on (Q5)."
                 if f["break_even_bytes"] is not None else f"It is not decided to beat {name(BASE)} for good at any "
                 "size of this grid (Q5).")
    share = f["zc_copied_share_pct"]
    if share is not None:
        parts.append(zero_copy_share_sentence(share, f.get("path", "local"),
                                              f.get("sender_cpu_saving_vs_base_pct_at_largest_size")))
    else:
        parts.append("The zero-copy completion counters were not recorded in this sweep, so the "
                     "share the kernel copied after all cannot be stated.")
    cpu = f.get("cpu_ns_per_byte_at_largest_size")
    if cpu:
        parts.append(_cpu_sentence(cpu))
    return " ".join(parts)


def _cpu_sentence(cpu: dict) -> str:
    """Each side's CPU per byte of the zero-copy against the one-copy path, and what moved where."""
    srv, cli, zc, one = cpu["sender"], cpu["receiver"], ZERO_COPY, ONE_COPY
    text = (f"At {fmt_size(cpu['msg_size'])} the sender spends {fmt_num(srv[zc])} ns of CPU per byte with "
            f"{name(zc)} against {fmt_num(srv[one])} with {name(one)}, the receiver {fmt_num(cli[zc])} against "
            f"{fmt_num(cli[one])} (perf task-clock)")
    if srv[zc] < srv[one] and cli[zc] >= cli[one]:
        return text + ": the sender saves and the receiver pays more."
    if srv[zc] >= srv[one]:
        return text + f": {name(zc)} saves its sender no CPU per byte here."
    return text + "."


# ------------------------------------------------------------------------------------------------
# Q2

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


# ------------------------------------------------------------------------------------------------
# the copy the one-copy path removes

def copy_evidence_text(e: dict) -> str:
    b, x = BASE, ONE_COPY
    if not e["have_pair"]:
        return (f"_This sweep lacks throughput-mode runs of {name(b)} or {name(x)}, so the removed copy cannot "
                "be shown._")
    parts = []
    share = e.get("user_copy_share")
    if share is not None:
        parts.append(f"Bytes copied in user space per message, as a multiple of the message size (the servers' "
                     f"own count; mean over all sizes and thread counts): {name(b)} {fmt_num(share[b])}, "
                     f"{name(x)} {fmt_num(share[x])}.")
    else:
        parts.append("The servers' user-space copy counts (user_copy_bytes) are not in this "
                     "results.csv, so the removed copy is shown only through CPU cost.")
    if e.get("cost_metric"):
        at_top = e["cost_at_largest"]
        unit = "cycles" if "cycles" in e["cost_metric"] else "ns of CPU time"
        change = 100 * (1 - at_top[x] / at_top[b])
        direction = f"{fmt_pct(change)} less" if change >= 0 else f"{fmt_pct(-change)} more"
        parts.append(f"At the largest size, {fmt_size(e['largest'])}, the sender spends "
                     f"{fmt_num(at_top[b])} {unit} per byte in {name(b)} and {fmt_num(at_top[x])} in "
                     f"{name(x)}: {direction} for {name(x)}.")
    else:
        parts.append("Sender-side CPU counters were not recorded, so the cost of the removed copy "
                     "cannot be stated.")
    return " ".join(parts)


def q_label(key: str) -> str:
    return key.split("_")[0].upper()


def is_nan(x) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))

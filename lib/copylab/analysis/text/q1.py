"""Q1. Why does zero-copy not always give the best throughput?

Where the zero-copy path is not the fastest, its decisions against the baseline (the Study's, as Q5
shows them), the kernel's COPIED flags and each side's CPU per byte; the explanations that follow
are the rule-chosen ones of the Study."""

from __future__ import annotations

import pandas as pd

from ...fmt import fmt_num, fmt_pct, fmt_size
from .. import findings as fnd
from ..roles import BASE, ONE_COPY, ZERO_COPY, name
from .tables import throughput_by_size
from ..study import Study
from .words import unanswerable

KEY = "q1_zero_copy_not_always_best"
CITED = ("zero_copy_cost", "deferred_copy_site", f"bound_{ZERO_COPY}")


def answer(study: Study) -> dict:
    numbers, best = fnd.q1_finding(study.part_e, study.crossover(ZERO_COPY))
    if best is None:
        return {**numbers, "text": unanswerable(numbers["reason"])}
    cited = [study.explanations[k] for k in CITED if k in study.explanations]
    text = q1_text(numbers, best, study.compare(ZERO_COPY)["by_size"]) + " " + " ".join(e.text for e in cited)
    return {**numbers, "explanations": [e.public() for e in cited], "text": text}


def tables(study: Study) -> list[tuple[str, pd.DataFrame]]:
    return [("", throughput_by_size(study.part_e))]


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
        listed = "; ".join(f"{fmt_size(s)} {d.decision} ({fmt_num(d.ratio)}×)" for s, d in sorted(decisions.items()))
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




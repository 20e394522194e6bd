"""Q1. Why does zero-copy not always give the best throughput?

Where the zero-copy path is not the fastest, its decisions against the baseline (the Study's, as Q5
shows them), the kernel's COPIED flags and each side's CPU per byte; the explanations that follow
are the rule-chosen ones of the Study."""

from __future__ import annotations

import pandas as pd

from ...fmt import fmt_num, fmt_pct, fmt_size, plural
from .. import findings as fnd
from ..roles import BASE, ONE_COPY, ZERO_COPY, name
from .tables import throughput_by_size
from ..study import SIDE_CPU, Study
from .words import (DATA_PATHS_SECTION, cost_claim, cost_verdict, outcomes_by_size, ratio_text, refer_back, states_note,
                    unanswerable)

KEY = "q1_zero_copy_not_always_best"
# said in "Where the CPU goes, measured": Q1 refers back to them in a line (refer_back)
IN_PROFILE = ("zero_copy_cost", "deferred_copy_site")


def _per_size(study: Study, numbers: dict) -> list:
    """The explanations of the sizes where the zero-copy path is not the fastest, smallest first."""
    return [study.explanations[k] for k in (f"why_{ZERO_COPY}_{s}" for s in numbers["zero_copy_not_best_sizes"])
            if k in study.explanations]


def answer(study: Study) -> dict:
    numbers, best = fnd.q1_finding(study.part_e, study.crossover(ZERO_COPY))
    if best is None:
        return {**numbers, "text": unanswerable(numbers["reason"])}
    per_size = _per_size(study, numbers)
    cited = per_size + [study.explanations[k] for k in IN_PROFILE if k in study.explanations]
    text = " ".join(p for p in [q1_text(numbers, best, study), *per_size_text(per_size),
                                refer_back(study, IN_PROFILE, elsewhere=_elsewhere(study, per_size))] if p)
    return {**numbers, "explanations": [e.public() for e in cited], "text": text}


def _elsewhere(study: Study, per_size: list) -> str:
    """The profile section gives one size in full (review-fresh3 L3: the refer-back sent every size
    there): the others' pinning and deferred copy per message are in Q1's table."""
    shown = (study.explanations.get("zero_copy_cost") or None)
    at = (shown.evidence or {}).get("msg_size") if shown is not None else None
    others = [e for e in per_size if e.evidence.get("msg_size") != at and e.evidence.get("us_per_message")]
    if at is None or len(per_size) < 2 or not others:
        return ""
    return f"{fmt_size(at)} in full there; the other sizes' pinning and deferred copy per message in the table above"


def per_size_text(per_size: list) -> list[str]:
    """Each size's explanation: the first in full (what each number is), the later ones in their brief form,
    their numbers in the per-size table (sizes_table; each paragraph once, issue 33)."""
    said = [e.text if i == 0 or not e.brief else e.brief for i, e in enumerate(per_size)]
    if any(e.brief for e in per_size[1:]):
        said.insert(1, "The other sizes, each with its numbers in the table above:")
    return said


def sizes_table(per_size: list) -> pd.DataFrame | None:
    """One row per explained size (the rule's evidence, explain_copies.why_at_size): the sender's and receiver's
    busy shares, the sender profile's idle, scheduling and zero-copy shares, the zero-copy costs per message
    (its scheduling beside the baseline's) against the baseline's whole send, and the loss's factors (CPU per
    byte against the baseline with its interval, the baseline's busy share over this path's, the residual);
    None without two sizes to set apart."""
    if len(per_size) < 2:
        return None
    ev = [e.evidence for e in per_size]

    def per_message(e: dict) -> str:
        us = e.get("us_per_message")
        if not us:
            return "–"
        # the baseline's own scheduling beside this path's (review-fresh4 G3: the difference is what the balance adds)
        base_scheduling = ((e.get("balance_us_per_message") or {}).get("by_bucket") or {}).get("scheduling", {})
        return (" / ".join(num(us.get(b)) for b in ("zerocopy_pin", "deferred_copy", "scheduling"))
                + (f" vs {num(base_scheduling['base'])}" if "base" in base_scheduling else "")
                + f" ({num(e.get('base_send_us_per_message'))})")

    def cost(e: dict) -> str:
        low, high = (e.get("cost_interval") or [float("nan")] * 2)
        return "–" if "cost_vs_base" not in e else (f"{fmt_num(e['cost_vs_base'])}"
                                                    + (f" ({fmt_num(low)}–{fmt_num(high)})" if low == low else ""))

    def busy_ratio(e: dict) -> str:
        srv, base = e.get("sender_busy", float("nan")), e.get("base_busy", float("nan"))
        return num(base / srv) if srv == srv and srv > 0 and base == base else "–"

    zc, base = name(ZERO_COPY), name(BASE)
    one = len({e["threads"] for e in ev}) == 1  # the thread count said once, in the caption
    return pd.DataFrame({
        "message size": [f"{fmt_size(e['msg_size'])}" + ("" if one else f", {e['threads']} thr") for e in ev],
        "busy: sender / receiver": [f"{percent(e.get('sender_busy'))} / {percent(e.get('receiver_busy'))}" for e in ev],
        "idle / scheduling": [f"{percent(mean(e.get('sender_idle')))} / "
                                     f"{percent(mean(e.get('sender_scheduling')))}" for e in ev],
        "zero-copy work": [percent(mean((e.get("sender_shares") or {}).get("zero-copy work"))) for e in ev],
        US_COLUMN.format(base=base): [per_message(e) for e in ev],
        f"CPU per byte ÷ {base}'s (95%)": [cost(e) for e in ev],
        f"{base}'s busy ÷ {zc}'s": [busy_ratio(e) for e in ev],
        "residual": [num(e.get("busy_factor_vs_base")) for e in ev],
    })


US_COLUMN = "µs per message: pinning / deferred copy / scheduling vs {base}'s ({base}'s whole send)"


def mean(share) -> float:
    """A Share's mean from its evidence dict (NaN where the rule had none)."""
    return share.get("mean", float("nan")) if isinstance(share, dict) else float("nan")


def percent(x) -> str:
    return "–" if x is None or x != x else fmt_pct(100 * x)


def num(x) -> str:
    return "–" if x is None or x != x else fmt_num(x)


SIZES_CAPTION = ("{zc}'s sender against {base} at each size where {zc} is not the fastest (its profiled cell{at}): busy "
                 "shares of the window; idle, scheduling and zero-copy work (pinning, deferred copy, completions) as "
                 "shares of its sender's profile samples; µs of its sender's CPU per message, its scheduling beside "
                 "{base}'s; the loss's factors, as the text reads them for the first size.")


def tables(study: Study) -> list[tuple[str, pd.DataFrame]]:
    out = [("", throughput_by_size(study.part_e))]
    numbers, best = fnd.q1_finding(study.part_e, study.crossover(ZERO_COPY))
    found = sizes_table(_per_size(study, numbers)) if best is not None else None
    if found is not None:
        counts = {e.evidence["threads"] for e in _per_size(study, numbers)}
        at = f", {plural(counts.pop(), 'thread')}" if len(counts) == 1 else ""
        out.append((SIZES_CAPTION.format(zc=name(ZERO_COPY), base=name(BASE), at=at), found))
    return out


def zero_copy_share_sentence(share: float, path: str) -> str:
    """What the COPIED share means on this sweep's path: between namespaces every send is copied
    on delivery; between hosts the share not copied is what the NIC sent from user pages. (What that
    saves the sender is said with its decision: _cpu_sentence.)"""
    zc = name(ZERO_COPY)
    if path == "local" or (share >= 99.5 and path != "hosts"):
        # why is said in full once, in the data-paths section, before Q1 (review-fresh5 N8)
        return (f"Of {zc}'s zero-copy completions, {fmt_pct(share)} carried SO_EE_CODE_ZEROCOPY_COPIED (its "
                "server's own count): the kernel copied the data after all, on delivery to a socket on the same "
                f"host (why: \"{DATA_PATHS_SECTION}\").")
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
    return text


def q1_text(f: dict, best, study: Study) -> str:
    """Q1's facts: where the zero-copy path is not the fastest by means, its decisions against the baseline
    and the one-copy path (what is decided of "not the fastest"), the kernel's COPIED flags and each side's
    CPU per byte (the explanations follow, chosen by rules)."""
    zc, parts = name(ZERO_COPY), []
    decisions = study.compare(ZERO_COPY)["by_size"]
    not_best = f["zero_copy_not_best_sizes"]
    if len(not_best) == len(best):
        parts.append(f"{zc} is the fastest path at none of the {len(best)} message sizes (means over thread counts).")
    elif not_best:
        parts.append(f"{zc} is not the fastest path at {len(not_best)} of {len(best)} message sizes "
                     f"({', '.join(fmt_size(s) for s in not_best)}; means over thread counts).")
    else:
        parts.append(f"In this sweep {zc} is the fastest path at every one of the {len(best)} message sizes (means "
                     "over thread counts).")
    if decisions:  # Q5 gives each ratio and interval: said here only as outcomes
        parts.append(f"Against {name(BASE)} it is {outcomes_by_size(decisions)} (Q5 gives each ratio and interval).")
    against_one = study.compare(ZERO_COPY, ONE_COPY)["by_size"]
    if against_one:
        listed = "; ".join(f"{fmt_size(s)} {d.decision} ({ratio_text(d, True)})" for s, d in sorted(against_one.items()))
        parts.append(f"Against {name(ONE_COPY)}: {listed}. Where a decision is undecided, \"not the fastest\" "
                     "holds for the means only.")
    parts.append(f"It is decided to beat {name(BASE)} from {fmt_size(f['break_even_bytes'])} on (Q5)."
                 if f["break_even_bytes"] is not None else f"It is not decided to beat {name(BASE)} for good at any "
                 "size of this grid (Q5).")
    share = f["zc_copied_share_pct"]
    if share is not None:
        parts.append(zero_copy_share_sentence(share, f.get("path", "local")))
    else:
        parts.append("The zero-copy completion counters were not recorded in this sweep, so the "
                     "share the kernel copied after all cannot be stated.")
    cpu = f.get("cpu_ns_per_byte_at_largest_size")
    if cpu:
        parts.append(_cpu_sentence(cpu, study))
    return " ".join(parts)


def _cpu_sentence(cpu: dict, study: Study) -> str:
    """Each side's CPU per byte of the zero-copy against the one-copy path, and what moved where, as the
    Study's decisions of each side decide it (the means alone claim nothing)."""
    size, zc, one = cpu["msg_size"], ZERO_COPY, ONE_COPY
    found = {side: study.decision(zc, size, base=one, metric=metric) for side, metric in SIDE_CPU.items()}
    text = (f"At {fmt_size(size)} {cost_claim(study, found['sender'], f'{name(zc)}’s sender')}; "
            f"{cost_claim(study, found['receiver'], 'its receiver')} (perf task-clock, against {name(one)})")
    verdicts = {side: cost_verdict(study, d) for side, d in found.items()}
    if verdicts["sender"] == "less" and verdicts["receiver"] == "more":
        text += ": the sender saves and the receiver pays more."
    elif verdicts["sender"] in ("more", "the same"):
        text += f": {name(zc)} saves its sender no CPU per byte here."
    else:
        text += "."
    return text + states_note(study, zc, size)

"""The section "Data paths: where the copies happen": what the servers' own counters say about the copy
the one-copy path removes (user-space copy bytes per message, the sender's cost per byte)."""

from __future__ import annotations

from ...fmt import fmt_num, fmt_pct, fmt_size
from .. import findings as fnd
from ..roles import BASE, ONE_COPY, name
from ..decisions import Decision
from ..study import SIDE_CPU, Study
from .words import cost_claim


def markdown(study: Study) -> str:
    """What the counters say about the copy A2 removes: user-space copy bytes and sender cost (as decided)."""
    e = fnd.copy_evidence(study.part_e)
    d = study.decision(ONE_COPY, int(e["largest"]), metric=SIDE_CPU["sender"]) if e.get("largest") is not None else None
    return copy_evidence_text(study, e, d)


def copy_evidence_text(study: Study, e: dict, sender: Decision | None = None) -> str:
    """The counters' words; sender: the Study's decision of the one-copy sender's CPU per byte against the
    baseline at the largest size (a difference of means is said only with it)."""
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
        parts.append(f"At the largest size, {fmt_size(e['largest'])}, the sender spends "
                     f"{fmt_num(at_top[b])} {unit} per byte in {name(b)} and {fmt_num(at_top[x])} in "
                     f"{name(x)} (means); "
                     + (cost_claim(study, sender, f"{name(x)}'s sender") + "." if sender is not None else
                        "no decision compares them (fewer than two passes)."))
    else:
        parts.append("Sender-side CPU counters were not recorded, so the cost of the removed copy "
                     "cannot be stated.")
    return " ".join(parts)



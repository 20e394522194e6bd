"""Q5. At what message size does zero-copy outperform two-copy on your system?

The answer's sentence, its tables and answers.json's q5_zero_copy_vs_two_copy, from the Study:
the decided crossover (crossover.py, shared with Q4), the rule-chosen explanations of what the
zero-copy path pays and where its deferred copy runs, and its own completion counts."""

from __future__ import annotations

import pandas as pd

from ...fmt import fmt_num, fmt_pct, fmt_size
from .. import findings as fnd
from ..decisions import Outcome
from ..roles import BASE, ZERO_COPY, name
from ..study import SIDE_CPU, Study
from . import crossover
from .words import cost_claim, states_note

KEY, FAMILY = "q5_zero_copy_vs_two_copy", "q5"


def answer(study: Study) -> dict:
    by_size = study.compare(ZERO_COPY)["by_size"]
    zc = fnd.zero_copy_finding(study.part_e, study.crossover(ZERO_COPY))
    evidence = ""
    if zc.copied_share_pct == zc.copied_share_pct and by_size:  # not NaN: completions were recorded
        bound = study.explanations.get(f"bound_{ZERO_COPY}")
        largest = by_size[max(by_size)].decision
        said = (bound is not None and bound.verdict == "sender" and largest != Outcome.WIN
                and zc.size == max(by_size))  # the gain sentence gave the sender's CPU per byte there
        evidence = zero_copy_evidence_text(zc, study, sender_cpu_said=said)
    # Q1 refers back to the same two explanations with their verdicts (q1.IN_PROFILE): Q5 points at it
    return crossover.answer(study, ZERO_COPY, FAMILY, ["zero_copy_cost", "deferred_copy_site"], evidence, said_in="Q1")


def tables(study: Study) -> list[tuple[str, pd.DataFrame]]:
    """(caption, table): the decisions per size, then per thread count."""
    return [("", crossover.decision_table(study, ZERO_COPY, FAMILY)),
            (crossover.PER_THREADS_CAPTION, crossover.per_threads_table(study, ZERO_COPY, FAMILY))]


def zero_copy_evidence_text(zc, study: Study, sender_cpu_said: bool = False) -> str:
    """What the COPIED share (the program's own count of the kernel's flags) and per-side CPU say at the
    crossover size (or the largest), each side as the Study decides it; only the receiver's when a
    sentence before gave the sender's."""
    share = zc.copied_share_pct
    text = (f"{fmt_pct(share)} of {name(ZERO_COPY)}'s completions were flagged SO_EE_CODE_ZEROCOPY_COPIED "
            "(counted by its server)")
    if share >= 50:
        text += ": on this path the kernel copies the pinned pages after all (why: Q1)"
    else:
        text += (f"; the other {fmt_pct(100 - share)} left without a copy: the device read the pinned user pages "
                 "itself (DMA), the case MSG_ZEROCOPY exists for")
    size = int(zc.size)
    found = {side: study.decision(ZERO_COPY, size, metric=metric) for side, metric in SIDE_CPU.items()}
    said = [cost_claim(study, found["receiver"], "its receiver")] if sender_cpu_said else [
        cost_claim(study, found["sender"], f"{name(ZERO_COPY)}'s sender"),
        cost_claim(study, found["receiver"], "its receiver")]
    if any(d is not None for d in found.values()):
        text += f". At {fmt_size(size)} " + "; ".join(said) + " (perf task-clock)"
    # Q1 gives the two states' numbers, the profile section their account: a reference here (review-fresh4 G7)
    return text + "." + states_note(study, ZERO_COPY, size, again=True)

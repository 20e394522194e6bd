"""Q4. At what message size does one-copy outperform two-copy on your system?

The answer's sentence, its tables and answers.json's q4_one_copy_vs_two_copy, from the Study:
the decided crossover (crossover.py, shared with Q5) and the rule-chosen explanation of the copy
the one-copy path removes."""

from __future__ import annotations

import pandas as pd

from ...fmt import fmt_size
from ..explain import Explanation
from ..explain_copies import gather_referred, says_gather
from ..decisions import Outcome
from ..roles import BASE, ONE_COPY, name
from ..study import Study
from . import crossover
from . import q6 as q6_text  # q6 imports this module: its describe is read at call time
from .words import PROFILE_SECTION, only_at, ratio_text, refer_back

KEY, FAMILY = "q4_one_copy_vs_two_copy", "q4"


def answer(study: Study) -> dict:
    return crossover.answer(study, ONE_COPY, FAMILY, ["removed_copy"], losses_text(study))


def explained_losses(study: Study) -> list[Explanation]:
    """The Study's gap_a2_<size> explanations Q4 says, smallest size first: the size Q6 explains is left to Q6."""
    q6 = (study.q6_explanation.evidence or {}).get("msg_size") if study.q6_explanation is not None else None
    return sorted((e for k, e in study.explanations.items()
                   if k.startswith(f"gap_{ONE_COPY}_") and e.evidence.get("msg_size") != q6),
                  key=lambda e: e.evidence["msg_size"])


def losses_text(study: Study) -> str:
    """Why A2 loses where it is decided to lose, from that size's profile (explain_copies.per_message_gap,
    the Study's gap_a2_<size>); the size Q6 explains is left to Q6 (one line points there), and the gather
    mechanism in full at the first size that offers it (a later one refers back)."""
    q6 = (study.q6_explanation.evidence or {}).get("msg_size") if study.q6_explanation is not None else None
    # the decided loss Q6 explains (review-fresh4 G8: it was left unpointed): one line there, with its verdict
    at_q6 = study.decision(ONE_COPY, q6) if q6 is not None else None
    standing = at_q6 is not None and study.family(FAMILY).stands(at_q6)
    to_q6 = refer_back(study, [f"gap_{ONE_COPY}_{q6}"], section="Q6") if standing else ""
    found = explained_losses(study)
    unprofiled = " ".join(unprofiled_losses(study, found, q6))
    to_q6 = " ".join(t for t in (unprofiled, to_q6) if t)
    if not found:
        return to_q6
    fallen = any(study.family(FAMILY).fallen(study.decision(ONE_COPY, e.evidence["msg_size"])) for e in found)
    head = f"Where {name(ONE_COPY)} " + ("loses before Holm's correction" if fallen else "is decided to lose") + ":"
    said, gather_at = [], None
    for e in found:
        size = e.evidence["msg_size"]
        d = study.decision(ONE_COPY, size)
        threads = sorted({int(t) for t in study.profiles.loc[study.profiles["msg_size"] == size, "threads"]})
        only = only_at(study, threads)
        # a loss Holm's correction does not leave standing is no decided loss (crossover.FALLEN)
        before = " (before the correction only, †)" if study.family(FAMILY).fallen(d) else ""
        said.append(f"at {fmt_size(size)} its loss{before} over all thread counts is {ratio_text(d)}"
                    + (f", its profile of {only[2:]}" if only else "") + ". "
                    + (gather_referred(e.text, e, f"at {fmt_size(gather_at)} above") if gather_at else e.text))
        if gather_at is None and says_gather(e):
            gather_at = size
    return " ".join([head] + said + ([to_q6] if to_q6 else []))


def unprofiled_losses(study: Study, found: list[Explanation], q6: int | None) -> list[str]:
    """One line per decided loss no profile explains (review-fresh5 N7: the 1 KiB loss got no word): why its
    profile is missing (taken while the vCPUs were apart and left out, or not profiled), and Q6's pooled
    shortfall where that covers the size."""
    explained = {e.evidence["msg_size"] for e in found} | ({q6} if q6 is not None else set())
    surprise, standing = getattr(study, "q6_surprise", (None, "none"))
    covered = ({int(c.where["size"]) for c in surprise.cells} if standing == "pattern" and surprise is not None
               and surprise.kind == "one_copy_slower" else set())
    apart = study.profiles_apart
    said = []
    for size, d in sorted(study.compare(ONE_COPY)["by_size"].items()):
        if d.decision != Outcome.LOSS or size in explained:
            continue
        was_apart = not apart.empty and bool(((apart["msg_size"] == size)
                                              & apart["impl"].isin([ONE_COPY, BASE])).any())
        why = ("its profiled run was taken while the two vCPUs were apart and is left out (see \"" + PROFILE_SECTION
               + "\")" if was_apart else "it was not profiled")
        before = " (before the correction only, †)" if study.family(FAMILY).fallen(d) else ""
        said.append(f"At {fmt_size(size)} its loss{before} over all thread counts is {ratio_text(d)}, and no profile "
                    f"explains it: {why}" + (f"; Q6's pooled shortfall ({q6_text.describe(surprise)}) covers it"
                                             if int(size) in covered else "") + ".")
    return said


def tables(study: Study) -> list[tuple[str, pd.DataFrame]]:
    """(caption, table): the decisions per size, then per thread count."""
    return [("", crossover.decision_table(study, ONE_COPY, FAMILY)),
            (crossover.PER_THREADS_CAPTION, crossover.per_threads_table(study, ONE_COPY, FAMILY))]

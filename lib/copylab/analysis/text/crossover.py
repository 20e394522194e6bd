"""What Q4 and Q5 have in common: "from which size does X outperform A1", answered from the Study's
decisions of X against the baseline (one answer with its interval, the per-size and per-thread-count
detail as tables, how many more passes an undecided comparison likely needs, and what Holm's
correction over the answer's comparisons leaves standing). q4.py and q5.py add each question's own
evidence."""

from __future__ import annotations

from types import SimpleNamespace

import pandas as pd

from ...fmt import fmt_num, fmt_size
from .. import findings as fnd
from ..decisions import Decision, Outcome, decided_crossover
from ..roles import BASE, name
from ..study import SIDE_CPU, Study
from .words import (METHODS_SECTION, PROFILE_SECTION, cost_claim, cost_verdict, decision_cell, interval, more_passes,
                    no_pair_reason, pooled_note, ratio_text, refer_back, reps_note, unanswerable)


def _size_list(by_size: dict) -> str:
    return "; ".join(f"{fmt_size(s)}: {d.decision}, {ratio_text(d)}" for s, d in sorted(by_size.items()))


def decision_text(study: Study, impl: str, family: str) -> str:
    """The one answer: the decided crossover over all thread counts, or why there is none."""
    by_size = study.compare(impl)["by_size"]
    x, b = name(impl), name(BASE)
    if not by_size:
        return f"No size where both {x} and {b} were measured in throughput mode."
    sizes = sorted(by_size)
    largest = by_size[sizes[-1]]
    start = study.crossover(impl)
    # the test, the margin and the repetitions are said once, in the methods section
    how = f"Each decision is of the throughput ratio {x}/{b} over all thread counts (see \"{METHODS_SECTION}\")."
    if start is not None:
        # "upward" would claim sizes past the grid: from the crossover to the largest size measured
        span = (f"from {fmt_size(start)} to {fmt_size(sizes[-1])}" if start != sizes[-1] else f"at {fmt_size(start)}")
        text = (f"**{x} outperforms {b} {span}**: a decided win at {fmt_size(start)} "
                f"({ratio_text(by_size[start], True)})")
        # the largest size measured: "every larger size" would claim sizes the grid does not have
        text += (" and at every larger size of this grid (at " f"{fmt_size(sizes[-1])}: {ratio_text(largest, True)})."
                 if start != sizes[-1] else ", the largest size of this grid.")
    else:
        wins = [s for s in sizes if by_size[s].decision == Outcome.WIN]
        text = f"**There is no size in this grid from which {x} is decided to outperform {b}.**"
        if wins:
            text += (f" It wins at {', '.join(fmt_size(s) for s in wins)}, but not at every larger size, so that "
                     "is no crossover.")
        text += f" At {fmt_size(sizes[-1])} the decision is {largest.decision} ({ratio_text(largest, True)})"
        text += f"; {more_passes(largest)}." if largest.decision == Outcome.UNDECIDED else "."
    return (f"{text} By size: {_size_list(by_size)}.{per_thread_crossovers(study, impl, start)} {how} "
            f"{correction_text(study, impl, family, start)}")


def per_thread_crossovers(study: Study, impl: str, pooled: int | None) -> str:
    """' Per thread count ...' when a thread count's own crossover differs from the pooled one ('' if none
    does): a pooled crossover need not hold at each thread count."""
    per = {t: decided_crossover(by) for t, by in sorted(study.compare(impl)["per_threads"].items())}
    if all(c == pooled for c in per.values()):
        return ""
    said = "; ".join(f"{t} thread{'s' if t != 1 else ''}: " + (fmt_size(c) if c is not None else "none decided")
                     for t, c in per.items())
    return f" Per thread count the crossover differs ({said}: the per-thread table)."


def correction_text(study: Study, impl: str, family: str, start: int | None) -> str:
    """What Holm's correction over the answer's per-size comparisons leaves standing."""
    fam, by_size = study.family(family), study.compare(impl)["by_size"]
    decided = [s for s, d in sorted(by_size.items()) if d.decision != Outcome.UNDECIDED]
    fallen = [s for s in decided if not fam.stands(by_size[s])]
    if not decided:
        return ""
    head = f"Holm's correction over the {fam.size} comparisons of this answer"
    if not fallen:
        return f"{head} leaves every decision standing."
    crossing = (" (so the crossover is not established at family-wise 95% confidence)"
                if start is not None and any(s >= start for s in fallen) else "")
    listed = ", ".join(f"{fmt_size(s)} (adjusted p = {fmt_num(fam.p_holm(by_size[s]))})" for s in fallen)
    return f"{head} leaves the decision{'s' if len(fallen) != 1 else ''} at {listed} short of standing{crossing}."


def decision_table(study: Study, impl: str, family: str) -> pd.DataFrame:
    """Per size over all thread counts: ratio, interval, passes, decision, Holm-adjusted p and what an
    undecided one needs."""
    fam, rows = study.family(family), []
    for size, d in sorted(study.compare(impl)["by_size"].items()):
        rows.append({"message size": fmt_size(size), "ratio": d.ratio, "95% interval": interval(d),
                     "passes": f"{d.n_x} / {d.n_base}", "decision": str(d.decision),
                     "adjusted p (Holm)": fmt_num(fam.p_holm(d)), "to decide": more_passes(d) or "decided"})
    return pd.DataFrame(rows, columns=["message size", "ratio", "95% interval", "passes", "decision",
                                       "adjusted p (Holm)", "to decide"])


def per_threads_table(study: Study, impl: str) -> pd.DataFrame:
    """Rows: sizes; columns: thread counts; cells: 'win 1.12 (1.03–1.22)'."""
    per = study.compare(impl)["per_threads"]
    sizes = sorted({s for by in per.values() for s in by})
    out = {"message size": [fmt_size(s) for s in sizes]}
    for threads in sorted(per):
        out[f"{threads} thr"] = [decision_cell(per[threads].get(s)) for s in sizes]
    return pd.DataFrame(out)


def sender_cost(study: Study, impl: str) -> tuple[int, Decision | None]:
    """(largest size, the Study's decision of impl's sender CPU per byte against the baseline there)."""
    sizes = study.compare(impl)["by_size"]
    largest = max(sizes) if sizes else None
    return largest, (study.decision(impl, largest, metric=SIDE_CPU["sender"]) if largest is not None else None)


def sender_cost_sentence(study: Study, impl: str) -> str:
    """impl's sender CPU per byte against the baseline at the largest size, said as decided (task-clock)."""
    largest, d = sender_cost(study, impl)
    if d is None:
        return ""
    return f"At {fmt_size(largest)} {cost_claim(d, f'{name(impl)}’s sender')} (perf task-clock)."


def gain_sentence(study: Study, impl: str, decision: str | None) -> str:
    """What the side that bounds the largest size means for impl's decision there (a rule, see explain.py):
    a cheaper send shows as throughput only where the sender bounds and its saving is decided."""
    found = study.explanations.get(f"bound_{impl}")
    if found is None:
        return ""
    # the side that bounds is read at one thread count: said as such beside a decision over all of them
    bound = SimpleNamespace(verdict=found.verdict, text=_bound_text(study, found)
                            + pooled_note(study, found.evidence.get("threads")))
    if bound.verdict == "receiver" and decision != Outcome.WIN:
        return f"{bound.text} So what {name(impl)} saves on the sending side cannot raise the rate."
    if bound.verdict not in ("sender", "receiver"):  # a hypothesis the profile section words in full
        return (f"Which side bounds {name(impl)} at the largest size is not decided by the busy shares "
                f"({bound.verdict}: see \"{PROFILE_SECTION}\")." + pooled_note(study, found.evidence.get("threads")))
    if bound.verdict != "sender":
        return bound.text
    cost = sender_cost_sentence(study, impl)
    saved = cost_verdict(sender_cost(study, impl)[1]) == "less"
    if decision == Outcome.WIN and saved:
        # a saturated sender's CPU per byte is its window over the bytes: the inverse of its throughput,
        # so the two decisions are one result; the profile is the independent evidence of where it goes
        return (f"{bound.text} {cost} With the sender's CPU saturated, its CPU per byte is the inverse of its "
                f"throughput, so this is the throughput result seen from the sender, not a second one; where the "
                f"saving lies is in the sender's profile (\"{PROFILE_SECTION}\").")
    if saved:
        return f"{bound.text} {cost} Its saving has not shown as decided throughput here."
    return f"{bound.text} {cost}"


def _bound_text(study: Study, found) -> str:
    """The bound_side sentence, or a line referring back to the profile section where that section said it
    with the busy shares already (the same size and thread count: profile.profile_text's bound sentences)."""
    from ..profiles import profile_finding

    p = profile_finding(study.profiles)
    size, threads = found.evidence.get("msg_size"), found.evidence.get("threads")
    if found.verdict in ("sender", "receiver") and p.get("msg_size") == size and [p.get("threads")] == threads:
        who = found.text.split(": the ", 1)[0]
        return f"{who}: the {found.verdict} bounds the throughput (busy shares in \"{PROFILE_SECTION}\")."
    return found.text


def public_numbers(study: Study, impl: str, family: str) -> dict:
    """answers.json's keys of one crossover question (docs/contracts.md, "Analysis contract" and
    "Decisions"): every interval and decision is the Study's."""
    found, fam = study.compare(impl), study.family(family)
    per_fam = study.family(f"{family}_per_threads")
    by_means = fnd.crossover_finding(study.part_e, impl).public
    per_threads = {str(t): decided_crossover(by) for t, by in sorted(found["per_threads"].items())}
    return {
        "crossover_bytes": study.crossover(impl), "per_threads": per_threads,
        "equivalence_margin": study.margin,
        "decision_by_size": {str(s): str(d.decision) for s, d in found["by_size"].items()},
        "decision_per_threads": {str(t): {str(s): str(d.decision) for s, d in by.items()}
                                 for t, by in sorted(found["per_threads"].items())},
        "decided_crossover_bytes": study.crossover(impl),
        "decision_detail_by_size": {str(s): {**d.to_dict(), "p_holm": fam.p_holm(d), "stands": fam.stands(d)}
                                    for s, d in found["by_size"].items()},
        "decision_detail_per_threads": {str(t): {str(s): {**d.to_dict(), "p_holm": per_fam.p_holm(d),
                                                          "stands": per_fam.stands(d)} for s, d in by.items()}
                                        for t, by in sorted(found["per_threads"].items())},
        "family": family, "crossover_by_means": by_means,
        "repetitions": int(min((d.n_x for d in found["by_size"].values()), default=0)),
    }


def answer(study: Study, impl: str, family: str, why: list[str], evidence: str = "", said_in: str = "") -> dict:
    """One crossover question's answer: its numbers, its text and the explanations it cites (why:
    their rule names), and evidence: the question's own last sentences. said_in: an earlier answer that
    referred back to the same explanations already (this one points at it without their verdicts)."""
    public = public_numbers(study, impl, family)
    finding = fnd.crossover_finding(study.part_e, impl)
    if not finding.answerable:
        reason = no_pair_reason(impl, finding.have_throughput)
        return {**public, "reason": reason, "text": unanswerable(reason)}
    by_size = study.compare(impl)["by_size"]
    largest = by_size[max(by_size)].decision if by_size else None
    cited = [study.explanations[k] for k in why if k in study.explanations]
    # the profile section gave these in full: one line refers back to it
    # a single repetition is this answer's own caveat; 2 or more are said in the methods and figures sections
    single = reps_note(study.reps).strip() if study.reps[1] <= 1 else ""
    back = refer_back(study, why)
    if back and said_in:  # the earlier answer listed the verdicts: one pointer, not the same line again
        back = f"What {name(impl)} pays and where (the verdicts listed in {said_in}): see \"{PROFILE_SECTION}\"."
    parts = [decision_text(study, impl, family), single, back,
             gain_sentence(study, impl, largest), evidence]
    return {**public, "explanations": [e.public() for e in cited], "text": " ".join(p for p in parts if p)}

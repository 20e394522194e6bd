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
from ..roles import BASE, ONE_COPY, name
from ..study import COST_FAMILY, FALLEN, SIDE_CPU, Study
from .words import (DATA_PATHS_SECTION, METHODS_SECTION, PROFILE_SECTION, and_sizes, cost_claim, cost_verdict,
                    cost_words, decision_cell, interval, more_passes, no_pair_reason, pooled_note, ratio_text,
                    refer_back, reps_note, unanswerable)


def _dagger(fallen: bool) -> str:
    return "†" if fallen else ""


def _size_list(by_size: dict, fam) -> str:
    return "; ".join(f"{fmt_size(s)}: {d.decision}, {ratio_text(d)}{_dagger(fam.fallen(d))}"
                     for s, d in sorted(by_size.items()))


def decision_text(study: Study, impl: str, family: str) -> str:
    """The one answer: the crossover the standing decisions give over all thread counts, or why there is none.
    A win or a loss Holm's correction over the answer's family does not leave standing is said as one
    "before the correction only" (and marked †), never as decided."""
    by_size = study.compare(impl)["by_size"]
    x, b = name(impl), name(BASE)
    if not by_size:
        return f"No size where both {x} and {b} were measured in throughput mode."
    fam = study.family(family)
    sizes = sorted(by_size)
    largest = by_size[sizes[-1]]
    start, before = study.standing_crossover(impl, family), study.crossover(impl)
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
        if before is not None and before != start:
            text += f" From {fmt_size(before)} it wins before the correction only."
    else:
        wins = [s for s in sizes if by_size[s].decision == Outcome.WIN and fam.stands(by_size[s])]
        # the largest size's decision is said next, marked
        fallen = [s for s in sizes[:-1] if by_size[s].decision == Outcome.WIN and fam.fallen(by_size[s])]
        text = f"**There is no size in this grid from which {x} is decided to outperform {b}.**"
        if wins:
            text += (f" It wins at {and_sizes(wins)}, but not at every larger size, so that "
                     "is no crossover.")
        if fallen:
            text += f" At {and_sizes(fallen)} it wins before the correction only (†)."
        text += f" At {fmt_size(sizes[-1])} the decision is {largest.decision}{_dagger(fam.fallen(largest))} " \
                f"({ratio_text(largest, True)})"
        text += f"; {more_passes(largest)}." if largest.decision == Outcome.UNDECIDED else "."
    return (f"{text} By size: {_size_list(by_size, fam)}.{per_thread_crossovers(study, impl, family, start)} {how} "
            f"{correction_text(study, impl, family, start)}")


def per_thread_crossovers(study: Study, impl: str, family: str, pooled: int | None) -> str:
    """' Per thread count ...' when a thread count's own standing crossover (Holm over the per-thread
    family) differs from the pooled one ('' if none does): a pooled crossover need not hold at each
    thread count, and a per-thread win that does not stand is no crossover."""
    per_family = f"{family}_per_threads"
    said, differs = [], False
    for t in sorted(study.compare(impl)["per_threads"]):
        standing, before = study.standing_crossover(impl, per_family, t), study.crossover(impl, t)
        differs |= standing != pooled
        words = fmt_size(standing) if standing is not None else "none decided"
        if before is not None and before != standing:
            words += f" ({fmt_size(before)} before the correction only)"
        said.append(f"{t} thread{'s' if t != 1 else ''}: {words}")
    if not differs:
        return ""
    return f" Per thread count the crossover differs ({'; '.join(said)}: the per-thread table)."


def correction_text(study: Study, impl: str, family: str, start: int | None) -> str:
    """What Holm's correction over the answer's per-size comparisons leaves standing, and (Q4, the first
    answer whose comparisons the summary also corrects) that standing depends on the family."""
    fam, by_size = study.family(family), study.compare(impl)["by_size"]
    decided = [s for s, d in sorted(by_size.items()) if d.decision != Outcome.UNDECIDED]
    fallen = [s for s in decided if not fam.stands(by_size[s])]
    if not decided:
        return ""
    head = f"Holm's correction over the {fam.size} comparisons of this answer"
    if not fallen:
        text = f"{head} leaves every decision standing."
    else:
        listed = ", ".join(f"{fmt_size(s)} (adjusted p = {fmt_num(fam.p_holm(by_size[s]))})" for s in fallen)
        text = (f"{head} leaves the decision{'s' if len(fallen) != 1 else ''} at {listed} short of standing "
                f"(marked †: {FALLEN}).")
    return f"{text} {family_note(study, impl, family)}".strip() if family == FAMILY_NOTED else text


# the answer where a comparison first appears in a second family (the summary's, then Q4's): it says once
# why the same ratio can stand in one and not in another
FAMILY_NOTED = "q4"


def family_note(study: Study, impl: str, family: str) -> str:
    """One sentence: a decision's standing depends on the family it is corrected in, with this answer's
    own example where the summary's family and this one disagree."""
    fam, summary = study.family(family), study.family("summary")
    differ = [(s, d) for s, d in sorted(study.compare(impl)["by_size"].items())
              if d.decision != Outcome.UNDECIDED and fam.stands(d) != summary.stands(d)]
    example = ""
    if differ:
        size, d = differ[0]
        here, there = ("stands", "does not") if fam.stands(d) else ("does not stand", "does")
        example = (f" ({name(impl)}/{name(BASE)} at {fmt_size(size)} {here} here and {there} in the summary)")
    return ("A decision's standing depends on the family it is corrected in (the summary's, Part E's answers', "
            "Q6's): Holm's correction weighs each p by the comparisons of its own family, so the same ratio can "
            f"stand in one and not in another{example}.")


def decision_table(study: Study, impl: str, family: str) -> pd.DataFrame:
    """Per size over all thread counts: ratio, interval, passes, decision (†: not standing after Holm's
    correction over the family), Holm-adjusted p and what an undecided one needs."""
    fam, rows = study.family(family), []
    for size, d in sorted(study.compare(impl)["by_size"].items()):
        fallen = fam.fallen(d)
        rows.append({"message size": fmt_size(size), "ratio": d.ratio, "95% interval": interval(d),
                     "passes": f"{d.n_x} / {d.n_base}", "decision": f"{d.decision}{_dagger(fallen)}",
                     "adjusted p (Holm)": fmt_num(fam.p_holm(d)),
                     "to decide": more_passes(d) or (FALLEN if fallen else "decided")})
    return pd.DataFrame(rows, columns=["message size", "ratio", "95% interval", "passes", "decision",
                                       "adjusted p (Holm)", "to decide"])


PER_THREADS_CAPTION = ("Per thread count (decision, ratio and 95% interval; †: "
                       f"{FALLEN} over this table's comparisons):")


def per_threads_table(study: Study, impl: str, family: str) -> pd.DataFrame:
    """Rows: sizes; columns: thread counts; cells: 'win 1.12 (1.03–1.22)', 'win† ...' where Holm's correction
    over the per-thread family does not leave it standing."""
    per, fam = study.compare(impl)["per_threads"], study.family(f"{family}_per_threads")
    sizes = sorted({s for by in per.values() for s in by})
    out = {"message size": [fmt_size(s) for s in sizes]}
    for threads in sorted(per):
        cells = [per[threads].get(s) for s in sizes]
        out[f"{threads} thr"] = [decision_cell(d).replace(" ", "† ", 1) if fam.fallen(d) else decision_cell(d)
                                 for d in cells]
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
    return f"At {fmt_size(largest)} {cost_claim(study, d, f'{name(impl)}’s sender')} (perf task-clock)."


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
    largest, d = sender_cost(study, impl)
    saved = cost_verdict(study, d) == "less"
    if impl == ONE_COPY and d is not None and decision != Outcome.WIN:
        # the data-paths section gave this decision with its numbers (data_paths.copy_evidence_text): a pointer
        cost = (f"Its sender's CPU per byte against {name(d.base)}'s there: {cost_words(study, d)} "
                f"(\"{DATA_PATHS_SECTION}\").")
    if decision == Outcome.WIN and saved:
        # a saturated sender's CPU per byte is its window over the bytes: the inverse of its throughput,
        # so the two decisions are one result; the profile is the independent evidence of where it goes
        return (f"{bound.text} {cost} With the sender's CPU saturated, its CPU per byte is the inverse of its "
                f"throughput, so this is the throughput result seen from the sender, not a second one; where the "
                f"saving lies is in the sender's profile (\"{PROFILE_SECTION}\").")
    if decision == Outcome.WIN and d is not None and d.decision == Outcome.LOSS:  # lower before the correction only
        # the same inverse: the standing throughput win is the result; the cost's own test is one of a larger family
        return (f"{bound.text} {cost} With the sender's CPU saturated, its CPU per byte is the inverse of its "
                f"throughput: the throughput win above, which stands in this answer's family, is this saving seen "
                f"from the rate (the cost's own comparison is corrected over the {study.family(COST_FAMILY).size} "
                "comparisons of a side's cost).")
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
    # the largest size's outcome as it stands after the answer's correction (a win that does not stand is no win)
    top = by_size[max(by_size)] if by_size else None
    largest = None if top is None else Outcome.UNDECIDED if study.family(family).fallen(top) else top.decision
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

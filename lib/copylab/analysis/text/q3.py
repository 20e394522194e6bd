"""Q3. How does thread count interact with cache contention?

Answered per message size, each size with a conclusion from its own test (the Study's comparison of
the most against the fewest threads), the context switches per MB beside it, and what counting
cache misses (a PMU) would add; answers.json's q3_threads_cache_contention."""

from __future__ import annotations

import pandas as pd

from ...fmt import fmt_num, fmt_size
from .. import findings as fnd
from ..decisions import Outcome
from ..explain import before_correction, said_once, thread_effect
from ..roles import STUDY, name
from ..stats import aggregate, measured, study_rows, throughput_rows
from ..study import MEAN_ROUND_TRIP, Family, Study
from .words import PROFILE_SECTION, interval, ratio_text

# a mean round trip's decision in words (x against base; a win is the longer round trip, as for any cost)
LONGER = {Outcome.WIN: "decided longer", Outcome.LOSS: "decided shorter", Outcome.EQUIVALENT: "equivalent",
          Outcome.UNDECIDED: "undecided"}

KEY, FAMILY = "q3_threads_cache_contention", "q3"
VERDICTS = {Outcome.WIN: "more threads move more data", Outcome.LOSS: "more threads move less data",
            Outcome.EQUIVALENT: "the thread count makes no difference", Outcome.UNDECIDED: "undecided"}
CONTENTION = 1.10  # misses per byte this much higher at the most threads: more misses with more threads


def _ratios(df: pd.DataFrame, metric: str, lo: int, hi: int) -> dict[int, dict[str, float]]:
    """Per size: the metric's mean at hi threads over its mean at lo, per implementation (never averaged:
    paths whose factors go opposite ways would cancel)."""
    tp = throughput_rows(study_rows(df))
    if not measured(tp, metric):
        return {}
    agg = aggregate(tp, metric).set_index(["impl", "msg_size", "threads"])[metric]
    out = {}
    for size in sorted(tp["msg_size"].unique()):
        ratios = {i: float(agg[(i, size, hi)] / agg[(i, size, lo)]) for i in STUDY
                  if (i, size, hi) in agg.index and (i, size, lo) in agg.index and agg[(i, size, lo)] > 0}
        if ratios:
            out[int(size)] = ratios
    return out


def factors(ratios: dict[str, float] | None) -> str:
    """'×0.72–0.86' when every path's factor goes the same way, else each path's: 'A1 ×1.05, A2 ×0.75'."""
    if not ratios:
        return ""
    values = list(ratios.values())
    if all(v >= 1 for v in values) or all(v <= 1 for v in values):
        low, high = min(values), max(values)
        return f"×{fmt_num(low)}" if fmt_num(low) == fmt_num(high) else f"×{fmt_num(low)}–{fmt_num(high)}"
    return ", ".join(f"{name(i)} ×{fmt_num(v)}" for i, v in ratios.items())


def thread_effects(study: Study) -> list[str]:
    """Why each thread effect decided before the correction happened (explain.thread_effect), one sentence per
    path and size; one that Holm's correction over Q3's family does not leave standing is said as a difference
    not decided after it (†), as Q4/Q5 say theirs."""
    from ... import cachelevels

    lo, hi, decided = study.threads
    fam = study.family(FAMILY)
    tp = throughput_rows(study.part_e)
    caches = cachelevels.cache_sizes(study.meta.get("cpu_caches"))
    last = cachelevels.last_level(caches)
    llc = (last, caches[last]) if last else None
    out = []
    for size, by_impl in decided.items():
        for impl, d in by_impl.items():
            if d.decision not in (Outcome.WIN, Outcome.LOSS):
                continue
            at = tp[(tp["impl"] == impl) & (tp["msg_size"] == size)]
            fallen = fam.fallen(d)
            said = (f"a {d.decision} {before_correction(fam, d)}; what follows explains a difference not decided "
                    "after it" if fallen else str(d.decision))
            who = f"{name(impl)} at {fmt_size(size)} ({ratio_text(d, True)}, {said})"
            out.append((f"{name(impl)} at {fmt_size(size)}",
                        thread_effect(at[at["threads"] == lo], at[at["threads"] == hi], who, str(d.decision), lo, hi,
                                      llc, standing=not fallen, states=_states(study, impl, size)).text))
    return said_once(out)  # two paths that lose for the same reason: the hypothesis once, the second refers back


def _states(study: Study, impl: str, size: int):
    """The profile section's explanation of (impl, size)'s runs moving work between the sides (two states, or a
    trade of CPU per byte), with where it is said, for a thread effect to refer to instead of repeating it."""
    for key in (f"states_{impl}_{int(size)}", f"states_trade_{impl}_{int(size)}"):
        if key in study.explanations:
            return study.explanations[key], f'"{PROFILE_SECTION}"'
    return None


def said_outcomes(decided: dict, fam: Family | None = None) -> dict:
    """{impl: the outcome said as decided}: a decision Holm's correction over fam does not leave standing is
    undecided here (and said 'before the correction only' beside it); fam None: every decision stands."""
    return {i: Outcome.UNDECIDED if fam is not None and fam.fallen(d) else d.decision for i, d in decided.items()}


def decided_any(decided: dict) -> bool:
    return any(d.decision in (Outcome.WIN, Outcome.LOSS) for by in decided.values() for d in by.values())


def size_verdict(outcomes: dict) -> str:
    """One conclusion for a size from its implementations' outcomes ({impl: outcome})."""
    found = set(outcomes.values())
    return found.pop() if len(found) == 1 else "mixed"


def answer(study: Study) -> dict:
    found = {**fnd.q3_finding(study.part_e, study.meta), **_answer(study)}
    if study.cache is not None:  # a sweep across working sets: the aggregate against the shared LLC
        found["aggregate_working_set"] = aggregate_working_set(study)
        found["text"] += "\n\n" + found["aggregate_working_set"]["text"]
    return found


def _answer(study: Study) -> dict:
    df, meta, fam = study.part_e, study.meta, study.family(FAMILY)
    lo, hi, decided = study.threads
    if not decided:
        reason = "throughput mode was measured at fewer than 2 thread counts"
        return {"reason": reason, "text": f"Cannot be answered from this sweep: {reason}."}
    cs = _ratios(df, "context_switches_per_mb", lo, hi)
    misses = {lvl: _ratios(df, col, lo, hi) for lvl, col in (("L1", "l1_misses_per_byte"), ("LLC", "llc_misses_per_byte"))}
    per_size = {str(s): {"verdict": size_verdict(said_outcomes(d, fam)),
                         "verdict_before_correction": size_verdict(said_outcomes(d)),
                         "decisions": {i: {**x.to_dict(), "p_holm": fam.p_holm(x), "stands": fam.stands(x)}
                                       for i, x in d.items()},
                         "context_switches_per_mb_ratio": cs.get(s),
                         **{f"{lvl}_misses_per_byte_ratio": m.get(s) for lvl, m in misses.items()}}
                for s, d in decided.items()}
    lines = [_size_line(s, d, cs.get(s), {lvl: m.get(s) for lvl, m in misses.items()}, fam) for s, d in decided.items()]
    text = (f"Per message size, throughput with {hi} client threads against {lo} (ratio, 95% interval, decision "
            f"per implementation):\n\n" + "\n\n".join(lines) + "\n\n" + " ".join(thread_effects(study))
            + ("\n\n" if decided_any(decided) else "") + _cores(meta, hi) + " " + _cache(misses, lo, hi)
            + _latency(study))
    return {"threads": [lo, hi], "cores": meta.get("cores"), "per_size": per_size, "text": text}


def _mixed(outcomes: dict) -> str:
    """A size whose paths' outcomes ({impl: outcome}) are not all one: 'only A3 decided (win); A1 and A2
    undecided', 'the implementations differ: A1 decided (win), A3 decided (loss); A2 undecided'."""
    groups: dict = {}
    for impl, outcome in outcomes.items():
        groups.setdefault(outcome, []).append(name(impl))
    undecided = groups.pop(Outcome.UNDECIDED, [])
    said = ", ".join(f"{' and '.join(names)} decided ({outcome})" for outcome, names in groups.items())
    head = ("the implementations differ: " if len(groups) > 1 else
            "only " if sum(len(n) for n in groups.values()) == 1 else "")
    return head + said + (f"; {' and '.join(undecided)} undecided" if undecided else "")


def _size_line(size: int, decided: dict, cs, misses: dict, fam: Family | None = None) -> str:
    """A size's conclusion from the decisions Holm's correction over Q3's family (fam) leaves standing, then
    each path's ratio; a decision that does not stand is marked † and said 'before the correction only'."""
    fallen = {i: d for i, d in decided.items() if fam is not None and fam.fallen(d)}
    parts = "; ".join(f"{name(i)} {ratio_text(d)} {d.decision}{'†' if i in fallen else ''}" for i, d in decided.items())
    outcomes = said_outcomes(decided, fam)
    verdict = size_verdict(outcomes)
    # "differ" only where decided outcomes differ: undecided beside a decided win is no difference between
    # paths, so a mixed size names which paths are decided and how
    known = set(outcomes.values()) - {Outcome.UNDECIDED}
    conclusion = VERDICTS.get(verdict) or (
        _mixed(outcomes) if Outcome.WIN in known or Outcome.LOSS in known else
        "no thread effect is decided (" + ", ".join(f"{name(i)} {o}" for i, o in outcomes.items()
                                                    if o != Outcome.UNDECIDED) + ")")
    if fallen:
        conclusion += (" after Holm's correction (" + " and ".join(
            f"{name(i)} {d.decision}, adjusted p {fmt_num(fam.p_holm(d))}" for i, d in fallen.items())
            + ", before the correction only: †)")
    extra = [f"context switches per MB {factors(cs)}"] if cs else []
    extra += [f"{lvl} misses per byte {factors(r)}" for lvl, r in misses.items() if r]
    # misses beside a fall in throughput, decided before the correction (the † above says whether it stands)
    if size_verdict(said_outcomes(decided)) in ("loss", "equivalent") and any(r for r in misses.values()):
        rising = [lvl for lvl, r in misses.items() if r and all(v >= CONTENTION for v in r.values())]
        conclusion += (f", with {' and '.join(rising)} misses per byte rising: consistent with cache contention"
                       if rising else ", with no rise in misses per byte: not cache contention")
    return f"**{fmt_size(size)}: {conclusion}.** {parts}" + (f"; {', '.join(extra)}." if extra else ".")


def _latency(study: Study) -> str:
    """The round trip against the thread count (the latency figure): the rules' sentences (explain.latency_threads
    from the fewest threads to the next, explain.latency_queue where a CPU is saturated)."""
    found = [study.explanations[k].text for k in ("latency_threads", "latency_queue") if k in study.explanations]
    if "latency_queue" in study.explanations:
        found.append(longest_round_trip(study, study.explanations["latency_queue"].evidence.get("slowest")))
    return f"\n\n**Latency against threads.** {' '.join(t for t in found if t)}" if found else ""


def longest_round_trip(study: Study, slowest: dict | None) -> str:
    """The path with the longest mean round trip at the most threads (explain.latency_queue's evidence), against
    each other path in that cell as the Study decides it (the mean round trip, MEAN_ROUND_TRIP), and why by
    Little's law: 'the slowest' only where decided longer than every other path's."""
    if not slowest or not slowest["others"]:
        return ""
    impl, size, threads = slowest["impl"], slowest["msg_size"], slowest["threads"]
    against = {other: study.decision(impl, size, threads, base=other, metric=MEAN_ROUND_TRIP)
               for other in slowest["others"]}
    said = [f"{fmt_num(d.ratio)}× {name(other)}'s, 95% interval {interval(d)}, {LONGER[d.decision]}"
            for other, d in against.items() if d is not None]
    slowest_decided = all(d is not None and d.decision == Outcome.WIN for d in against.values())
    head = (f"{name(impl)} at {fmt_size(size)} is the slowest at {threads} threads, decided against every other path"
            if slowest_decided else f"{name(impl)} at {fmt_size(size)} has the longest mean round trip at {threads} threads")
    cpu = " and ".join(f"{name(other)}'s {fmt_num(us)} µs ({side})" for other, (us, side) in slowest["others"].items())
    return (f"{head}" + (f" ({'; '.join(said)})" if said else "") + f": its {slowest['side']} spends "
            f"{fmt_num(slowest['cpu_us'])} µs per message against {cpu}, and by Little's law the round trip follows.")


def _cores(meta: dict, hi: int) -> str:
    cores = meta.get("cores")
    if not cores:
        return "The host's core count is unknown (no meta.json)."
    busy = 2 * hi
    return (f"This host has {cores} cores; {hi} connections keep {busy} threads busy (a sender and a receiver each)"
            + (", so they time-share the cores." if busy > int(cores) else ", within the cores."))


def _cache(misses: dict, lo: int, hi: int) -> str:
    if any(misses.values()):
        return ("Cache contention shows as misses per byte rising with the thread count where throughput stops "
                "rising; the lines above say where that holds.")
    return (f"Cache misses were not counted on this host (see Q2), so contention for the caches cannot be shown "
            f"here: with a PMU each line above would carry L1 and LLC misses per byte at {lo} and {hi} threads, "
            "and a size where throughput stops rising while misses per byte rise would show it.")


# ------------------------------------------------------------------------------------------------
# the aggregate working set against the shared last-level cache (a sweep across working sets)

AGGREGATE_FAMILY = "q3_cache"


def aggregate_working_set(study: Study) -> dict:
    """Threads x working set against the shared LLC (the Study's levels.Aggregate decisions): per size
    and path, whether per-thread throughput falls more where the aggregate leaves the LLC at the most
    threads than where it stays inside at both thread counts."""
    from ... import cachelevels

    c, fam = study.cache, study.family(AGGREGATE_FAMILY)
    lo, hi = c.threads
    llc = cachelevels.last_level(c.caches)
    if hi <= lo or llc is None:
        reason = ("the sweep has one thread count" if hi <= lo else "this host's last-level cache size is unknown")
        return {"reason": reason, "text": f"The aggregate working set against the LLC cannot be judged: {reason}."}

    def entry(d):
        return None if d is None else {**d.to_dict(), "p_holm": fam.p_holm(d), "stands": fam.stands(d)}

    per, lines = {}, []
    for a in c.aggregate:
        per.setdefault(str(a.size), {})[a.impl] = {"leaving": a.leaving, "staying": a.staying, "beyond": a.beyond,
                                                   "leave": entry(a.leave), "stay": entry(a.stay),
                                                   "contrast": entry(a.contrast)}
    for size in c.sizes:
        found = [a for a in c.aggregate if a.size == size]
        if not found:
            continue
        leaving = found[0].leaving
        if not leaving:
            lines.append(f"**{fmt_size(size)}:** no working set's aggregate leaves the LLC between {lo} and {hi} "
                         "threads, so this sweep cannot show it.")
            continue
        parts = []
        for a in found:
            if a.contrast is None:
                parts.append(f"{name(a.impl)} per-thread throughput {ratio_text(a.leave, inner=True)} {a.leave.decision}"
                             " (no working set stays inside the LLC at both counts to compare with)")
                continue
            verdict = {Outcome.LOSS: "falls further", Outcome.WIN: "falls less",
                       Outcome.EQUIVALENT: "falls no further", Outcome.UNDECIDED: "undecided"}[a.contrast.decision]
            mark = "" if fam.stands(a.contrast) or a.contrast.decision == Outcome.UNDECIDED else " †"
            parts.append(f"{name(a.impl)} {verdict}: {ratio_text(a.contrast, inner=True)}{mark} (per-thread "
                         f"throughput {fmt_num(a.leave.ratio)}× leaving, {fmt_num(a.stay.ratio)}× staying)")
        lines.append(f"**{fmt_size(size)}, working set {', '.join(leaving)} ({hi} x "
                     f"{fmt_size(c.used.get((leaving[0], size)))} against the {fmt_size(c.caches[llc])} {llc}):** "
                     + "; ".join(parts) + ".")
    text = (f"**The aggregate working set against the shared LLC.** {hi} connections cycle through {hi} working "
            f"sets, and the {llc} is shared, so the aggregate ({hi} x the working set) leaves it sooner than one "
            f"connection's does. Adding threads costs per-thread throughput anyway ({hi} connections share the "
            "pinned CPUs), so each line below compares per-thread throughput at "
            f"{hi} against {lo} threads where the aggregate leaves the {llc} only at {hi} threads, against the same "
            f"ratio where it stays inside at both (ratio of the two, 95% interval; family {AGGREGATE_FAMILY}, † "
            "where the decision does not survive the correction). A ratio below 1 is what leaving the LLC adds to "
            "the cost of sharing.\n\n" + "\n\n".join(lines)
            + "\n\nBy construction, not by counting: the aggregate's size is set, the LLC misses are "
            + ("counted beside it (Q2's tables)." if c.counted else
               "not counted here (no PMU); a PMU would show whether LLC misses per byte rise where the aggregate "
               "leaves the LLC."))
    return {"threads": [lo, hi], "llc_bytes": c.caches[llc], "per_size": per, "text": text}

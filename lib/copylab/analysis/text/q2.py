"""Q2. Which cache level shows the most reduction in misses and why?

Two answers, each where the sweep can give it:
- counted (a PMU): misses per byte against the baseline per cache level (findings.q2_finding); the why
  is the design's, stated as what the profile supports (the Study's removed_copy explanation) or else
  as a hypothesis with the measurement that would decide it;
- placed (a sweep across working sets, params/cache.yaml; the Study's cache-level comparisons,
  levels.py): per path and size, what each step of the source from one cache level to the next does
  to sender CPU per byte and throughput, which level's residency costs each path most, and how much
  of the two-copy path's extra copy appears only once its source leaves a level. By construction,
  not by counting: the text says so, and what a PMU adds. With a PMU both stand side by side.
A sweep of one working set (the default grid) says where the placed answer comes from."""

from __future__ import annotations

import pandas as pd

from ... import cachelevels
from ...fmt import fmt_num, fmt_pct, fmt_size, plural
from .. import findings as fnd
from ..decisions import Outcome
from ..explain_copies import CACHE_GRID
from ..levels import MISSES, SENDER_CPU, THROUGHPUT, CacheLevels
from ..roles import BASE, ONE_COPY, STUDY, name
from ..stats import measured, unmeasured_pointer
from ..study import Study
from .tables import per_impl_table
from .words import decision_cell, ratio_text, unanswerable

KEY = "q2_cache_level"
FAMILY = "q2"
METRIC_WORDS = {SENDER_CPU: "sender CPU per byte", THROUGHPUT: "throughput",
                MISSES["L1"]: "L1 misses per byte", MISSES["LLC"]: "LLC misses per byte"}


def answer(study: Study) -> dict:
    """The numbers with their text; "answer" is answers.json's q2_cache_level (the rest q2_cache_detail,
    with the placed answer under "placed" when the sweep varies the working set)."""
    numbers, outcome = fnd.q2_finding(study.part_e, study.meta)
    if outcome == "no_reduction":
        numbers["reason"] = q2_no_reduction_reason(numbers)
    if outcome == "unmeasured":  # the perf note is printed in full in the system configuration: its line here
        counted = unanswerable(fnd.unmeasured_levels_reason(study.part_e, study.meta, unmeasured_pointer),
                               HOW_TO_COUNT_CACHES)
    else:
        counted = q2_text(numbers, outcome, study.explanations.get("removed_copy"))
    if study.cache is None:
        found = study.explanations.get("copy_by_working_set")
        evidence = f"\n\n{found.text}" if found is not None else ""
        return {**numbers, "text": f"{counted}\n\n{_where_placed(study)}{evidence}"}
    placed = placed_answer(study)
    text = placed["text"] + ("\n\n**Counted by the PMU, beside it.** " + counted
                             if outcome not in ("unmeasured", "no_pairs") else "")
    return {**numbers, "placed": placed, "text": text}


def tables(study: Study) -> list[tuple[str, pd.DataFrame]]:
    found = []
    if study.cache is not None:
        found += [(f"{fmt_size(size)} messages, {plural(study.cache.threads[0], 'thread')}: each step of the "
                   "working set against the one before (ratio, 95% interval, decision)", _step_table(study, size))
                  for size in study.cache.sizes]
    metrics = ["l1_misses_per_byte", "llc_misses_per_byte"]
    if any(measured(study.part_e, m) for m in metrics):
        found.append(("", per_impl_table(study.part_e, metrics)))
    return found


def _where_placed(study: Study) -> str:
    """The default grid's Q2: where the answer by construction lives."""
    used = pd.to_numeric(study.part_e.get("working_set_bytes", pd.Series(dtype=float)), errors="coerce").dropna()
    # one setting, but the bytes cycled through grow with the message size (the ring memory bounds them)
    cycled = (f" (as cycled, {fmt_size(int(used.min()))} to {fmt_size(int(used.max()))} per connection, growing "
              "with the message size up to the setting: the ring's memory, its fields page-aligned, bounds how many "
              "small messages it holds)"
              if len(used) and used.min() != used.max() else "")
    return (f"This sweep cycles every sender through one working-set setting{cycled}, which places no size's "
            f"source in a chosen cache level, so it cannot say which level's residency "
            f"costs most. `copylab sweep {CACHE_GRID} --report` places each sender's working set at this host's "
            "own cache sizes (half of L1d, half of L2, half of the LLC, four times the LLC) and answers Q2 by "
            "construction, without a PMU.")


# ------------------------------------------------------------------------------------------------
# the placed answer (a sweep across working sets)


def _where(c: CacheLevels, key: str, size: int) -> str:
    """'L2/2: 512 KiB, in L2' (the bytes cycled at this size and the level they fit in)."""
    used, level = c.used.get((key, size)), c.residency.get((key, size))
    lives = "beyond the LLC" if level == cachelevels.BEYOND else (f"in {_level_words(c, level)}" if level
                                                                  else "level unknown")
    return f"{key} ({fmt_size(used)}, {lives})"


def _level_words(c: CacheLevels, level: str | None) -> str:
    """'L2'; the last level as 'the LLC (L3)'."""
    if level == cachelevels.last_level(c.caches):
        return f"the LLC ({level})"
    return level or "an unknown level"


def _crossed(c: CacheLevels, lower: str, upper: str, size: int) -> bool:
    return c.residency.get((lower, size)) != c.residency.get((upper, size))


def _step_name(c: CacheLevels, lower: str, upper: str, size: int) -> str:
    a, b = c.residency.get((lower, size)), c.residency.get((upper, size))
    if a == b:
        return f"{lower} → {upper} (both {('beyond the LLC' if a == cachelevels.BEYOND else f'in {a}')}: no level crossed)"
    return f"{lower} → {upper} (out of {_level_words(c, a)})"


def _step_table(study: Study, size: int) -> pd.DataFrame:
    c, fam = study.cache, study.family(FAMILY)
    metrics = [SENDER_CPU, THROUGHPUT, *c.counted]
    rows = []
    for lower, upper in zip(c.keys, c.keys[1:]):
        row = {"step": _step_name(c, lower, upper, size)}
        for impl in STUDY:
            for metric in metrics:
                found = [s for s in c.step(impl, size, metric) if (s.lower, s.upper) == (lower, upper)]
                cell = decision_cell(found[0].decision) if found else "n/a"
                row[f"{name(impl)} {METRIC_WORDS[metric]}"] = cell + ("" if not found or fam.stands(found[0].decision)
                                                                       or found[0].decision.decision == Outcome.UNDECIDED
                                                                       else " †")
        rows.append(row)
    return pd.DataFrame(rows)


def costliest(study: Study, impl: str, size: int, metric: str = SENDER_CPU):
    """The step that raises the metric most among those decided to raise it whose claim stands after
    the family's correction (None: no step is)."""
    fam = study.family(FAMILY)
    rising = [s for s in study.cache.step(impl, size, metric)
              if s.decision.decision == Outcome.WIN and fam.stands(s.decision)]
    return max(rising, key=lambda s: s.decision.ratio, default=None)


def _extra_copy_text(study: Study, size: int) -> tuple[str, dict]:
    c, fam = study.cache, study.family(FAMILY)
    found = c.extra_copy.get(size)
    if not found:
        return "", {}
    means = c.means[(c.means["msg_size"] == size) & (c.means["threads"] == c.threads[0])]
    mean = means.set_index(["impl", "working_set"])[SENDER_CPU]
    extra = {k: mean.get((BASE, k), float("nan")) - mean.get((ONE_COPY, k), float("nan")) for k in c.keys}
    last = next((k for k in reversed(c.keys) if extra.get(k) == extra.get(k)), None)
    per = "; ".join(f"{k} {ratio_text(d, inner=True)} {d.decision}"
                    + (" †" if d.decision != Outcome.UNDECIDED and not fam.stands(d) else "")
                    for k, d in found["per_key"].items())
    text = (f"{name(BASE)}'s sender CPU per byte over {name(ONE_COPY)}'s (what its extra copy costs): {per}.")
    detail = {"per_working_set": {k: {**d.to_dict(), "p_holm": fam.p_holm(d), "stands": fam.stands(d)}
                                  for k, d in found["per_key"].items()},
              "extra_ns_per_byte": extra, "steps": []}
    appears = []
    for s in found["steps"]:
        d = s.decision
        share = ((extra[s.upper] - extra[s.lower]) / extra[last]) if last and extra[last] > 0 else float("nan")
        detail["steps"].append({"from": s.lower, "to": s.upper, **d.to_dict(), "p_holm": fam.p_holm(d),
                                "stands": fam.stands(d), "share_of_extra_at_largest": share})
        if d.decision == Outcome.WIN and fam.stands(d) and _crossed(c, s.lower, s.upper, size):
            appears.append(f"{fmt_pct(100 * share)} of it (the extra {fmt_num(extra[last])} ns/B at {last}, "
                           f"means) appears only once the source leaves {_level_words(c, c.residency[(s.lower, size)])} "
                           f"({s.lower} → {s.upper}: the ratio grows {ratio_text(d, inner=True)})")
    costs_more = [k for k, d in found["per_key"].items() if d.decision == Outcome.WIN and fam.stands(d)]
    if not costs_more:
        some = any(d.decision == Outcome.WIN for d in found["per_key"].values())
        text += (f" {name(BASE)} is not decided to spend more sender CPU per byte than {name(ONE_COPY)} at any "
                 "working set here" + (f" once the correction over the family {FAMILY} is applied (the wins above "
                                       "do not survive it)" if some else "")
                 + ", so no share of its extra copy's cost can be placed at a level from this sweep.")
    elif appears:
        text += " Of that extra cost, " + "; ".join(appears) + "."
    else:
        text += (" No step of the working set is decided to raise that ratio after the correction (the steps are "
                 "undecided or equivalent), so this sweep cannot place any of the extra copy's cost at the moment "
                 "its source leaves a level.")
    return text, detail


def _against_expectation(study: Study, size: int) -> str:
    """Steps whose decided, standing claim is that a larger working set made a path cheaper or faster:
    moving the source further from the core cannot do that, so the host, not the caches, moved them."""
    c, fam = study.cache, study.family(FAMILY)
    odd = [s for s in c.steps if s.size == size and fam.stands(s.decision) and (
        (s.metric == THROUGHPUT and s.decision.decision == Outcome.WIN)
        or (s.metric == SENDER_CPU and s.decision.decision == Outcome.LOSS))]
    if not odd:
        return ""
    listed = "; ".join(f"{name(s.impl)} {METRIC_WORDS[s.metric]} {s.lower} → {s.upper} "
                       f"{ratio_text(s.decision, inner=True)}" for s in odd)
    return (f" Against expectation: {listed}. A working set further from the core cannot make sending cheaper or "
            "faster, so these steps say how much the host moved between the blocks (other programs' load, the "
            "passes' drift: \"How this run went\"), and the steps beside them are no firmer than these.")


def placed_answer(study: Study) -> dict:
    """Q2 by construction: per size, each path's costliest step and the extra copy's growth."""
    c, fam = study.cache, study.family(FAMILY)
    lo = c.threads[0]
    where = "; ".join(f"{fmt_size(size)}: " + ", ".join(_where(c, k, size) for k in c.keys) for size in c.sizes)
    intro = (f"**By construction, not by counting.** This sweep placed each sender's source data in a cache level "
             f"by the size of the working set it cycles through (this host's caches: "
             f"{', '.join(f'{lvl} {fmt_size(b)}' for lvl, b in c.caches.items()) or 'unknown'}). The working sets "
             f"as cycled, per message size (at least 4 messages each, so a large message may not fit the smallest "
             f"level): {where}. Each step below is one path at {plural(lo, 'thread')} against itself at the next "
             "smaller working set (the tables give every step; † marks a decision that does not survive the "
             f"correction over the family {FAMILY}).")
    lines, per_size = [], {}
    for size in c.sizes:
        parts, costly = [], {}
        for impl in STUDY:
            step = costliest(study, impl, size)
            tp = costliest(study, impl, size, THROUGHPUT)
            if step is None:
                parts.append(f"{name(impl)}: no step is decided to raise its sender CPU per byte (after the correction)")
                costly[impl] = None
                continue
            level = _level_words(c, c.residency.get((step.lower, size)))
            falls = [s for s in c.step(impl, size, THROUGHPUT) if (s.lower, s.upper) == (step.lower, step.upper)]
            tp_text = (f", throughput {ratio_text(falls[0].decision, inner=True)} {falls[0].decision.decision}"
                       if falls else "")
            numbers = (f"{step.lower} → {step.upper}: sender CPU per byte {ratio_text(step.decision, inner=True)}"
                       f"{tp_text}")
            if _crossed(c, step.lower, step.upper, size):
                parts.append(f"{name(impl)}: leaving {level} costs most ({numbers})")
            else:  # the largest rise is within one level: not a level's residency, and the text says so
                parts.append(f"{name(impl)}: the largest rise crosses no cache level ({numbers}; both working sets "
                             f"fit {level}), so it is not a level's residency: more pages, the TLB or the "
                             "prefetcher are candidates this sweep cannot tell apart")
            level = c.residency.get((step.lower, size)) if _crossed(c, step.lower, step.upper, size) else None
            costly[impl] = {"from": step.lower, "to": step.upper, "leaving": level, "crosses_a_level": level is not None, **step.decision.to_dict(),
                            "p_holm": fam.p_holm(step.decision), "stands": True,
                            "throughput_rise_step": None if tp is None else {"from": tp.lower, "to": tp.upper}}
        extra_text, extra = _extra_copy_text(study, size)
        lines.append(f"**{fmt_size(size)}.** " + "; ".join(parts) + "." + _against_expectation(study, size)
                     + " " + extra_text)
        per_size[str(size)] = {"costliest_step": costly, "extra_copy": extra,
                               "working_sets": {k: {"bytes": c.used.get((k, size)),
                                                    "resides": c.residency.get((k, size))} for k in c.keys}}
    text = intro + "\n\n" + "\n\n".join(lines) + "\n\n" + _caveats(study)
    return {"by_construction": True, "counted": list(c.counted), "threads": lo, "working_sets": c.keys,
            "levels": c.levels, "caches": c.caches, "per_size": per_size, "text": text}


def _caveats(study: Study) -> str:
    """What the placed answer cannot say, and what counting would add."""
    c = study.cache
    said = ("What placing cannot show: that the source did miss where it was placed. The sender's own socket "
            "buffers, the kernel's data structures and code share the same caches, so a working set of half a "
            "level is not the level's alone; with page-aligned fields (the zero-copy path) a large working set of "
            "small messages also spans many pages, so TLB misses grow with it and are part of each step's cost.")
    if c.counted:
        return said + (" This host's PMU counted L1 and LLC misses per byte on the same grid: the tables put them "
                       "beside each step, and the counted answer follows.")
    return said + (" No PMU here: this answers \"which level's residency costs most\" by construction, from the "
                   "working set's size against the cache sizes, not by counting misses. A PMU (bare metal, or a VM "
                   "with a virtual PMU) would count L1 and LLC misses per byte on this same grid, showing whether "
                   "the misses jump where each step crosses a level, and which path's misses grow most.")


WHY_CACHE_LEVEL = {
    "L1": ("the serialisation memcpy streams every message through the sender's small L1 data cache (tens "
           "of KiB per core); removing that copy removes a full pass of loads, and L1 sees those loads first, "
           "while the LLC holds the message either way."),
    "LLC": ("the messages and socket buffers exceed what the private caches hold, so the copies the other "
            "paths avoid were mostly LLC-missing streams to DRAM, while L1 misses come mostly from the "
            "kernel's own copy and protocol processing that every path performs."),
}
# the advice itself is the cache-miss figure's note (figures/style.py HOW_TO_MEASURE), printed before Q2
HOW_TO_COUNT_CACHES = ("How to count them: see the note in place of the cache-miss figure (\"Figures\").")


def q2_text(f: dict, outcome: str, removed=None) -> str:
    """Q2 from the misses per byte (answer() words the unmeasured outcome); the why is the design's, stated as what the profile supports
    (removed: explain_copies.removed_copy) or else as a hypothesis with the measurement to decide it."""
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



"""answers.json: each Part E question's numbers with its text, every explanation chosen by a rule
from the run's own evidence (explain.py, explain_copies.py) and kept beside the answers."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from .. import userfiles
from ..fmt import fmt_size, plural
from ..fsutil import atomic_write_json, jsonable
from . import findings as fnd
from . import prose
from .decided import comparison, decision_text
from .decisions import DEFAULT_MARGIN, decision_answer
from .explain import Explanation, bound_side
from .explain_copies import deferred_copy_site, removed_copy, zero_copy_cost
from .profiles import profile_finding
from .roles import BASE, ONE_COPY, ZERO_COPY, name
from .scaling import q3_answer
from .significance import significance_answer
from .stats import study_rows, throughput_rows
from .summary import summary_answer
from .surprise import q6_answer

QUESTIONS = {
    "q1": "Why does zero-copy not always give the best throughput?",
    "q2": "Which cache level shows the most reduction in misses and why?",
    "q3": "How does thread count interact with cache contention?",
    "q4": "At what message size does one-copy outperform two-copy on your system?",
    "q5": "At what message size does zero-copy outperform two-copy on your system?",
    "q6": "Identify one unexpected result and explain it using OS or hardware concepts.",
}


def _with_text(numbers: dict, text: str) -> dict:
    return {**numbers, "text": text}


def _unanswered(numbers: dict, reason: str, advice: str = "") -> dict:
    return {**numbers, "reason": reason, "text": prose.unanswerable(reason, advice)}


def equivalence_margin(meta: dict) -> float:
    """The grid's equivalence_margin (meta.json's params), else the default."""
    params = meta.get("params") if isinstance(meta.get("params"), dict) else {}
    value = params.get("equivalence_margin", DEFAULT_MARGIN)
    return float(value) if isinstance(value, (int, float)) and 0 < value <= 1 else DEFAULT_MARGIN


def explanations(df: pd.DataFrame, profiles: pd.DataFrame, results_dir) -> dict[str, Explanation]:
    """Every rule-chosen explanation the answers cite, by name (answers.json keeps them all)."""
    found = {"removed_copy": removed_copy(profiles), "zero_copy_cost": zero_copy_cost(df, profiles),
             "deferred_copy_site": deferred_copy_site(profiles, results_dir)}
    tp = throughput_rows(df)
    if len(tp):
        largest = int(tp["msg_size"].max())
        for impl in (ONE_COPY, ZERO_COPY):
            at = tp[(tp["impl"] == impl) & (tp["msg_size"] == largest)]
            threads = int(at["threads"].min()) if len(at) else 1
            found[f"bound_{impl}"] = bound_side(at[at["threads"] == threads],
                                                f"{name(impl)} at {fmt_size(largest)}, {plural(threads, 'thread')}")
    return found


def gain_sentence(impl: str, decision: str | None, bound: Explanation | None, df: pd.DataFrame) -> str:
    """What the side that bounds the largest size means for impl's decision there (a rule, see explain.py)."""
    if bound is None:
        return ""
    if bound.verdict == "receiver" and decision != "win":
        return f"{bound.text} So what {name(impl)} saves on the sending side cannot raise the rate."
    if bound.verdict == "sender" and decision == "win":
        return f"{bound.text} So a cheaper send shows as more throughput."
    if bound.verdict == "sender":
        return f"{bound.text} {fnd.sender_cost_sentence(df, impl)}"
    return bound.text


def crossover_answer(df: pd.DataFrame, impl: str, reps, margin: float, ev: dict) -> dict:
    finding = fnd.crossover_finding(df, impl)
    sig = significance_answer(df, impl, BASE)
    decided = decision_answer(df, impl, BASE, margin)
    public = {**{k: finding.public[k] for k in ("crossover_bytes", "per_threads")},
              "significant_crossover_bytes": sig["significant_crossover_bytes"],
              "significant_per_threads": sig["significant_per_threads"],
              **decided,
              **{k: v for k, v in finding.public.items() if k not in ("crossover_bytes", "per_threads")},
              "repetitions": sig["repetitions"], "ratio_ci_by_size": sig["ratio_ci_by_size"]}
    if not finding.answerable:
        return _unanswered(public, prose.no_pair_reason(finding))
    found = comparison(df, impl, margin)
    largest = found["by_size"][max(found["by_size"])].decision if found["by_size"] else None
    why = [ev["removed_copy"]] if impl == ONE_COPY else [ev["zero_copy_cost"], ev["deferred_copy_site"]]
    text = " ".join([decision_text(impl, found, margin), prose.reps_note(reps).strip()] + [e.text for e in why]
                    + [gain_sentence(impl, largest, ev.get(f"bound_{impl}"), df)])
    if impl == ZERO_COPY:
        zc = fnd.zero_copy_finding(df, decided.get("decided_crossover_bytes"))
        if zc.copied_share_pct == zc.copied_share_pct:  # not NaN: completions were recorded
            bound = ev.get(f"bound_{impl}")
            said = (bound is not None and bound.verdict == "sender" and largest != "win"
                    and zc.size == max(found["by_size"]))  # gain_sentence gave the sender's CPU per byte there
            text += " " + prose.zero_copy_evidence_text(zc, sender_cpu_said=said)
    keys = ("removed_copy",) if impl == ONE_COPY else ("zero_copy_cost", "deferred_copy_site")
    return _with_text({**public, "explanations": [ev[k].public() for k in keys if k in ev]}, text.strip())


def q1_answer(df: pd.DataFrame, q5: dict, ev: dict) -> dict:
    """Q1 states Q5's decided crossover, so it takes Q5's answer explicitly."""
    numbers, best = fnd.q1_finding(df, q5.get("decided_crossover_bytes"))
    if best is None:
        return _with_text(numbers, prose.unanswerable(numbers["reason"]))
    cited = [ev[k] for k in ("zero_copy_cost", "deferred_copy_site", f"bound_{ZERO_COPY}") if k in ev]
    text = prose.q1_text(numbers, best, q5.get("decision_detail_by_size", {})) + " " + " ".join(e.text for e in cited)
    return _with_text({**numbers, "explanations": [e.public() for e in cited]}, text)


def q2_answer(df: pd.DataFrame, meta: dict, ev: dict) -> dict:
    numbers, outcome = fnd.q2_finding(df, meta)
    if outcome == "no_reduction":
        numbers["reason"] = prose.q2_no_reduction_reason(numbers)
    return _with_text(numbers, prose.q2_text(numbers, outcome, ev.get("removed_copy")))


def answers(df: pd.DataFrame, meta: dict, profiles: pd.DataFrame | None = None) -> dict:
    """The answers.json document (docs/contracts.md, "Analysis contract"). Part E compares the study's
    roles only (two_copy, one_copy, zero_copy): the peers' and the extra paths' rows are left out
    here. profiles: the profiled runs (load_profiles), where the explanations find where the CPU goes."""
    rows_used, results_dir, everything = len(df), df.attrs.get("results_dir"), df
    df = study_rows(df)
    if df.empty:
        return jsonable(_nothing_measured(df, rows_used))
    reps = fnd.reps_range(df)
    if profiles is None:  # a results.csv of the second round carried the profile columns in its own rows
        profiles = df[df["srv_prof_samples"].notna()] if "srv_prof_samples" in df else df.iloc[0:0]
    profiles = study_rows(profiles)
    margin = equivalence_margin(meta)
    ev = explanations(df, profiles, results_dir)
    q4 = crossover_answer(df, ONE_COPY, reps, margin, ev)
    q5 = crossover_answer(df, ZERO_COPY, reps, margin, ev)
    q2 = q2_answer(df, meta, ev)
    doc = {
        "q1_zero_copy_not_always_best": q1_answer(df, q5, ev),
        "q2_cache_level": q2.pop("answer"),
        "q2_cache_detail": q2,
        "q3_threads_cache_contention": {**fnd.q3_finding(df, meta), **q3_answer(df, meta, margin)},
        "q4_one_copy_vs_two_copy": q4,
        "q5_zero_copy_vs_two_copy": q5,
        "q6_unexpected_result": q6_answer(df, profiles, meta, margin),
        "summary": summary_answer(everything, margin),
        "explanations": {k: e.public() for k, e in ev.items()},
        "profile_evidence": profile_finding(profiles),
        "rows_used": int(rows_used),
        "rows_failed": int(df.attrs.get("rows_failed", 0)),
    }
    return jsonable(doc)


def _nothing_measured(df: pd.DataFrame, rows_used: int) -> dict:
    """Every question unanswerable, saying why, when no row of the study's paths measured anything."""
    failed, empty = df.attrs.get("rows_failed", 0), df.attrs.get("rows_empty", 0)
    reason = (f"the sweep has no successful measurement of {', '.join(name(i) for i in (BASE, ONE_COPY, ZERO_COPY))} "
              f"({failed} point(s) failed, {empty} row(s) without a value; their errors are in results.csv)")
    answer = {"reason": reason, "text": prose.unanswerable(reason)}
    crossing = {"crossover_bytes": None, "per_threads": {}, "significant_crossover_bytes": None,
                "significant_per_threads": {}, **_no_decisions(), **answer}
    return {"q1_zero_copy_not_always_best": dict(answer), "q2_cache_level": None, "q2_cache_detail": dict(answer),
            "q3_threads_cache_contention": dict(answer), "q4_one_copy_vs_two_copy": dict(crossing),
            "q5_zero_copy_vs_two_copy": dict(crossing), "q6_unexpected_result": dict(answer), "summary": {},
            "explanations": {}, "profile_evidence": {"reason": reason},
            "rows_used": int(rows_used), "rows_failed": int(failed)}


def _no_decisions() -> dict:
    return {"equivalence_margin": DEFAULT_MARGIN, "decision_by_size": {}, "decision_per_threads": {},
            "decided_crossover_bytes": None, "decision_detail_by_size": {}}


def write_answers(doc: dict, output_dir) -> Path:
    """answers.json in output_dir, written atomically."""
    Path(output_dir).mkdir(parents=True, exist_ok=True)
    return atomic_write_json(Path(output_dir) / "answers.json", doc, indent=2)


def read_answers(path) -> dict:
    return userfiles.loads_json(Path(path).read_bytes())

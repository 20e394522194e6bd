"""answers.json: each Part E question's numbers (findings.py) with its text (prose.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from ..fsutil import atomic_write_json, jsonable
from . import findings as fnd
from . import evidence_prose, prose
from .profiles import profile_finding
from .decisions import DEFAULT_MARGIN, decision_answer
from .significance import comparisons, significance_answer
from .stats import measured, study_rows, throughput_rows

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


def crossover_answer(df: pd.DataFrame, impl: str, reps, margin: float = DEFAULT_MARGIN) -> dict:
    finding = fnd.crossover_finding(df, impl)
    sig = significance_answer(df, impl)
    decided = decision_answer(df, impl, "a1", margin)
    public = {**{k: finding.public[k] for k in ("crossover_bytes", "per_threads")},
              "significant_crossover_bytes": sig["significant_crossover_bytes"],
              "significant_per_threads": sig["significant_per_threads"],
              **decided,
              **{k: v for k, v in finding.public.items() if k not in ("crossover_bytes", "per_threads")},
              "repetitions": sig["repetitions"], "ratio_ci_by_size": sig["ratio_ci_by_size"]}
    if not finding.answerable:
        return _unanswered(public, prose.no_pair_reason(finding))
    text = prose.significance_text(impl, sig, comparisons(df, impl)["overall"]) + " " + prose.crossover_text(finding, reps)
    if impl == "a3":
        zc = fnd.zero_copy_finding(df, finding.public.get("crossover_bytes"))
        if zc.copied_share_pct == zc.copied_share_pct:  # not NaN: completions were recorded
            text += " " + prose.zero_copy_evidence_text(zc)
    return _with_text(public, text)


def _cited(answer: dict, sentences: dict, *keys: str) -> dict:
    """The answer with the profile's measured shares added to its text (when it has an answer)."""
    extra = [sentences[k] for k in keys if k in sentences]
    if extra and "reason" not in answer:
        answer = {**answer, "text": answer["text"] + " " + " ".join(extra)}
    return answer


def q1_answer(df: pd.DataFrame, q5: dict) -> dict:
    """Q1 states Q5's break-even, so it takes Q5's answer explicitly."""
    numbers, best = fnd.q1_finding(df, q5.get("crossover_bytes"))
    if best is None:
        return _with_text(numbers, prose.unanswerable(numbers["reason"]))
    return _with_text(numbers, prose.q1_text(numbers, best))


def q2_answer(df: pd.DataFrame, meta: dict) -> dict:
    numbers, outcome = fnd.q2_finding(df, meta)
    if outcome == "no_reduction":
        numbers["reason"] = prose.q2_no_reduction_reason(numbers)
    return _with_text(numbers, prose.q2_text(numbers, outcome))


def q3_answer(df: pd.DataFrame, meta: dict) -> dict:
    numbers = fnd.q3_finding(df, meta)
    if "reason" in numbers:
        return _with_text(numbers, prose.unanswerable(numbers["reason"]))
    cache = measured(throughput_rows(df), "l1_misses_per_byte")
    return _with_text(numbers, prose.q3_text(numbers, cache))


def q6_answer(df: pd.DataFrame, meta: dict, reps) -> dict:
    """The largest expectation violation that is significant: one that noise could explain does not count."""
    found = fnd.anomalies(df)
    significant = [a for a in found if a["significant"]]
    if not significant:
        return {"violations_found": 0, "apparent_violations": len(found),
                "reason": prose.q6_no_violation_reason(len(found), reps),
                "text": prose.q6_no_violation_text(len(found), reps)}
    top = significant[0]
    return {"kind": top["kind"], "details": top, "violations_found": len(significant),
            "apparent_violations": len(found), "text": prose.q6_text(top, len(significant), meta.get("cores"), reps)}


def answers(df: pd.DataFrame, meta: dict, profiles: pd.DataFrame | None = None) -> dict:
    """The answers.json document (docs/contracts.md, "Analysis contract"). Part E compares the
    study's implementations only: the peers' rows (iperf3, sockperf) are left out here. profiles:
    the profiled runs (load_profiles), where the answers find where the CPU goes."""
    rows_used = len(df)
    df = study_rows(df)
    if df.empty:
        return jsonable(_nothing_measured(df, rows_used))
    reps = fnd.reps_range(df)
    profile = profile_finding(study_rows(profiles) if profiles is not None else df)
    cite = evidence_prose.profile_sentences(profile) if "reason" not in profile else {}
    margin = equivalence_margin(meta)
    q4 = _cited(crossover_answer(df, "a2", reps, margin), cite, "a1_a2")
    q5 = _cited(crossover_answer(df, "a3", reps, margin), cite, "a3")
    q2 = q2_answer(df, meta)
    doc = {
        "q1_zero_copy_not_always_best": _cited(q1_answer(df, q5), cite, "a3", "bottleneck"),
        "q2_cache_level": q2.pop("answer"),
        "q2_cache_detail": q2,
        "q3_threads_cache_contention": q3_answer(df, meta),
        "q4_one_copy_vs_two_copy": q4,
        "q5_zero_copy_vs_two_copy": q5,
        "q6_unexpected_result": q6_answer(df, meta, reps),
        "profile_evidence": profile,
        "rows_used": int(rows_used),
        "rows_failed": int(df.attrs.get("rows_failed", 0)),
    }
    return jsonable(doc)


def _nothing_measured(df: pd.DataFrame, rows_used: int) -> dict:
    """Every question unanswerable, saying why, when no row of A1/A2/A3 measured anything."""
    failed, empty = df.attrs.get("rows_failed", 0), df.attrs.get("rows_empty", 0)
    reason = (f"the sweep has no successful measurement of A1, A2 or A3 ({failed} point(s) failed, "
              f"{empty} row(s) without a value; their errors are in results.csv)")
    answer = {"reason": reason, "text": prose.unanswerable(reason)}
    return {"q1_zero_copy_not_always_best": dict(answer), "q2_cache_level": None, "q2_cache_detail": dict(answer),
            "q3_threads_cache_contention": dict(answer),
            "q4_one_copy_vs_two_copy": {"crossover_bytes": None, "per_threads": {}, "significant_crossover_bytes": None,
                                        "significant_per_threads": {}, **_no_decisions(), **answer},
            "q5_zero_copy_vs_two_copy": {"crossover_bytes": None, "per_threads": {}, "significant_crossover_bytes": None,
                                         "significant_per_threads": {}, **_no_decisions(), **answer},
            "q6_unexpected_result": dict(answer), "profile_evidence": {"reason": reason},
            "rows_used": int(rows_used), "rows_failed": int(failed)}


def _no_decisions() -> dict:
    return {"equivalence_margin": DEFAULT_MARGIN, "decision_by_size": {}, "decision_per_threads": {},
            "decided_crossover_bytes": None, "decision_detail_by_size": {}}


def write_answers(doc: dict, output_dir) -> Path:
    """answers.json in output_dir, written atomically."""
    Path(output_dir).mkdir(parents=True, exist_ok=True)
    return atomic_write_json(Path(output_dir) / "answers.json", doc, indent=2)


def read_answers(path) -> dict:
    return json.loads(Path(path).read_text())

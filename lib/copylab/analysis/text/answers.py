"""answers.json: a serialisation of the Study with the texts (docs/contracts.md, "Analysis contract",
"Decisions", "Explanations and the other answers"). Every interval and decision in it is the
Study's; each question's text is made by its own module (q1.py ... q6.py, summary.py)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ...fsutil import atomic_write_json, jsonable
from ..decisions import ALPHA, CONFIDENCE
from ..profiles import profile_finding
from ..roles import BASE, ONE_COPY, ZERO_COPY, name
from ..study import Study, equivalence_margin, study
from . import q1, q2, q3, q4, q5, q6, summary
from .words import unanswerable

QUESTIONS = {
    "q1": "Why does zero-copy not always give the best throughput?",
    "q2": "Which cache level shows the most reduction in misses and why?",
    "q3": "How does thread count interact with cache contention?",
    "q4": "At what message size does one-copy outperform two-copy on your system?",
    "q5": "At what message size does zero-copy outperform two-copy on your system?",
    "q6": "Identify one unexpected result and explain it using OS or hardware concepts.",
}


def document(s: Study) -> dict:
    """The answers.json document of a Study. Part E compares the study's roles only (two_copy,
    one_copy, zero_copy); the summary and the families cover every path."""
    if s.part_e.empty:
        return jsonable(_nothing_measured(s))
    q2_answer = q2.answer(s)
    doc = {
        q1.KEY: q1.answer(s),
        "q2_cache_level": q2_answer.pop("answer"),
        "q2_cache_detail": q2_answer,
        q3.KEY: q3.answer(s),
        q4.KEY: q4.answer(s),
        q5.KEY: q5.answer(s),
        q6.KEY: q6.answer(s),
        "summary": summary.answer(s),
        "explanations": {k: e.public() for k, e in s.explanations.items()},
        "profile_evidence": profile_finding(s.profiles),
        "statistics": statistics(s),
        "rows_used": int(len(s.df)),
        "rows_failed": int(s.df.attrs.get("rows_failed", 0)),
    }
    return jsonable(doc)


def statistics(s: Study) -> dict:
    """The one standard every decision follows, and each family's correction."""
    return {"confidence": CONFIDENCE, "equivalence_margin": s.margin, "correction": "holm", "alpha": ALPHA,
            "families": {n: f.size for n, f in s.families.items()}}


def answers(df: pd.DataFrame, meta: dict, profiles: pd.DataFrame | None = None) -> dict:
    """answers.json of a sweep (the Study built here: a notebook builds it once and calls document())."""
    return document(study(df, meta, profiles))


def _nothing_measured(s: Study) -> dict:
    """Every question unanswerable, saying why, when no row of the study's paths measured anything."""
    df = s.df
    failed, empty = df.attrs.get("rows_failed", 0), df.attrs.get("rows_empty", 0)
    reason = (f"the sweep has no successful measurement of {', '.join(name(i) for i in (BASE, ONE_COPY, ZERO_COPY))} "
              f"({failed} point(s) failed, {empty} row(s) without a value; their errors are in results.csv)")
    answer = {"reason": reason, "text": unanswerable(reason)}
    crossing = {"crossover_bytes": None, "per_threads": {}, "equivalence_margin": equivalence_margin(s.meta),
                "decision_by_size": {}, "decision_per_threads": {}, "decided_crossover_bytes": None,
                "decision_detail_by_size": {}, "decision_detail_per_threads": {}, **answer}
    return {q1.KEY: dict(answer), "q2_cache_level": None, "q2_cache_detail": dict(answer), q3.KEY: dict(answer),
            q4.KEY: dict(crossing), q5.KEY: dict(crossing), q6.KEY: dict(answer), "summary": {},
            "explanations": {}, "profile_evidence": {"reason": reason}, "statistics": statistics(s),
            "rows_used": int(len(df)), "rows_failed": int(failed)}


def write_answers(doc: dict, output_dir) -> Path:
    """answers.json in output_dir, written atomically."""
    Path(output_dir).mkdir(parents=True, exist_ok=True)
    return atomic_write_json(Path(output_dir) / "answers.json", doc, indent=2)

"""answers.json: the Study's verdicts serialised (docs/contracts.md, "Analysis contract" and the rounds
after it), each Part E answer with its text as the report words it. Every interval, decision and
crossover in it is the Study's; nothing is decided here."""

from __future__ import annotations

import dataclasses
import enum
import math
from pathlib import Path

from ..fsutil import atomic_write_json, jsonable
from ..inference import ALPHA, CONFIDENCE, Decision
from .questions import CrossoverVerdict, Row
from .sections import answer_text

QUESTIONS = {
    "q1": "Why does zero-copy not always give the best throughput?",
    "q2": "Which cache level shows the most reduction in misses and why?",
    "q3": "How does thread count interact with cache contention?",
    "q4": "At what message size does one-copy outperform two-copy on your system?",
    "q5": "At what message size does zero-copy outperform two-copy on your system?",
    "q6": "Identify one unexpected result and explain it using OS or hardware concepts.",
}
KEYS = {"q1": "q1_zero_copy_not_always_best", "q2": "q2_cache_detail", "q3": "q3_threads_cache_contention",
        "q4": "q4_one_copy_vs_two_copy", "q5": "q5_zero_copy_vs_two_copy", "q6": "q6_unexpected_result"}
CROSSOVER_RULE = ("the smallest size from which the path is decided faster than the baseline by more than the "
                  "equivalence margin (its 95% interval wholly above 1 + margin), at that size and every larger one, "
                  "standing after Holm's correction over the question's family")


def plain(value):
    """A verdict's value as JSON-ready data: dataclasses as dicts, enums as their values, tuples as lists."""
    if isinstance(value, Decision):
        return value.to_dict()
    if isinstance(value, Row):
        return {**value.decision.to_dict(), "standing": str(value.standing), "p_holm": value.p_holm,
                "stands": value.stands}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, dict):
        return {(k if isinstance(k, (str, int, float)) else "/".join(map(str, k))): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def crossover_answer(v: CrossoverVerdict, margin: float) -> dict:
    """A crossover question's keys: the one crossover, and every decision with its standing."""
    return {
        "crossover_bytes": v.crossover, "per_threads": {str(t): c for t, c in v.per_threads_crossover.items()},
        "crossover_rule": CROSSOVER_RULE, "crossover_decided_faster_bytes": v.crossover_higher,
        "equivalence_margin": margin, "family": v.family,
        "decision_by_size": {str(s): str(r.decision.decision) for s, r in v.by_size.items()},
        "decision_per_threads": {str(t): {str(s): str(r.decision.decision) for s, r in by.items()}
                                 for t, by in v.per_threads.items()},
        "decision_detail_by_size": {str(s): plain(r) for s, r in v.by_size.items()},
        "decision_detail_per_threads": {str(t): {str(s): plain(r) for s, r in by.items()}
                                        for t, by in v.per_threads.items()},
        "repeat_range_by_size": {str(s): list(r) for s, r in v.repeat.items()},
        "repetitions": int(min((r.decision.n_x for r in v.by_size.values()), default=0)),
    }


def cost_model_answer(s) -> dict | None:
    m = s.model
    if m is None:
        return None
    sides = {"srv": "sender", "cli": "receiver"}
    paths = {impl: {**{name: {"per_message": c.per_message[side].to_dict(), "per_byte": c.per_byte[side].to_dict(),
                              "worst_residual": c.worst_residual[side]} for side, name in sides.items()},
                    "ceiling_gbps": c.ceiling_gbps, "largest_gbps": c.largest_gbps, "costlier_side": sides[c.costlier]}
             for impl, c in m.paths.items()}
    predicted = {impl: {"predicted": g.crossover.to_dict(), "added_per_message": g.per_message.to_dict(),
                        "per_byte_difference": g.per_byte.to_dict(), "sizes_fitted": g.sizes,
                        "measured": s.crossover(impl)} for impl, g in m.gaps.items()}
    return {"sizes_fitted": m.sizes, "paths": paths, "predicted_crossover": predicted,
            "extra_copy_per_byte": m.extra_per_byte.to_dict() if m.extra_per_byte else None,
            "extra_copy_in_memcpys": m.extra_in_memcpys, "memcpy": m.memcpy}


def document(s) -> dict:
    """The answers.json document of a Study."""
    v = s.verdicts
    doc = {KEYS["q4"]: crossover_answer(v["q4"], s.margin), KEYS["q5"]: crossover_answer(v["q5"], s.margin)}
    q1 = plain(v["q1"])
    doc[KEYS["q1"]] = {**q1, "break_even_bytes": v["q5"].crossover}
    doc["q2_cache_level"] = public_level(v["q2"].level)
    doc[KEYS["q2"]] = plain(v["q2"])
    doc[KEYS["q3"]] = plain(v["q3"])
    doc[KEYS["q6"]] = plain(v["q6"])
    for q, key in KEYS.items():
        doc[key]["text"] = answer_text(s, q)
    doc["summary"] = plain(v["summary"])
    doc["cost_model"] = cost_model_answer(s)
    doc["statistics"] = {"confidence": CONFIDENCE, "equivalence_margin": s.margin, "correction": "holm",
                         "alpha": ALPHA, "families": {n: f.size for n, f in s.families.items()}}
    doc["rows_used"], doc["rows_failed"] = int(len(s.df)), int(s.df.attrs.get("rows_failed", 0))
    return jsonable(doc)


def public_level(level: str | None) -> str | None:
    """A cache level as answers.json names it: L1 for L1d, LLC for the last level."""
    return {"L1d": "L1", "L3": "LLC", "L4": "LLC"}.get(level, level) if level else None


def write_answers(doc: dict, output_dir) -> Path:
    Path(output_dir).mkdir(parents=True, exist_ok=True)
    return atomic_write_json(Path(output_dir) / "answers.json", doc, indent=2)


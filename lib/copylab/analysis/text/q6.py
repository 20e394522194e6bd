"""Q6. Identify one unexpected result and explain it using OS or hardware concepts.

The most robust unexpected result among the Study's Q6 tests (patterns.py: the one-copy cells are
Q4's own comparisons), said with the correction it survived (the Study's family "q6") and explained
by the rule the Study chose from this run's evidence (explain_surprise.py)."""

from __future__ import annotations

import pandas as pd

from ...fmt import fmt_num, fmt_size, plural
from ..decisions import ALPHA
from ..explain_copies import gather_referred, says_gather
from ..patterns import Test
from ..roles import BASE, ONE_COPY, name
from ..study import Study
from . import q4
from .words import ratio_text

KEY, FAMILY = "q6_unexpected_result", "q6"

EXPECTATIONS = {
    "one_copy_slower": "the one-copy path, which copies less, is not slower than the two-copy baseline",
    "falls_with_size": "throughput does not fall as messages grow (fewer calls per byte)",
    "fewer_with_threads": "more client threads do not lower total throughput",
}


RATIO_OF = {"one_copy_slower": f"{name(BASE)}'s", "falls_with_size": "the smaller size's",
            "fewer_with_threads": "the fewer threads'"}


def describe(t: Test) -> str:
    """What a test compares, in words: 'A2 slower than A1 at sizes up to 1 KiB'."""
    w = t.where
    if t.kind == "one_copy_slower":
        if "sizes" in w:
            # up to the smallest size (from the largest on) is that one size: "at sizes up to 64 B" named a range
            one = len({c.where["size"] for c in t.cells}) == 1
            span = (f"at {fmt_size(w['size'])}" if one else f"at sizes up to {fmt_size(w['size'])}"
                    if w["sizes"] == "up_to" else f"from {fmt_size(w['size'])} on")
            return f"{name(ONE_COPY)} slower than {name(BASE)} {span}, over every thread count"
        return f"{name(ONE_COPY)} slower than {name(BASE)} at {fmt_size(w['size'])}, {plural(w['threads'], 'thread')}"
    if t.kind == "falls_with_size":
        where = f"at {plural(w['threads'], 'thread')}" if "threads" in w else "at every thread count"
        return f"{name(w['impl'])} slower at {fmt_size(w['to_size'])} than at {fmt_size(w['from_size'])} {where}"
    where = f"at {fmt_size(w['size'])}" if "size" in w else "at every size"
    return (f"{name(w['impl'])} slower with {w['to_threads']} threads than with {w['from_threads']} {where}")


def _correction(cells: list[Test], regions: list[Test]) -> str:
    m = sum(1 for t in cells + regions if t.p == t.p)
    return (f"Holm's correction over the {m} tests made ({len(EXPECTATIONS)} expectations, each checked in every "
            f"(size, threads) cell where it applies: {len(cells)} tests, and {len(regions)} tests of a pattern across "
            f"cells), family-wise error {ALPHA:.0%}")


def answer(study: Study) -> dict:
    """answers.json's q6: the surprise, its tests and the correction, and the explanation."""
    cells, regions = study.q6_cells, study.q6_regions
    if not any(t.p == t.p for t in cells):
        reason = ("no expectation can be tested: a single pass per point gives no interval"
                  if cells else "no pair of points to compare in throughput mode")
        return {"violations_found": 0, "tests_made": 0, "reason": reason,
                "text": f"Cannot be answered from this sweep: {reason}."}
    best, standing = study.q6_surprise
    common = {"tests_made": study.family(FAMILY).size, "correction": "holm",
              "violations_found": sum(1 for t in cells if t.significant and t.violates),
              "apparent_violations": sum(1 for t in cells if t.violates)}
    if best is None:
        top = min(cells, key=lambda c: c.decision.ratio)
        text = (f"No result contradicts the expectations checked ({'; '.join(EXPECTATIONS.values())}) beyond "
                f"chance: {common['apparent_violations']} cells fall short, none significantly after "
                f"{_correction(cells, regions)}. The largest shortfall, {describe(top)} "
                f"({ratio_text(top.decision, True)}, adjusted p = {fmt_num(top.p_holm)}), is what noise gives.")
        return {**common, "kind": None, "standing": "none", "text": text}
    why = study.q6_explanation
    # the gather mechanism Q4 has said in full is referred back to here (answers.json's explanation stays whole)
    said = why.text
    if any(says_gather(e) for e in q4.explained_losses(study)):
        said = gather_referred(said, why, "in Q4")
    return {**common, "kind": best.kind, "standing": standing, "details": best.public(),
            "explanation": why.public(), "text": surprise_text(best, standing, cells, regions) + " " + said}


def tables(study: Study) -> list[tuple[str, pd.DataFrame]]:
    found = surprise_table(answer(study))
    return [("", found)] if len(found) else []


def surprise_text(t: Test, standing: str, cells: list[Test], regions: list[Test]) -> str:
    correction = _correction(cells, regions)
    if standing == "pattern":
        ratios = [c.decision.ratio for c in t.cells]
        alone = sum(c.significant for c in t.cells)
        # the pattern is decided pooled; a cell is decided only by its own test (its row in the table)
        return (f"**The most robust surprise: {describe(t)}, pooled over its {len(t.cells)} cells: "
                f"{ratio_text(t.decision)}, adjusted p = {fmt_num(t.p_holm)}.** Expected: {EXPECTATIONS[t.kind]}. "
                f"Every cell's mean falls short ({fmt_num(min(ratios))}–{fmt_num(max(ratios))}× "
                f"{RATIO_OF[t.kind]}), " + (
                    f"and every one is significant on its own ({correction})." if alone == len(t.cells) else
                    (f"but none of the {len(t.cells)} cells is significant on its own" if alone == 0 else
                     f"but only {alone} of the {len(t.cells)} cells {'is' if alone == 1 else 'are'} significant on "
                     f"{'its' if alone == 1 else 'their'} own") + ": the shortfall is "
                    f"decided over the cells together, not in each ({correction})."))
    return (f"**The most significant surprise is one cell: {describe(t)}** ({ratio_text(t.decision, True)}, adjusted "
            f"p = {fmt_num(t.p_holm)}; {correction}). No pattern across cells holds: every wider region has a "
            f"cell that does not fall short, or does not survive the correction. Expected: {EXPECTATIONS[t.kind]}.")


def surprise_table(answer: dict) -> pd.DataFrame:
    """The cells behind Q6's surprise: each ratio, interval and adjusted p."""
    details = answer.get("details") or {}
    cells = details.get("cells") or ([details] if details else [])
    rows = [{"cell": _cell_words(c),
             "ratio": c["ratio"], "95% interval": f"{fmt_num(c['low'])}–{fmt_num(c['high'])}",
             "adjusted p (Holm)": fmt_num(c["p_holm"]), "significant": "yes" if c["significant"] else "no"}
            for c in cells]
    return pd.DataFrame(rows, columns=["cell", "ratio", "95% interval", "adjusted p (Holm)", "significant"])


def _cell_words(c: dict) -> str:
    """'A2, 64 B, 2 thr' or 'A1, 64 B to 1 KiB, 2 thr' for one cell of a table."""
    parts = [name(c["impl"])]
    if "from_size" in c:
        parts.append(f"{fmt_size(c['from_size'])} to {fmt_size(c['to_size'])}")
    elif "size" in c:
        parts.append(fmt_size(c["size"]))
    if "from_threads" in c:
        parts.append(f"{c['from_threads']} to {c['to_threads']} thr")
    elif "threads" in c:
        parts.append(f"{c['threads']} thr")
    return ", ".join(parts)

"""Q4 and Q5 from the decisions (decisions.py): one answer with its interval, the per-size and
per-thread-count detail as tables, and how many more passes an undecided comparison likely needs."""

from __future__ import annotations

import pandas as pd

from ..fmt import fmt_num, fmt_size
from .decisions import Decision, decide, decided_crossover
from .roles import BASE, name



def ratio_text(d: Decision, inner: bool = False) -> str:
    """'1.12× (95% interval 1.03–1.22)' (inner: '1.12×, 95% interval 1.03–1.22', for inside brackets),
    without the interval where it is undefined."""
    text = f"{fmt_num(d.ratio)}×"
    if d.low == d.low and d.high == d.high:
        interval = f"95% interval {fmt_num(d.low)}–{fmt_num(d.high)}"
        text += f", {interval}" if inner else f" ({interval})"
    return text


def more_passes(d: Decision) -> str:
    """What an undecided comparison needs: 'about 4 more passes would likely decide it'."""
    if d.decision != "undecided":
        return ""
    if min(d.n_x, d.n_base) < 2:
        return "a second pass would give it an interval"
    if d.passes_needed is None:
        return "more than 100 more passes: at this spread the sweep cannot decide it"
    return f"about {d.passes_needed} more pass{'es' if d.passes_needed != 1 else ''} would likely decide it"


def _size_list(by_size: dict[int, Decision]) -> str:
    return "; ".join(f"{fmt_size(s)}: {d.decision}, {ratio_text(d)}" for s, d in sorted(by_size.items()))


def decision_text(impl: str, found: dict, margin: float) -> str:
    """The one answer of Q4/Q5: the decided crossover over all thread counts, or why there is none."""
    by_size = found["by_size"]
    x, b = name(impl), name(BASE)
    if not by_size:
        return f"No size where both {x} and {b} were measured in throughput mode."
    sizes = sorted(by_size)
    largest = by_size[sizes[-1]]
    start = decided_crossover(by_size)
    how = (f"Each decision compares {x} with {b} over all thread counts: the 95% interval of the throughput "
           f"ratio {x}/{b} over the passes (log scale, each pass's shift removed, each point its own spread), "
           f"'equivalent' when it lies within {fmt_num(1 / (1 + margin))}–{fmt_num(1 + margin)}.")
    if start is not None:
        text = (f"**{x} outperforms {b} from {fmt_size(start)} upward**: a decided win at {fmt_size(start)} "
                f"({ratio_text(by_size[start], True)})")
        # the largest size measured: "every larger size" would claim sizes the grid does not have
        text += (" and at every larger size of this grid (at " f"{fmt_size(sizes[-1])}: {ratio_text(largest, True)})."
                 if start != sizes[-1] else ", the largest size of this grid.")
    else:
        wins = [s for s in sizes if by_size[s].decision == "win"]
        text = f"**There is no size in this grid from which {x} is decided to outperform {b}.**"
        if wins:
            text += (f" It wins at {', '.join(fmt_size(s) for s in wins)}, but not at every larger size, so that "
                     "is no crossover.")
        text += f" At {fmt_size(sizes[-1])} the decision is {largest.decision} ({ratio_text(largest, True)})"
        text += f"; {more_passes(largest)}." if largest.decision == "undecided" else "."
    return f"{text} By size: {_size_list(by_size)}. {how}"


def decision_table(found: dict) -> pd.DataFrame:
    """Per size over all thread counts: ratio, interval, passes, decision, and what an undecided one needs."""
    rows = []
    for size, d in sorted(found["by_size"].items()):
        rows.append({"message size": fmt_size(size), "ratio": d.ratio,
                     "95% interval": f"{fmt_num(d.low)}–{fmt_num(d.high)}" if d.low == d.low else "n/a",
                     "passes": f"{d.n_x} / {d.n_base}", "decision": d.decision,
                     "to decide": more_passes(d) or "decided"})
    return pd.DataFrame(rows, columns=["message size", "ratio", "95% interval", "passes", "decision", "to decide"])


def per_threads_table(found: dict) -> pd.DataFrame:
    """Rows: sizes; columns: thread counts; cells: 'win 1.12 (1.03–1.22)'."""
    per = found["per_threads"]
    sizes = sorted({s for by in per.values() for s in by})
    out = {"message size": [fmt_size(s) for s in sizes]}
    for threads in sorted(per):
        cells = []
        for s in sizes:
            d = per[threads].get(s)
            cells.append("n/a" if d is None else f"{d.decision} {fmt_num(d.ratio)}"
                         + (f" ({fmt_num(d.low)}–{fmt_num(d.high)})" if d.low == d.low else ""))
        out[f"{threads} thr"] = cells
    return pd.DataFrame(out)


def comparison(df: pd.DataFrame, impl: str, margin: float) -> dict:
    """The decisions of impl against the baseline (decisions.decide), throughput mode."""
    return decide(df, impl, BASE, margin)

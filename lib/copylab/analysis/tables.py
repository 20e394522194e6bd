"""Evidence tables the report shows next to the answers (mean over repetitions, then over thread
counts, throughput mode), and the list of what a sweep could not answer."""

from __future__ import annotations

import pandas as pd

from ..fmt import fmt_pct, fmt_size, impl_name, md_escape
from . import findings as fnd
from . import prose
from .load import METRICS
from .stats import aggregate, over_threads, paired_means, throughput_rows


def throughput_by_size(df: pd.DataFrame) -> pd.DataFrame:
    """Rows: message sizes; columns: each implementation's Gbit/s averaged over thread counts."""
    agg = aggregate(throughput_rows(df), "throughput_gbps")
    table = agg.groupby(["msg_size", "impl"])["throughput_gbps"].mean().unstack("impl")
    out = pd.DataFrame({"message size": [fmt_size(s) for s in table.index]})
    for impl in table.columns:
        out[f"{impl_name(impl)} (Gbit/s)"] = table[impl].to_numpy()
    if len(table.columns):
        out["fastest"] = [impl_name(i) for i in table.idxmax(axis=1)]
    return out


def crossover_table(df: pd.DataFrame, impl: str, base: str = "a1") -> pd.DataFrame:
    """The numbers behind the crossover: per size, both means (over thread counts) and the ratio."""
    overall = over_threads(paired_means(df, impl, base))
    return pd.DataFrame({
        "message size": [fmt_size(s) for s in overall.index],
        f"{impl_name(base)} (Gbit/s)": overall["base"].to_numpy(),
        f"{impl_name(impl)} (Gbit/s)": overall["x"].to_numpy(),
        f"{impl_name(impl)} / {impl_name(base)}": (overall["x"] / overall["base"]).to_numpy(),
        "beats": ["yes" if x > b else "no" for x, b in zip(overall["x"], overall["base"])],
    })


def per_impl_table(df: pd.DataFrame, metrics, by: str = "impl") -> pd.DataFrame:
    """Mean of each metric per implementation (or per `by`, e.g. threads), throughput mode,
    averaged over the other grid dimensions; labels with units as column names."""
    agg = aggregate(throughput_rows(df), metrics)
    keys = [by] if by == "impl" else [by, "impl"]
    table = agg.groupby(keys)[list(metrics)].mean().reset_index()
    table["impl"] = table["impl"].map(impl_name)
    return table.rename(columns={m: METRICS[m][0] for m in metrics} | {"threads": "threads",
                                                                          "impl": "implementation"})


def copy_evidence_text(df: pd.DataFrame) -> str:
    """What the counters say about the copy A2 removes: user-space copy bytes and sender cost."""
    return prose.copy_evidence_text(fnd.copy_evidence(df))


def unanswered_markdown(doc: dict) -> str:
    """A list of what the answers could not state, with the reasons, or a line saying none."""
    items = [f"- **{prose.q_label(key)}**: {md_escape(val['reason'])}."
             for key, val in doc.items() if isinstance(val, dict) and val.get("reason")]
    return "\n".join(items) if items else "Every question could be answered from this sweep's data."


def violations_table(df: pd.DataFrame, top: int = 6) -> pd.DataFrame:
    """The largest expectation violations Q6 chooses from (evidence for its answer)."""
    rows = []
    for a in fnd.anomalies(df)[:top]:
        where, expected, got = prose.violation_row(a)
        rows.append({"where": where, "expected": expected, "measured": got,
                     "shortfall": fmt_pct(100 * a["magnitude"])})
    return pd.DataFrame(rows, columns=["where", "expected", "measured", "shortfall"])

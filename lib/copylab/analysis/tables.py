"""Evidence tables the report shows next to the answers (mean over repetitions, then over thread
counts, throughput mode), and the list of what a sweep could not answer."""

from __future__ import annotations

import pandas as pd

from ..fmt import fmt_num, fmt_pct, fmt_size, impl_name, md_escape
from . import findings as fnd
from . import prose
from .load import METRICS
from .peers import harness_ratios
from .significance import comparisons
from .stats import aggregate, over_threads, paired_means, study_rows, throughput_rows


def throughput_by_size(df: pd.DataFrame) -> pd.DataFrame:
    """Rows: message sizes; columns: each implementation's Gbit/s averaged over thread counts."""
    agg = aggregate(throughput_rows(study_rows(df)), "throughput_gbps")
    table = agg.groupby(["msg_size", "impl"])["throughput_gbps"].mean().unstack("impl")
    out = pd.DataFrame({"message size": [fmt_size(s) for s in table.index]})
    for impl in table.columns:
        out[f"{impl_name(impl)} (Gbit/s)"] = table[impl].to_numpy()
    if len(table.columns):
        out["fastest"] = [impl_name(i) for i in table.idxmax(axis=1)]
    return out


def crossover_table(df: pd.DataFrame, impl: str, base: str = "a1") -> pd.DataFrame:
    """The numbers behind the crossover: per size, both means (over thread counts), the ratio with
    its 95% interval over repetitions, and whether the win is significant."""
    study = study_rows(df)
    overall = over_threads(paired_means(study, impl, base))
    found = comparisons(study, impl, base)["overall"]
    ci = [found.get(int(s)) for s in overall.index]
    return pd.DataFrame({
        "message size": [fmt_size(s) for s in overall.index],
        f"{impl_name(base)} (Gbit/s)": overall["base"].to_numpy(),
        f"{impl_name(impl)} (Gbit/s)": overall["x"].to_numpy(),
        f"{impl_name(impl)} / {impl_name(base)}": (overall["x"] / overall["base"]).to_numpy(),
        "95% CI of the ratio": [_interval(c) for c in ci],
        "beats (means)": ["yes" if x > b else "no" for x, b in zip(overall["x"], overall["base"])],
        "significant win": ["yes" if c is not None and c.significant_win else
                            ("n/a (1 rep)" if c is None or min(c.n_x, c.n_base) < 2 else "no") for c in ci],
    })


def _interval(c) -> str:
    if c is None or c.ratio_low != c.ratio_low:
        return "n/a"
    return f"{fmt_num(c.ratio_low)}–{fmt_num(c.ratio_high)}"


def harness_table(df: pd.DataFrame) -> pd.DataFrame:
    """copylab's programs over the peers per size, at the fewest threads both were measured at."""
    ratios = harness_ratios(df)
    if ratios.empty:
        return pd.DataFrame()
    out = []
    for (peer, metric), g in ratios.groupby(["peer", "metric"]):
        g = g[g["threads"] == g["threads"].min()]
        for size, rows in g.groupby("msg_size"):
            entry = {"reference": f"{peer} ({metric})", "threads": int(rows["threads"].iloc[0]),
                     "message size": fmt_size(size), f"{peer}": rows["peer_value"].iloc[0]}
            entry.update({f"{impl_name(r['impl'])} / {peer}": r["ratio"] for _, r in rows.iterrows()})
            out.append(entry)
    return pd.DataFrame(out)


def unstable_points(df: pd.DataFrame) -> pd.DataFrame:
    """Points whose repetitions vary by more than 10% (coefficient of variation)."""
    flagged = df[df["unstable"].astype(str) == "True"]
    if flagged.empty:
        return pd.DataFrame()
    keys = ["impl", "mode", "msg_size", "threads", "receive"]
    table = flagged.groupby(keys, dropna=False).agg(repetitions=("rep", "nunique"), cv=("rep_cv", "first")).reset_index()
    table["msg_size"] = table["msg_size"].map(fmt_size)
    table["cv"] = (100 * table["cv"]).map(lambda v: f"{v:.0f}%")
    return table.rename(columns={"impl": "implementation", "msg_size": "message size", "cv": "variation (CV)"})


def per_impl_table(df: pd.DataFrame, metrics, by: str = "impl") -> pd.DataFrame:
    """Mean of each metric per implementation (or per `by`, e.g. threads), throughput mode,
    averaged over the other grid dimensions; labels with units as column names."""
    agg = aggregate(throughput_rows(study_rows(df)), metrics)
    keys = [by] if by == "impl" else [by, "impl"]
    table = agg.groupby(keys)[list(metrics)].mean().reset_index()
    table["impl"] = table["impl"].map(impl_name)
    return table.rename(columns={m: METRICS[m][0] for m in metrics} | {"threads": "threads",
                                                                          "impl": "implementation"})


def copy_evidence_text(df: pd.DataFrame) -> str:
    """What the counters say about the copy A2 removes: user-space copy bytes and sender cost."""
    return prose.copy_evidence_text(fnd.copy_evidence(study_rows(df)))


def unanswered_markdown(doc: dict) -> str:
    """A list of what the answers could not state, with the reasons, or a line saying none."""
    items = [f"- **{prose.q_label(key)}**: {md_escape(val['reason'])}."
             for key, val in doc.items() if isinstance(val, dict) and val.get("reason")]
    return "\n".join(items) if items else "Every question could be answered from this sweep's data."


def violations_table(df: pd.DataFrame, top: int = 6) -> pd.DataFrame:
    """The largest expectation violations Q6 chooses from (evidence for its answer)."""
    rows = []
    for a in fnd.anomalies(study_rows(df))[:top]:
        where, expected, got = prose.violation_row(a)
        rows.append({"where": where, "expected": expected, "measured": got,
                     "shortfall": fmt_pct(100 * a["magnitude"]),
                     "significant": "yes" if a["significant"] else (
                         "n/a (1 rep)" if a["repetitions"] < 2 else "no")})
    return pd.DataFrame(rows, columns=["where", "expected", "measured", "shortfall", "significant"])

"""Evidence tables the report shows next to the answers (mean over repetitions, then over thread
counts, throughput mode), and the list of what a sweep could not answer."""

from __future__ import annotations

import pandas as pd

from ...fmt import fmt_size, md_escape
from ..roles import name
from .words import q_label
from ..load import METRICS
from ..run_facts import STEAL_HEAVY
from ..stats import aggregate, study_rows, throughput_rows


def throughput_by_size(df: pd.DataFrame) -> pd.DataFrame:
    """Rows: message sizes; columns: each implementation's Gbit/s averaged over thread counts."""
    agg = aggregate(throughput_rows(study_rows(df)), "throughput_gbps")
    table = agg.groupby(["msg_size", "impl"])["throughput_gbps"].mean().unstack("impl")
    out = pd.DataFrame({"message size": [fmt_size(s) for s in table.index]})
    for impl in table.columns:
        out[f"{name(impl)} (Gbit/s)"] = table[impl].to_numpy()
    if len(table.columns):
        out["fastest"] = [name(i) for i in table.idxmax(axis=1)]
    return out


def unstable_points(df: pd.DataFrame) -> pd.DataFrame:
    """A compact summary by implementation, mode and size of the points whose repetitions vary by more
    than 10% (coefficient of variation) and of the runs whose intervals were bimodal; only the groups
    with either. The full list is results.csv (columns unstable, rep_cv, bimodal, level_low, level_high)."""
    if df.empty:
        return pd.DataFrame()
    rows = df.assign(_unstable=df["unstable"].astype(str) == "True", _bimodal=df["bimodal"].astype(str) == "True",
                     _steal=steal_heavy(df))
    points = rows.groupby(["impl", "mode", "msg_size", "threads", "receive"], dropna=False).agg(
        unstable=("_unstable", "any"), cv=("rep_cv", "max"), runs=("rep", "size"), bimodal=("_bimodal", "sum"),
        steal=("_steal", "sum"))
    table = points.reset_index().groupby(["impl", "mode", "msg_size"]).agg(
        points=("unstable", "size"), unstable=("unstable", "sum"), cv=("cv", "max"), runs=("runs", "sum"),
        bimodal=("bimodal", "sum"), steal=("steal", "sum")).reset_index()
    table = table[(table["unstable"] > 0) | (table["bimodal"] > 0) | (table["steal"] > 0)]
    if table.empty:
        return pd.DataFrame()
    return pd.DataFrame({
        "implementation": table["impl"].map(name), "mode": table["mode"], "message size": table["msg_size"].map(fmt_size),
        "unstable points": [f"{int(u)} of {int(p)}" for u, p in zip(table["unstable"], table["points"])],
        "largest CV": [f"{100 * v:.0f}%" if v == v else "n/a" for v in table["cv"]],
        "bimodal runs": [f"{int(b)} of {int(r)}" for b, r in zip(table["bimodal"], table["runs"])],
        f"runs with steal over {100 * STEAL_HEAVY:.0f}%": [f"{int(n)} of {int(r)}" for n, r in zip(table["steal"], table["runs"])]})


def steal_heavy(df: pd.DataFrame) -> pd.Series:
    """Runs in which the hypervisor took more than STEAL_HEAVY of a pinned CPU's time (either side)."""
    sides = [pd.to_numeric(df[c], errors="coerce") for c in ("srv_cpu_steal", "cli_cpu_steal") if c in df]
    if not sides:
        return pd.Series(False, index=df.index)
    return (pd.concat(sides, axis=1).max(axis=1) > STEAL_HEAVY).fillna(False)


def stability_text(df: pd.DataFrame) -> str:
    """How many points are unstable and runs bimodal, and where the full list is."""
    if df.empty:
        return ""
    keys = ["impl", "mode", "msg_size", "threads", "receive"]
    points = df.groupby(keys, dropna=False)
    unstable = int(points["unstable"].agg(lambda v: (v.astype(str) == "True").any()).sum())
    bimodal = df[df["bimodal"].astype(str) == "True"]
    text = (f"{unstable} of {points.ngroups} points vary by more than 10% between repetitions (coefficient of "
            "variation)" + (": compare those by their intervals and decisions, not by their means." if unstable else "."))
    if len(bimodal):
        levels = ", ".join(f"{name(r['impl'])} {fmt_size(r['msg_size'])} {r['threads']} thr: "
                           f"{r['level_low']:.3g} and {r['level_high']:.3g}" for _, r in bimodal.head(3).iterrows())
        text += (f" **{len(bimodal)} of {len(df)} runs were bimodal**: within one window the rate jumped between "
                 f"two levels (e.g. {levels}; Gbit/s, µs in latency mode), so such a run's mean is a mix of two states.")
    else:
        text += " No run's intervals were bimodal." if df["bimodal"].notna().any() else ""
    stolen = df[steal_heavy(df)]
    if len(stolen):
        where = ", ".join(f"{name(r['impl'])} {r['mode']} {fmt_size(r['msg_size'])} {r['threads']} thr"
                          for _, r in stolen.head(3).iterrows())
        text += (f" **{len(stolen)} of {len(df)} runs had heavy steal**: the hypervisor took over "
                 f"{100 * STEAL_HEAVY:.0f}% of a pinned CPU's time (e.g. {where}), so such a run measured the host "
                 "as much as the path; the decisions weigh it as one pass among the others, the harness tables "
                 "take medians.")
    return text + (" The full list: results.csv, columns unstable and rep_cv per point, bimodal, level_low, level_high "
                   "and level_high_share per run.")


def per_impl_table(df: pd.DataFrame, metrics, by: str = "impl") -> pd.DataFrame:
    """Mean of each metric per implementation (or per `by`, e.g. threads), throughput mode,
    averaged over the other grid dimensions; labels with units as column names."""
    agg = aggregate(throughput_rows(study_rows(df)), metrics)
    keys = [by] if by == "impl" else [by, "impl"]
    table = agg.groupby(keys)[list(metrics)].mean().reset_index()
    table["impl"] = table["impl"].map(name)
    return table.rename(columns={m: METRICS[m][0] for m in metrics} | {"threads": "threads",
                                                                          "impl": "implementation"})


def _first_clause(reason: str) -> str:
    """A reason's head ('L1 and LLC misses were not measured'): its answer gives the rest in full."""
    return reason.split(": ", 1)[0].rstrip(".")


def unanswered_markdown(doc: dict) -> str:
    """A list of what the answers could not state, with the reasons, or a line saying none."""
    items = [f"- **{q_label(key)}**: {md_escape(_first_clause(val['reason']))} (see {q_label(key)})."
             for key, val in doc.items() if isinstance(val, dict) and val.get("reason")]
    return "\n".join(items) if items else "Every question could be answered from this sweep's data."

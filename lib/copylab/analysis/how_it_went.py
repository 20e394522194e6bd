"""How this run went: what the host gave the sweep, from the run's own files (meta.json, results.csv,
profiles.csv): wall time against the budget, passes, the vCPUs' placement (what the rule learned,
the runs set aside and what they measured against the runs kept, runs kept while apart), the
hypervisor's steal per run, and whether a profiled run was itself taken apart.

`run_facts` computes (numbers only); `how_this_run_went` words them. Values read from meta.json are
checked for type and escaped where they reach Markdown: a results folder is untrusted input.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ..fmt import fmt_size, md_escape, plural
from .roles import STUDY, name

STEAL_FLAG = 0.10    # a run with more of its CPU time stolen than this is named (steal per side)
STEAL_HEAVY = 0.25
CV_TARGET = 0.08     # the precision the study aims at per point (docs/methodology.md, "Noise")


def _number(value) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) \
        else None


def _dict(value) -> dict:
    return value if isinstance(value, dict) else {}


def _numeric(df: pd.DataFrame, column: str) -> pd.Series:
    return pd.to_numeric(df[column], errors="coerce") if column in df else pd.Series(np.nan, index=df.index)


def _ratio_to_point(df: pd.DataFrame, mask: pd.Series) -> tuple[int, float | None]:
    """How many rows mask picks, and their throughput's geometric mean ratio to the median of their
    point's other passes (None without other passes)."""
    tp = df[(df["mode"] == "throughput") & (df["status"] == "ok")].copy()
    tp["gbps"] = _numeric(tp, "throughput_gbps")
    picked = tp[mask.reindex(tp.index, fill_value=False)]
    ratios = []
    for idx, row in picked.iterrows():
        others = tp[(tp["impl"] == row["impl"]) & (tp["msg_size"] == row["msg_size"]) &
                    (tp["threads"] == row["threads"]) & (tp.index != idx)]["gbps"].dropna()
        if len(others) and row["gbps"] > 0 and others.median() > 0:
            ratios.append(math.log(row["gbps"] / others.median()))
    return int(mask.sum()), (math.exp(float(np.mean(ratios))) if ratios else None)


def precision(df: pd.DataFrame) -> dict:
    """The median coefficient of variation of the study's throughput points over their passes, and
    the share of points within CV_TARGET."""
    tp = df[(df["mode"] == "throughput") & df["impl"].isin(STUDY) & (df["status"] == "ok")].copy()
    if tp.empty:
        return {"points": 0, "median_cv": None, "within_target": None}
    g = tp.assign(gbps=_numeric(tp, "throughput_gbps")).groupby(["impl", "msg_size", "threads"])["gbps"]
    cv = (g.std(ddof=1) / g.mean())[g.count() >= 2].dropna()
    if cv.empty:
        return {"points": 0, "median_cv": None, "within_target": None}
    return {"points": int(len(cv)), "median_cv": float(cv.median()), "within_target": int((cv <= CV_TARGET).sum())}


def run_facts(df: pd.DataFrame, meta: dict, profiles: pd.DataFrame | None = None) -> dict:
    """The numbers of the section, from the run's own files."""
    sessions = [s for s in meta.get("sessions", []) if isinstance(s, dict)] if isinstance(meta.get("sessions"), list) else []
    walls = [_number(s.get("wall_s")) for s in sessions]
    placement_s = sum(_number(_dict(k).get("placement_s")) or 0.0
                      for s in sessions for k in _dict(_dict(s.get("time")).get("by_kind")).values())
    budget = _dict(meta.get("budget"))
    params = _dict(meta.get("params"))
    passes = [p for p in budget.get("passes", []) if isinstance(p, dict)] if isinstance(budget.get("passes"), list) else []
    steal = pd.concat([_numeric(df, "srv_cpu_steal"), _numeric(df, "cli_cpu_steal")], axis=1).max(axis=1)
    apart_kept = df.get("cpus_apart", pd.Series("", index=df.index)).astype(str) == "True"
    flagged_steal, steal_ratio = _ratio_to_point(df, steal > STEAL_FLAG)
    kept_apart, apart_ratio = _ratio_to_point(df, apart_kept)
    placed = _dict(meta.get("placement"))
    profiled_apart = []
    if profiles is not None and not profiles.empty and "cpus_apart" in profiles:
        for _, row in profiles[profiles["cpus_apart"].astype(str) == "True"].iterrows():
            profiled_apart.append(f"{name(str(row['impl']))} {fmt_size(int(row['msg_size']))} x {int(row['threads'])}")
    hosts = [_number(_dict(s.get("host_load")).get("other_cpu_share")) for s in sessions]
    quiet = [_number(_dict(s.get("host_load")).get("quiet_below")) for s in sessions]
    return {
        "sessions": len(sessions),
        "wall_s": sum(w for w in walls if w is not None) if any(w is not None for w in walls) else None,
        "budget_min": _number(budget.get("budget_min", params.get("budget_min"))),
        "base_passes": _number(params.get("repetitions")),
        "extra_passes": len(passes), "extra_points": sum(int(_number(p.get("points")) or 0) for p in passes),
        "budget_stopped": budget.get("stopped") if isinstance(budget.get("stopped"), str) else None,
        "pace": next((_number(s.get("pace")) for s in reversed(sessions) if _number(s.get("pace"))), None),
        "placement_s": placement_s,
        "placement_why": placed.get("why") if isinstance(placed.get("why"), str) else None,
        "placement_line_ns": _number(placed.get("line_ns")),
        "apart_effect": _dict(placed.get("apart_effect")),
        "runs_set_aside": int(_numeric(df, "placement_retries").fillna(0).sum()),
        "kept_apart": kept_apart, "kept_apart_ratio": apart_ratio,
        "rows": int(len(df)), "steal_rows": int(steal.notna().sum()),
        "steal_over_flag": flagged_steal, "steal_over_heavy": int((steal > STEAL_HEAVY).sum()),
        "steal_ratio": steal_ratio, "steal_median": float(steal.median()) if steal.notna().any() else None,
        "other_programs": max((h for h in hosts if h is not None), default=None),
        "quiet_below": min((q for q in quiet if q is not None), default=None),
        "profiled_apart": profiled_apart,
        **{f"precision_{k}": v for k, v in precision(df).items()},
    }


def _pct(x: float) -> str:
    """12%, 4.5%, 8%: whole percents from 10%, one decimal below, no trailing .0."""
    text = f"{100 * x:.0f}" if x >= 0.1 else f"{100 * x:.1f}".removesuffix(".0")
    return f"{text}%"


def how_this_run_went(facts: dict) -> str:
    """The section's Markdown: one bullet per aspect, each from facts."""
    out = []
    wall, budget = facts["wall_s"], facts["budget_min"]
    if wall is not None:
        text = f"**Time.** The sweep took {wall / 60:.1f} min of wall time over {plural(facts['sessions'], 'session')}"
        if budget is not None:
            text += f" against a budget of {budget:g} min"
            if wall > budget * 60:
                text += f" (over it by {_pct(wall / (budget * 60) - 1)})"
        if facts["pace"] is not None:
            text += f"; its first points ran at {facts['pace']:.2f}x the grid's arithmetic"
        out.append(text + ".")
    if facts["base_passes"] is not None:
        text = f"**Passes.** {facts['base_passes']:.0f} base passes"
        if facts["extra_passes"]:
            text += (f" and {plural(facts['extra_passes'], 'extra pass')} ({plural(facts['extra_points'], 'point')}) "
                     "for comparisons still too wide to decide")
        elif budget is not None:
            text += "; no extra pass ran"
        if facts["budget_stopped"]:
            text += f" (the budget stopped: {md_escape(facts['budget_stopped'])})"
        out.append(text + ".")
    if facts["placement_why"] or facts["runs_set_aside"] or facts["kept_apart"]:
        text = "**Where the vCPUs were.**"
        if facts["placement_why"]:
            text += f" Learned from this host's cache-line round trips: {md_escape(facts['placement_why'])}."
        effect = facts["apart_effect"]
        if facts["runs_set_aside"]:
            text += (f" {plural(facts['runs_set_aside'], 'run')} taken while the CPUs were apart "
                     f"{'was' if facts['runs_set_aside'] == 1 else 'were'} set aside and measured again, at a cost of "
                     f"{facts['placement_s']:.0f} s")
            if wall:
                text += f" ({_pct(facts['placement_s'] / wall)} of the wall time)"
            if _number(effect.get("ratio")) is not None and _number(effect.get("low")) is not None:
                text += (f"; the runs set aside were {effect['ratio']:.2f}x as fast as the runs kept in their place "
                         f"({effect['low']:.2f}-{effect['high']:.2f}, {plural(int(effect.get('pairs') or 0), 'pair')})")
                if effect.get("differs") is False:
                    text += ": no difference, so the sweep stopped measuring runs again"
            text += "."
        else:
            text += " No run was set aside."
        if facts["kept_apart"]:
            text += f" {plural(facts['kept_apart'], 'run')} kept while apart (flagged `cpus_apart`)"
            if facts["kept_apart_ratio"] is not None:
                text += f", at {facts['kept_apart_ratio']:.2f}x their points' other passes (throughput)"
            text += "."
        out.append(text)
    if facts["steal_rows"]:
        text = (f"**Steal.** The hypervisor took over {_pct(STEAL_FLAG)} of a pinned CPU's time in "
                f"{facts['steal_over_flag']} of {facts['steal_rows']} runs (over {_pct(STEAL_HEAVY)} in "
                f"{facts['steal_over_heavy']})")
        if facts["steal_ratio"] is not None and facts["steal_over_flag"]:
            text += f"; those throughput runs measured {facts['steal_ratio']:.2f}x their points' other passes"
        other = facts["other_programs"]
        if other is not None:
            text += f"; other programs in the guest used at most {_pct(other)} of the CPUs"
            if facts["quiet_below"] is not None and other <= facts["quiet_below"] and facts["steal_over_flag"]:
                text += ": the guest was quiet, the physical host was not"
        out.append(text + ".")
    if facts["precision_points"]:
        out.append(f"**Precision.** Median spread of a throughput point over its passes (CV) "
                   f"{_pct(facts['precision_median_cv'])}; {facts['precision_within_target']} of "
                   f"{facts['precision_points']} points within {_pct(CV_TARGET)}.")
    if facts["profiled_apart"]:
        out.append("**Profiles taken apart.** The profiled runs of " + ", ".join(md_escape(p) for p in facts["profiled_apart"])
                   + " were taken while the CPUs were apart (kept once the placement allowance was spent): their "
                   "shares describe that placement.")
    return "\n".join(f"- {line}" for line in out) if out else "Nothing was recorded about how this run went."

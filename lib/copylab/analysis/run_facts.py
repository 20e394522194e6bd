"""How the run went, in numbers, from the run's own files (meta.json, results.csv, profiles.csv):
wall time against the budget, passes, the vCPUs' placement (what the rule learned, the runs set
aside and what they measured against the runs kept, runs kept while apart), the hypervisor's steal
per run, the points' precision, and whether a profiled run was itself taken apart. The Study holds
them (`Study.run`); templates/run.md.j2 words them. Values read from meta.json are checked for type: a
results folder is untrusted input.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ..fmt import fmt_size
from .roles import STUDY, name

STEAL_FLAG = 0.10    # a run with more of its CPU time stolen than this is named (steal per side)
STEAL_HEAVY = 0.25
CV_TARGET = 0.08     # the precision the study aims at per point (docs/methodology.md, "Noise")


def _number(value) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) \
        else None


def _dict(value) -> dict:
    return value if isinstance(value, dict) else {}


def _list(value) -> list:
    return value if isinstance(value, list) else []


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


def calibration_apart_by_the_line(chosen: dict, line_ns: float | None) -> dict:
    """The rounds calibration's runs that fed its choice (those judged apart when taken were left out),
    and those of them a probe of which lies above the line the sweep learned by its end: just after
    the placement calibration the rule often knows one mode (the vCPUs may be wholly apart then), so
    it could not judge them when they were taken."""
    runs = [_dict(run) for run in _list(chosen.get("calibration"))
            if _dict(run).get("status") == "ok" and str(_dict(run).get("cpus_apart")) != "True"]
    apart = 0 if line_ns is None else sum(
        any((_number(v) or 0.0) > line_ns for v in _list(run.get("round_trip_ns"))) for run in runs)
    return {"calibration_runs": len(runs), "calibration_apart": apart}


def window_choice(df: pd.DataFrame, meta: dict) -> dict:
    """Where this host's spread comes from (Kalibera and Jones's levels, per throughput point of the
    study): the run-to-run variance of log throughput over passes splits into what the windows' own
    intervals explain (b / T: interval_cv squared times interval_s, per second of window) and a
    per-connection level (a: a pass of K rounds averages K levels, so a = K times the rest). The
    sweep's rule (rounds.py) applied to this run's own a and b, with the round cost its
    calibration measured, says whether the rounds it chose still hold. Medians over the points; None
    where a point has fewer than 3 passes or the series were not recorded."""
    out = {"window_s": None, "per_connection_cv": None, "within_cv": None, "rounds": None, "rounds_why": None,
           "round_cost_s": None, "best_rounds": None, "best_duration_s": None, "calibration_runs": 0,
           "calibration_apart": 0}
    chosen = _dict(meta.get("rounds"))
    out["rounds_why"] = chosen.get("why") if isinstance(chosen.get("why"), str) else None
    out.update(calibration_apart_by_the_line(chosen, _number(_dict(meta.get("placement")).get("line_ns"))))
    tp = df[(df["mode"] == "throughput") & df["impl"].isin(STUDY) & (df["status"] == "ok")].copy()
    for column in ("throughput_gbps", "interval_cv", "interval_s", "duration_s", "warmup_s", "rounds"):
        tp[column] = _numeric(tp, column)
    tp["rounds"] = tp["rounds"].fillna(1.0)
    tp = tp[(tp["throughput_gbps"] > 0) & tp["interval_cv"].notna() & (tp["interval_s"] > 0)]
    if tp.empty:
        return out
    tp["log"] = np.log(tp["throughput_gbps"])
    per_point = []
    for _, g in tp.groupby(["impl", "msg_size", "threads"]):
        if len(g) < 3:
            continue
        within = float((g["interval_cv"] ** 2 * g["interval_s"] / g["duration_s"]).mean())  # b / T, averaged
        total = float(g["log"].var(ddof=1))
        per_point.append((max(total - within, 0.0) * float(g["rounds"].median()),
                          within * float(g["duration_s"].mean())))
    if not per_point:
        return out
    a = float(np.median([p[0] for p in per_point]))
    b = float(np.median([p[1] for p in per_point]))
    window = float(_dict(meta.get("params")).get("duration_s") or tp["duration_s"].median())
    out.update(window_s=window, per_connection_cv=math.sqrt(a), within_cv=math.sqrt(b / window),
               rounds=int(tp["rounds"].median()))
    cost = _number(chosen.get("round_cost_s"))
    if cost is not None and cost > 0:
        from ..rounds import choose

        best = choose(a, b, cost, window)
        out.update(round_cost_s=cost, best_rounds=best.rounds, best_duration_s=best.duration_s)
    return out


def _last(sessions: list, key: str) -> float | None:
    """The latest session's number under key (None where no session has one)."""
    return next((_number(s.get(key)) for s in reversed(sessions) if _number(s.get(key))), None)


def _last_session(meta: dict) -> dict:
    sessions = meta.get("sessions")
    found = [s for s in sessions if isinstance(s, dict)] if isinstance(sessions, list) else []
    return found[-1] if found else {}


def run_facts(df: pd.DataFrame, meta: dict, profiles: pd.DataFrame | None = None) -> dict:
    """The numbers of the section, from the run's own files."""
    sessions = [s for s in meta.get("sessions", []) if isinstance(s, dict)] if isinstance(meta.get("sessions"), list) else []
    walls = [_number(s.get("wall_s")) for s in sessions]
    # the points' and the set-up's (the rounds calibration is placed as the points are)
    placement_s = sum(_number(_dict(k).get("placement_s")) or 0.0
                      for s in sessions for k in _dict(_dict(s.get("time")).get("by_kind")).values()) + \
        sum(_number(_dict(s.get("time")).get("setup_placement_s")) or 0.0 for s in sessions)
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
        "pace": _last(sessions, "pace"),
        # the sweep's wall time over the seconds it measured: the harness's (set-up, starting and stopping each run,
        # the reference programs and the profiled runs) and, apart, the host's (waiting for the vCPUs, runs again)
        "overhead": _last(sessions, "overhead"), "overhead_harness": _last(sessions, "overhead_without_placement"),
        "placement_s": placement_s,
        "placement_why": placed.get("why") if isinstance(placed.get("why"), str) else None,
        "placement_line_ns": _number(placed.get("line_ns")),
        "apart_effect": _dict(placed.get("apart_effect")),
        "retaken": {k: int(v) for k, v in _dict(placed.get("retaken")).items()
                    if k in ("kept_apart", "measured_again") and _number(v) is not None},
        # the measured runs' and the profiled runs': the engine pairs both with their kept runs; the two counts
        # said apart, as the system configuration counts the measured ones only (review-fresh4 G5)
        "runs_set_aside": int(sum(_numeric(t, "placement_retries").fillna(0).sum()
                                  for t in (df, profiles) if t is not None and len(t))),
        "profiled_set_aside": int(_numeric(profiles, "placement_retries").fillna(0).sum())
        if profiles is not None and len(profiles) else 0,
        # the rounds calibration's runs, placed as the points are (meta.json rounds.calibration)
        "calibration_set_aside": int(sum(max(int(_number(_dict(run).get("set_aside")) or 0), 0)
                                         for run in _list(_dict(meta.get("rounds")).get("calibration")))),
        # the configuration table's placement row gives the learned modes where the round trips are recorded
        "round_trips_recorded": bool(_numeric(df, "cpu_round_trip_ns").notna().any()),
        "kept_apart": kept_apart, "kept_apart_ratio": apart_ratio,
        "rows": int(len(df)), "steal_rows": int(steal.notna().sum()),
        "steal_over_flag": flagged_steal, "steal_over_heavy": int((steal > STEAL_HEAVY).sum()),
        "steal_ratio": steal_ratio, "steal_median": float(steal.median()) if steal.notna().any() else None,
        "other_programs": max((h for h in hosts if h is not None), default=None),
        "quiet_below": min((q for q in quiet if q is not None), default=None),
        "profiled_apart": profiled_apart,
        **{f"precision_{k}": v for k, v in precision(df).items()},
        **{f"window_{k}": v for k, v in window_choice(df, meta).items()},
    }

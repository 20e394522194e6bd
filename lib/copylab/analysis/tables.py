"""The verdicts as tables: per-cell detail the prose leaves out. Formatting only: every value is a
decision, interval or number the Study already holds."""

from __future__ import annotations


import pandas as pd

from ..fmt import fmt_num, fmt_size
from ..inference import Outcome, Verdict
from .roles import STUDY, name

# the words of an outcome in a table cell (throughput: higher is better; a cost: lower is)
FASTER = {Outcome.WIN: "faster", Outcome.WIN_WITHIN: "faster < m", Outcome.EQUIVALENT: "equivalent",
          Outcome.LOSS_WITHIN: "slower < m", Outcome.LOSS: "slower", Outcome.UNDECIDED: "undecided"}
VERDICT = {Verdict.BETTER: "better", Verdict.BETTER_WITHIN: "better < m", Verdict.EQUIVALENT: "equivalent",
           Verdict.WORSE_WITHIN: "worse < m", Verdict.WORSE: "worse", Verdict.UNDECIDED: "undecided"}
COSTS = {Outcome.WIN: "more", Outcome.WIN_WITHIN: "more < m", Outcome.EQUIVALENT: "equivalent",
         Outcome.LOSS_WITHIN: "less < m", Outcome.LOSS: "less", Outcome.UNDECIDED: "undecided"}


def interval(d) -> str:
    return "–" if not (d.low == d.low and d.high == d.high) else f"{fmt_num(d.low)}–{fmt_num(d.high)}"


def cell(row, words=FASTER) -> str:
    """'faster 1.12 (1.03–1.22)', with † where the decision does not stand after the correction."""
    d = row.decision
    mark = "†" if d.decision.decided and not row.stands else ""
    return f"{words[d.decision]}{mark} {fmt_num(d.ratio)} ({interval(d)})"


def decisions(v) -> pd.DataFrame:
    """Q4/Q5: per size over all thread counts."""
    rows = []
    for size, row in v.by_size.items():
        d = row.decision
        rows.append({"size": fmt_size(size), "ratio": d.ratio, "95% interval": interval(d),
                     "decision": FASTER[d.decision] + ("†" if d.decision.decided and not row.stands else ""),
                     "passes": d.n_x})
    return pd.DataFrame(rows)


def per_threads(v) -> pd.DataFrame:
    sizes = sorted({s for by in v.per_threads.values() for s in by})
    out = {"size": [fmt_size(s) for s in sizes]}
    for threads, by in v.per_threads.items():
        out[f"{threads} thr"] = [cell(by[s]) if s in by else "–" for s in sizes]
    return pd.DataFrame(out)


def summary(v, criteria_words: dict) -> pd.DataFrame:
    """Per size: for each criterion the path to use, then each other path's ratio to the baseline and verdict."""
    sizes = sorted({s for by in v.criteria.values() for s in by})
    out = {"size": [fmt_size(s) for s in sizes]}
    for criterion, words in criteria_words.items():
        by = v.criteria.get(criterion)
        if not by:
            continue
        out[words] = [f"{name(by[s].choice)}: " + ", ".join(
            f"{name(i)} {fmt_num(row.decision.ratio)} {VERDICT[verdict]}"
            f"{'†' if row.decision.decision.decided and not row.stands else ''}"
            for i, (row, verdict) in sorted(by[s].entries.items())) if s in by else "–" for s in sizes]
    return pd.DataFrame(out)


def sender_cost(v) -> pd.DataFrame:
    """Data paths: the one-copy path's sender CPU per byte over the baseline's, per size."""
    return pd.DataFrame([{"size": fmt_size(s), "sender CPU per byte, ratio (95%)": cell(r, COSTS)}
                         for s, r in v.sender_cost.items()])


def threads(v) -> pd.DataFrame:
    """Q3: each path's throughput at the most threads over the fewest, per size."""
    sizes = sorted({s for _, s in v.throughput})
    out = {"size": [fmt_size(s) for s in sizes]}
    for impl in STUDY:
        cells = []
        for s in sizes:
            d = v.throughput.get((impl, s))
            if d is None:
                cells.append("–")
                continue
            standing = v.outcome((impl, s))
            mark = "†" if d.decision.decided and standing == "undecided" else ""
            cells.append(f"{FASTER[d.decision]}{mark} {fmt_num(d.ratio)} ({interval(d)})")
        out[name(impl)] = cells
    return pd.DataFrame(out)


def thread_evidence(v) -> pd.DataFrame:
    """Q3's pooled comparisons, most threads over fewest (geometric means over the paths' and sizes' runs)."""
    rows = [("total throughput (Gbit/s)", "total", v.total_gbps),
            ("sender task's CPU per byte (ns/B)", "task_cpu_per_byte", v.task_ns_per_byte),
            ("sender CPU busy time over its task's clock", "outside_task", v.outside_share),
            ("context switches per MB, both sides", "switches_per_mb", v.switches)]
    out = []
    for what, key, means in rows:
        d = getattr(v, key)
        if d is None:
            continue
        mark = "†" if d.decision.decided and v.outcome(key) == "undecided" else ""
        out.append({"quantity": what, f"{v.fewest} thr": fmt_num(means[0]), f"{v.most} thr": fmt_num(means[1]),
                    "ratio (95%)": f"{fmt_num(d.ratio)} ({interval(d)})",
                    "decision": (FASTER if key == "total" else COSTS)[d.decision] + mark})
    return pd.DataFrame(out)


def cache_steps(v) -> pd.DataFrame:
    """Q2: each step of the working set, the cost per byte at the larger over the smaller: the copy alone
    (the memcpy probe), then each path's sender CPU."""
    steps = [("copy alone§", *step) for step in v.copy_steps] + [(name(impl), *rest) for impl, *rest in v.steps]
    return pd.DataFrame([{"path": who, "working set": f"{lower} → {upper}", "level left": leaving or "–",
                          "cost per byte, ratio (95%)": cell(row, COSTS)}
                         for who, lower, upper, leaving, row in steps])


def cost_model(model, sides=(("srv", "sender"), ("cli", "receiver"))) -> pd.DataFrame:
    rows = []
    for impl, c in model.paths.items():
        for side, words in sides:
            a, b = c.per_message[side], c.per_byte[side]
            rows.append({"path": name(impl), "side": words, "per message (µs)": f"{fmt_num(a.value)} ({interval(a)})",
                         "per byte (ns/B)": f"{fmt_num(b.value)} ({interval(b)})"})
            if side == c.costlier:  # the ceiling is the costlier side's: on its row
                rows[-1]["ceiling (Gbit/s)"] = fmt_num(c.ceiling_gbps)
                rows[-1][f"measured at {fmt_size(model.measured_sizes[-1])} (Gbit/s, mean over threads)"] = fmt_num(c.largest_gbps)
    return pd.DataFrame(rows).fillna("")


def zero_copy_work(points) -> pd.DataFrame:
    """Q1: the zero-copy path's work per message at each profiled size (µs of its sender's CPU)."""
    rows = []
    for p in points:
        if p is None:
            continue
        rows.append({"size": fmt_size(p.size), **{what: fmt_num(p.us_per_message[("srv", bucket)]) for bucket, what in (
            ("zerocopy_pin", "pinning (µs/msg)"), ("zerocopy_completion", "completions (µs/msg)"),
            ("deferred_copy", "deferred copy (µs/msg)"), ("scheduling", "scheduling (µs/msg)"))}})
    return pd.DataFrame(rows)


def harness(df: pd.DataFrame) -> pd.DataFrame:
    """The reference programs beside the study's paths at the thread counts both measured: each metric's
    median over the passes (Gbit/s; p50 round trip in µs)."""
    from .peers import harness_ratios

    found = harness_ratios(df)
    if found.empty:
        return pd.DataFrame()
    rows = []
    for (peer, metric, threads, size), g in found.groupby(["peer", "metric", "threads", "msg_size"]):
        unit = "Gbit/s" if metric == "throughput" else "µs"
        row = {"metric": f"{metric} ({unit})", "threads": int(threads), "size": fmt_size(size),
               name(peer): fmt_num(g["peer_value"].iloc[0])}
        row.update({name(r["impl"]): fmt_num(r["impl_value"]) for _, r in g.iterrows()})
        rows.append(row)
    return pd.DataFrame(rows).fillna("–")


def unstable_points(df: pd.DataFrame) -> pd.DataFrame:
    """By implementation and mode, per size: how many of its points' passes vary by more than 10% (coefficient
    of variation) and the largest CV; and the runs whose intervals were bimodal (results.csv has them per point
    and run)."""
    if df.empty or "unstable" not in df:
        return pd.DataFrame()
    rows = df.assign(_unstable=df["unstable"].astype(str) == "True",
                     _bimodal=df["bimodal"].astype(str) == "True" if "bimodal" in df else False)
    points = rows.groupby(["impl", "mode", "msg_size", "threads"], dropna=False).agg(
        unstable=("_unstable", "any"), cv=("rep_cv", "max"), runs=("rep", "size"), bimodal=("_bimodal", "sum"))
    table = points.reset_index().groupby(["impl", "mode", "msg_size"]).agg(
        points=("unstable", "size"), unstable=("unstable", "sum"), cv=("cv", "max"), runs=("runs", "sum"),
        bimodal=("bimodal", "sum")).reset_index()
    table = table[(table["unstable"] > 0) | (table["bimodal"] > 0)]
    if table.empty:
        return pd.DataFrame()
    # one row per path and mode, one column per size: points over 10% of the size's points, the largest CV
    table = table.assign(cell=[f"{int(u)}/{int(p)}, {100 * v:.0f}%" if v == v else f"{int(u)}/{int(p)}"
                               for u, p, v in zip(table["unstable"], table["points"], table["cv"])])
    wide = table.pivot(index=["impl", "mode"], columns="msg_size", values="cell").fillna("–")
    wide.columns = [fmt_size(c) for c in wide.columns]
    bimodal = table.groupby(["impl", "mode"]).agg(b=("bimodal", "sum"), r=("runs", "sum"))
    wide["bimodal runs"] = [f"{int(b)} of {int(r)}" for b, r in zip(bimodal["b"], bimodal["r"])]
    wide = wide.reset_index()
    wide.insert(0, "path", wide.pop("impl").map(name))
    return wide

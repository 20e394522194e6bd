"""The comparison report's text and comparison.json, made from a Comparison (analysis/comparison.py):
what differs between the two sweeps' configurations (it leads the report), the changes decided,
the tables, how the decisions are made, and what only one sweep measured. Nothing here decides: every
decision, interval and Holm p is the Comparison's."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ... import escape
from ...fmt import fmt_num, fmt_size, plural, system_fields
from ...fsutil import atomic_write_json, jsonable
from ..comparison import FAMILIES, OWN, RATIO, Change, Comparison
from ...inference import ALPHA, CONFIDENCE, Outcome
from ..roles import BASE, name
from ..stats import primary_receive
from ..study import CRITERIA
from ...report_display import configuration_rows
from ..sections import CRITERIA_WORDS as CRITERION_WORDS
from ..tables import interval

CONTRACT = "copylab comparison, fourth round"  # docs/contracts.md, "Comparisons of two sweeps"
COMPARISON_JSON = "comparison.json"
# settings that differ between any two sweeps (when they ran, what else ran): the conditions, not the configuration
CONDITIONS = ("started", "finished", "other programs' CPU use while measuring", "CPU placement", "hostname")
# grid keys that name the report's author or the grid, or are its dimensions (compared as points instead)
NOT_CONFIGURATION = {"author", "roll_no", "repo_url", "ai_declaration", "name", "description", "impls", "modes",
                     "msg_sizes", "threads"}
KIND_WORDS = {RATIO: "each path against {base} (the ratio of ratios: X/{base} in B over X/{base} in A)",
              OWN: "each path's own value (B's geometric mean over A's)"}
FAMILY_WORDS = {"ratio_by_size": "each path against {base} per size (over the thread counts both measured)",
                "ratio_per_threads": "each path against {base} per size and thread count",
                "own_by_size": "each path's own throughput, CPU per byte and p50 round trip per size",
                "own_per_threads": "each path's own value per size and thread count"}


# ------------------------------------------------------------------------------------------------
# configuration


def settings(meta: dict, df: pd.DataFrame) -> dict[str, str]:
    """Every setting a sweep records, as text: the host (system_fields), the configuration rows the study
    report shows (caches, hypervisor, tools, congestion, qdisc, working set, revision...), each offload,
    the receive strategy, the Python, and the grid's keys."""
    out = {k: v for k, v in system_fields(meta).items()}
    out.update({k: v for k, v in configuration_rows(meta, df)})
    out["receive strategy compared"] = primary_receive(df)
    out["python"] = meta.get("python")
    offloads = meta.get("offloads") if isinstance(meta.get("offloads"), dict) else {}
    out.update({f"offload {k}": ("on" if v in (True, "on") else "off") for k, v in offloads.items()})
    params = meta.get("params") if isinstance(meta.get("params"), dict) else {}
    out.update({f"grid {k}": v for k, v in params.items() if k not in NOT_CONFIGURATION})
    return {k: "not recorded" if v in (None, "") else str(v) for k, v in out.items()}


def configuration_table(c: Comparison) -> list[dict]:
    """[{"setting", "a", "b", "differs", "condition"}] over every setting either sweep records."""
    a, b = settings(c.meta_a, c.df_a), settings(c.meta_b, c.df_b)
    keys = list(a) + [k for k in b if k not in a]
    return [{"setting": k, "a": a.get(k, "not recorded"), "b": b.get(k, "not recorded"),
             "differs": a.get(k) != b.get(k), "condition": k in CONDITIONS} for k in keys]


def differences(c: Comparison) -> list[dict]:
    """The configuration settings that differ (not the conditions, which differ between any two sweeps)."""
    return [r for r in configuration_table(c) if r["differs"] and not r["condition"]]


def configuration_markdown(c: Comparison) -> str:
    """The lead: what differs between the two sweeps' configurations, as a table, then the conditions."""
    found = differences(c)
    la, lb = escape.markdown(c.label_a), escape.markdown(c.label_b)
    if found:
        head = (f"**{plural(len(found), 'setting')} differ{'s' if len(found) == 1 else ''}** between {la} (A) and "
                f"{lb} (B): each could explain a change below.\n\n")
        table = f"| setting | {la} (A) | {lb} (B) |\n|:---|:---|:---|\n" + "\n".join(
            f"| {escape.markdown(r['setting'])} | {escape.markdown(r['a'])} | {escape.markdown(r['b'])} |" for r in found)
    else:
        head = (f"**No recorded setting differs** between {la} (A) and {lb} (B): the same host, configuration and "
                "tools as far as meta.json and the rows record them; a change below is the host's drift or chance.")
        table = ""
    conditions = [r for r in configuration_table(c) if r["condition"] and r["differs"]]
    tail = ("\n\nThe conditions, which differ between any two sweeps: " + "; ".join(
        f"{escape.markdown(r['setting'])}: {escape.markdown(r['a'])} (A), {escape.markdown(r['b'])} (B)"
        for r in conditions) + ".") if conditions else ""
    return head + table + tail


# ------------------------------------------------------------------------------------------------
# grid


def _dimension(points: set, index: int) -> set:
    return {p[index] for p in points}


def grid(c: Comparison) -> dict:
    """What both sweeps measured and what only one did (the population's points), and what is not compared."""
    pts = c.points()
    out = {"shared_points": len(pts["shared"]), "only_a_points": len(pts["only_a"]), "only_b_points": len(pts["only_b"])}
    for side, other, key in (("a", "b", "only_a"), ("b", "a", "only_b")):
        mine, theirs = pts[key] | pts["shared"], pts[f"only_{other}"] | pts["shared"]
        out[f"only_{side}"] = {dim: sorted(_dimension(mine, i) - _dimension(theirs, i))
                               for i, dim in enumerate(("impl", "mode", "msg_size", "threads"))}
        out[f"only_{side}_list"] = [dict(zip(("impl", "mode", "msg_size", "threads"), p)) for p in sorted(pts[key])]
    out["not_compared"] = sorted((set(c.df_a["impl"]) | set(c.df_b["impl"])) - set(c.rows_a["impl"]) - set(c.rows_b["impl"]))
    out["receive_not_compared"] = sorted(({*c.df_a["receive"].dropna()} - {primary_receive(c.df_a)})
                                         | ({*c.df_b["receive"].dropna()} - {primary_receive(c.df_b)}))
    return out


def _dims_text(dims: dict) -> str:
    words = {"impl": lambda v: ", ".join(name(x) for x in v), "mode": lambda v: ", ".join(v),
             "msg_size": lambda v: ", ".join(fmt_size(int(x)) for x in v), "threads": lambda v: ", ".join(map(str, v))}
    said = [f"{label} {words[k](dims[k])}" for k, label in (("impl", "paths"), ("mode", "modes"),
                                                             ("msg_size", "sizes"), ("threads", "thread counts"))
            if dims[k]]
    return "; ".join(said)


def grid_markdown(c: Comparison) -> str:
    g = grid(c)
    text = (f"Compared: the {plural(g['shared_points'], 'point')} (path, mode, size, thread count) both sweeps "
            "measured, with each sweep's primary receive strategy.")
    for side, label in (("a", c.label_a), ("b", c.label_b)):
        n = g[f"only_{side}_points"]
        if n:
            dims = _dims_text(g[f"only_{side}"])
            text += (f" Only {escape.markdown(label)} ({side.upper()}) measured {plural(n, 'point')}"
                     + (f" ({escape.markdown(dims)})" if dims else " (other combinations of shared values)")
                     + ": listed, not compared.")
    if g["not_compared"]:
        text += (" Not compared, as in the study report's decisions: the reference programs ("
                 + escape.markdown(", ".join(name(i) for i in g["not_compared"])) + ").")
    if g["receive_not_compared"]:
        text += (" Nor the receive strategies other than the primary one ("
                 + escape.markdown(", ".join(g["receive_not_compared"])) + ").")
    return text


# ------------------------------------------------------------------------------------------------
# the changes


def _where(ch: Change) -> str:
    at = fmt_size(ch.size) + (f", {plural(ch.threads, 'thread')}" if ch.threads is not None else "")
    what = (f"{name(ch.impl)}/{name(BASE)} {CRITERIA_SHORT[ch.criterion]}" if ch.kind == RATIO
            else f"{name(ch.impl)} {CRITERIA_SHORT[ch.criterion]}")
    return f"{what} at {at}"


UNITS = {"throughput": "Gbit/s", "cpu_per_byte": "ns/B", "latency": "µs"}
CRITERIA_SHORT = {"throughput": "throughput", "cpu_per_byte": "CPU per byte", "latency": "p50 round trip"}


def change_entry(c: Comparison, ch: Change) -> dict:
    """One object of comparison.json's `changes` (docs/contracts.md, "Comparisons of two sweeps")."""
    d = ch.decision
    return {"kind": ch.kind, "criterion": ch.criterion, "metric": ch.metric, "impl": ch.impl, "base": ch.base,
            "msg_size": ch.size, "threads": ch.threads, "decision": str(d.decision), "verdict": ch.verdict,
            "higher_is_better": ch.higher_is_better, "ratio": d.ratio, "low": d.low, "high": d.high,
            "a": ch.a, "b": ch.b, "margin": d.margin, "passes_a": d.n_base, "passes_b": d.n_x, "df": d.df,
            "p": d.p, "p_equivalence": d.p_equivalence, "family": ch.family, "p_holm": c.p_holm(ch),
            "stands": c.stands(ch), "passes_needed": d.passes_needed}


def _cell(c: Comparison, ch: Change | None) -> str:
    """'win 1.42 (1.31–1.55)', a dagger where Holm's correction leaves the claim short of standing."""
    if ch is None:
        return "n/a"
    fallen = ch.decision.decision != Outcome.UNDECIDED and not c.stands(ch)
    d = ch.decision
    return f"{d.decision} {fmt_num(d.ratio)}" + (f" ({interval(d)})" if d.low == d.low else "") + ("†" if fallen else "")


def table(c: Comparison, kind: str, criterion: str, per_threads: bool = False) -> pd.DataFrame:
    """One row per path and size (and thread count): A's value, B's value, and the change."""
    found = c.select(kind, criterion, per_threads)
    unit = "ratio to " + name(BASE) if kind == RATIO else UNITS[criterion]
    rows = []
    for ch in sorted(found, key=lambda x: (x.impl, x.size, x.threads or 0)):
        row = {"path": name(ch.impl), "size": fmt_size(ch.size)}
        if per_threads:
            row["threads"] = str(ch.threads)
        row.update({f"A ({unit})": fmt_num(ch.a), f"B ({unit})": fmt_num(ch.b), "change B/A (95% interval)": _cell(c, ch),
                    "reads as": ch.verdict})
        rows.append(row)
    return pd.DataFrame(rows)


def tables(c: Comparison) -> list[tuple[str, pd.DataFrame]]:
    """(caption, table) per kind and criterion, over all thread counts."""
    out = []
    for kind in (OWN, RATIO):
        for criterion in CRITERIA:
            t = table(c, kind, criterion)
            if len(t):
                out.append((f"**{CRITERION_WORDS[criterion][0].upper()}{CRITERION_WORDS[criterion][1:]}: "
                            f"{KIND_WORDS[kind].format(base=name(BASE))}**", t))
    return out


def summary_markdown(c: Comparison) -> str:
    """The changes decided, first those that stand after Holm's correction."""
    standing, decided = c.decided_changes(True), c.decided_changes(False)
    tests = sum(f.size for f in c.families.values())
    la, lb = escape.markdown(c.label_a), escape.markdown(c.label_b)
    if not c.changes:
        return (f"Nothing to compare: {la} and {lb} share no point with a measured value of the compared metrics.")
    text = (f"{_count(len(c.changes), 'quantity', 'quantities')} compared from {la} (A) to {lb} (B). ")
    if standing:
        text += (f"**{plural(len(standing), 'change')} decided and standing** after Holm's correction over "
                 f"{'its family' if len(standing) == 1 else 'their families'} (at most {ALPHA:.0%} chance, per "
                 "family, that any of them is not there):\n\n")
        text += "\n".join(f"- {escape.markdown(_where(ch))}: {ch.verdict} in B, {_ratio_words(ch)}"
                          for ch in sorted(standing, key=lambda x: (x.kind, x.criterion, x.impl, x.size, x.threads or 0)))
    else:
        text += ("**No change is decided that stands after Holm's correction** "
                 f"({tests} tests in {_count(sum(1 for f in c.families.values() if f.size), 'family', 'families')}).")
    fallen = [ch for ch in decided if ch not in standing]
    if fallen:
        text += (f"\n\n{plural(len(fallen), 'further comparison')} decided a change at {CONFIDENCE:.0%} that does not "
                 f"stand after the correction (where nothing changed, about {ALPHA:.0%} of the comparisons decide a "
                 "change by chance alone); the tables mark them †.")
    equivalent = sum(1 for ch in c.changes if ch.decision.decision == Outcome.EQUIVALENT)
    undecided = sum(1 for ch in c.changes if ch.decision.decision == Outcome.UNDECIDED)
    text += (f"\n\n{equivalent} decided equivalent within ±{fmt_num(100 * c.margin)}%, {undecided} undecided "
             "(the interval straddles 1 or a margin, or a sweep had fewer than two passes there).")
    return text


def _count(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def _ratio_words(ch: Change) -> str:
    d = ch.decision
    return f"B/A {fmt_num(d.ratio)}× (95% interval {interval(d)})"


def methods_markdown(c: Comparison) -> str:
    margins = c.margins
    margin_note = ("" if margins[0] == margins[1] else
                   f" (the sweeps' margins differ, ±{fmt_num(100 * margins[0])}% and ±{fmt_num(100 * margins[1])}%: "
                   "the smaller, the stricter claim of equivalence, is used)")
    families = "\n".join(f"- `{n}`: {FAMILY_WORDS[n].format(base=name(BASE))}: {plural(f.size, 'test')}"
                         for n, f in c.families.items() if f.size)
    return (
        "The two sweeps are independent samples: no pass of A has a partner in B, so the study report's paired "
        "within-pass test does not apply across them. On the log scale, where a ratio is a difference:\n\n"
        f"- **A path against {name(BASE)}.** Each sweep's own paired comparison (the study report's: per cell the "
        "differences over the passes, per size their mean over the thread counts both sweeps measured there), and "
        "the change is their difference, the ratio of ratios, with the sum of the two variances and "
        "Welch–Satterthwaite degrees of freedom. A pass that ran fast or slow cancels inside each sweep.\n"
        "- **A path's own value.** Per sweep one log value per pass (over the thread counts, the pass's mean first) "
        "and the spread between passes *without* removing each pass's shift: a sweep's mean carries its passes' "
        "shifts, so its interval must carry their spread; Welch's test on the two samples. This assumes each pass "
        "is an independent draw of the host's state; a host that drifted between the sweeps more than between "
        "passes shows that drift here as a change (the ratios against the baseline are immune to it).\n"
        f"- **The decision** (the change from A to B, ratio B/A): *equivalent* when the {CONFIDENCE:.0%} interval "
        f"lies within {fmt_num(1 / (1 + c.margin))}–{fmt_num(1 + c.margin)} (margin ±{fmt_num(100 * c.margin)}%"
        f"{margin_note}), otherwise *win* above 1, *loss* below 1, *undecided* when it straddles 1 or a sweep has "
        "fewer than two passes. For CPU per byte and the round trip lower is better: *reads as* says better or worse.\n"
        f"- **Many comparisons.** Each decision alone calls a change that is not there at most {ALPHA:.0%} of the "
        f"time. Holm's correction over each family keeps the chance of any false claim in the family at {ALPHA:.0%}; "
        "a decision whose adjusted p is not below "
        f"{fmt_num(ALPHA)} keeps its interval and is marked †. The families:\n\n" + families)


# ------------------------------------------------------------------------------------------------
# comparison.json


def _side(label: str, df: pd.DataFrame, meta: dict) -> dict:
    return {"label": label, "results_dir": df.attrs.get("results_dir"), "status": meta.get("status"),
            "git_revision": meta.get("git_revision"), "started_at": meta.get("started_at"),
            "finished_at": meta.get("finished_at"), "rows_used": int(len(df))}


def document(c: Comparison) -> dict:
    """comparison.json: the Comparison with its configuration differences (docs/contracts.md)."""
    return jsonable({
        "contract": CONTRACT,
        "a": _side(c.label_a, c.df_a, c.meta_a), "b": _side(c.label_b, c.df_b, c.meta_b),
        "configuration_differences": [{k: r[k] for k in ("setting", "a", "b")} for r in differences(c)],
        "conditions": [{k: r[k] for k in ("setting", "a", "b")} for r in configuration_table(c) if r["condition"]],
        "grid": grid(c),
        "statistics": {"confidence": CONFIDENCE, "equivalence_margin": c.margin, "correction": "holm", "alpha": ALPHA,
                       "families": {n: f.size for n, f in c.families.items()},
                       "family_words": {n: FAMILY_WORDS[n].format(base=name(BASE)) for n in FAMILIES}},
        "decided_changes": sum(1 for _ in c.decided_changes(True)),
        "changes": [change_entry(c, ch) for ch in c.changes],
    })


def write(doc: dict, output_dir) -> Path:
    Path(output_dir).mkdir(parents=True, exist_ok=True)
    return atomic_write_json(Path(output_dir) / COMPARISON_JSON, doc, indent=2)

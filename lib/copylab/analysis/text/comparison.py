"""The comparison report's text and comparison.json, made from a Comparison (analysis/comparison.py).

The words live in templates (analysis/templates/comparison_*.md.j2, rendered by analysis/render.py): the
summary (the two sweeps, what differs between their configurations, what changed), every change in
tables, what was compared, how the decisions are made. This module only gathers what they word: the
recorded settings side by side, the grid both measured, the Comparison's changes grouped into tables.
Nothing here decides or writes a sentence: every decision, interval, tally and Holm p is the
Comparison's, and each outcome is compared as its enum (inference.Outcome, inference.Verdict)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ... import escape
from ...fmt import system_fields, system_summary
from ...fsutil import atomic_write_json, jsonable
from ..comparison import FAMILIES, OWN, RATIO, Change, Comparison
from ...inference import ALPHA, CONFIDENCE, Outcome, Verdict
from ..render import render
from ..roles import BASE, name
from ..stats import primary_receive
from ...report_display import configuration_rows

CONTRACT = "copylab comparison, fourth round"  # docs/contracts.md, "Comparisons of two sweeps"
COMPARISON_JSON = "comparison.json"
# settings that differ between any two sweeps (when they ran, what else ran): the conditions, not the configuration
CONDITIONS = ("started", "ended", "other programs' CPU use while measuring", "CPU placement", "hostname")
# grid keys that name the report's author or the grid, or are its dimensions (compared as points instead)
NOT_CONFIGURATION = {"author", "roll_no", "repo_url", "ai_declaration", "name", "description", "impls", "modes",
                     "msg_sizes", "threads"}
# the summary shows at most this many settings that differ and changes (the rest: "What was compared", the tables)
SHOWN_DIFFERENCES, SHOWN_CHANGES = 5, 8


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


def _escaped(rows: list[dict]) -> list[dict]:
    """Settings rows with their text escaped for Markdown (a setting's value is text, never markup)."""
    return [{k: escape.markdown(r[k]) for k in ("setting", "a", "b")} for r in rows]


def _context(c: Comparison) -> dict:
    """What every comparison template is given: the Comparison, the enums its outcomes are compared as,
    the names and the statistics' settings."""
    return {"c": c, "Outcome": Outcome, "Verdict": Verdict, "OWN": OWN, "RATIO": RATIO, "name": name, "base": BASE,
            "margin": c.margin, "confidence": f"{CONFIDENCE:.0%}", "alpha": f"{ALPHA:.0%}", "alpha_value": ALPHA,
            "la": escape.markdown(c.label_a), "lb": escape.markdown(c.label_b)}


def summary_markdown(c: Comparison) -> str:
    """The first page: both sweeps, what differs, what changed (the standing wins and losses over the
    thread counts, largest first, at most SHOWN_CHANGES), every outcome counted."""
    found = differences(c)
    changed = c.changed(per_threads=False)
    single = len(c.thread_counts()) <= 1  # each change per size is then its one thread count's too
    return render("comparison_summary", **_context(c), n_threads=len(c.thread_counts()),
                  host_a=escape.markdown(system_summary(c.meta_a)), host_b=escape.markdown(system_summary(c.meta_b)),
                  differences=_escaped(found[:SHOWN_DIFFERENCES]), n_differences=len(found),
                  changed=changed, shown=changed[:SHOWN_CHANGES], per_thread_changed=len(c.changed(per_threads=True)),
                  tallies=c.tallies(per_threads=False if single else None),
                  by_size=len(c.select(per_threads=False)), per_threads=len(c.select(per_threads=True)))


def table_rows(c: Comparison, kind: str, criterion: str) -> list[dict]:
    """Per path and size: its change over the thread counts ("over", None where not compared) and each
    thread count's (c.thread_counts() order, None where not compared)."""
    threads = c.thread_counts()
    cells: dict[tuple, dict] = {}
    for ch in c.select(kind, criterion):
        cells.setdefault((ch.impl, ch.size), {})[ch.threads] = ch
    return [{"impl": impl, "size": size, "over": found.get(None), "per_threads": [found.get(t) for t in threads]}
            for (impl, size), found in sorted(cells.items())]


def tables_markdown(c: Comparison) -> str:
    """Every change: a table per kind and criterion (own values first), each thread count in its columns."""
    tables = [{"kind": kind, "criterion": criterion, "rows": table_rows(c, kind, criterion)}
              for kind in (OWN, RATIO) for criterion in c.criteria(kind)]
    return render("comparison_tables", **_context(c), tables=tables, threads=c.thread_counts())


def compared_markdown(c: Comparison) -> str:
    """What was compared and what not, every setting that differs, and the conditions."""
    return render("comparison_compared", **_context(c), g=grid(c), differences=_escaped(differences(c)),
                  conditions=_escaped([r for r in configuration_table(c) if r["condition"] and r["differs"]]))


def methods_markdown(c: Comparison) -> str:
    return render("comparison_methods", **_context(c), margins=c.margins,
                  families=[f for f in c.families.values() if f.size])


# ------------------------------------------------------------------------------------------------
# comparison.json


def change_entry(c: Comparison, ch: Change) -> dict:
    """One object of comparison.json's `changes` (docs/contracts.md, "Comparisons of two sweeps"); `fallen`:
    decided, but not standing after its family's correction (the report's †)."""
    d = ch.decision
    return {"kind": ch.kind, "criterion": ch.criterion, "metric": ch.metric, "impl": ch.impl, "base": ch.base,
            "msg_size": ch.size, "threads": ch.threads, "decision": str(d.decision), "verdict": str(ch.verdict),
            "higher_is_better": ch.higher_is_better, "ratio": d.ratio, "low": d.low, "high": d.high,
            "a": ch.a, "b": ch.b, "margin": d.margin, "passes_a": d.n_base, "passes_b": d.n_x, "df": d.df,
            "p": d.p, "p_equivalence": d.p_equivalence, "family": ch.family, "p_holm": c.p_holm(ch),
            "stands": c.stands(ch), "passes_needed": d.passes_needed, "fallen": c.fallen(ch)}


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
                       "family_words": {n: render("comparison_family", family=n, name=name, base=BASE).strip()
                                        for n in FAMILIES}},
        "decided_changes": sum(1 for _ in c.decided_changes(True)),
        "changes": [change_entry(c, ch) for ch in c.changes],
    })


def write(doc: dict, output_dir) -> Path:
    Path(output_dir).mkdir(parents=True, exist_ok=True)
    return atomic_write_json(Path(output_dir) / COMPARISON_JSON, doc, indent=2)

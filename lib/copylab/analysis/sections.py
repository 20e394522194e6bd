"""What each section of the report shows: its template rendered with the Study's verdicts, and its
tables. The notebook calls these; answers.json takes each answer's text from answer_text. Nothing
here decides: the context is the verdicts and the numbers they carry."""

from __future__ import annotations

import math

import pandas as pd

from .. import escape
from ..fmt import markdown_table
from ..memory import RING_MEMORY_MAX
from ..perf import HARDWARE_EVENTS
from . import tables
from .stats import measured
from .render import environment, render
from .roles import BASE, ONE_COPY, ZERO_COPY, name

CRITERIA_WORDS = {"throughput": "throughput", "cpu_per_byte": "CPU per byte, both sides", "latency": "p50 round trip"}


def _context(s) -> dict:
    """What every template may use: the paths' names, the margin, the verdicts, the cost model."""
    model = s.model
    counts = s.verdicts["data_paths"].counts
    params = s.meta.get("params") if isinstance(s.meta.get("params"), dict) else {}
    return {"b": name(BASE), "x": name(ONE_COPY), "z": name(ZERO_COPY), "base_impl": BASE, "one_impl": ONE_COPY,
            "zero_impl": ZERO_COPY, "m": s.margin, "margin": s.margin, "model": model,
            "memcpys": model.extra_in_memcpys if model is not None else math.nan,
            "copied": counts.copied_share if counts is not None else math.nan,
            "pin_server": params.get("pin_server"), "pin_client": params.get("pin_client"),
            **{k: v for k, v in s.verdicts.items()}}


def _safe(text: str) -> str:
    """Rendered Markdown as shown: the template's own Markdown stays; a string from the sweep's files is
    escaped where the template places it (its md filter), so no control character is left either."""
    return escape.clean(text)


def intro(s) -> str:
    return _safe(render("intro", **_context(s)))


def summary(s) -> str:
    text = render("summary", **_context(s), family_size=s.family("summary").size)
    table = tables.summary(s.verdicts["summary"], CRITERIA_WORDS)
    return _safe(text) + ("\n\n" + markdown_table(table) if len(table) else "")


def counters(meta: dict, df) -> str:
    """What this host's perf counted, for the ‡ caveat: none (no hardware counters at all), uncounted (no
    cache misses in this sweep) or pmu."""
    events = meta.get("perf_events") or {}
    hardware = [e for e in HARDWARE_EVENTS if e in events]
    if hardware and not any(events[e] for e in hardware):
        return "none"
    return "pmu" if measured(df, "l1_misses") else "uncounted"


def caption(name: str, **values) -> str:
    """A table's caption: a macro of templates/captions.md.j2."""
    return str(getattr(environment(False).get_template("captions.md.j2").module, name)(**values)).strip()


def method(s, windows: str) -> str:
    memcpy = s.meta.get("memcpy") if isinstance(s.meta.get("memcpy"), dict) else {}
    params = s.meta.get("params") if isinstance(s.meta.get("params"), dict) else {}
    return _safe(render("method", **_context(s), windows=windows, reps=s.reps, memcpy=memcpy, rings=rings(s),
                        ring_memory=RING_MEMORY_MAX,
                        placement=bool(params.get("placement", True)), counters=counters(s.meta, s.df)))


def rings(s) -> dict:
    """{message size: bytes} each Part E sender cycles through (results.csv working_set_bytes; its median)."""
    if "working_set_bytes" not in s.part_e or s.part_e.empty:
        return {}
    used = pd.to_numeric(s.part_e["working_set_bytes"], errors="coerce")
    found = used.groupby(s.part_e["msg_size"]).median().dropna()
    return {int(size): int(n) for size, n in found.items() if n > 0}


def run(s) -> str:
    return _safe(render("run", r=s.run))


def data_paths(s) -> str:
    v = s.verdicts["data_paths"]
    table = tables.sender_cost(v)
    return _safe(render("data_paths", **_context(s), v=v)) + ("\n\n" + markdown_table(table) if len(table) else "")


def profile(s) -> str:
    return _safe(render("profile", **_context(s), v=s.verdicts["profile"]))


def answer_text(s, question: str) -> str:
    """A Part E answer's prose (answers.json keeps it as the report shows it)."""
    context = _context(s)
    if question in ("q4", "q5"):
        impl = ONE_COPY if question == "q4" else ZERO_COPY
        context["gap"] = s.model.gaps.get(impl) if s.model is not None else None
    context["counted_any"] = bool(s.cache and s.cache.counted)
    return render(question, **{**context, "v": s.verdicts[question]})


def answer_tables(s, question: str) -> list[tuple[str, pd.DataFrame]]:
    v = s.verdicts[question]
    if question in ("q4", "q5") and v.answerable:
        return [(caption("decisions"), tables.decisions(v))]
    if question == "q3" and v.measured:
        return [(caption("threads", most=v.most, fewest=v.fewest), tables.threads(v)),
                (caption("pooled"), tables.thread_evidence(v))]
    if question == "q2" and (v.steps or v.copy_steps):
        return [(caption("steps"), tables.cache_steps(v))]
    if question == "q1" and (v.small or v.large):
        return [(caption("zero_copy_work", z=name(ZERO_COPY)),
                 tables.zero_copy_work([v.small] if v.small is v.large or v.large is None else [v.small, v.large]))]
    return []


def answer(s, question: str) -> str:
    """The whole answer as the report shows it: its prose, then its tables."""
    parts = [_safe(answer_text(s, question))]
    for words, table in answer_tables(s, question):
        if len(table):
            parts += ([f"_{words}_"] if words else []) + [markdown_table(table)]
    return "\n\n".join(parts)


def per_thread_tables(s) -> str:
    """The appendix's per-thread-count decisions of Q4 and Q5 (the answers cite them in one line)."""
    parts = []
    for question, label in (("q4", "Q4"), ("q5", "Q5")):
        v = s.verdicts[question]
        table = tables.per_threads(v) if v.answerable else None
        if table is not None and len(table):
            parts += [f"_{label}. {caption('per_threads')}_", markdown_table(table)]
    return "\n\n".join(parts) or "_One thread count measured: no per-thread decisions._"


def cost_model_table(s) -> str:
    if s.model is None:
        return ""
    worst = max(r for c in s.model.paths.values() for r in c.worst_residual.values())
    return (f"_{caption('cost_model', sizes=s.model.sizes, worst=worst)}_\n\n"
            + markdown_table(tables.cost_model(s.model)))


def harness(s) -> str:
    table = tables.harness(s.shown)
    if not len(table):
        return "_This sweep measured no reference program._"
    return _safe(render("harness", **_context(s))) + "\n\n" + markdown_table(table)


def stability(s) -> str:
    table = tables.unstable_points(s.df)
    text = render("stability", points=len(table), total=s.run.get("precision_points"))
    return _safe(text) + ("\n\n" + markdown_table(table) if len(table) else "")

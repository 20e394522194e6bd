"""Figures that back the written answers: the copy the one-copy path removes, the zero-copy path's
completions, and each path against the baseline with the decisions' intervals."""

from __future__ import annotations

import math

import pandas as pd
import plotly
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..analysis import METRICS, aggregate, measured
from ..analysis.roles import BASE, COMPARED, ONE_COPY, ZERO_COPY
from ..analysis.stats import one_receive
from ..analysis.study import COST_FAMILY, SIDE_CPU
from ..fmt import IMPL_LABELS, fmt_num, fmt_size, impl_name
from .style import (FONT, IMPL_COLORS, FigureNote, _impl_trace, _is_spread, _log_ticks, _note_for,
                    _shared_title, _size_ticks, _style, _with_note, hover_data, hover_template, interval_bars)


def user_copy_per_message(study):
    """The copy the one-copy path removes: user-space copy bytes per message (the servers' own count, as a
    multiple of the message size) next to what that saves the sender: the one-copy path's sender CPU per
    byte over the baseline's, the Study's decisions and 95% intervals on a ratio axis (absolute costs per
    byte span decades over sizes and would hide a 20% difference)."""
    df, meta = study.shown, study.meta
    tp = one_receive(df)
    tp = tp[(tp["mode"] == "throughput") & tp["impl"].isin([BASE, ONE_COPY])].copy()
    if not measured(tp, "user_copy_bytes_per_message"):
        return _note_for(df, meta, "bytes copied in user space per message",
                         ["user_copy_bytes_per_message"], "throughput")
    tp["user_copy_share"] = tp["user_copy_bytes_per_message"] / tp["msg_size"]
    agg = aggregate(tp, ["user_copy_share"], by=("impl", "msg_size"))
    saving = study.compare(ONE_COPY, metric=SIDE_CPU["sender"])["by_size"]
    one, base = impl_name(ONE_COPY), impl_name(BASE)
    titles = ["user-space copy, servers' count", f"sender CPU per byte ÷ {base}'s"]
    # room between the panels for the right one's tick labels and axis title (they overprinted the left title)
    fig = make_subplots(rows=1, cols=2 if saving else 1, horizontal_spacing=0.16,
                        subplot_titles=titles[:2 if saving else 1])
    for impl, g in agg.groupby("impl"):
        g = g.sort_values("msg_size")
        fig.add_trace(go.Bar(x=[fmt_size(s) for s in g["msg_size"]], y=g["user_copy_share"],
                             name=IMPL_LABELS[impl], marker_color=IMPL_COLORS[impl], legendgroup=impl,
                             # a path that copies nothing in user space says 0: an empty slot read as missing
                             text=[f"{v:.2f}" if v > 0.005 else "0" for v in g["user_copy_share"]],
                             textposition="outside",
                             textfont=dict(size=FONT["tick"]),
                             customdata=g["msg_size"] * g["user_copy_share"],
                             hovertemplate=(f"<b>{IMPL_LABELS[impl]}</b><br>%{{x}}, mean over thread counts<br>"
                                            "copied in user space: %{customdata:.0f} B per message "
                                            "(%{y:.2f} × the message)<extra></extra>")), row=1, col=1)
    fig.update_yaxes(title_text="bytes copied ÷ message size", row=1, col=1)
    fig.update_xaxes(title_text="message size (bytes)", type="category", row=1, col=1)
    if saving:
        values = decision_values(saving.values())
        # its legend entry says what the markers and the band mean (the title has no room for it)
        # two lines: on one, the PDF's width cut it off ("grey band: the e")
        # the decisions stand or fall in the cost family, as the sentences citing them say (words.cost_claim)
        family = study.family(COST_FAMILY)
        fig.add_trace(decision_trace(saving, f"{one} / {base}, all thread counts<br>({COST_KEY}; "
                                     "grey band: the equivalence margin)", IMPL_COLORS.get(ONE_COPY),
                                     what=f"{one}'s sender CPU per byte ÷ {base}'s", words=COST_WORDS, family=family),
                      row=1, col=2)
        if any(family.fallen(d) for d in saving.values()):
            fig.add_trace(fallen_key(COST_FALLEN_KEY), row=1, col=2)
        equivalence_band(fig, study.margin, row=1, col=2)
        fig.update_yaxes(type="log", **ratio_ticks(values + [1 / (1 + study.margin), 1 + study.margin]),
                         title_text=f"{one} ÷ {base} (log scale)", row=1, col=2)
        fig.update_xaxes(title_text="message size (bytes, log scale)", row=1, col=2, **_size_ticks(list(saving)))
    return _style(fig, meta, f"The copy {one} removes, and its sender's CPU per byte against {base}'s")


def decision_values(decisions) -> list[float]:
    """Every ratio and interval end of the decisions: what a ratio axis must show."""
    return [v for d in decisions for v in (d.ratio, d.low, d.high) if v == v and v > 0]


def decision_trace(by_size: dict, name: str, color: str | None, what: str, showlegend: bool = True,
                   words: dict | None = None, family=None) -> go.Scatter:
    """One path's decisions per size ({size: Decision}): the ratio, its 95% interval as an error bar and a
    marker per decision (DECISION_MARKERS); the hover names each decision in `words` (a cost's "win" is a
    ratio decided above 1, i.e. decided higher). family (the Study's Family): a decision Holm's correction
    over it does not leave standing gets an open marker and "†, not standing after correction" in its hover."""
    words = words or {}
    sizes = sorted(by_size)
    d = [by_size[s] for s in sizes]
    fallen = [family is not None and family.fallen(x) for x in d]
    said = [words.get(str(x.decision), str(x.decision)) + (f"†, {FALLEN}" if f else "") for x, f in zip(d, fallen)]
    return go.Scatter(
        x=sizes, y=[x.ratio for x in d], mode="lines+markers", name=name, showlegend=showlegend,
        line=dict(color=color), marker=dict(symbol=[DECISION_MARKERS[x.decision] + ("-open" if f else "")
                                                    for x, f in zip(d, fallen)], size=11),
        error_y=dict(type="data", symmetric=False, array=[x.high - x.ratio if x.high == x.high else 0 for x in d],
                     arrayminus=[x.ratio - x.low if x.low == x.low else 0 for x in d],
                     visible=any(x.low == x.low for x in d)),
        customdata=[[fmt_size(s), w] for s, w in zip(sizes, said)],
        hovertemplate=f"{what}<br>%{{customdata[0]}}: %{{y:.3f}}× (%{{customdata[1]}})<extra></extra>")


def fallen_key(key: str) -> go.Scatter:
    """A legend entry of its own for the open marker (decision_trace's decision not standing after its family's
    correction), key saying whose correction."""
    return go.Scatter(x=[None], y=[None], mode="markers", name=key, hoverinfo="skip",
                      marker=dict(symbol="circle-open", size=11, color="#555"))


def equivalence_band(fig: go.Figure, margin: float, **where) -> None:
    """The equivalence margin as a grey band around a dotted ratio 1."""
    fig.add_hrect(y0=1 / (1 + margin), y1=1 + margin, fillcolor="#999", opacity=0.15, line_width=0, **where)
    fig.add_hline(y=1.0, line_dash="dot", line_color="#555", **where)


def zerocopy_completions(df: pd.DataFrame, meta: dict):
    """The zero-copy path's own counts: send calls its completions covered per message (1.0 whenever
    every send was notified, however many notifications it took); the share the kernel copied after all
    and the share the device sent from user pages (all copied between namespaces, not between hosts);
    and what it saves the sender against the baseline, per byte."""
    rows = one_receive(df)
    rows = rows[rows["mode"] == "throughput"]
    zc = rows[rows["impl"] == ZERO_COPY]
    zname = impl_name(ZERO_COPY)
    if not measured(zc, "zc_completions_per_message"):
        return FigureNote(f"{zname} zero-copy completions vs message size",
                          "zero-copy completion counts (zc_completions, zc_copied)",
                          f"the sweep has no {zname} throughput rows with zero-copy accounting",
                          f"run {zname} in throughput mode with this project's server, which reports them")
    metrics = ["zc_completions_per_message", "zc_copied_share", "zc_not_copied_share"]
    agg = aggregate(zc, metrics, by=("impl", "threads", "msg_size"))
    saving = _sender_saving(rows)
    panels, constants = _count_panels(agg, saving is not None)
    # short titles: three side by side ran together; what is solid or dotted, the y title says
    titles = [t for _, t in panels] + ([f"sender CPU/B ÷ {impl_name(BASE)}'s"] if saving is not None else [])
    # one panel: its y title says what it is (a subplot title would sit on the configuration line)
    fig = make_subplots(rows=1, cols=len(titles), horizontal_spacing=0.1,
                        subplot_titles=titles if len(titles) > 1 else None)
    palette = plotly.colors.qualitative.Plotly
    for k, (threads, g) in enumerate(agg.groupby("threads")):
        g = g.sort_values("msg_size")
        label = f"{zname}, {threads} thread{'s' if threads != 1 else ''}"
        color = palette[k % len(palette)]  # one colour per thread count across the panels
        for col, (metric, _) in enumerate(panels, start=1):
            lines = [(metric, None)] + ([("zc_not_copied_share", "dot")] if metric == "zc_copied_share" else [])
            for shown, dash in lines:
                fig.add_trace(go.Scatter(x=g["msg_size"], y=g[shown], mode="lines+markers",
                                         line=dict(dash=dash, color=color), name=label, legendgroup=str(threads),
                                         showlegend=col == 1 and dash is None, customdata=hover_data(g, ZERO_COPY, shown),
                                         hovertemplate=hover_template(shown), error_y=interval_bars(g, shown)),
                              row=1, col=col)
        if saving is not None:
            s = saving[saving["threads"] == threads].sort_values("msg_size")
            fig.add_trace(go.Scatter(x=s["msg_size"], y=s["ratio"], mode="lines+markers", name=label,
                                     line=dict(color=color), legendgroup=str(threads), showlegend=not panels,
                                     customdata=[fmt_size(v) for v in s["msg_size"]],
                                     hovertemplate=(f"<b>{label}</b>, %{{customdata}}<br>sender CPU per byte "
                                                    "÷ A1's: %{y:.3f}×<extra></extra>")),
                          row=1, col=len(titles))
    fig.update_xaxes(**_size_ticks(agg["msg_size"], compact=True))
    _shared_title(fig, "x", "message size (bytes, log scale)")
    _count_axes(fig, panels, saving, zname)
    title = f"{zname} MSG_ZEROCOPY: its server's own counts, and the sender's CPU per byte"
    if constants:
        title += f"<br>at every point: {' and '.join(constants)}"
    fig = _style(fig, meta, title)
    fig.update_layout(legend_title_text="thread count")
    return fig


def _count_panels(agg: pd.DataFrame, with_saving: bool) -> tuple[list, list]:
    """([(metric, panel title)] to draw, [words of the counts equal at every point]): such a count (1.00
    send calls per message, 100% copied between namespaces) is said in the title instead of drawn flat
    (review L5: two of three panels were lines); one panel stays when nothing else would be drawn."""
    panels, constants = [], []
    for metric, title, said in (("zc_completions_per_message", "send calls per message", "{} send calls per message"),
                                ("zc_copied_share", "completions copied (%)", "{}% of completions copied")):
        value = _constant(agg[metric])
        if value is None or (not with_saving and not panels and metric == "zc_copied_share"):
            panels.append((metric, title))
        else:
            constants.append(said.format(fmt_num(value)))
    return panels, constants


def _count_axes(fig: go.Figure, panels: list, saving, zname: str) -> None:
    """The y axes of zerocopy_completions' panels; the saving, when drawn, is the last."""
    for col, (metric, _) in enumerate(panels, start=1):
        if metric == "zc_completions_per_message":
            # from zero: a count near 1.0 everywhere must not be stretched into 0.99999 / 1 / 1.00001
            fig.update_yaxes(title_text="send calls covered ÷ messages", rangemode="tozero", row=1, col=col)
        else:
            fig.update_yaxes(title_text="% copied (solid), not (dotted)", range=[0, 105], row=1, col=col)
    if saving is not None:
        last = len(panels) + 1
        fig.add_hline(y=1.0, line_dash="dot", line_color="#555", row=1, col=last)
        fig.update_yaxes(title_text=(f"{zname} ÷ {impl_name(BASE)} (log scale)" if panels else
                                     f"sender CPU per byte, {zname} ÷ {impl_name(BASE)} (log scale)"),
                         type="log", **ratio_ticks(list(saving["ratio"]) + [1.0]), row=1, col=last)


def _constant(values: pd.Series, tolerance: float = 1e-3):
    """The value a metric takes at every point (within a relative tolerance), else None."""
    values = pd.to_numeric(values, errors="coerce").dropna()
    if values.empty:
        return None
    low, high = float(values.min()), float(values.max())
    return (low + high) / 2 if high - low <= tolerance * max(abs(high), 1e-12) else None


def _sender_saving(rows: pd.DataFrame) -> pd.DataFrame | None:
    """(threads, msg_size, ratio): zero-copy/baseline sender CPU per byte, from the means; None without both
    implementations' sender CPU time."""
    pair = rows[rows["impl"].isin([BASE, ZERO_COPY])]
    if not measured(pair[pair["impl"] == ZERO_COPY], "srv_cpu_ns_per_byte") or \
            not measured(pair[pair["impl"] == BASE], "srv_cpu_ns_per_byte"):
        return None
    means = pair.groupby(["threads", "msg_size", "impl"])["srv_cpu_ns_per_byte"].mean().unstack("impl")
    means = means.dropna()
    if means.empty:
        return None
    means["ratio"] = means[ZERO_COPY] / means[BASE]
    return means.reset_index()[["threads", "msg_size", "ratio"]]


FALLEN = "not standing after correction"
DECISION_MARKERS = {"win": "triangle-up", "win_within_margin": "diamond", "loss": "triangle-down",
                    "loss_within_margin": "diamond", "equivalent": "square", "undecided": "circle"}
DECISION_KEY = "▲ faster ▼ slower ◆ < margin ■ equivalent ● undecided"
# a Decision's win is its ratio decided above 1: for a cost (CPU per byte, lower is better) say so plainly
COST_WORDS = {"win": "decided higher", "loss": "decided lower", "win_within_margin": "higher by less than the margin",
              "loss_within_margin": "lower by less than the margin"}
COST_KEY = "▲ decided higher ▼ decided lower ◆ by less than the margin ■ equivalent ● undecided"
# the decisions are Q4's and Q5's (their families), not the summary's, whose own correction can leave a ratio †
# that stands here (review-fresh3 F7): the key says whose correction
FALLEN_KEY = "open marker †: not standing after Q4's or Q5's correction (Holm)"
ANSWER_FAMILY = {ONE_COPY: "q4", ZERO_COPY: "q5"}
COST_FALLEN_KEY = "open marker †: not standing after the correction over each side's CPU per byte (Holm)"


def ratio_to_baseline(study):
    """The one-copy and zero-copy paths over the baseline per size (all thread counts), with the Study's
    decisions and their 95% intervals on a log axis and a marker per decision: the evidence behind Q4
    and Q5, the very intervals their tables give."""
    meta, margin = study.meta, study.margin
    fig = go.Figure()
    values = []
    fallen = False
    for impl in COMPARED:
        found = study.compare(impl)["by_size"]
        if not found:
            continue
        values += decision_values(found.values())
        family = study.family(ANSWER_FAMILY[impl])  # the answer (Q4, Q5) whose decisions these are
        fallen |= any(family.fallen(d) for d in found.values())
        label = f"{impl_name(impl)} / {impl_name(BASE)}"
        trace = decision_trace(found, label, IMPL_COLORS.get(impl), what=f"{impl_name(impl)}'s throughput ÷ "
                               f"{impl_name(BASE)}'s", family=family, showlegend=False)
        trace.legendgroup = impl
        fig.add_trace(trace)
        # the legend's entry: plotly draws a trace's first marker there (▼ for both paths when both lose at
        # 64 B), so a path is keyed by its colour and line, the markers by the title's key
        fig.add_trace(go.Scatter(x=[None], y=[None], mode="lines+markers", name=label, legendgroup=impl,
                                 line=dict(color=IMPL_COLORS.get(impl)), marker=dict(symbol="circle", size=8),
                                 hoverinfo="skip"))
    if not values:
        return FigureNote(f"throughput relative to {impl_name(BASE)}",
                          f"throughput-mode rows of {impl_name(BASE)} and the paths compared with it",
                          "the sweep has no throughput rows of both", "include them in the grid")
    if fallen:
        fig.add_trace(fallen_key(FALLEN_KEY))
    equivalence_band(fig, margin)
    fig.update_xaxes(**_size_ticks(study.part_e["msg_size"]), title_text="message size (bytes, log scale)")
    fig.update_yaxes(type="log", **ratio_ticks(values + [1 / (1 + margin), 1 + margin]),
                     title_text=f"throughput ÷ {impl_name(BASE)}'s (log scale)")
    return _style(fig, meta, f"Throughput ÷ {impl_name(BASE)}'s ({DECISION_KEY})")


RATIO_TICKS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 0.8, 0.9, 1.0, 1.1, 1.2, 1.5, 2.0, 3.0, 5.0, 10.0,
               20.0, 50.0, 100.0)
MAX_TICKS = 7


def ratio_ticks(values) -> dict:
    """Ticks and range for a ratio on a log axis. The axis runs from a round ratio at or below the lowest
    value to one at or above the highest, both labelled, so every point sits between labelled ticks; 1 is
    labelled, then the round ratios nearest 1 (where wins and losses are read), at most MAX_TICKS, none
    closer on the axis than a ninth of its span (closer labels collide: 1.1 / 1 / 0.9)."""
    values = [v for v in values if v == v and v > 0] or [1.0]
    low, high = min(values), max(values)
    # a value within 5% of a round ratio counts as at it: the axis is not stretched a whole step for it
    bottom = max([t for t in RATIO_TICKS if t <= low * 1.05 and t < high], default=low)
    top = min([t for t in RATIO_TICKS if t >= high / 1.05 and t > bottom], default=high)
    inside = [t for t in RATIO_TICKS if bottom <= t <= top]
    gap = math.log10(top / bottom) / 9
    kept: list[float] = []
    for t in [1.0, top, bottom, *sorted(inside, key=lambda t: abs(math.log10(t)))]:
        if (t in inside and len(kept) < MAX_TICKS
                and all(abs(math.log10(t) - math.log10(k)) >= gap for k in kept)):
            kept.append(t)
    ticks = sorted(kept)
    pad = max(0.03 * math.log10(top / bottom), 0.01)  # the end ticks' markers and labels stay whole
    return dict(tickvals=ticks, ticktext=[f"{t:g}" for t in ticks], minor=dict(showgrid=False),
                range=[math.log10(min(bottom, low)) - pad, math.log10(max(top, high)) + pad])


def receive_strategies(df: pd.DataFrame, meta: dict):
    """Throughput with message-sized reads and with bulk reads, per implementation and size."""
    from ..analysis.peers import receive_comparison

    table = receive_comparison(df)
    if table.empty:
        return FigureNote("throughput by receive strategy", "rows with both receive strategies",
                          "the sweep used one receive strategy", "set `receive: [message, bulk]` in the grid")
    fig = go.Figure()
    for impl, g in table.groupby("impl"):
        g = g.sort_values("msg_size")
        fig.add_trace(go.Scatter(x=g["msg_size"], y=g["bulk_over_message"], mode="lines+markers",
                                 name=IMPL_LABELS.get(impl, impl), line=dict(color=IMPL_COLORS.get(impl)),
                                 customdata=[fmt_size(v) for v in g["msg_size"]],
                                 hovertemplate=(f"<b>{IMPL_LABELS.get(impl, impl)}</b><br>%{{customdata}}<br>"
                                                "throughput with bulk reads ÷ with message reads: "
                                                "%{y:.3f}×<extra></extra>")))
    fig.add_hline(y=1.0, line_dash="dot", line_color="#555")
    fig.update_xaxes(**_size_ticks(table["msg_size"]), title_text="message size (bytes, log scale)")
    fig.update_yaxes(title_text="throughput, bulk ÷ message-sized reads")
    return _style(fig, meta, "The receiver's read size changes the sender's throughput")

"""Figures that back the written answers: the copy the one-copy path removes, the zero-copy path's
completions, each path's throughput against the baseline. Implementations are found by their role
in native/registry.def (two_copy = the baseline, one_copy, zero_copy)."""

from __future__ import annotations

import pandas as pd
import plotly
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .. import registry
from ..analysis import METRICS, aggregate, measured
from ..analysis.stats import one_receive, study_rows
from ..fmt import IMPL_LABELS, fmt_size, impl_name
from .style import (FONT, IMPL_COLORS, FigureNote, _impl_trace, _is_spread, _log_ticks, _note_for,
                    _shared_title, _size_ticks, _style, _with_note, hover_data, hover_template)


def user_copy_per_message(df: pd.DataFrame, meta: dict):
    """The copy the one-copy path removes: user-space copy bytes per message (as a multiple of the
    message) next to the sender's cost per byte, for the baseline and the one-copy path."""
    tp = one_receive(df)
    pair = [registry.baseline(), registry.by_role("one_copy")]
    tp = tp[(tp["mode"] == "throughput") & tp["impl"].isin(pair)].copy()
    if not measured(tp, "user_copy_bytes_per_message"):
        return _note_for(df, meta, "bytes copied in user space per message",
                         ["user_copy_bytes_per_message"], "throughput")
    tp["user_copy_share"] = tp["user_copy_bytes_per_message"] / tp["msg_size"]
    cost = next((m for m in ("srv_cycles_per_byte", "srv_cpu_ns_per_byte") if measured(tp, m)), None)
    metrics = ["user_copy_share"] + ([cost] if cost else [])
    agg = aggregate(tp, metrics, by=("impl", "msg_size"))
    fig = make_subplots(rows=1, cols=len(metrics), horizontal_spacing=0.1,
                        subplot_titles=["user-space copy per message", "sender cost per byte"][:len(metrics)])
    for impl, g in agg.groupby("impl"):
        g = g.sort_values("msg_size")
        fig.add_trace(go.Bar(x=[fmt_size(s) for s in g["msg_size"]], y=g["user_copy_share"],
                             name=IMPL_LABELS[impl], marker_color=IMPL_COLORS[impl], legendgroup=impl,
                             text=[f"{v:.2f}" for v in g["user_copy_share"]], textposition="outside",
                             textfont=dict(size=FONT["tick"]),
                             customdata=g["msg_size"] * g["user_copy_share"],
                             hovertemplate=(f"<b>{IMPL_LABELS[impl]}</b><br>%{{x}}, mean over thread counts<br>"
                                            "copied in user space: %{customdata:.0f} B per message "
                                            "(%{y:.2f} × the message)<extra></extra>")), row=1, col=1)
        if cost:
            # the mean is over thread counts, not repetitions: a spread over threads is no CI
            trace = _impl_trace(g, impl, "msg_size", cost, False)
            trace.error_y.visible = False
            fig.add_trace(trace, row=1, col=2)
    fig.update_yaxes(title_text="bytes copied in user space ÷ message size", row=1, col=1)
    fig.update_xaxes(title_text="message size (bytes)", type="category", row=1, col=1)
    if cost:
        unit = "cycles/B" if "cycles" in cost else "ns/B"
        y_cost = METRICS[cost][0].replace(" (ns/B)", "") + f" ({unit})"
        if _is_spread(agg[cost]):
            fig.update_yaxes(type="log", **_log_ticks(agg[cost]), row=1, col=2)
            y_cost = _with_note(y_cost, "log scale")
        fig.update_yaxes(title_text=y_cost, row=1, col=2)
        fig.update_xaxes(title_text="message size (bytes, log scale)", row=1, col=2,
                         **_size_ticks(agg["msg_size"]))
    return _style(fig, meta, f"The copy {impl_name(pair[1])} removes: user-space copy and sender cost "
                             "(mean over thread counts)")


def zerocopy_completions(df: pd.DataFrame, meta: dict):
    """The zero-copy path: error-queue completions per message; the share the kernel copied after
    all and the share the device sent from user pages (all copied between namespaces, not between
    hosts); and what it saves the sender against the baseline, per byte."""
    rows = one_receive(df)
    rows = rows[rows["mode"] == "throughput"]
    zc, base = registry.by_role("zero_copy"), registry.baseline()
    ZC, BASE = impl_name(zc), impl_name(base)
    zc_rows = rows[rows["impl"] == zc]
    if not measured(zc_rows, "zc_completions_per_message"):
        return FigureNote(f"{ZC} zero-copy completions vs message size",
                          "zero-copy completion counts (zc_completions, zc_copied)",
                          f"the sweep has no {ZC} throughput rows with zero-copy accounting",
                          f"run {ZC} in throughput mode with this project's {zc}_server, which reports them")
    metrics = ["zc_completions_per_message", "zc_copied_share", "zc_not_copied_share"]
    agg = aggregate(zc_rows, metrics, by=("impl", "threads", "msg_size"))
    saving = _sender_saving(rows, base, zc)
    titles = ["completions per message", "copied (solid) or not (dotted), %"]
    if saving is not None:
        titles.append(f"sender saving vs {BASE} (%)")
    fig = make_subplots(rows=1, cols=len(titles), horizontal_spacing=0.08, subplot_titles=titles)
    palette = plotly.colors.qualitative.Plotly
    for k, (threads, g) in enumerate(agg.groupby("threads")):
        g = g.sort_values("msg_size")
        label = f"{ZC}, {threads} thread{'s' if threads != 1 else ''}"
        color = palette[k % len(palette)]  # one colour per thread count across the panels
        for col, metric, dash in ((1, "zc_completions_per_message", None), (2, "zc_copied_share", None),
                                  (2, "zc_not_copied_share", "dot")):
            ci = g[f"{metric}_ci"]
            fig.add_trace(go.Scatter(x=g["msg_size"], y=g[metric], mode="lines+markers",
                                     line=dict(dash=dash, color=color), name=label, legendgroup=str(threads),
                                     showlegend=col == 1, customdata=hover_data(g, "a3", metric),
                                     hovertemplate=hover_template(metric),
                                     error_y=dict(type="data", array=ci.fillna(0), visible=bool(ci.notna().any()))),
                          row=1, col=col)
        if saving is not None:
            s = saving[saving["threads"] == threads].sort_values("msg_size")
            fig.add_trace(go.Scatter(x=s["msg_size"], y=s["saving_pct"], mode="lines+markers", name=label,
                                     line=dict(color=color), legendgroup=str(threads), showlegend=False,
                                     customdata=[fmt_size(v) for v in s["msg_size"]],
                                     hovertemplate=(f"<b>{label}</b>, %{{customdata}}<br>sender CPU per byte "
                                                    "saved against A1: %{y:.1f}%<extra></extra>")),
                          row=1, col=3)
    fig.update_xaxes(**_size_ticks(agg["msg_size"], compact=True))
    _shared_title(fig, "x", "message size (bytes, log scale)")
    fig.update_yaxes(title_text=METRICS["zc_completions_per_message"][0], row=1, col=1)
    fig.update_yaxes(title_text="share of completions (%)", range=[0, 105], row=1, col=2)
    if saving is not None:
        fig.update_yaxes(title_text=f"1 − {ZC}/{BASE} sender ns per byte (%)", row=1, col=3)
    fig = _style(fig, meta, f"{ZC} MSG_ZEROCOPY: completions, the share copied after all, and the sender's saving")
    fig.update_layout(legend_title_text="thread count")
    return fig


def _sender_saving(rows: pd.DataFrame, base: str, zc: str) -> pd.DataFrame | None:
    """(threads, msg_size, saving_pct): 1 - zc/base sender CPU per byte, from the means; None
    without both implementations' sender CPU time."""
    pair = rows[rows["impl"].isin([base, zc])]
    if not measured(pair[pair["impl"] == zc], "srv_cpu_ns_per_byte") or \
            not measured(pair[pair["impl"] == base], "srv_cpu_ns_per_byte"):
        return None
    means = pair.groupby(["threads", "msg_size", "impl"])["srv_cpu_ns_per_byte"].mean().unstack("impl")
    means = means.dropna()
    if means.empty:
        return None
    means["saving_pct"] = (1 - means[zc] / means[base]) * 100
    return means.reset_index()[["threads", "msg_size", "saving_pct"]]


def ratio_to_baseline(df: pd.DataFrame, meta: dict):
    """The one-copy and zero-copy paths over the baseline per size (mean over thread counts,
    repetition by repetition), with the 95% interval of each ratio: the evidence behind Q4 and Q5's
    significant crossovers."""
    from ..analysis.significance import comparisons  # only this figure needs scipy's machinery

    study = study_rows(df)
    fig = go.Figure()
    any_point = False
    BASE = impl_name(registry.baseline())
    for impl in (registry.by_role("one_copy"), registry.by_role("zero_copy")):
        found = comparisons(study, impl)["overall"]
        if not found:
            continue
        any_point = True
        sizes = sorted(found)
        c = [found[s] for s in sizes]
        upper = [x.ratio_high - x.ratio if x.ratio_high == x.ratio_high else 0 for x in c]
        lower = [x.ratio - x.ratio_low if x.ratio_low == x.ratio_low else 0 for x in c]
        fig.add_trace(go.Scatter(
            x=sizes, y=[x.ratio for x in c], mode="lines+markers", name=f"{IMPL_LABELS[impl]} / {BASE}",
            line=dict(color=IMPL_COLORS[impl]),
            marker=dict(symbol=["diamond" if x.significant_win else "circle" for x in c], size=10),
            error_y=dict(type="data", array=upper, arrayminus=lower, visible=any(upper)),
            customdata=[fmt_size(s) for s in sizes],
            hovertemplate=(f"<b>{IMPL_LABELS[impl]} / {BASE}</b><br>%{{customdata}}, mean over thread counts<br>"
                           "throughput ratio: %{y:.3f}×<extra></extra>")))
    if not any_point:
        one, zero = impl_name(registry.by_role("one_copy")), impl_name(registry.by_role("zero_copy"))
        return FigureNote(f"throughput relative to {BASE}", f"throughput-mode rows of {BASE} and {one}/{zero}",
                          "the sweep has no throughput rows of both",
                          f"include {BASE.lower()} and {one.lower()}/{zero.lower()} in the grid")
    fig.add_hline(y=1.0, line_dash="dot", line_color="#555")
    fig.update_xaxes(**_size_ticks(study["msg_size"]), title_text="message size (bytes, log scale)")
    fig.update_yaxes(title_text=f"throughput ÷ {BASE}'s (mean over thread counts)")
    return _style(fig, meta, f"Throughput relative to {BASE}, 95% interval over repetitions (◆ = significant win)")


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
    fig.update_yaxes(title_text="throughput with bulk reads ÷ with message reads")
    return _style(fig, meta, "The receiver's read size changes the sender's throughput")

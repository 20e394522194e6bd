"""The cost model's figure: each path's sender CPU time per message against the message size, the
measured means (95% intervals over the passes) and the fitted lines t = a + b*n over the sizes they
hold over, with the crossover the model predicts and the one the decisions find marked."""

from __future__ import annotations

import math

import numpy as np
import plotly.graph_objects as go

from ..analysis.costmodel import per_message_times
from ..analysis.roles import BASE, COMPARED, STUDY
from ..fmt import IMPL_LABELS, fmt_size, impl_name
from ..inference import mean_interval
from .style import FONT, IMPL_COLORS, FigureNote, _compact_size, _log_ticks, _style

TITLE = "Cost per message: the senders' CPU time per message"


def cost_per_message(study):
    model = study.model
    if model is None:
        return FigureNote(TITLE, "throughput runs of the three paths at two sizes or more", "this sweep has none",
                          "include them in the grid")
    times = per_message_times(study.part_e)
    per_pass = times.groupby(["impl", "msg_size", "rep"])["srv_us"].mean().reset_index()
    fig = go.Figure()
    sizes = model.measured_sizes
    values: list[float] = []
    for impl in (i for i in STUDY if i in model.paths):
        mine = per_pass[per_pass["impl"] == impl]
        means, lows, highs = [], [], []
        for size in sizes:
            found = mean_interval(mine.loc[mine["msg_size"] == size, "srv_us"])
            means.append(found[0] if found else float(mine.loc[mine["msg_size"] == size, "srv_us"].mean()))
            lows.append(found[0] - found[1] if found else 0)
            highs.append(found[2] - found[0] if found else 0)
        color = IMPL_COLORS.get(impl)
        fig.add_trace(go.Scatter(x=sizes, y=means, mode="markers", name=f"{IMPL_LABELS.get(impl, impl)}, measured",
                                 legendgroup=impl, marker=dict(color=color, size=9),
                                 error_y=dict(type="data", array=highs, arrayminus=lows),
                                 hovertemplate="%{x} B: %{y:.3g} µs per message<extra></extra>"))
        costs = model.paths[impl]
        line = np.geomspace(model.sizes[0], model.sizes[-1], 50)
        fitted = costs.per_message["srv"].value + costs.per_byte["srv"].value * line / 1e3
        values += [v for v in means if v == v and v > 0]
        fig.add_trace(go.Scatter(x=line, y=fitted, mode="lines", legendgroup=impl,
                                 name=f"{impl_name(impl)}: a + b·n over {fmt_size(model.sizes[0])}–{fmt_size(model.sizes[-1])}",
                                 line=dict(color=color, dash="dash"), hoverinfo="skip"))
    for impl in COMPARED:
        gap = model.gaps.get(impl)
        if gap is not None and gap.bounded:
            _mark(fig, gap.crossover.value, f"{impl_name(impl)}/{impl_name(BASE)} predicted", IMPL_COLORS.get(impl),
                  "dot")
        # the model predicts where the two lines cross (ratio 1): beside it, where the decisions find the path
        # faster at all, and where it outperforms (faster by more than the margin) when that differs
        faster, outperforms = study.crossover(impl, beyond_margin=False), study.crossover(impl)
        if faster is not None:
            _mark(fig, faster, f"{impl_name(impl)}/{impl_name(BASE)} decided faster", IMPL_COLORS.get(impl), "solid")
        if outperforms is not None and outperforms != faster:
            _mark(fig, outperforms, f"{impl_name(impl)}/{impl_name(BASE)} outperforms", IMPL_COLORS.get(impl), "dash")
    fig.update_xaxes(type="log", tickvals=sizes, ticktext=[_compact_size(s) for s in sizes],
                     title_text="message size (bytes, log scale)")
    fig.update_yaxes(type="log", title_text="sender CPU per message (µs, log)", **_log_ticks(values))
    return _style(fig, study.meta, TITLE)


def _mark(fig: go.Figure, x: float, text: str, color: str | None, dash: str) -> None:
    if not (x > 0 and math.isfinite(x)):  # a log axis has no place for it (and an annotation at NaN breaks the axis)
        return
    fig.add_vline(x=x, line_dash=dash, line_color=color or "#555")
    fig.add_annotation(x=np.log10(x), xref="x", y=1, yref="y domain", text=text, showarrow=False, textangle=-90,
                       xanchor="right", yanchor="top", font=dict(size=FONT["tick"] - 2, color=color or "#555"))

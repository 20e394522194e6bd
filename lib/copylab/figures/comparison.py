"""The comparison report's figure: each path's change from sweep A to sweep B per size, with the
Comparison's decisions and 95% intervals (analysis/comparison.py), captioned with both hosts."""

from __future__ import annotations

import plotly.graph_objects as go

from .. import escape
from ..analysis.comparison import RATIO, Comparison
from ..analysis.roles import BASE
from ..fmt import fmt_size, impl_name, system_summary
from .evidence import DECISION_KEY, DECISION_MARKERS, equivalence_band, ratio_ticks
from .style import IMPL_COLORS, FigureNote, _size_ticks, _style

WHAT = {"throughput": "throughput", "cpu_per_byte": "CPU time per byte", "latency": "p50 round trip"}


def caption(c: Comparison) -> str:
    """Both configurations, for a figure's subtitle, one line each: 'A (label): Linux ...<br>B (label): ...'."""
    return "<br>".join(escape.html(f"{side} ({label}): {system_summary(meta)}")
                       for side, label, meta in (("A", c.label_a, c.meta_a), ("B", c.label_b, c.meta_b)))


def changes_figure(c: Comparison, kind: str, criterion: str):
    """B/A per path and size over the thread counts both sweeps measured, with the decisions' intervals
    on a log axis, a marker per decision and the equivalence band."""
    found = [ch for ch in c.select(kind, criterion, per_threads=False)]
    what = WHAT[criterion] + (f" relative to {impl_name(BASE)}" if kind == RATIO else "")
    if not found:
        return FigureNote(f"change of {what} from A to B", f"{what} measured in both sweeps",
                          "the two sweeps share no such point", "compare sweeps that measured it at common points")
    fig, values = go.Figure(), []
    for impl in sorted({ch.impl for ch in found}):
        mine = sorted((ch for ch in found if ch.impl == impl), key=lambda ch: ch.size)
        d = [ch.decision for ch in mine]
        values += [v for x in d for v in (x.ratio, x.low, x.high) if v == v and v > 0]
        fig.add_trace(go.Scatter(
            x=[ch.size for ch in mine], y=[x.ratio for x in d], mode="lines+markers", name=impl_name(impl),
            line=dict(color=IMPL_COLORS.get(impl)),
            marker=dict(symbol=[DECISION_MARKERS[x.decision] for x in d], size=11),
            error_y=dict(type="data", symmetric=False, array=[x.high - x.ratio if x.high == x.high else 0 for x in d],
                         arrayminus=[x.ratio - x.low if x.low == x.low else 0 for x in d],
                         visible=any(x.low == x.low for x in d)),
            customdata=[[fmt_size(ch.size), str(ch.decision.decision), ch.verdict] for ch in mine],
            hovertemplate="%{customdata[0]}: B/A %{y:.3f}× (%{customdata[1]}: %{customdata[2]})<extra></extra>"))
    if not values:
        values = [1.0]
    equivalence_band(fig, c.margin)
    fig.update_xaxes(**_size_ticks([ch.size for ch in found]), title_text="message size (bytes, log scale)")
    fig.update_yaxes(type="log", **ratio_ticks(values + [1 / (1 + c.margin), 1 + c.margin]),
                     title_text="B ÷ A (log scale)")
    fig = _style(fig, c.meta_a, f"Change of {what} from A to B ({DECISION_KEY})",
                 legend_title="path")
    fig.layout.title.subtitle.text = caption(c)
    fig.layout.margin.t = 130  # the two sweeps' lines under the title
    return fig

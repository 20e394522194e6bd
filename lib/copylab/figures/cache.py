"""The cache-level study's figure: sender CPU per byte against the working set cycled through, one
panel per message size, a line per path, log x, this host's cache sizes marked (a sweep across
working sets: params/cache.yaml; the Study's levels.CacheLevels)."""

from __future__ import annotations

import math

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..analysis.levels import SENDER_CPU
from ..analysis.roles import STUDY
from ..fmt import IMPL_LABELS, fmt_size
from .style import IMPL_COLORS, FONT, FigureNote, _compact_size, _shared_title, _style


def cost_vs_working_set(study, metric: str = SENDER_CPU):
    """Per size placed at two working sets or more, each path's mean of metric at the fewest threads
    against the bytes its working set cycled through; the cache sizes as vertical lines."""
    c = study.cache
    title = "Sender CPU per byte against the working set, cache sizes marked"
    if c is None or c.means is None or metric not in c.means:
        return FigureNote(title, "a sweep whose working set varies across the cache levels (params/cache.yaml)",
                          "this sweep cycles every sender through one working set",
                          "run copylab sweep params/cache.yaml")
    lo = c.threads[0]
    sizes = [s for s in c.sizes if len({k for k, n in c.used if n == s}) >= 2] or c.sizes  # a lone point is no curve
    fig = make_subplots(rows=1, cols=len(sizes), subplot_titles=[f"{fmt_size(s)} messages" for s in sizes],
                        shared_yaxes=True, horizontal_spacing=0.06)
    for col, size in enumerate(sizes, start=1):
        at = c.means[(c.means["msg_size"] == size) & (c.means["threads"] == lo)]
        for impl in STUDY:
            g = at[at["impl"] == impl]
            if g.empty:
                continue
            used = [c.used.get((k, size)) for k in g["working_set"]]
            g = g.assign(used=used).sort_values("used")
            fig.add_trace(go.Scatter(x=g["used"], y=g[metric], mode="lines+markers", name=IMPL_LABELS.get(impl, impl),
                                     legendgroup=impl, showlegend=col == 1, line=dict(color=IMPL_COLORS.get(impl)),
                                     customdata=g[["working_set"]].to_numpy(),
                                     hovertemplate="%{customdata[0]}: %{x:,} B, %{y:.3g} ns/B<extra></extra>"),
                          row=1, col=col)
        axis = "x" if col == 1 else f"x{col}"
        for level, size_bytes in c.caches.items():  # each cache's size: a dotted line named at the top
            fig.add_vline(x=size_bytes, line_dash="dot", line_color="#777", row=1, col=col)
            fig.add_annotation(x=math.log10(size_bytes), xref=axis, y=1, yref=f"{axis.replace('x', 'y')} domain",
                               text=f"{level}", showarrow=False, xanchor="left", yanchor="top", xshift=2,
                               font=dict(size=FONT["tick"] - 2, color="#555"))
        ticks = sorted({int(v) for (k, s), v in c.used.items() if v and s == size})
        fig.update_xaxes(type="log", tickvals=ticks, ticktext=[_compact_size(t) for t in ticks], tickangle=0,
                         row=1, col=col)
    fig.update_yaxes(type="log", rangemode="tozero")
    _shared_title(fig, "x", "working set cycled through per connection (bytes, log scale)")
    _shared_title(fig, "y", f"sender CPU time per byte (ns/B, log), {lo} thread{'s' if lo != 1 else ''}")
    return _style(fig, study.meta, title)

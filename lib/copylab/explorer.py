"""Widget explorer: pick a metric, implementations, mode, x axis and a filter; the chart updates in place.

Needs a live kernel (JupyterLab), so the report's PDF and HTML leave it out (cells tagged "widget").
The figure keeps one trace per implementation for its whole life and only their data change: a
browser reload then restores a figure whose traces exist (clearing and re-adding traces left the
saved widget state pointing at traces that were gone: an empty chart until the first click).
"""

from __future__ import annotations

import ipywidgets as widgets
import pandas as pd
import plotly.graph_objects as go

from .analysis import METRICS, ROUND_TRIP_METRICS, aggregate, measured
from .analysis.stats import primary_receive
from .fmt import IMPL_LABELS, fmt_size, system_summary
from .figures import IMPL_COLORS


def metrics_for(df: pd.DataFrame, mode: str) -> list[str]:
    """The metrics measured in this mode. Round-trip latencies exist only in latency mode: in
    throughput mode latency_us is the time per message, which the explorer does not offer as latency."""
    rows = df[df["mode"] == mode]
    return [m for m in METRICS if measured(rows, m) and (mode == "latency" or m not in ROUND_TRIP_METRICS)]


class Explorer:
    """Holds the widgets and one go.FigureWidget; `update()` changes its traces' data in place."""

    def __init__(self, df: pd.DataFrame, meta: dict):
        self.df = df
        modes = sorted(df["mode"].unique())
        self.mode = widgets.ToggleButtons(options=modes, value="throughput" if "throughput" in modes
                                          else modes[0], description="mode")
        self.metric = widgets.Dropdown(description="metric")
        self.impls_all = sorted(df["impl"].unique())
        self.impls = widgets.SelectMultiple(options=[(IMPL_LABELS.get(i, i), i) for i in self.impls_all],
                                            value=tuple(self.impls_all), description="impls", rows=3)
        self.x = widgets.ToggleButtons(options=[("message size", "msg_size"), ("threads", "threads")],
                                       value="msg_size", description="x axis")
        strategies = sorted(set(df["receive"].dropna())) or ["message"]
        # two receive strategies are two experiments: one at a time, never averaged together
        self.receive = widgets.ToggleButtons(options=strategies, value=primary_receive(df) if
                                             primary_receive(df) in strategies else strategies[0],
                                             description="receive", layout=widgets.Layout(
                                                 display="" if len(strategies) > 1 else "none"))
        self.filter = widgets.Dropdown(description="threads")
        self.fig = go.FigureWidget(layout=dict(
            height=500, template="plotly_white", margin=dict(t=120),
            title=dict(text="explorer", y=0.97, yanchor="top",
                       subtitle=dict(text=system_summary(meta), font=dict(size=11))),
            modebar=dict(orientation="v"),  # a horizontal modebar sits on top of the subtitle
            legend=dict(title="implementation")))
        for impl in self.impls_all:
            self.fig.add_scatter(x=[], y=[], name=IMPL_LABELS.get(impl, impl), mode="lines+markers",
                                 line=dict(color=IMPL_COLORS.get(impl)), error_y=dict(type="data", array=[]))
        self._busy = False
        self._refresh_metric()
        self._refresh_filter()
        for w in (self.metric, self.impls, self.mode, self.x, self.filter, self.receive):
            w.observe(self._changed, names="value")
        self.update()

    def _other(self) -> str:
        return "threads" if self.x.value == "msg_size" else "msg_size"

    def _refresh_metric(self) -> None:
        options = metrics_for(self.df, self.mode.value)
        current = self.metric.value
        self.metric.options = [(METRICS[m][0], m) for m in options]
        if options:
            self.metric.value = current if current in options else (
                "throughput_gbps" if "throughput_gbps" in options else options[0])

    def _refresh_filter(self) -> None:
        other = self._other()
        values = sorted(self.df.loc[self.df["mode"] == self.mode.value, other].unique())
        label = fmt_size if other == "msg_size" else str
        self.filter.description = "size" if other == "msg_size" else "threads"
        self.filter.options = [(label(v), int(v)) for v in values]
        if values:
            self.filter.value = int(values[0])

    def _changed(self, change) -> None:
        if self._busy:
            return
        self._busy = True  # refreshing options fires more changes: one update at the end
        try:
            if change["owner"] is self.mode:
                self._refresh_metric()
            if change["owner"] in (self.x, self.mode):
                self._refresh_filter()
        finally:
            self._busy = False
        self.update()

    def update(self) -> None:
        metric, x, other = self.metric.value, self.x.value, self._other()
        data = self.df[(self.df["mode"] == self.mode.value) & (self.df[other] == self.filter.value)
                       & self.df["impl"].isin(self.impls.value)
                       & (self.df["receive"].fillna("message") == self.receive.value)]
        agg = aggregate(data, metric, by=("impl", x)) if len(data) and metric else pd.DataFrame()
        with self.fig.batch_update():
            for trace, impl in zip(self.fig.data, self.impls_all):
                g = agg[agg["impl"] == impl].sort_values(x) if len(agg) else pd.DataFrame()
                shown = len(g) > 0
                trace.visible = shown
                trace.x = g[x].tolist() if shown else []
                trace.y = g[metric].tolist() if shown else []
                ci = g[f"{metric}_ci"] if shown else pd.Series(dtype=float)
                trace.error_y = dict(type="data", array=ci.fillna(0).tolist(), visible=bool(ci.notna().any()))
            fixed = fmt_size(self.filter.value) if other == "msg_size" else f"{self.filter.value} threads"
            label = METRICS[metric][0] if metric else "no metric"
            self.fig.layout.title.text = f"{label} ({self.mode.value} mode, {fixed})"
            self.fig.layout.yaxis.title.text = label
            self.fig.layout.xaxis.title.text = ("message size (bytes, log scale)" if x == "msg_size"
                                                else "client threads (connections)")
            self.fig.layout.xaxis.type = "log" if x == "msg_size" else "linear"
            if len(data) == 0:
                self.fig.layout.title.text += ": no data for this selection"

    def widget(self) -> widgets.Widget:
        controls = widgets.HBox([widgets.VBox([self.metric, self.mode, self.x, self.receive]),
                                 widgets.VBox([self.impls, self.filter])])
        return widgets.VBox([controls, self.fig])


def explore(df: pd.DataFrame, meta: dict) -> widgets.Widget:
    """The explorer as one displayable widget (a note when there is nothing to explore)."""
    if not any(measured(df, m) for m in METRICS):
        return widgets.HTML("<i>No successful measurements in this sweep: nothing to explore.</i>")
    return Explorer(df, meta).widget()

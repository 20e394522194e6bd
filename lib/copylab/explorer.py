"""Widget explorer: pick a metric, implementations, mode, x axis and a filter; the chart updates in place.

Needs a live kernel (JupyterLab), so the report's PDF and HTML leave it out (cells tagged "widget").
"""

from __future__ import annotations

import ipywidgets as widgets
import pandas as pd
import plotly.graph_objects as go

from .analysis import IMPL_LABELS, METRICS, aggregate, fmt_size, measured, system_summary
from .figures import IMPL_COLORS


class Explorer:
    """Holds the widgets and one go.FigureWidget; `update()` redraws its traces in place."""

    def __init__(self, df: pd.DataFrame, meta: dict):
        self.df = df
        metrics = [m for m in METRICS if measured(df, m)]
        self.metric = widgets.Dropdown(options=[(METRICS[m][0], m) for m in metrics],
                                       value="throughput_gbps" if "throughput_gbps" in metrics else metrics[0],
                                       description="metric")
        impls = sorted(df["impl"].unique())
        self.impls = widgets.SelectMultiple(options=[(IMPL_LABELS.get(i, i), i) for i in impls],
                                            value=tuple(impls), description="impls", rows=3)
        modes = sorted(df["mode"].unique())
        self.mode = widgets.ToggleButtons(options=modes, value="throughput" if "throughput" in modes
                                          else modes[0], description="mode")
        self.x = widgets.ToggleButtons(options=[("message size", "msg_size"), ("threads", "threads")],
                                       value="msg_size", description="x axis")
        self.filter = widgets.Dropdown(description="threads")
        self.fig = go.FigureWidget(layout=dict(
            height=480, template="plotly_white",
            title=dict(text="explorer", subtitle=dict(text=system_summary(meta), font=dict(size=11))),
            legend=dict(title="implementation")))
        for w in (self.metric, self.impls, self.mode, self.x):
            w.observe(self._changed, names="value")
        self.filter.observe(lambda _: self.update(), names="value")
        self._refresh_filter()
        self.update()

    def _other(self) -> str:
        return "threads" if self.x.value == "msg_size" else "msg_size"

    def _refresh_filter(self) -> None:
        other = self._other()
        values = sorted(self.df.loc[self.df["mode"] == self.mode.value, other].unique())
        label = (lambda v: fmt_size(v)) if other == "msg_size" else str
        self.filter.description = "size" if other == "msg_size" else "threads"
        self.filter.options = [(label(v), int(v)) for v in values]
        if values:
            self.filter.value = int(values[0])

    def _changed(self, change) -> None:
        if change["owner"] in (self.x, self.mode):
            self._refresh_filter()
        self.update()

    def update(self) -> None:
        metric, x, other = self.metric.value, self.x.value, self._other()
        data = self.df[(self.df["mode"] == self.mode.value) & (self.df[other] == self.filter.value)
                       & self.df["impl"].isin(self.impls.value)]
        agg = aggregate(data, metric, by=("impl", x)) if len(data) else pd.DataFrame()
        with self.fig.batch_update():
            self.fig.data = []
            for impl, g in (agg.groupby("impl") if len(agg) else []):
                g = g.sort_values(x)
                ci = g[f"{metric}_ci"]
                self.fig.add_scatter(x=g[x], y=g[metric], name=IMPL_LABELS.get(impl, impl),
                                     mode="lines+markers", line=dict(color=IMPL_COLORS.get(impl)),
                                     error_y=dict(type="data", array=ci.fillna(0),
                                                  visible=bool(ci.notna().any())))
            fixed = fmt_size(self.filter.value) if other == "msg_size" else f"{self.filter.value} threads"
            self.fig.layout.title.text = f"{METRICS[metric][0]} ({self.mode.value} mode, {fixed})"
            self.fig.layout.yaxis.title.text = METRICS[metric][0]
            self.fig.layout.xaxis.title.text = ("message size (bytes, log scale)" if x == "msg_size"
                                                else "client threads (connections)")
            self.fig.layout.xaxis.type = "log" if x == "msg_size" else "linear"
            if len(data) == 0:
                self.fig.layout.title.text += ": no data for this selection"

    def widget(self) -> widgets.Widget:
        controls = widgets.HBox([widgets.VBox([self.metric, self.mode, self.x]),
                                 widgets.VBox([self.impls, self.filter])])
        return widgets.VBox([controls, self.fig])


def explore(df: pd.DataFrame, meta: dict) -> widgets.Widget:
    """The explorer as one displayable widget (a note when there is nothing to explore)."""
    if not any(measured(df, m) for m in METRICS):
        return widgets.HTML("<i>No successful measurements in this sweep: nothing to explore.</i>")
    return Explorer(df, meta).widget()

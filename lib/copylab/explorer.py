"""Widget explorer: pick a metric, implementations, mode, x axis and a filter; the chart updates in place.

Needs a live kernel (JupyterLab), so the report's PDF and HTML leave it out (cells tagged "widget").

Surviving File > Save and a page reload: the browser then rebuilds the figure from the state the
kernel holds for it (the FigureWidget's `_widget_data` and `_widget_layout` traits), not from what it
drew. plotly writes those only when a FigureWidget is displayed on its own; inside a box of widgets,
as here, they would keep the figure as it was built, and a reload would show that: no traces, and
every later update pointing at traces the page does not have. So the figure is built with all its
traces, and `_sync_state()` writes its current data and layout back after every update and after
every change made in the browser (zoom, legend clicks).

Fitting the output area: a FigureWidget inside a box is drawn before the box is on the page, at
plotly's fallback width of 700 px, and never resized (plotly.py issue 5208): its view listens to no
resize at all. The figure has no width of its own (plotly's autosize, config `responsive`), and a small
widget beside it (`FollowWidth`) watches the explorer's width in the page and asks plotly.js to fit the
chart to it again whenever it changes (window, sidebar, a split view). Nothing of this goes through the
kernel, so no width is ever part of the figure's state or of the saved notebook.

Opened again without its kernel: the notebook's saved copy holds the explorer's last view as a plain
plotly figure and a line saying how to make it live (lab.SweepContents turns the widget into it on
save, widgetsnapshot.py), not widgets whose kernel is gone.
"""

from __future__ import annotations

from copy import deepcopy

import anywidget
import ipywidgets as widgets
import pandas as pd
import plotly.graph_objects as go
import traitlets

from . import escape
from .analysis import METRICS, ROUND_TRIP_METRICS, aggregate, measured
from .analysis.stats import primary_receive
from .figures import IMPL_COLORS
from .figures.style import (PEER_DASH, _compact_size, _size_ticks, hover_data, hover_template, interval_bars,
                            rep_dots, threads_ticks)
from .fmt import IMPL_LABELS, fmt_size, plural, system_summary
from .registry import peer_modes

HEIGHT = 460  # px; the width follows the notebook's output area
CSS_CLASS = "copylab-explorer"  # the explorer's outer box, where FollowWidth finds its chart
# the headline metric of each mode: what the explorer shows on switching to it
MODE_METRIC = {"throughput": "throughput_gbps", "latency": "latency_p50_us"}


class FollowWidth(anywidget.AnyWidget):
    """An invisible full-width strip: whenever its width changes (and when the chart has been drawn),
    the explorer's chart is fitted to the width again, in the browser (plotly's own resize of a
    responsive chart: Plots.resize, which keeps no width in the figure).

    It also carries the chart as last drawn, `copylab_figure` ({"data", "layout"}, plain JSON), which the
    notebook's save turns into the saved figure (widgetsnapshot): the FigureWidget's own copy in the
    browser (`_widget_data`) is edited there by plotly's updates and was found without some traces'
    points; this one only the kernel writes."""

    _esm = """
    export default {
      render({ el }) {
        let timer = null, last = -1;
        const chart = () => el.closest(".%s")?.querySelector(".js-plotly-plot");
        const fit = () => {
          const gd = chart();
          if (!gd || !gd._fullLayout) return;
          last = Math.floor(el.getBoundingClientRect().width);
          if (gd._responsiveChartHandler) gd._responsiveChartHandler();
          else window.dispatchEvent(new Event("resize"));
        };
        const later = () => { clearTimeout(timer); timer = setTimeout(fit, 50); };
        const watch = new ResizeObserver(() => {
          if (Math.floor(el.getBoundingClientRect().width) !== last) later();
        });
        watch.observe(el);
        const drawn = (event) => { if (event.detail?.element === chart()) later(); };
        document.addEventListener("plotlywidget-after-render", drawn);
        return () => { watch.disconnect(); clearTimeout(timer);
                       document.removeEventListener("plotlywidget-after-render", drawn); };
      }
    };
    """ % CSS_CLASS

    copylab_figure = traitlets.Dict().tag(sync=True)

    def __init__(self):
        super().__init__(layout=widgets.Layout(width="100%", height="0px", margin="0"))


def _plain(value):
    """A figure's properties as plain JSON values: numpy's arrays and numbers as lists and numbers."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if hasattr(value, "tolist"):  # numpy arrays and scalars
        return _plain(value.tolist())
    return value


def metrics_for(df: pd.DataFrame, mode: str) -> list[str]:
    """The metrics measured in this mode. Round-trip latencies exist only in latency mode: in
    throughput mode latency_us is the time per message, which the explorer does not offer as latency."""
    rows = df[df["mode"] == mode]
    return [m for m in METRICS if measured(rows, m) and (mode == "latency" or m not in ROUND_TRIP_METRICS)]


def _flow(children, **layout) -> widgets.HBox:
    """A row of controls that wraps onto the next line when the output area is narrow (never a
    scrollbar)."""
    return widgets.HBox(children, layout=widgets.Layout(flex_flow="row wrap", align_items="center",
                                                        overflow="visible", margin="0", **layout))


def _toggles(description: str, options, value) -> widgets.ToggleButtons:
    return widgets.ToggleButtons(options=options, value=value, description=description,
                                 style={"description_width": "initial", "button_width": "auto"},
                                 layout=widgets.Layout(width="auto", margin="2px 16px 2px 0"))


def _trace_name(impl: str, sweep: str | None) -> str:
    """The implementation, and with two sweeps its sweep's label (plotly reads names as HTML: escaped)."""
    return IMPL_LABELS.get(impl, impl) + (f" ({escape.html(sweep)})" if sweep is not None else "")


def _figure(keys: list[tuple[str, str | None]]) -> go.FigureWidget:
    """The explorer's figure, every trace it will ever have: per implementation (and sweep, when two are
    loaded: the second one's lines dashed), a line of means (interval bars from MIN_REPS_FOR_INTERVAL
    repetitions on) and, after all the lines, the dots of its repetitions where there are fewer (as the
    report draws them). No width: it follows the page (FollowWidth)."""
    sweeps = list(dict.fromkeys(sweep for _, sweep in keys))
    fig = go.FigureWidget(
        data=[go.Scatter(x=[], y=[], name=_trace_name(impl, sweep), mode="lines+markers",
                         legendgroup=_trace_name(impl, sweep),
                         line=dict(color=IMPL_COLORS.get(impl),
                                   dash="dash" if sweeps.index(sweep) else PEER_DASH.get(impl, "solid")),
                         error_y=dict(type="data", array=[]))
              for impl, sweep in keys]
        + [go.Scatter(x=[], y=[], mode="markers", legendgroup=_trace_name(impl, sweep), showlegend=False,
                      name=f"{_trace_name(impl, sweep)}: repetitions")
           for impl, sweep in keys],
        layout=LAYOUT)
    fig._config = {"responsive": True, "displaylogo": False}
    return fig


LAYOUT = dict(
    height=HEIGHT, autosize=True, template="plotly_white", margin=dict(t=72, l=70, r=16, b=8), font=dict(size=13),
    # the title just above the plot, below the band where the modebar appears
    title=dict(text="", x=0, xref="paper", xanchor="left", y=1, yref="paper", yanchor="bottom", pad=dict(b=12),
               font=dict(size=15)),
    # the legend at the bottom of the figure, in the figure's own coordinates: plotly keeps that band for
    # it and lays the x axis' ticks and title out above it, however tall they grow (a legend placed under
    # the plot in its coordinates, at y=-0.2, met the axis title when the ticks took more room)
    legend=dict(orientation="h", yref="container", y=0, yanchor="bottom", x=0, xref="container",
                xanchor="left"),
    hoverlabel=dict(align="left"))


def _draw(line, dots, g: pd.DataFrame, rows: pd.DataFrame, impl: str, x: str, metric: str) -> None:
    """One implementation's traces: its means `g` (aggregate's frame) with the report's bars (the
    interval on the log scale, from five repetitions on, never below zero), and the dots of the
    repetitions `rows` where there are fewer. Each hover opens with the trace's name: the
    implementation, and with two sweeps the sweep's label."""
    shown = len(g) > 0
    line.visible = shown
    line.x = g[x].tolist() if shown else []
    line.y = g[metric].tolist() if shown else []
    bars = interval_bars(g, metric) if shown else dict(visible=False)
    line.error_y = {k: (v.tolist() if isinstance(v, pd.Series) else v) for k, v in bars.items()}
    line.customdata = _named(hover_data(g, impl, metric), line.name) if shown else []
    line.hovertemplate = hover_template(metric) if metric else None
    few = rep_dots(rows[rows[metric].notna()], g, impl, x, metric) if shown else None
    dots.visible = few is not None
    dots.x, dots.y = (list(few.x), list(few.y)) if few is not None else ([], [])
    if few is not None:
        dots.marker, dots.hovertemplate = few.marker, few.hovertemplate
        dots.customdata = _named([list(row) for row in few.customdata], line.name)


def _named(customdata: list[list], name: str) -> list[list]:
    """hover_data()'s rows (first column: the implementation's name) named after the trace instead."""
    return [[name, *row[1:]] for row in customdata]


def _x_axis(fig: go.FigureWidget, xs: pd.Series, x: str) -> None:
    """Ticks at every measured size (compact labels) or thread count, and the axis' title."""
    if x == "msg_size":
        sizes = sorted(set(int(v) for v in xs))
        ticks = _size_ticks(sizes, compact=True)
        ticks.pop("tickfont", None)  # the report's narrow panels need it smaller; this one is wide
        fig.layout.xaxis.update(**ticks)
        fig.layout.xaxis.title.text = "message size (bytes, log scale; 1K = 1024)" if any(
            _compact_size(s) != str(s) for s in sizes) else "message size (bytes, log scale)"
    else:
        fig.layout.xaxis.update(**threads_ticks(xs))
        fig.layout.xaxis.title.text = "client threads (connections)"


def _joined(df: pd.DataFrame, other: pd.DataFrame | None, labels: tuple[str, str]) -> pd.DataFrame:
    """One frame of both sweeps' rows, each marked with its sweep's label (copylab compare), or df alone."""
    if other is None:
        return df
    return pd.concat([df.assign(sweep=labels[0]), other.assign(sweep=labels[1])], ignore_index=True)


class Explorer:
    """Holds the widgets and one go.FigureWidget; `update()` changes its traces' data in place."""

    def __init__(self, df: pd.DataFrame, meta: dict, other: pd.DataFrame | None = None,
                 labels: tuple[str, str] = ("A", "B"), other_meta: dict | None = None):
        # two sweeps (copylab compare): both frames' rows, each marked with its sweep's label, and a selector
        self.labels = tuple(labels) if other is not None else (None,)
        self.df = df = _joined(df, other, labels)
        self.sweep = _toggles("sweep", [*self.labels, "both"] if other is not None else [None], self.labels[0])
        self.sweep.layout.display = "" if other is not None else "none"
        modes = sorted(df["mode"].unique())
        self.mode = _toggles("mode", modes, "throughput" if "throughput" in modes else modes[0])
        self.metric = widgets.Dropdown(description="metric", style={"description_width": "initial"},
                                       layout=widgets.Layout(width="auto", max_width="100%",
                                                             margin="2px 16px 2px 0"))
        self.x = _toggles("x axis", [("message size", "msg_size"), ("threads", "threads")], "msg_size")
        strategies = sorted(set(df["receive"].dropna())) or ["message"]
        # two receive strategies are two experiments: one at a time, never averaged together
        self.receive = _toggles("receive", strategies, primary_receive(df) if primary_receive(df) in strategies
                                else strategies[0])
        self.receive.layout.display = "" if len(strategies) > 1 else "none"
        self.filter = widgets.Dropdown(description="at", style={"description_width": "initial"},
                                       layout=widgets.Layout(width="auto", margin="2px 16px 2px 0"))
        self.impls_all = sorted(df["impl"].unique())
        # one checkbox per implementation: every one visible, its full name, no ctrl-click needed; one
        # with nothing in the chosen mode is disabled and says why (_refresh_impls)
        self.impl_boxes = {impl: widgets.Checkbox(value=True, description=IMPL_LABELS.get(impl, impl),
                                                  indent=False, layout=widgets.Layout(width="auto",
                                                                                      margin="0 16px 0 0"))
                           for impl in self.impls_all}
        self.host = widgets.HTML(_hosts(meta, other_meta if other is not None else None, labels))
        self.keys = [(impl, sweep) for sweep in self.labels for impl in self.impls_all]
        self.fig = _figure(self.keys)
        self.follow = FollowWidth()
        self._busy = False
        self._refresh_impls()
        self._refresh_metric()
        self._refresh_filter()
        for w in (self.metric, self.mode, self.x, self.filter, self.receive, self.sweep, *self.impl_boxes.values()):
            w.observe(self._changed, names="value")
        # what the browser changes (zoom, a legend click) is state too: written back once plotly
        # has applied it (it then resets the message to None)
        self.fig.observe(self._browser_changed, names=["_js2py_relayout", "_js2py_restyle", "_js2py_update"])
        self.update()

    @property
    def impls(self) -> tuple[str, ...]:
        return tuple(impl for impl, box in self.impl_boxes.items() if box.value)

    def _other(self) -> str:
        return "threads" if self.x.value == "msg_size" else "msg_size"

    def _refresh_metric(self, previous_mode: str | None = None) -> None:
        """The chosen mode's metrics; the one shown stays, unless it was the previous mode's headline
        (throughput, or the p50 round trip): then the new mode's headline, as the title then says."""
        options = metrics_for(self.df, self.mode.value)
        current = self.metric.value
        if previous_mode is not None and current == MODE_METRIC.get(previous_mode):
            current = MODE_METRIC.get(self.mode.value)
        self.metric.options = [(METRICS[m][0], m) for m in options]
        if options:
            headline = MODE_METRIC.get(self.mode.value)
            self.metric.value = current if current in options else (headline if headline in options else options[0])

    def _refresh_impls(self) -> None:
        """An implementation with no rows in the chosen mode (a reference program measures one mode
        only) is disabled, unticked, and says why; back in a mode it has, it is ticked again."""
        present = set(self.df.loc[self.df["mode"] == self.mode.value, "impl"])
        for impl, box in self.impl_boxes.items():
            label = IMPL_LABELS.get(impl, impl)
            if impl in present:
                if box.disabled:
                    box.disabled, box.value, box.description, box.tooltip = False, True, label, None
                continue
            # a reference program measures one mode; anything else simply has no runs in this one
            why = f"measures {peer_modes()[impl]} only" if impl in peer_modes() else f"no {self.mode.value} runs"
            box.value, box.disabled = False, True
            box.description = box.tooltip = f"{label}: {why}"

    def _refresh_filter(self) -> None:
        other = self._other()
        values = sorted(self.df.loc[self.df["mode"] == self.mode.value, other].unique())
        label = fmt_size if other == "msg_size" else (lambda v: plural(v, "thread"))
        self.filter.options = [(label(int(v)), int(v)) for v in values]
        if values:
            self.filter.value = int(values[0])

    def _changed(self, change) -> None:
        if self._busy:
            return
        self._busy = True  # refreshing options fires more changes: one update at the end
        try:
            if change["owner"] is self.mode:
                self._refresh_metric(previous_mode=change["old"])
                self._refresh_impls()
            if change["owner"] in (self.x, self.mode):
                self._refresh_filter()
        finally:
            self._busy = False
        self.update()

    def _browser_changed(self, change) -> None:
        if change["new"] is None:
            self._sync_state()

    def _sync_state(self) -> None:
        """What plotly's own display does for a FigureWidget shown alone: the kernel's copy of the
        figure, which a reloaded page draws, becomes the figure as it is now."""
        self.fig._widget_layout = deepcopy(self.fig._layout_obj._props)
        self.fig._widget_data = deepcopy(self.fig._data)
        self.follow.copylab_figure = {"data": _plain(self.fig._data), "layout": _plain(self.fig._layout_obj._props)}

    def update(self) -> None:
        metric, x, other = self.metric.value, self.x.value, self._other()
        data = self.df[(self.df["mode"] == self.mode.value) & (self.df[other] == self.filter.value)
                       & self.df["impl"].isin(self.impls)
                       & (self.df["receive"].fillna("message") == self.receive.value)]
        if self.sweep.value not in (None, "both"):
            data = data[data["sweep"] == self.sweep.value]
        lines, dots = self.fig.data[:len(self.keys)], self.fig.data[len(self.keys):]
        with self.fig.batch_update():
            for sweep in self.labels:
                mine = data if sweep is None else data[data["sweep"] == sweep]
                agg = aggregate(mine, metric, by=("impl", x)) if len(mine) and metric else pd.DataFrame()
                if len(agg):
                    agg[other] = self.filter.value  # the fixed one, for the hovers
                for line, reps, (impl, key_sweep) in zip(lines, dots, self.keys):
                    if key_sweep == sweep:
                        _draw(line, reps, agg[agg["impl"] == impl].sort_values(x) if len(agg) else pd.DataFrame(),
                              mine, impl, x, metric)
            fixed = fmt_size(self.filter.value) if other == "msg_size" else plural(self.filter.value, "thread")
            label = METRICS[metric][0] if metric else "no metric"
            title = f"{label}, {self.mode.value} mode, at {fixed}"
            self.fig.layout.title.text = title + (": no data for this selection" if len(data) == 0 else "")
            self.fig.layout.yaxis.title.text = label
            self.fig.layout.yaxis.rangemode = "tozero"
            _x_axis(self.fig, self.df.loc[self.df["mode"] == self.mode.value, x], x)
        self._sync_state()

    def widget(self) -> widgets.Widget:
        controls = widgets.VBox([
            _flow([self.metric]),
            _flow([self.sweep, self.mode, self.x, self.filter, self.receive]),
            _flow([widgets.Label("implementations:", layout=widgets.Layout(margin="0 8px 0 0")),
                   *self.impl_boxes.values()]),
            self.host], layout=widgets.Layout(margin="0", overflow="visible"))
        box = widgets.VBox([controls, self.follow, self.fig], layout=widgets.Layout(width="100%", overflow="visible"))
        box.add_class(CSS_CLASS)
        return box


LIVE_NOTE = ("The controls answer while this notebook's kernel runs; the notebook saves the chart as drawn, "
             "and opened again it shows that chart: run the notebook (Run > Run All Cells) to make them answer.")


def _hosts(meta: dict, other_meta: dict | None, labels: tuple[str, str]) -> str:
    """Where the rows were measured (each sweep's host, when two are loaded), and LIVE_NOTE."""
    if other_meta is None:
        lines = [f"measured on {system_summary(meta)}."]
    else:
        lines = [f"{side} ({label}): measured on {system_summary(m)}."
                 for side, label, m in (("A", labels[0], meta), ("B", labels[1], other_meta))]
    return "<small>" + "<br>".join(escape.html(line) for line in [*lines, LIVE_NOTE]) + "</small>"


def explore(df: pd.DataFrame, meta: dict, other: pd.DataFrame | None = None,
            labels: tuple[str, str] = ("A", "B"), other_meta: dict | None = None) -> widgets.Widget:
    """The explorer as one displayable widget (a note when there is nothing to explore); with `other`, two
    sweeps (labels: their names; other_meta: the second one's meta.json) with a selector: either one, or
    both (the second one's lines dashed)."""
    if not any(measured(df, m) for m in METRICS):
        return widgets.HTML("<i>No successful measurements in this sweep: nothing to explore.</i>")
    return Explorer(df, meta, other, labels, other_meta).widget()

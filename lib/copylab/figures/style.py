"""What every figure shares: rendering set-up, fonts and sizes for the PDF, colours, axis helpers,
the faceted grid, and the note that stands in for a figure whose metric this host cannot measure."""

from __future__ import annotations

import math
import re
import warnings
from dataclasses import dataclass

import pandas as pd
import plotly.graph_objects as go
import plotly.io as pio
from plotly.io._base_renderers import NotebookRenderer as _NotebookRenderer
from plotly.subplots import make_subplots

from .. import escape, registry, tools
from ..analysis import METRICS, aggregate, measured
from ..analysis.stats import MIN_REPS_FOR_INTERVAL, one_receive, unmeasured_pointer
from ..fmt import IMPL_LABELS, fmt_size, md_escape, plural, system_summary

# every implementation's colour, from native/registry.def
IMPL_COLORS = {impl.name: impl.colour for impl in registry.all_impls()}
# the peers are drawn as references: dashed or dotted (grey, in the registry)
PEER_DASH = dict(zip(registry.names(kind="peer"), ("dash", "dot", "dashdot", "longdash")))
# static width the PDF images get (height: each figure's own); the HTML/JupyterLab figure is responsive.
# The PDF scales the image to about 420 pt, so at 760 px one pixel is about 0.55 pt: FONT sizes
# below keep tick labels near 7 pt and titles near 8-9 pt there.
PDF_WIDTH, PDF_HEIGHT = 760, 520
FONT = dict(base=14, tick=13, title=17, subtitle=12, panel=14)
HOW_TO_MEASURE = ("Re-run the sweep on a host where perf can read hardware counters: bare metal, "
                  "or a virtual machine with a virtual PMU (e.g. KVM/QEMU with `-cpu host`).")

_rendering_ready = False


def setup_rendering() -> None:
    """Make every displayed figure visible everywhere: interactive in JupyterLab (mimetype),
    interactive in nbconvert HTML (notebook: plotly.js embedded once, offline) and a vector PDF
    image for nbconvert's LaTeX exporter. plotly_mimetype alone is invisible to nbconvert."""
    global _rendering_ready
    if _rendering_ready:
        return
    pio.templates.default = "plotly_white"
    pio.renderers["copylab_notebook"] = _OfflineNotebookRenderer(**_renderer_settings(pio.renderers["notebook"]))
    if tools.find("chromium") is None:
        # no browser for kaleido: interactive figures only; the report command says what to install
        pio.renderers.default = "plotly_mimetype+copylab_notebook"
        _rendering_ready = True
        return
    import kaleido

    # one Chromium for all images: later renders take ~0.2 s instead of a browser start each
    kaleido.start_sync_server(mathjax=False, silence_warnings=True)
    # plotly passes per-call options the shared server ignores; harmless, so keep it out of the report
    warnings.filterwarnings("ignore", message="The kopts argument is ignored")
    pio.renderers["pdf"].width = PDF_WIDTH
    pio.renderers.default = "plotly_mimetype+copylab_notebook+pdf"
    _rendering_ready = True


class _OfflineNotebookRenderer(_NotebookRenderer):
    """plotly's notebook renderer (plotly.js embedded once, offline) without the MathJax script it
    always adds from a CDN: the figures carry no LaTeX, and report.html must not reach the network."""

    def to_mimebundle(self, fig_dict):
        bundle = super().to_mimebundle(fig_dict)
        bundle["text/html"] = _CDN_MATHJAX.sub("", bundle["text/html"])
        return bundle


_CDN_MATHJAX = re.compile(r'<script[^>]*src="https://cdnjs\.cloudflare\.com/ajax/libs/mathjax/[^"]*"[^>]*></script>')


def _renderer_settings(renderer) -> dict:
    return {key: getattr(renderer, key) for key in ("connected", "config", "auto_play", "post_script",
                                                     "animation_opts", "include_plotlyjs")}


@dataclass
class FigureNote:
    """Stands in for a figure whose metric this host could not measure."""

    title: str
    missing: str
    why: str
    how: str = HOW_TO_MEASURE

    def text(self) -> str:
        return (f"**Figure not drawn — {self.title}.** Missing: {self.missing}. "
                f"Why: {self.why}. How to get it: {self.how}")

    def _repr_markdown_(self) -> str:
        return "> " + md_escape(self.text())

    def __repr__(self) -> str:
        return self.text()


def _style(fig: go.Figure, meta: dict, title: str, height: int = PDF_HEIGHT,
           legend_title: str = "implementation") -> go.Figure:
    """Title + the system configuration as subtitle, fonts readable at PDF width, and the
    legend at the bottom of the canvas (below any shared axis title)."""
    fig.update_layout(
        title=dict(text=title, font=dict(size=FONT["title"]),
                   subtitle=dict(text=escape.html(system_summary(meta)), font=dict(size=FONT["subtitle"]))),
        height=height, margin=dict(t=100, l=80, r=30, b=140),
        legend=dict(title=legend_title, orientation="h", yref="container", y=0.01, yanchor="bottom",
                    x=0, font=dict(size=FONT["tick"])),
        font=dict(size=FONT["base"]),
    )
    fig.for_each_xaxis(lambda ax: ax.update(tickfont=dict(size=ax.tickfont.size or FONT["tick"]),
                                            title_font=dict(size=FONT["base"])))
    fig.update_yaxes(tickfont=dict(size=FONT["tick"]), title_font=dict(size=FONT["base"]))
    # subplot titles and row titles are annotations too, which make_subplots sizes 16 (too wide for three
    # panels side by side); shared axis titles and annotations sized on purpose keep their size
    for a in fig.layout.annotations:
        if a.name not in ("x-title", "y-title") and a.font.size in (None, _SUBPLOT_TITLE_SIZE):
            a.font.size = FONT["panel"]
    return fig


_SUBPLOT_TITLE_SIZE = 16  # what make_subplots gives its titles


def _size_ticks(sizes, compact: bool = False) -> dict:
    """Log x axis with a tick at every grid size; `compact` labels (64, 1K, 64K) fit narrow panels."""
    sizes = sorted(set(int(s) for s in sizes))
    label = _compact_size if compact else fmt_size
    ticks = dict(type="log", tickvals=sizes, ticktext=[label(s) for s in sizes], tickangle=0)
    if compact:  # several panels side by side: 6 labels in a narrow panel must not touch
        ticks["tickfont"] = dict(size=FONT["tick"] - 2)
    return ticks


def _compact_size(n: int) -> str:
    for unit, scale in (("M", 1 << 20), ("K", 1 << 10)):
        if n >= scale and n % scale == 0:
            return f"{n // scale}{unit}"
    return str(n)


def _log_ticks(values) -> dict:
    """Labelled ticks on a log axis: 1-2-5 per decade, or only the powers of ten when that would be
    crowded (plotly's default labels every minor digit, 2 3 4 5 ...); the axis runs from the labelled
    tick at or below the lowest value to the one at or above the highest, so every point is read
    between two labels (a lowest label above the slowest run's dot left it unread)."""
    v = pd.Series(values).dropna()
    v = v[v > 0]
    if v.empty:
        return {}
    lo, hi = math.floor(math.log10(v.min())), math.ceil(math.log10(v.max()))

    def framing(mults):
        candidates = [m * 10.0 ** k for k in range(lo - 1, hi + 2) for m in mults]
        bottom = max(t for t in candidates if t <= v.min() * 1.0001)
        top = min(t for t in candidates if t >= v.max() / 1.0001)
        return [t for t in candidates if bottom <= t <= top]
    ticks = framing((1, 2, 5))
    if len(ticks) > 7:
        ticks = framing((1,))
    pad = 0.02 * (math.log10(ticks[-1]) - math.log10(ticks[0]) or 1)
    return dict(tickvals=ticks, ticktext=[_tick_label(t) for t in ticks], minor=dict(showgrid=False),
                range=[math.log10(ticks[0]) - pad, math.log10(ticks[-1]) + pad])


def _linear_ticks(values, most: int = 6) -> dict:
    """A linear axis from zero to the first labelled tick at or above the highest value (plotly's own range
    ended at 13.5 under a top label of 10, leaving the 11-13 Gbit/s lines unread), in 1-2-5 steps giving
    at most `most` labels."""
    v = pd.Series(values).dropna()
    v = v[v > 0]
    if v.empty:
        return dict(rangemode="tozero")
    high = float(v.max())
    step = next(m * 10.0 ** k for k in range(math.floor(math.log10(high / most)), math.ceil(math.log10(high)) + 2)
                for m in (1, 2, 5) if m * 10.0 ** k * most >= high)
    top = math.ceil(high / step - 1e-9) * step
    return dict(tick0=0, dtick=step, range=[0, top * 1.02])


def _tick_label(t: float) -> str:
    t = float(f"{t:.3g}")
    return f"{int(t):,}" if t >= 1 else f"{t:g}"


def _shared_title(fig: go.Figure, axis: str, text: str, y: float = 0.5) -> None:
    """One axis title for a whole grid of panels (per-panel titles repeat and collide):
    'x' under the bottom row's tick labels, 'y' left of the first column's."""
    if axis == "x":
        fig.add_annotation(name="x-title", text=text, xref="paper", yref="paper", x=0.5, y=0,
                           xanchor="center", yanchor="top", yshift=-26, showarrow=False,
                           font=dict(size=FONT["base"]))
    else:
        fig.add_annotation(name="y-title", text=text, xref="paper", yref="paper", x=0, y=y,
                           xanchor="right", yanchor="middle", xshift=-48, textangle=-90,
                           showarrow=False, font=dict(size=FONT["base"]))


# a reference program's points: a larger hollow diamond, so one measured where the study's paths sit
# (a latency reference's single 1-thread point among A1-A3's at 70-90 µs) still shows around their markers
PEER_MARKER = dict(symbol="diamond-open", size=11, line=dict(width=2))


def _impl_trace(g: pd.DataFrame, impl: str, x: str, metric: str, show_legend: bool) -> go.Scatter:
    return go.Scatter(
        x=g[x], y=g[metric], mode="lines+markers", name=IMPL_LABELS.get(impl, impl),
        legendgroup=impl, showlegend=show_legend,
        line=dict(color=IMPL_COLORS.get(impl), dash=PEER_DASH.get(impl, "solid")),
        marker=PEER_MARKER if impl in PEER_DASH else None,
        error_y=interval_bars(g, metric),
        customdata=hover_data(g, impl, metric), hovertemplate=hover_template(metric),
    )


def interval_bars(g: pd.DataFrame, metric: str) -> dict:
    """Error bars that respect the scale: the 95% interval on the log scale (aggregate's _lo/_hi), only
    for points with MIN_REPS_FOR_INTERVAL repetitions or more; the others draw their repetitions as
    dots (rep_dots) instead. Never below zero."""
    lo, hi = g.get(f"{metric}_lo"), g.get(f"{metric}_hi")
    if lo is None or hi is None:
        return dict(visible=False)
    use = (g[f"{metric}_n"] >= MIN_REPS_FOR_INTERVAL) & lo.notna() & hi.notna()
    upper = (hi - g[metric]).clip(lower=0).where(use, 0)
    lower = (g[metric] - lo).clip(lower=0).where(use, 0)
    return dict(type="data", symmetric=False, array=upper, arrayminus=lower, visible=bool(use.any()))


def rep_dots(rows: pd.DataFrame, agg: pd.DataFrame, impl: str, x: str, metric: str) -> go.Scatter | None:
    """The repetitions of impl's points that have fewer than MIN_REPS_FOR_INTERVAL of them, as small dots
    beside the mean (rows: the measured rows of the same panel); None when every point has an interval."""
    few = agg[(agg["impl"] == impl) & (agg[f"{metric}_n"] < MIN_REPS_FOR_INTERVAL) & (agg[f"{metric}_n"] > 1)]
    mine = rows[(rows["impl"] == impl) & rows[x].isin(few[x]) & rows[metric].notna()]
    if mine.empty:
        return None
    what, unit = metric_words(metric)
    return go.Scatter(x=mine[x], y=mine[metric], mode="markers", legendgroup=impl, showlegend=False,
                      marker=dict(color=IMPL_COLORS.get(impl), size=5, opacity=0.45, symbol="circle-open"),
                      name=f"{IMPL_LABELS.get(impl, impl)}: repetitions",
                      customdata=[[IMPL_LABELS.get(impl, impl), fmt_size(s), plural(int(t), "thread"), int(r)]
                                  for s, t, r in zip(mine["msg_size"], mine["threads"], mine["rep"])],
                      hovertemplate=("<b>%{customdata[0]}</b><br>%{customdata[1]}, %{customdata[2]}<br>"
                                     f"{what} in repetition %{{customdata[3]}}: %{{y:.4g}}"
                                     f"{'' if unit in ('%', '') else ' ' + unit}<extra></extra>"))


# the unit a hover names after a value, for the metrics whose label has none in parentheses
UNITS = {"cycles_per_byte": "cycles/B", "srv_cycles_per_byte": "cycles/B", "cli_cycles_per_byte": "cycles/B",
         "l1_misses_per_byte": "misses/B", "llc_misses_per_byte": "misses/B",
         "context_switches_per_mb": "switches/MB"}


def metric_words(metric: str) -> tuple[str, str]:
    """(what, unit) of a metric for a hover: 'throughput (Gbit/s)' -> ('throughput', 'Gbit/s')."""
    label = METRICS[metric][0] if metric in METRICS else metric.replace("_", " ")
    found = re.fullmatch(r"(.*?) \(([^()]*)\)", label)
    return (found.group(1), found.group(2)) if found else (label, UNITS.get(metric, ""))


def hover_template(metric: str) -> str:
    """What a point says on hover: implementation, size, threads, the value with its unit and n.
    Its customdata comes from hover_data()."""
    what, unit = metric_words(metric)
    unit = unit if unit in ("%", "") else f" {unit}"
    return ("<b>%{customdata[0]}</b><br>%{customdata[1]}, %{customdata[2]}<br>"
            f"{what}: %{{y:.4g}}{unit} (mean of n=%{{customdata[3]}})<extra></extra>")


def hover_data(g: pd.DataFrame, impl: str, metric: str) -> list[list]:
    """customdata rows for hover_template: implementation, size, threads, n. A frame averaged over
    the thread counts (no threads column) says so."""
    sizes = [fmt_size(v) for v in g["msg_size"]] if "msg_size" in g else ["all sizes"] * len(g)
    threads = ([plural(int(v), "thread") for v in g["threads"]] if "threads" in g
               else ["mean over thread counts"] * len(g))
    counts = [int(n) for n in g[f"{metric}_n"]] if f"{metric}_n" in g else ["?"] * len(g)
    return [[IMPL_LABELS.get(impl, impl), s, t, n] for s, t, n in zip(sizes, threads, counts)]


def threads_ticks(threads, log: bool = False) -> dict:
    """A thread-count axis with a tick at every measured count, 1 included; log-spaced when asked or when
    the counts span more than a factor 8 (1, 2, 4 ... 256 would crowd the small ones)."""
    threads = sorted(set(int(t) for t in threads))
    spread = len(threads) > 1 and (log or threads[-1] / max(threads[0], 1) > 8)
    ticks = dict(type="log" if spread else "linear", tickvals=threads, ticktext=[str(t) for t in threads],
                 tickangle=0, minor=dict(showgrid=False))
    if spread:  # the axis ends just past the grid's counts: a marker or line elsewhere must not stretch it
        lo, hi = math.log10(max(threads[0], 1)), math.log10(threads[-1])
        pad = 0.06 * (hi - lo)
        ticks["range"] = [lo - pad, hi + pad]
    return ticks


# Faceted figures with several metric rows share one y title (the unit); each row is named on the
# right by what differs between the rows.
ROW_NAMES = {
    "srv_cycles_per_byte": "sender", "cli_cycles_per_byte": "receiver",
    "cycles_per_byte": "sender + receiver", "srv_cpu_ns_per_byte": "sender",
    "cli_cpu_ns_per_byte": "receiver", "l1_misses_per_byte": "L1-dcache",
    "llc_misses_per_byte": "LLC",
}


def _is_spread(values, factor: float = 30) -> bool:
    """Log scale when values span orders of magnitude (per-byte costs from 64 B to 64 KiB, p99
    latencies far above p50), so the small ones stay readable."""
    v = pd.Series(values).dropna()
    return bool(len(v) and (v > 0).all() and v.max() / v.min() > factor)


# a panel of its own scale goes log past a tenfold spread: on a linear axis the lowest line (A3 at 64 B,
# 0.03-0.06 Gbit/s under A1's 0.46) lies flat along zero and its changes cannot be read
PANEL_LOG_SPREAD = 10


def _grid(df: pd.DataFrame, meta: dict, mode: str, metrics: list[str], x: str, facet: str,
          title: str, note_title: str, y_title: str | None = None):
    """Rows = metrics, columns = values of `facet`; one line per implementation, mean ± 95% CI.

    Faceted by thread count, the panels of a row share their y axis (same quantity, comparable
    ranges); faceted by message size, each panel keeps its own linear-or-log range, since
    throughput at 64 B and at 64 KiB differ a hundredfold."""
    data = one_receive(df)
    data = data[data["mode"] == mode]
    shown = [m for m in metrics if measured(data, m)]
    if not shown:
        return _note_for(df, meta, note_title, metrics, mode)
    agg = aggregate(data, shown)
    facets = sorted(agg[facet].unique())
    share_y = facet == "threads"
    multi = len(shown) > 1
    log_rows = [r for r, m in enumerate(shown, start=1) if share_y and _is_spread(agg[m])]
    mixed = 0 < len(log_rows) < len(shown)
    row_titles = [ROW_NAMES.get(m, m) + (" (log)" if mixed and r in log_rows else "")
                  for r, m in enumerate(shown, start=1)]
    # panels of their own scale: log where the panel's values spread past PANEL_LOG_SPREAD, and so named
    # (several metric rows under shared column titles cannot name a panel: there, only orders of magnitude)
    spread = 30 if multi else PANEL_LOG_SPREAD
    log_panels = set() if share_y else {(m, fv) for m in shown for fv in facets
                                        if _is_spread(agg[agg[facet] == fv][m], spread)}
    labels = [f"{'size' if facet == 'msg_size' else facet} = {fmt_size(v) if facet == 'msg_size' else v}"
              + (" (log)" if not multi and (shown[0], v) in log_panels else "") for v in facets]
    # one metric over many facets: wrap into rows of 3 so the panels stay wide enough to read
    cols = 3 if not multi and len(facets) > 4 else len(facets)
    rows = len(shown) if multi else math.ceil(len(facets) / cols)
    fig = make_subplots(rows=rows, cols=cols, shared_xaxes=share_y, shared_yaxes=share_y,
                        horizontal_spacing=0.04 if share_y else 0.06,
                        vertical_spacing=0.06 if multi else (0.14 if rows > 1 else 0.0),
                        column_titles=labels if multi or rows == 1 else None,
                        subplot_titles=None if multi or rows == 1 else labels,
                        row_titles=row_titles if multi else None)
    for m_i, metric in enumerate(shown):
        for f_i, fv in enumerate(facets):
            r, c = (m_i + 1, f_i + 1) if multi else (f_i // cols + 1, f_i % cols + 1)
            panel, runs = agg[agg[facet] == fv], data[data[facet] == fv]
            _panel_traces(fig, panel, runs, x, metric, m_i == 0 and f_i == 0, r, c)
            if not share_y:
                if (metric, fv) in log_panels:  # ticks around the runs' dots too, not only the means
                    fig.update_yaxes(type="log", **_log_ticks(pd.concat([panel[metric], runs[metric]])), row=r, col=c)
                else:
                    fig.update_yaxes(**_linear_ticks(pd.concat([panel[metric], runs[metric]])), row=r, col=c)
        if m_i + 1 in log_rows:
            fig.update_yaxes(type="log", **_log_ticks(pd.concat([agg[metric], data[metric]])),
                             row=m_i + 1)
    _axis_titles(fig, agg, x, len(facets), y_title or METRICS[shown[0]][0], bool(log_rows), mixed, share_y,
                 bool(log_panels) and not multi)
    missing = [m for m in metrics if m not in shown]
    if missing:
        fig.add_annotation(text="not measured: " + ", ".join(METRICS[m][0] for m in missing),
                           xref="paper", yref="paper", x=1, y=1.12, showarrow=False,
                           font=dict(size=FONT["subtitle"], color="#a00"), xanchor="right")
    height = 250 + (200 if multi else 260) * rows
    return _style(fig, meta, title, height=height)


def _axis_titles(fig: go.Figure, agg: pd.DataFrame, x: str, facets: int, y_text: str, log_rows: bool,
                 mixed: bool, share_y: bool, log_panels: bool = False) -> None:
    """The x axis's ticks and title, and the y title saying which scale the panels use."""
    if x == "msg_size":
        fig.update_xaxes(**_size_ticks(agg["msg_size"], compact=facets > 2))
        compact = "; 1K = 1024" if facets > 2 else ""
        _shared_title(fig, "x", f"message size (bytes, log scale{compact})")
    else:
        fig.update_xaxes(**threads_ticks(agg["threads"], log=True))
        _shared_title(fig, "x", "client threads (connections, log scale)")
    if log_rows and not mixed:
        y_text = _with_note(y_text, "log scale")
    elif mixed:
        y_text = _with_note(y_text, "log scale in rows marked log")
    elif not share_y:
        y_text = _with_note(y_text, "each panel its own scale" + ("; log where marked" if log_panels else ""))
    _shared_title(fig, "y", y_text)


def _panel_traces(fig: go.Figure, panel: pd.DataFrame, rows: pd.DataFrame, x: str, metric: str, legend: bool,
                  r: int, c: int) -> None:
    """One panel of _grid: each implementation's means, and its repetitions where there are few."""
    for impl, g in panel.groupby("impl"):
        g = g.sort_values(x)
        fig.add_trace(_impl_trace(g, impl, x, metric, legend), row=r, col=c)
        dots = rep_dots(rows, g, impl, x, metric)
        if dots is not None:
            fig.add_trace(dots, row=r, col=c)


def _with_note(title: str, note: str) -> str:
    """'throughput (Gbit/s)' + 'log scale' -> 'throughput (Gbit/s, log scale)'."""
    return title[:-1] + f", {note})" if title.endswith(")") else f"{title} ({note})"


def _note_for(df, meta, title, metrics, mode) -> FigureNote:
    raw = {"cycles_per_byte": "cycles", "srv_cycles_per_byte": "srv_cycles",
           "cli_cycles_per_byte": "cli_cycles", "l1_misses_per_byte": "l1_misses",
           "llc_misses_per_byte": "llc_misses"}
    missing = ", ".join(METRICS[m][0] for m in metrics)
    if not (df["mode"] == mode).any():
        return FigureNote(title, missing, f"the sweep has no {mode}-mode rows",
                          f"include mode {mode} in the sweep's parameter grid")
    counter = next((raw[m] for m in metrics if m in raw), None)
    if counter:
        how = HOW_TO_MEASURE
        if counter in ("l1_misses", "llc_misses"):  # the PMU-free evidence of the cache levels
            how += (" Without a PMU, a grid that varies `working_set` across this host's cache levels "
                    "(`params/cache.yaml`) shows the caches' effect on throughput and CPU per byte instead.")
        return FigureNote(title, missing, unmeasured_pointer(df, meta, counter), how)
    return FigureNote(title, missing, "the sweep recorded no values for "
                      + ", ".join(metrics) + " (results.csv has only the required columns?)",
                      "run the sweep with this project's engine, which records them")



"""The figures Part D asks for (throughput vs size, latency vs threads, cache misses vs size, CPU
cycles per byte) and their companions (CPU time per byte, throughput vs threads). The peers, when
the sweep measured them, appear as dashed grey reference series."""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .. import escape
from ..analysis import aggregate, measured
from ..analysis.stats import one_receive
from ..fmt import fmt_size, md_escape
from .style import (FONT, threads_ticks, _grid, _impl_trace, _is_spread, _log_ticks, _note_for, _shared_title,
                    _style, _with_note, rep_dots)


def throughput_vs_size(df: pd.DataFrame, meta: dict):
    return _grid(df, meta, "throughput", ["throughput_gbps"], "msg_size", "threads",
                 "Throughput vs message size, one panel per thread count",
                 "throughput vs message size")


def cache_misses_vs_size(df: pd.DataFrame, meta: dict):
    return _grid(df, meta, "throughput", ["l1_misses_per_byte", "llc_misses_per_byte"],
                 "msg_size", "threads",
                 "L1 and LLC load misses per byte vs message size",
                 "cache misses per byte vs message size",
                 y_title="load misses per byte (misses/B, sender + receiver)")


def cycles_per_byte_vs_size(df: pd.DataFrame, meta: dict):
    tsc = meta.get("cycles_source") == "tsc"
    rate = tsc_rate_ghz(df) if tsc else math.nan
    src = (f" (TSC ticks = CPU time × {rate:.2f} GHz: no PMU)" if rate == rate else " (TSC ticks: no PMU)") if tsc else ""
    return _grid(df, meta, "throughput",
                 ["srv_cycles_per_byte", "cli_cycles_per_byte", "cycles_per_byte"],
                 "msg_size", "threads",
                 f"CPU cycles per byte: sender, receiver, total{src}",
                 "CPU cycles per byte vs message size", y_title="CPU cycles per byte (cycles/B)")


@dataclass
class Merged:
    """Stands in for a figure that would repeat another under a different name, saying which and why."""

    title: str
    text: str

    def _repr_markdown_(self) -> str:
        return "> " + md_escape(f"**{self.title}: shown above.** {self.text}")

    def __repr__(self) -> str:
        return f"{self.title}: {self.text}"


def tsc_rate_ghz(df: pd.DataFrame) -> float:
    """TSC ticks per ns of task-clock over the rows that have both (the TSC rate when cycles_source is
    tsc); NaN without them."""
    rows = df[(df["srv_cycles"] > 0) & (df["srv_task_clock_ms"] > 0)]
    return float((rows["srv_cycles"] / (rows["srv_task_clock_ms"] * 1e6)).median()) if len(rows) else math.nan


def cpu_time_per_byte_vs_size(df: pd.DataFrame, meta: dict):
    tsc = meta.get("cycles_source") == "tsc" and measured(df[df["mode"] == "throughput"], "srv_cycles_per_byte")
    if tsc:
        rate = tsc_rate_ghz(df)
        return Merged("CPU time per byte", "Without a PMU the cycles above are TSC ticks counted while each program "
                      f"runs, i.e. its CPU time (perf task-clock) at the TSC rate ({rate:.2f} GHz here, cycles ÷ "
                      "task-clock): this figure would repeat the cycles figure, divided by that rate. The answers "
                      "quote CPU time in ns per byte.")
    return _grid(df, meta, "throughput", ["srv_cpu_ns_per_byte", "cli_cpu_ns_per_byte"],
                 "msg_size", "threads",
                 "CPU time per byte (perf task-clock): sender and receiver",
                 "CPU time per byte vs message size", y_title="CPU time per byte (ns/B)")


LATENCY_LOG_SPREAD = 4


def latency_vs_threads(df: pd.DataFrame, meta: dict):
    """Latency-mode p50 (the summary's criterion) per thread count on its own scale, one panel per message
    size, on a log thread axis. p99 is left out: its tail stretches the axis and flattens the p50 lines
    the decisions are about (results.csv keeps latency_p99_us; the explorer plots it)."""
    lat = one_receive(df)
    lat = lat[lat["mode"] == "latency"]
    center = "latency_p50_us" if measured(lat, "latency_p50_us") else "latency_us"
    if not measured(lat, center):
        return _note_for(df, meta, "latency vs thread count", [center], "latency")
    agg = aggregate(lat, [center])
    sizes = sorted(agg["msg_size"].unique())
    cols = min(len(sizes), 3)
    rows = math.ceil(len(sizes) / cols)
    fig = make_subplots(rows=rows, cols=cols, subplot_titles=[f"size = {fmt_size(s)}" for s in sizes],
                        shared_yaxes="all", horizontal_spacing=0.03, vertical_spacing=0.12)
    for i, size in enumerate(sizes):
        r, c = i // cols + 1, i % cols + 1
        for impl, g in agg[agg["msg_size"] == size].groupby("impl"):
            g = g.sort_values("threads")
            fig.add_trace(_impl_trace(g, impl, "threads", center, i == 0), row=r, col=c)
            dots = rep_dots(lat[lat["msg_size"] == size], g, impl, "threads", center)
            if dots is not None:
                fig.add_trace(dots, row=r, col=c)
    fig.update_xaxes(**threads_ticks(agg["threads"], log=True))
    _shared_title(fig, "x", "client threads (connections, log scale)")
    y_text = "round-trip latency, " + ("p50" if center == "latency_p50_us" else "mean") + " (µs)"
    # log past a fourfold spread: the panels share one axis, and a round trip that grows with the thread
    # count (a saturated sender serving each connection in turn) would flatten the 1-4 thread values,
    # where the summary's decisions lie, into the bottom third of a linear one
    if _is_spread(agg[center], factor=LATENCY_LOG_SPREAD):
        # framed on every pass drawn, not only the means (a pass below the lowest mean fell off the axis)
        fig.update_yaxes(type="log", **_log_ticks(pd.concat([agg[center], pd.to_numeric(lat[center], errors="coerce")])))
        y_text = _with_note(y_text, "log scale")
    _shared_title(fig, "y", y_text)
    title = ("Round-trip latency vs threads: median (p50; p99 in results.csv)" if center == "latency_p50_us"
             else "Round-trip latency vs threads: mean (no percentiles recorded)")
    return _style(fig, meta, title, height=250 + 240 * rows)


def throughput_vs_threads(df: pd.DataFrame, meta: dict):
    """Scaling: total throughput vs client threads, the host's core count marked."""
    params = meta.get("params") if isinstance(meta.get("params"), dict) else {}
    pinned = params.get("pin_server") not in (None, "") and params.get("pin_client") not in (None, "")
    # pinned, every sender thread shares its one CPU from the first connection on: a core-count line
    # would suggest sharing starts beyond it
    title = ("Throughput vs client threads, one panel per message size" if not pinned else
             # meta.json's values reach plotly's HTML-like title: escaped as the subtitle is
             f"Throughput vs client threads (all senders on CPU {escape.html(params['pin_server'])}, all receivers "
             f"on CPU {escape.html(params['pin_client'])})")
    fig = _grid(df, meta, "throughput", ["throughput_gbps"], "threads", "msg_size", title, "throughput vs threads")
    cores = meta.get("cores")
    threads = sorted(one_receive(df)["threads"].dropna().unique())
    if isinstance(fig, go.Figure) and cores and not pinned and threads and threads[0] <= cores <= threads[-1]:
        _core_line(fig, float(cores))
    return fig


def _core_line(fig: go.Figure, cores: float) -> None:
    """A dotted line at the core count in every panel, named beside it at the panel's top. Drawn as a
    shape and an annotation of its own: add_vline's annotation takes the count itself as its x, which on
    a log axis is 10^cores (off the panel, stretching the axis)."""
    fig.add_vline(x=cores, line_dash="dot", line_color="#555", row="all", col="all")
    for ref in sorted({t.xaxis or "x" for t in fig.data}):  # the panels drawn (not a grid's empty slot)
        x = math.log10(cores) if fig.layout["xaxis" + ref[1:]].type == "log" else cores
        fig.add_annotation(x=x, xref=ref, y=1, yref=f"{ref.replace('x', 'y')} domain", text=f"{cores:g} cores",
                               showarrow=False, xanchor="left", yanchor="top", xshift=3,
                               font=dict(size=FONT["tick"] - 2, color="#555"))



"""The figures Part D asks for (throughput vs size, latency vs threads, cache misses vs size, CPU
cycles per byte) and their companions (CPU time per byte, throughput vs threads). The peers, when
the sweep measured them, appear as dashed grey reference series."""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..analysis import aggregate, measured
from ..analysis.stats import one_receive
from ..fmt import IMPL_LABELS, fmt_size, impl_name, md_escape, plural
from .style import (IMPL_COLORS, _grid, _impl_trace, _is_spread, _log_ticks, _note_for, _shared_title,
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


def latency_vs_threads(df: pd.DataFrame, meta: dict):
    """Latency-mode p50 per thread count with a band up to p99, one panel per message size."""
    lat = one_receive(df)
    lat = lat[lat["mode"] == "latency"]
    center = "latency_p50_us" if measured(lat, "latency_p50_us") else "latency_us"
    if not measured(lat, center):
        return _note_for(df, meta, "latency vs thread count", [center], "latency")
    metrics = [center] + (["latency_p99_us"] if measured(lat, "latency_p99_us") else [])
    agg = aggregate(lat, metrics)
    sizes = sorted(agg["msg_size"].unique())
    cols = min(len(sizes), 3)
    rows = math.ceil(len(sizes) / cols)
    # one y range for all panels: latencies of every size are comparable at a glance
    fig = make_subplots(rows=rows, cols=cols, subplot_titles=[f"size = {fmt_size(s)}" for s in sizes],
                        shared_yaxes="all", horizontal_spacing=0.03, vertical_spacing=0.12)
    for i, size in enumerate(sizes):
        r, c = i // cols + 1, i % cols + 1
        for impl, g in agg[agg["msg_size"] == size].groupby("impl"):
            g = g.sort_values("threads")
            color = IMPL_COLORS.get(impl)
            if "latency_p99_us" in metrics:
                # band from p50 up to p99: invisible lower edge, filled upper edge
                fig.add_trace(go.Scatter(x=g["threads"], y=g[center], mode="lines", line=dict(width=0),
                                         showlegend=False, legendgroup=impl, hoverinfo="skip"), row=r, col=c)
                fig.add_trace(go.Scatter(x=g["threads"], y=g["latency_p99_us"], mode="lines",
                                         line=dict(width=0), fill="tonexty", fillcolor=_alpha(color, 0.10),
                                         name=f"{impl_name(impl)} {'p50' if center == 'latency_p50_us' else 'mean'}–p99 band", legendgroup=impl,
                                         showlegend=i == 0, customdata=[plural(int(t), "thread") for t in g["threads"]],
                                         hovertemplate=(f"<b>{IMPL_LABELS.get(impl, impl)}</b><br>{fmt_size(size)}, "
                                                        "%{customdata}<br>latency p99: %{y:.4g} µs<extra></extra>")),
                              row=r, col=c)
            fig.add_trace(_impl_trace(g, impl, "threads", center, i == 0), row=r, col=c)
            dots = rep_dots(lat[lat["msg_size"] == size], g, impl, "threads", center)
            if dots is not None:
                fig.add_trace(dots, row=r, col=c)
        fig.update_xaxes(tickvals=sorted(agg["threads"].unique()), row=r, col=c)
    _shared_title(fig, "x", "client threads (connections)")
    band = pd.concat([agg[m] for m in metrics])
    y_text = "round-trip latency (µs)"
    if _is_spread(band):
        fig.update_yaxes(type="log", **_log_ticks(band))
        y_text = _with_note(y_text, "log scale")
    _shared_title(fig, "y", y_text)
    if "latency_p99_us" in metrics:
        title = ("Round-trip latency vs threads: median (p50) line, band up to p99"
                 if center == "latency_p50_us" else
                 "Round-trip latency vs threads: mean line, band up to p99")
    else:
        title = "Round-trip latency vs threads: " + ("median (p50)" if center == "latency_p50_us"
                                                     else "mean (no percentiles recorded)")
    return _style(fig, meta, title, height=250 + 240 * rows)


def _alpha(hex_color: str, a: float) -> str:
    h = hex_color.lstrip("#")
    return f"rgba({int(h[0:2], 16)},{int(h[2:4], 16)},{int(h[4:6], 16)},{a})"


def throughput_vs_threads(df: pd.DataFrame, meta: dict):
    """Scaling: total throughput vs client threads, the host's core count marked."""
    fig = _grid(df, meta, "throughput", ["throughput_gbps"], "threads", "msg_size",
                "Throughput vs client threads, one panel per message size",
                "throughput vs threads")
    cores = meta.get("cores")
    if isinstance(fig, go.Figure) and cores:
        fig.add_vline(x=float(cores), line_dash="dot", line_color="#555",
                      annotation_text=f"{cores} cores", annotation_position="top left",
                      annotation_font_size=10, row="all", col="all")
    return fig



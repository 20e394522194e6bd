"""figures.py, diagrams.py and explorer.py on SYNTHETIC results: what every figure must state,
notes instead of empty charts, and the explorer updating in place."""

from __future__ import annotations

import math
import re

import pandas as pd
import plotly.graph_objects as go
import pytest

from copylab import analysis, diagrams, explorer, figures
from copylab.figures.style import PDF_WIDTH
from data.analysis import synthetic


@pytest.fixture(scope="module")
def full(tmp_path_factory):
    return analysis.load_results(synthetic.write_sweep(tmp_path_factory.mktemp("figs-full"),
                                                       receives=("message", "bulk"), profiles=True))


_STUDIES: dict = {}


def study_of(df, meta):
    """The Study of (df, meta), built once per pair of objects (the module's fixtures hand every parametrized
    test the same ones; ~2 s each under make check's workers). The cache holds df and meta themselves, so
    their ids are not reused while it stands."""
    key = (id(df), id(meta))
    if key not in _STUDIES:
        _STUDIES[key] = (df, meta, analysis.study(df, meta))
    return _STUDIES[key][2]


# every figure as (df, meta) -> figure: those showing the Study's comparisons get the Study of (df, meta)
EVERY = [*figures.ALL_FIGURES, *((name, lambda df, meta, make=make: make(study_of(df, meta)))
                                 for name, make in figures.STUDY_FIGURES)]
_FIGURES: dict = {}


def figure_of(name, make, full):
    """The figure name of the module's full results, built once: four parametrized tests read every
    figure (units, hovers, titles, legend), and building them all took ~3.5 s of CPU each time (make
    check's minute, issue 48). The tests only read it."""
    if name not in _FIGURES:
        _FIGURES[name] = make(*full)
    return _FIGURES[name]


@pytest.fixture(scope="module")
def bare(tmp_path_factory):
    folder = synthetic.write_sweep(tmp_path_factory.mktemp("figs-bare"), reps=1, counters=False)
    return analysis.load_results(folder)


@pytest.mark.parametrize("name, make", EVERY, ids=[n for n, _ in EVERY])
def test_every_figure_states_units_legend_and_system(full, name, make):
    df, meta = full
    fig = figure_of(name, make, full)
    assert isinstance(fig, go.Figure), fig
    layout = fig.layout
    assert layout.title.text and analysis.system_summary(meta) == layout.title.subtitle.text
    assert "SYNTHETIC CPU" in layout.title.subtitle.text and "2 cores" in layout.title.subtitle.text
    def titles(prefix):
        return [layout[k].title.text for k in layout if k.startswith(prefix) and layout[k].title.text]

    # a faceted figure carries one shared title per axis (annotation), a small one axis titles
    x_titles = titles("xaxis") + [a.text for a in layout.annotations if a.name == "x-title"]
    y_titles = titles("yaxis") + [a.text for a in layout.annotations if a.name == "y-title"]
    assert x_titles and y_titles
    # titles must not repeat side by side ("client threads (connections)client threads ...")
    assert len(x_titles) == len(set(x_titles)) and len(y_titles) == len(set(y_titles)), (x_titles, y_titles)
    # log axes label a few round values, not every minor digit (2 3 4 5 ... 2 3 4 5)
    for k in layout:
        if k.startswith("yaxis") and layout[k].type == "log":
            assert layout[k].tickvals and len(layout[k].tickvals) <= 7, (k, layout[k].tickvals)
    assert all("(" in t for t in x_titles + y_titles if "per byte" not in t and "per message" not in t
               and "÷" not in t), (x_titles, y_titles)  # a unit in brackets
    assert sum(1 for t in fig.data if t.showlegend is not False and t.name) >= 2


@pytest.mark.parametrize("name, make", EVERY, ids=[n for n, _ in EVERY])
def test_every_hover_names_what_it_shows(full, name, make):
    """A hover in report.html says which implementation, at which size (and thread count), the
    value with its unit; the CPU buckets in the legend's words, not as column names."""
    fig = figure_of(name, make, full)
    hovered = [t for t in fig.data if t.hoverinfo != "skip"]
    assert hovered and all(t.hovertemplate for t in hovered), name
    for t in hovered:
        shown = t.hovertemplate + " ".join(str(v) for row in (t.customdata if t.customdata is not None else [])
                                            for v in (row if isinstance(row, (list, tuple)) else [row]))
        assert re.search(r"\d+ (B|KiB|MiB)\b|%\{x\}|%\{customdata", t.hovertemplate), (name, t.hovertemplate)
        assert "1 threads" not in shown, (name, shown)
        if name == "cpu-breakdown":
            assert t.name in t.hovertemplate and "_" not in t.name, t.hovertemplate
    if name == "throughput-vs-size":
        assert "Gbit/s" in fig.data[0].hovertemplate and "n=" in fig.data[0].hovertemplate
        assert list(fig.data[0].customdata[0]) == [analysis.IMPL_LABELS["a1"], "64 B", "1 thread", 3]


@pytest.mark.slow
def test_few_repetitions_are_drawn_as_points_and_intervals_never_cross_zero(full, bare, tmp_path):
    fig = figures.throughput_vs_size(*full)  # 3 repetitions: the repetitions as dots, no interval
    means = [t for t in fig.data if t.mode == "lines+markers"]
    dots = [t for t in fig.data if t.mode == "markers"]
    assert means and not any(t.error_y.visible for t in means)
    assert dots and all(t.showlegend is False for t in dots)
    fig = figures.throughput_vs_size(*bare)  # 1 repetition: neither
    assert not any(t.error_y.visible for t in fig.data) and all(t.mode == "lines+markers" for t in fig.data)
    # 5 repetitions with a spread that would put a Student-t interval below zero: log-scale bars, above zero
    rows = [{"impl": "a1", "mode": "throughput", "msg_size": 16384, "threads": 8, "rep": r, "throughput_gbps": v,
             "bytes": 1e9, "duration_s": 1.0} for r, v in enumerate((0.5, 20.0, 1.0, 15.0, 2.0))]
    (tmp_path / "results.csv").write_text(pd.DataFrame(rows).reindex(columns=analysis.REQUIRED_COLUMNS).to_csv(index=False))
    df, meta = analysis.load_results(tmp_path)
    agg = analysis.aggregate(df, "throughput_gbps")
    assert (agg["throughput_gbps"] - agg["throughput_gbps_ci"]).iloc[0] < 0  # what Student t would draw
    trace = figures.throughput_vs_size(df, meta).data[0]
    assert trace.error_y.visible
    assert trace.y[0] - trace.error_y.arrayminus[0] > 0


def test_the_ratio_figure_marks_losses_as_well_as_wins(full):
    fig = figures.ratio_to_baseline(study_of(*full))
    drawn = [t for t in fig.data if t.x[0] is not None]  # not the legend's entries
    symbols = {s for t in drawn for s in t.marker.symbol}
    assert "triangle-down" in symbols  # a decided loss (A3 at 64 B in the synthetic tables)
    assert fig.layout.yaxis.type == "log"
    assert all(low > 0 for t in drawn for low in (y - m for y, m in zip(t.y, t.error_y.arrayminus)))
    # each path's legend entry is its colour and line with one plain marker: plotly drew the first
    # point's (▼ for both paths, which both lose at 64 B)
    assert all(t.showlegend is False for t in drawn)
    keyed = [t for t in fig.data if t.x[0] is None and t.showlegend is not False and "/" in (t.name or "")]
    assert len(keyed) == 2 and {t.marker.symbol for t in keyed} == {"circle"}


def test_tsc_cycles_are_not_drawn_twice(full):
    df, meta = full
    merged = figures.cpu_time_per_byte_vs_size(df, {**meta, "cycles_source": "tsc"})
    assert "would repeat the cycles figure" in merged._repr_markdown_()
    assert "TSC ticks" in figures.cycles_per_byte_vs_size(df, {**meta, "cycles_source": "tsc"}).layout.title.text


def test_unmeasured_metrics_become_notes_that_say_why_and_how(bare):
    df, meta = bare
    for make in (figures.cache_misses_vs_size, figures.cycles_per_byte_vs_size):
        note = make(df, meta)
        assert isinstance(note, figures.FigureNote)
        md = note._repr_markdown_()
        # the reason in a few words (the no-PMU line is said in full once, in the report's opening: N5)
        assert "this host gives perf no hardware counters" in md and "perf can read no hardware" not in md
        assert "virtual machine without PMU" not in md and "says why" not in md
        assert "vPMU" in md or "virtual PMU" in md
    # task-clock still works without a PMU: CPU time per byte is drawn
    assert isinstance(figures.cpu_time_per_byte_vs_size(df, meta), go.Figure)


def test_core_count_is_marked_on_scaling_figure(full):
    df, meta = full
    fig = figures.throughput_vs_threads(df, {k: v for k, v in meta.items() if k != "params"})
    assert any(s.x0 == 2.0 and s.x1 == 2.0 for s in fig.layout.shapes)
    assert any(a.text == "2 cores" for a in fig.layout.annotations)
    # pinned sides share one CPU each from the first connection: no core line, the pinning said instead
    pinned = figures.throughput_vs_threads(df, {**meta, "params": {"pin_server": "0", "pin_client": "1"}})
    assert not any(a.text == "2 cores" for a in pinned.layout.annotations)
    assert "all senders on CPU 0, all receivers on CPU 1" in pinned.layout.title.text
    hostile = figures.throughput_vs_threads(df, {**meta, "params": {"pin_server": "<b>0</b>", "pin_client": "1"}})
    assert "<b>" not in hostile.layout.title.text and "&lt;b&gt;0" in hostile.layout.title.text


def test_diagrams_number_the_copies():
    texts = {impl: " ".join(a.text for a in make().layout.annotations) for impl, make in diagrams.DIAGRAMS}
    assert "COPY 3" in texts["a1"] and "memcpy" in texts["a1"]
    assert "COPY 2" in texts["a2"] and "COPY 3" not in texts["a2"] and "memcpy" not in texts["a2"]
    assert "DEFERRED" in texts["a3"].upper() and "MSG_ERRQUEUE" in texts["a3"]


def test_explorer_updates_its_figure_in_place(full):
    df, meta = full
    ex = explorer.Explorer(df, meta)
    fig = ex.fig
    # a line per implementation, then a trace per implementation for its repetitions' dots
    assert len(fig.data) == 6 and fig.layout.xaxis.type == "log"
    ex.x.value = "threads"
    assert ex.fig is fig and fig.layout.xaxis.type == "linear"
    assert [label for label, _ in ex.filter.options] == ["64 B", "1 KiB", "4 KiB", "16 KiB", "64 KiB"]
    assert list(fig.data[0].x) == list(synthetic.THREADS)
    traces = list(fig.data)
    for impl, box in ex.impl_boxes.items():
        box.value = impl == "a2"
    # the same traces throughout (a reloaded page restores them); only a2's is shown
    assert list(fig.data) == traces
    assert [t.name for t in fig.data[:3] if t.visible] == [analysis.IMPL_LABELS["a2"]]
    ex.metric.value = "llc_misses_per_byte"
    assert "LLC" in fig.layout.yaxis.title.text
    ex.impl_boxes["a2"].value = False
    assert not any(t.visible for t in fig.data) and "no data" in fig.layout.title.text
    # the saved view outlives the kernel; the explorer says its controls need one (Run All after a restart)
    assert "run the notebook (Run &gt; Run All Cells) to make them answer" in ex.host.value


def _saved(fig):
    """What a reloaded page draws: the figure state the kernel holds for the browser."""
    return fig._widget_data, fig._widget_layout


def test_explorer_keeps_the_state_a_reloaded_page_draws_current(full):
    df, meta = full
    ex = explorer.Explorer(df, meta)
    data, layout = _saved(ex.fig)
    # never touched: every trace with its points, the current title
    assert len(data) == 6 and all(len(t["x"]) == len(synthetic.SIZES) for t in data[:3])
    assert layout["title"]["text"] == ex.fig.layout.title.text and "1 thread" in layout["title"]["text"]
    ex.x.value = "threads"
    ex.impl_boxes["a3"].value = False
    data, layout = _saved(ex.fig)
    assert [list(t["x"]) for t in data[:3] if t["visible"]] == [list(synthetic.THREADS)] * 2
    assert [t["visible"] for t in data[:3]] == [True, True, False]
    assert layout["xaxis"]["title"]["text"] == "client threads (connections)"
    # the chart as drawn, kept apart for the notebook's save (widgetsnapshot): plain JSON, the same traces
    drawn = ex.follow.copylab_figure
    assert [list(t["x"]) for t in drawn["data"][:3]] == [list(t.x) for t in ex.fig.data[:3]]
    assert drawn["layout"]["title"]["text"] == ex.fig.layout.title.text
    import json
    json.dumps(drawn)  # no numpy left in it
    # no width anywhere: the chart follows the page (explorer.FollowWidth, in the browser), and a saved
    # notebook carries none
    assert ex.fig.layout.width is None and "width" not in _saved(ex.fig)[1]
    assert ex.fig.layout.autosize and ex.fig._config["responsive"]


def test_switching_the_mode_shows_that_modes_headline_metric(full):
    """Throughput in throughput mode, the p50 round trip in latency mode, and the title says which; a
    metric chosen by hand that the other mode has stays."""
    df, meta = full
    ex = explorer.Explorer(df, meta)
    assert ex.metric.value == "throughput_gbps" and ex.fig.layout.title.text.startswith("throughput (Gbit/s)")
    ex.mode.value = "latency"
    assert ex.metric.value == "latency_p50_us"
    assert ex.fig.layout.title.text.startswith("latency p50 (µs), latency mode")
    ex.mode.value = "throughput"
    assert ex.metric.value == "throughput_gbps" and "throughput mode" in ex.fig.layout.title.text
    ex.metric.value = "srv_cpu_ns_per_byte"
    ex.mode.value = "latency"
    assert ex.metric.value == "srv_cpu_ns_per_byte" and "latency mode" in ex.fig.layout.title.text


def test_explorer_axes_and_hovers_read_like_the_report(full):
    df, meta = full
    ex = explorer.Explorer(df, meta)
    axis = ex.fig.layout.xaxis
    assert list(axis.tickvals) == list(synthetic.SIZES)
    assert list(axis.ticktext) == ["64", "1K", "4K", "16K", "64K"] and "1K = 1024" in axis.title.text
    a1 = ex.fig.data[0]
    assert list(a1.customdata[0]) == [analysis.IMPL_LABELS["a1"], "64 B", "1 thread", 3]
    assert "Gbit/s" in a1.hovertemplate and "n=%{customdata[3]}" in a1.hovertemplate
    ex.x.value = "threads"
    axis = ex.fig.layout.xaxis
    assert list(axis.tickvals) == list(synthetic.THREADS) and 1 in axis.tickvals
    assert [row[2] for row in ex.fig.data[0].customdata] == ["1 thread", "2 threads", "4 threads", "8 threads"]
    assert "threads" not in ex.fig.layout.title.text  # at 64 B: the fixed value is a size
    ex.x.value = "msg_size"
    ex.filter.value = 1
    assert ex.fig.layout.title.text.endswith("at 1 thread")


def test_explorer_intervals_respect_the_scale(full):
    """As the report's figures: below five repetitions the repetitions themselves as dots and no bar;
    from five on the interval on the log scale, which never reaches below zero."""
    df, meta = full
    ex = explorer.Explorer(df, meta)  # three repetitions per point
    lines, dots = ex.fig.data[:3], ex.fig.data[3:]
    assert not any(t.error_y.visible for t in lines)
    assert all(d.visible and len(d.x) == 3 * len(synthetic.SIZES) for d in dots)
    # eight repetitions at one point of a1, one of them near zero: a symmetric t interval would go below
    # zero there; the log-scale one does not
    point = df[(df["impl"] == "a1") & (df["mode"] == "throughput") & (df["msg_size"] == 64) & (df["threads"] == 1)
               & (df["receive"].fillna("message") == "message")]
    extra = pd.concat([point] * 3, ignore_index=True).head(5).assign(rep=lambda f: range(3, 3 + len(f)))
    extra.loc[extra.index[0], "throughput_gbps"] = 0.01
    many = pd.concat([df, extra], ignore_index=True)
    ex = explorer.Explorer(many, meta)
    a1 = ex.fig.data[0]
    assert a1.error_y.visible and a1.error_y.symmetric is False
    assert a1.y[0] - a1.error_y.arrayminus[0] > 0
    assert list(ex.fig.data[3].x).count(64) == 0  # no dots where the interval is drawn


def test_explorer_disables_a_reference_program_without_data_in_the_mode(full):
    df, meta = full
    peer = df[(df["impl"] == "a1") & (df["mode"] == "throughput")].assign(impl="iperf3")
    ex = explorer.Explorer(pd.concat([df, peer], ignore_index=True), meta)
    box = ex.impl_boxes["iperf3"]
    assert box.value and not box.disabled
    ex.mode.value = "latency"
    assert box.disabled and not box.value and "measures throughput only" in box.description
    assert not any(t.visible for t, impl in zip(ex.fig.data, ex.impls_all) if impl == "iperf3")
    ex.mode.value = "throughput"
    assert box.value and not box.disabled and box.description == analysis.IMPL_LABELS["iperf3"]


def test_explorer_offers_round_trips_only_in_latency_mode(full):
    df, meta = full
    ex = explorer.Explorer(df, meta)
    assert ex.mode.value == "throughput"
    offered = [value for _, value in ex.metric.options]
    assert "latency_us" not in offered and "latency_p50_us" not in offered  # time per message, not a round trip
    ex.mode.value = "latency"
    offered = [value for _, value in ex.metric.options]
    assert {"latency_us", "latency_p50_us", "latency_p99_us"} <= set(offered)


def test_no_successful_rows_gives_notes_tables_and_an_empty_explorer(tmp_path):
    folder = synthetic.write_sweep(tmp_path, reps=1)
    lines = (folder / "results.csv").read_text().splitlines()
    (folder / "results.csv").write_text(lines[0] + "\n")  # header only: every point failed or none ran
    df, meta = analysis.load_results(folder)
    for _, make in EVERY:
        assert isinstance(make(df, meta), figures.FigureNote)
    from copylab.analysis import sections
    assert "Q4" in sections.summary(analysis.study(df, meta))
    assert "nothing to explore" in explorer.explore(df, meta).value


def test_where_the_cpu_goes_says_the_profiled_points_thread_count():
    """The profile figure averages its profiled points: its title says at which thread counts, from the data."""
    from copylab.figures.profiles import profiled_threads
    from data.analysis import evidence as ev
    one = ev.frame([ev.profile_row(i, 65536, {"user_copy": 0.1}) for i in ("a1", "a2", "a3")])
    assert profiled_threads(one) == "1 thread"
    assert "profiled at 1 thread;" in figures.cpu_breakdown(one, {}).layout.title.text
    two = ev.frame([ev.profile_row("a1", 65536, {"user_copy": 0.1}, threads=t) for t in (1, 8)])
    assert profiled_threads(two) == "1 and 8 threads"


def test_where_the_cpu_goes_lists_only_the_buckets_its_runs_have_and_copies_in_warm_colours():
    from copylab.figures.profiles import BUCKET_COLORS
    from data.analysis import evidence as ev
    rows = ev.frame([ev.profile_row(i, 65536, {"user_copy": 0.1, "tcp_send": 0.3}) for i in ("a1", "a2", "a3")])
    legend = {t.name for t in figures.cpu_breakdown(rows, {}).data if t.showlegend}
    assert {"user copy", "tcp send"} <= legend and not legend & {"uring submit", "page cache ref", "receive map"}
    for copy in ("user_copy", "kernel_copy_from_user", "kernel_copy_to_user", "deferred_copy"):
        r, g, b = (int(BUCKET_COLORS[copy][i:i + 2], 16) for i in (1, 3, 5))
        assert r > g and r > b, copy  # red dominates: a warm colour (olive #bcbd22 did not)


# --- what a reader of the PDF must be able to read (issue 33 and its second reading) ---

def _plot_area(fig) -> tuple[float, float]:
    """The plotting area in pixels at the PDF's width: (width, height)."""
    m = fig.layout.margin
    return PDF_WIDTH - m.l - m.r, fig.layout.height - m.t - m.b


def _text_px(text: str, size: float) -> float:
    """A label's width: 0.48 em per character of its longest line, as kaleido draws this font (tags
    left out, <br> a line break)."""
    return 0.48 * size * max(len(re.sub(r"<[^>]+>", "", line)) for line in re.split(r"<br\s*/?>", text))


@pytest.mark.parametrize("name, make", EVERY, ids=[n for n, _ in EVERY])
def test_titles_fit_their_panels_and_axes(full, name, make):
    """A subplot title wider than its panel runs into its neighbour's ("send calls completed / message
    copied (solid) ..."); an axis title longer than its axis is clipped or overprints a neighbour."""
    fig = figure_of(name, make, full)
    width, height = _plot_area(fig)
    layout = fig.layout
    assert _text_px(layout.title.text, layout.title.font.size) <= PDF_WIDTH - 38, layout.title.text
    x_domains = [layout[k].domain or (0, 1) for k in layout if k.startswith("xaxis")]
    for a in layout.annotations:
        if a.xref == "paper" and a.yanchor == "bottom" and a.name not in ("x-title", "y-title"):
            panel = min(x_domains, key=lambda d: abs((d[0] + d[1]) / 2 - a.x))
            assert _text_px(a.text, a.font.size) <= (panel[1] - panel[0]) * width, (a.text, panel)
    for k in layout:
        if k.startswith("yaxis") and layout[k].title.text:
            d = layout[k].domain or (0, 1)
            assert _text_px(layout[k].title.text, layout[k].title.font.size) <= (d[1] - d[0]) * height, \
                (k, layout[k].title.text)


@pytest.mark.parametrize("name, make", EVERY, ids=[n for n, _ in EVERY])
def test_the_legend_sits_clear_of_the_x_axis_title(full, name, make):
    """The legend (at the canvas's bottom) must end below the shared x title, which hangs under the
    bottom panels' tick labels: rows of legend entries that reach it overprint it."""
    fig = figure_of(name, make, full)
    shared = [a for a in fig.layout.annotations if a.name == "x-title"]
    if not shared:
        return
    entries = sum(1 for t in fig.data if t.showlegend is not False and t.name)
    legend_rows = math.ceil(entries / 4)  # about four entries per row at the PDF's width
    legend_top = 8 + 24 * legend_rows
    title_bottom = fig.layout.margin.b + shared[0].yshift - 2 * shared[0].font.size  # under the tick labels
    assert legend_top < title_bottom, (name, legend_top, title_bottom)


@pytest.mark.parametrize("values, must_show", [
    ((0.1, 0.96, 1.37, 0.909, 1.1), 1.23),    # A2's 1.23 win, read against a tick above 1
    ((0.67, 9.5, 1.0), 9.0),                  # A3's 8-9x sender CPU at 64 B, read below a tick
    ((0.87, 1.15, 0.909, 1.1), 1.05),        # a point within 5% of the end tick does not stretch the axis a step
])
def test_ratio_ticks_label_every_point_without_colliding(values, must_show):
    from copylab.figures.evidence import ratio_ticks

    ticks = ratio_ticks(values)
    vals = ticks["tickvals"]
    assert 1.0 in vals and min(vals) <= min(values) * 1.05 and max(vals) >= max(values) / 1.05
    assert any(t > must_show for t in vals) and any(t < must_show for t in vals)
    assert 10 ** ticks["range"][0] <= min(values) and 10 ** ticks["range"][1] >= max(values)
    # neighbours at least a ninth of the axis apart: 1.1 / 1 / 0.9 on a 0.1-1.4 axis would collide
    span = ticks["range"][1] - ticks["range"][0]
    assert all(math.log10(b) - math.log10(a) >= span / 10 for a, b in zip(vals, vals[1:])), vals
    assert len(vals) <= 7


def test_latency_figure_shows_p50_alone_on_a_log_thread_axis_ending_at_the_grid(full):
    df, meta = full
    fig = figures.latency_vs_threads(df, meta)
    assert "p50" in fig.layout.title.text
    shown = " ".join(t.hovertemplate for t in fig.data)
    assert "p99" not in shown and "99" not in " ".join(str(t.name) for t in fig.data)
    x = fig.layout.xaxis
    assert x.type == "log" and list(x.tickvals) == list(synthetic.THREADS)
    assert 10 ** x.range[1] < max(synthetic.THREADS) * 1.5 and 10 ** x.range[0] > min(synthetic.THREADS) / 1.5
    # one spelling of each program: the legend's names are the registry's labels
    names = {t.name for t in fig.data if t.showlegend is not False}
    assert names <= set(analysis.IMPL_LABELS.values())


def test_latency_figure_goes_log_where_the_round_trip_grows_fourfold(full):
    """A shared linear axis up to 300 µs left the 40-140 µs of 1-4 threads in its bottom third."""
    from copylab.figures.study import LATENCY_LOG_SPREAD

    df, meta = full
    lat = df["mode"] == "latency"
    grown = df.copy()
    grown.loc[lat, "latency_p50_us"] = 40.0 * grown.loc[lat, "threads"]  # 40 -> 320 µs over 1-8 threads
    assert figures.latency_vs_threads(grown, meta).layout.yaxis.type == "log"
    flat = df.copy()
    flat.loc[lat, "latency_p50_us"] = 40.0 + grown.loc[lat, "threads"]  # within LATENCY_LOG_SPREAD
    assert LATENCY_LOG_SPREAD > 48 / 41 and figures.latency_vs_threads(flat, meta).layout.yaxis.type != "log"


def _a3_slow_at_64(df):
    """The sweep with A3's 64 B throughput a twentieth of its value: a panel spanning more than 10x."""
    df = df.copy()
    at = (df["impl"] == "a3") & (df["msg_size"] == 64)
    df.loc[at, "throughput_gbps"] *= 0.05
    return df


def test_scaling_figure_gives_a_widely_spread_panel_a_log_axis(full):
    """A3 at 64 B (0.03-0.06 Gbit/s under A1's 0.46) lay flat on a linear 0-0.5 axis, yet its 2x thread
    effect is the one Q3 explains: a panel spanning more than 10x is log, and says so."""
    df, meta = full
    fig = figures.throughput_vs_threads(_a3_slow_at_64(df), meta)
    titles = {a.text: a for a in fig.layout.annotations if a.text.startswith("size = ")}
    assert "size = 64 B (log)" in titles and "size = 1 KiB" in titles
    assert fig.layout.yaxis.type == "log" and fig.layout.yaxis2.type != "log"
    assert fig.layout.yaxis.tickvals and min(fig.layout.yaxis.tickvals) < 0.1
    # every run's dot sits above the lowest labelled tick (the means alone set it above A3's slowest run)
    slowest = _a3_slow_at_64(df).query("mode == 'throughput' and msg_size == 64")["throughput_gbps"].min()
    assert min(fig.layout.yaxis.tickvals) <= slowest and 10 ** fig.layout.yaxis.range[0] <= slowest
    assert "log where marked" in next(a.text for a in fig.layout.annotations if a.name == "y-title")
    x = fig.layout.xaxis
    assert 10 ** x.range[1] < max(synthetic.THREADS) * 1.5  # the axis ends at the grid's largest count


def test_core_line_is_named_beside_it_and_leaves_the_thread_axis_alone(full):
    """add_vline's label took the core count as its x, which on a log axis is 10^2: the label sat at the
    panel's far right and stretched the axis past 8 threads."""
    df, meta = full
    unpinned = {k: v for k, v in meta.items() if k != "params"}
    fig = figures.throughput_vs_threads(df, unpinned)
    labels = [a for a in fig.layout.annotations if a.text == "2 cores"]
    panels = {t.xaxis or "x" for t in fig.data}
    assert {a.xref for a in labels} == panels
    assert all(abs(a.x - math.log10(2)) < 1e-9 and a.xanchor == "left" for a in labels)
    assert all(10 ** fig.layout[k].range[1] < 12 for k in fig.layout if k.startswith("xaxis") and fig.layout[k].range)
    # a core count outside the grid's thread counts draws no line
    many = figures.throughput_vs_threads(df, {**unpinned, "cores": 64})
    assert not any(a.text == "64 cores" for a in many.layout.annotations) and not many.layout.shapes


def test_the_removed_copy_figure_reads_the_sender_saving_from_the_study(full):
    """The sender's cost per byte over sizes spans decades: on that log axis A1 and A2 lay on top of
    each other where the 19% difference is the point. The right panel is A2 over A1, the Study's
    decisions with their intervals, on a ratio axis whose ticks frame every point."""
    df, meta = full
    study = analysis.study(df, meta)
    fig = figures.user_copy_per_message(study)
    ratio = [t for t in fig.data if t.xaxis == "x2"]
    assert len(ratio) == 1 and fig.layout.yaxis2.type == "log"
    by_size = study.compare("a2", metric="srv_cpu_ns_per_byte")["by_size"]
    assert list(ratio[0].x) == sorted(by_size) and list(ratio[0].y) == [by_size[s].ratio for s in sorted(by_size)]
    assert 1.0 in fig.layout.yaxis2.tickvals
    # a cost's ratio decided above 1 is no win: the key and the hovers say higher or lower
    assert "decided lower" in ratio[0].name and "win" not in ratio[0].name
    assert not {row[1] for row in ratio[0].customdata} & {"win", "loss"}
    assert {s.y0 for s in fig.layout.shapes} >= {1.0}  # the ratio 1 line
    bars = [t for t in fig.data if t.type == "bar"]
    assert {t.name for t in bars} == {analysis.IMPL_LABELS["a1"], analysis.IMPL_LABELS["a2"]}
    assert all(text == "0" for text in bars[1].text)  # A2 copies nothing in user space: said, not blank


def test_the_cache_miss_placeholder_gives_a_reason_of_its_own(bare):
    """Where the reason is the host's perf note (printed once, in the system configuration), the
    placeholder still says what failed in its own words: 'the perf note says why' alone read as circular."""
    df, meta = bare
    df = df.drop(columns="counters_note")
    note = figures.cache_misses_vs_size(df, {**meta, "perf_note": "perf: <not supported> (no PMU)"})
    assert isinstance(note, figures.FigureNote) and "cache misses" in note.title
    from copylab.analysis.stats import SEE_PERF_NOTE, perf_gap

    # its reason in a line of its own words (the note itself is printed once, in the opening)
    assert "says why" not in note.why and "hardware counters" in note.why and "<not supported>" not in note.why


def test_zero_copy_saving_is_a_ratio_on_a_log_axis_framing_every_point(full):
    """Not a linear percentage panel (one ran down to -1,400% and flattened every size from 1 KiB): A3
    over A1 on a log ratio axis whose labelled ticks reach above the highest point and below the lowest."""
    df, meta = full
    fig = figures.zerocopy_completions(df, meta)
    last = len([k for k in fig.layout if k.startswith("xaxis")])  # the ratio is the last panel
    axis = fig.layout[f"yaxis{last if last > 1 else ''}"]
    ys = [y for t in fig.data if t.xaxis == f"x{last if last > 1 else ''}" for y in t.y]
    assert axis.type == "log" and "÷" in axis.title.text and "%" not in axis.title.text
    assert min(axis.tickvals) <= min(ys) * 1.05 and max(axis.tickvals) >= max(ys) / 1.05


@pytest.mark.parametrize("varies", [False, True])
def test_a_zero_copy_count_equal_at_every_point_is_said_in_the_title_not_drawn_flat(full, varies):
    """Review L5: 1.00 send calls per message and 100% copied at every point were two flat panels beside the
    one that varies; such a count is said in the title, and drawn where it varies."""
    df, meta = full
    df = df.copy()
    zc = (df["impl"] == "a3") & (df["mode"] == "throughput")
    df.loc[zc, "zc_completions_per_message"] = 1.0
    df.loc[zc, "zc_copied_share"] = 100.0
    df.loc[zc, "zc_not_copied_share"] = 0.0
    if varies:
        df.loc[zc & (df["msg_size"] == df.loc[zc, "msg_size"].max()), "zc_copied_share"] = 60.0
        df.loc[zc & (df["msg_size"] == df.loc[zc, "msg_size"].max()), "zc_not_copied_share"] = 40.0
    fig = figures.zerocopy_completions(df, meta)
    panels = len([k for k in fig.layout if k.startswith("xaxis")])
    assert "1.00 send calls per message" in fig.layout.title.text
    assert ("100% of completions copied" in fig.layout.title.text) is not varies
    assert panels == (2 if varies else 1)
    assert fig.layout.yaxis.title.text == ("% copied (solid), not (dotted)" if varies else
                                           "sender CPU per byte, A3 ÷ A1 (log scale)")


def test_a_linear_panel_ends_at_a_labelled_tick_above_its_highest_value(full):
    """The fresh report's 16 KiB scaling panel: plotly's range ended at 13.5 under a top label of 10, the
    11-13 Gbit/s lines above the last label. Every linear panel now runs from 0 to a labelled tick at or
    above its highest point (its runs' dots included)."""
    from copylab.figures.style import _linear_ticks
    df, meta = full
    fig = figures.throughput_vs_threads(df, meta)
    linear = [k for k in fig.layout if k.startswith("yaxis") and fig.layout[k].type != "log" and fig.layout[k].dtick]
    assert linear, "no linear panel in the synthetic sweep: the test would check nothing"
    for key in linear:
        axis, ref = fig.layout[key], "y" + key[5:]
        ys = [y for t in fig.data if (t.yaxis or "y") == ref for y in t.y if y == y]
        top = axis.range[1] / 1.02
        assert top >= max(ys) and abs(top / axis.dtick - round(top / axis.dtick)) < 1e-6, (key, top, max(ys))
    assert _linear_ticks([13.2])["range"][1] / 1.02 == pytest.approx(15.0)  # the review's panel: label 15


def test_latency_log_axis_frames_every_pass_drawn_not_only_the_means(full):
    """A pass below its point's mean (43.5 µs beside a 47.7 µs axis floor in a fresh report) fell off the log
    axis: the axis is framed on every pass it draws."""
    df, meta = full
    lat = df["mode"] == "latency"
    grown = df.copy()
    grown.loc[lat, "latency_p50_us"] = 40.0 * grown.loc[lat, "threads"]
    first = grown.index[lat & (grown["threads"] == grown.loc[lat, "threads"].min())][0]
    grown.loc[first, "latency_p50_us"] = 7.0  # one pass far below every mean
    fig = figures.latency_vs_threads(grown, meta)
    assert fig.layout.yaxis.type == "log" and 10 ** fig.layout.yaxis.range[0] <= 7.0, fig.layout.yaxis.range

"""The comparison report's figure: every path's change from sweep A to sweep B per size, with the
Comparison's decisions and 95% intervals (analysis/comparison.py).

Small multiples: a row per criterion (throughput, CPU time per byte, p50 round trip), a column per path
(its own value, then each path against the baseline), one path per panel, the grid's sizes evenly
spaced. Paths measured alike sit at the same ratio, often exactly 1: drawn in one panel their markers
covered one another (issue 47: A3's square over A2's circle); here each marker has its panel to itself.
A row shares its ratio axis, so the paths of a row are read against one another. The marker says the
decision (DECISION_MARKERS, open when the decision does not stand after its family's correction), the
bar its 95% interval, the grey band the equivalence margin.
"""

from __future__ import annotations

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..analysis.comparison import OWN, RATIO, Change, Comparison
from ..inference import Outcome
from ..analysis.roles import BASE
from ..fmt import fmt_num, fmt_size, impl_name
from .evidence import DECISION_MARKERS, decision_values, equivalence_band, ratio_ticks
from .style import FONT, IMPL_COLORS, _compact_size, _style

ROW_WORDS = {"throughput": "throughput", "cpu_per_byte": "CPU per byte", "latency": "p50 round trip"}
# a decision read for a change from A to B: the marker's key and the hover's words
KEY = {Outcome.WIN: "B higher", Outcome.LOSS: "B lower", Outcome.WIN_WITHIN: "B higher by less than the margin",
       Outcome.LOSS_WITHIN: "B lower by less than the margin", Outcome.EQUIVALENT: "equivalent",
       Outcome.UNDECIDED: "undecided"}
# the legend: one entry per marker (both within-margin outcomes share one)
MARKER_KEY = {DECISION_MARKERS[str(o)]: KEY[o] for o in (Outcome.WIN, Outcome.LOSS, Outcome.EQUIVALENT, Outcome.UNDECIDED)}
MARKER_KEY[DECISION_MARKERS[str(Outcome.WIN_WITHIN)]] = "B higher or lower by less than the margin"
FALLEN_KEY = "open: not standing after Holm's correction"
MAX_COLUMNS = 6  # more panels side by side than this: the own values' rows above the ratios' instead
ROW_HEIGHT, CHROME = 210, 190  # px per criterion row; title, axis titles and legend
# at most this tall: at the PDF's width (760 px to 420 pt) a figure under its section's heading and first
# paragraph still fits on one page, so none is pushed to the next page and leaves this one half empty
MAX_HEIGHT = 1000


def _column_title(kind: str, impl: str) -> str:
    return impl_name(impl) if kind == OWN else f"{impl_name(impl)} ÷ {impl_name(BASE)}"


def comparison_figures(c: Comparison) -> list[go.Figure]:
    """The comparison's figure: a row per criterion with every path's own value and ratio to the baseline
    side by side; with more than MAX_COLUMNS of those, the own values' rows above the ratios' (one figure
    either way: two would leave the page under the first half empty)."""
    own, ratio = ([(kind, impl) for impl in sorted({ch.impl for ch in c.select(kind)})] for kind in (OWN, RATIO))
    criteria = [k for k in ROW_WORDS if c.select(criterion=k, per_threads=False)]
    if not criteria:
        return []
    if len(own) + len(ratio) <= MAX_COLUMNS:
        rows = [(k, None, own + ratio) for k in criteria]
    else:
        rows = [(k, kind, cols) for kind, cols in ((OWN, own), (RATIO, ratio)) for k in c.criteria(kind)]
    return [changes_figure(c, rows)]


def changes_figure(c: Comparison, rows: list[tuple[str, str | None, list[tuple[str, str]]]]) -> go.Figure:
    """B ÷ A per size over the thread counts both sweeps measured, one panel per (criterion, path): rows
    [(criterion, kind or None for both, [(kind, impl) per column])]. Each block of rows names its paths
    above its first row."""
    ncols = max(len(cols) for _, _, cols in rows)
    titles = []
    for i, (_, kind, cols) in enumerate(rows):
        first = i == 0 or rows[i - 1][1] != kind
        titles += [(_column_title(*col) if first else "") for col in cols] + [""] * (ncols - len(cols))
    fig = make_subplots(rows=len(rows), cols=ncols, shared_yaxes=True, shared_xaxes=True, subplot_titles=titles,
                        horizontal_spacing=0.025, vertical_spacing=0.3 / len(rows))
    sizes = sorted({ch.size for ch in c.changes})
    for r, (criterion, kind, cols) in enumerate(rows, start=1):
        values = [1 / (1 + c.margin), 1 + c.margin]
        for col, (k, impl) in enumerate(cols, start=1):
            mine = sorted((ch for ch in c.select(k, criterion, per_threads=False) if ch.impl == impl),
                          key=lambda ch: ch.size)
            values += decision_values(ch.decision for ch in mine)
            equivalence_band(fig, c.margin, row=r, col=col)
            if mine:
                fig.add_trace(_trace(c, mine, k, sizes), row=r, col=col)
        fig.update_yaxes(type="log", **ratio_ticks(values), row=r)
        against = f" ÷ {impl_name(BASE)}" if kind == RATIO else ""
        fig.update_yaxes(title_text=f"{ROW_WORDS[criterion]}{against}<br>B ÷ A", row=r, col=1)
    # the grid's sizes evenly spaced (a place each, labelled compactly): on a log axis the larger sizes of a
    # narrow panel crowded together, labels and markers touching
    fig.update_xaxes(type="linear", tickvals=list(range(len(sizes))), ticktext=[_compact_size(s) for s in sizes],
                     range=[-0.6, len(sizes) - 0.4], tickangle=0, tickfont=dict(size=FONT["tick"] - 2))
    fig.update_xaxes(title_text="message size", row=len(rows))
    for marker, words in MARKER_KEY.items():  # the key: one grey entry per marker
        fig.add_trace(_key(words, marker))
    fig.add_trace(_key(FALLEN_KEY, "circle-open"))
    fig = _style(fig, c.meta_a, f"B ÷ A per size: each path's own value and its ratio to {impl_name(BASE)}",
                 height=CHROME + min(ROW_HEIGHT, (MAX_HEIGHT - CHROME) // len(rows)) * len(rows),
                 legend_title="decision")
    fig.layout.title.subtitle.text = "95% intervals; grey band: the equivalence margin"
    fig.update_layout(margin=dict(t=110, l=90, r=20, b=120), width=None)
    for a in fig.layout.annotations:  # the panels' titles: the paths
        a.font.size = FONT["panel"]
    return fig


def _trace(c: Comparison, mine: list[Change], kind: str, sizes: list[int]) -> go.Scatter:
    d = [ch.decision for ch in mine]
    fallen = [c.fallen(ch) for ch in mine]
    color = IMPL_COLORS.get(mine[0].impl)
    what = _column_title(kind, mine[0].impl)
    return go.Scatter(
        x=[sizes.index(ch.size) for ch in mine], y=[x.ratio for x in d], mode="lines+markers", showlegend=False,
        line=dict(color=color, width=1.5),
        marker=dict(size=10, color=color, line=dict(color=color, width=1.5),
                    symbol=[DECISION_MARKERS[x.decision] + ("-open" if f else "") for x, f in zip(d, fallen)]),
        error_y=dict(type="data", symmetric=False, thickness=1.2, width=3,
                     array=[x.high - x.ratio if x.high == x.high else 0 for x in d],
                     arrayminus=[x.ratio - x.low if x.low == x.low else 0 for x in d],
                     visible=any(x.low == x.low for x in d)),
        customdata=[[what, fmt_size(ch.size), _interval(ch), KEY[ch.decision.decision] + ("†" if f else "")]
                    for ch, f in zip(mine, fallen)],
        hovertemplate=("<b>%{customdata[0]}</b>, %{customdata[1]}<br>B ÷ A %{y:.3f} (95%: %{customdata[2]})"
                       "<br>%{customdata[3]}<extra></extra>"))


def _interval(ch: Change) -> str:
    d = ch.decision
    return f"{fmt_num(d.low)}–{fmt_num(d.high)}" if d.low == d.low else "none: fewer than 2 passes"


def _key(name: str, symbol: str) -> go.Scatter:
    return go.Scatter(x=[None], y=[None], mode="markers", name=name, hoverinfo="skip",
                      marker=dict(symbol=symbol, size=10, color="#555"))


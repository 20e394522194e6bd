"""Where each side's CPU goes: stacked bucket shares per implementation and profiled size, and an
interactive icicle (a flame graph, root at the top) of the folded stacks per implementation."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .. import escape, registry
from ..analysis.profiles import profiled, shares
from ..analysis.stacks import folded_counts
from ..contract import PROFILE_BUCKETS
from ..fmt import fmt_size, impl_name, plural
from ..profile.rules import BUCKET_MEANING
from .style import FONT, FigureNote, _shared_title, _style


# one colour per bucket, copies in warm colours so they stand out
BUCKET_COLORS = {
    "user_copy": "#d62728", "kernel_copy_from_user": "#ff7f0e", "zerocopy_pin": "#8c564b",
    "deferred_copy": "#e377c2", "kernel_copy_to_user": "#ffbb78", "zerocopy_completion": "#c49c94",
    "uring_submit": "#98df8a", "page_cache_ref": "#2ca02c", "receive_map": "#dbdb8d",
    "tcp_send": "#1f77b4", "tcp_receive": "#17becf", "scheduling": "#9467bd", "syscall": "#aec7e8",
    "other_process": "#7f7f7f", "idle": "#e5e5e5", "other": "#c7c7c7",
}


def profiled_threads(df) -> str:
    """The thread counts the profiled points were taken at, from the data: '1 thread', '1 and 8 threads'
    (shares() averages over them, so the title says which)."""
    counts = sorted(int(t) for t in profiled(df)["threads"].dropna().unique())
    if not counts:
        return "no thread count"
    if len(counts) == 1:
        return plural(counts[0], "thread")
    return ", ".join(map(str, counts[:-1])) + f" and {counts[-1]} threads"


def cpu_breakdown(df, meta: dict, impls: list[str] | None = None):
    """Stacked shares of each side's profile samples per implementation, one column per size."""
    table = shares(df)
    if table.empty:
        why = "no point of this sweep was profiled"
        notes = df["profile_note"].dropna().astype(str) if "profile_note" in df else []
        if len(notes) and notes.str.strip().ne("").any():
            why = f"{why}: {notes[notes.str.strip() != ''].iloc[0]}"
        return FigureNote("where the CPU goes", "call-graph profiles (perf record)", why,
                          "set `profile` in the grid (default: every throughput point at one thread) on a host "
                          "with perf")
    sizes = sorted(table["msg_size"].unique())
    if impls is None:  # the study's paths and the throughput peers, as Part E shows them
        impls = [i.name for i in registry.all_impls() if i.role in registry.STUDY_ROLES
                 or (i.role == "reference" and i.mode == "throughput")]
    impls = [i for i in impls if i in set(table["impl"])]
    fig = make_subplots(rows=2, cols=len(sizes), shared_yaxes=True, shared_xaxes=True, horizontal_spacing=0.03,
                        vertical_spacing=0.08, column_titles=[f"size = {fmt_size(s)}" for s in sizes],
                        row_titles=["sender", "receiver"])
    # the buckets this sweep's runs have samples in: a legend entry for uring submit, page cache ref or
    # receive map under three paths that never use them reads as a missing bar
    present = set(table[table["impl"].isin(impls) & (table["share"] > 0)]["bucket"])
    for r, side in enumerate(("sender", "receiver"), start=1):
        for c, size in enumerate(sizes, start=1):
            at = table[(table["side"] == side) & (table["msg_size"] == size)]
            for bucket in (b for b in PROFILE_BUCKETS if b in present):
                values = at[at["bucket"] == bucket].set_index("impl")["share"]
                fig.add_trace(go.Bar(x=[impl_name(i) for i in impls], y=[100 * values.get(i, 0.0) for i in impls],
                                     name=bucket.replace("_", " "), legendgroup=bucket, showlegend=r == 1 and c == 1,
                                     marker_color=BUCKET_COLORS[bucket],
                                     hovertemplate=(f"<b>%{{x}}</b>, {side}, {fmt_size(size)}<br>"
                                                    f"{bucket.replace('_', ' ')}: %{{y:.1f}}% of the side's samples"
                                                    f"<br>{BUCKET_MEANING[bucket]}<extra></extra>")),
                              row=r, col=c)
    fig.update_layout(barmode="stack")
    fig.update_yaxes(range=[0, 100], nticks=6)
    _shared_title(fig, "y", "share of the side's profile samples (%)")
    _shared_title(fig, "x", "implementation (top row: sender CPU, bottom row: receiver CPU)")
    event = profiled(df)["profile_event"].dropna()
    title = (f"Where each side's CPU goes (throughput, profiled at {profiled_threads(df)}"
             + (f"; {escape.html(event.iloc[0])}" if len(event) else "") + ")")
    fig = _style(fig, meta, title, height=700, legend_title="bucket")
    fig.update_layout(margin=dict(b=170), legend=dict(font=dict(size=FONT["tick"] - 1)))
    return fig


def icicle(df, meta: dict, results_dir, impl: str, side: str = "srv", min_share: float = 0.005, depth: int = 30):
    """An icicle of impl's folded stacks (all its profiled points at the largest profiled size and
    fewest threads): root at the top, children below; frames under min_share are left out."""
    rows = profiled(df)
    rows = rows[rows["impl"] == impl]
    profile_dir = Path(results_dir) / "profiles"
    if rows.empty or not profile_dir.is_dir():
        return FigureNote(f"{impl_name(impl)} call graph", "folded stacks (profiles/)",
                          "no profiled point of this implementation in this results folder",
                          "profile the sweep (grid key `profile`)")
    size = rows["msg_size"].max()
    at = rows[rows["msg_size"] == size]
    at = at[at["threads"] == at["threads"].min()]
    counts = folded_counts(profile_dir, at["point_id"].tolist(), side)
    total = sum(counts.values())
    if not total:
        return FigureNote(f"{impl_name(impl)} call graph", "folded stacks (profiles/)",
                          "the profiles of these points are not in the results folder", "re-run the sweep")
    nodes: dict[str, int] = defaultdict(int)
    for stack, n in counts.items():
        frames = stack.split(";")[1:depth + 1]  # the process name is the first frame: drop it
        for k in range(1, len(frames) + 1):
            nodes[";".join(frames[:k])] += n
    kept = {path: n for path, n in nodes.items() if n >= min_share * total}
    ids = ["all"] + list(kept)
    fig = go.Figure(go.Icicle(
        ids=ids, labels=["all samples"] + [escape.html(p.rsplit(";", 1)[-1].replace("_[k]", " [k]")) for p in kept],
        parents=[""] + [p.rsplit(";", 1)[0] if ";" in p else "all" for p in kept],
        values=[total] + list(kept.values()), branchvalues="total", tiling=dict(orientation="v"),
        hovertemplate="%{label}<br>%{value} samples (%{percentRoot:.1%})<extra></extra>", maxdepth=8))
    who = "sender" if side == "srv" else "receiver"
    return _style(fig, meta, f"{impl_name(impl)} {who}: call graph at {fmt_size(size)} (click to zoom; [k] = kernel)",
                  height=620)

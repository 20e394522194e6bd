"""The report's section after Part E, "Other ways to move the bytes": every send path of the
registry (the study's three and the extra ones: io_uring, io_uring zero-copy, sendfile) and every
receive strategy side by side, from the same sweep.

Per path and size: throughput, CPU time per byte on each side, and the Study's decision against the
two-copy baseline and the one-copy path (analysis/study.py: the same comparisons as Part E's and the
summary's, the family "other_paths" for Holm's correction);
per receive strategy: the receiver's CPU per byte, what was mapped instead of copied, what could not
be verified, and the decision against the primary strategy with the same sender. Where each side's
CPU goes comes from the profiled runs (figures.cpu_breakdown over every path present). Part E itself
stays the study's three roles; this section only adds.
"""

from __future__ import annotations

import math

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from . import escape, registry
from .analysis.stats import aggregate, one_receive, primary_receive, throughput_rows
from .analysis.study import Study, contenders
from .analysis.questions import Row
from .analysis.tables import cell
from .fmt import IMPL_LABELS, fmt_size, impl_name

SIDE_METRICS = ("throughput_gbps", "srv_cpu_ns_per_byte", "cli_cpu_ns_per_byte")

# the section's opening, said only when the sweep measured something beyond the study's paths
INTRO = """Beyond the assignment: Linux has more ways to move the same message than `send`, `sendmsg` and
`MSG_ZEROCOPY`. Part E above compares the study's three paths only; this section puts every send
path copylab has beside them, measured by the same engine on the same message, ring of messages,
client, verification, pinning and counters:

- **io_uring send** (`uring`): A2's `sendmsg` over the iovec submitted through an io_uring
  (`IORING_OP_SENDMSG`): the same kernel copy as A2, so the difference is what io_uring's submission
  and completion cost — the control for the next path.
- **io_uring zero-copy** (`uring_zc`): `IORING_OP_SEND_ZC` over buffers registered once; each
  notification (`IORING_CQE_F_NOTIF`) says when a buffer may be reused and whether the kernel copied
  after all. Between two namespaces of one host every notification says it copied (local delivery
  copies, as for `MSG_ZEROCOPY`).
- **sendfile** (`sendfile`): the messages laid out once in a memfd; `sendfile(2)` hands page-cache
  pages to the socket by reference.

and every receive strategy: `zerocopy` maps whole received pages into the receiver with
`TCP_ZEROCOPY_RECEIVE` instead of copying them (the rest is copied), `discard` lets the kernel drop
the bytes (`MSG_TRUNC`), so the receive copy's cost shows by difference — and nothing can be verified.

Each path is compared with the two-copy and one-copy paths by the same decisions as Part E (win, loss,
equivalent within the equivalence margin, or undecided; the ratio and its 95% interval in brackets). A dagger (†) marks a decision that Holm's correction over this section's comparisons does
not leave standing ("How the decisions are made")."""

CPU_BY_PATH_INTRO = """## Where each side's CPU goes, per path

The profiled runs of every path, classified as in Part E; the buckets of the new paths are
`uring submit` (io_uring submission, task work and completions), `page cache ref` (sendfile
referencing page-cache pages instead of copying), `receive map` (mapping received pages, and
unmapping them) and io_uring's notifications under `zerocopy completion`."""


def native_paths(df: pd.DataFrame) -> list[str]:
    """copylab's own senders present in df, in registry order (the study's first)."""
    present = set(df["impl"]) if "impl" in df else set()
    return [name for name in registry.names(kind="native") if name in present]


def extra_paths(df: pd.DataFrame) -> list[str]:
    return [name for name in native_paths(df) if registry.role(name) not in registry.STUDY_ROLES]


def receive_strategies(df: pd.DataFrame) -> list[str]:
    present = set(df["receive"].fillna("message")) if "receive" in df else {"message"}
    return [name for name in registry.receive_strategies() if name in present]


def _decision_cell(study: Study, d) -> str:
    """"faster 1.10 (1.05–1.16)": the decision, the ratio and its 95% interval, a dagger where Holm's
    correction over the family "other_paths" does not leave it standing; "n/a" where not measured."""
    if d is None:
        return "n/a"
    fam = study.family("other_paths")
    return cell(Row(d, fam.standing(d), fam.p_holm(d), fam.stands(d)))


def send_paths_table(study: Study) -> pd.DataFrame:
    """Every send path at every size (throughput mode, the primary receive strategy; means over
    thread counts and repetitions), with the Study's decision against the two-copy and one-copy paths."""
    rows = throughput_rows(study.rows)
    rows = rows[rows["impl"].isin(native_paths(rows))]
    if rows.empty or not extra_paths(rows):  # the study's three alone: Part E's tables already say it all
        return pd.DataFrame()
    agg = aggregate(rows, list(SIDE_METRICS), by=("impl", "msg_size"))
    bases = [b for b in (registry.baseline(), registry.by_role("one_copy")) if b in set(rows["impl"])]
    out = pd.DataFrame({
        "path": [impl_name(i) for i in agg["impl"]],
        "size": [fmt_size(s) for s in agg["msg_size"]],
        "Gbit/s": agg["throughput_gbps"].to_numpy(),
        "sender ns/B": agg["srv_cpu_ns_per_byte"].to_numpy(),
        "receiver ns/B": agg["cli_cpu_ns_per_byte"].to_numpy(),
    })
    for base in bases:
        out[f"vs {impl_name(base)}"] = ["—" if impl == base else
                                       _decision_cell(study, study.decision(impl, int(size), base=base))
                                       for impl, size in zip(agg["impl"], agg["msg_size"])]
    order = {name: k for k, name in enumerate(registry.names())}
    out["_order"] = [order.get(i, 99) for i in agg["impl"]]
    out["_size"] = agg["msg_size"].to_numpy()
    return out.sort_values(["_order", "_size"]).drop(columns=["_order", "_size"]).reset_index(drop=True)


def _mapped_share(g: pd.DataFrame) -> float:
    if "mapped_bytes" not in g or g["mapped_bytes"].isna().all():
        return math.nan
    return 100 * g["mapped_bytes"].sum() / g["bytes"].sum() if g["bytes"].sum() else math.nan


def _first_note(g: pd.DataFrame) -> str:
    notes = g["receive_note"].dropna().astype(str) if "receive_note" in g else pd.Series(dtype=str)
    notes = notes[notes.str.strip() != ""]
    return notes.iloc[0] if len(notes) else ""


def receive_table(study: Study) -> pd.DataFrame:
    """Every receive strategy other than the primary one, per sender and size (throughput mode): the
    receiver's CPU per byte, the share mapped instead of copied, and the decision against the primary
    strategy with the same sender (each (sender, strategy) compared as a contender of the decision
    statistics). The primary strategy's own numbers are in send_paths_table."""
    df = study.df
    if "impl" not in df or len(receive_strategies(throughput_rows(df))) < 2:
        return pd.DataFrame()
    rows = contenders(df)
    primary = primary_receive(df)
    records = []
    for (pair, size), g in rows.groupby(["impl", "msg_size"], sort=False):
        sender, receive = pair.split("/", 1)
        if receive == primary or f"{sender}/{primary}" not in set(rows["impl"]):
            continue
        found = study.receive.get((sender, receive), {"by_size": {}})["by_size"].get(int(size))
        base = rows[(rows["impl"] == f"{sender}/{primary}") & (rows["msg_size"] == size)]
        records.append({
            "sender": impl_name(sender), "receive": receive, "size": fmt_size(size),
            "Gbit/s": g["throughput_gbps"].mean(), "receiver ns/B": g["cli_cpu_ns_per_byte"].mean(),
            f"receiver ns/B ({primary})": base["cli_cpu_ns_per_byte"].mean(),
            "mapped %": _mapped_share(g), f"vs {primary}": _decision_cell(study, found),
            "_key": (registry.names().index(sender), registry.receive_strategies().index(receive), size)})
    if not records:
        return pd.DataFrame()
    out = pd.DataFrame(records).sort_values("_key").drop(columns="_key").reset_index(drop=True)
    return out if out["mapped %"].notna().any() else out.drop(columns="mapped %")


def receive_notes_markdown(df: pd.DataFrame) -> str:
    """What each (sender, strategy) could not do, once each (the rows' receive_note)."""
    if "receive_note" not in df:
        return ""
    rows = contenders(df)
    lines = []
    for pair, g in rows.groupby("impl", sort=False):
        note = _first_note(g)
        if note:
            sender, receive = pair.split("/", 1)
            lines.append(f"- {impl_name(sender)} with `{receive}`: {escape.markdown(note)}")  # a results.csv value
    return "\n".join(lines)


def paths_figure(df: pd.DataFrame, meta: dict):
    """Throughput and CPU per byte on each side against size, one line per send path (throughput
    mode, the primary receive strategy, means over thread counts and repetitions)."""
    from .figures.style import IMPL_COLORS, _is_spread, _log_ticks, _shared_title, _size_ticks, _style, _with_note

    from .figures.study import Merged

    rows = throughput_rows(one_receive(df))
    rows = rows[rows["impl"].isin(native_paths(rows))]
    if not extra_paths(rows):
        return Merged("Every send path", "Only the study's three send paths were measured, so this figure would "
                      "repeat Part D's throughput and CPU-per-byte figures.")
    agg = aggregate(rows, list(SIDE_METRICS), by=("impl", "msg_size"))
    # every panel spans decades over sizes: log where it does, or 64 B-4 KiB lie flat along zero
    logs = [_is_spread(agg[m]) for m in SIDE_METRICS]
    titles = [_with_note(t, "log") if log else t for t, log in
              zip(("throughput (Gbit/s)", "sender CPU per byte (ns/B)", "receiver CPU per byte (ns/B)"), logs)]
    fig = make_subplots(rows=1, cols=3, horizontal_spacing=0.08, subplot_titles=titles)
    for impl in native_paths(agg):
        g = agg[agg["impl"] == impl].sort_values("msg_size")
        dash = "solid" if registry.role(impl) in registry.STUDY_ROLES else "dash"
        for col, metric in enumerate(SIDE_METRICS, start=1):
            fig.add_trace(go.Scatter(x=g["msg_size"], y=g[metric], mode="lines+markers", name=IMPL_LABELS[impl],
                                     legendgroup=impl, showlegend=col == 1,
                                     line=dict(color=IMPL_COLORS[impl], dash=dash)), row=1, col=col)
    fig.update_xaxes(**_size_ticks(agg["msg_size"], compact=True))
    _shared_title(fig, "x", "message size (bytes, log scale; 1K = 1024)")
    for col, (metric, log) in enumerate(zip(SIDE_METRICS, logs), start=1):
        if log:
            fig.update_yaxes(type="log", **_log_ticks(agg[metric]), row=1, col=col)
        else:
            fig.update_yaxes(rangemode="tozero", row=1, col=col)
    dashed = any(t.line.dash == "dash" for t in fig.data)
    return _style(fig, meta, "Every send path: throughput and each side's CPU per byte"
                  + (" (dashed: beyond the study)" if dashed else ""))


def cpu_by_path(profiles: pd.DataFrame, meta: dict):
    """Where each side's CPU goes, for every send path that was profiled; a line pointing back to Part E's
    figure when only the study's paths were profiled (the same figure again would be a duplicate)."""
    from .figures import cpu_breakdown
    from .figures.study import Merged

    paths = native_paths(profiles) if "impl" in profiles else []
    if not [p for p in paths if registry.role(p) not in registry.STUDY_ROLES]:
        return Merged("Where each side's CPU goes, per path", "Only the study's three send paths were profiled, so "
                      "this figure would repeat the one in \"Where the CPU goes, measured\".")
    return cpu_breakdown(profiles, meta, impls=paths)


def cpu_by_receive(profiles: pd.DataFrame, meta: dict):
    """Where each side's CPU goes per (sender, receive strategy): the receiver's copy, mapping or
    nothing. The strategies are drawn as contenders of one chart."""
    from .figures import cpu_breakdown

    rows = profiles[profiles["impl"].isin(native_paths(profiles))].copy() if "impl" in profiles else profiles
    if rows.empty or len(receive_strategies(rows)) < 2:
        return None
    rows["impl"] = rows["impl"] + "/" + rows["receive"].fillna("message")
    rows["receive"] = primary_receive(profiles)  # one chart over every pair
    return cpu_breakdown(rows, meta, impls=sorted(set(rows["impl"])))


def section_markdown(df: pd.DataFrame) -> str:
    """The section's opening: what the other paths and strategies are and which this sweep measured; one
    line saying how to get them when it measured only the study's paths with one receive strategy (a
    page describing paths nothing was measured for is a page of nothing)."""
    extra, receives = extra_paths(df), receive_strategies(df)
    if not extra and len(receives) < 2:
        return ("_This sweep measured only the study's three send paths with one receive strategy. "
                "`params/full.yaml` adds io_uring send, io_uring zero-copy and sendfile, and the zerocopy "
                "and discard receivers; `copylab doctor` says which of them this host supports._")
    return (INTRO + f"\n\nThe sweep measured {len(native_paths(df))} send paths "
            f"({', '.join(impl_name(i) for i in native_paths(df))}) and the receive strategies "
            f"{', '.join(f'`{r}`' for r in receives)}.")
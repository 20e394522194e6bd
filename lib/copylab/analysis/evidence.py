"""The evidence the answers cite beside the decisions: what the profiles, the folded stacks and the
programs' own counters show at one point. Numbers and facts only, each with its spread where it has
one; the verdicts (questions.py) choose among them and the templates word them."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from . import stacks
from .profiles import Share, bucket_cost, point_cpu_column, point_rows, profiled, share
from .roles import ZERO_COPY
from .stats import numbers, throughput_rows, zc_copied_share

# the kernel's per-message work of a sendmsg() over an iovec: copying the msghdr and importing the
# segments (A2's cost that A1's send() of one buffer does not pay)
IOVEC_IMPORT = ("copy_msghdr_from_user", "import_iovec", "__import_iovec", "iovec_from_user", "copy_iovec_from_user")
KERNEL_COPY = ("_copy_from_iter",)
# a sender waiting for room in its socket's send buffer (the samples around its sleep)
SEND_BUFFER_WAIT = ("sk_stream_wait_memory",)
ZERO_COPY_WORK = {"zerocopy_pin": "pinning the user pages", "deferred_copy": "the deferred copy (skb_copy_ubufs)",
                  "zerocopy_completion": "completions (error queue, unpinning)"}
NEAR_FULL = 0.95  # a CPU busy at least this share of the window is saturated: it bounds the throughput


@dataclass
class PointProfile:
    """One profiled point's evidence: bucket shares per side with their intervals, costs per message
    (µs of the side's CPU, on the measured point's basis) and inclusive shares of named kernel functions
    from the folded stacks."""

    impl: str
    size: int
    threads: int
    shares: dict = field(default_factory=dict)     # (side, bucket) -> Share
    us_per_message: dict = field(default_factory=dict)  # (side, bucket) -> µs
    functions: dict = field(default_factory=dict)  # name -> share of the sender's samples whose stack holds it
    samples: float = math.nan
    apart_from_passes: float = math.nan            # the profiled run's throughput over its passes' mean
    sender_us_per_message: float = math.nan        # the measured point's sender CPU per message (µs), the basis
                                                   # a function's share of the non-idle samples is read on

    def function_us(self, name: str) -> float:
        """µs per message of the sender's CPU in a named function and beneath it (functions' share x basis)."""
        return self.functions.get(name, math.nan) * self.sender_us_per_message


def point_profile(profiles: pd.DataFrame, impl: str, size: int, results_dir=None, threads=None) -> PointProfile | None:
    rows = point_rows(profiles, impl, size, threads)
    if rows.empty:
        return None
    found = PointProfile(impl, int(size), int(rows["threads"].iloc[0]), samples=float(rows["srv_prof_samples"].sum()))
    for side in ("srv", "cli"):
        for bucket in ("user_copy", "kernel_copy_from_user", "kernel_copy_to_user", "scheduling", "idle",
                       "other_process", *ZERO_COPY_WORK):
            found.shares[(side, bucket)] = share(rows, side, bucket)
            found.us_per_message[(side, bucket)] = bucket_cost(rows, side, bucket, "message")
    basis = pd.to_numeric(rows.get(point_cpu_column("srv", "message")), errors="coerce")
    if basis is not None and basis.notna().any():
        found.sender_us_per_message = float(basis.mean())
    if "point_gbps_mean" in rows:
        ratio = rows["throughput_gbps"].astype(float) / rows["point_gbps_mean"].astype(float)
        found.apart_from_passes = float(ratio.mean())
    folder = Path(results_dir) / "profiles" if results_dir else None
    if folder is not None and folder.is_dir():
        counts = stacks.folded_counts(folder, rows["point_id"].dropna(), "srv")
        found.functions = {"iovec_import": stacks.inclusive_share(counts, IOVEC_IMPORT),
                           "kernel_copy": stacks.inclusive_share(counts, KERNEL_COPY),
                           "send_buffer_wait": stacks.inclusive_share(counts, SEND_BUFFER_WAIT)}
    return found


def profiled_sizes(profiles: pd.DataFrame, impls) -> list[int]:
    """The sizes at which every one of impls was profiled, smallest first."""
    rows = profiled(profiles)
    common = [set(int(s) for s in rows.loc[rows["impl"] == i, "msg_size"]) for i in impls]
    return sorted(set.intersection(*common)) if common else []


@dataclass
class DeferredCopySite:
    """Where A3's deferred copy ran, from its folded stacks: samples per context and the top one."""

    size: int
    samples: int
    share: dict                # context -> share of the deferred copy's samples
    top: str                   # sendmsg | recv | softirq_thread | interrupt | none
    path: str = ""             # the most sampled stack of it, shortened


def deferred_copy_site(profiles: pd.DataFrame, size: int, results_dir) -> DeferredCopySite | None:
    rows = point_rows(profiles, ZERO_COPY, size)
    folder = Path(results_dir) / "profiles" if results_dir else None
    if rows.empty or folder is None or not folder.is_dir():
        return None
    counts = {side: stacks.folded_counts(folder, rows["point_id"].dropna(), side) for side in ("srv", "cli")}
    where = {side: stacks.contexts(c) for side, c in counts.items()}
    total = sum(sum(c.values()) for c in where.values())
    if total == 0:
        return DeferredCopySite(size, 0, {}, "none")
    by = {ctx: sum(where[s][ctx] for s in where) for ctx in stacks.CONTEXTS}
    top = max(by, key=by.get)
    side = "srv" if where["srv"][top] >= where["cli"][top] else "cli"
    return DeferredCopySite(size, total, {c: n / total for c, n in by.items() if n},
                            top, stacks.example_path(counts[side], stacks.DEFERRED_COPY, top))


@dataclass
class Bound:
    """Which side's CPU bounds a point's throughput: the pinned CPUs' busy shares (medians of the passes)."""

    sender_busy: float
    receiver_busy: float
    side: str                  # sender | receiver | both | neither | unknown


def bound(rows: pd.DataFrame) -> Bound:
    srv, cli = numbers(rows, "srv_cpu_busy").median(), numbers(rows, "cli_cpu_busy").median()
    if not (srv == srv and cli == cli):
        return Bound(srv, cli, "unknown")
    full = {"sender": srv >= NEAR_FULL, "receiver": cli >= NEAR_FULL}
    side = "both" if all(full.values()) else next((s for s, f in full.items() if f), "neither")
    return Bound(float(srv), float(cli), side)


def user_copies(df: pd.DataFrame) -> dict[str, float]:
    """Per study path, the bytes its server copied in user space per byte of each message it sent (its own
    counters over the whole run, throughput mode): 1 is one whole copy of every message, 0 none."""
    tp = throughput_rows(df)
    if "user_copy_bytes_per_message" not in tp:
        return {}
    per_byte = pd.to_numeric(tp["user_copy_bytes_per_message"], errors="coerce") / tp["msg_size"]
    return {impl: float(v) for impl, v in per_byte.groupby(tp["impl"]).mean().items() if v == v}


@dataclass
class ZeroCopyCounts:
    copied_share: float        # % of A3's completions flagged SO_EE_CODE_ZEROCOPY_COPIED
    path: str                  # local (namespaces, loopback) | hosts (two machines)
    enobufs: float             # ENOBUFS per 1000 send calls (NaN: not counted)


def zero_copy_counts(df: pd.DataFrame, meta: dict) -> ZeroCopyCounts:
    tp = throughput_rows(df)
    zc = tp[tp["impl"] == ZERO_COPY]
    sends = numbers(zc, "send_calls").sum()
    eno = numbers(zc, "enobufs").sum() if "enobufs" in zc else math.nan
    return ZeroCopyCounts(zc_copied_share(df), "hosts" if meta.get("topology") == "ssh" else "local",
                          float(eno) / sends * 1000 if sends and eno == eno else math.nan)


def above(a: Share, b: Share) -> bool:
    """a's share larger than b's beyond both intervals."""
    return a.known and b.known and a.low > b.high


@dataclass
class SenderWaits:
    """A path's sender and the baseline's at one size and thread count (throughput runs, means over the
    passes): the share of the window their CPU was busy, their context switches per 1,000 messages."""

    size: int
    threads: int
    busy: tuple[float, float]       # (the path's, the baseline's)
    switches: tuple[float, float]


def sender_waits(df: pd.DataFrame, impls: tuple[str, str], size: int) -> SenderWaits | None:
    """At size and the fewest threads measured; None without the busy share or the switch counts."""
    tp = throughput_rows(df)
    needed = {"srv_cpu_busy", "srv_context_switches", "messages"}
    if tp.empty or not needed <= set(tp.columns):
        return None
    threads = int(tp["threads"].min())
    cell = tp[(tp["msg_size"] == size) & (tp["threads"] == threads) & tp["impl"].isin(impls)]
    busy, switches = {}, {}
    for impl, rows in cell.groupby("impl"):
        per = pd.to_numeric(rows["srv_context_switches"], errors="coerce") / pd.to_numeric(rows["messages"], errors="coerce")
        busy[impl] = float(pd.to_numeric(rows["srv_cpu_busy"], errors="coerce").mean())
        switches[impl] = float(1000 * per.mean())
    if set(busy) != set(impls) or any(v != v for v in (*busy.values(), *switches.values())):
        return None
    return SenderWaits(size, threads, tuple(busy[i] for i in impls), tuple(switches[i] for i in impls))

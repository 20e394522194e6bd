"""Where the CPU goes, from the profile columns: shares per side, the copies each implementation
makes, what they cost per byte, and which side is the bottleneck."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..contract import CAI_CATEGORIES, PROFILE_BUCKETS
from .roles import STUDY
from ..inference import t_quantile
from .stats import one_receive, throughput_rows

SIDES = {"srv": "sender", "cli": "receiver"}
COPY_BUCKETS = ("user_copy", "kernel_copy_from_user", "zerocopy_pin", "deferred_copy", "kernel_copy_to_user",
                "zerocopy_completion")


def profiled(df: pd.DataFrame) -> pd.DataFrame:
    """Throughput-mode rows (of the primary receive strategy) that carry a profile of both sides."""
    tp = throughput_rows(one_receive(df))
    if not {"srv_prof_samples", "cli_prof_samples"} <= set(tp.columns):  # a table without profile columns
        return tp.iloc[0:0]
    return tp[tp["srv_prof_samples"].notna() & tp["cli_prof_samples"].notna()]


def shares(df: pd.DataFrame, kind: str = "prof") -> pd.DataFrame:
    """Long table: impl, msg_size, side, bucket, share (mean over the repetitions and thread counts
    profiled). kind "prof" gives the contract buckets, "cai" Cai et al.'s categories."""
    names = PROFILE_BUCKETS if kind == "prof" else CAI_CATEGORIES
    rows = profiled(df)
    if rows.empty:
        return pd.DataFrame(columns=["impl", "msg_size", "side", "bucket", "share"])
    cols = [f"{side}_{kind}_{name}" for side in SIDES for name in names]
    means = rows.groupby(["impl", "msg_size"])[cols].mean().reset_index()
    long = means.melt(id_vars=["impl", "msg_size"], var_name="column", value_name="share")
    long["side"] = long["column"].str[:3].map(SIDES)
    long["bucket"] = long["column"].str[len("srv_") + len(kind) + 1:]
    return long.drop(columns="column")


def _numbers(rows: pd.DataFrame, column: str) -> pd.Series:
    """A column as numbers (NaN where it is absent or not a number)."""
    return pd.to_numeric(rows[column], errors="coerce") if column in rows else pd.Series(math.nan, index=rows.index)


def cpu_seconds(rows: pd.DataFrame, side: str, mode=None) -> pd.Series:
    """CPU time of a side in each run's window: under a per_cpu profile (COST_BASIS, text/profile.py: the basis
    of every µs per message the report states) the pinned CPU's busy share times the window, which includes
    the softirq work done there, else, and where the CPU's busy share was not taken (not pinned), the
    program's task-clock (per_process). mode: the profile's mode for every row (a measured pass has none of
    its own; with_points gives its profiled run's); None: each row's profile_mode."""
    clock = _numbers(rows, f"{side}_task_clock_ms") / 1e3
    per_cpu = (rows["profile_mode"].eq("per_cpu") if mode is None and "profile_mode" in rows
               else pd.Series(mode == "per_cpu", index=rows.index))
    busy = _numbers(rows, f"{side}_cpu_busy") * _numbers(rows, "duration_s")
    return busy.where(per_cpu).fillna(clock)


def copy_costs(df: pd.DataFrame) -> pd.DataFrame:
    """ns of CPU per byte, per copy bucket, side, implementation and size (bucket_cost's basis: the
    bucket's share of the side's busy samples times the measured point's CPU per byte)."""
    rows = profiled(df)
    out = [{"impl": impl, "msg_size": int(size), "side": name, "bucket": bucket,
            "ns_per_byte": bucket_cost(g, side, bucket)}
           for (impl, size), g in rows.groupby(["impl", "msg_size"]) for side, name in SIDES.items()
           for bucket in COPY_BUCKETS]
    table = pd.DataFrame(out, columns=["impl", "msg_size", "side", "bucket", "ns_per_byte"])
    return table[table["ns_per_byte"].notna()].reset_index(drop=True)


# ------------------------------------------------------------------------------------------------
# the measured point behind each profiled run: a profiled run is taken apart from the measured passes
# (under the profiler, sometimes in another state), so its own CPU per byte is not the point's. Every
# cost of a bucket is its share of the profiled run's busy samples times the MEASURED point's CPU per
# byte or per message; the profiled run's throughput is set against its point's passes.

POINT_PASSES, POINT_LOW, POINT_HIGH, POINT_MEAN = ("point_passes", "point_gbps_low", "point_gbps_high",
                                                   "point_gbps_mean")


def point_cpu_column(side: str, per: str) -> str:
    """The column with_points adds: a side's measured CPU per byte (ns) or per message (µs)."""
    return f"point_{side}_cpu_{'ns_per_byte' if per == 'byte' else 'us_per_message'}"


def with_points(profiles: pd.DataFrame, measured: pd.DataFrame) -> pd.DataFrame:
    """profiles with, per profiled run, its point's measured passes (the throughput rows of measured with
    the same implementation, size and thread count): how many, their throughput range and mean, and
    each side's CPU per byte and per message (mean over the passes; CPU time as cpu_seconds takes it
    under the profiled run's mode). A run without measured passes gets NaN: no cost is computed for it."""
    out = profiles.copy()
    columns = [POINT_PASSES, POINT_LOW, POINT_HIGH, POINT_MEAN] + [point_cpu_column(side, per) for side in SIDES
                                                                    for per in ("byte", "message")]
    for c in columns:
        out[c] = math.nan
    tp = throughput_rows(measured) if len(measured) else measured
    for i, row in out.iterrows():
        passes = tp[(tp["impl"] == row["impl"]) & (tp["msg_size"] == row["msg_size"])
                    & (tp["threads"] == row["threads"])]
        if row.get("mode") != "throughput" or passes.empty:
            continue
        gbps = passes["throughput_gbps"].astype(float)
        out.loc[i, [POINT_PASSES, POINT_LOW, POINT_HIGH, POINT_MEAN]] = [len(passes), gbps.min(), gbps.max(),
                                                                          gbps.mean()]
        for side in SIDES:
            for per in ("byte", "message"):
                out.loc[i, point_cpu_column(side, per)] = point_cpu(passes, side, per, row.get("profile_mode"))
    return out


def point_cpu(passes: pd.DataFrame, side: str, per: str = "byte", mode=None) -> float:
    """A side's CPU time per byte (ns) or per message (µs), mean over a point's measured passes, its CPU
    time as cpu_seconds takes it under a profile's mode (NaN without a pass that says it)."""
    unit, scale = ("bytes", 1e9) if per == "byte" else ("messages", 1e6)
    units = _numbers(passes, unit)
    values = (cpu_seconds(passes, side, mode) * scale / units.where(units > 0)).dropna()
    return float(values.mean()) if len(values) else math.nan


def apart_from_passes(rows: pd.DataFrame, margin: float) -> pd.DataFrame:
    """The profiled runs among rows (with_points) whose throughput over their point's passes' mean lies outside
    the equivalence margin (below 1/(1+margin) or above 1+margin), with that ratio: a run that far from its passes
    was in another state than they were, so its split between the buckets may not be theirs, beyond what the
    shares' sampling ranges cover (review-fresh6 M2). A run without passes is not among them."""
    if POINT_MEAN not in rows or rows.empty:
        return rows.iloc[0:0].assign(ratio=[])
    out = rows.assign(ratio=rows["throughput_gbps"].astype(float) / rows[POINT_MEAN].astype(float))
    return out[(out["ratio"] < 1 / (1 + margin)) | (out["ratio"] > 1 + margin)]


def profile_finding(df: pd.DataFrame) -> dict:
    """The numbers the report cites: at the largest profiled size (the fewest threads there), each
    study implementation's copy shares per side, the CPUs' busy shares, and the bottleneck."""
    rows = profiled(df)
    rows = rows[rows["impl"].isin(STUDY)]
    if rows.empty:
        reason = "no throughput point was profiled"
        notes = df.get("profile_note")
        if notes is not None and notes.dropna().astype(str).str.strip().ne("").any():
            reason += f" ({notes.dropna().astype(str).iloc[0]})"
        return {"reason": reason}
    size = int(rows["msg_size"].max())
    at = rows[rows["msg_size"] == size]
    threads = int(at["threads"].min())
    at = at[at["threads"] == threads]
    out: dict = {"msg_size": size, "threads": threads, "mode": str(at["profile_mode"].iloc[0]),
                 "event": str(at["profile_event"].iloc[0]), "impls": {}}
    for impl, g in at.groupby("impl"):
        entry = {"repetitions": int(g["rep"].nunique()),
                 "samples": {SIDES[s]: float(g[f"{s}_prof_samples"].mean()) for s in SIDES},
                 "skid": {SIDES[s]: float(g[f"{s}_prof_skid"].mean()) for s in SIDES}}
        for side, name in SIDES.items():
            entry[name] = {b: float(g[f"{side}_prof_{b}"].mean()) for b in PROFILE_BUCKETS}
        busy = {SIDES[s]: float(g[f"{s}_cpu_busy"].mean()) for s in SIDES}
        entry["cpu_busy"] = busy
        if all(v == v for v in busy.values()):
            entry["busier_side"] = max(busy, key=busy.get)
        out["impls"][impl] = entry
    costs = copy_costs(at)
    out["copy_ns_per_byte"] = {impl: {f"{r['side']}:{r['bucket']}": float(r["ns_per_byte"])
                                      for _, r in g.iterrows()} for impl, g in costs.groupby("impl")}
    return out


# ------------------------------------------------------------------------------------------------
# a share with its spread: what the explanations compare


@dataclass(frozen=True)
class Share:
    """A bucket's (or several buckets') share of one side's samples at one profiled point, with a
    95% interval: over the profiled runs when there are 2 or more (Student t), else from the one
    run's own samples (Wilson's interval for a proportion); basis says which."""

    mean: float
    low: float
    high: float
    runs: int
    samples: float
    basis: str            # "runs", "samples" or "none" (no profile)

    @property
    def known(self) -> bool:
        return self.runs > 0 and self.mean == self.mean

    def above(self, other: "Share") -> bool:
        """Larger than other beyond both intervals."""
        return self.known and other.known and self.low > other.high

    def pct(self) -> str:
        """'37.4% (33.0–41.8%)': the share and its 95% interval (basis() says what it is over)."""
        if not self.known:
            return "n/a"
        return f"{100 * self.mean:.1f}% ({100 * self.low:.1f}–{100 * self.high:.1f}%)"

    def over(self) -> str:
        if self.basis == "runs":
            return f"95% intervals over {self.runs} profiled runs"
        if self.basis == "samples":
            return f"95% intervals from the {self.samples:.0f} samples of one profiled run"
        return "not profiled"

    def to_dict(self) -> dict:
        return {"mean": self.mean, "low": self.low, "high": self.high, "runs": self.runs,
                "samples": self.samples, "basis": self.basis}


NO_SHARE = Share(math.nan, math.nan, math.nan, 0, 0.0, "none")


def point_rows(profiles: pd.DataFrame, impl: str, size: int, threads: int | None = None) -> pd.DataFrame:
    """The profiled runs of one point (threads None: the fewest profiled at that size)."""
    rows = profiled(profiles)
    rows = rows[(rows["impl"] == impl) & (rows["msg_size"] == size)]
    if rows.empty:
        return rows
    threads = int(rows["threads"].min()) if threads is None else threads
    return rows[rows["threads"] == threads]


def share(rows: pd.DataFrame, side: str, buckets) -> Share:
    """The share of side ("srv"/"cli") in buckets (a name or several, summed per run) over rows."""
    buckets = (buckets,) if isinstance(buckets, str) else tuple(buckets)
    if rows.empty:
        return NO_SHARE
    values = sum(rows[f"{side}_prof_{b}"].fillna(0.0) for b in buckets).astype(float)
    samples = float(rows[f"{side}_prof_samples"].fillna(0).sum())
    n, mean = len(values), float(values.mean())
    if n >= 2:
        half = t_quantile(n - 1) * float(values.std(ddof=1)) / math.sqrt(n)
        return Share(mean, max(mean - half, 0.0), min(mean + half, 1.0), n, samples, "runs")
    return Share(mean, *wilson(mean, samples), 1, samples, "samples")


def wilson(p: float, n: float, z: float = 1.96) -> tuple[float, float]:
    """Wilson's 95% interval of a proportion p observed in n samples ((0, 1) without samples)."""
    if n <= 0:
        return 0.0, 1.0
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(centre - half, 0.0), min(centre + half, 1.0)


def bucket_cost(rows: pd.DataFrame, side: str, buckets, per: str = "byte") -> float:
    """CPU time a side spent in buckets (summed) per byte (ns) or per message (µs), mean over the
    profiled runs rows: the buckets' share of the side's busy samples times the MEASURED point's CPU
    per byte or per message (with_points; NaN for runs without measured passes)."""
    buckets = (buckets,) if isinstance(buckets, str) else tuple(buckets)
    scale = _per_share(rows, side, per)
    used = ~np.isnan(scale)
    if not used.any():
        return math.nan
    shares = sum(_column(rows, f"{side}_prof_{b}") for b in buckets)
    return float((shares * scale)[used].mean())


def _per_share(rows: pd.DataFrame, side: str, per: str) -> np.ndarray:
    """Per profiled run, what a share of 1 of its samples costs on bucket_cost's basis: the measured point's
    CPU per byte or per message over the run's busy share (NaN without a point or a busy sample)."""
    busy_share = 1.0 - _column(rows, f"{side}_prof_idle")
    point = _column(rows, point_cpu_column(side, per), math.nan)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(busy_share > 0, point / busy_share, math.nan)


def _column(rows: pd.DataFrame, column: str, missing: float = 0.0) -> np.ndarray:
    """A column as floats, missing, NaN or not a number taken as missing (a share: 0)."""
    if column not in rows:
        return np.full(len(rows), missing)
    values = pd.to_numeric(rows[column], errors="coerce").to_numpy(dtype=float)
    return np.where(np.isnan(values), missing, values)


@dataclass(frozen=True)
class CostDifference:
    """One bucket's cost (bucket_cost) at two points, x and base, and the range of x − base that the two
    shares' 95% intervals (share) allow on the same basis."""

    x: float
    base: float
    low: float
    high: float

    @property
    def delta(self) -> float:
        return self.x - self.base

    @property
    def material(self) -> bool:
        """Apart beyond both sampling intervals (as Share.above): the range excludes 0."""
        return self.low > 0 or self.high < 0

    def to_dict(self) -> dict:
        return {"x": self.x, "base": self.base, "delta": self.delta, "low": self.low, "high": self.high,
                "material": self.material}


def cost_difference(rx: pd.DataFrame, rb: pd.DataFrame, side: str, buckets, per: str = "byte") -> CostDifference:
    """bucket_cost of buckets in the profiled runs rx minus rb's, with its range: each share's interval
    carried to the cost by the runs' mean cost of a share of 1 (_per_share)."""
    ends = []
    for rows in (rx, rb):
        scales = _per_share(rows, side, per)
        scale = float(np.nanmean(scales)) if (~np.isnan(scales)).any() else math.nan
        s = share(rows, side, buckets)
        ends.append((s.low * scale, s.high * scale))
    (x_low, x_high), (b_low, b_high) = ends
    return CostDifference(bucket_cost(rx, side, buckets, per), bucket_cost(rb, side, buckets, per),
                          x_low - b_high, x_high - b_low)

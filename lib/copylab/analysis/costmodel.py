"""A cost model of each send path: CPU time per message t(n) = a + b*n (Hockney's model of message
passing), a the fixed cost per message (system call, TCP work, A2's iovec import, A3's pinning and
completions), b the cost per byte (the copies), fitted from the sweep's own throughput runs.

- t is a side's CPU time per message: its pinned CPU's busy time over the window (the softirq work done
  there included; the program's task-clock where it was not pinned) over the messages moved.
- The unit is the pass, as for every other interval: in each pass, t at each size is the mean over the
  thread counts, and a least-squares line through the sizes gives that pass's a and b (weights 1/t^2:
  the errors are relative). A cost's value is the mean over the passes, its 95% interval Student's t.
- The line holds over the sizes the data say it does: from the two largest sizes down, a smaller size
  joins while every line, refitted, predicts every size so far within the equivalence margin. Below that
  range TCP packs several small messages into one packet, so a message pays only part of the
  per-packet work and costs less than the line's fixed cost.
- The crossover: the paths share the receiver and the TCP work, so what sets where X overtakes A1 is
  the difference of their senders' lines, dt(n) = da + db*n: X's added cost per message da against its
  saving per byte -db. In each pass the difference of the paired runs (the paths of a cell ran back to
  back) is fitted over the model's sizes, the ones every path's line holds over (the table's, so the
  text's gap is the table's difference). The predicted crossover is da / -db, where the saving
  per byte has paid for the added cost per message, with Fieller's 95% interval for a ratio of means
  (unbounded where the passes do not decide the saving per byte). With the sender saturated (its busy
  share near 1), its time per message is the throughput's inverse, so this is the throughput crossover.
- The host's copy limit (meta.json memcpy, native/memcpyprobe): the ns per byte of one memcpy over the
  study's working set. A path's ceiling is the throughput its per-byte cost alone allows on its costlier
  side: 8 / b Gbit/s.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..inference import mean_interval, t_quantile
from .profiles import cpu_seconds
from .roles import BASE, COMPARED, ONE_COPY, STUDY

SIDES = ("srv", "cli")


@dataclass(frozen=True)
class Estimate:
    """A value with its 95% interval over the passes (low/high NaN below two passes; inf: unbounded)."""

    value: float
    low: float
    high: float
    passes: int
    unit: str

    @staticmethod
    def of(values: list[float], unit: str) -> "Estimate":
        """The mean of per-pass values and its Student-t interval over the passes."""
        finite = [v for v in values if v == v and math.isfinite(v)]
        if not finite:
            return Estimate(math.nan, math.nan, math.nan, 0, unit)
        found = mean_interval(finite)
        mean = sum(finite) / len(finite)
        return Estimate(mean, *(found[1:] if found else (math.nan, math.nan)), len(finite), unit)

    def excludes_zero(self) -> bool:
        return self.low > 0 or self.high < 0

    def to_dict(self) -> dict:
        return {"value": self.value, "low": self.low, "high": self.high, "passes": self.passes, "unit": self.unit}


@dataclass
class PathCosts:
    """One path's costs per side (srv, cli): per_message (µs) and per_byte (ns/B), the fit's worst relative
    residual over the fitted sizes, its costlier side per byte, and the ceiling that side's per-byte cost
    allows against the throughput measured at the largest size."""

    impl: str
    per_message: dict = field(default_factory=dict)
    per_byte: dict = field(default_factory=dict)
    worst_residual: dict = field(default_factory=dict)
    costlier: str = "srv"
    ceiling_gbps: float = math.nan
    largest_gbps: float = math.nan

    @property
    def share_of_ceiling(self) -> float:
        return self.largest_gbps / self.ceiling_gbps if self.ceiling_gbps > 0 else math.nan


@dataclass
class Gap:
    """X's sender against A1's: the added cost per message, the saving per byte and the crossover they set."""

    impl: str
    per_message: Estimate       # da, µs
    per_byte: Estimate          # db, ns/B (negative: X saves per byte)
    crossover: Estimate         # da / -db, bytes (Fieller's interval; high inf: unbounded)
    sizes: list                 # the sizes the difference line holds over
    measured: dict = field(default_factory=dict)   # size -> dt measured (µs, mean of the passes)
    predicted: dict = field(default_factory=dict)  # size -> dt the line gives
    measured_interval: dict = field(default_factory=dict)  # size -> dt measured, its Estimate over the passes

    @property
    def saving(self) -> Estimate:
        """What X saves per byte against A1 (-db), with its interval."""
        e = self.per_byte
        return Estimate(-e.value, -e.high, -e.low, e.passes, e.unit)

    @property
    def bounded(self) -> bool:
        """A crossover at a message size, its interval finite: where the lines cross at n < 0 (X's line below
        A1's at the estimates over the fitted sizes) or the interval reaches below 0, there is none to place."""
        c = self.crossover
        return c.value == c.value and c.value > 0 and c.low >= 0 and math.isfinite(c.high)


@dataclass
class CostModel:
    paths: dict                 # impl -> PathCosts
    gaps: dict                  # compared impl -> Gap
    sizes: list                 # the sizes the paths' lines hold over
    measured_sizes: list
    memcpy: dict                # meta.json's reference ({} when the sweep has none)
    extra_per_byte: Estimate | None = None  # A1's sender per-byte cost over A2's: its extra copy (ns/B)

    @property
    def memcpy_ns_per_byte(self) -> float:
        value = self.memcpy.get("ns_per_byte") if isinstance(self.memcpy, dict) else None
        return float(value) if isinstance(value, (int, float)) and value > 0 else math.nan

    @property
    def extra_in_memcpys(self) -> float:
        """A1's extra per-byte cost counted in memcpys of this host."""
        return self.extra_per_byte.value / self.memcpy_ns_per_byte if self.extra_per_byte else math.nan


def per_message_times(rows: pd.DataFrame) -> pd.DataFrame:
    """impl, msg_size, threads, rep, srv_us, cli_us: each throughput run's CPU time per message per side."""
    tp = rows[(rows["mode"] == "throughput") & rows["impl"].isin(STUDY)]
    if tp.empty or "messages" not in tp:
        return pd.DataFrame(columns=["impl", "msg_size", "threads", "rep", "srv_us", "cli_us"])
    messages = pd.to_numeric(tp["messages"], errors="coerce")
    pinned = "srv_cpu_busy" in tp and tp["srv_cpu_busy"].notna().any()
    per = {side: cpu_seconds(tp, side, "per_cpu" if pinned else None) * 1e6 / messages.where(messages > 0)
           for side in SIDES}
    out = tp[["impl", "msg_size", "threads", "rep"]].assign(srv_us=per["srv"], cli_us=per["cli"])
    return out.dropna(subset=["srv_us", "cli_us"])


def fit_line(sizes, times, weights=None) -> tuple[float, float]:
    """(a µs, b ns/B) of t = a + b*n by weighted least squares (weights default 1/t: relative errors)."""
    sizes, times = np.asarray(sizes, dtype=float), np.asarray(times, dtype=float)
    weight = 1.0 / times if weights is None else np.asarray(weights, dtype=float)
    design = np.column_stack([np.ones_like(sizes), sizes]) * weight[:, None]
    (a, b), *_ = np.linalg.lstsq(design, times * weight, rcond=None)
    return float(a), float(b) * 1e3


def _line(a: float, b: float, sizes) -> np.ndarray:
    return a + b * np.asarray(sizes, dtype=float) / 1e3


def _grow(sizes: list[int], holds) -> list[int]:
    """The two largest sizes, then each smaller one while holds(the sizes so far) stays true."""
    chosen = sizes[-2:]
    for size in reversed(sizes[:-2]):
        if not holds([size] + chosen):
            break
        chosen = [size] + chosen
    return chosen


def _by_pass(times: pd.DataFrame, impl: str, side: str) -> pd.DataFrame:
    """Per pass (rows) and size (columns): impl's mean time per message over the thread counts."""
    return times[times["impl"] == impl].groupby(["rep", "msg_size"])[f"{side}_us"].mean().unstack("msg_size")


def _path_costs(times: pd.DataFrame, impl: str, sizes: list[int], largest_gbps: float) -> PathCosts:
    costs = PathCosts(impl, largest_gbps=largest_gbps)
    for side in SIDES:
        table = _by_pass(times, impl, side).reindex(columns=sizes).dropna()
        fits = [fit_line(sizes, row.to_numpy()) for _, row in table.iterrows() if (row > 0).all()]
        costs.per_message[side] = Estimate.of([a for a, _ in fits], "µs")
        costs.per_byte[side] = Estimate.of([b for _, b in fits], "ns/B")
        means = times[times["impl"] == impl].groupby("msg_size")[f"{side}_us"].mean().reindex(sizes)
        fitted = _line(costs.per_message[side].value, costs.per_byte[side].value, sizes)
        costs.worst_residual[side] = float(np.nanmax(np.abs(means.to_numpy() / fitted - 1)))
    costs.costlier = max(SIDES, key=lambda s: np.nan_to_num(costs.per_byte[s].value, nan=-math.inf))
    b = costs.per_byte[costs.costlier].value
    costs.ceiling_gbps = 8 / b if b > 0 else math.nan
    return costs


def _fieller(da: list[float], saving: list[float]) -> Estimate:
    """mean(da) / mean(saving) with Fieller's 95% interval over the passes (paired values); unbounded
    (high inf) where the saving's own interval holds 0."""
    n = len(da)
    if n < 2:
        value = da[0] / saving[0] if n == 1 and saving[0] > 0 else math.nan
        return Estimate(value, math.nan, math.nan, n, "B")
    a, b = np.array(da), np.array(saving)
    ma, mb = a.mean(), b.mean()
    saa, sbb, sab = a.var(ddof=1) / n, b.var(ddof=1) / n, np.cov(a, b, ddof=1)[0, 1] / n
    t = t_quantile(n - 1)
    value = ma / mb if mb > 0 else math.nan
    g = t * t * sbb / (mb * mb) if mb != 0 else math.inf
    if not mb > 0 or g >= 1:
        return Estimate(value, 0.0 if value == value else math.nan, math.inf, n, "B")
    centre = value - g * sab / sbb if sbb > 0 else value
    root = (t / mb) * math.sqrt(max(saa - 2 * value * sab + value * value * sbb - g * (saa - sab * sab / sbb
                                                                                   if sbb > 0 else 0), 0.0))
    return Estimate(value, (centre - root) / (1 - g), (centre + root) / (1 - g), n, "B")


def _gap(times: pd.DataFrame, impl: str, sizes: list[int]) -> Gap | None:
    """impl's sender line against A1's over the model's sizes (the module's docstring): paired per pass."""
    x, base = _by_pass(times, impl, "srv"), _by_pass(times, BASE, "srv")
    passes = sorted(set(x.index) & set(base.index))
    measured = sorted(set(x.columns) & set(base.columns))
    chosen = [s for s in sizes if s in measured]
    if len(chosen) < 2 or not passes:
        return None
    diff = x.loc[passes, measured] - base.loc[passes, measured]
    mean_diff = diff.mean()
    fits = [fit_line(chosen, diff.loc[r, chosen], 1.0 / base.loc[r, chosen]) for r in passes
            if diff.loc[r, chosen].notna().all()]
    da, db = Estimate.of([a for a, _ in fits], "µs"), Estimate.of([b for _, b in fits], "ns/B")
    crossing = _fieller([a for a, _ in fits], [-b / 1e3 for _, b in fits])
    return Gap(impl, da, db, crossing, chosen, {int(s): float(mean_diff[s]) for s in measured},
               {int(s): float(_line(da.value, db.value, [s])[0]) for s in measured},
               {int(s): Estimate.of(diff.loc[passes, s].dropna().tolist(), "µs") for s in measured})


def cost_model(rows: pd.DataFrame, meta: dict, margin: float) -> CostModel | None:
    """The model of every study path measured at two sizes or more (None otherwise)."""
    times = per_message_times(rows)
    measured = sorted(int(s) for s in times["msg_size"].unique()) if len(times) else []
    impls = [i for i in STUDY if i in set(times["impl"])]
    if len(measured) < 2 or BASE not in impls:
        return None
    means = times.groupby(["impl", "msg_size"])[[f"{s}_us" for s in SIDES]].mean()

    def holds(chosen):
        for impl in impls:
            for side in SIDES:
                values = np.array([means[f"{side}_us"].get((impl, n), math.nan) for n in chosen])
                if not (np.isfinite(values).all() and (values > 0).all()):
                    return False
                if np.any(np.abs(values / _line(*fit_line(chosen, values), chosen) - 1) > margin):
                    return False
        return True

    sizes = _grow(measured, holds)
    tp = rows[(rows["mode"] == "throughput") & (rows["msg_size"] == measured[-1])]
    largest = {impl: float(pd.to_numeric(tp.loc[tp["impl"] == impl, "throughput_gbps"], errors="coerce").mean())
               for impl in impls}
    model = CostModel({impl: _path_costs(times, impl, sizes, largest[impl]) for impl in impls},
                      {}, sizes, measured, meta.get("memcpy") if isinstance(meta.get("memcpy"), dict) else {})
    for impl in (i for i in COMPARED if i in impls):
        found = _gap(times, impl, sizes)
        if found is not None:
            model.gaps[impl] = found
    if ONE_COPY in model.gaps:
        model.extra_per_byte = model.gaps[ONE_COPY].saving
    return model

#!/usr/bin/env python3
"""Where the noise of a measurement comes from, and what lowers it: a benchmark (not a test).

    sudo .venv/bin/python tools/variance.py components [--passes 4] [--runs 5]
    sudo .venv/bin/python tools/variance.py factors [--reps 8] [--only congestion,window,...] [--placed]

components: for a few representative throughput points, passes of runs of every point in shuffled
order, as a sweep makes them; the log-throughput variance split into its levels (Kalibera and Jones,
"Rigorous benchmarking in reasonable time", ISMM 2013): within a window (between the client's 50 ms
intervals), between runs of one pass, between passes; and the drift over time (correlation of a
run's residual with the next run's).

factors: each candidate factor's levels against the baseline (cubic, 0.5 s window after a fixed
0.1 s warm-up, sender on CPU 0 and receiver on CPU 1, receive work where veth puts it, a fresh
server per run, address-space randomisation on), the levels alternating in a freshly shuffled order
per repetition: the effect on the mean (ratio with a Welch interval) and on the run-to-run spread
(coefficient of variation, and the ratio of the log variances with an F interval). Factors:
congestion (cubic, bbr), window (0.5, 1, 2 s), rounds (1 x 1 s, 2 x 0.4 s, 3 x 0.2 s at a
steady warm-up), warmup (fixed 0.1 s, fixed 1 s, steady up to 1 s),
rps (each side's receive softirq work on its own CPU), pinning (0/1 vs none), reuse (one server for
all runs, programs run directly), aslr (setarch -R, programs run directly), threads (1, 2, 8);
the namespaces' TCP settings rmem (tcp_rmem max 4 MiB, 1 MiB, 256 KiB vs autotuned), wmem,
autocork (off), notsent (tcp_notsent_lowat 128 KiB) and the guest's idle loop (poll only); and
placement (runs taken as they come vs as a sweep takes them: placement.py). Every engine run
records the round trip between the two CPUs before and after it (apart_share in the summary).

Everything goes through the engine a sweep uses (namespaces, perf stat) but reuse and aslr, which
need the programs run directly (the engine always starts a fresh server); their baseline is run the
same direct way. Results are printed and written to output/variance-<what>.json. Run it on an
otherwise idle machine: numbers taken while other work runs measure that work.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import random
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from scipy import stats as sps

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lib"))

from copylab import perf as perfmod  # noqa: E402
from copylab.placement import CpuDistance, learn, placed  # noqa: E402
from copylab.point import PointSpec, run_point  # noqa: E402
from copylab.runners.native import NativeRunner  # noqa: E402
from copylab.topology import open_topology  # noqa: E402

POINTS = [("a1", 65536, 1), ("a2", 1024, 1), ("a3", 4096, 1), ("a1", 16384, 4)]
BASE = dict(mode="throughput", duration_s=0.5, warmup_s=0.1, pin_server="0", pin_client="1", congestion="cubic")
LEVELS = {
    "congestion": {"cubic": {}, "bbr": {"congestion": "bbr"}},
    "window": {"0.5 s": {}, "1 s": {"duration_s": 1.0}, "2 s": {"duration_s": 2.0}},
    "warmup": {"fixed 0.1 s": {}, "fixed 1 s": {"warmup_s": 1.0}, "steady <= 1 s": {"steady_max_s": 1.0}},
    "rps": {"off": {}, "on": {"rps": True}},
    "pinning": {"pinned 0/1": {}, "not pinned": {"pin_server": None, "pin_client": None}},
    "threads": {"as point": {}, "2": {"threads": 2}, "8": {"threads": 8}},
    # a pass's window over fresh sets of connections (the client's --rounds), each after a steady
    # warm-up as the default grid's, at about the same cost per pass (sweep/rounds.py)
    "rounds": {"1 x 1 s": {"duration_s": 1.0, "steady_max_s": 0.4},
               "2 x 0.4 s": {"duration_s": 0.8, "rounds": 2, "steady_max_s": 0.4},
               "3 x 0.2 s": {"duration_s": 0.6, "rounds": 3, "steady_max_s": 0.4}},
}
# Settings of the namespaces' TCP (net.ipv4 sysctls are per namespace) and of the guest's idle
# loop, applied to both sides for the run and put back after it.
STACK_LEVELS = {
    "rmem": {"autotuned to 32 MiB": {}, "max 4 MiB": {"sysctl": {"net.ipv4.tcp_rmem": "4096 131072 4194304"}},
             "max 1 MiB": {"sysctl": {"net.ipv4.tcp_rmem": "4096 131072 1048576"}},
             "max 256 KiB": {"sysctl": {"net.ipv4.tcp_rmem": "4096 131072 262144"}}},
    "wmem": {"autotuned to 4 MiB": {}, "max 256 KiB": {"sysctl": {"net.ipv4.tcp_wmem": "4096 16384 262144"}}},
    "autocork": {"on": {}, "off": {"sysctl": {"net.ipv4.tcp_autocorking": "0"}}},
    "notsent": {"unlimited": {}, "128 KiB": {"sysctl": {"net.ipv4.tcp_notsent_lowat": "131072"}}},
    "idle": {"haltpoll": {}, "poll only": {"idle_poll": True}},
}
# the sweep's rule (placement.py): runs taken once the two CPUs are near, again when they were apart
PLACEMENT_LEVELS = {"placement": {"as it comes": {}, "placed": {"gated": True}}}
DIRECT_LEVELS = {
    "reuse": {"fresh server": {}, "one server": {"reuse": True}},
    "aslr": {"randomised": {}, "setarch -R": {"aslr": False}},
}


def spec_for(impl: str, size: int, threads: int, rep: int, **changes) -> PointSpec:
    fields = {**BASE, **changes}
    return PointSpec(impl=impl, msg_size=size, threads=fields.pop("threads", threads), rep=rep, topology="netns",
                     **fields).validate()


def engine_run(spec: PointSpec, plan, topo, distance: CpuDistance | None = None, gated: bool = False) -> dict | None:
    """One run through the engine. With distance, the CPUs' round trip is probed before and after
    it (placement.py); gated, the run is also taken as a sweep takes it: once the CPUs are near,
    again when they were apart."""
    cpus = (int(spec.pin_server), int(spec.pin_client)) if distance and spec.pin_server and spec.pin_client else None
    if cpus and gated:
        (row, raw), columns = placed(distance, cpus, "", lambda: run_point(spec, plan, topo))[-1]
        rt = columns["cpu_round_trip_ns"]
    else:
        before = distance.probe(cpus) if cpus else math.nan
        row, raw = run_point(spec, plan, topo)
        rt = max(before, distance.probe(cpus)) if cpus else math.nan
    if row["status"] != "ok":
        print(f"  failed: {spec.point_id()}: {row['error']}", file=sys.stderr)
        return None
    return {"gbps": row["throughput_gbps"], "interval_cv": row["interval_cv"], "bimodal": row["bimodal"] is True,
            "series": (raw.get("series") or {}).get("values"), "window": raw.get("series"), "round_trip_ns": rt}


class Direct:
    """copylab's programs run directly in the namespaces (no perf), for the factors the engine
    cannot vary: one server kept across runs, and address-space randomisation off."""

    def __init__(self, topo):
        self.topo, self.servers, self.port = topo, {}, 41000

    def _server(self, spec: PointSpec, aslr: bool):
        self.port += 1
        runner = NativeRunner(spec.impl)
        argv = (["setarch", "-R"] if not aslr else []) + runner.server_argv(spec, self.topo.server_addr, self.port, "")
        proc = subprocess.Popen(self.topo.server_host.command(["taskset", "-c", "0", *argv]),
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        proc.stderr.readline()  # "listening on ..."
        return proc, self.port

    def run(self, spec: PointSpec, reuse: bool = False, aslr: bool = True) -> dict | None:
        key = (spec.impl, spec.msg_size)
        if reuse and key in self.servers:
            server, port = self.servers[key]
        else:
            server, port = self._server(spec, aslr)
            if reuse:
                self.servers[key] = (server, port)
        argv = (["setarch", "-R"] if not aslr else []) + NativeRunner(spec.impl).client_argv(
            spec, self.topo.server_addr, port, "")
        argv = [a for a in argv if a != "--announce-window"]
        proc = subprocess.run(self.topo.client_host.command(["taskset", "-c", "1", *argv]), capture_output=True,
                              text=True, timeout=60)
        if not reuse:
            server.send_signal(2)
            server.wait(timeout=10)
        try:
            out = json.loads(proc.stdout.strip().splitlines()[-1])
        except (ValueError, IndexError):
            print(f"  failed (direct): {proc.stderr.strip()[-200:]}", file=sys.stderr)
            return None
        return {"gbps": out["throughput_gbps"], "interval_cv": math.nan, "bimodal": False, "series": None}

    def close(self):
        for server, _ in self.servers.values():
            server.send_signal(2)
            server.wait(timeout=10)


@contextlib.contextmanager
def stack_settings(topo, change: dict):
    """Both namespaces' sysctls and the guest's idle states as change asks, put back afterwards."""
    namespaces = (topo.server_ns, topo.client_ns)
    saved = {}
    for key, value in change.get("sysctl", {}).items():
        saved[key] = subprocess.run(["ip", "netns", "exec", namespaces[0], "sysctl", "-n", key], check=True,
                                    capture_output=True, text=True).stdout.strip()
        for ns in namespaces:
            subprocess.run(["ip", "netns", "exec", ns, "sysctl", "-qw", f"{key}={value}"], check=True)
    halt_states = sorted(Path("/sys/devices/system/cpu").glob("cpu[0-9]*/cpuidle/state[1-9]/disable"))
    if change.get("idle_poll"):
        for state in halt_states:
            state.write_text("1")
    try:
        yield
    finally:
        if change.get("idle_poll"):
            for state in halt_states:
                state.write_text("0")
        for key, value in saved.items():
            for ns in namespaces:
                subprocess.run(["ip", "netns", "exec", ns, "sysctl", "-qw", f"{key}={value}"], check=True)


# ------------------------------------------------------------------------------------------------
# statistics


def cv(values) -> float:
    v = np.asarray(values, float)
    return float(v.std(ddof=1) / v.mean()) if len(v) >= 2 and v.mean() > 0 else math.nan


def ratio_ci(x, base) -> tuple[float, float, float]:
    """Ratio of geometric means with a Welch 95% interval on the log scale."""
    lx, lb = np.log(x), np.log(base)
    d = lx.mean() - lb.mean()
    vx, vb = lx.var(ddof=1) / len(lx), lb.var(ddof=1) / len(lb)
    df = (vx + vb) ** 2 / (vx ** 2 / (len(lx) - 1) + vb ** 2 / (len(lb) - 1)) if vx + vb > 0 else math.inf
    half = sps.t.ppf(0.975, df) * math.sqrt(vx + vb)
    return math.exp(d), math.exp(d - half), math.exp(d + half)


def variance_ratio_ci(x, base) -> tuple[float, float, float]:
    """Ratio of the log variances (x over base) with its 95% F interval."""
    vx, vb = np.var(np.log(x), ddof=1), np.var(np.log(base), ddof=1)
    r, d1, d2 = vx / vb, len(x) - 1, len(base) - 1
    return r, r / sps.f.ppf(0.975, d1, d2), r / sps.f.ppf(0.025, d1, d2)


# ------------------------------------------------------------------------------------------------
# the two studies


def factors(args) -> dict:
    chosen = args.only.split(",") if args.only else [*LEVELS, *STACK_LEVELS, *PLACEMENT_LEVELS, *DIRECT_LEVELS]
    rng = random.Random(args.seed)
    plan = perfmod.probe()
    results: dict = {}
    started = time.monotonic()
    with open_topology("netns") as topo, CpuDistance() as distance:
        direct = Direct(topo)
        try:
            for rep in range(args.reps):
                cases = [(f, lvl, p) for f in chosen for lvl in {**LEVELS, **STACK_LEVELS, **PLACEMENT_LEVELS, **DIRECT_LEVELS}[f] for p in POINTS]
                rng.shuffle(cases)
                for factor, level, (impl, size, threads) in cases:
                    change = {**LEVELS, **STACK_LEVELS, **PLACEMENT_LEVELS, **DIRECT_LEVELS}[factor][level]
                    if factor in DIRECT_LEVELS:
                        spec = spec_for(impl, size, threads, rep)
                        out = direct.run(spec, reuse=change.get("reuse", False), aslr=change.get("aslr", True))
                    elif factor in STACK_LEVELS:
                        with stack_settings(topo, change):
                            out = engine_run(spec_for(impl, size, threads, rep), plan, topo, distance, args.placed)
                    elif factor in PLACEMENT_LEVELS:
                        out = engine_run(spec_for(impl, size, threads, rep), plan, topo, distance, **change)
                    else:
                        out = engine_run(spec_for(impl, size, threads, rep, **change), plan, topo, distance,
                                         args.placed)
                    if out:
                        results.setdefault(f"{factor}|{level}|{impl} {size} B {threads} thr", []).append(out)
                print(f"repetition {rep + 1}/{args.reps} done ({time.monotonic() - started:.0f} s)", file=sys.stderr)
        finally:
            direct.close()
    return summarise_factors(results, chosen)


def summarise_factors(results: dict, chosen: list[str]) -> dict:
    table = []
    trips = [r.get("round_trip_ns", math.nan) for runs in results.values() for r in runs]
    line = learn(trips).line_ns or math.inf  # the rule's line, learned from every run's round trip
    for factor in chosen:
        levels = list({**LEVELS, **STACK_LEVELS, **PLACEMENT_LEVELS, **DIRECT_LEVELS}[factor])
        for impl, size, threads in POINTS:
            point = f"{impl} {size} B {threads} thr"
            base = [r["gbps"] for r in results.get(f"{factor}|{levels[0]}|{point}", [])]
            for level in levels:
                runs = results.get(f"{factor}|{level}|{point}", [])
                values = [r["gbps"] for r in runs]
                entry = {"factor": factor, "level": level, "point": point, "n": len(values),
                         "mean_gbps": float(np.mean(values)) if values else math.nan, "cv": cv(values),
                         "interval_cv": float(np.nanmean([r["interval_cv"] for r in runs])) if runs else math.nan,
                         "apart_share": float(np.mean([r.get("round_trip_ns", math.nan) > line
                                                       for r in runs])) if runs else math.nan,
                         "bimodal_share": float(np.mean([r["bimodal"] for r in runs])) if runs else math.nan}
                if level != levels[0] and len(values) >= 2 and len(base) >= 2:
                    entry["mean_ratio"] = ratio_ci(values, base)
                    entry["variance_ratio"] = variance_ratio_ci(values, base)
                table.append(entry)
    return {"factors": table}


def components(args) -> dict:
    rng = random.Random(args.seed)
    plan = perfmod.probe()
    runs = []
    started = time.monotonic()
    with open_topology("netns") as topo, CpuDistance() as distance:
        for p in range(args.passes):
            order = [pt for pt in POINTS for _ in range(args.runs)]
            rng.shuffle(order)
            for impl, size, threads in order:
                out = engine_run(spec_for(impl, size, threads, p), plan, topo, distance, gated=args.placed)
                if out:
                    runs.append({"pass": p, "point": f"{impl} {size} B {threads} thr", "t": time.monotonic(), **out})
            print(f"pass {p + 1}/{args.passes} done ({time.monotonic() - started:.0f} s)", file=sys.stderr)
    return {"components": nested_components(runs)}


def nested_components(runs: list[dict]) -> list[dict]:
    """Per point: log-scale variance within windows, between runs of a pass, between passes; and
    the lag-1 correlation of consecutive runs' residuals (drift)."""
    out = []
    for point in sorted({r["point"] for r in runs}):
        mine = [r for r in runs if r["point"] == point]
        within = []
        for r in mine:
            series = r.get("window") or {}
            values = series.get("values") or []
            inside = [v for v in values[series.get("window_first", 0):series.get("window_last", -1) + 1] if v and v > 0]
            if len(inside) >= 3:
                within.append((np.var(np.log(inside), ddof=1), len(inside)))
        s1 = float(np.mean([w for w, _ in within])) if within else math.nan
        k = float(np.mean([n for _, n in within])) if within else math.nan
        by_pass: dict[int, list[float]] = {}
        for r in mine:
            by_pass.setdefault(r["pass"], []).append(math.log(r["gbps"]))
        runs_var = np.mean([np.var(v, ddof=1) for v in by_pass.values() if len(v) >= 2])
        pass_means = [np.mean(v) for v in by_pass.values()]
        m = np.mean([len(v) for v in by_pass.values()])
        s2 = max(runs_var - s1 / k, 0.0) if not math.isnan(s1) else runs_var
        s3 = max(np.var(pass_means, ddof=1) - runs_var / m, 0.0) if len(pass_means) >= 2 else math.nan
        out.append({"point": point, "runs": len(mine), "within_window_var": s1, "intervals_per_window": k,
                    "between_runs_var": float(s2), "between_passes_var": float(s3),
                    "run_cv": cv([r["gbps"] for r in mine])})
    order = sorted(runs, key=lambda r: r["t"])
    residual = {}
    for point in {r["point"] for r in runs}:
        mean = np.mean([math.log(r["gbps"]) for r in runs if r["point"] == point])
        residual[point] = mean
    res = [math.log(r["gbps"]) - residual[r["point"]] for r in order]
    lag1 = float(np.corrcoef(res[:-1], res[1:])[0, 1]) if len(res) > 3 else math.nan
    return [*out, {"point": "all", "lag1_residual_correlation": lag1}]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="what", required=True)
    f = sub.add_parser("factors")
    f.add_argument("--reps", type=int, default=8)
    f.add_argument("--only", default="")
    f.add_argument("--placed", action="store_true",
                   help="take every level's runs as a sweep does (placement.py), so a factor is not "
                        "confounded with where the vCPUs were")
    c = sub.add_parser("components")
    c.add_argument("--passes", type=int, default=4)
    c.add_argument("--runs", type=int, default=5)
    c.add_argument("--placed", action="store_true", help="take the runs as a sweep does (placement.py)")
    for p in (f, c):
        p.add_argument("--seed", type=int, default=2026)
        p.add_argument("--out", default="")
    args = parser.parse_args()
    result = factors(args) if args.what == "factors" else components(args)
    result.update(measured_at=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), args=vars(args))
    out = Path(args.out or f"output/variance-{args.what}.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1, default=float))
    print(json.dumps(result, indent=1, default=float))
    return 0


if __name__ == "__main__":
    sys.exit(main())

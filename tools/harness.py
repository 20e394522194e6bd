#!/usr/bin/env python3
"""Is the harness as fast as the fastest peer? A benchmark (not a test) behind the README's table.

    sudo .venv/bin/python tools/harness.py [--reps 5] [--sizes 64,1024,4096,16384,65536]
                                           [--window 2] [--warmup 1] [--impls a1,a2]

For every message size: each implementation against iperf3 in throughput mode (1 connection) and
against sockperf in latency mode (p50 round trip), all through the engine a sweep uses (two
namespaces joined by veth, sender on CPU 0, receiver on CPU 1, cubic, perf stat on both sides),
with steady-state windows: copylab's client opens its window once the rates settle (at most
--warmup later than 0.1 s), iperf3 discards its first --warmup seconds; the variants alternate in a
freshly shuffled order per repetition. Then the same iperf3 and sockperf outside the engine (run
directly in the namespaces, pinned the same way, no perf), and sockperf with and without the
preloaded libnosleep.so, to show the engine handicaps no peer.

Per comparison: the medians, the ratio of the medians with a 95% bootstrap interval
(scipy.stats.bootstrap, percentile), and the geometric-mean ratio with a Welch interval on the log
scale. Printed as tables and written to output/harness.json. Run it on an otherwise idle machine.
"""

from __future__ import annotations

import argparse
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

from copylab import perf as perfmod, registry  # noqa: E402
from copylab.paths import BUILD_DIR  # noqa: E402
from copylab.point import PointSpec, run_point  # noqa: E402
from copylab.runners.iperf3 import iperf3_window  # noqa: E402
from copylab.runners.sockperf import nearest_rank, sockperf_rtts  # noqa: E402
from copylab.topology import open_topology  # noqa: E402

PIN = dict(pin_server="0", pin_client="1")


def engine_spec(impl: str, mode: str, size: int, args, rep: int, working_set: int | None = None,
                profile: bool = False) -> PointSpec:
    native = registry.get(impl).native
    extra = {"working_set": working_set} if native and working_set else {}
    return PointSpec(impl=impl, mode=mode, msg_size=size, threads=1, rep=rep, topology="netns",
                     duration_s=args.window, warmup_s=0.1 if native else args.warmup, profile=profile,
                     steady_max_s=args.warmup if native and mode == "throughput" else 0.0, **PIN, **extra).validate()


def value_of(row: dict, mode: str) -> float:
    return row["throughput_gbps"] if mode == "throughput" else row["latency_p50_us"]


class Outside:
    """iperf3 and sockperf run directly in the engine's namespaces (no perf, same pinning)."""

    def __init__(self, topo):
        self.topo, self.port = topo, 45000

    def _server(self, argv: list[str], ready: str) -> subprocess.Popen:
        proc = subprocess.Popen(self.topo.server_host.command(["taskset", "-c", "0", *argv]),
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        for line in proc.stdout:
            if ready in line:
                break
        return proc

    def iperf3(self, size: int, args) -> float | None:
        self.port += 1
        server = self._server(["iperf3", "-s", "-1", "-B", self.topo.server_addr, "-p", str(self.port),
                               "--forceflush"], "Server listening")
        seconds = math.ceil(args.warmup + args.window)
        out = subprocess.run(self.topo.client_host.command(
            ["taskset", "-c", "1", "iperf3", "-c", self.topo.server_addr, "-p", str(self.port), "-R", "-l", str(size),
             "-t", str(seconds), "-i", "0.1", "-C", "cubic", "-J"]), capture_output=True, text=True, timeout=60)
        server.wait(timeout=10)
        window = iperf3_window(json.loads(out.stdout), args.warmup, seconds - args.warmup)
        return window[0] * 8 / window[1] / 1e9 if window else None

    def sockperf(self, size: int, args, preload: bool) -> float | None:
        self.port += 1
        server = self._server(["sockperf", "server", "--tcp", "-i", self.topo.server_addr, "-p", str(self.port),
                               "-m", "1048575"], "PORT")
        log = Path(f"/tmp/copylab-harness-sockperf-{self.port}.log")
        env = ["env", f"LD_PRELOAD={BUILD_DIR / 'libnosleep.so'}"] if preload else []
        subprocess.run(self.topo.client_host.command(
            ["taskset", "-c", "1", *env, "sockperf", "ping-pong", "--tcp", "-i", self.topo.server_addr, "-p",
             str(self.port), "-m", str(size), "-t", str(math.ceil(args.window + 0.45)), "--full-rtt", "--full-log",
             str(log)]), capture_output=True, text=True, timeout=60)
        server.send_signal(2)
        server.wait(timeout=10)
        try:
            rtts = sorted(sockperf_rtts(log.read_text()))
        finally:
            log.unlink(missing_ok=True)
        return nearest_rank(rtts, 50) if rtts else None


def ratio_stats(x: list[float], base: list[float]) -> dict:
    x, base = np.asarray(x, float), np.asarray(base, float)
    out = {"median": float(np.median(x)), "base_median": float(np.median(base)),
           "median_ratio": float(np.median(x) / np.median(base)), "n": len(x), "base_n": len(base)}
    if len(x) >= 2 and len(base) >= 2:
        boot = sps.bootstrap((x, base), lambda a, b: np.median(a) / np.median(b), vectorized=False,
                             method="percentile", n_resamples=2000, random_state=1)
        out["median_ratio_ci"] = [float(boot.confidence_interval.low), float(boot.confidence_interval.high)]
        lx, lb = np.log(x), np.log(base)
        vx, vb = lx.var(ddof=1) / len(lx), lb.var(ddof=1) / len(lb)
        df = (vx + vb) ** 2 / (vx ** 2 / (len(lx) - 1) + vb ** 2 / (len(lb) - 1)) if vx + vb > 0 else math.inf
        half = float(sps.t.ppf(0.975, df)) * math.sqrt(vx + vb)
        d = lx.mean() - lb.mean()
        out["geo_ratio"] = [math.exp(d), math.exp(d - half), math.exp(d + half)]
    return out


def measure(args) -> dict:
    impls = args.impls.split(",") if args.impls else [i for i in registry.study_impls() if i != registry.by_role("zero_copy")]
    sizes = [int(s) for s in args.sizes.split(",")]
    rng = random.Random(args.seed)
    plan = perfmod.probe()
    values: dict[str, list[float]] = {}
    started = time.monotonic()
    with open_topology("netns") as topo:
        outside = Outside(topo)
        for rep in range(args.reps):
            cases = [("engine", impl, mode, size) for size in sizes
                     for impl, mode in [(i, "throughput") for i in impls + ["iperf3"]]
                     + ([] if args.skip_latency else [(i, "latency") for i in impls + ["sockperf"]])]
            cases += [("outside", tool, None, size) for size in sizes
                      for tool in (("iperf3",) if args.skip_latency else ("iperf3", "sockperf", "sockperf-sleep"))]
            cases += [(f"ws{ws}", impl, "throughput", size) for size in sizes for impl in impls
                      for ws in args.working_sets]
            rng.shuffle(cases)
            for where, impl, mode, size in cases:
                if where == "engine" or where.startswith("ws"):
                    ws = int(where[2:]) if where.startswith("ws") else None
                    row, _ = run_point(engine_spec(impl, mode, size, args, rep, ws), plan, topo)
                    value = value_of(row, mode) if row["status"] == "ok" else None
                    key = f"engine {impl} {mode} {size}" + (f" ws{ws}" if ws else "")
                elif impl == "iperf3":
                    value, key = outside.iperf3(size, args), f"outside iperf3 throughput {size}"
                else:
                    preload = impl == "sockperf"
                    value, key = outside.sockperf(size, args, preload), f"outside {impl} latency {size}"
                if value is not None and value == value:
                    values.setdefault(key, []).append(float(value))
            print(f"repetition {rep + 1}/{args.reps} ({time.monotonic() - started:.0f} s)", file=sys.stderr)
    return {"values": values, "impls": impls, "sizes": sizes, "working_sets": args.working_sets}


def summarise(found: dict) -> dict:
    v, table = found["values"], []
    get = lambda key: v.get(key, [])
    for size in found["sizes"]:
        for impl in found["impls"]:
            table.append({"comparison": f"{impl} / iperf3 throughput", "size": size,
                          **ratio_stats(get(f"engine {impl} throughput {size}"), get(f"engine iperf3 throughput {size}"))})
            table.append({"comparison": f"{impl} / sockperf p50 round trip", "size": size,
                          **ratio_stats(get(f"engine {impl} latency {size}"), get(f"engine sockperf latency {size}"))})
        for ws in found.get("working_sets", []):
            for impl in found["impls"]:
                table.append({"comparison": f"{impl} cycling {ws} B / iperf3 throughput", "size": size,
                              **ratio_stats(get(f"engine {impl} throughput {size} ws{ws}"),
                                            get(f"engine iperf3 throughput {size}"))})
        table.append({"comparison": "iperf3 in the engine / outside", "size": size,
                      **ratio_stats(get(f"engine iperf3 throughput {size}"), get(f"outside iperf3 throughput {size}"))})
        table.append({"comparison": "sockperf in the engine / outside", "size": size,
                      **ratio_stats(get(f"engine sockperf latency {size}"), get(f"outside sockperf latency {size}"))})
        table.append({"comparison": "sockperf without / with its 2 s sleep", "size": size,
                      **ratio_stats(get(f"outside sockperf latency {size}"), get(f"outside sockperf-sleep latency {size}"))})
    return {"table": table}


def print_table(summary: dict) -> None:
    print("| comparison | size | median | baseline median | ratio of medians [95% bootstrap] | geometric ratio [95% Welch] |")
    print("| --- | --- | --- | --- | --- | --- |")
    for e in summary["table"]:
        ci = e.get("median_ratio_ci", [math.nan, math.nan])
        geo = e.get("geo_ratio", [math.nan] * 3)
        print(f"| {e['comparison']} | {e['size']} B | {e['median']:.4g} | {e['base_median']:.4g} | "
              f"{e['median_ratio']:.3f} [{ci[0]:.3f}, {ci[1]:.3f}] | {geo[0]:.3f} [{geo[1]:.3f}, {geo[2]:.3f}] |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--sizes", default="64,1024,4096,16384,65536")
    parser.add_argument("--window", type=float, default=2.0)
    parser.add_argument("--warmup", type=float, default=1.0)
    parser.add_argument("--impls", default="", help="default: the two-copy and one-copy senders")
    parser.add_argument("--working-sets", default="", type=lambda t: [int(x) for x in t.split(",") if x],
                        help="also measure the senders cycling through these working sets (bytes; 1: the "
                             "fewest messages the ring allows)")
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--out", default="output/harness.json")
    parser.add_argument("--skip-latency", action="store_true", help="throughput comparisons only")
    args = parser.parse_args()
    found = measure(args)
    summary = summarise(found)
    print_table(summary)
    result = {**found, **summary, "args": vars(args), "measured_at": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

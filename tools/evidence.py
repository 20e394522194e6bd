#!/usr/bin/env python3
"""Benchmarks (not tests) behind the numbers docs/methodology.md and the README quote.

    sudo .venv/bin/python tools/evidence.py overhead [--reps 5]   # what --profile costs a point
    sudo .venv/bin/python tools/evidence.py peers [--reps 3]      # copylab against iperf3 and sockperf
    sudo .venv/bin/python tools/evidence.py small [--reps 3]      # why the receive strategy matters at 64 B
    .venv/bin/python tools/evidence.py reproducibility OUT1 OUT2 ...  # do back-to-back sweeps agree?
    .venv/bin/python tools/evidence.py precision OUT [OUT ...]    # how much a point's passes vary

Each measurement goes through the engine a sweep uses (two namespaces joined by veth, sender on
CPU 0, receiver on CPU 1, perf stat on both sides), the variants of one comparison alternating in
a freshly shuffled order per repetition, so a drift of the host cannot favour one of them. Ratios
come with the report's own 95% interval (copylab.inference: log scale, paired by repetition,
as every comparison of the report is made).
Results are printed and written as JSON to --out FILE (default output/evidence-<what>.json under
the working folder). Run on an idle machine:
numbers taken while other work runs measure that work.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lib"))

from copylab import perf as perfmod  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from copylab.inference import Outcome, compare_values, log_values, t_quantile  # noqa: E402
from copylab.point import PointSpec, run_point  # noqa: E402
from copylab.topology import open_topology  # noqa: E402

WINDOW = dict(duration_s=1.0, warmup_s=0.2)


def measure(variants: dict[str, PointSpec], reps: int, seed: int) -> dict[str, list[dict]]:
    """Each variant `reps` times, alternating in a shuffled order; the ok rows per variant."""
    rng = random.Random(seed)
    plan = perfmod.probe()
    rows: dict[str, list[dict]] = {name: [] for name in variants}
    started = time.monotonic()
    with open_topology("netns") as topo:
        for rep in range(reps):
            order = list(variants)
            rng.shuffle(order)
            for k, name in enumerate(order):
                row, _ = run_point(variants[name], plan, topo)
                if row["status"] == "ok":
                    rows[name].append(row)
                else:
                    print(f"\n{name}: {row['error']}", file=sys.stderr)
                print(f"\rrep {rep + 1}/{reps} {k + 1}/{len(order)} {time.monotonic() - started:.0f} s", end="",
                      file=sys.stderr, flush=True)
    print(file=sys.stderr)
    return rows


def spec(impl: str, mode: str, size: int, **extra) -> PointSpec:
    return PointSpec(impl=impl, mode=mode, msg_size=size, threads=1, topology="netns", pin_server="0",
                     pin_client="1", **{**WINDOW, **extra})


def values(rows: list[dict], key: str) -> list[float]:
    return [float(r[key]) for r in rows if r.get(key) is not None and r[key] == r[key]]


def ratio_line(label: str, x: list[float], base: list[float], unit: str) -> dict:
    """x/base with its 95% interval, the k-th value of each measured in the same shuffled repetition."""
    frame = pd.DataFrame([{"impl": impl, "msg_size": 0, "threads": 0, "rep": k, "value": v}
                          for impl, vals in (("x", x), ("base", base)) for k, v in enumerate(vals)])
    d = compare_values(log_values(frame, "value"), "x", "base")["by_size"][0]
    text = (f"{label}: {sum(x) / len(x):.4g} vs {sum(base) / len(base):.4g} {unit} (n={d.n_x}/{d.n_base}), "
            f"ratio {d.ratio:.3f}, 95% interval {d.low:.3f}-{d.high:.3f}")
    print(text)
    return {**d.to_dict(), "label": label, "unit": unit, "text": text}


def overhead(args) -> dict:
    """Throughput with and without --profile, at the profiled default points (1 thread)."""
    variants = {}
    for impl in ("a1", "a2", "a3"):
        for size in (64, 65536):
            for prof in (False, True):
                variants[f"{impl} {size} {'profiled' if prof else 'plain'}"] = spec(impl, "throughput", size,
                                                                                    profile=prof)
    rows = measure(variants, args.reps, args.seed)
    out = []
    for impl in ("a1", "a2", "a3"):
        for size in (64, 65536):
            out.append(ratio_line(f"{impl} {size} B throughput, profiled / plain",
                                  values(rows[f"{impl} {size} profiled"], "throughput_gbps"),
                                  values(rows[f"{impl} {size} plain"], "throughput_gbps"), "Gbit/s"))
    return {"ratios": out, "rows": rows}


def peers(args) -> dict:
    """A1 against iperf3 (throughput, 64 B and 64 KiB), A2 against sockperf (64 B round trip p50)."""
    variants = {f"{impl} {size}": spec(impl, "throughput", size) for impl in ("a1", "iperf3") for size in (64, 65536)}
    variants.update({f"{impl} 64 rtt": spec(impl, "latency", 64) for impl in ("a2", "sockperf")})
    rows = measure(variants, args.reps, args.seed)
    out = [ratio_line(f"A1 / iperf3 at {size} B", values(rows[f"a1 {size}"], "throughput_gbps"),
                      values(rows[f"iperf3 {size}"], "throughput_gbps"), "Gbit/s") for size in (64, 65536)]
    out.append(ratio_line("A2 / sockperf round trip p50 at 64 B", values(rows["a2 64 rtt"], "latency_p50_us"),
                          values(rows["sockperf 64 rtt"], "latency_p50_us"), "µs"))
    return {"ratios": out, "rows": rows}


def small(args) -> dict:
    """At 64 B: the receiver reading one message per recv() against draining its socket, per
    message: throughput, the receiver's recv() calls and context switches, the sender's."""
    variants = {f"{impl} {receive}": spec(impl, "throughput", 64, receive=receive)
                for impl in ("a1", "a2") for receive in ("message", "bulk")}
    rows = measure(variants, args.reps, args.seed)
    out = {}
    for name, found in rows.items():
        per = {key: [float(r[key]) / float(r["messages"]) for r in found if r.get(key) == r.get(key)
                     and r.get(key) is not None and r.get("messages")]
               for key in ("recv_calls", "cli_context_switches", "srv_context_switches")}
        summary = {"throughput_gbps": values(found, "throughput_gbps"),
                   **{f"{k}_per_message": v for k, v in per.items()}}
        out[name] = {k: (sum(v) / len(v) if v else None) for k, v in summary.items()}
        print(f"{name}: " + ", ".join(f"{k} {v:.4g}" for k, v in out[name].items() if v is not None))
    for impl in ("a1", "a2"):
        ratio_line(f"{impl} 64 B throughput, message / bulk", values(rows[f"{impl} message"], "throughput_gbps"),
                   values(rows[f"{impl} bulk"], "throughput_gbps"), "Gbit/s")
    return {"means": out, "rows": rows}


QUESTIONS = ("q4_one_copy_vs_two_copy", "q5_zero_copy_vs_two_copy")


def verdict_class(decision: str) -> str:
    """A decision as issue 50 counts a change: equivalent and a difference within the margin are one class."""
    return "within the margin" if Outcome(decision).within_margin else decision


def reproducibility(args) -> dict:
    """Several sweeps of one grid on one host, in the order given (back to back): per Q4/Q5 comparison
    over all thread counts, how often its verdict changes, the variance of its log ratio between sweeps
    against the within-sweep variance its intervals imply (the excess is the between-sweep component,
    estimated by moments as DerSimonian and Laird do), and how often a sweep's 95% interval covers the next
    sweep's ratio (about 83% when nothing but chance differs: Cumming and Maillardet 2006); and which
    crossover each sweep names."""
    docs = []
    for folder in args.sweeps:
        path = Path(folder) / "answers.json"
        if not path.is_file():
            raise SystemExit(f"evidence.py reproducibility: {path} is missing: make the report first "
                             f"(python -m copylab report {folder})")
        docs.append(json.loads(path.read_text()))
    if len(docs) < 2:
        raise SystemExit("evidence.py reproducibility: give two sweeps or more")
    comparisons, covered, pairs, band_covered = {}, 0, 0, 0
    for key in QUESTIONS:
        sizes = sorted(set.intersection(*(set((d.get(key) or {}).get("decision_detail_by_size") or {}) for d in docs)),
                       key=int)
        for size in sizes:
            runs = [d[key]["decision_detail_by_size"][size] for d in docs]
            logs = [math.log(r["ratio"]) for r in runs]
            within = [(math.log(r["high"] / r["low"]) / (2 * t_quantile(r["df"]))) ** 2 for r in runs
                      if r["low"] and r["high"] and r["df"]]
            between = float(np.var(logs, ddof=1))
            classes = [verdict_class(r["decision"]) for r in runs]
            mode = max(set(classes), key=classes.count)
            cover = [runs[i]["low"] <= runs[i + 1]["ratio"] <= runs[i]["high"] for i in range(len(runs) - 1)]
            covered, pairs = covered + sum(cover), pairs + len(cover)
            # the report's own line for a repeat (both runs' errors: a prediction range, not the interval)
            bands = [(d[key].get("repeat_range_by_size") or {}).get(size) for d in docs]
            band_cover = [bool(bands[i]) and bands[i][0] <= runs[i + 1]["ratio"] <= bands[i][1]
                          for i in range(len(runs) - 1)]
            band_covered += sum(band_cover)
            comparisons[f"{key[:2]} {size}"] = {
                "ratios": [r["ratio"] for r in runs], "decisions": [r["decision"] for r in runs],
                "verdict": mode, "same_verdict": classes.count(mode), "of": len(runs),
                "var_between_sweeps": between, "var_within_sweep": float(np.mean(within)) if within else None,
                "between_component": max(between - float(np.mean(within)), 0.0) if within else None,
                "next_covered": cover, "next_in_repeat_range": band_cover}
    crossovers = {key[:2]: [(d.get(key) or {}).get("crossover_bytes") for d in docs] for key in QUESTIONS}
    for name, c in comparisons.items():
        print(f"{name}: {c['same_verdict']}/{c['of']} {c['verdict']}; ratios "
              + " ".join(f"{r:.3f}" for r in c["ratios"]) + f"; between/within variance {c['var_between_sweeps']:.2e}/"
              f"{c['var_within_sweep'] or float('nan'):.2e}; next covered {sum(c['next_covered'])}/{len(c['next_covered'])}")
    for q, found in crossovers.items():
        print(f"{q} crossover per sweep: {found}")
    print(f"a sweep's interval covered the next sweep's ratio in {covered} of {pairs} pairs; its repeat range "
          f"(the report's line beside the crossover) in {band_covered}")
    return {"sweeps": list(args.sweeps), "comparisons": comparisons, "crossovers": crossovers,
            "covered": covered, "pairs": pairs, "in_repeat_range": band_covered}


def precision(args) -> dict:
    """Per sweep: the median coefficient of variation of the study's throughput points over their
    passes, as kept and as it would have been had the runs set aside because the CPUs were apart
    (runs/apart/, placement.py) been kept instead of measured again."""
    import numpy as np
    import pandas as pd

    from copylab.analysis.load import load_results
    from copylab.errors import CopylabError

    out = {}
    for folder in args.sweeps:
        try:  # read and checked as a report reads it (the ok rows, every engine column present)
            df, _ = load_results(folder)
        except CopylabError as exc:
            raise SystemExit(f"evidence.py precision: {exc}") from None
        df = df[(df["mode"] == "throughput") & df["impl"].isin(["a1", "a2", "a3"])]
        if df.empty:
            raise SystemExit(f"evidence.py precision: {Path(folder) / 'results.csv'} has no successful throughput "
                             "row of a1, a2 or a3: nothing to compare")
        first = df.copy()
        for pos, point_id in first["point_id"].items():
            aside = Path(folder) / "runs" / "apart" / f"{point_id}.0.json"
            if aside.is_file():
                first.loc[pos, "throughput_gbps"] = json.loads(aside.read_text())["row"]["throughput_gbps"]

        def median_cv(frame):
            g = frame.groupby(["impl", "msg_size", "threads"])["throughput_gbps"]
            cv = (g.std(ddof=1) / g.mean())[g.count() >= 2]
            if cv.empty:  # one pass only: a spread needs two
                raise SystemExit(f"evidence.py precision: {folder}: no point was measured in two passes or more")
            return float(cv.median()), int(len(cv)), float((cv <= 0.08).mean())

        kept, points, share = median_cv(df)
        came, _, _ = median_cv(first)
        retries = pd.to_numeric(df.get("placement_retries"), errors="coerce").fillna(0)
        trips = pd.to_numeric(df.get("cpu_round_trip_ns"), errors="coerce")
        out[folder] = {"points": points, "median_cv": kept, "points_within_8pct": share, "median_cv_as_it_came": came,
                       "runs_set_aside": int(retries.sum()), "rows_with_a_set_aside_run": int((retries > 0).sum()),
                       "rows": int(len(df)), "still_apart": int((df.get("cpus_apart").astype(str) == "True").sum()),
                       "nearest_round_trip_ns": float(np.nanmin(trips)) if trips.notna().any() else None}
        print(f"{folder}: median CV {100 * kept:.1f}% over {points} points ({100 * share:.0f}% within 8%); "
              f"{100 * came:.1f}% as it came; {int(retries.sum())} runs set aside over {len(df)} rows, "
              f"{out[folder]['still_apart']} kept apart")
    return {"sweeps": out}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="what", required=True)
    for name in ("overhead", "peers", "small"):
        p = sub.add_parser(name)
        p.add_argument("--reps", type=int, default=5 if name == "overhead" else 3)
        p.add_argument("--seed", type=int, default=11)
    p = sub.add_parser("reproducibility")
    p.add_argument("sweeps", nargs="+")
    p = sub.add_parser("precision")
    p.add_argument("sweeps", nargs="+")
    for p in sub.choices.values():
        p.add_argument("--out", metavar="FILE", help="where the JSON goes (default output/evidence-<what>.json "
                                                      "under the working folder)")
    args = parser.parse_args()
    started = time.monotonic()
    result = {"overhead": overhead, "peers": peers, "small": small, "reproducibility": reproducibility,
              "precision": precision}[args.what](args)
    result["wall_s"] = round(time.monotonic() - started, 1)
    result["measured_at"] = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    out = Path(args.out) if args.out else Path("output") / f"evidence-{args.what}.json"
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(result, indent=1, default=str))
    except OSError as exc:
        raise SystemExit(f"evidence.py {args.what}: --out {out}: {exc.strerror}") from None
    print(f"-> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

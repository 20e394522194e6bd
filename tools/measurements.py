#!/usr/bin/env python3
"""docs/measurements.md from the measurement records in docs/measurements/*.json.

    .venv/bin/python tools/measurements.py           # (re)write docs/measurements.md
    .venv/bin/python tools/measurements.py --check   # exit 1 when the page is not its records' (a test runs this)
    .venv/bin/python tools/measurements.py from-sweep OUT [OUT ...] --title T --command C [--wall LABEL=SECONDS ...]
                                                     # a record made from sweep folders' own files
    .venv/bin/python tools/measurements.py from-reproducibility EVIDENCE --title T --command C --out RECORD
                                                     # a record of tools/evidence.py reproducibility's JSON
    .venv/bin/python tools/measurements.py from-test-runs LOG --title T --out RECORD [--since DATE]
                                                     # a record of make test's runs (tools/testsuite.py's log,
                                                     # output/make-test.jsonl): how many needed the retry, which
                                                     # tests it rescued

A record is one measurement as it was taken: where (`host`), when (`date`), what ran (`command`),
under which `conditions`, its `values` (quantity, value), optionally a `table` (columns, rows) and a
`note`. A new measurement is a new record file, not an edit of the page; records are shown newest first.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "lib"))

from copylab.escape import markdown_prose  # noqa: E402

RECORDS = ROOT / "docs" / "measurements"
PAGE = ROOT / "docs" / "measurements.md"
REQUIRED = ("title", "date", "host", "command", "values")


def load(folder: Path = RECORDS) -> list[dict]:
    """Every record, newest first (by date, then file name); a record missing a field is refused."""
    records = []
    for path in sorted(folder.glob("*.json")):
        record = json.loads(path.read_text())
        missing = [key for key in REQUIRED if not record.get(key)]
        if missing:
            raise SystemExit(f"{path}: a measurement record needs {', '.join(missing)}")
        records.append({**record, "file": path.name})
    return sorted(records, key=lambda r: (r["date"], r["file"]), reverse=True)


def render(records: list[dict]) -> str:
    lines = ["# Measurements", "",
             "<!-- written by tools/measurements.py from docs/measurements/*.json: edit the records, not this page -->",
             "",
             "What copylab's commands and sweeps measured on the machines it was built on, each with its host, "
             "date and command. How each number is taken, and why the defaults are what they are: "
             "docs/methodology.md. Numbers from one virtual machine: yours will differ; `make report` measures yours.",
             ""]
    for r in records:
        lines += [f"## {markdown_prose(r['title'])} ({markdown_prose(r['date'])})", "",
                  f"- host: {markdown_prose(r['host'])}", f"- command: {markdown_prose(r['command'])}"]
        if r.get("conditions"):
            lines.append(f"- conditions: {markdown_prose(r['conditions'])}")
        lines += ["- record: `docs/measurements/" + r["file"] + "`", "", "| quantity | value |", "| --- | --- |"]
        lines += [f"| {_cell(v['quantity'])} | {_cell(v['value'])} |" for v in r["values"]]
        if r.get("table"):
            table = r["table"]
            lines += ["", "| " + " | ".join(_cell(c) for c in table["columns"]) + " |",
                      "| " + " | ".join("---" for _ in table["columns"]) + " |"]
            lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in table["rows"]]
        if r.get("note"):
            lines += ["", markdown_prose(r["note"])]
        lines.append("")
    return "\n".join(lines)


def _cell(text: str) -> str:
    return markdown_prose(text).replace("\n", " ")


SWEEP_COLUMNS = ["sweep (start, UTC)", "wall", "base passes + extra", "median CV (points within 8%)",
                 "Q4/Q5 undecided", "overhead", "placement: line; set aside; kept apart", "steal > 10%",
                 "other programs", "rounds per throughput pass (calibration: between connections)"]


def from_sweeps(folders: list[Path], title: str, command: str, conditions: str, walls: dict[str, str]) -> dict:
    """A record whose every number is read from the sweep folders' own files (meta.json, results.csv,
    profiles.csv, answers.json), one table row per sweep; walls: extra wall times measured outside
    them (e.g. `make report` as a whole), by label."""
    import pandas as pd

    from copylab.analysis.load import load_meta
    from copylab.analysis.run_facts import run_facts
    from copylab.fmt import system_summary

    rows, host = [], None
    for folder in folders:
        meta = load_meta(folder)
        df = pd.read_csv(folder / "results.csv", low_memory=False)
        df = df[df.get("run_kind", "measure") == "measure"] if "run_kind" in df else df
        facts = run_facts(df, meta)
        answers = json.loads((folder / "answers.json").read_text()) if (folder / "answers.json").is_file() else {}
        decisions = [d for key in ("q4_one_copy_vs_two_copy", "q5_zero_copy_vs_two_copy")
                     for d in answers.get(key, {}).get("decision_by_size", {}).values()]
        session = (meta.get("sessions") or [{}])[-1]
        placed = meta.get("placement") or {}
        line = placed.get("line_ns")
        rows.append([
            str(meta.get("started_at", "?"))[:16].replace("T", " "),
            f"{facts['wall_s'] / 60:.1f} min" if facts["wall_s"] else "?",
            f"{facts['base_passes']:.0f} + {facts['extra_passes']}" if facts["base_passes"] else "?",
            f"{100 * facts['precision_median_cv']:.1f}% ({facts['precision_within_target']} of "
            f"{facts['precision_points']})" if facts["precision_points"] else "?",
            f"{sum(d == 'undecided' for d in decisions)} of {len(decisions)}" if decisions else "no answers.json",
            f"{session.get('overhead')}x ({session.get('overhead_without_placement')}x without placement)",
            f"{'one mode' if line is None else f'{line:.0f} ns'}; {facts['runs_set_aside']}; {facts['kept_apart']}",
            f"{facts['steal_over_flag']} of {facts['steal_rows']} runs",
            f"{100 * facts['other_programs']:.1f}%" if facts["other_programs"] is not None else "?",
            _rounds(meta.get("rounds"))])
        virt = meta.get("virtualization") if isinstance(meta.get("virtualization"), dict) else {}
        host = host or system_summary(meta) + (f" · {virt['hypervisor_vendor']} guest" if virt.get("hypervisor_vendor") else "")
    values = [{"quantity": f"wall time: {label}", "value": value} for label, value in walls.items()]
    values.append({"quantity": "sweeps", "value": str(len(folders))})
    return {"title": title, "date": rows[0][0][:10] if rows else "?", "host": host or "?", "command": command,
            "conditions": conditions, "values": values, "table": {"columns": SWEEP_COLUMNS, "rows": rows}}


TEST_RUN_COLUMNS = ["started (UTC)", "commit", "wall", "phases (exit status, seconds)", "failed beside the others",
                    "rescued by the retry", "failed alone"]


def from_test_runs(lines: list[str], title: str, command: str = "make test (tools/testsuite.py)",
                   conditions: str = "", since: str = "") -> dict:
    """A record whose numbers are make test's own log lines (tools/testsuite.py): one table row per run
    since `since` (an ISO date or time; all by default), the runs that needed the retry counted, and
    every test the retry rescued with how often."""
    runs = [json.loads(line) for line in lines if line.strip()]
    runs = [r for r in runs if str(r.get("date", "")) >= since]
    rows, rescued = [], {}
    for r in runs:
        for test in r.get("rescued", []):
            rescued[test] = rescued.get(test, 0) + 1
        rows.append([str(r.get("date", "?"))[:16].replace("T", " "), str(r.get("commit") or "?"),
                     f"{r['seconds'] / 60:.1f} min" if isinstance(r.get("seconds"), (int, float)) else "?",
                     ", ".join(f"{p['name']} {p['status']} ({p['seconds']:.0f} s)" for p in r.get("phases", [])),
                     ", ".join(r.get("failed_beside_others", [])) or "none",
                     ", ".join(r.get("rescued", [])) or "none", ", ".join(r.get("failed_alone", [])) or "none"])
    retried = sum(any(p.get("name") == "retry" for p in r.get("phases", [])) for r in runs)
    values = [{"quantity": "runs", "value": str(len(runs))},
              {"quantity": "runs that needed the retry", "value": f"{retried} of {len(runs)}"},
              {"quantity": "runs that failed (the retry's verdict)", "value": str(sum(r.get("status") != 0 for r in runs))},
              {"quantity": "tests the retry rescued (runs)",
               "value": "; ".join(f"{t} ({n})" for t, n in sorted(rescued.items())) or "none"}]
    hosts = sorted({f"{r.get('host', '?')} ({r.get('cpus', '?')} CPUs)" for r in runs})
    return {"title": title, "date": rows[0][0][:10] if rows else "?", "host": ", ".join(hosts) or "?",
            "command": command, "conditions": conditions, "values": values,
            "table": {"columns": TEST_RUN_COLUMNS, "rows": rows}}


REPRODUCIBILITY_COLUMNS = ["comparison", "ratio per sweep", "decision per sweep", "same verdict",
                           "variance between sweeps / within", "next run in the interval", "in the repeat range"]


def from_reproducibility(evidence: dict, title: str, command: str, conditions: str, date: str, host: str) -> dict:
    """A record whose numbers are tools/evidence.py reproducibility's JSON: one row per Q4/Q5 comparison,
    the crossovers each sweep named, and how often a run's interval (and its repeat range) held the next
    run's ratio."""
    rows = []
    for name, c in evidence["comparisons"].items():
        within = c.get("var_within_sweep")
        rows.append([name, " ".join(f"{r:.3f}" for r in c["ratios"]), ", ".join(c["decisions"]),
                     f"{c['same_verdict']} of {c['of']} ({c['verdict']})",
                     f"{c['var_between_sweeps']:.2e} / {within:.2e}" if within else f"{c['var_between_sweeps']:.2e} / ?",
                     f"{sum(c['next_covered'])} of {len(c['next_covered'])}",
                     f"{sum(c.get('next_in_repeat_range', []))} of {len(c['next_covered'])}"])
    runs = len(evidence["sweeps"])

    def named(found: list) -> str:
        counts = {}
        for value in found:
            counts[value] = counts.get(value, 0) + 1
        return "; ".join(f"{'none' if k is None else f'{k} B'} in {n} of {runs}" for k, n in counts.items())

    same = sum(c["same_verdict"] >= runs - 1 for c in evidence["comparisons"].values())
    values = [{"quantity": "sweeps", "value": str(runs)},
              *({"quantity": f"{q.upper()} crossover named", "value": named(found)}
                for q, found in evidence["crossovers"].items()),
              {"quantity": f"comparisons whose verdict is the same in at least {runs - 1} of {runs}",
               "value": f"{same} of {len(evidence['comparisons'])}"},
              {"quantity": "pairs of consecutive runs where the first's 95% interval holds the next's ratio",
               "value": f"{evidence['covered']} of {evidence['pairs']}"},
              {"quantity": "... where the first's repeat range (the report's line beside the crossover) holds it",
               "value": f"{evidence.get('in_repeat_range', '?')} of {evidence['pairs']}"}]
    return {"title": title, "date": date, "host": host, "command": command, "conditions": conditions,
            "values": values, "table": {"columns": REPRODUCIBILITY_COLUMNS, "rows": rows}}


def _rounds(chosen) -> str:
    """'2 x 0.40 s (8.8%)': the rounds a throughput pass took and the calibration's per-connection
    spread ('1' for a sweep before rounds)."""
    if not isinstance(chosen, dict) or not isinstance(chosen.get("rounds"), int):
        return "1"
    k, cv = chosen["rounds"], chosen.get("per_connection_cv")
    text = f"{k} x {chosen['duration_s'] / k:.2f} s"
    return text + (f" ({100 * cv:.1f}%)" if isinstance(cv, (int, float)) else "")


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "from-test-runs":
        parser = argparse.ArgumentParser(prog="measurements.py from-test-runs")
        parser.add_argument("log", type=Path, help="tools/testsuite.py's log (output/make-test.jsonl)")
        parser.add_argument("--title", required=True)
        parser.add_argument("--conditions", default="")
        parser.add_argument("--since", default="", help="only the runs from this ISO date or time on")
        parser.add_argument("--out", type=Path, required=True, help="the record file to write (docs/measurements/...json)")
        args = parser.parse_args(sys.argv[2:])
        record = from_test_runs(args.log.read_text().splitlines(), args.title, conditions=args.conditions,
                                since=args.since)
        args.out.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n")
        print(args.out)
        return 0
    if len(sys.argv) > 1 and sys.argv[1] == "from-reproducibility":
        parser = argparse.ArgumentParser(prog="measurements.py from-reproducibility")
        parser.add_argument("evidence", type=Path, help="tools/evidence.py reproducibility's JSON (--out)")
        for name in ("--title", "--command", "--date", "--host"):
            parser.add_argument(name, required=True)
        parser.add_argument("--conditions", default="")
        parser.add_argument("--out", type=Path, required=True, help="the record file to write (docs/measurements/...json)")
        args = parser.parse_args(sys.argv[2:])
        record = from_reproducibility(json.loads(args.evidence.read_text()), args.title, args.command,
                                      args.conditions, args.date, args.host)
        args.out.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n")
        print(args.out)
        return 0
    if len(sys.argv) > 1 and sys.argv[1] == "from-sweep":
        parser = argparse.ArgumentParser(prog="measurements.py from-sweep")
        parser.add_argument("folders", nargs="+", type=Path)
        parser.add_argument("--title", required=True)
        parser.add_argument("--command", required=True)
        parser.add_argument("--conditions", default="")
        parser.add_argument("--wall", action="append", default=[], help="LABEL=VALUE, e.g. 'make report 1=8:24'")
        parser.add_argument("--out", type=Path, required=True, help="the record file to write (docs/measurements/...json)")
        args = parser.parse_args(sys.argv[2:])
        walls = dict(item.split("=", 1) for item in args.wall)
        record = from_sweeps(args.folders, args.title, args.command, args.conditions, walls)
        args.out.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n")
        print(args.out)
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when docs/measurements.md is out of date")
    args = parser.parse_args()
    page = render(load())
    if args.check:
        if not PAGE.is_file() or PAGE.read_text() != page:
            print(f"{PAGE.relative_to(ROOT)} is not what its records give: run tools/measurements.py", file=sys.stderr)
            return 1
        return 0
    PAGE.write_text(page)
    print(PAGE.relative_to(ROOT))
    return 0


if __name__ == "__main__":
    sys.exit(main())

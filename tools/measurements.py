#!/usr/bin/env python3
"""docs/measurements.md from the measurement records in docs/measurements/*.json.

    .venv/bin/python tools/measurements.py           # (re)write docs/measurements.md
    .venv/bin/python tools/measurements.py --check   # exit 1 when the page is not its records' (a test runs this)

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


def main() -> int:
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

"""`copylab report RESULTS_DIR`: execute notebooks/analysis.ipynb with papermill on a finished sweep
folder and write answers.json, report.html and report.pdf into it (or --output-dir), with the executed
notebook kept beside them as the record of what the report was made from."""

from __future__ import annotations

import argparse


def register(subparsers) -> None:
    p = subparsers.add_parser("report", help="analysis notebook -> answers.json, report.pdf, report.html",
                              description=__doc__)
    p.add_argument("results_dir", metavar="RESULTS_DIR", help="a sweep folder holding results.csv")
    p.add_argument("--output-dir", help="where to write the report (default: RESULTS_DIR)")
    p.add_argument("--author", help="author name for the report (default: params YAML)")
    p.add_argument("--roll-no", help="roll number (default: params YAML)")
    p.add_argument("--repo-url", help="repository URL (default: params YAML)")
    p.add_argument("--ai-declaration", metavar="FILE", help="file holding the AI-usage declaration")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..report import build_report, main_progress

    paths = build_report(args.results_dir, output_dir=args.output_dir, author=args.author,
                         roll_no=args.roll_no, repo_url=args.repo_url,
                         ai_declaration=args.ai_declaration, progress=main_progress)
    print(f"notebook: {paths['notebook']}")
    print(f"answers:  {paths['answers']}")
    print(f"html:     {paths['html']}")
    print(paths["pdf"])  # last line: the PDF, for `make report` and scripts
    return 0

"""`copylab bundle RESULTS_DIR --roll ROLL`: the course submission made from a reported sweep folder,
<ROLL>_PA02/ and <ROLL>_PA02.zip: course-named C sources, Makefile, run-all script, plot scripts, the
results CSV and the report; refused while author fields or the declaration are placeholders."""

from __future__ import annotations

import argparse
import sys


def register(subparsers) -> None:
    p = subparsers.add_parser("bundle", help="the submission folder + zip: course-named C sources, Makefile, "
                                             "run-all script, plot scripts, results CSV, report",
                              description=__doc__)
    p.add_argument("results_dir", metavar="RESULTS_DIR", help="a sweep folder with results.csv and report.pdf")
    p.add_argument("--roll", help="roll number, names every file (default: the report's, else the params YAML's)")
    p.add_argument("--out", metavar="DIR", help="where to write the bundle (default: RESULTS_DIR)")
    p.add_argument("--author", help="author name (default: the report's, else the params YAML's)")
    p.add_argument("--repo-url", help="repository URL (default: the report's, else the params YAML's)")
    p.add_argument("--ai-declaration", metavar="FILE", help="file holding the AI-usage declaration")
    p.add_argument("--draft", action="store_true",
                   help="bundle although author fields or the declaration are still placeholders")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..bundle import build_bundle  # pandas & co load only when a bundle is made
    from ..report import main_progress

    result = build_bundle(args.results_dir, roll=args.roll, out_dir=args.out, author=args.author,
                          repo_url=args.repo_url, ai_declaration=args.ai_declaration, progress=main_progress,
                          draft=args.draft)
    for warning in result["warnings"]:
        print(f"copylab bundle: warning: {warning}", file=sys.stderr)
    print(result["folder"])
    print(result["zip"])  # last line: the archive to hand in
    return 0

"""`copylab compare A B`: two finished sweeps compared, every change from A to B decided (win, loss,
equivalent, undecided, with its 95% interval and Holm's correction), written as comparison.json,
comparison.html and comparison.pdf into their own folder; nothing is written into A or B."""

from __future__ import annotations

import argparse


def register(subparsers) -> None:
    p = subparsers.add_parser("compare", help="two sweeps compared: every change from A to B decided",
                              description=__doc__)
    p.add_argument("a", metavar="A", help="sweep folder A (results.csv + meta.json)")
    p.add_argument("b", metavar="B", help="sweep folder B, compared against A (every ratio is B/A)")
    p.add_argument("--label-a", help="A's name in the report (default: its folder's name)")
    p.add_argument("--label-b", help="B's name in the report (default: its folder's name)")
    p.add_argument("--out", metavar="DIR", help="where to write the comparison (default: output/compare-<A>-vs-<B>)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..compare_report import build_comparison
    from ..report import main_progress

    paths = build_comparison(args.a, args.b, args.label_a, args.label_b, args.out, progress=main_progress)
    print(f"notebook:   {paths['notebook']}")
    print(f"comparison: {paths['comparison']}")
    print(f"html:       {paths['html']}")
    print(paths["pdf"])  # last line: the PDF, as copylab report prints its own
    return 0

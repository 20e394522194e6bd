"""`copylab lab [RESULTS_DIR]`: JupyterLab on a sweep folder, opened at a working copy of the analysis
notebook (RESULTS_DIR/work/analysis.ipynb); the templates in notebooks/ and the sweep's own files are
never overwritten."""

from __future__ import annotations

import argparse


def register(subparsers) -> None:
    p = subparsers.add_parser("lab", help="JupyterLab on a sweep folder, at a working copy of the analysis",
                              description=__doc__)
    p.add_argument("results_dir", metavar="RESULTS_DIR", nargs="?", default="output/default",
                   help="a sweep folder holding results.csv (default: output/default)")
    p.add_argument("--port", type=int, help="the port to serve on (default: the first free one from 8888)")
    browser = p.add_mutually_exclusive_group()
    browser.add_argument("--browser", dest="open_browser", action="store_true", default=None,
                         help="open a browser (default: when there is a graphical session)")
    browser.add_argument("--no-browser", dest="open_browser", action="store_false")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..analysis import resolve_results_dir
    from ..lab import start

    return start(resolve_results_dir(args.results_dir), port=args.port, open_browser=args.open_browser)

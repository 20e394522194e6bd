"""`copylab sweep PARAMS.yaml`: measure every point of a grid (params/*.yaml) with papermill, in the
grid's topology (network namespaces by default), and write results.csv, meta.json and sweep.log into
the output folder, with every run's record and each group of points' executed notebook under runs/.
Resumable: run it again on the same grid and folder and it measures only what is missing. With
--report it then writes report.pdf and report.html there, as `make report` does."""

from __future__ import annotations

import sys
import textwrap


def register(subparsers) -> None:
    p = subparsers.add_parser("sweep", help="run a params/*.yaml grid (resumes where it stopped)")
    p.add_argument("params", help="grid file, e.g. params/default.yaml")
    p.add_argument("--out", metavar="DIR", help="output folder (default output/<name from the grid>)")
    p.add_argument("--force", action="store_true", help="re-measure points that are already done")
    p.add_argument("--restart", action="store_true",
                   help="the output folder holds another grid's sweep: move it aside and start over")
    p.add_argument("--allow-large", action="store_true",
                   help="run a grid estimated at more than 24 h or more memory than the host has")
    p.add_argument("--mixed-builds", action="store_true",
                   help="resume although finished points were measured by another build of native/ (kept, "
                        "each row names its build)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--report", action="store_true",
                   help="then write report.pdf/report.html into the output folder (what `make report` does)")
    p.set_defaults(func=sweep_command)


def sweep_command(args) -> int:
    from ..params import load_grid

    grid = load_grid(args.params)  # a bad grid is refused before pandas & papermill are even imported
    from tqdm import tqdm

    from ..sweep import describe, run_sweep
    from ..sweep.progress import PLAIN_WIDTH, terminal_columns

    def say(text: str) -> None:
        # wrapped to the terminal (80 columns without one); through tqdm, which lifts its bar out of the way
        width = terminal_columns(sys.stderr) or PLAIN_WIDTH
        tqdm.write(textwrap.fill(f"copylab sweep: {text}", width=width, subsequent_indent="  ",
                                 break_long_words=False, break_on_hyphens=False), file=sys.stderr)

    summary = run_sweep(args.params, out_dir=args.out, force=args.force, restart=args.restart,
                        allow_large=args.allow_large, progress=not args.no_progress, say=say,
                        mixed_builds=args.mixed_builds, grid=grid)
    print(describe(summary, next_step=not args.report))
    if not args.report:
        # the exit status tells how many points failed (0: all measured)
        return min(summary.failed, 100)
    if summary.failed:
        say(f"WARNING: {summary.failed} point(s) failed; the report uses the {summary.total - summary.failed} "
            f"that were measured (errors in {summary.out_dir / 'sweep.log'})")
    from ..report import build_report  # imports nbconvert & co only when a report is asked for

    paths = build_report(summary.out_dir)
    print(paths["pdf"])  # last line: where the report is
    return 0

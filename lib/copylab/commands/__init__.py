"""The commands of `python -m copylab`, one module each: run, doctor, clean, sweep, report, bundle, lab, compare.

A module joins the CLI by appearing in COMMANDS and defining `register(subparsers)` (adds its
subparser and sets `func`); `func(args)` returns the exit status.
"""

COMMANDS = ("run", "doctor", "clean", "sweep", "report", "bundle", "lab", "compare")

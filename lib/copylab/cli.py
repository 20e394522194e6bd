"""`python -m copylab <command>`: the command line. Each command lives in its own module under
commands/. User errors raise CopylabError, OSErrors name their path: either is printed as one
line, no traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import sys

from . import signals
from .commands import COMMANDS
from .errors import CopylabError
from .escape import one_line
from .fsutil import describe_os_error


class _OneLineParser(argparse.ArgumentParser):
    """argparse prints usage + error over several lines; we want one line naming the problem."""

    def error(self, message: str) -> None:  # type: ignore[override]
        # prog is "copylab" for the top level and "copylab run" for a command
        sys.stderr.write(f"{self.prog}: error: {message}\n")
        raise SystemExit(2)


class _Version(argparse.Action):
    """--version: asks git and the native sources only when given (every other command skips it)."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, help=None):
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        from .buildinfo import version_line

        print(version_line())
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    parser = _OneLineParser(prog="copylab", description="copylab: what moving bytes through a Linux TCP socket "
                            "costs, measured (see README.md)")
    parser.add_argument("--version", action=_Version, help="the version, git revision and native build, and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_OneLineParser)
    sub.required = True
    for name in COMMANDS:
        module = importlib.import_module(f".commands.{name}", __package__)
        module.register(sub)
        # `copylab COMMAND --help` opens with what the command does: its module's docstring, where the
        # command gave no description of its own (argparse would show none)
        if not sub.choices[name].description:
            sub.choices[name].description = module.__doc__
    return parser


def _address_limit() -> str:
    import resource

    limit = resource.getrlimit(resource.RLIMIT_AS)[0]
    return "unlimited" if limit == resource.RLIM_INFINITY else f"{limit >> 10} KiB"


def _reader_gone() -> int:
    """stdout's reader closed the pipe: nothing more can be said there, and Python's flush at exit
    must not complain either (stdout pointed at /dev/null). 128 + SIGPIPE, the status of a program
    that SIGPIPE ended."""
    import os
    import signal

    devnull = os.open(os.devnull, os.O_WRONLY)
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError, AttributeError):
            os.dup2(devnull, stream.fileno())
    return 128 + signal.SIGPIPE


def main(argv: list[str] | None = None) -> int:
    signals.unwind_on_ending()  # SIGTERM, SIGHUP, SIGQUIT clean up as Ctrl-C does
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        status = int(args.func(args) or 0)
        sys.stdout.flush()  # here, where a reader that went away is caught, not at exit
        return status
    except CopylabError as exc:
        # one line whatever a value in it holds (a path with a line break, a 10 kB flag value)
        print(f"copylab {args.command}: error: {one_line(str(exc))}", file=sys.stderr)
        return exc.exit_code
    except BrokenPipeError:  # the reader went away (`copylab run | head -1`): as a C program would, quietly
        return _reader_gone()
    except OSError as exc:  # disk full, read-only folder, a file where a folder should be...
        print(f"copylab {args.command}: error: {one_line(describe_os_error(exc))}", file=sys.stderr)
        return 1
    except MemoryError:  # ulimit -v below what copylab itself needs, or a host out of memory
        print(f"copylab {args.command}: error: out of memory (ulimit -v is {_address_limit()}); raise the limit "
              "or free memory", file=sys.stderr)
        return 1
    except RuntimeError as exc:
        if "can't start new thread" not in str(exc):
            raise
        print(f"copylab {args.command}: error: cannot start a thread ({exc}): the address space (ulimit -v is "
              f"{_address_limit()}) or the process limit (ulimit -u) is too small", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        signals.ignore_ending()
        print(f"copylab {args.command}: interrupted", file=sys.stderr)
        return 130

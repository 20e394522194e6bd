"""Runners: each program the engine measures behind one interface (flent keeps each tool's quirks in
its runner; neper gives each test its own callbacks).

A runner owns its programs' command lines, how they say they are ready, how their window opens and
closes, how long they need, and how their output becomes the common result fields and interval
series. The engine (point.py) starts a server and a client, passes their output lines to the
runner, opens and closes the counting window when the runner says so, and knows no program by
name. runner_for() picks the runner from the registry: copylab's own senders share
runners/native.py, each reference peer has runners/<name>.py defining RUNNER.
"""

from __future__ import annotations

import importlib
import math
import shutil
from dataclasses import dataclass

from .. import registry
from ..errors import CopylabError
from ..intervals import Series

Failure = tuple[str, str]  # (ErrorKind, one-line message)


@dataclass(frozen=True)
class WindowEvent:
    """What a client's output line means for the window: open it (after delay_s) or close it."""

    action: str          # "open" or "close"
    delay_s: float = 0.0
    source: str = "client"


@dataclass
class Result:
    """The common fields every runner yields (NaN/None where a program cannot tell), its interval
    series, and why the point failed if it did."""

    fields: dict
    failure: Failure | None = None
    series: Series | None = None


class Runner:
    """The interface; runners override what differs. Times are seconds."""

    window_source = "client"         # what opens and closes the window: client, timer or peer
    server_exits_by_itself = False   # the server ends after one test (no SIGINT needed)
    server_stops_with_status = ()    # exit statuses that are a normal stop besides 0 and -SIGINT
    port_taken = ("Address already in use",)  # its server's words for a port that is already bound
    method = ""  # how the program is run, in one Markdown phrase for the report's method section
    # its client can start before the server listens and wait for the port on a FIFO (client_argv
    # then gets the FIFO's path as port): the two programs' start-up costs overlap
    port_later = False

    def check_installed(self, host=None) -> None:
        raise NotImplementedError

    def server_argv(self, spec, addr: str, port: int, workdir: str, build_dir: str) -> list[str]:
        raise NotImplementedError

    def client_argv(self, spec, addr: str, port: int, workdir: str, build_dir: str) -> list[str]:
        raise NotImplementedError

    def server_ready(self, stream: str, line: str) -> bool:
        raise NotImplementedError

    def client_event(self, stream: str, line: str) -> WindowEvent | None:
        return None

    def timer_window(self, spec) -> tuple[float, float] | None:
        """(open after, close after) the client's start, for programs that announce no window."""
        return None

    def run_seconds(self, spec) -> float:
        """How long the client runs, at most, once connected (for the engine's deadline): a warm-up
        per round (the client's --rounds), and the window."""
        return (spec.warmup_s + spec.steady_max_s) * getattr(spec, "rounds", 1) + spec.duration_s

    def expected_seconds(self, spec) -> float:
        """How long the client usually runs once connected (for the sweep's estimate)."""
        return self.run_seconds(spec)

    def error_of(self, side) -> str:
        return side.last_error()

    def result(self, spec, server, client, read_file) -> Result:
        raise NotImplementedError


def nan(value):
    return math.nan if value is None else value


def check_tool(tool: str, host) -> None:
    """A program on the host that runs it (one line naming the host when it is missing)."""
    if host is not None and host.remote:
        if host.which(tool) is None:
            raise CopylabError(f"host {host.name}: {tool} is not installed there (Debian: apt-get install {tool})")
    elif shutil.which(tool) is None:
        raise CopylabError(f"{tool} is not installed (Debian: apt-get install {tool})")


def peer_fields(server_keys) -> dict:
    """The fields a peer cannot report (copylab's servers count them; the peers do not)."""
    fields = {key: math.nan for key in server_keys}
    fields.update(verified="", receive="message", receive_note="", recv_calls=math.nan, total_bytes=math.nan,
                  server_bytes=math.nan, server_messages=math.nan, ring_messages=math.nan)
    return fields


def runner_for(impl: str, sanitize: bool = False) -> Runner:
    entry = registry.get(impl)
    if entry.native:
        from .native import NativeRunner
        return NativeRunner(impl, sanitize)
    return importlib.import_module(f".{impl}", __package__).RUNNER()

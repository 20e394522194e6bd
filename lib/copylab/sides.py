"""The two sides of a measurement as processes, and the window their counters cover.

A Side is one program (usually wrapped as taskset -> perf stat -> program) in its own process
group, its output read line by line by two threads that also pass each line to listeners (the
client's "window open" marker, a peer's readiness line). The Window opens and closes every perf
counting/sampling session at once, through perf's --control FIFOs, and reads the pinned CPUs'
busy time from /proc/stat at the same two instants.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Callable

from .perf import c_locale_env

Listener = Callable[[str, str], None]  # (stream "stdout"|"stderr", line)
# what perf stat/record print on the wrapped program's stderr when their window opens and closes
PERF_NOTICES = ("Events disabled", "Events enabled", "[ perf record:")


class Side:
    """One benchmark process group, its output collected as it comes."""

    def __init__(self, name: str, argv: list[str], registry: Path | None = None,
                 listeners: list[Listener] | None = None, wake: threading.Event | None = None):
        self.name = name
        # set when the process exits: a supervisor sleeps on it instead of polling, so the harness
        # takes no CPU from the measured programs while they run
        self.exited = threading.Event()
        self._wake = wake
        self.argv = argv
        self.stdout_lines: list[str] = []
        self.stderr_lines: list[str] = []
        self.listeners = list(listeners or [])
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True, errors="replace", start_new_session=True,  # one signal reaches perf and the program
            env=c_locale_env(),  # perf's CSV must not use a decimal comma
        )
        if registry is not None:
            # the process group, so whoever owns the registry (the sweep driver) can stop it even
            # when the process that started it (a notebook kernel) died
            with open(registry, "a") as handle:
                handle.write(f"{self.proc.pid}\n")
        self._readers = [threading.Thread(target=self._pump, args=(stream, sink, label), daemon=True)
                         for stream, sink, label in ((self.proc.stdout, self.stdout_lines, "stdout"),
                                                     (self.proc.stderr, self.stderr_lines, "stderr"))]
        for reader in self._readers:
            reader.start()
        threading.Thread(target=self._wait_exit, daemon=True).start()

    def _wait_exit(self) -> None:
        with contextlib.suppress(Exception):
            self.proc.wait()
        self.exited.set()
        if self._wake is not None:
            self._wake.set()

    def _pump(self, stream, sink: list[str], label: str) -> None:
        for line in stream:
            sink.append(line)
            for listener in self.listeners:
                with contextlib.suppress(Exception):  # a listener's fault must not stop the reading
                    listener(label, line)
        stream.close()

    def signal_group(self, signum: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signum)

    def finish(self, timeout: float) -> int | None:
        """Wait for exit and for the output pipes to drain; None if still running."""
        try:
            code = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None
        for reader in self._readers:
            reader.join(timeout=2.0)
        return code

    def kill(self) -> None:
        """SIGKILL the whole group, even when its leader has exited (an orphaned program stays in it)."""
        self.signal_group(signal.SIGKILL)
        self.finish(timeout=5.0)

    def program_pid(self) -> int | None:
        """The measured program's pid: the leader itself, or the child of its perf wrappers."""
        pid = self.proc.pid
        for _ in range(4):
            try:
                exe = os.path.basename(os.readlink(f"/proc/{pid}/exe"))
            except OSError:
                return None
            if not exe.startswith("perf"):
                return pid
            children = Path(f"/proc/{pid}/task/{pid}/children")
            try:
                kids = children.read_text().split()
            except OSError:
                return None
            if not kids:
                return None
            pid = int(kids[0])
        return None

    def json_output(self) -> dict | None:
        """The last line of stdout that parses as a JSON object."""
        for line in reversed(self.stdout_lines):
            line = line.strip()
            if line.startswith("{"):
                with contextlib.suppress(json.JSONDecodeError):
                    return json.loads(line)
        return None

    def stdout(self) -> str:
        return "".join(self.stdout_lines)

    def last_error(self, ignore: tuple[str, ...] = ()) -> str:
        """The last stderr line that is not a notice of ours or of perf's wrappers."""
        ignore = ignore + PERF_NOTICES
        lines = [line.strip() for line in self.stderr_lines if line.strip() and not line.startswith(ignore)]
        return lines[-1] if lines else ""

    def raw(self, perf_text: str = "") -> dict:
        return {"argv": self.argv, "exit_status": self.proc.returncode, "stdout": self.stdout(),
                "stderr": "".join(self.stderr_lines), "perf": perf_text}


class PerfControl:
    """perf's --control fifo: lets the engine open and close a perf session's window at will."""

    def __init__(self, workdir: Path, name: str):
        self.ctl = workdir / f"{name}.ctl"
        self.ack = workdir / f"{name}.ack"
        os.mkfifo(self.ctl)
        os.mkfifo(self.ack)

    def args(self) -> list[str]:
        return ["--control", f"fifo:{self.ctl},{self.ack}"]

    def send(self, command: str) -> bool:
        """Write one command; False if perf is not there to read it (it never started, or died)."""
        try:
            fd = os.open(self.ctl, os.O_WRONLY | os.O_NONBLOCK)
        except OSError:
            return False
        try:
            os.write(fd, (command + "\n").encode())
        except OSError:
            return False
        finally:
            os.close(fd)
        return True


def cpu_times(stat: Path = Path("/proc/stat")) -> dict[int, tuple[int, int]]:
    """{cpu: (busy, total)} jiffies from /proc/stat; {} where it cannot be read."""
    out = {}
    try:
        lines = stat.read_text().splitlines()
    except OSError:
        return out
    for line in lines:
        name, *fields = line.split()
        if not name.startswith("cpu") or name == "cpu":
            continue
        values = [int(v) for v in fields[:8]]
        idle = values[3] + values[4]  # idle + iowait
        out[int(name[3:])] = (sum(values) - idle, sum(values))
    return out


class Window:
    """The measured window, shared by every perf session of a point: open() and close() reach
    them all at once (each at most once), and the busy share of the pinned CPUs is read at both."""

    def __init__(self, controls: list[PerfControl], cpus: dict[str, tuple[int, ...]] | None = None):
        self.controls = controls
        self.cpus = cpus or {}
        self._lock = threading.Lock()
        self._timers: list[threading.Timer] = []
        self.opened_at = self.closed_at = None
        self._stat_open: dict = {}
        self._stat_close: dict = {}
        self.source = ""

    def add_control(self, control: PerfControl) -> None:
        """A perf session that joined late (a profiler attached to a running program)."""
        with self._lock:
            self.controls.append(control)
            if self.opened_at is not None and self.closed_at is None:
                control.send("enable")

    def open(self, source: str) -> None:
        with self._lock:
            if self.opened_at is not None:
                return
            for control in self.controls:
                control.send("enable")
            self._stat_open = cpu_times()
            self.opened_at = time.monotonic()
            self.source = source

    def close(self) -> None:
        with self._lock:
            if self.opened_at is None or self.closed_at is not None:
                return
            for control in self.controls:
                control.send("disable")
            self._stat_close = cpu_times()
            self.closed_at = time.monotonic()

    def open_in(self, seconds: float, source: str) -> None:
        self._later(seconds, lambda: self.open(source))

    def close_in(self, seconds: float) -> None:
        self._later(seconds, self.close)

    def _later(self, seconds: float, action) -> None:
        timer = threading.Timer(max(0.0, seconds), action)
        timer.daemon = True
        self._timers.append(timer)
        timer.start()

    def cancel(self) -> None:
        for timer in self._timers:
            timer.cancel()

    def busy(self, side: str) -> float:
        """Share of the side's pinned CPUs busy in the window (NaN when unknown)."""
        cpus = self.cpus.get(side)
        if not cpus or not self._stat_open or not self._stat_close:
            return float("nan")
        busy = total = 0
        for cpu in cpus:
            if cpu not in self._stat_open or cpu not in self._stat_close:
                return float("nan")
            busy += self._stat_close[cpu][0] - self._stat_open[cpu][0]
            total += self._stat_close[cpu][1] - self._stat_open[cpu][1]
        return busy / total if total > 0 else float("nan")

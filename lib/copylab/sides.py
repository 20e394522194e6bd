"""The two sides of a measurement as processes, and the window their counters cover.

A Side is one program (usually wrapped as taskset -> perf stat -> program) in its own process
group, its output read line by line by two threads that also pass each line to listeners (the
client's "window open" marker, a peer's readiness line). The Window opens and closes every perf
counting/sampling session at once, through perf's --control FIFOs, and reads the pinned CPUs'
busy time from /proc/stat at the same two instants.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import json
import os
import shutil
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
# what hosts.SshHost's wrapper prints around a remote program (kept out of the program's output)
PGID_NOTICE = "copylab-pgid"
EXIT_NOTICE = "copylab-exit"


# After kill -9 of the sweep (or of copylab run), its perf and server ran on in their own process
# groups until the next sweep. Every local process the engine starts, and every program a perf wrapper
# starts, gets SIGKILL when the one that started it dies (prctl PR_SET_PDEATHSIG, set by util-linux
# setpriv, then exec: kept across the wrappers' execs, ip netns exec and taskset): the chain
# kernel -> perf -> program comes down link by link. (A program whose parent ended normally is
# already past its use: perf waits for its program.)
PARENT_DEATH = ("setpriv", "--pdeathsig", "KILL", "--")


@functools.lru_cache(maxsize=1)
def _setpriv() -> bool:
    return shutil.which("setpriv") is not None


def dies_with_parent(argv: list[str], host=None) -> list[str]:
    """argv so that its process gets SIGKILL when its parent dies: on this host, with setpriv (without
    it, as before: the next sweep, or copylab clean, stops what was left)."""
    if (host is not None and host.remote) or not _setpriv():
        return list(argv)
    return [*PARENT_DEATH, *argv]


def last_json_object(lines) -> dict | None:
    """The last of lines that parses as a JSON object (a program's result line), or None: a live
    side's stdout, or a record's (sweep/rounds.py)."""
    for line in reversed(list(lines)):
        line = line.strip()
        if line.startswith("{"):
            with contextlib.suppress(json.JSONDecodeError):
                value = json.loads(line)
                if isinstance(value, dict):
                    return value
    return None


class Side:
    """One benchmark process group on this machine, its output collected as it comes."""

    remote = False

    def __init__(self, name: str, argv: list[str], registry: Path | None = None,
                 listeners: list[Listener] | None = None, wake: threading.Event | None = None, host=None):
        self.name = name
        self.host = host
        # set when the process exits: a supervisor sleeps on it instead of polling, so the harness
        # takes no CPU from the measured programs while they run
        self.exited = threading.Event()
        self._wake = wake
        self.argv = argv
        self.stdout_lines = BoundedLines()  # a program printing 300 MB costs a few MB here
        self.stderr_lines = BoundedLines()
        self.listeners = list(listeners or [])
        self.proc = subprocess.Popen(
            # a remote program lives as long as the ssh channel's stdin stays open (hosts.SshHost)
            argv, stdin=subprocess.PIPE if self.remote else subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
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
        self._set_exited()

    def _set_exited(self) -> None:
        self.exited.set()
        if self._wake is not None:
            self._wake.set()

    def _notice(self, label: str, line: str) -> bool:
        """Is line a notice of the side's wrapper rather than the program's output? (none here)"""
        return False

    def _stream_ended(self, label: str, sink: "BoundedLines") -> None:
        """What a stream's end means beyond the end of its lines (nothing here)."""

    def _pump(self, stream, sink: "BoundedLines", label: str) -> None:
        # at most MAX_LINE characters at a time: a line without end must not be held whole either
        for line in iter(lambda: stream.readline(MAX_LINE), ""):
            if self._notice(label, line):
                continue
            sink.append(line)
            for listener in self.listeners:
                with contextlib.suppress(Exception):  # a listener's fault must not stop the reading
                    listener(label, line)
        self._stream_ended(label, sink)
        stream.close()

    # -- the process ----------------------------------------------------------------------------------

    @property
    def returncode(self) -> int | None:
        return self.proc.poll()

    def poll(self) -> int | None:
        return self.returncode

    @property
    def lost(self) -> bool:
        """Was the way to the program lost before it reported an exit status? (never, here)"""
        return False

    def signal_group(self, signum: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signum)

    def finish(self, timeout: float) -> int | None:
        """Wait for exit and for the output pipes to drain; None if still running."""
        try:
            code = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None
        self._drain()
        return code

    def _drain(self) -> None:
        for reader in self._readers:
            reader.join(timeout=2.0)

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

    # -- its output -----------------------------------------------------------------------------------

    def json_output(self) -> dict | None:
        """The last line of stdout that parses as a JSON object."""
        return last_json_object(self.stdout_lines)

    def stdout(self) -> str:
        return "".join(self.stdout_lines)

    def last_error(self, ignore: tuple[str, ...] = ()) -> str:
        """The last stderr line that is not a notice of ours or of perf's wrappers."""
        ignore = ignore + PERF_NOTICES
        lines = [line.strip() for line in self.stderr_lines if line.strip() and not line.startswith(ignore)]
        return lines[-1] if lines else ""

    def raw(self, perf_text: str = "") -> dict:
        return {"argv": self.argv, "exit_status": self.returncode, "stdout": self.stdout(),
                "stderr": "".join(self.stderr_lines), "perf": perf_text}


class RemoteSide(Side):
    """The program behind hosts.SshHost's wrapper on another machine: the wrapper announces the
    program's process group and exit status on the streams, and the ssh channel stays open after
    the program ends until the engine has read the side's files back."""

    remote = True

    def __init__(self, name: str, argv: list[str], registry: Path | None = None,
                 listeners: list[Listener] | None = None, wake: threading.Event | None = None, host=None):
        self.remote_pgid: int | None = None  # the program's process group there
        self._remote_exit: dict[str, int] = {}  # stream -> the exit status its wrapper reported
        self._begun: set[str] = set()  # streams whose start mark came (after any login banner)
        self._preamble: dict[str, list[str]] = {}
        super().__init__(name, argv, registry, listeners, wake, host)

    def _notice(self, label: str, line: str) -> bool:
        """Take in the wrapper's notice; True if line was one (or a login banner before the
        command's start mark: kept aside, and given back only if the mark never comes)."""
        mark = getattr(self.host, "start_mark", None)
        if mark is not None and label not in self._begun:
            if line.rstrip("\n") == mark:
                self._begun.add(label)
            else:
                self._preamble.setdefault(label, []).append(line)
            return True
        if not line.startswith((PGID_NOTICE, EXIT_NOTICE)):
            return False
        with contextlib.suppress(ValueError, IndexError):
            value = int(line.split()[1])
            if line.startswith(PGID_NOTICE):
                self.remote_pgid = value
            else:
                # a shell reports death by signal N as 128+N; Popen says -N
                self._remote_exit[label] = -(value - 128) if 128 < value < 128 + signal.NSIG else value
                if len(self._remote_exit) == 2:  # both streams are complete up to here
                    self._set_exited()
        return True

    def _stream_ended(self, label: str, sink: "BoundedLines") -> None:
        if label not in self._begun:  # no start mark: ssh's own words about a connection that failed
            for line in self._preamble.pop(label, []):
                sink.append(line)

    @property
    def returncode(self) -> int | None:
        """The program's exit status (255 when the ssh connection to its host was lost)."""
        if "stderr" in self._remote_exit and self.exited.is_set():
            return self._remote_exit["stderr"]
        return self.proc.poll()

    @property
    def lost(self) -> bool:
        """The ssh channel ended before the program reported an exit status."""
        return self.proc.poll() is not None and len(self._remote_exit) < 2

    def signal_group(self, signum: int) -> None:
        if signum == signal.SIGKILL:
            # closing the channel is enough, and works when the host is unreachable: the wrapper
            # (or sshd, when the connection dies) sees EOF, removes the side's folder, kills the group
            self._close_channel()
        elif self.remote_pgid is not None:
            self.host.signal_group(self.remote_pgid, signum)

    def _close_channel(self) -> None:
        with contextlib.suppress(OSError):
            if self.proc.stdin:
                self.proc.stdin.close()
        try:
            self.proc.wait(timeout=5.0)  # ssh ends once the remote group is gone
        except subprocess.TimeoutExpired:  # an ssh that does not end: its master then closes the channel
            with contextlib.suppress(ProcessLookupError):
                self.proc.kill()
            self.proc.wait()

    def finish(self, timeout: float) -> int | None:
        if not self.exited.wait(timeout):
            return None
        if self.proc.poll() is not None:  # the channel is gone: what was sent is in the pipes
            self._drain()
        return self.returncode

    def program_pid(self) -> int | None:
        return None  # a pid on another machine


def start_side(name: str, argv: list[str], registry: Path | None = None, listeners: list[Listener] | None = None,
               wake: threading.Event | None = None, host=None) -> Side:
    """The Side for where argv runs: here, or behind host's wrapper on another machine."""
    kind = RemoteSide if host is not None and host.remote else Side
    return kind(name, argv, registry, listeners, wake, host)


MAX_LINE = 1 << 16           # characters read at a time; a longer line arrives in pieces
KEEP_HEAD = 8 << 20          # characters of a stream kept from its start (a peer's JSON document)
KEEP_TAIL = 2 << 20          # and from its end (the JSON line, the last error), once the head is full


class BoundedLines:
    """A program's output, line by line, in bounded memory: the first KEEP_HEAD characters and the
    last KEEP_TAIL; what lies between is dropped and counted, and a line says so where it was.
    Reads like the list of lines it stands for."""

    def __init__(self):
        self._head: list[str] = []
        self._tail: collections.deque[str] = collections.deque()
        self._head_size = self._tail_size = self.dropped = 0
        self._lock = threading.Lock()

    def append(self, line: str) -> None:
        with self._lock:
            if not self._tail and self._head_size + len(line) <= KEEP_HEAD:
                self._head.append(line)
                self._head_size += len(line)
                return
            self._tail.append(line)
            self._tail_size += len(line)
            while self._tail_size > KEEP_TAIL and len(self._tail) > 1:
                old = self._tail.popleft()
                self._tail_size -= len(old)
                self.dropped += len(old)

    def _lines(self) -> list[str]:
        with self._lock:
            note = [f"[copylab: {self.dropped} characters of output dropped here]\n"] if self.dropped else []
            return self._head + note + list(self._tail)

    def __iter__(self):
        return iter(self._lines())

    def __reversed__(self):
        return reversed(self._lines())

    def __len__(self) -> int:
        return len(self._lines())

    def __eq__(self, other) -> bool:
        return self._lines() == list(other)

    def __repr__(self) -> str:
        return f"BoundedLines({self._lines()!r})"


class PerfControl:
    """perf's --control fifo: lets the engine open and close a perf session's window at will, on
    whichever host that perf runs (hosts.LocalHost or SshHost)."""

    def __init__(self, host, workdir: str, name: str):
        self.host = host
        self.ctl = f"{workdir}/{name}.ctl"
        self.ack = f"{workdir}/{name}.ack"
        host.mkfifo(self.ctl)
        host.mkfifo(self.ack)

    def args(self) -> list[str]:
        return ["--control", f"fifo:{self.ctl},{self.ack}"]

    def send(self, command: str) -> bool:
        """Write one command; False if perf is not there to read it (it never started, or died)."""
        return self.host.send_fifo(self.ctl, command + "\n")


def cpu_times(stat: Path = Path("/proc/stat")) -> dict[int, tuple[int, int, int]]:
    """{cpu: (busy, steal, total)} jiffies from /proc/stat; {} where it cannot be read.

    busy is the time the CPU ran something (user, nice, system, irq, softirq); steal, the time the
    hypervisor gave the virtual CPU to another guest, is apart: a CPU that waits for its host is not
    busy with our work. guest time is already inside user."""
    out = {}
    try:
        lines = stat.read_text().splitlines()
    except OSError:
        return out
    for line in lines:
        name, *fields = line.split()
        if not name.startswith("cpu") or name == "cpu":
            continue
        values = [int(v) for v in fields[:8]] + [0] * (8 - len(fields[:8]))
        user, nice, system, idle, iowait, irq, softirq, steal = values
        busy = user + nice + system + irq + softirq
        out[int(name[3:])] = (busy, steal, busy + steal + idle + iowait)
    return out


class Window:
    """The measured window, shared by every perf session of a point: open() and close() reach
    them all at once, and the busy share of the pinned CPUs is read at both. A client of several
    rounds (--rounds) opens and closes it once per round: the counters and the CPUs' shares then
    cover the rounds' windows only, summed, and open_s is their total length."""

    def __init__(self, controls: list[PerfControl], cpus: dict[str, tuple[int, ...]] | None = None):
        self.controls = controls
        self.cpus = cpus or {}
        self._lock = threading.Lock()
        self._timers: list[threading.Timer] = []
        self.open_s = 0.0  # the time it was open, over every round
        self.segments = 0
        self._stat_open: dict = {}
        self._spent: dict = {}  # cpu -> [busy, steal, total] jiffies over the segments closed so far
        self._is_open = False
        self._segment_at = 0.0
        self.source = ""

    def add_control(self, control: PerfControl) -> None:
        """A perf session that joined late (a profiler attached to a running program)."""
        with self._lock:
            self.controls.append(control)
            if self._is_open:
                control.send("enable")

    def open(self, source: str) -> None:
        with self._lock:
            if self._is_open:
                return
            for control in self.controls:
                control.send("enable")
            self._stat_open = cpu_times()
            self._is_open = True
            self._segment_at = time.monotonic()
            self.source = source

    def close(self) -> None:
        with self._lock:
            if not self._is_open:
                return
            for control in self.controls:
                control.send("disable")
            closed = cpu_times()
            self._is_open = False
            self.open_s += time.monotonic() - self._segment_at
            self.segments += 1
            for cpu, now in closed.items():
                was = self._stat_open.get(cpu)
                if was is not None:
                    spent = self._spent.setdefault(cpu, [0, 0, 0])
                    for part in range(3):
                        spent[part] += now[part] - was[part]

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

    def _share(self, side: str, part: int) -> float:
        """Share of the side's pinned CPUs' time in the window spent in part (0 busy, 1 steal)."""
        cpus = self.cpus.get(side)
        if not cpus or not self._spent:
            return float("nan")
        spent = total = 0
        for cpu in cpus:
            if cpu not in self._spent:
                return float("nan")
            spent += self._spent[cpu][part]
            total += self._spent[cpu][2]
        return spent / total if total > 0 else float("nan")

    def busy(self, side: str) -> float:
        """Share of the side's pinned CPUs busy with work in the window (steal apart; NaN when unknown)."""
        return self._share(side, 0)

    def steal(self, side: str) -> float:
        """Share of the side's pinned CPUs' time the hypervisor took in the window."""
        return self._share(side, 1)

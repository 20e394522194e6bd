"""Where a side runs: this machine (maybe inside a network namespace), or another one over SSH.

The engine only asks a Host to run a program there, to keep files and FIFOs in a folder there, to
signal a program's process group, and to read files back. LocalHost does it with subprocess and the
file system; SshHost with the OpenSSH client over one multiplexed connection (ControlMaster) per
host, so a point pays no SSH handshake per command, and ~/.ssh/config, agents and keys are
honoured as in any ssh command.

A program on a remote host runs under a small sh wrapper (SshHost.command) that makes the side's
work folder and perf's control FIFOs, announces its process group, runs the program, announces its
exit status on both streams, and then holds the ssh channel open until the engine closes it: the
engine reads the program's files back first. When the channel closes (the engine is done, or the
connection died), the wrapper removes the work folder and kills the whole group, so no program and
no file outlives its point on the far side, even when the driver can no longer reach that host.

A command over a multiplexed connection still costs a session set-up and the remote login shell's
start-up (10-100 ms; ~110 ms on the machine this was written on, whose root .bashrc runs pyenv).
The window is opened and closed through perf's FIFOs, so those writes go through one long-lived
session per host (SshHost's controller), at the cost of a line on a pipe.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import secrets
import shlex
import shutil
import signal
import socket
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path

from .errors import CopylabError
from .paths import BUILD_DIR, NATIVE_DIR, PROJECT_ROOT
from .perf import c_locale_env, first_line
from .sides import EXIT_NOTICE, PGID_NOTICE

SSH_TIMEOUT_S = 30
REMOTE_WORKDIR_PREFIX = "/tmp/copylab-remote-"
REQUIRED_TOOLS = ("cc", "make", "tar", "taskset")  # what a host needs to build and run the programs
_DESTINATION = re.compile(r"(?:[A-Za-z0-9_.-]+@)?[A-Za-z0-9_.:\[\]%-]+")  # [user@]host


# the sh wrapper a remote Side runs under (module docstring): $1 its work folder, $2 how many FIFOs,
# the FIFOs, then the program's argv
_SIDE_WRAPPER = (
    # the group sshd made for this session: the program and anything it leaves behind
    'read -r _ _ _ _ g _ </proc/$$/stat; echo "%s $g" >&2; w=$1; n=$2; shift 2; '
    'if [ -n "$w" ]; then mkdir -p -m 700 "$w" || exit 126; fi; '
    'while [ "$n" -gt 0 ]; do mkfifo "$1" || exit 126; shift; n=$((n-1)); done; exec 3<&0; '
    # the watcher: ends with the channel (fd 3 is its stdin; an async list's own stdin is /dev/null)
    # (`kill -KILL -PGID`: dash's kill takes no `--`)
    '(trap "" INT TERM HUP; cat <&3 >/dev/null; [ -n "$w" ] && rm -rf -- "$w"; kill -KILL "-$g") '
    '>/dev/null 2>&1 & '
    # a trap (not an ignore, which the program would inherit): SIGINT for the program
    # must not end the wrapper before it reports the exit status
    'trap : INT TERM; "$@" </dev/null 3<&-; c=$?; echo "%s $c"; echo "%s $c" >&2; wait'
) % (PGID_NOTICE, EXIT_NOTICE, EXIT_NOTICE)


def _last_line(text: str | bytes | None) -> str:
    if isinstance(text, bytes):
        text = text.decode(errors="replace")
    lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
    return lines[-1] if lines else ""


def is_destination(text: str) -> bool:
    """[user@]host as ssh takes it, and nothing ssh would read as an option."""
    return bool(_DESTINATION.fullmatch(text)) and not text.startswith("-")


class LocalHost:
    """This machine, optionally inside a network namespace."""

    remote = False

    def __init__(self, netns: str | None = None):
        self.netns = netns
        self.name = "this host" if netns is None else f"namespace {netns}"
        self.build_dir = str(BUILD_DIR)

    def command(self, argv: list[str], workdir: str | None = None) -> list[str]:
        return (["ip", "netns", "exec", self.netns] if self.netns else []) + list(argv)

    def run(self, argv: list[str], timeout: float = SSH_TIMEOUT_S, input: bytes | None = None):
        """argv run there to completion: a CompletedProcess with bytes output."""
        try:
            return subprocess.run(self.command(argv), capture_output=True, timeout=timeout, input=input,
                                  env=c_locale_env())
        except OSError as exc:
            return subprocess.CompletedProcess(argv, 127, b"", str(exc).encode())
        except subprocess.TimeoutExpired as exc:
            return subprocess.CompletedProcess(argv, 124, b"", f"timed out after {exc.timeout:g} s".encode())

    def which(self, program: str) -> str | None:
        return shutil.which(program)

    def workdir(self, local: Path, side: str) -> str:
        return str(local)

    def mkfifo(self, path: str) -> None:
        os.mkfifo(path)

    def send_fifo(self, path: str, text: str) -> bool:
        """Write to a FIFO without blocking: False if no perf is there to read it."""
        try:
            fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
        except OSError:
            return False
        try:
            os.write(fd, text.encode())
            return True
        except OSError:
            return False
        finally:
            os.close(fd)

    def read_text(self, path: str) -> str:
        with contextlib.suppress(OSError):
            return Path(path).read_text(errors="replace")
        return ""

    def alive(self) -> bool:
        return True

    def release(self) -> None:
        pass

    def to_params(self) -> dict:
        return {"kind": "local", "netns": self.netns}


class SshHost:
    """Another machine, reached with the OpenSSH client over a multiplexed connection."""

    remote = True

    def __init__(self, destination: str, control_dir: str | Path, ssh_config: str | None = None,
                 build_root: str | None = None):
        if not is_destination(destination):
            raise CopylabError(f"host {destination!r}: not an ssh destination ([user@]host)")
        self.name = self.destination = destination
        self.control_dir = str(control_dir)
        self.control_path = f"{control_dir}/{re.sub(r'[^A-Za-z0-9]', '_', destination)}.sock"
        self.ssh_config = ssh_config
        self.build_root = build_root  # where the native sources are built there (set by build())
        self._pending_fifos: list[str] = []
        self.start_mark = f"copylab-start-{secrets.token_hex(8)}"  # no banner can guess it
        self._fifos = _FifoWriter(self._remote)  # perf's window FIFOs there, written through one session

    @property
    def build_dir(self) -> str:
        return f"{self.build_root}/native/build"

    def ssh(self, *options: str) -> list[str]:
        # BatchMode: a password prompt would hang the sweep; ServerAlive: a host that goes away is
        # noticed within ~6 s instead of TCP's minutes
        argv = ["ssh", "-o", "BatchMode=yes", "-o", "ConnectTimeout=5", "-o", "ServerAliveInterval=2",
                "-o", "ServerAliveCountMax=3", "-o", f"ControlPath={self.control_path}"]
        if self.ssh_config:
            argv += ["-F", self.ssh_config]
        return argv + list(options)

    # -- the connection ---------------------------------------------------------------------------

    def connect(self) -> None:
        """Open the shared connection (one line naming the host when that fails)."""
        try:
            proc = subprocess.run(self.ssh("-o", "ControlMaster=yes", "-o", "ControlPersist=yes", "-f", "-N",
                                           self.destination),
                                  capture_output=True, text=True, timeout=SSH_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise CopylabError(f"host {self.destination}: ssh did not connect within {SSH_TIMEOUT_S} s") from None
        except FileNotFoundError:
            raise CopylabError("topology ssh needs the OpenSSH client (Debian: apt-get install "
                               "openssh-client)") from None
        if proc.returncode != 0:
            raise CopylabError(f"host {self.destination}: cannot connect over ssh: "
                               f"{_last_line(proc.stderr) or f'ssh exited with status {proc.returncode}'}")

    def alive(self) -> bool:
        """Is the shared connection up? (ssh -O check asks the master, no network round trip)"""
        try:
            proc = subprocess.run(self.ssh("-O", "check", self.destination), capture_output=True, timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            return False
        return proc.returncode == 0

    def disconnect(self) -> None:
        self.release()
        with contextlib.suppress(OSError, subprocess.TimeoutExpired):
            subprocess.run(self.ssh("-O", "exit", self.destination), capture_output=True, timeout=10)

    # -- programs and files there -----------------------------------------------------------------

    def _remote(self, argv: list[str]) -> list[str]:
        # ssh hands the remote login shell one string; LC_ALL=C: perf's CSV must not use a decimal comma.
        # The command first prints start_mark on both streams: whatever a login shell prints before
        # it (a banner from .bashrc, "Last login") is not the command's output (strip_banner).
        return self.ssh(self.destination, "--", shlex.join(["sh", "-c", _MARKED, self.start_mark,
                                                            "env", "LC_ALL=C", *argv]))

    def strip_banner(self, data: bytes) -> bytes:
        """A command's output without what the login shell printed before start_mark; all of it
        when the mark never came (ssh's own complaint about a connection that failed)."""
        mark = self.start_mark.encode() + b"\n"
        at = data.find(mark)
        return data[at + len(mark):] if at >= 0 else data

    def command(self, argv: list[str], workdir: str | None = None) -> list[str]:
        """ssh argv that runs argv there as a Side (sides.Side with host=self): workdir and the
        FIFOs asked for since the last command are made first; workdir is removed when the
        channel closes."""
        fifos, self._pending_fifos = self._pending_fifos, []
        return self._remote(["sh", "-c", _SIDE_WRAPPER, "sh", workdir or "", str(len(fifos)), *fifos, *argv])

    def run(self, argv: list[str], timeout: float = SSH_TIMEOUT_S, input: bytes | None = None):
        """argv run there to completion; a lost connection is status 255 with ssh's complaint."""
        try:
            proc = subprocess.run(self._remote(argv), capture_output=True, timeout=timeout, input=input)
        except subprocess.TimeoutExpired as exc:
            return subprocess.CompletedProcess(argv, 255, b"", f"timed out after {exc.timeout:g} s".encode())
        return subprocess.CompletedProcess(argv, proc.returncode, self.strip_banner(proc.stdout),
                                           self.strip_banner(proc.stderr))

    def ok(self, argv: list[str], what: str, timeout: float = SSH_TIMEOUT_S, input: bytes | None = None) -> str:
        """stdout of argv there, or a one-line CopylabError naming the host and what failed."""
        proc = self.run(argv, timeout=timeout, input=input)
        if proc.returncode != 0:
            raise CopylabError(f"host {self.destination}: {what} failed: "
                               f"{_last_line(proc.stderr) or f'exit status {proc.returncode}'}")
        return proc.stdout.decode(errors="replace")

    def which(self, program: str) -> str | None:
        proc = self.run(["sh", "-c", f"command -v {shlex.quote(program)}"])
        return proc.stdout.decode().strip() or None if proc.returncode == 0 else None

    def workdir(self, local: Path, side: str) -> str:
        """A folder there for one side of one point (made by the side's wrapper); the name says whose."""
        return (f"{REMOTE_WORKDIR_PREFIX}{re.sub(r'[^A-Za-z0-9_.-]', '_', socket.gethostname())}-{os.getpid()}-"
                f"{secrets.token_hex(3)}-{side}")

    def mkfifo(self, path: str) -> None:
        """Made by the next command()'s wrapper, in the same session: no round trip of its own."""
        self._pending_fifos.append(path)

    def send_fifo(self, path: str, text: str) -> bool:
        return self._fifos.send(path, text)

    def release(self) -> None:
        self._fifos.close()

    def read_text(self, path: str) -> str:
        proc = self.run(["cat", "--", path], timeout=60)
        return proc.stdout.decode(errors="replace") if proc.returncode == 0 else ""

    def signal_group(self, pgid: int, signum: int) -> None:
        """Signal every process of the group but perf's own: each perf ends, and writes its
        counts, when its program does; a perf record that gets a signal itself SIGTERMs its
        workload at once (the perf stat inside it, whose counts would be lost)."""
        script = ('for p in $(pgrep -g "$1"); do [ "$(cat /proc/$p/comm 2>/dev/null)" = perf ] || '
                  'kill -s "$2" "$p" 2>/dev/null; done; true')
        with contextlib.suppress(OSError):
            self.run(["sh", "-c", script, "sh", str(pgid), signal.Signals(signum).name[3:]], timeout=10)

    def to_params(self) -> dict:
        return {"kind": "ssh", "destination": self.destination, "control_dir": self.control_dir,
                "ssh_config": self.ssh_config, "build_root": self.build_root}


class _FifoWriter:
    """One long-lived session to a host whose shell writes each line it reads into the FIFO it names:
    opening and closing perf's window costs a line on a pipe, not an ssh session (module docstring)."""

    def __init__(self, remote):
        self._remote = remote  # argv -> the ssh argv that runs it there
        self._controller: subprocess.Popen | None = None
        self._lock = threading.Lock()

    def send(self, path: str, text: str) -> bool:
        """Write text to a FIFO there through the controller session. dd's O_NONBLOCK: a FIFO
        nobody reads any more (perf died) fails at once instead of blocking the controller."""
        with self._lock:
            if self._controller is None or self._controller.poll() is not None:
                script = ('while read -r f w; do printf "%s\\n" "$w" | '
                          'dd of="$f" oflag=nonblock conv=notrunc status=none 2>/dev/null; done')
                self._controller = subprocess.Popen(self._remote(["sh", "-c", script]), stdin=subprocess.PIPE,
                                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                                    start_new_session=True)
            try:
                self._controller.stdin.write(f"{path} {text.strip()}\n".encode())
                self._controller.stdin.flush()
                return True
            except OSError:
                return False

    def close(self) -> None:
        """End the controller session (its remote shell ends on EOF)."""
        with self._lock:
            if self._controller is not None:
                with contextlib.suppress(OSError):
                    self._controller.stdin.close()
                try:
                    self._controller.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    self._controller.kill()
                self._controller = None


def native_digest() -> str:
    """A short digest of native/'s sources: the remote build folder's name, so changed sources
    are built afresh and unchanged ones are not."""
    digest = hashlib.sha256()
    for path in sorted(p for p in NATIVE_DIR.rglob("*") if p.is_file() and "build" not in p.relative_to(NATIVE_DIR).parts):
        digest.update(str(path.relative_to(NATIVE_DIR)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:12]


_MARKED = 'printf "%s\\n" "$0"; printf "%s\\n" "$0" >&2; exec "$@"'


@dataclass(frozen=True)
class SshSettings:
    """Where topology ssh runs each side: OpenSSH destinations and the data-path addresses."""

    server_host: str
    client_host: str
    server_addr: str
    client_addr: str
    ssh_config: str | None = None


def host_from_params(params: dict) -> LocalHost | SshHost:
    """The inverse of to_params (a notebook kernel attaching to the driver's connections)."""
    if params.get("kind") == "ssh":
        return SshHost(params["destination"], params["control_dir"], params.get("ssh_config"),
                       params.get("build_root"))
    return LocalHost(params.get("netns"))


# -- set-up of a host: what it must have, and the programs built there -----------------------------

def check_host(host: SshHost, address: str, role: str) -> str:
    """Root, the tools to build and pin, the data-path address: what is missing is one line
    naming the host. Returns the interface that holds the address."""
    uid = host.ok(["id", "-u"], "running a command").strip()
    if uid != "0":
        raise CopylabError(f"host {host.destination}: commands run as uid {uid}, not root: the {role}'s "
                           "kernel counters and CPU pinning need root there")
    found = host.ok(["sh", "-c", " ".join(f"command -v {t} >/dev/null && echo {t};" for t in REQUIRED_TOOLS)],
                    "looking for the build tools").split()
    missing = [t for t in REQUIRED_TOOLS if t not in found]
    if missing:
        raise CopylabError(f"host {host.destination}: {', '.join(missing)} not installed there (Debian: "
                           "apt-get install gcc make tar util-linux)")
    addresses = host.ok(["ip", "-o", "addr", "show"], "listing its addresses")
    match = re.search(rf"^\d+:\s+(\S+)\s+inet6?\s+{re.escape(address)}/", addresses, re.M)
    if not match:
        raise CopylabError(f"host {host.destination}: no interface there has the {role} address {address}")
    return match.group(1).split("@")[0]

def build_native(host: SshHost) -> dict:
    """Copy native/ there and build it (a cache per source digest and host, under ~/.cache, so
    a second sweep does not rebuild). Returns the compiler and the compile command used."""
    tag = re.sub(r"[^A-Za-z0-9_.-]", "_", f"{native_digest()}-{host.destination}")
    home = host.ok(["sh", "-c", 'printf %s "${XDG_CACHE_HOME:-$HOME/.cache}"'], "finding its cache folder")
    host.build_root = f"{home}/copylab/{tag}"
    tarball = subprocess.run(["tar", "-C", str(PROJECT_ROOT), "--exclude", "native/build", "-czf", "-",
                              NATIVE_DIR.name], capture_output=True, check=True).stdout
    host.ok(["mkdir", "-p", host.build_root], "creating the build folder")
    host.ok(["tar", "-C", host.build_root, "-xzf", "-"], "unpacking the native sources", timeout=60, input=tarball)
    host.ok(["make", "-s", "-C", f"{host.build_root}/native"], "building native/", timeout=300)
    flags = host.ok(["make", "-n", "-B", "-C", f"{host.build_root}/native", "build/obj/message.o"],
                    "asking make for the compile command")
    compile_line = next((ln.strip() for ln in flags.splitlines() if " -c " in ln), "")
    return {"compiler": first_line(host.ok(["cc", "--version"], "asking the compiler its version")),
            "compile_command": compile_line, "build_dir": host.build_dir}

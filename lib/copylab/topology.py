"""Where server and client run: two network namespaces joined by veth (the study), or loopback.

One context manager per topology. Namespace names carry the project prefix and the creating
process id (`copylab-<pid>-<token>-srv`), so `clean` can tell a leftover of a dead run from a live
run of another process and never touches anything that is not ours.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from .errors import CopylabError, MeasurementError
from .paths import BUILD_DIR
from .privilege import can_admin_network

PREFIX = "copylab"
SERVER_ADDR = "198.18.0.1"  # 198.18.0.0/15: set aside for network benchmarks (RFC 2544)
CLIENT_ADDR = "198.18.0.2"
PREFIX_LEN = 30
SERVER_IF = "cl-srv"  # interface names only need to be unique inside their namespace
CLIENT_IF = "cl-cli"
NETNS_RUN_DIR = Path("/run/netns")  # where iproute2 keeps named namespaces
PORT_BASE, PORT_SPAN = 20000, 30000  # the namespaces' servers listen on ports in [20000, 50000)
_NS_NAME = re.compile(rf"^{PREFIX}-(\d+)-([0-9a-f]+)-(srv|cli)$")


@dataclass
class Topology:
    """Addresses and how to run a program on each side."""

    kind: str  # "netns" or "loopback"
    server_addr: str
    client_addr: str
    server_ns: str | None = None
    client_ns: str | None = None
    server_if: str | None = None
    client_if: str | None = None
    warnings: list[str] = field(default_factory=list)

    def server_exec(self, argv: list[str]) -> list[str]:
        """argv to run inside the server's namespace."""
        return _exec_prefix(self.server_ns) + list(argv)

    def client_exec(self, argv: list[str]) -> list[str]:
        return _exec_prefix(self.client_ns) + list(argv)

    def server_prefix(self) -> list[str]:
        return _exec_prefix(self.server_ns)

    def client_prefix(self) -> list[str]:
        return _exec_prefix(self.client_ns)

    def next_port(self) -> int:
        """A port for the next server, drawn at random: a program that does not set SO_REUSEADDR
        (sockperf) cannot bind a port whose connections of a moment ago are still in TIME_WAIT,
        and every notebook of a sweep attaches to the namespaces anew, so no counter survives."""
        return PORT_BASE + secrets.randbelow(PORT_SPAN)

    def check_alive(self) -> None:
        """Raise MeasurementError if a namespace of this topology vanished under us."""
        if self.kind != "netns":
            return
        # a stat, not `ip netns list`: this runs every few ms while a measurement is under way
        for ns in (self.server_ns, self.client_ns):
            if not (NETNS_RUN_DIR / ns).exists():
                raise MeasurementError(f"network namespace {ns} disappeared during the run")


def _exec_prefix(ns: str | None) -> list[str]:
    return ["ip", "netns", "exec", ns] if ns else []


def _ip(*args: str) -> None:
    """Run one `ip` command; a failure is a one-line error naming the command."""
    proc = subprocess.run(["ip", *args], capture_output=True, text=True)
    if proc.returncode != 0:
        detail = (proc.stderr or proc.stdout).strip().splitlines()
        raise CopylabError(f"'ip {' '.join(args)}' failed: {detail[-1] if detail else 'exit ' + str(proc.returncode)}")


def list_namespaces() -> list[str]:
    """Names of all network namespaces known to iproute2 (ours or not)."""
    if shutil.which("ip") is None:
        return []
    proc = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True)
    return [line.split()[0] for line in proc.stdout.splitlines() if line.strip()]


def our_namespaces() -> list[str]:
    # once each: a namespace whose mount point is half gone can be listed twice
    return list(dict.fromkeys(ns for ns in list_namespaces() if _NS_NAME.match(ns)))


def namespace_support() -> tuple[bool, str]:
    """Can this process create namespaces? (ok, reason when not)."""
    if shutil.which("ip") is None:
        return False, "the 'ip' command (Debian package iproute2) is not installed"
    if not can_admin_network():
        return False, ("network namespaces need root (CAP_SYS_ADMIN and CAP_NET_ADMIN; run as root, "
                       "or use topology loopback)")
    return True, ""


@contextlib.contextmanager
def netns_pair() -> Iterator[Topology]:
    """Create two namespaces joined by a veth pair; remove them on exit, error or interrupt."""
    ok, reason = namespace_support()
    if not ok:
        raise CopylabError(f"cannot create network namespaces: {reason}")
    token = secrets.token_hex(3)
    base = f"{PREFIX}-{os.getpid()}-{token}"
    topo = Topology(
        kind="netns",
        server_addr=SERVER_ADDR,
        client_addr=CLIENT_ADDR,
        server_ns=f"{base}-srv",
        client_ns=f"{base}-cli",
        server_if=SERVER_IF,
        client_if=CLIENT_IF,
    )
    created: list[str] = []
    try:
        for ns in (topo.server_ns, topo.client_ns):
            _ip("netns", "add", ns)
            created.append(ns)
        # created directly inside the namespaces: no name can clash in the root namespace
        _ip("link", "add", SERVER_IF, "netns", topo.server_ns, "type", "veth",
            "peer", "name", CLIENT_IF, "netns", topo.client_ns)
        for ns, ifname, addr in ((topo.server_ns, SERVER_IF, SERVER_ADDR), (topo.client_ns, CLIENT_IF, CLIENT_ADDR)):
            _ip("-n", ns, "addr", "add", f"{addr}/{PREFIX_LEN}", "dev", ifname)
            _ip("-n", ns, "link", "set", "lo", "up")
            _ip("-n", ns, "link", "set", ifname, "up")
        _wait_reachable(topo)
        yield topo
    finally:
        # teardown must run even while a KeyboardInterrupt or SIGTERM is unwinding us
        with _signals_deferred():
            for ns in created:
                remove_namespace(ns)


@contextlib.contextmanager
def loopback() -> Iterator[Topology]:
    """Both sides on 127.0.0.1 in the current namespace (no root needed; not what the study asks)."""
    yield Topology(
        kind="loopback",
        server_addr="127.0.0.1",
        client_addr="127.0.0.1",
        warnings=["topology loopback: server and client share one network namespace; the study asks for "
                  "two namespaces joined by veth (run as root with topology netns)"
                  + (f" [{namespace_support()[1]}]" if not namespace_support()[0] else "")],
    )


def attach(kind: str, server_ns: str | None = None, client_ns: str | None = None) -> Topology:
    """A Topology for namespaces someone else created and owns (the sweep driver, for its notebooks)."""
    if kind == "loopback":
        return Topology(kind="loopback", server_addr="127.0.0.1", client_addr="127.0.0.1")
    if not server_ns or not client_ns:
        raise CopylabError("topology netns: attach needs both namespace names")
    topo = Topology(kind="netns", server_addr=SERVER_ADDR, client_addr=CLIENT_ADDR, server_ns=server_ns,
                    client_ns=client_ns, server_if=SERVER_IF, client_if=CLIENT_IF)
    topo.check_alive()
    return topo


def open_topology(kind: str) -> contextlib.AbstractContextManager[Topology]:
    if kind == "netns":
        return netns_pair()
    if kind == "loopback":
        return loopback()
    raise CopylabError(f"topology: must be 'netns' or 'loopback', got {kind!r}")


def choose_topology(requested: str) -> str:
    """'auto' -> netns when this process can create namespaces, else loopback (warned about by loopback())."""
    if requested == "auto":
        return "netns" if namespace_support()[0] else "loopback"
    if requested == "netns":
        ok, reason = namespace_support()
        if not ok:
            raise CopylabError(f"topology netns: {reason}")
    return requested


def _wait_reachable(topo: Topology, timeout_s: float = 5.0) -> None:
    """veth links come up asynchronously; wait until the client namespace sees the server address."""
    deadline = time.monotonic() + timeout_s
    while True:
        proc = subprocess.run(
            topo.client_exec(["ip", "-o", "link", "show", "dev", CLIENT_IF]), capture_output=True, text=True
        )
        if "LOWER_UP" in proc.stdout and ",UP" in proc.stdout:
            return
        if time.monotonic() > deadline:
            raise CopylabError(f"veth pair {SERVER_IF}/{CLIENT_IF} did not come up within {timeout_s:g} s")
        time.sleep(0.02)


def namespace_pids(ns: str) -> list[int]:
    proc = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True)
    return [int(tok) for tok in proc.stdout.split() if tok.isdigit()]


def remove_namespace(ns: str) -> str:
    """Kill what still runs in ns, then delete it (the veth end inside goes with it).
    Returns "" when it is gone, else ip's complaint."""
    for pid in namespace_pids(ns):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
    proc = subprocess.run(["ip", "netns", "del", ns], capture_output=True, text=True)
    if proc.returncode == 0 or not (NETNS_RUN_DIR / ns).exists():
        return ""
    lines = (proc.stderr or proc.stdout).strip().splitlines()
    return lines[-1] if lines else f"exit status {proc.returncode}"


@contextlib.contextmanager
def _signals_deferred() -> Iterator[None]:
    """Hold SIGINT/SIGTERM while cleaning up, then re-deliver them."""
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    pending: list[int] = []
    old = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    for s in old:
        signal.signal(s, lambda signum, _frame: pending.append(signum))
    try:
        yield
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)
        for s in pending:
            os.kill(os.getpid(), s)


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _orphaned_native_processes() -> list[int]:
    """Our benchmark binaries whose parent is gone (re-parented to init): leftovers of a crash."""
    pids = []
    build = str(BUILD_DIR.resolve())
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            exe = os.readlink(entry / "exe")
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if exe.startswith(build + "/") and ppid == 1:
            pids.append(int(entry.name))
    return pids


def clean_leftovers(include_live: bool = False) -> dict[str, list]:
    """Remove namespaces (and processes in them) left by copylab runs whose process has died.

    include_live also removes those of running copylab processes. Nothing without our prefix is touched.
    """
    removed_ns, kept_ns, failed_ns = [], [], []
    for ns in our_namespaces():
        owner = int(_NS_NAME.match(ns).group(1))
        if include_live or not pid_alive(owner) or owner == os.getpid():
            complaint = remove_namespace(ns)
            if complaint:
                failed_ns.append(f"{ns} ({complaint})")
            else:
                removed_ns.append(ns)
        else:
            kept_ns.append(ns)
    killed = []
    for pid in _orphaned_native_processes():
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)
    return {"removed_namespaces": removed_ns, "kept_live_namespaces": kept_ns,
            "unremovable_namespaces": failed_ns, "killed_processes": killed}


if __name__ == "__main__":  # pragma: no cover - manual check
    with netns_pair() as t:
        print(t, file=sys.stderr)
        subprocess.run(t.client_exec(["ping", "-c1", "-W1", t.server_addr]))

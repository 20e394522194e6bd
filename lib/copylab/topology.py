"""Where server and client run: two network namespaces joined by veth (the study), loopback, or
two machines over SSH (hosts.SshHost; the data path between them is the user's network).

One context manager per topology; each side of a Topology is a host (hosts.py) that runs its
programs. Namespace names carry the project prefix and the creating
process id (`copylab-<pid>-<token>-srv`), so `clean` can tell a leftover of a dead run from a live
run of another process and never touches anything that is not ours.
"""

from __future__ import annotations

import contextlib
import ipaddress
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

from . import signals
from .errors import CopylabError, MeasurementError
from .hosts import LocalHost, SshHost, SshSettings, build_native, check_host, host_from_params
from .paths import BUILD_DIR
from .privilege import can_admin_network
from .procfs import stat_fields

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

    kind: str  # "netns", "loopback" or "ssh"
    server_addr: str
    client_addr: str
    server_ns: str | None = None
    client_ns: str | None = None
    server_if: str | None = None
    client_if: str | None = None
    warnings: list[str] = field(default_factory=list)
    server_host: LocalHost | SshHost | None = None  # default: this host, in server_ns
    client_host: LocalHost | SshHost | None = None
    details: dict = field(default_factory=dict)  # topology ssh: each host's interface and build
    congestion_set: str | None = None  # netns: the congestion control the namespaces' routes carry
    rps_set: tuple | None = None       # netns: the receive CPUs each veth's queue steers to (RPS)
    _default_congestion: dict = field(default_factory=dict)  # side -> what its host runs by default

    def __post_init__(self):
        self.server_host = self.server_host or LocalHost(self.server_ns)
        self.client_host = self.client_host or LocalHost(self.client_ns)

    def server_exec(self, argv: list[str]) -> list[str]:
        """argv to run on the server's side (inside its namespace)."""
        return self.server_host.command(argv)

    def client_exec(self, argv: list[str]) -> list[str]:
        return self.client_host.command(argv)

    def server_prefix(self) -> list[str]:
        return self.server_host.command([])

    def client_prefix(self) -> list[str]:
        return self.client_host.command([])

    def hosts(self) -> dict:
        return {"server": self.server_host, "client": self.client_host}

    def to_params(self) -> dict:
        """What a notebook kernel needs to attach to this topology (attach_params)."""
        return {"kind": self.kind, "server_addr": self.server_addr, "client_addr": self.client_addr,
                "server_ns": self.server_ns, "client_ns": self.client_ns, "server_if": self.server_if,
                "client_if": self.client_if, "server_host": self.server_host.to_params(),
                "client_host": self.client_host.to_params()}

    def next_port(self) -> int:
        """A port for the next server, drawn at random: a program that does not set SO_REUSEADDR
        (a latency peer) cannot bind a port whose connections of a moment ago are still in TIME_WAIT,
        and every notebook of a sweep attaches to the namespaces anew, so no counter survives."""
        return PORT_BASE + secrets.randbelow(PORT_SPAN)

    def set_congestion(self, name: str) -> None:
        """topology netns: every connection in both namespaces runs name, from its first segment,
        whichever program made it: the link route's congctl attribute (iproute2), which the kernel
        applies to connections made and accepted over it and which, unlike the namespace's sysctl,
        needs no entry in the host's tcp_allowed_congestion_control. "host" removes it. Elsewhere
        the programs set it on their own sockets where they can (their runners say)."""
        if self.kind != "netns" or name == self.congestion_set:
            return
        network = f"{ipaddress.ip_interface(f'{SERVER_ADDR}/{PREFIX_LEN}').network}"
        for ns, ifname, addr in ((self.server_ns, self.server_if, self.server_addr),
                                 (self.client_ns, self.client_if, self.client_addr)):
            args = ["-n", ns, "route", "replace", network, "dev", ifname, "proto", "kernel", "scope", "link",
                    "src", addr]
            _ip(*args, *([] if name == "host" else ["congctl", name]))
        self.congestion_set = name

    def set_receive_cpus(self, server_cpus: tuple[int, ...] | None, client_cpus: tuple[int, ...] | None) -> None:
        """topology netns: each side's receive softirq work (TCP input, ACK processing, the deferred
        copy of MSG_ZEROCOPY) on that side's own CPUs, through RPS on its veth's queue, as it would
        run on the receiving host's CPU between two machines; None leaves it where veth puts it (the
        transmitting CPU). Elsewhere nothing to do: a real NIC's receive runs on the receiver."""
        wanted = (server_cpus, client_cpus)
        if self.kind != "netns" or wanted == self.rps_set:
            return
        for ns, ifname, cpus in ((self.server_ns, self.server_if, server_cpus),
                                 (self.client_ns, self.client_if, client_cpus)):
            mask = format(sum(1 << c for c in cpus), "x") if cpus else "0"
            proc = subprocess.run(["ip", "netns", "exec", ns, "sh", "-c",
                                   f"echo {mask} > /sys/class/net/{ifname}/queues/rx-0/rps_cpus"],
                                  capture_output=True, text=True)
            if proc.returncode != 0:
                raise CopylabError(f"cannot steer receive work to CPUs {mask} in {ns}: "
                                   f"{(proc.stderr or proc.stdout).strip() or 'exit ' + str(proc.returncode)}")
        self.rps_set = wanted

    def effective_congestion(self, side: str) -> str:
        """The congestion control a connection made on side ("server" or "client") runs when its
        program does not choose one: the routes' (netns), else its host's default."""
        if self.kind == "netns" and self.congestion_set not in (None, "host"):
            return self.congestion_set
        if side not in self._default_congestion:
            proc = self.hosts()[side].run(["cat", "/proc/sys/net/ipv4/tcp_congestion_control"], timeout=10)
            text = proc.stdout.decode(errors="replace").strip() if proc.returncode == 0 else ""
            self._default_congestion[side] = text or "?"
        return self._default_congestion[side]

    def check_alive(self) -> None:
        """Raise MeasurementError if a namespace of this topology vanished under us, or the ssh
        connection to a host is gone."""
        if self.kind == "ssh":  # asked between points; during one, a side's ssh ends with its connection
            for host in (self.server_host, self.client_host):
                if not host.alive():
                    raise HostLost(f"the ssh connection to host {host.name} was lost")
            return
        if self.kind != "netns":
            return
        # a stat, not `ip netns list`: this runs every few ms while a measurement is under way
        for ns in (self.server_ns, self.client_ns):
            if not (NETNS_RUN_DIR / ns).exists():
                raise MeasurementError(f"network namespace {ns} disappeared during the run")


class HostLost(MeasurementError):
    """The ssh connection to a host of topology ssh is gone."""


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
        with signals.held():
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


def check_congestion_usable(names, topology: str) -> None:
    """A congestion control the programs could not select here is refused before anything runs, in
    one line naming the real cause: the kernel does not offer it (the ones it offers listed), or it
    does but an unprivileged program may pick only those in net.ipv4.tcp_allowed_congestion_control.
    In namespaces (root) any available one works."""
    import errno
    import socket

    if topology not in ("loopback", "netns"):
        return  # ssh: the hosts run as root, and each program reports what it ran
    for name in names:
        if name == "host":
            continue
        try:
            with socket.socket() as sock:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, name.encode())
        except OSError as exc:
            available = _sysctl_words("tcp_available_congestion_control")
            if exc.errno == errno.ENOENT or (available is not None and name not in available):
                raise CopylabError(f"congestion {name}: not available on this kernel, which offers "
                                   f"{' '.join(available) if available else '?'} "
                                   "(net.ipv4.tcp_available_congestion_control); choose one of those, or "
                                   "congestion: [host] / --congestion host") from None
            if exc.errno == errno.EPERM:
                allowed = _sysctl_words("tcp_allowed_congestion_control")
                raise CopylabError(f"congestion {name}: available on this kernel but not allowed for unprivileged "
                                   "programs (net.ipv4.tcp_allowed_congestion_control = "
                                   f"{' '.join(allowed) if allowed is not None else '?'}); run as root, or use "
                                   "congestion: [host] / --congestion host") from None
            raise CopylabError(f"congestion {name}: cannot be selected here ({exc.strerror}); use congestion: "
                               "[host] / --congestion host") from None


def _sysctl_words(name: str) -> list[str] | None:
    """The words of /proc/sys/net/ipv4/NAME, or None when it cannot be read."""
    try:
        return (Path("/proc/sys/net/ipv4") / name).read_text().split()
    except OSError:
        return None


def attach_params(params: dict) -> Topology:
    """The Topology another process opened (Topology.to_params): its ssh connections are shared."""
    fields = {k: params.get(k) for k in ("kind", "server_addr", "client_addr", "server_ns", "client_ns",
                                         "server_if", "client_if")}
    topo = Topology(**fields, server_host=host_from_params(params["server_host"]),
                    client_host=host_from_params(params["client_host"]))
    topo.check_alive()
    return topo


@contextlib.contextmanager
def ssh_pair(settings: SshSettings, control_dir: Path | None = None) -> Iterator[Topology]:
    """Connect to both hosts (one multiplexed connection each) and check they can run a point;
    disconnect on exit, error or interrupt. The native programs are built by build_remote()."""
    import tempfile

    if settings.server_host == settings.client_host:
        raise CopylabError(f"topology ssh: server_host and client_host are both {settings.server_host}; "
                           "use topology netns for one machine")
    # ssh's control sockets: a short path (sun_path holds 108 bytes), ours alone
    own_dir = control_dir is None
    control = Path(tempfile.mkdtemp(prefix="copylab-ssh-")) if own_dir else control_dir
    server = SshHost(settings.server_host, control, settings.ssh_config)
    client = SshHost(settings.client_host, control, settings.ssh_config)
    connected: list[SshHost] = []
    try:
        for host in (server, client):
            host.connect()
            connected.append(host)
        server_if = check_host(server, settings.server_addr, "server")
        client_if = check_host(client, settings.client_addr, "client")
        details = {"server": {"destination": server.destination, "address": settings.server_addr,
                              "interface": server_if, **build_native(server)},
                   "client": {"destination": client.destination, "address": settings.client_addr,
                              "interface": client_if, **build_native(client)}}
        yield Topology(kind="ssh", server_addr=settings.server_addr, client_addr=settings.client_addr,
                       server_if=server_if, client_if=client_if, server_host=server, client_host=client,
                       details=details)
    finally:
        with signals.held():
            for host in connected:
                host.disconnect()
            if own_dir:
                shutil.rmtree(control, ignore_errors=True)


def open_topology(kind: str, ssh: SshSettings | None = None) -> contextlib.AbstractContextManager[Topology]:
    if kind == "netns":
        return netns_pair()
    if kind == "loopback":
        return loopback()
    if kind == "ssh":
        if ssh is None:
            raise CopylabError("topology ssh: needs server_host, client_host, server_addr and client_addr")
        return ssh_pair(ssh)
    raise CopylabError(f"topology: must be 'netns', 'loopback' or 'ssh', got {kind!r}")


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
        except OSError:
            continue
        fields = stat_fields(entry.name)
        if fields and exe.startswith(build + "/") and fields[1] == "1":
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

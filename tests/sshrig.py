"""Two ssh hosts emulated on this machine, as a real rig is wired.

Each host is a network namespace running Debian's sshd on a generated host key, reached from the
root namespace over its own management veth; the measured data path is a separate veth pair
between the two namespaces. The driver (pytest, copylab) stays in the root namespace and reaches
the hosts with the OpenSSH client through an ssh_config file of the rig's own (a test-only client
key, the host keys pinned in known_hosts). The hosts share this machine's file system, so remote
folders (work folders, the build cache) are checked where the hosts would keep them.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

MGMT = {"h1": ("198.19.251.1", "198.19.251.2"), "h2": ("198.19.252.1", "198.19.252.2")}  # root side, host side
DATA = {"h1": "198.19.250.1", "h2": "198.19.250.2"}
PREFIX = "clssh"


def _ip(*args: str, ns: str | None = None) -> None:
    subprocess.run((["ip", "-n", ns] if ns else ["ip"]) + list(args), check=True, capture_output=True)


@dataclass
class Rig:
    root: Path
    token: str
    namespaces: dict = field(default_factory=dict)  # h1/h2 -> namespace name
    sshd: dict = field(default_factory=dict)        # h1/h2 -> Popen
    links: list = field(default_factory=list)       # the management veths' root-namespace ends
    config: Path | None = None

    @property
    def ssh_config(self) -> str:
        return str(self.config)

    def grid(self, name: str, **overrides) -> dict:
        """A small grid over the rig (a dict for yaml)."""
        grid = {"name": name, "topology": "ssh", "server_host": "h1", "client_host": "h2",
                "server_addr": DATA["h1"], "client_addr": DATA["h2"], "ssh_config": self.ssh_config,
                "impls": ["a1", "a3"], "modes": ["throughput"], "msg_sizes": [65536], "threads": [1],
                "duration_s": 0.2, "warmup_s": 0.05, "profile": False}
        grid.update(overrides)
        return grid

    def start_sshd(self, host: str) -> None:
        cfg = self.root / f"sshd_{host}.conf"
        self.sshd[host] = subprocess.Popen(
            ["ip", "netns", "exec", self.namespaces[host], "/usr/sbin/sshd", "-D", "-e", "-f", str(cfg)],
            stdout=subprocess.DEVNULL, stderr=open(self.root / f"sshd_{host}.log", "ab"), start_new_session=True)
        _wait_port(self.namespaces[host], MGMT[host][1], 22)

    def stop_sshd(self, host: str) -> None:
        """Every sshd of the host, its sessions too: as when the machine's sshd dies or it reboots."""
        for pid in self.pids(host):
            with contextlib.suppress(OSError):
                if Path(f"/proc/{pid}/exe").resolve().name == "sshd":
                    os.kill(pid, signal.SIGKILL)
        proc = self.sshd.pop(host, None)
        if proc is not None:
            proc.wait(timeout=10)

    def pids(self, host: str) -> list[int]:
        out = subprocess.run(["ip", "netns", "pids", self.namespaces[host]], capture_output=True, text=True).stdout
        return [int(p) for p in out.split()]

    def programs(self, host: str) -> list[str]:
        """What still runs in the host besides its sshd (a leftover, after a sweep)."""
        names = []
        for pid in self.pids(host):
            with contextlib.suppress(OSError):
                name = Path(f"/proc/{pid}/exe").resolve().name
                if name != "sshd":
                    names.append(f"{name}[{pid}]")
        return names


def _wait_port(ns: str, addr: str, port: int, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        out = subprocess.run(["ip", "netns", "exec", ns, "ss", "-Hltn", f"src {addr}:{port}"],
                             capture_output=True, text=True).stdout
        if out.strip():
            return
        time.sleep(0.05)
    raise RuntimeError(f"sshd in {ns} did not listen on {addr}:{port}")


def _keygen(path: Path) -> str:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "copylab-test", "-f", str(path)],
                   check=True)
    return (path.with_suffix(".pub") if path.suffix else Path(f"{path}.pub")).read_text().strip()


def _remove_dead_rigs() -> list[str]:
    """The namespaces (and their sshd) of a rig whose test run was killed: its hosts hold the same
    addresses as this rig's, so ssh would reach the old sshd and refuse its host key."""
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.split()
    removed = []
    for ns in (name for name in listed if name.startswith(f"{PREFIX}-")):
        creator = ns.split("-")[1]
        if creator.isdigit() and Path(f"/proc/{creator}").exists():
            continue  # a rig of a run still alive (xdist keeps one rig at a time within a run)
        pids = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True).stdout.split()
        for pid in pids:
            with contextlib.suppress(OSError, ValueError):
                os.kill(int(pid), signal.SIGKILL)
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        removed.append(ns)
    return removed


# One rig on the machine at a time: its hosts take fixed addresses in the root namespace, so a second
# run's rig (two people testing on one machine) took the routes and the first run's ssh met the other
# sshd ("Host key verification failed", every ssh test of one run failing). xdist keeps one rig per
# run; this lock, in /run (one per boot, every user's), keeps one per machine: the second waits.
RIG_LOCK = Path("/run/copylab-ssh-rig.lock")


@contextlib.contextmanager
def ssh_rig(root: Path):
    """Build the rig under root (keys, configs, caches), once no other run's rig is up; remove every
    namespace and sshd on exit, and first those a killed run left behind."""
    import fcntl

    with open(RIG_LOCK, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, a killed run's too
        with _rig(root) as rig:
            yield rig


@contextlib.contextmanager
def _rig(root: Path):
    _remove_dead_rigs()
    root.mkdir(parents=True, exist_ok=True)
    os.chmod(root, 0o700)
    Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # sshd's privilege-separation folder
    rig = Rig(root=root, token=secrets.token_hex(2))
    client_pub = _keygen(root / "id_test")
    noperf_pub = _keygen(root / "id_noperf")
    banner_pub = _keygen(root / "id_banner")
    known = []
    noperf = root / "noperf-bin"  # a PATH with every command but perf: "a host without perf"
    noperf.mkdir()
    for folder in ("/usr/local/bin", "/usr/bin", "/usr/sbin"):
        for entry in Path(folder).iterdir():
            if not entry.name.startswith("perf") and not (noperf / entry.name).exists():
                (noperf / entry.name).symlink_to(entry)
    # the second key logs in with that PATH (sshd resets PATH for SetEnv, not for this option)
    # the third key logs in to a host whose login shell greets every command, on both streams
    # (a .bashrc that echoes, "Last login"): what copylab reads must not be those lines
    banner = ('command="echo Welcome to the rig; echo Last login: never >&2; '
              'exec sh -c \\"$SSH_ORIGINAL_COMMAND\\""')
    (root / "authorized_keys").write_text(f"{client_pub}\nenvironment=\"PATH={noperf}\" {noperf_pub}\n"
                                          f"{banner} {banner_pub}\n")
    try:
        for index, host in enumerate(("h1", "h2"), start=1):
            ns = f"{PREFIX}-{os.getpid()}-{rig.token}-{host}"
            rig.namespaces[host] = ns
            _ip("netns", "add", ns)
            root_if, host_side = f"{PREFIX}{rig.token}m{index}", MGMT[host]
            _ip("link", "add", root_if, "type", "veth", "peer", "name", "mgmt", "netns", ns)
            rig.links.append(root_if)
            _ip("addr", "add", f"{host_side[0]}/30", "dev", root_if)
            _ip("link", "set", root_if, "up")
            _ip("addr", "add", f"{host_side[1]}/30", "dev", "mgmt", ns=ns)
            _ip("link", "set", "mgmt", "up", ns=ns)
            _ip("link", "set", "lo", "up", ns=ns)
            host_pub = _keygen(root / f"host_{host}")
            known.append(f"{host_side[1]} {' '.join(host_pub.split()[:2])}")
            (root / f"sshd_{host}.conf").write_text(
                f"ListenAddress {host_side[1]}\nHostKey {root}/host_{host}\nPidFile none\n"
                f"AuthorizedKeysFile {root}/authorized_keys\nPermitRootLogin prohibit-password\n"
                "PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\n"
                "AcceptEnv XDG_CACHE_HOME SHLVL\nPermitUserEnvironment yes\nMaxSessions 64\nMaxStartups 64\n")
        _ip("link", "add", "data", "netns", rig.namespaces["h1"], "type", "veth",
            "peer", "name", "data", "netns", rig.namespaces["h2"])
        for host in ("h1", "h2"):
            _ip("addr", "add", f"{DATA[host]}/30", "dev", "data", ns=rig.namespaces[host])
            _ip("link", "set", "data", "up", ns=rig.namespaces[host])
        (root / "known_hosts").write_text("\n".join(known) + "\n")
        common = (f"  User root\n  IdentityFile {root}/id_test\n  IdentitiesOnly yes\n"
                  f"  UserKnownHostsFile {root}/known_hosts\n  StrictHostKeyChecking yes\n"
                  # SHLVL=1: bash then skips root's ~/.bashrc (sourced for ssh commands; pyenv's
                  # there costs ~0.1 s a command on the development VM): a host with a quick shell
                  f"  SetEnv XDG_CACHE_HOME={root}/cache SHLVL=1\n")
        rig.config = root / "ssh_config"
        rig.config.write_text(
            f"Host h1\n  HostName {MGMT['h1'][1]}\n{common}"
            f"Host h2\n  HostName {MGMT['h2'][1]}\n{common}"
            f"Host h2-noperf\n  HostName {MGMT['h2'][1]}\n{common.replace('id_test', 'id_noperf')}"
            f"Host h1-banner\n  HostName {MGMT['h1'][1]}\n{common.replace('id_test', 'id_banner')}"
            f"Host h2-banner\n  HostName {MGMT['h2'][1]}\n{common.replace('id_test', 'id_banner')}"
            # a name that resolves nowhere: ssh's own "Could not resolve hostname"
            f"Host nosuchhost\n  HostName nosuchhost.invalid\n{common}")
        for host in ("h1", "h2"):
            rig.start_sshd(host)
        yield rig
    finally:
        for host in list(rig.sshd):
            rig.stop_sshd(host)
        for host, ns in rig.namespaces.items():
            for pid in rig.pids(host):
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        for link in rig.links:  # gone with its namespace, unless a dying process still held it
            subprocess.run(["ip", "link", "del", link], capture_output=True)
        shutil.rmtree(root, ignore_errors=True)

"""What a reader needs to know about the machine and the network path to judge the numbers (meta.json).

Every value is read from the system at call time; anything that cannot be read is None (a missing
tool, a non-Linux /proc, a namespace that is gone): metadata never stops a measurement.
"""

from __future__ import annotations

import json
import os
import platform
import socket
from pathlib import Path

from . import registry
from .hosts import LocalHost
from .paths import PROJECT_ROOT
from .perf import first_line, perf_version

_TIMEOUT_S = 10

# sysctls that bound what a socket may buffer or pin; all per network namespace on current kernels
NET_SYSCTLS = {
    "optmem_max": "net/core/optmem_max",   # MSG_ZEROCOPY's notification/pinning budget (ENOBUFS)
    "tcp_congestion_control": "net/ipv4/tcp_congestion_control",  # what a socket runs unless told
    "tcp_allowed_congestion_control": "net/ipv4/tcp_allowed_congestion_control",  # what others may pick
    "tcp_wmem": "net/ipv4/tcp_wmem",       # min default max send buffer
    "tcp_rmem": "net/ipv4/tcp_rmem",
}


def _run(argv: list[str], host=None) -> str | None:
    """stdout of argv run on host (a hosts.LocalHost/SshHost; default this machine as it is), or
    None if the program is missing, fails or hangs."""
    proc = (host or LocalHost()).run(argv, timeout=_TIMEOUT_S)
    return proc.stdout.decode(errors="replace") if proc.returncode == 0 else None


def _cpu_model(host=None) -> str | None:
    cpuinfo = _run(["cat", "/proc/cpuinfo"], host) if host is not None else _read("/proc/cpuinfo")
    fallback = None if host is not None else platform.processor() or None
    # x86: "model name"; arm64 kernels print no model name, lscpu knows it from the MIDR
    for line in (cpuinfo or "").splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("model name", "Model", "cpu model", "Hardware") and value.strip():
            return value.strip()
    lscpu = _run(["lscpu"], host)
    for line in (lscpu or "").splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "Model name" and value.strip():
            return value.strip()
    return fallback


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text()
    except OSError:
        return None


def _memory_gib(host=None) -> float | None:
    meminfo = _run(["cat", "/proc/meminfo"], host) if host is not None else _read("/proc/meminfo")
    try:
        for line in (meminfo or "").splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 2**20, 2)  # kB -> GiB
    except (ValueError, IndexError):
        pass
    return None


def git_revision(root: Path = PROJECT_ROOT) -> str | None:
    """HEAD of the checkout at root, with "-dirty" when tracked files differ from it; None outside git."""
    head = first_line(_run(["git", "-C", str(root), "rev-parse", "HEAD"]))
    if not head:
        return None
    status = _run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"])
    return f"{head}-dirty" if status else head


def host_meta() -> dict:
    """The machine: kernel, CPU, memory, tool versions, project revision."""
    return {
        "kernel": platform.release(),
        "cpu_model": _cpu_model(),
        "cores": os.cpu_count(),
        "memory_gib": _memory_gib(),
        "hostname": socket.gethostname(),
        "compiler": first_line(_run(["cc", "--version"])) or None,
        "git_revision": git_revision(),
        "python": platform.python_version(),
        "perf_version": perf_version()[0],
        "cpu_caches": cpu_caches(),
        "virtualization": virtualization(),
        "tool_versions": tool_versions(),
    }


def cpu_caches(root: str = "/sys/devices/system/cpu/cpu0/cache") -> dict[str, str] | None:
    """CPU 0's caches from sysfs: {"L1d": "32K", "L1i": "32K", "L2": "512K", "L3": "32768K"}, each with the
    CPUs sharing it ("L3": "32768K shared by 0-1"); None where sysfs has none (lscpu says the same)."""
    caches = {}
    for index in sorted(Path(root).glob("index*")):
        level, kind, size = (_read(str(index / f)) for f in ("level", "type", "size"))
        if not (level and kind and size):
            continue
        name = f"L{level.strip()}" + {"Data": "d", "Instruction": "i"}.get(kind.strip(), "")
        shared = (_read(str(index / "shared_cpu_list")) or "").strip()
        caches[name] = size.strip() + (f" shared by CPUs {shared}" if shared and ("-" in shared or "," in shared) else "")
    return caches or None


def virtualization(host=None) -> dict:
    """What the machine runs on: {"vm": "kvm" | "none" | None, "container": "docker" | "none" | None,
    "hypervisor_vendor": lscpu's "Hypervisor vendor" or None, "hypervisor_flag": the CPU's hypervisor flag}.
    systemd-detect-virt --vm prints "none" and exits 1 on bare metal; None where it is missing."""
    def detect(flag: str) -> str | None:
        proc = (host or LocalHost()).run(["systemd-detect-virt", flag], timeout=_TIMEOUT_S)
        out = proc.stdout.decode(errors="replace").strip() if proc.stdout else ""
        return out or None
    lscpu = _run(["lscpu"], host) or ""
    vendor = next((line.split(":", 1)[1].strip() for line in lscpu.splitlines()
                   if line.startswith("Hypervisor vendor:")), None)
    cpuinfo = _run(["cat", "/proc/cpuinfo"], host) if host is not None else _read("/proc/cpuinfo")
    flags = next((line.split(":", 1)[1].split() for line in (cpuinfo or "").splitlines()
                  if line.startswith("flags")), None)
    return {"vm": detect("--vm"), "container": detect("--container"), "hypervisor_vendor": vendor,
            "hypervisor_flag": None if flags is None else "hypervisor" in flags}


def tool_versions(host=None) -> dict[str, str | None]:
    """The first line each reference program (registry peers, run by their names) prints for its
    version; None when it is not installed."""
    return {peer: first_line(_run([peer, "--version"], host)) or None for peer in registry.names(kind="peer")}


def remote_host_meta(host) -> dict:
    """host_meta's machine fields for another host (a hosts.SshHost)."""
    return {
        "hostname": first_line(_run(["uname", "-n"], host)) or None,
        "kernel": first_line(_run(["uname", "-r"], host)) or None,
        "cpu_model": _cpu_model(host),
        "cores": (_ints(_run(["nproc"], host)) or [None])[0],
        "memory_gib": _memory_gib(host),
        "perf_version": perf_version("perf", host)[0],
    }


def net_meta(ifname: str | None = None, host=None) -> dict:
    """Network settings as programs on host see them (hosts.LocalHost(ns) for a namespace: /proc/sys/net
    shows the reader's namespace; default this machine as it is).

    optmem_max is an int, tcp_wmem/tcp_rmem are [min, default, max]; with ifname also veth_mtu (int,
    the interface's MTU whatever its kind), offloads (ethtool -k: feature -> on/off as bool) and
    nic (ethtool -i: driver, version, firmware-version, bus-info). Unreadable values are None.
    """
    meta: dict = {}
    for key, rel in NET_SYSCTLS.items():
        text = _run(["cat", f"/proc/sys/{rel}"], host)
        if "congestion" in key:
            meta[key] = text.strip() if text and text.strip() else None
            continue
        numbers = _ints(text)
        meta[key] = numbers[0] if numbers and key == "optmem_max" else numbers
    if ifname is not None:
        meta["veth_mtu"] = _mtu(ifname, host)
        meta["qdisc"] = qdisc(ifname, host)
        meta["offloads"] = parse_ethtool_features(_run(["ethtool", "-k", ifname], host))
        meta["nic"] = parse_ethtool_driver(_run(["ethtool", "-i", ifname], host))
    return meta


def qdisc(ifname: str, host=None) -> str | None:
    """The root queueing discipline of an interface ("noqueue", "fq", "pfifo_fast", ...): with
    noqueue or pfifo_fast, BBR paces in TCP itself; fq paces for it."""
    out = _run(["tc", "qdisc", "show", "dev", ifname], host)
    for line in (out or "").splitlines():
        words = line.split()
        if len(words) >= 2 and words[0] == "qdisc" and "root" in words:
            return words[1]
    return None


def parse_ethtool_driver(text: str | None) -> dict[str, str] | None:
    """`ethtool -i IF` -> {"driver": "mlx5_core", "firmware-version": "...", ...}; None without output."""
    fields = {}
    for line in (text or "").splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() in ("driver", "version", "firmware-version", "bus-info"):
            fields[key.strip()] = value.strip()
    return fields or None


def _ints(text: str | None) -> list[int] | None:
    try:
        return [int(word) for word in text.split()] if text and text.split() else None
    except ValueError:
        return None


def _mtu(ifname: str, host=None) -> int | None:
    out = _run(["ip", "-j", "link", "show", "dev", ifname], host)
    try:
        return int(json.loads(out)[0]["mtu"]) if out else None
    except (ValueError, KeyError, IndexError, TypeError):
        return None


def parse_ethtool_features(text: str | None) -> dict[str, bool] | None:
    """`ethtool -k IF` -> {"tcp-segmentation-offload": True, ...}; "on [fixed]" and
    "off [requested on]" count by their first word (what is in effect). None without output."""
    if not text:
        return None
    features = {}
    for line in text.splitlines():
        name, sep, value = line.strip().partition(":")
        state = value.split()[0] if value.split() else ""
        if sep and state in ("on", "off"):
            features[name] = state == "on"
    return features or None

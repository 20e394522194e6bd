"""`copylab doctor`: what this host can do for the study, and what the report will lack because of it.

A diagnosis, not a gate: it exits 0 whatever is missing. Each check tries the real thing where that
is cheap (create the namespace pair, set SO_ZEROCOPY, count with perf) instead of guessing from names.
"""

from __future__ import annotations

import ctypes
import errno
import json
import os
import shutil
import socket
from pathlib import Path
from typing import Callable

from .. import perf as perfmod
from .. import registry, tools
from ..hostmeta import host_meta, net_meta
from ..contract import IMPLS
from ..paths import client_binary, server_binary
from ..privilege import can_admin_network
from ..topology import SERVER_IF, namespace_support, netns_pair

# Linux's value; Python's socket module only has the name when it was built against new headers
SO_ZEROCOPY = getattr(socket, "SO_ZEROCOPY", 60)



def register(subparsers) -> None:
    p = subparsers.add_parser("doctor", help="what this host can measure and what the report will lack")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    p.set_defaults(func=doctor_command)


def doctor_command(args) -> int:
    report = diagnose()
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(format_table(report))
    return 0


def _check(ok: bool, detail: str, lacks: list[str] | str = ()) -> dict:
    """One check's result; `lacks` says what the report misses because of it (nothing when ok)."""
    lacks = [lacks] if isinstance(lacks, str) else list(lacks)
    return {"ok": ok, "detail": detail, "lacks": [] if ok else lacks}


def check_root() -> dict:
    uid = os.geteuid()
    privileged = can_admin_network()
    who = "root" if uid == 0 else f"uid {uid}"
    detail = (f"running as {who} with CAP_SYS_ADMIN and CAP_NET_ADMIN" if privileged
              else f"running as {who} without CAP_SYS_ADMIN/CAP_NET_ADMIN")
    return _check(privileged, detail, "no network namespaces and no kernel-side perf counts without root")


def check_namespaces() -> dict:
    """Create the real namespace pair (and tear it down); report what the measured path looks like."""
    ok, reason = namespace_support()
    lack = "runs fall back to topology loopback (one namespace), not the veth pair the study asks for"
    if not ok:
        return _check(False, reason, lack)
    try:
        with netns_pair() as topo:
            seen = net_meta(SERVER_IF, topo.server_host)
    except Exception as exc:  # any failure here is the diagnosis, not a crash of doctor
        return _check(False, f"creating the namespace pair failed: {exc}", lack)
    detail = (f"created and removed a namespace pair joined by veth (MTU {seen['veth_mtu']}, "
              f"optmem_max {seen['optmem_max']} in the namespace)")
    return {**_check(True, detail), "net": seen}


def check_perf() -> dict:
    plan = perfmod.probe()
    if plan.perf_path is None:
        lack = "every perf column (cycles, cache misses, context switches) is empty"
        return {**_check(False, plan.note, lack), "plan": plan.to_dict()}
    cache_events = ("L1-dcache-load-misses", "LLC-load-misses")
    all_ok = all(plan.supported[e] for e in perfmod.REQUESTED_EVENTS)
    lacks = []
    if plan.cycles_source == "tsc":
        lacks.append("cycles are TSC reference cycles (cycles_source=tsc), not core clock cycles")
    elif plan.cycles_source is None:
        lacks.append("cycles and cycles per byte are empty")
    if not all(plan.supported[e] for e in cache_events):
        lacks.append("the cache-miss plot and Q2 (which cache level) have no data")
    other = [e for e in perfmod.REQUESTED_EVENTS
             if not plan.supported[e] and e not in cache_events and e != "cycles"]
    if other:
        lacks.append(f"no data for {', '.join(other)}")
    detail = f"perf {plan.version} at {plan.perf_path}" + (f": {plan.note}" if plan.note else "")
    return {**_check(all_ok, detail, lacks), "plan": plan.to_dict()}


def check_zerocopy() -> dict:
    """SO_ZEROCOPY on a TCP socket: without it MSG_ZEROCOPY is silently ignored (zero-copy = one-copy)."""
    lack = "MSG_ZEROCOPY senders cannot be measured"
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.setsockopt(socket.SOL_SOCKET, SO_ZEROCOPY, 1)
            enabled = sock.getsockopt(socket.SOL_SOCKET, SO_ZEROCOPY)
    except OSError as exc:
        name = errno.errorcode.get(exc.errno, str(exc.errno)) if exc.errno else ""
        return _check(False, f"setsockopt(SO_ZEROCOPY) failed: {name} {exc.strerror or exc}".strip(), lack)
    if not enabled:
        return _check(False, "setsockopt(SO_ZEROCOPY, 1) was accepted but reads back 0", lack)
    return _check(True, "setsockopt(SO_ZEROCOPY, 1) accepted on a TCP socket")


def _errname(code: int) -> str:
    return f"{errno.errorcode.get(code, str(code))} ({os.strerror(code)})"


# io_uring from Python: the raw system calls (x86_64 and arm64 share these numbers)
NR_IO_URING_SETUP, NR_IO_URING_REGISTER = 425, 427
IORING_REGISTER_PROBE, IORING_OP_SEND_ZC, IO_URING_OP_SUPPORTED = 8, 47, 1
IO_URING_DISABLED = Path("/proc/sys/kernel/io_uring_disabled")
LIBURING_HEADER = Path("/usr/include/liburing.h")
TCP_ZEROCOPY_RECEIVE = 35


def _io_uring_fd() -> tuple[int | None, str]:
    """A real io_uring (1 entry), or None and why not."""
    libc = ctypes.CDLL(None, use_errno=True)
    params = ctypes.create_string_buffer(120)  # struct io_uring_params, zeroed
    fd = libc.syscall(NR_IO_URING_SETUP, 1, params)
    if fd >= 0:
        return fd, ""
    code = ctypes.get_errno()
    why = f"io_uring_setup: {_errname(code)}"
    if code == errno.EPERM and IO_URING_DISABLED.exists():
        value = IO_URING_DISABLED.read_text().strip()
        why += (f": kernel.io_uring_disabled={value} (0 allows it: sysctl -w kernel.io_uring_disabled=0)"
                if value != "0" else ": refused by a security policy (seccomp, LSM)")
    elif code == errno.ENOSYS:
        why += ": this kernel has no io_uring"
    return None, why


def need_io_uring() -> tuple[bool, str]:
    fd, why = _io_uring_fd()
    if fd is None:
        return False, why
    os.close(fd)
    return True, "io_uring_setup allowed"


def need_io_uring_send_zc() -> tuple[bool, str]:
    """IORING_OP_SEND_ZC in the kernel's own list of opcodes (IORING_REGISTER_PROBE)."""
    fd, why = _io_uring_fd()
    if fd is None:
        return False, why
    try:
        probe = ctypes.create_string_buffer(16 + 8 * 256)  # struct io_uring_probe + 256 ops
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.syscall(NR_IO_URING_REGISTER, fd, IORING_REGISTER_PROBE, probe, 256) < 0:
            return False, f"IORING_REGISTER_PROBE: {_errname(ctypes.get_errno())}"
        last_op = probe.raw[0]
        flags = int.from_bytes(probe.raw[16 + 8 * IORING_OP_SEND_ZC + 2:16 + 8 * IORING_OP_SEND_ZC + 4], "little")
        if last_op < IORING_OP_SEND_ZC or not flags & IO_URING_OP_SUPPORTED:
            return False, "this kernel's io_uring has no IORING_OP_SEND_ZC (Linux 6.0 and later)"
        return True, "IORING_OP_SEND_ZC supported"
    finally:
        os.close(fd)


def need_liburing() -> tuple[bool, str]:
    if LIBURING_HEADER.exists():
        return True, f"{LIBURING_HEADER} present"
    return False, "liburing-dev is not installed, so native/Makefile skips the io_uring servers " \
                  "(tools/install-debian-deps.sh installs it)"


def need_memfd() -> tuple[bool, str]:
    try:
        os.close(os.memfd_create("copylab-doctor"))
    except (AttributeError, OSError) as exc:
        return False, f"memfd_create: {exc}"
    return True, "memfd_create works"


def need_msg_zerocopy() -> tuple[bool, str]:
    result = check_zerocopy()
    return result["ok"], result["detail"]


def need_tool(tool: str) -> tuple[bool, str]:
    path = shutil.which(tool)
    return (True, path) if path else (False, f"{tool} is not installed (Debian: apt-get install {tool})")


# what registry.def's host_needs words mean (tool:<name> is a program on PATH)
NEEDS: dict[str, Callable[[], tuple[bool, str]]] = {
    "msg_zerocopy": need_msg_zerocopy,
    "io_uring": need_io_uring,
    "io_uring_send_zc": need_io_uring_send_zc,
    "liburing": need_liburing,
    "memfd": need_memfd,
}


def check_need(need: str) -> tuple[bool, str]:
    if need.startswith("tool:"):
        return need_tool(need.split(":", 1)[1])
    if need not in NEEDS:
        return False, f"registry.def names a host need doctor does not know: {need!r}"
    return NEEDS[need]()


def check_path(impl: registry.Impl) -> dict:
    """One send path of the registry: every host need it names, and (copylab's own) its server built."""
    lack = f"{impl.label} ({impl.name}) cannot be measured on this host"
    for need in impl.needs:
        ok, why = check_need(need)
        if not ok:
            return _check(False, why, f"{lack}: {why}")
    if impl.native and not server_binary(impl.name).is_file():
        why = f"{server_binary(impl.name).name} is not built (make -C native)"
        return _check(False, why, f"{lack}: {why}")
    needs = ", ".join(impl.needs) or "nothing beyond TCP"
    return _check(True, f"{impl.path} (needs {needs}: all there)")


def check_zerocopy_receive() -> dict:
    """TCP_ZEROCOPY_RECEIVE exists (an unconnected socket answers something else than ENOPROTOOPT)."""
    lack = "receive zerocopy (TCP_ZEROCOPY_RECEIVE) cannot be measured"
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.getsockopt(socket.IPPROTO_TCP, TCP_ZEROCOPY_RECEIVE, 64)
        except OSError as exc:
            if exc.errno in (errno.ENOPROTOOPT, errno.EOPNOTSUPP):
                return _check(False, f"getsockopt(TCP_ZEROCOPY_RECEIVE): {_errname(exc.errno)}", lack)
    return _check(True, "TCP_ZEROCOPY_RECEIVE available; over veth it maps only what a zero-copy sender's "
                        "deferred copy delivers in whole pages: most with MTU 1500, all with an MTU whose "
                        "MSS is a whole page (4148)")


def check_native() -> dict:
    # a server whose build needs are missing is skipped by the Makefile: its path check says so
    buildable = [i.name for i in registry.all_impls() if i.native and
                 all(check_need(n)[0] for n in i.needs if n == "liburing")]
    binaries = [server_binary(impl) for impl in IMPLS if impl in buildable] + [client_binary()]
    missing = [b.name for b in binaries if not (b.is_file() and os.access(b, os.X_OK))]
    build_tools = [tool for tool in ("cc", "make") if shutil.which(tool) is None]
    if not missing:
        return _check(True, f"{', '.join(b.name for b in binaries)} built in {binaries[0].parent}")
    if build_tools:
        return _check(False, f"not built: {', '.join(missing)}; and {', '.join(build_tools)} missing",
                      "nothing can be measured: the C programs cannot be built")
    return _check(False, f"not built yet: {', '.join(missing)}",
                  "no measurements until the C programs are built (`make -C native`; the sweep does it first)")


def _tool_check(key: str, lack: str) -> dict:
    path = tools.find(key)
    return _check(True, path) if path else _check(False, tools.describe_missing(key), lack)


CHECKS: dict[str, Callable[[], dict]] = {
    "root": check_root,
    "namespaces": check_namespaces,
    "perf": check_perf,
    "msg_zerocopy": check_zerocopy,
    "native_binaries": check_native,
    **{f"path:{impl.name}": (lambda impl=impl: check_path(impl)) for impl in registry.all_impls()},
    "receive:zerocopy": check_zerocopy_receive,
    "chromium": lambda: _tool_check("chromium", "no static plot images: the PDF has no figures"),
    "xelatex": lambda: _tool_check("xelatex", "no PDF report (HTML only)"),
    "pandoc": lambda: _tool_check("pandoc", "no PDF report (HTML only)"),
    "pdftoppm": lambda: _tool_check("pdftoppm", "PDF pages cannot be rendered for checking"),
}


def diagnose() -> dict:
    """Every check, the host, and the list of what the report will lack."""
    checks = {name: run() for name, run in CHECKS.items()}
    lacks = []
    for result in checks.values():
        lacks += [lack for lack in result["lacks"] if lack not in lacks]
    return {"host": host_meta(), "checks": checks, "lacks": lacks}


def format_table(report: dict) -> str:
    checks = report["checks"]
    width = max(len(name) for name in checks)
    host = report["host"]
    lines = [f"host: {host['hostname']}, {host['cpu_model']}, {host['cores']} cores, "
             f"{host['memory_gib']} GiB, kernel {host['kernel']}", ""]
    for name, result in checks.items():
        lines.append(f"{name:<{width}}  {'ok' if result['ok'] else 'NO':<3} {result['detail']}")
    perf_plan = checks["perf"]["plan"]
    if perf_plan["perf_path"]:
        lines.append("")
        lines.append("perf events: " + ", ".join(
            f"{event} {'yes' if ok else 'no'}" for event, ok in perf_plan["supported"].items()))
        lines.append(f"cycles source: {perf_plan['cycles_source'] or 'none'}")
    lines.append("")
    if report["lacks"]:
        lines.append("the report will lack:")
        lines += [f"  - {lack}" for lack in report["lacks"]]
    else:
        lines.append("nothing missing: this host can produce the full report")
    return "\n".join(lines)

"""`copylab doctor`: what this host can do for the study, and what the report will lack because of it.

A diagnosis, not a gate: it exits 0 whatever is missing. Each check tries the real thing where that
is cheap (create the namespace pair, set SO_ZEROCOPY, count with perf) instead of guessing from names.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import socket
from typing import Callable

from .. import perf as perfmod
from .. import tools
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
    """SO_ZEROCOPY on a TCP socket: without it MSG_ZEROCOPY is silently ignored (A3 = A2)."""
    lack = "A3 (MSG_ZEROCOPY) cannot be measured"
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


def check_native() -> dict:
    binaries = [server_binary(impl) for impl in IMPLS] + [client_binary()]
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

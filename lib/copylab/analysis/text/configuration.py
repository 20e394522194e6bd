"""The configuration the numbers come from (meta.json and the rows' own settings), and the report's
introduction, which claims only what this sweep counted."""

from __future__ import annotations

import re

import pandas as pd

from ...fmt import fmt_size, plural
from ..load import METRICS
from ..roles import BASE, ONE_COPY, ZERO_COPY, name, peers
from ..stats import measured, unmeasured_short

NOT_RECORDED = "not recorded in meta.json (a sweep made before copylab recorded it)"


def _version(text) -> tuple[int, int] | None:
    found = re.search(r"(\d+)\.(\d+)", str(text or ""))
    return (int(found.group(1)), int(found.group(2))) if found else None


def perf_warning(meta: dict) -> str:
    """A warning when perf is older than the kernel it ran on (it may not know the kernel's newer
    events, tracepoints or symbols); '' otherwise."""
    perf, kernel = _version(meta.get("perf_version")), _version(meta.get("kernel"))
    if not perf or not kernel or perf >= kernel:
        return ""
    return (f"**perf {meta['perf_version']} is older than the kernel it ran on ({meta['kernel']})**: it may not "
            "know the kernel's newer events and tracepoints, and reads what it can; the counters and profiles here "
            "are what this perf could take.")


def _caches(meta: dict) -> str:
    caches = meta.get("cpu_caches")
    if not isinstance(caches, dict) or not caches:
        return NOT_RECORDED
    return ", ".join(f"{k} {v}" for k, v in caches.items()) + " (per core unless shared; CPU 0's view)"


def _virtualization(meta: dict) -> str:
    v = meta.get("virtualization")
    if not isinstance(v, dict):
        return NOT_RECORDED
    vm, vendor, container = v.get("vm"), v.get("hypervisor_vendor"), v.get("container")
    if vm and vm != "none":
        text = f"virtual machine ({vendor or vm}; systemd-detect-virt --vm: {vm})"
    elif vm == "none":
        text = "bare metal (systemd-detect-virt --vm: none)"
    elif v.get("hypervisor_flag"):
        text = f"virtual machine ({vendor or 'the CPU has the hypervisor flag'})"
    else:
        text = "unknown (systemd-detect-virt missing, no hypervisor flag)"
    return text + (f", inside a {container} container" if container and container != "none" else "")


def _column(df: pd.DataFrame, column: str) -> str:
    values = sorted(set(df[column].dropna().astype(str))) if column in df else []
    return ", ".join(values) or "not recorded"


def _side(meta: dict, key: str) -> str:
    client = meta.get("client_net") if isinstance(meta.get("client_net"), dict) else {}
    return f"sender {meta.get(key) or 'not recorded'}, receiver {client.get(key) or 'not recorded'}"


def _host_load(meta: dict) -> str:
    """Other programs' share of the CPUs while the sweep measured (sweep/hostload.py), per session."""
    sessions = meta.get("sessions") if isinstance(meta.get("sessions"), list) else []
    texts = []
    for session in sessions:
        load = session.get("host_load") if isinstance(session, dict) else None
        if not isinstance(load, dict) or load.get("other_cpu_share") is None:
            continue
        share, quiet = load["other_cpu_share"], load.get("quiet_below", 0.05)
        text = (f"{100 * share:.1f}% of all CPUs' time (mean over {load.get('groups')} groups of points, largest "
                f"{100 * load.get('other_cpu_share_max', share):.1f}%)")
        if share > quiet:
            text += (f": a busy host (quiet is under {100 * quiet:.0f}%), so the spread between repetitions "
                     "is wider than this host gives when nothing else runs")
        texts.append(text)
    if not texts:
        return NOT_RECORDED
    return texts[0] if len(texts) == 1 else "; ".join(f"session {k}: {t}" for k, t in enumerate(texts, 1))


def _placement(df: pd.DataFrame, meta: dict) -> str:
    """Where the hypervisor had the two CPUs (placement.py): the modes the rule learned from this
    host's cache-line round trips, the line between them, and the runs set aside."""
    trips = pd.to_numeric(df.get("cpu_round_trip_ns", pd.Series(dtype=float)), errors="coerce").dropna()
    if trips.empty:
        notes = sorted(set(df.get("placement_note", pd.Series(dtype=str)).dropna().astype(str)) - {""})
        return notes[0] if len(notes) == 1 else NOT_RECORDED
    learned = meta.get("placement") if isinstance(meta.get("placement"), dict) else {}
    why = learned.get("why") if isinstance(learned.get("why"), str) else None
    text = (f"round trip of a cache line between the sender's and the receiver's CPUs {trips.min():.0f} ns at the "
            f"nearest, {trips.median():.0f} ns median; " + (f"learned from the host: {why}" if why else
                                                            "what the rule learned is not recorded"))
    retries = int(pd.to_numeric(df.get("placement_retries"), errors="coerce").fillna(0).sum())
    apart = int((df.get("cpus_apart", pd.Series(dtype=str)).astype(str) == "True").sum())
    if retries:
        text += f"; {plural(retries, 'measured run')} taken while they were apart set aside and measured again"
    if apart:
        text += f"; {plural(apart, 'run')} still apart kept (flagged cpus_apart)"
    return text


def rows(meta: dict, df: pd.DataFrame) -> list[tuple[str, object]]:
    """(setting, value) rows for the configuration table, beside system_fields' kernel/CPU/cores/memory."""
    tools = meta.get("tool_versions") if isinstance(meta.get("tool_versions"), dict) else {}
    sizes = sorted(set(pd.to_numeric(df.get("working_set_bytes", pd.Series(dtype=float)), errors="coerce").dropna()))
    return [
        ("CPU caches", _caches(meta)),
        ("hypervisor", _virtualization(meta)),
        ("hostname", meta.get("hostname")),
        ("perf", meta.get("perf_version")), ("perf note", meta.get("perf_note")),
        ("compiler", meta.get("compiler")),
        *((name(p), tools.get(p) or (NOT_RECORDED if not tools else "not installed")) for p in peers()),
        ("congestion control asked for", _column(df, "congestion")),
        ("congestion control as run", f"sender {_column(df, 'srv_congestion')}; receiver {_column(df, 'cli_congestion')}"),
        ("host default congestion control", meta.get("tcp_congestion_control")),
        ("qdisc", _side(meta, "qdisc")),
        ("receive steering (RPS)", _column(df, "rps").replace("True", "on (each side's CPUs)").replace("False", "off")),
        ("working set per connection", ", ".join(fmt_size(int(s)) for s in sizes) or "not recorded"),
        ("net.core.optmem_max", meta.get("optmem_max")), ("tcp_wmem", meta.get("tcp_wmem")),
        ("tcp_rmem", meta.get("tcp_rmem")), ("veth MTU", meta.get("veth_mtu")),
        ("other programs' CPU use while measuring", _host_load(meta)),
        ("CPU placement", _placement(df, meta)),
        ("git revision", meta.get("git_revision")), ("started", meta.get("started_at")),
        ("finished", meta.get("finished_at")),
    ]


def counted(df: pd.DataFrame, meta: dict) -> list[str]:
    """What perf and the programs counted in this sweep, in words, each only if it has values."""
    out = []
    tp = df[df["mode"] == "throughput"]
    if measured(df, "cycles"):
        out.append("CPU cycles" if meta.get("cycles_source") != "tsc" else
                   "CPU time as TSC reference cycles (the time-stamp counter's ticks while a side ran: there are no hardware counters to count core cycles)")
    if measured(df, "srv_task_clock_ms"):
        out.append("each side's CPU time (task-clock)")
    if measured(df, "context_switches"):
        out.append("context switches")
    for col in ("l1_misses", "llc_misses"):
        if measured(df, col):
            out.append(METRICS[f"{col}_per_byte"][0].replace(" per byte", ""))
    if measured(tp, "srv_cpu_busy"):
        out.append("the pinned CPUs' busy and steal shares")
    return out


def intro_markdown(meta: dict, df: pd.DataFrame, profiles: pd.DataFrame | None = None) -> str:
    """The report's opening: the study, and what this sweep measured (nothing it could not count)."""
    what = counted(df, meta)
    missing = [] if measured(df, "l1_misses") or df.empty else [
        f"cache misses could not be counted: {unmeasured_short(df, meta, 'l1_misses')}"]
    profiled = profiles is not None and len(profiles) > 0
    text = (f"This report measures three ways of sending the same message over TCP: **{name(BASE)}** serialises the "
            f"message's 8 heap-allocated fields into one buffer and calls `send()`; **{name(ONE_COPY)}** hands the "
            f"kernel an `iovec` over the 8 fields with `sendmsg()`; **{name(ZERO_COPY)}** adds `MSG_ZEROCOPY`. The "
            "server is the sender (that is where they differ); the client receives and measures, and how it reads is "
            "part of what is measured (see *How this sweep was measured*). ")
    text += (f"On both sides, over the same window as the byte counts, perf counted: {', '.join(what)}." if what else
             "perf counted nothing in this sweep (see the configuration): the numbers are the programs' own.")
    if missing:
        sentence = "; ".join(missing)
        text += " " + sentence[0].upper() + sentence[1:] + "."
    if profiled:
        text += " Sampled call graphs of extra profiled runs show where each side's CPU goes."
    return text + ("\n\nEvery number below is computed from this sweep's files when the notebook runs; every "
                   "comparison states its 95% interval, every explanation names the evidence it rests on, and "
                   "where the evidence does not decide, the text says *hypothesis* and what would decide it.")

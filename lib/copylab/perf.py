"""`perf stat` around one process: probe what this host can count, build the command, parse the CSV.

Only the machine-readable form (`perf stat -x,`) is parsed; the human table changes between perf
versions. Field order of a `-x,` line (tools/perf/Documentation/perf-stat.txt, "CSV FORMAT"; written by
tools/perf/util/stat-display.c), without -I/-A/-r as we never pass them:

    value, unit, event, run-time, percent-running[, metric-value, metric-unit[, threshold]]

`value` is a number, `<not supported>` (the event cannot be opened here, e.g. hardware events
inside most VMs) or `<not counted>` (opened but never scheduled: run-time 0). Lines whose value is
empty carry an extra metric for the line above; comment lines start with '#'.
"""

from __future__ import annotations

import math
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

from .errors import CopylabError

REQUESTED_EVENTS = ("cycles", "instructions", "L1-dcache-load-misses", "LLC-load-misses", "cache-misses",
                    "context-switches", "cpu-migrations", "task-clock")

# TSC ticks while the task runs: reference cycles where the PMU is absent (Firecracker, many clouds)
TSC_EVENT = "msr/tsc/"

_NOT_SUPPORTED = "<not supported>"
_NOT_COUNTED = "<not counted>"

# hardware events of the requested set: the ones a VM without a virtual PMU cannot count
HARDWARE_EVENTS = ("cycles", "instructions", "L1-dcache-load-misses", "LLC-load-misses", "cache-misses")

# Modifiers perf appends when it had to restrict an event: "cycles:u", "msr/tsc/u" (user space only,
# because kernel.perf_event_paranoid forbids more to a non-root user)
_MODIFIERS = "ukhHGIpPSDW"
_COLON_MODIFIER_RE = re.compile(rf"^(.*?):([{_MODIFIERS}]+)$")
_PMU_EVENT_RE = re.compile(rf"^([A-Za-z0-9_.-]+)/(.+)/([{_MODIFIERS}]*)$")
# core types of hybrid CPUs: the same event is printed once per type and the parts are summed
_HYBRID_PMU_RE = re.compile(r"^(cpu_core|cpu_atom|cpu_lowpower|armv\d+_[a-z0-9_]+)$")

_PROBE_TIMEOUT_S = 10


@dataclass(frozen=True)
class PerfPlan:
    """What `perf stat` can count on this host, decided once per sweep by probe()."""

    perf_path: str | None           # None when perf is not installed or not runnable
    version: str | None
    supported: dict[str, bool] = field(default_factory=dict)  # per requested event, plus msr/tsc/
    events: tuple[str, ...] = ()    # what stat_prefix passes to -e
    cycles_source: str | None = None  # "pmu" | "tsc" | None
    note: str = ""                  # one sentence on what is missing and why; "" when nothing is

    def to_dict(self) -> dict:
        data = asdict(self)
        data["events"] = list(self.events)
        return data

    @classmethod
    def from_dict(cls, data: dict) -> "PerfPlan":
        return cls(perf_path=data["perf_path"], version=data["version"],
                   supported=dict(data["supported"]), events=tuple(data["events"]),
                   cycles_source=data["cycles_source"], note=data["note"])


def split_event(name: str) -> tuple[str, str]:
    """perf's printed event name -> (the name we asked for, modifiers perf added).

    "cycles:u" -> ("cycles", "u"); "msr/tsc/u" -> ("msr/tsc/", "u");
    "cpu_atom/cycles/" -> ("cycles", ""); "sched:sched_switch" stays whole.
    """
    name = name.strip()
    pmu_event = _PMU_EVENT_RE.match(name)
    if pmu_event:
        pmu, inner, modifiers = pmu_event.groups()
        if _HYBRID_PMU_RE.match(pmu):
            inner, inner_modifiers = split_event(inner)
            return inner, modifiers + inner_modifiers
        return f"{pmu}/{inner}/", modifiers
    with_modifier = _COLON_MODIFIER_RE.match(name)
    if with_modifier:
        return with_modifier.group(1), with_modifier.group(2)
    return name, ""


def canonical_event(name: str) -> str:
    """perf's printed event name -> the name we asked for (cpu_core/cycles/ -> cycles)."""
    return split_event(name)[0]


def _counter_lines(text: str):
    """(raw value, canonical event, modifiers perf added) per counter line of `perf stat -x,` output."""
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        fields = line.split(",")
        if len(fields) < 3 or not fields[0].strip():
            continue  # an extra metric line (empty value field) or something that is not a counter
        event, modifiers = split_event(fields[2])
        if event:
            yield fields[0].strip(), event, modifiers


def parse_stat_csv(text: str) -> dict[str, float | None]:
    """`perf stat -x,` output -> canonical event name -> value, None when it has no true value.

    Values are as perf prints them (task-clock in msec). Per-core-type lines of one event (hybrid
    CPUs) are summed: each covers the time the task spent on that core type, so a `<not counted>`
    part means the task never ran there and adds nothing. An event with no counted part is None,
    and so is one with a `<not supported>` part: the task may have run where it could not be
    counted, and a partial sum would pass for the whole.
    """
    values: dict[str, float | None] = {}
    unsupported_part: set[str] = set()
    for raw_value, event, _ in _counter_lines(text):
        if raw_value in (_NOT_SUPPORTED, _NOT_COUNTED):
            values.setdefault(event, None)
            if raw_value == _NOT_SUPPORTED:
                unsupported_part.add(event)
            continue
        try:
            value = float(raw_value)
        except ValueError:
            continue  # not a counter line (perf warnings can land in the -o file)
        check_count(event, value, raw_value)
        previous = values.get(event)
        values[event] = value if previous is None else previous + value
    for event in unsupported_part:
        values[event] = None
    return values


MAX_COUNT = float(2**64)  # perf's counters are u64; task-clock (ms) stays far below too


class ImpossibleCount(CopylabError):
    """perf stat printed a value no counter can hold: negative, not finite, or beyond 2^64."""


def check_count(event: str, value: float, raw: str = "") -> float:
    """value, when event could have counted it; ImpossibleCount naming both otherwise."""
    shown = raw.strip() or repr(value)
    if not math.isfinite(value):
        raise ImpossibleCount(f"{event} = {shown} is impossible (not a finite number)")
    if value < 0:
        raise ImpossibleCount(f"{event} = {shown} is impossible (a count cannot be negative)")
    if value > MAX_COUNT:
        raise ImpossibleCount(f"{event} = {shown} is impossible (more than a 64-bit counter holds)")
    return value


def side_counters(parsed: dict, plan: PerfPlan) -> dict[str, float | None]:
    """One side's counters under the results-contract names; None wherever this host cannot count."""
    if plan.cycles_source == "pmu":
        cycles = parsed.get("cycles")
    elif plan.cycles_source == "tsc":
        cycles = parsed.get(TSC_EVENT)
    else:
        cycles = None
    return {
        "cycles": cycles,
        "instructions": parsed.get("instructions"),
        "l1_misses": parsed.get("L1-dcache-load-misses"),
        "llc_misses": parsed.get("LLC-load-misses"),
        "cache_misses": parsed.get("cache-misses"),
        "context_switches": parsed.get("context-switches"),
        "cpu_migrations": parsed.get("cpu-migrations"),
        "task_clock_ms": parsed.get("task-clock"),
    }


def stat_prefix(plan: PerfPlan, output_file: Path, delay_ms: int = 0) -> list[str]:
    """argv to put in front of a command so perf counts it into output_file; [] without perf.

    delay_ms > 0 leaves the first milliseconds (start-up, warm-up) out of the counts. perf prints
    "Events disabled"/"Events enabled" on its stderr then, which is the workload's stderr too.
    """
    if not plan.perf_path or not plan.events:
        return []
    if isinstance(delay_ms, bool) or not isinstance(delay_ms, int) or delay_ms < 0:
        raise ValueError(f"delay_ms must be a non-negative integer, got {delay_ms!r}")
    argv = [plan.perf_path, "stat", "-x,", "-o", str(output_file), "-e", ",".join(plan.events)]
    if delay_ms:
        argv += ["-D", str(delay_ms)]
    return argv + ["--"]


def probe(perf: str = "perf", host=None) -> PerfPlan:
    """Find perf and the requested events it can open here (or on host, a hosts.SshHost). Never
    raises for a missing perf or unsupported events: the answer is then in the plan (perf_path
    None, supported False, note).

    An event perf can count only in user space (non-root with kernel.perf_event_paranoid >= 2) is
    unsupported: the copies and the TCP stack run in the kernel, so such counts would mislead."""
    all_events = list(REQUESTED_EVENTS) + [TSC_EVENT]
    nothing = {e: False for e in all_events}
    perf_path = shutil.which(perf) if host is None else host.which(perf)
    if perf_path is None:
        where = "" if host is None else f" on host {host.name}"
        return PerfPlan(None, None, nothing, (), None,
                        f"perf is not installed{where} ({perf!r} not found on PATH): every counter column stays empty.")
    version, complaint = perf_version(perf_path, host)
    if version is None:
        return PerfPlan(None, None, nothing, (), None,
                        f"perf at {perf_path} does not run ({complaint}): every counter column stays empty.")

    supported, complaint = _probe_events(perf_path, all_events, host)
    if supported["cycles"]:
        cycles_source = "pmu"
    elif supported[TSC_EVENT]:
        cycles_source = "tsc"
    else:
        cycles_source = None
    events = [e for e in REQUESTED_EVENTS if supported[e]]
    if cycles_source == "tsc":
        events.append(TSC_EVENT)
    return PerfPlan(perf_path, version, supported, tuple(events), cycles_source,
                    _describe_gaps(supported, cycles_source, complaint))


def common_plan(plans: dict[str, PerfPlan]) -> PerfPlan:
    """One plan for programs on several hosts (topology ssh): the events every host can count,
    perf found on each host's PATH. A host without a usable perf leaves every counter empty, and
    the note names it."""
    broken = {name: plan for name, plan in plans.items() if plan.perf_path is None}
    every = [e for plan in plans.values() for e in plan.supported]
    if broken:
        name, plan = next(iter(broken.items()))
        return PerfPlan(None, None, {e: False for e in every}, (), None, plan.note)
    supported = {e: all(plan.supported.get(e, False) for plan in plans.values()) for e in dict.fromkeys(every)}
    sources = {plan.cycles_source for plan in plans.values()}
    cycles_source = "pmu" if sources == {"pmu"} else "tsc" if supported.get(TSC_EVENT) else None
    events = [e for e in REQUESTED_EVENTS if supported.get(e)]
    if cycles_source == "tsc":
        events.append(TSC_EVENT)
    versions = list(dict.fromkeys(plan.version for plan in plans.values()))
    by_note: dict[str, list[str]] = {}
    for name, plan in plans.items():
        if plan.note:
            by_note.setdefault(plan.note, []).append(name)
    note = " ".join(f"{' and '.join(names)}: {text}" for text, names in by_note.items())
    return PerfPlan("perf", " / ".join(v for v in versions if v), supported, tuple(events), cycles_source, note)


def perf_version(perf: str = "perf", host=None) -> tuple[str | None, str]:
    """("6.1.192", "") from `perf --version`, or (None, why it does not run)."""
    perf_path = shutil.which(perf) if host is None else perf
    if perf_path is None:
        return None, f"{perf!r} not found on PATH"
    proc = _run([perf_path, "--version"], host)
    if proc is None:
        return None, "perf --version did not run"
    # Debian's /usr/bin/perf can be a wrapper that fails when no perf matches the running kernel
    words = proc.stdout.split()
    if proc.returncode != 0 or words[:2] != ["perf", "version"] or len(words) < 3:
        return None, first_line(proc.stderr or proc.stdout) or f"exit status {proc.returncode}"
    return words[2], ""


def _run(argv: list[str], host=None) -> subprocess.CompletedProcess | None:
    """argv run here (or on host) with text output; None when it cannot run or hangs."""
    if host is not None:
        proc = host.run(argv, timeout=_PROBE_TIMEOUT_S)
        return subprocess.CompletedProcess(argv, proc.returncode, proc.stdout.decode(errors="replace"),
                                           proc.stderr.decode(errors="replace"))
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=_PROBE_TIMEOUT_S, env=c_locale_env())
    except (OSError, subprocess.TimeoutExpired):
        return None


def _describe_gaps(supported: dict[str, bool], cycles_source: str | None, complaint: str) -> str:
    """One sentence on what the counters will lack here and why ("" when nothing is missing)."""
    missing = [e for e in REQUESTED_EVENTS if not supported[e]]
    if not missing:
        return ""
    why = f" ({complaint})" if complaint else ""
    if len(missing) == len(REQUESTED_EVENTS) and cycles_source is None:
        return (f"perf cannot count any requested event here{why}; run as root or lower "
                "kernel.perf_event_paranoid: every counter column stays empty.")
    if all(e in missing for e in HARDWARE_EVENTS):
        cause = "No hardware performance counters here (hardware events read <not supported>, as inside most VMs)"
    else:
        cause = f"Not supported here: {', '.join(missing)}"
    if cycles_source == "tsc":
        cycles = "cycles come from msr/tsc/ (TSC reference cycles while the task runs)"
    elif cycles_source is None:
        cycles = "cycles cannot be measured"
    else:
        cycles = "cycles come from the PMU"
    empty = [e for e in missing if e != "cycles"]
    return f"{cause}{why}: {cycles}; empty: {', '.join(empty)}." if empty else f"{cause}{why}: {cycles}."


def first_line(text: str | None) -> str:
    """The first non-blank line, stripped ("" when there is none): a tool's one-line complaint."""
    lines = [ln.strip() for ln in (text or "").splitlines() if ln.strip()]
    return lines[0] if lines else ""


def c_locale_env() -> dict[str, str]:
    """The environment with LC_ALL=C, for running tools whose output we parse.

    perf formats values with printf: a decimal-comma locale would split them across CSV fields."""
    return {**os.environ, "LC_ALL": "C"}


def _count_true(perf_path: str, events: list[str], host=None) -> tuple[str | None, str]:
    """`perf stat -x,` of `true` with events: (CSV text, "") or (None, perf's complaint)."""
    if host is not None:  # `true` prints nothing: perf's CSV is all there is on stdout
        proc = _run([perf_path, "stat", "-x,", "-o", "/dev/stdout", "-e", ",".join(events), "--", "true"], host)
        if proc.returncode != 0:
            return None, first_line(proc.stderr) or f"perf stat exited with status {proc.returncode}"
        return proc.stdout, ""
    with tempfile.TemporaryDirectory(prefix="copylab-perf-") as tmp:
        out = Path(tmp) / "stat.csv"
        proc = _run([perf_path, "stat", "-x,", "-o", str(out), "-e", ",".join(events), "--", "true"])
        if proc is None:
            return None, "perf stat did not run"
        if proc.returncode != 0 or not out.exists():
            return None, first_line(proc.stderr) or f"perf stat exited with status {proc.returncode}"
        return out.read_text(), ""


def _opened(text: str, event: str) -> tuple[bool, bool]:
    """(did perf open the event, did it restrict it to user space).

    Opened = every part (one per hybrid core type) has a value or <not counted>."""
    lines = [(raw, mods) for raw, e, mods in _counter_lines(text) if e == event]
    opened = bool(lines) and all(raw != _NOT_SUPPORTED for raw, _ in lines)
    return opened, any("u" in mods and "k" not in mods for _, mods in lines)


def _probe_events(perf_path: str, events: list[str], host=None) -> tuple[dict[str, bool], str]:
    """Which events perf can open here, and perf's complaint if it refused the whole list.

    One run for all events; one run per event only if perf rejects the list (an event this perf
    does not know, e.g. msr/tsc/ on arm64, makes it refuse the whole -e)."""
    text, complaint = _count_true(perf_path, events, host)
    if text is not None:
        opened = {e: _opened(text, e) for e in events}
    else:
        opened = {}
        for event in events:
            one_text, _ = _count_true(perf_path, [event], host)
            opened[event] = _opened(one_text, event) if one_text is not None else (False, False)
    # An event perf could only count in user space is useless here: the copies and the TCP stack
    # run in the kernel (context-switches:u reads 0). It counts as unsupported, and the note says why.
    user_only = [e for e, (_, user) in opened.items() if user]
    if user_only:
        level = paranoid(host)
        complaint = (f"kernel.perf_event_paranoid={'unknown' if level is None else level} limits this user "
                     "to user-space counts, which miss the kernel's work")
    return {e: ok and not user for e, (ok, user) in opened.items()}, complaint


def paranoid(host=None) -> int | None:
    """kernel.perf_event_paranoid (here or on host), None where it cannot be read."""
    path = "/proc/sys/kernel/perf_event_paranoid"
    try:
        return int((Path(path).read_text() if host is None else host.read_text(path)).strip())
    except (OSError, ValueError):
        return None

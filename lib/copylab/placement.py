"""How far apart the sender's and the receiver's CPUs are while a point is measured, and a point
measured again when they were apart.

On a virtual machine the hypervisor places the guest's vCPUs on physical cores and moves them.
native/cpuprobe bounces one cache line between the two pinned CPUs. Hosts differ: the development
VM answered in 50-60 ns while its vCPUs shared a cache and in 200-370 ns when they did not; another
VM of the same kind of cloud in 62-125 ns and 430-570 ns; bare metal, or a VM whose vCPUs never
share a cache, shows one mode. A throughput run taken in the far mode was 20-45% slower on the
development VM (docs/methodology.md, "Noise").

So the rule is learned from the host's own round trips (`learn`): sorted on a log scale, "apart"
exists only when the probes fall into two clusters, a near one and one at least MODE_RATIO x as far,
separated by an empty stretch wider than the near cluster's own spread; the line between them lies
in that stretch, so no round trip of the near mode is ever above it. A host whose probes show one
mode, however wide, has no line; but a probe far outside every mode seen (`first_sight_ns`: beyond
the near mode's own 10-90% spread above its top, and MODE_RATIO x its median, the tests learn()
puts a second cluster to, with the one probe standing for the cluster) is apart on first sight:
the first apart stretch of a host is caught before the rule has seen a second mode, and the rule
learns that mode from the probes it takes then. A probe that finds the CPUs apart is believed when
the next one agrees (`look`): a lone spike, a probe that waited out the hypervisor, is not a
stretch. The probes come from a short calibration at the start and every probe taken since.

Each point is probed just before its programs start (waiting for the CPUs to come together, a
whole WAIT_S after another, since a run started apart would only be set aside) and just after they
stop; a run with either probe above the line is set aside (its record
kept, never in the statistics) and measured again, at most RETRIES times, while the placement
allowance lasts: the sweep gives placement at most SHARE_OF_SWEEP of its time (waits and runs
measured again), so a host that is apart most of the time costs a bounded share, never a doubled
sweep. Where the host's stretches outlast waiting (FUTILE_WAITS whole waits in a row ended apart:
on the development VM they lasted from a few seconds to over two minutes) no more is spent until a
probe finds the CPUs near; the runs kept meanwhile are measured again after their pass (base or
extra), while the budget lasts (sweep/retake.py). The rule reads a covariate the implementations cannot
influence, the same way for every program, before the run's result is known, so it cannot favour
one; a point still apart after its retries, or once the allowance is spent, keeps its flagged run.
"""

from __future__ import annotations

import math
import os
import re
import select
import subprocess
import time
from dataclasses import asdict, dataclass

import numpy as np

from . import contract
from .errors import CopylabError
from .escape import quoted
from .paths import BUILD_DIR

PROBE = BUILD_DIR / "cpuprobe"
PROBE_MS = 2.0        # one probe: ~30,000 round trips at 60 ns, the median of 256-trip chunks
# Apart means another cache domain (CCD, socket): on x86 hosts its round trip is several times a
# shared cache's (the two VMs above: 5.7x and 6x between the modes' medians), while the levels of
# one domain, and a near mode's own width, stay within 2x (62-125 ns on one VM). 2.5 lies between.
MODE_RATIO = 2.5
MIN_GAP = math.log(math.sqrt(MODE_RATIO))  # the empty stretch: at least 1.58x from near's top to apart's bottom
MIN_PROBES = 24       # fewer probes than this and the rule does not decide: one mode assumed
MIN_MODE = 3          # probes a cluster needs to count as a mode (a lone spike is not one)
NEAR_SHARE = 0.10     # the near cluster holds at least this share (else the host is simply far)
HISTORY = 4000        # the most recent probes the rule learns from
CALIBRATION_PROBES = 40
CALIBRATION_SPACING_S = 0.05  # 40 probes over 2 s: long enough to see a short stretch of each mode
SHARE_OF_SWEEP = 0.25  # placement (waits, runs measured again) costs at most this share of a sweep
WAIT_S = 2.0          # one whole wait for the CPUs to come together (most apart stretches on the
                      # development VM ended within 2 s); a wait before a run goes on for whole waits
WAIT_STEP_S = 0.1
RETRIES = 2           # a run taken apart is measured again at most this often
# whole waits that ended apart, one after another, before the stretch is taken as longer than
# waiting can outlast: as many as one point spent before round six, when each retry had its wait
# (now they come in a row before its run: at most 6 s). Then no more waits or runs measured again
# until a probe finds the CPUs near (the sweep measures the runs kept meanwhile again after its
# base passes: sweep/placing.py, retake)
FUTILE_WAITS = RETRIES + 1


@dataclass(frozen=True)
class Mode:
    """One cluster of round trips (ns)."""

    probes: int
    low: float
    median: float
    high: float

    @classmethod
    def of(cls, values) -> "Mode":
        """The mode of sorted round trips."""
        n = len(values)
        median = (float(values[(n - 1) // 2]) + float(values[n // 2])) / 2
        return cls(n, round(float(values[0]), 1), round(median, 1), round(float(values[-1]), 1))


@dataclass(frozen=True)
class Modes:
    """What the rule learned from a host's round trips: its near mode, its apart mode if it has
    one, and the line between them (None: one mode; then first_sight_ns, beyond which a probe is
    far outside it); why, in words."""

    probes: int
    near: Mode | None
    apart: Mode | None
    line_ns: float | None
    why: str
    # one mode: beyond this a probe is far outside it, apart on first sight (None with a line: above
    # the line is apart; and with too few probes to know the mode)
    first_sight_ns: float | None = None

    def to_dict(self) -> dict:
        return asdict(self)


def learn(round_trips) -> Modes:
    """The modes of a host's round trips (see the module's docstring for the rule)."""
    values = _usable(round_trips)
    n = len(values)
    if n < MIN_PROBES:
        return Modes(n, Mode.of(values) if n else None, None, None,
                     f"{n} probes: too few to tell modes apart (the rule needs {MIN_PROBES}); nothing set aside")
    logs = np.log(values)
    # every split k (near = the k smallest) at once: quantiles of a sorted prefix or suffix are
    # read off by index, so learning stays cheap at every probe
    k = np.arange(max(MIN_MODE, math.ceil(NEAR_SHARE * n)), n - MIN_MODE + 1)
    gap = logs[k] - logs[k - 1]
    spread = _quantile(logs, 0, k, 0.9) - _quantile(logs, 0, k, 0.1)  # the near cluster's own width
    ratio = np.exp(_quantile(logs, k, n - k, 0.5) - _quantile(logs, 0, k, 0.5))  # between their medians
    # the empty stretch is wider than the near cluster itself, and than MIN_GAP: a tight cluster
    # (a few probes within 1%) is not split from a continuum that starts just above it
    found = k[(gap > np.maximum(spread, MIN_GAP)) & (ratio >= MODE_RATIO)]
    if found.size:
        k = int(found[0])
        near, apart = values[:k], values[k:]
        line = math.sqrt(float(values[k - 1]) * float(values[k]))
        return Modes(n, Mode.of(near), Mode.of(apart), round(line, 1),
                     f"two modes: near {near[0]:.0f}-{near[-1]:.0f} ns ({k} probes), apart {apart[0]:.0f}-"
                     f"{apart[-1]:.0f} ns ({n - k}), {Mode.of(apart).median / Mode.of(near).median:.1f}x "
                     f"between their medians; apart above {line:.0f} ns")
    first_sight = first_sight_line(logs)
    body = values[:int(np.searchsorted(values, first_sight, side="right"))]
    outside = n - len(body)
    return Modes(n, Mode.of(body), None, None,
                 f"one mode: {body[0]:.0f}-{body[-1]:.0f} ns over {len(body)} probes (no second cluster "
                 f"{MODE_RATIO:g}x as far behind an empty stretch); a probe beyond {first_sight:.0f} ns, far "
                 f"outside it, is apart on first sight" + (f" ({outside} so far)" if outside else ""),
                 round(first_sight, 1))


def first_sight_line(logs: np.ndarray) -> float:
    """The round trip (ns) beyond which a probe lies far outside a host's one mode (logs: the sorted
    logarithms of its probes): learn()'s tests for a second cluster with the one probe standing for
    the cluster, an empty stretch above the mode's top wider than the mode's own 10-90% spread (and
    than MIN_GAP), at least MODE_RATIO x its median. Its top is its 90th percentile, not its largest
    probe, so earlier lone spikes do not widen it; the mode's statistics are taken once more without
    the probes beyond the first bound. So the factor comes from the host's own probes: 1.6-2.5x over
    a tight or a wide near mode, never a constant of one VM."""
    length = len(logs)  # the mode: the smallest `length` of the sorted logs
    for _ in range(2):
        low, middle, high = (float(_quantile(logs, 0, length, q)) for q in (0.1, 0.5, 0.9))
        bound = max(high + max(high - low, MIN_GAP), middle + math.log(MODE_RATIO))
        length = int(np.searchsorted(logs, bound, side="right"))
    return float(math.exp(bound))


def _usable(round_trips) -> np.ndarray:
    """The round trips that are probes' answers (finite, positive numbers), sorted."""
    seq = round_trips if isinstance(round_trips, list) else list(round_trips)
    if all(type(v) is float for v in seq):  # the history: converted at once (learn() runs at every probe)
        values = np.asarray(seq, dtype=float)
    else:
        values = np.asarray([float(v) for v in seq if isinstance(v, (int, float))], dtype=float)
    values = values[np.isfinite(values) & (values > 0)]
    values.sort()
    return values


def _quantile(sorted_values: np.ndarray, start, length, q: float) -> np.ndarray:
    """The q-quantile (linear interpolation) of sorted_values[start:start + length], for arrays of
    starts and lengths."""
    position = np.asarray(start) + q * (np.asarray(length) - 1)
    low = np.floor(position).astype(int)
    high = np.minimum(low + 1, len(sorted_values) - 1)
    return sorted_values[low] + (sorted_values[high] - sorted_values[low]) * (position - low)


@dataclass
class Placement:
    """What a point's probes saw: the round trips before and after its run (ns), whether either was
    apart; waited_s spent before the run for the CPUs to come together."""

    before_ns: float
    after_ns: float
    apart: bool
    waited_s: float
    line_ns: float | None


class CpuDistance:
    """One cpuprobe per CPU pair, kept running for a group of points (a probe costs PROBE_MS), and
    the rule learned from every round trip seen (history: the sweep's earlier probes). allowance_s:
    the seconds placement may still spend (waits, runs measured again) before runs are kept as
    they come; futile_waits: whole waits in a row that ended apart so far (FUTILE_WAITS)."""

    def __init__(self, history=(), allowance_s: float = math.inf, futile_waits: int = 0, off: str = ""):
        self.history: list[float] = [float(v) for v in history][-HISTORY:]
        # why placement is off for the rest of the run ("": it is on): a probe misbehaved (ProbeMisbehaved)
        self.off = off
        self.allowance_s = allowance_s
        self.spent_s = 0.0
        # waits in a row that ended with the CPUs still apart (a group may start inside a stretch)
        self.futile_waits = futile_waits
        self._modes: Modes | None = None
        self._probes: dict[tuple[int, int], subprocess.Popen] = {}

    def __enter__(self) -> "CpuDistance":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        for proc in self._probes.values():
            stop_probe(proc)
        self._probes.clear()

    @property
    def modes(self) -> Modes:
        if self._modes is None:
            self._modes = learn(self.history)
        return self._modes

    def observe(self, round_trip_ns: float) -> None:
        self.history.append(round_trip_ns)
        del self.history[:-HISTORY]
        self._modes = None

    def probe(self, cpus: tuple[int, int]) -> float:
        """The round trip between cpus now, in ns; the rule learns from it. A probe that cannot run
        (not built, a CPU it cannot use) raises CopylabError: this run is unplaced, the next one tries
        again. One that answers anything but a round trip, or nothing within ANSWER_S, raises
        ProbeMisbehaved and turns placement off for the rest of the run (self.off says why)."""
        if self.off:
            raise ProbeMisbehaved(self.off)
        proc = self._probes.get(cpus)
        if proc is None:
            proc = self._probes[cpus] = start_probe(cpus)
        try:
            value = round_trip_answer(ask_probe(proc, probe_name(cpus), ANSWER_S), probe_name(cpus))
        except ProbeMisbehaved as exc:
            self.off = str(exc)
            proc.kill()  # it may not be listening any more: not waited for
            self.close()  # and no probe of a run whose placement is off is asked again
            raise
        except CopylabError:
            self._probes.pop(cpus, None)
            stop_probe(proc)
            raise
        self.observe(value)
        return value

    def calibrate(self, cpus: tuple[int, int], probes: int = CALIBRATION_PROBES,
                  spacing_s: float = CALIBRATION_SPACING_S) -> Modes:
        """Probes spread over a short while, so the rule has a distribution before the first run."""
        for k in range(probes):
            if k:
                time.sleep(spacing_s)
            self.probe(cpus)
        return self.modes

    @property
    def line_ns(self) -> float | None:
        """The line in force: the one learned between two modes, or with one mode the bound beyond
        which a probe is far outside it (first sight); None while the rule has too few probes."""
        modes = self.modes
        return modes.line_ns if modes.line_ns is not None else modes.first_sight_ns

    def apart(self, round_trip_ns: float) -> bool:
        line = self.line_ns
        return line is not None and round_trip_ns > line

    def look(self, cpus: tuple[int, int]) -> float:
        """The round trip between cpus now, as the rule judges it: a probe that finds them apart is
        believed when the next one (PROBE_MS later) agrees, whose round trip is the answer. An apart
        stretch lasts seconds, so the next probe is apart too; a lone spike (a probe that waited out
        the hypervisor: 1-60 us on the second VM) is not, and sets no run aside, above a learned line
        or far outside the one mode seen (first sight) alike. The rule learns from both probes."""
        value = self.probe(cpus)
        return self.probe(cpus) if self.apart(value) else value

    @property
    def affordable(self) -> bool:
        """May placement still spend time (wait, measure again)? Not in a stretch that outlasted
        FUTILE_WAITS waits: there, waiting and measuring again buy nothing until it ends."""
        return self.spent_s < self.allowance_s and not self.in_long_stretch

    @property
    def in_long_stretch(self) -> bool:
        return self.futile_waits >= FUTILE_WAITS

    def wait_near(self, cpus: tuple[int, int], wait_s: float | None = None) -> tuple[float, float]:
        """Probe until the CPUs are near or placement may spend no more: (the last round trip, seconds
        waited). Each whole wait_s (default WAIT_S) that passes apart counts as a futile wait, and
        FUTILE_WAITS of them in a row end it (a stretch longer than waiting): a run started apart
        would be set aside for certain, so waiting on costs less than measuring it and then waiting."""
        wait_s = WAIT_S if wait_s is None else wait_s
        started = whole = time.monotonic()
        value = self.look(cpus)
        while self.apart(value) and wait_s > 0 and not self.in_long_stretch and \
                self.spent_s + time.monotonic() - started < self.allowance_s:
            time.sleep(WAIT_STEP_S)
            value = self.look(cpus)
            if self.apart(value) and time.monotonic() - whole >= wait_s:  # a whole wait, and still apart
                self.futile_waits += 1
                whole = time.monotonic()
        waited = time.monotonic() - started
        self.spent_s += waited
        return value, waited

    def seen(self, *round_trips: float) -> None:
        """Probes placed() took: a near one ends the stretch (waiting is worth it again)."""
        if any(not self.apart(v) for v in round_trips):
            self.futile_waits = 0


OFF = "not probed: placement off (grid key placement, copylab run --no-placement)"


def probe_cpus(pin_server: str | None, pin_client: str | None, topology: str,
               wanted: bool = True) -> tuple[tuple[int, int] | None, str]:
    """The pair to probe for a point, the first CPU of each side's pinning, or None and why not."""
    if not wanted:
        return None, OFF
    if topology == "ssh":
        return None, "not probed: the sides run on different hosts"
    if pin_server is None or pin_client is None:
        return None, "not probed: the sides are not both pinned"
    server = contract.parse_cpu_list("pin_server", pin_server)[0]
    client = contract.parse_cpu_list("pin_client", pin_client)[0]
    if server == client:
        return None, "not probed: both sides on one CPU"
    return (server, client), ""


def placed(distance: CpuDistance, cpus: tuple[int, int] | None, reason: str, measure) -> list[tuple]:
    """measure() once the CPUs are near, probed again after it: [((row, raw), columns)] of every
    attempt, the last one the run to keep, each row updated with its placement columns. A run taken
    apart is measured again up to RETRIES times while the distance's allowance lasts.
    A probe that fails (cpuprobe not built, a CPU gone) leaves the run unplaced, with the reason.
    The kept run's placement_s is the time all this took beyond that run itself."""
    started = time.monotonic()
    attempts: list[tuple] = []

    def timed():
        begin = time.monotonic()
        result = measure()
        return result, time.monotonic() - begin

    def done(result, columns, run_s):
        columns["placement_s"] = round(max(time.monotonic() - started - run_s, 0.0), 3)
        result[0].update(columns)
        return [*attempts, (result, columns)]

    while True:
        if cpus is None:
            result, run_s = timed()
            return done(result, placement_columns(None, len(attempts), reason), run_s)
        try:
            before, waited = distance.wait_near(cpus) if distance.affordable else (distance.look(cpus), 0.0)
        except CopylabError as exc:
            cpus, reason = None, f"not probed: {exc}"
            continue
        result, run_s = timed()
        try:
            after = distance.look(cpus)
        except CopylabError as exc:
            return done(result, placement_columns(None, len(attempts), f"not probed after the run: {exc}"), run_s)
        distance.seen(before, after)
        where = Placement(before, after, distance.apart(before) or distance.apart(after), waited, distance.line_ns)
        columns = placement_columns(where, len(attempts))
        if not where.apart or result[0].get("status") != "ok" or len(attempts) >= RETRIES \
                or not distance.affordable:
            return done(result, columns, run_s)
        distance.spent_s += run_s  # the run set aside is placement's cost
        result[0].update(columns)
        attempts.append((result, columns))


def placement_columns(where: Placement | None, retries: int, reason: str = "") -> dict:
    """The row's columns for a run's placement (reason: why it was not probed); retries: the runs
    of the point set aside before it."""
    if where is None:
        return {"cpu_round_trip_ns": math.nan, "cpu_round_trip_before_ns": math.nan,
                "cpu_round_trip_after_ns": math.nan, "cpu_apart_line_ns": math.nan, "cpus_apart": "",
                "placement_retries": retries, "placement_wait_s": math.nan, "placement_s": math.nan,
                "placement_note": reason}
    return {"cpu_round_trip_ns": round(max(where.before_ns, where.after_ns), 1),
            "cpu_round_trip_before_ns": round(where.before_ns, 1), "cpu_round_trip_after_ns": round(where.after_ns, 1),
            "cpu_apart_line_ns": math.nan if where.line_ns is None else where.line_ns,
            "cpus_apart": str(where.apart), "placement_retries": retries,
            "placement_wait_s": round(where.waited_s, 3), "placement_s": math.nan, "placement_note": ""}


def round_trips(rows) -> list[float]:
    """Every probe the rows carry (before and after each run), in the order given."""
    out = []
    for row in rows:
        for key in ("cpu_round_trip_before_ns", "cpu_round_trip_after_ns"):
            value = row.get(key)
            if isinstance(value, (int, float)) and math.isfinite(value) and value > 0:
                out.append(float(value))
    return out


# ---------------------------------------------------------------------------------------------
# the probe's answers: what native/cpuprobe says is data from another program, checked at the
# boundary before the rule or a row sees it (type, range, finite), and waited for a bounded time

ANSWER_S = 5.0  # a probe takes PROBE_MS; its process start on a loaded host, far less than this
ANSWER_BYTES = 64  # "%.1f\n" of any round trip fits many times over
# a cache line's round trip between two CPUs: not under a nanosecond (one cycle of any clock), and
# not a second or more (the probe gives up when the other CPU has not answered within 1 s; on a
# loaded host its threads descheduled gave 1.7 ms)
ROUND_TRIP_RANGE_NS = (1.0, 1e9)
OFF_FOR_RUN = "placement off for the rest of this run"  # ends every ProbeMisbehaved message (a row's note)
_DECIMAL = re.compile(r"[0-9]+(\.[0-9]*)?([eE][-+]?[0-9]+)?")


class ProbeMisbehaved(CopylabError):
    """The probe answered something that is not a round trip, or nothing in time: placement is off
    for the rest of the run (a sweep: for every later point too), never a hang, never a row the
    report refuses."""


def probe_name(cpus: tuple[int, int]) -> str:
    return f"cpuprobe {cpus[0]} {cpus[1]}"


def start_probe(cpus: tuple[int, int]) -> subprocess.Popen:
    if not PROBE.is_file():
        raise CopylabError(f"{PROBE}: not built; run `make native`")
    # unbuffered bytes: its answers are read with select() and a deadline, never a blocking readline
    return subprocess.Popen([str(PROBE), str(cpus[0]), str(cpus[1]), "--ms", str(PROBE_MS)], bufsize=0,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def stop_probe(proc: subprocess.Popen) -> str:
    """End a probe (end of its input, then SIGKILL if it lingers); what it wrote on stderr. Once."""
    if proc.stdin and not proc.stdin.closed:
        try:
            proc.stdin.close()
        except OSError:
            pass
    try:
        proc.wait(timeout=2)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    error = b""
    if proc.stderr and not proc.stderr.closed:
        ready, _, _ = select.select([proc.stderr], [], [], 0)
        error = proc.stderr.read(4096) if ready else b""
        proc.stderr.close()
    return error.decode("utf-8", "replace").strip()


def ask_probe(proc: subprocess.Popen, name: str, timeout_s: float) -> str:
    """One request, one answer line within timeout_s (at most ANSWER_BYTES): the line's text. A
    probe that exited is a CopylabError with what it said on stderr; silence, a line without end, or
    a line nobody asked for is ProbeMisbehaved."""
    if select.select([proc.stdout], [], [], 0)[0]:  # output waiting before the request: unasked
        early = os.read(proc.stdout.fileno(), ANSWER_BYTES)
        if early:
            raise misbehaved(name, "answered before it was asked", early)
    try:
        proc.stdin.write(b"probe\n")
    except OSError:
        raise CopylabError(f"{name}: {stop_probe(proc) or 'exited before it was asked'}") from None
    data, deadline = b"", time.monotonic() + timeout_s
    while b"\n" not in data:
        ready, _, _ = select.select([proc.stdout], [], [], max(deadline - time.monotonic(), 0.0))
        if not ready:
            raise misbehaved(name, f"gave no answer within {timeout_s:g} s", data)
        chunk = os.read(proc.stdout.fileno(), ANSWER_BYTES)
        if not chunk:
            raise CopylabError(f"{name}: {stop_probe(proc) or 'no answer'}")
        data += chunk
        if len(data) > ANSWER_BYTES and b"\n" not in data[:ANSWER_BYTES]:
            raise misbehaved(name, f"answered a line longer than {ANSWER_BYTES} bytes", data)
    line, rest = data.split(b"\n", 1)
    if rest:
        raise misbehaved(name, "answered more than one line to one request", data)
    return line.decode("utf-8", "replace")


def misbehaved(name: str, what: str, said: bytes) -> ProbeMisbehaved:
    told = f" ({quoted(said.decode('utf-8', 'replace'))})" if said else ""
    return ProbeMisbehaved(f"{name} {what}{told}; {OFF_FOR_RUN}")


def round_trip_answer(text: str, name: str) -> float:
    """A probe's answer as a round trip in ns, or ProbeMisbehaved naming the program and what it
    said: a decimal number (no sign, no nan, no inf) within ROUND_TRIP_RANGE_NS."""
    low, high = ROUND_TRIP_RANGE_NS
    text = text.strip()
    value = float(text) if _DECIMAL.fullmatch(text) else math.nan
    if not math.isfinite(value) or not low <= value <= high:
        raise ProbeMisbehaved(f"{name} answered {quoted(text)}, not a round trip (a number of nanoseconds from "
                              f"{low:g} to {high:g}); {OFF_FOR_RUN}")
    return value

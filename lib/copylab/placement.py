"""How far apart the sender's and the receiver's CPUs are while a point is measured, and a point
measured again when they were apart.

On a virtual machine the hypervisor places the guest's vCPUs on physical cores and moves them
every few seconds. native/cpuprobe bounces one cache line between the two pinned CPUs: on the
development VM it comes back in 50-60 ns while the vCPUs share a cache and in 200-370 ns when they
do not; a throughput run taken in the second state is 20-45% slower whatever it sends, and those
runs were most of the run-to-run spread (docs/methodology.md, "Noise"). So each point is probed
just before its programs start (waiting, up to WAIT_S, for the CPUs to come together) and just
after they stop; a run with either probe above APART_FACTOR x the nearest round trip seen is set
aside (its record kept, never in the statistics) and measured again, at most RETRIES times. The
rule reads a covariate the implementations cannot influence, the same way for every program, so
it cannot favour one; a point still apart after its retries keeps its flagged run.
"""

from __future__ import annotations

import math
import subprocess
import time
from dataclasses import dataclass

from . import contract
from .errors import CopylabError
from .paths import BUILD_DIR

PROBE = BUILD_DIR / "cpuprobe"
PROBE_MS = 2.0        # one probe: ~30,000 round trips at 60 ns, the median of 256-trip chunks
APART_FACTOR = 1.5    # near levels differ by < 1.2x on one host; apart is 3-7x
WAIT_S = 2.0          # before a run: how long to wait for the CPUs to come together (most apart
                      # stretches on the development VM ended within 2 s)
WAIT_STEP_S = 0.1
RETRIES = 2           # a run taken apart is measured again at most this often


@dataclass
class Placement:
    """What a point's probes saw: the larger of the round trips before and after its run (ns), and
    whether that was apart; waited_s spent before the run for the CPUs to come together."""

    round_trip_ns: float
    apart: bool
    waited_s: float


class CpuDistance:
    """One cpuprobe per CPU pair, kept running for a group of points (a probe costs PROBE_MS)."""

    def __init__(self, nearest_ns: float | None = None):
        self.nearest_ns = nearest_ns if nearest_ns and nearest_ns > 0 else math.inf
        self._probes: dict[tuple[int, int], subprocess.Popen] = {}

    def __enter__(self) -> "CpuDistance":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        for proc in self._probes.values():
            if proc.stdin:
                proc.stdin.close()
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self._probes.clear()

    def probe(self, cpus: tuple[int, int]) -> float:
        """The round trip between cpus now, in ns; the nearest seen is updated."""
        proc = self._probes.get(cpus)
        if proc is None:
            if not PROBE.is_file():
                raise CopylabError(f"{PROBE}: not built; run `make native`")
            proc = subprocess.Popen([str(PROBE), str(cpus[0]), str(cpus[1]), "--ms", str(PROBE_MS)],
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            self._probes[cpus] = proc
        answer = ""
        try:
            proc.stdin.write("probe\n")
            proc.stdin.flush()
            answer = proc.stdout.readline()
            value = float(answer)
        except (OSError, ValueError):
            self._probes.pop(cpus, None)
            try:  # a probe that closed its output is exiting: its stderr says why once it has exited
                proc.wait(timeout=2 if not answer else 0)
            except subprocess.TimeoutExpired:
                proc.kill()  # one that answered nonsense is not asked again
                proc.wait()
            error = proc.stderr.read().strip()
            raise CopylabError(f"cpuprobe {cpus[0]} {cpus[1]}: {error or 'no answer'}") from None
        self.nearest_ns = min(self.nearest_ns, value)
        return value

    def apart(self, round_trip_ns: float) -> bool:
        return round_trip_ns > APART_FACTOR * self.nearest_ns

    def wait_near(self, cpus: tuple[int, int], wait_s: float | None = None) -> tuple[float, float]:
        """Probe until the CPUs are near or wait_s (default WAIT_S) has passed: (the last round trip,
        seconds waited)."""
        wait_s = WAIT_S if wait_s is None else wait_s
        started = time.monotonic()
        value = self.probe(cpus)
        while self.apart(value) and time.monotonic() - started < wait_s:
            time.sleep(WAIT_STEP_S)
            value = self.probe(cpus)
        return value, time.monotonic() - started


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
    apart is measured again up to RETRIES times.
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
            before, waited = distance.wait_near(cpus)
        except CopylabError as exc:
            cpus, reason = None, f"not probed: {exc}"
            continue
        result, run_s = timed()
        try:
            after = distance.probe(cpus)
        except CopylabError as exc:
            return done(result, placement_columns(None, len(attempts), f"not probed after the run: {exc}"), run_s)
        where = Placement(max(before, after), distance.apart(before) or distance.apart(after), waited)
        columns = placement_columns(where, len(attempts))
        if not where.apart or result[0].get("status") != "ok" or len(attempts) >= RETRIES:
            return done(result, columns, run_s)
        result[0].update(columns)
        attempts.append((result, columns))


def placement_columns(where: Placement | None, retries: int, reason: str = "") -> dict:
    """The row's columns for a run's placement (reason: why it was not probed); retries: the runs
    of the point set aside before it."""
    if where is None:
        return {"cpu_round_trip_ns": math.nan, "cpus_apart": "", "placement_retries": retries,
                "placement_wait_s": math.nan, "placement_s": math.nan, "placement_note": reason}
    return {"cpu_round_trip_ns": round(where.round_trip_ns, 1), "cpus_apart": str(where.apart),
            "placement_retries": retries, "placement_wait_s": round(where.waited_s, 3), "placement_s": math.nan,
            "placement_note": ""}

"""The sweep driver: a YAML grid -> papermill executions -> records -> results.csv + meta.json.

Layout of output/<name>/ (resumable, as flent's batches are; the host's details live once in
meta.json, and every row carries the settings of its own run):
  build.ipynb                  the executed build notebook (compiler, flags)
  runs/<point_id>.json         one record per point: the row, both programs' raw output, its spec and
                               its interval series
  runs/group-<s>-<k>.ipynb     the executed experiment notebook of a group of points (each record
                               names its notebook)
  results.csv, profiles.csv    rebuilt from the records after every group of points (the measured
                               runs; the profiled runs)
  meta.json                    host, kernel, perf, network settings, the grid, sessions (topology
                               ssh: each host's machine, NIC, build and settings under "hosts"), the
                               budget's extra passes, where the time went
  sweep.log                    one line per point, per extra pass, and the time per kind of point
A point is finished when its record is in runs/ with status ok; a re-run skips those (unless
--force) and re-measures failed or missing ones. Records are renamed into place only when complete.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from .. import hostmeta, limits, signals, userfiles
from ..contract import check_cpus_available
from ..errors import CopylabError
from ..escape import shell_path
from ..fsutil import atomic_write_json, describe_os_error, shown
from ..params import Grid, load_grid
from ..paths import NOTEBOOKS_DIR, OUTPUT_DIR
from ..perf import PerfPlan
from ..point import kill_registered
from ..pointspec import PointSpec
from ..topology import Topology, check_congestion_usable, choose_topology, open_topology
from . import budget as budgeting
from . import estimate as est
from . import folder
from . import retake as retaking
from . import rounds
from .accounting import Accounting, measured_seconds
from .groups import FIRST_GROUP_SECONDS, GROUP_SECONDS, run_group, take_group
from .hostload import HostLoad
from .kernel import WarmKernel, check_kernel_folders
from .meta import SweepMeta
from .clock import SweepClock
from .placing import SweepPlacement
from .prepare import build_here, check_builds, plan_queue, probe, recorded_specs
from .progress import Progress
from .records import failed_row, load_rows, now, record_path, write_results


@dataclass
class SweepSummary:
    out_dir: Path
    total: int
    measured: int
    skipped: int
    failed: int
    wall_s: float
    point_seconds: float  # sum of warm-up + duration over the points measured now
    placement_s: float = 0.0  # waiting for the vCPUs to come together, runs set aside (placement.py)

    @property
    def overhead(self) -> float | None:
        return self.wall_s / self.point_seconds if self.point_seconds else None

    @property
    def overhead_without_placement(self) -> float | None:
        return (self.wall_s - self.placement_s) / self.point_seconds if self.point_seconds else None


def run_sweep(params_path: str | Path, out_dir: str | Path | None = None, force: bool = False,
              restart: bool = False, allow_large: bool = False, progress: bool = True,
              say=print, mixed_builds: bool = False, grid: Grid | None = None) -> SweepSummary:
    """One session of the sweep of params_path (grid: that file already loaded, so that a large
    grid is not parsed twice)."""
    grid = grid or load_grid(params_path)
    usable = os.sched_getaffinity(0)
    for key in ("pin_server", "pin_client"):
        if grid.topology != "ssh":  # on other hosts, their own CPUs
            check_cpus_available(key, getattr(grid, key), usable)
    topology = choose_topology(grid.topology)
    check_congestion_usable(grid.congestion, topology)
    estimate = est.estimate(grid)
    est.check(estimate, allow_large)
    if grid.topology != "ssh":  # another host's limits are its own
        limits.check_grid(grid, f"grid {grid.name}")
    check_kernel_folders()  # before the results folder exists: a failure here leaves nothing half made
    # absolute: papermill changes the working folder while a notebook runs
    out = (Path(out_dir) if out_dir else OUTPUT_DIR / grid.name).resolve()
    folder.prepare(out)
    with folder.exclusive(out):
        folder.claim(out, grid, restart, say)
        folder.ensure_runs(out)
        say(f"grid {grid.name}: {estimate.describe()}")
        unused = est.unused_budget(grid)  # it was ignored without a word
        if unused:
            say(f"WARNING: {unused}")
        sweep = Sweep(grid, topology, out, force, progress, say)
        sweep.mixed_builds = mixed_builds
        return sweep.run()


class Sweep:
    """One session of a sweep into one folder (the caller holds its lock)."""

    def __init__(self, grid: Grid, topology: str, out: Path, force: bool, progress: bool, say):
        self.grid, self.topology, self.out, self.say = grid, topology, out, say
        self.asked = grid  # the grid as written; self.grid with its auto rounds made a number (rounds.py)
        self.runs, self.pending, self.work = out / "runs", out / ".pending", out / ".work"
        self.specs = {spec.point_id(): spec for spec in grid.points(topology)}
        self.rows: dict[str, dict] = {}
        self.force, self.progress = force, progress
        self.kernel = WarmKernel(cwd=NOTEBOOKS_DIR, log_path=out / "kernel.log")
        self.measured = self.failed = self.groups = 0
        self.point_seconds = 0.0
        self.accounting = Accounting()
        self.host_load = HostLoad()  # other programs' CPU share while groups measure
        self.attempts: dict[str, int] = {}
        self.meta: SweepMeta | None = None
        self.bar = None
        self.remote: Topology | None = None  # topology ssh: the hosts, connected before anything else
        self.mixed_builds = False  # keep finished points of another native build (--mixed-builds)
        self.skipped = 0  # points an earlier session finished
        self.recorded_rounds: dict | None = None  # a resumed sweep's rounds, as its meta.json recorded them
        self.last_row: dict | None = None  # the row measured last in this session (placing: a stretch going on)
        self.missing_peers: dict[str, str] = {}  # peer -> why this host cannot run it
        self.plan: PerfPlan | None = None  # what perf can count here (perf.probe)
        self.summary: SweepSummary | None = None  # set however the session ends
        self.clock = SweepClock(grid.budget_min)  # the time against budget_min (clock.py)
        self.placing: SweepPlacement | None = None  # the vCPUs' placement: calibration, allowance (placing.py)
        self.error = ""  # what ended the session when it failed on the file system (meta.json's session says it)

    # -- the session ------------------------------------------------------------------------------

    def run(self) -> SweepSummary:
        # the budget bounds the whole sweep: a resumed one counts its earlier sessions' time
        self.clock = SweepClock(self.grid.budget_min, 0.0 if self.force else earlier_wall(self.out))
        if not self.force:
            rounds.settle(self)  # a resumed sweep's points are those of its recorded rounds
        started = time.monotonic()
        status = "failed"
        stack = contextlib.ExitStack()
        try:
            if not self.force and nothing_left(self):  # a resume with nothing to do builds and probes nothing
                self.say(f"sweep {self.grid.name}: all {len(self.specs)} points already measured -> {self.out}")
                self.skipped = len(self.specs)
            else:
                session(self, stack, started)
            status = "finished"
        except KeyboardInterrupt:
            status = "interrupted"
            raise
        except OSError as exc:  # disk full, a folder gone read-only: say where, once
            self.error = describe_os_error(exc)  # and meta.json's session says it (failed)
            raise CopylabError(f"{self.out}: {self.error}") from None
        finally:
            with signals.held():
                try:
                    clean_up(self, status, time.monotonic() - started)
                except OSError as exc:  # the same full disk, met again while closing the books
                    raise CopylabError(f"{self.out}: {describe_os_error(exc)}") from None
                finally:
                    stack.close()
        return self.summary

    # -- measuring --------------------------------------------------------------------------------

    def _start_bar(self) -> None:
        # the same count as the sweep's first line: every point, the finished ones included
        self.bar = Progress(total=len(self.specs), done=self.skipped, enabled=self.progress, stream=sys.stderr,
                            say=self.say)

    def log(self, text: str) -> None:
        with open(self.out / "sweep.log", "a") as log:
            log.write(f"{now()} {text}\n")
        self.say(text)

    def measure(self, queue: list[str]) -> None:
        first = self.remote
        while queue:
            scope = contextlib.nullcontext(first) if first else open_topology(self.topology, self.grid.ssh)
            first = None
            with scope as topo:
                for warning in topo.warnings:
                    self.say(f"WARNING: {warning}")
                if "tcp_wmem" not in self.meta.data:  # the sysctls and link as the server's namespace sees them
                    self.meta.update(**hostmeta.net_meta(topo.server_if, topo.server_host))
                if "client_net" not in self.meta.data and topo.client_if:  # and the client's (qdisc, congestion)
                    self.meta.update(client_net=hostmeta.net_meta(topo.client_if, topo.client_host))
                while queue:
                    group = take_group(self.specs, queue, FIRST_GROUP_SECONDS if not self.groups else GROUP_SECONDS)
                    alive = run_group(self, group, topo, queue)
                    if self.groups == 1 and queue:
                        self.say_pace(queue)
                    if not alive:
                        # the namespaces are gone: open a fresh pair for the rest; a host
                        # that cannot be reached again stops the sweep with one line
                        break

    def say_pace(self, queue: list[str]) -> None:
        specs = [self.specs[p] for p in queue]
        self.log(self.clock.pace_line(self.measured, specs, self.accounting))
        self.meta.session(pace=round(self.clock.pace(self.accounting), 3),
                          queued_need_s=round(self.clock.need(specs, self.accounting), 1))

    def record_failure(self, spec: PointSpec, kind: str, error: str) -> None:
        row = failed_row(spec, kind, error)
        atomic_write_json(record_path(self.runs, spec.point_id()), {"row": row, "raw": {}, "notebook": None})
        self.point_done(spec, row)

    def point_done(self, spec: PointSpec, row: dict) -> None:
        pid = spec.point_id()
        retake = self.placing is not None and pid in self.placing.retaking
        row = retaking.retaken(self, pid, row) if retake else row
        self.rows[pid] = row
        self.last_row = row
        if not retake:  # a run measured again is placement's cost, not a point more, nor the harness's pace
            self.measured += 1
            self.point_seconds += measured_seconds(spec, row)
            self.clock.point(spec)
        self.accounting.point(spec, row, retake=retake)
        ok = row.get("status") == "ok"
        self.failed += not ok
        with open(self.out / "sweep.log", "a") as log:
            log.write(f"{now()} {pid} {row.get('status')} throughput_gbps={row.get('throughput_gbps')} "
                      f"latency_us={row.get('latency_us')} {row.get('error') or ''}".rstrip() + "\n")
        self.bar.point(spec, ok)


def clean_up(sweep: Sweep, status: str, wall: float) -> None:
    """The end of a session, however it comes: stop what runs, remove the debris, rebuild results.csv,
    and close meta.json's books on every path: a full disk met here too (results.csv or sweep.log
    cannot be written) still closes them, as failed with the error, then is raised."""
    kill_registered(sweep.work)
    sweep.kernel.stop()
    if sweep.bar is not None:
        sweep.bar.close()
    for debris in (sweep.pending, sweep.work):
        shutil.rmtree(debris, ignore_errors=True)
    sweep.summary = SweepSummary(sweep.out, len(sweep.specs), sweep.measured, sweep.skipped,
                                 sweep.failed, wall, sweep.point_seconds, sweep.accounting.placement_all)
    try:
        if folder.still_there(sweep.out, sweep.runs):
            write_results(sweep.out, sweep.runs, sweep.rows)
        if sweep.measured and sweep.out.is_dir():
            with open(sweep.out / "sweep.log", "a") as log:
                log.writelines(f"{now()} {line}\n" for line in sweep.accounting.lines())
            busy = sweep.host_load.warning()
            if busy:
                sweep.log(f"WARNING: {busy}")
    except OSError as exc:
        status, sweep.error = "failed", sweep.error or describe_os_error(exc)
        raise
    finally:
        if sweep.meta is not None and sweep.out.is_dir():
            overhead, without = sweep.summary.overhead, sweep.summary.overhead_without_placement
            sweep.meta.close(status, measured=sweep.measured, failed=sweep.failed, wall_s=round(wall, 2),
                             point_seconds=sweep.point_seconds, overhead=round(overhead, 3) if overhead else None,
                             overhead_without_placement=round(without, 3) if without else None,
                             time=sweep.accounting.summary(), host_load=sweep.host_load.summary(),
                             **({"error": sweep.error} if sweep.error else {}))


def session(sweep: Sweep, stack: contextlib.ExitStack, started: float) -> None:
    """One session of a sweep: build, plan, probe and calibrate, then measure: the base passes, the
    budget's extra passes, the profiled runs."""
    if sweep.topology == "ssh":
        sweep.say(f"connecting to {sweep.grid.server_host} and {sweep.grid.client_host}, building native/ there")
        sweep.remote = stack.enter_context(open_topology("ssh", sweep.grid.ssh))
    build_here(sweep)  # first: a peer's check may need what the build makes (a peer's preload shim)
    queue = plan_queue(sweep)
    userfiles.copy_declaration(sweep.grid.ai_declaration, sweep.out)  # the report never opens the path
    probe(sweep, len(queue))
    sweep.placing = SweepPlacement(sweep)
    sweep.placing.calibrate()
    queue = rounds.resolve(sweep, queue)  # how a throughput pass spends its seconds here
    sweep.accounting.start(time.monotonic() - started)
    sweep._start_bar()
    profiled = [pid for pid in queue if sweep.specs[pid].profile]
    sweep.clock.reserve_s = budgeting.pass_seconds([sweep.specs[p] for p in profiled])
    sweep.measure([pid for pid in queue if not sweep.specs[pid].profile])
    retaking.retake(sweep)  # the runs kept while the CPUs were apart, now that the stretches have passed
    budgeting.spend(sweep)
    sweep.clock.reserve_s = 0.0
    sweep.measure(profiled)


def earlier_wall(out: Path) -> float:
    """The wall time of the earlier sessions of the sweep in out (0 for a new one)."""
    sessions = folder.previous_meta(out).get("sessions")
    walls = [s.get("wall_s") for s in sessions if isinstance(s, dict)] if isinstance(sessions, list) else []
    return float(sum(w for w in walls if isinstance(w, (int, float)) and w > 0))


def nothing_left(sweep: Sweep) -> bool:
    """Is every point of the grid (and of the earlier sessions' extra passes) measured, with nothing
    for the budget to add (no comparison too wide, or no time left)?"""
    specs = dict(sweep.specs)
    for spec in budgeting.extra_specs_from(recorded_specs(sweep.runs), sweep.grid, sweep.topology):
        specs.setdefault(spec.point_id(), spec)
    rows = load_rows(sweep.runs, specs)
    if len(rows) < len(specs) or any(row.get("status") != "ok" for row in rows.values()):
        return False
    check_builds(sweep.out, rows, sweep.mixed_builds, sweep.say)  # another build's points are refused as ever
    sweep.rows, sweep.specs = rows, specs
    if not budgeting.applies(sweep.grid) or sweep.clock.left() <= 0:
        return True
    return not budgeting.wide_comparisons(rows, sweep.grid)


def describe(summary: SweepSummary, next_step: bool = True) -> str:
    """What the sweep did, in short lines (an 80-column terminal), then where the results are and,
    unless a report follows at once, the commands that come next."""
    lines = [f"sweep finished: {summary.total} points in {summary.wall_s:.0f} s ({summary.measured} measured, "
             f"{summary.skipped} already done, {summary.failed} failed)"]
    if summary.overhead:
        lines.append(f"overhead: {summary.overhead:.2f}x the measured seconds")
        if summary.placement_s >= 1:
            lines[-1] += (f" ({summary.overhead_without_placement:.2f}x without {summary.placement_s:.0f} s "
                          "of vCPU placement)")
    folder = shown(summary.out_dir)
    lines.append(f"results: {folder}/results.csv")
    if next_step:  # one command a line: a long folder name still leaves each within reach of 80 columns
        # each a command to paste: the folder one shell word (a space, a quote, a leading dash)
        lines += [f"next: copylab report {shell_path(folder)}", f"  or: make lab RESULTS={shell_path(folder)}"]
    return "\n".join(lines)

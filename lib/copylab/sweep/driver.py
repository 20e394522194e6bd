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
import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from .. import buildinfo, hostmeta, limits, signals, userfiles
from .. import perf as perfmod
from ..contract import PEERS, check_cpus_available
from ..errors import CopylabError, ErrorKind, MeasurementError
from ..experiment import probe_topology, spec_params
from ..fsutil import atomic_write_json, describe_os_error
from ..params import Grid, load_grid
from ..paths import NATIVE_DIR, NOTEBOOKS_DIR, OUTPUT_DIR
from ..point import PointSpec, kill_registered, remove_stale_workdirs
from ..runners import runner_for
from ..topology import Topology, check_congestion_usable, choose_topology, clean_leftovers, open_topology
from . import budget as budgeting
from .accounting import Accounting, measured_seconds
from . import estimate as est
from . import folder
from .kernel import Outcome, WarmKernel, execute
from .meta import SweepMeta
from .records import failed_row, load_rows, now, read_row, record_path, write_results

GROUP_POINTS = 48          # points per notebook execution (papermill's start costs ~0.5 s each time)
GROUP_SECONDS = 60.0       # and at most this much measuring per execution (so a failure costs little)
POINT_GRACE_S = 45.0       # beyond warm-up + duration: start, connection set-up, drain, perf, stop
KERNEL_START_GRACE_S = 60.0  # the first point of an execution also waits for the notebook's imports
MAX_ATTEMPTS = 2           # a point that its notebook never reached is tried again once per session


@dataclass
class SweepSummary:
    out_dir: Path
    total: int
    measured: int
    skipped: int
    failed: int
    wall_s: float
    point_seconds: float  # sum of warm-up + duration over the points measured now

    @property
    def overhead(self) -> float | None:
        return self.wall_s / self.point_seconds if self.point_seconds else None


def run_sweep(params_path: str | Path, out_dir: str | Path | None = None, force: bool = False,
              restart: bool = False, allow_large: bool = False, progress: bool = True,
              say=print, mixed_builds: bool = False) -> SweepSummary:
    grid = load_grid(params_path)
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
    # absolute: papermill changes the working folder while a notebook runs
    out = (Path(out_dir) if out_dir else OUTPUT_DIR / grid.name).resolve()
    folder.prepare(out)
    with folder.exclusive(out):
        folder.claim(out, grid, restart, say)
        folder.ensure_runs(out)
        say(f"grid {grid.name}: {estimate.describe()}")
        sweep = Sweep(grid, topology, out, force, progress, say)
        sweep.mixed_builds = mixed_builds
        return sweep.run()


class Sweep:
    """One session of a sweep into one folder (the caller holds its lock)."""

    def __init__(self, grid: Grid, topology: str, out: Path, force: bool, progress: bool, say):
        self.grid, self.topology, self.out, self.say = grid, topology, out, say
        self.runs, self.pending, self.work = out / "runs", out / ".pending", out / ".work"
        self.specs = {spec.point_id(): spec for spec in grid.points(topology)}
        self.rows: dict[str, dict] = {}
        self.force, self.progress = force, progress
        self.kernel = WarmKernel(cwd=NOTEBOOKS_DIR, log_path=out / "kernel.log")
        self.measured = self.failed = self.groups = 0
        self.point_seconds = 0.0
        self.accounting = Accounting()
        self.attempts: dict[str, int] = {}
        self.meta: SweepMeta | None = None
        self.bar = None
        self.remote: Topology | None = None  # topology ssh: the hosts, connected before anything else
        self.mixed_builds = False  # keep finished points of another native build (--mixed-builds)

    # -- the session ------------------------------------------------------------------------------

    def run(self) -> SweepSummary:
        started = time.monotonic()
        status = "failed"
        stack = contextlib.ExitStack()
        try:
            if self.topology == "ssh":
                self.say(f"connecting to {self.grid.server_host} and {self.grid.client_host}, building native/ there")
                self.remote = stack.enter_context(open_topology("ssh", self.grid.ssh))
            queue = self._plan()
            userfiles.copy_declaration(self.grid.ai_declaration, self.out)  # the report never opens the path
            self._build_and_probe(len(queue))
            self.accounting.start(time.monotonic() - started)
            self._start_bar()
            self._measure([pid for pid in queue if not self.specs[pid].profile])
            self._spend_budget(started, [pid for pid in queue if self.specs[pid].profile])
            self._measure([pid for pid in queue if self.specs[pid].profile])
            status = "finished"
        except KeyboardInterrupt:
            status = "interrupted"
            raise
        except OSError as exc:  # disk full, a folder gone read-only: say where, once
            raise CopylabError(f"{self.out}: {describe_os_error(exc)}") from None
        finally:
            with signals.held():
                try:
                    self._clean_up(status, time.monotonic() - started)
                except OSError as exc:  # the same full disk, met again while closing the books
                    raise CopylabError(f"{self.out}: {describe_os_error(exc)}") from None
                finally:
                    stack.close()
        return self.summary

    def _plan(self) -> list[str]:
        for stale in (self.pending, self.work, self.runs / ".pending"):
            shutil.rmtree(stale, ignore_errors=True)  # debris of an interrupted run
        self.work.mkdir()
        for ns in clean_leftovers()["removed_namespaces"]:
            self.say(f"removed namespace {ns} left by an earlier crashed run")
        remove_stale_workdirs()
        self._drop_missing_peers()
        for spec in budgeting.extra_specs_from(_recorded_specs(self.runs), self.grid, self.topology):
            self.specs.setdefault(spec.point_id(), spec)  # an earlier session's extra passes
        self.rows = load_rows(self.runs, self.specs)
        done = set() if self.force else {pid for pid, row in self.rows.items() if row.get("status") == "ok"}
        check_builds(self.out, {pid: self.rows[pid] for pid in done}, self.mixed_builds, self.say)
        self.skipped = len(done)
        queue = [pid for pid in self.specs if pid not in done]
        self.say(f"sweep {self.grid.name}: {len(self.specs)} points, {len(done)} already measured, "
                 f"{len(queue)} to measure -> {self.out}")
        return queue

    def _drop_missing_peers(self) -> None:
        """A peer tool this host lacks: say so once and measure the rest (A1/A2/A3 need no peer)."""
        self.missing_peers = {}
        hosts = list(self.remote.hosts().values()) if self.remote else [None]
        for impl in sorted({s.impl for s in self.specs.values()} & set(PEERS)):
            try:
                for host in hosts:
                    runner_for(impl).check_installed(host)
            except CopylabError as exc:
                self.missing_peers[impl] = str(exc)
                self.say(f"WARNING: {exc}; its points are left out of this sweep")
        if self.missing_peers:
            self.specs = {pid: s for pid, s in self.specs.items() if s.impl not in self.missing_peers}

    def _build_and_probe(self, to_measure: int) -> None:
        if self.remote is not None:
            self._probe_hosts(to_measure)
            return
        self.say("building native programs (notebooks/build.ipynb)")
        tmp = self.out / ".build.tmp.ipynb"
        outcome = execute(NOTEBOOKS_DIR / "build.ipynb", tmp,
                          {"native_dir": str(NATIVE_DIR), "extra_cflags": "", "sanitize": False},
                          self.kernel, timeout_s=600, cwd=NOTEBOOKS_DIR)
        if tmp.exists():
            os.replace(tmp, self.out / "build.ipynb")
        if not outcome.ok:
            raise CopylabError(f"building native/ failed ({outcome.error}); see {self.out / 'build.ipynb'}")
        self._start_meta(perfmod.probe(), to_measure)

    def _probe_hosts(self, to_measure: int) -> None:
        """topology ssh: perf on each host, and what each host contributes to meta.json."""
        topo = self.remote
        plan = probe_topology(topo)
        hosts = {}
        for side, host in topo.hosts().items():
            hosts[side] = {**topo.details[side], **hostmeta.remote_host_meta(host),
                           **hostmeta.net_meta(topo.details[side]["interface"], host)}
        self._start_meta(plan, to_measure, hosts=hosts, **hostmeta.net_meta(topo.server_if, topo.server_host))

    def _start_meta(self, plan, to_measure: int, **extra) -> None:
        self.plan = plan
        if self.plan.note:
            self.say(f"perf: {self.plan.note}")
        atomic_write_json(self.out / "perf_plan.json", self.plan.to_dict())
        previous = folder.previous_meta(self.out)
        self.meta = SweepMeta(self.out / "meta.json", previous, {
            **hostmeta.host_meta(), "perf_events": self.plan.supported, "cycles_source": self.plan.cycles_source,
            "perf_note": self.plan.note, "params_file": self.grid.source, "params": self.grid.to_dict(),
            "grid_fingerprint": folder.fingerprint(self.grid), "topology": self.topology,
            "peers_missing": self.missing_peers, **extra})
        self.meta.open_session(to_measure=to_measure)

    # -- measuring --------------------------------------------------------------------------------

    def _start_bar(self) -> None:
        from tqdm.auto import tqdm

        self.bar = tqdm(total=len(self.specs), initial=self.skipped, unit="point", disable=not self.progress,
                        file=sys.stderr, dynamic_ncols=True,
                        bar_format="{l_bar}{bar}| {n_fmt}/{total_fmt} points [{elapsed}<{remaining}]{postfix}")

    def _spend_budget(self, started: float, profiled: list[str]) -> None:
        """Extra passes where a comparison is too wide to decide, while they fit in budget_min
        (sweep/budget.py); each pass and the reason for stopping go to sweep.log and meta.json."""
        if not budgeting.applies(self.grid):
            return
        deadline = started + self.grid.budget_min * 60
        reserve = budgeting.pass_seconds([self.specs[pid] for pid in profiled]) + \
            len(profiled) * est.PROFILE_S
        rep = max([s.rep for s in self.specs.values() if not s.profile] + [self.grid.repetitions - 1]) + 1
        record = {"budget_min": self.grid.budget_min, "margin": self.grid.equivalence_margin,
                  "target_half_width": round(budgeting.target_half_width(self.grid.equivalence_margin), 4),
                  "allocation": "by interval width only (sweep/budget.py)", "passes": []}
        while True:
            left = deadline - time.monotonic() - reserve
            planned = budgeting.plan_pass(self.rows, self.grid, self.topology, rep, left, self.grid.seed)
            if planned is None:
                wide = budgeting.wide_comparisons(self.rows, self.grid)
                record["stopped"] = (f"budget spent: {len(wide)} comparison(s) still wider than the target, "
                                     f"{max(left, 0):.0f} s left" if wide else "every comparison is narrow enough to decide")
                break
            for spec in planned.specs:
                self.specs[spec.point_id()] = spec
            self.bar.total += len(planned.specs)
            record["passes"].append(planned.to_dict())
            self._log(f"budget: pass {rep}, {len(planned.specs)} points (about {planned.estimated_s:.0f} s) for "
                      + ", ".join(f"{w['impl']}/{w['base']} {w['msg_size']} B (half-width {w['half_width']})"
                                  for w in planned.why))
            self.meta.update(budget=record)
            self._measure([s.point_id() for s in planned.specs])
            rep += 1
        self._log(f"budget: stopped: {record['stopped']}")
        self.meta.update(budget=record)

    def _log(self, text: str) -> None:
        with open(self.out / "sweep.log", "a") as log:
            log.write(f"{now()} {text}\n")
        self.say(text)

    def _measure(self, queue: list[str]) -> None:
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
                    group = self._take_group(queue)
                    if not self._run_group(group, topo, queue):
                        # the namespaces are gone: open a fresh pair for the rest; a host
                        # that cannot be reached again stops the sweep with one line
                        break

    def _take_group(self, queue: list[str]) -> list[PointSpec]:
        """The next points for one notebook execution, from the front of the queue."""
        group: list[PointSpec] = []
        seconds = 0.0
        while queue and len(group) < GROUP_POINTS:
            spec = self.specs[queue[0]]
            length = spec.warmup_s + spec.duration_s
            if group and seconds + length > GROUP_SECONDS:
                break
            group.append(spec)
            seconds += length
            queue.pop(0)
        return group

    def _run_group(self, group: list[PointSpec], topo: Topology, queue: list[str]) -> bool:
        """Measure a group in one notebook execution. Points it did not reach go back to the front of
        the queue. Returns False when the topology must be re-created."""
        self.groups += 1
        session = len(self.meta.data["sessions"])
        name = f"group-s{session}-{self.groups:04d}"
        notebook_tmp = self.pending / f"{name}.ipynb"
        self.pending.mkdir(exist_ok=True)
        watch = _GroupWatch(self, group)
        params = {"points": [spec_params(s) for s in group], "topology": topo.kind,
                  "topology_params": topo.to_params(), "perf_plan": self.plan.to_dict(),
                  "record_dir": str(self.runs), "work_dir": str(self.work), "profile_dir": str(self.out / "profiles"),
                  "notebook": f"runs/{name}.ipynb"}
        budget = sum(_point_limit(s) for s in group) + KERNEL_START_GRACE_S
        outcome = execute(NOTEBOOKS_DIR / "experiment.ipynb", notebook_tmp, params, self.kernel,
                          timeout_s=budget, cwd=NOTEBOOKS_DIR, watch=watch)
        if notebook_tmp.exists() and self.runs.is_dir():
            os.replace(notebook_tmp, self.runs / f"{name}.ipynb")
        if folder.still_there(self.out, self.runs):
            # between groups, while nothing is measured: rebuilding it takes CPU the programs would miss
            write_results(self.out, self.runs, self.rows)
        if outcome.kind == _FOLDER_LOST:
            raise CopylabError(f"{self.out}: the output folder (or its runs/) was removed during the sweep; "
                               "stopped without measuring further")
        kill_registered(self.work)  # whatever a failed or abandoned point left running
        missing = [s for s in group if s.point_id() not in watch.done]
        if missing and not outcome.ok:
            # the point in progress takes the blame; the ones after it were never started
            self._record_failure(missing[0], outcome.kind, outcome.error)
            missing = missing[1:]
        lost = any(self.rows[s.point_id()].get("error_kind") in (ErrorKind.NAMESPACE_LOST, ErrorKind.HOST_LOST)
                   for s in group if s.point_id() in watch.done) or not _alive(topo)
        for spec in reversed(missing):
            pid = spec.point_id()
            self.attempts[pid] = self.attempts.get(pid, 0) + 1
            if self.attempts[pid] >= MAX_ATTEMPTS and not lost:
                self._record_failure(spec, ErrorKind.NOTEBOOK, "its notebook ended without measuring it, twice")
            else:
                queue.insert(0, pid)
        return not lost and outcome.kind != ErrorKind.KERNEL_DIED

    def _record_failure(self, spec: PointSpec, kind: str, error: str) -> None:
        row = failed_row(spec, kind, error)
        atomic_write_json(record_path(self.runs, spec.point_id()), {"row": row, "raw": {}, "notebook": None})
        self.point_done(spec, row)

    def point_done(self, spec: PointSpec, row: dict) -> None:
        pid = spec.point_id()
        self.rows[pid] = row
        self.measured += 1
        self.point_seconds += measured_seconds(spec, row)
        self.accounting.point(spec, row)
        ok = row.get("status") == "ok"
        self.failed += not ok
        with open(self.out / "sweep.log", "a") as log:
            log.write(f"{now()} {pid} {row.get('status')} throughput_gbps={row.get('throughput_gbps')} "
                      f"latency_us={row.get('latency_us')} {row.get('error') or ''}".rstrip() + "\n")
        self.bar.set_postfix_str(f"{pid}{'' if ok else ' FAILED'}, {self.failed} failed", refresh=False)
        self.bar.update(1)

    # -- the end, however it comes ------------------------------------------------------------------

    def _clean_up(self, status: str, wall: float) -> None:
        kill_registered(self.work)
        self.kernel.stop()
        if self.bar is not None:
            self.bar.close()
        for debris in (self.pending, self.work):
            shutil.rmtree(debris, ignore_errors=True)
        if folder.still_there(self.out, self.runs):
            write_results(self.out, self.runs, self.rows)
        self.summary = SweepSummary(self.out, len(self.specs), self.measured, getattr(self, "skipped", 0),
                                    self.failed, wall, self.point_seconds)
        if self.measured and self.out.is_dir():
            with open(self.out / "sweep.log", "a") as log:
                log.writelines(f"{now()} {line}\n" for line in self.accounting.lines())
        if self.meta is not None and self.out.is_dir():
            overhead = self.summary.overhead
            self.meta.close(status, measured=self.measured, failed=self.failed, wall_s=round(wall, 2),
                            point_seconds=self.point_seconds, overhead=round(overhead, 3) if overhead else None,
                            time=self.accounting.summary())


_FOLDER_LOST = "folder_lost"


class _GroupWatch:
    """Called by kernel.execute every 0.2 s: picks up each point's record as it lands, updates the
    progress, and stops the execution when a point overruns its deadline or the folder vanishes."""

    def __init__(self, sweep: Sweep, group: list[PointSpec]):
        self.sweep, self.group = sweep, group
        self.before = {s.point_id(): _stat(record_path(sweep.runs, s.point_id())) for s in group}
        self.done: set[str] = set()
        self.last_progress = time.monotonic()

    def __call__(self) -> Outcome | None:
        if not folder.still_there(self.sweep.out, self.sweep.runs):
            return Outcome(_FOLDER_LOST, "the output folder was removed")
        for spec in self.group:
            pid = spec.point_id()
            path = record_path(self.sweep.runs, pid)
            if pid in self.done or _stat(path) == self.before[pid]:
                continue
            row = read_row(path)
            if row is None:
                continue
            self.done.add(pid)
            self.last_progress = time.monotonic()
            self.sweep.point_done(spec, row)
        current = next((s for s in self.group if s.point_id() not in self.done), None)
        if current is None:
            return None
        limit = _point_limit(current) + (KERNEL_START_GRACE_S if not self.done else 0.0)
        if time.monotonic() - self.last_progress > limit:
            return Outcome(ErrorKind.TIMEOUT, f"the point did not finish within {limit:.0f} s")
        return None


def _recorded_specs(runs: Path) -> list[dict]:
    """The spec of every record in runs/ (unreadable ones are skipped: the sweep re-measures them)."""
    import json

    specs = []
    for path in runs.glob("*.json"):
        with contextlib.suppress(OSError, ValueError, KeyError, TypeError, UnicodeDecodeError):
            spec = json.loads(path.read_text())["raw"]["spec"]
            if isinstance(spec, dict):
                specs.append(spec)
    return specs


def _alive(topo: Topology) -> bool:
    """Are the topology's namespaces, or its ssh connections, still there (lost between points)?"""
    try:
        topo.check_alive()
    except MeasurementError:
        return False
    return True


def _point_limit(spec: PointSpec) -> float:
    return spec.warmup_s + spec.duration_s + POINT_GRACE_S + 0.02 * spec.threads


def _stat(path: Path):
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_ino, st.st_mtime_ns, st.st_size)


def check_builds(out: Path, finished: dict[str, dict], mixed: bool, say) -> None:
    """Finished points of another build of native/ (or of an unknown one: records from before
    build ids) are not silently joined by this build's: refused in one line, or kept and said so
    with --mixed-builds."""
    current = buildinfo.build_id()
    other = {}
    for pid, row in finished.items():
        build = str(row.get("build_id") or "")
        if build != current:
            other.setdefault(build or "unknown", []).append(pid)
    if not other:
        return
    count = sum(len(pids) for pids in other.values())
    builds = ", ".join(sorted(other))
    if mixed:
        say(f"WARNING: {count} finished point(s) in {out} were measured by another build of native/ "
            f"({builds}; this one is {current}); kept (--mixed-builds): their rows say which build by build_id")
        return
    raise CopylabError(f"{out}: {count} finished point(s) were measured by another build of native/ ({builds}; "
                       f"now {current}: the sources, the compiler or its flags changed); re-measure them with "
                       "--force, keep them with --mixed-builds, or sweep into another --out")


def describe(summary: SweepSummary) -> str:
    parts = [f"{summary.measured} measured", f"{summary.skipped} already done", f"{summary.failed} failed"]
    text = f"sweep finished: {summary.total} points ({', '.join(parts)}) in {summary.wall_s:.0f} s"
    if summary.overhead:
        text += f"; overhead {summary.overhead:.2f}x the measured seconds"
    return text + f"\nresults: {summary.out_dir / 'results.csv'}"

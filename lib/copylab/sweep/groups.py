"""Groups of points: each group measured in one execution of notebooks/experiment.ipynb, its records
picked up as they land, a point that overruns its deadline stopped, points the execution did not
reach put back at the front of the queue (tried again once per session)."""

from __future__ import annotations

import time
from pathlib import Path

from ..errors import CopylabError, ErrorKind, MeasurementError
from ..experiment import spec_params
from ..fsutil import install_written
from ..paths import NOTEBOOKS_DIR
from ..point import kill_registered
from ..pointspec import PointSpec
from ..topology import Topology
from . import folder
from .budget import pass_seconds
from .kernel import Outcome, execute, whole_notebook
from .records import now, read_row, record_path, write_results

# points per notebook execution: each costs 0.3-0.5 s beyond its points (papermill and the kernel's
# round trips); a failed execution loses no finished point, only results.csv is rebuilt less often
GROUP_POINTS = 120
GROUP_SECONDS = 120.0      # and at most this much measuring per execution
FIRST_GROUP_SECONDS = 15.0  # the first one short: its pace tells early how long this host needs
POINT_GRACE_S = 45.0       # beyond warm-up + duration: start, connection set-up, drain, perf, stop
KERNEL_START_GRACE_S = 60.0  # the first point of an execution also waits for the notebook's imports
MAX_ATTEMPTS = 2           # a point that its notebook never reached is tried again once per session


def take_group(specs: dict[str, PointSpec], queue: list[str], limit_s: float = GROUP_SECONDS) -> list[PointSpec]:
    """The next points for one notebook execution, from the front of the queue, at most limit_s of
    measuring."""
    group: list[PointSpec] = []
    seconds = 0.0
    while queue and len(group) < GROUP_POINTS:
        spec = specs[queue[0]]
        length = spec.warmup_s + spec.duration_s
        if group and seconds + length > limit_s:
            break
        group.append(spec)
        seconds += length
        queue.pop(0)
    return group

def run_group(sweep, group: list[PointSpec], topo: Topology, queue: list[str]) -> bool:
    """Measure a group in one notebook execution. Points it did not reach go back to the front of
    the queue. Returns False when the topology must be re-created."""
    sweep.groups += 1
    session = len(sweep.meta.data["sessions"])
    name = f"group-s{session}-{sweep.groups:04d}"
    notebook_tmp = sweep.pending / f"{name}.ipynb"
    sweep.pending.mkdir(exist_ok=True)
    watch = _GroupWatch(sweep, group)
    params = {"points": [spec_params(s) for s in group], "topology": topo.kind,
              "topology_params": topo.to_params(), "perf_plan": sweep.plan.to_dict(),
              "record_dir": str(sweep.runs), "work_dir": str(sweep.work), "profile_dir": str(sweep.out / "profiles"),
              "notebook": f"runs/{name}.ipynb", "placement": sweep.grid.placement,
              "placement_state": sweep.placing.group_params(pass_seconds(group), sweep.clock.elapsed(),
                                                            sweep.clock.behind(group + [sweep.specs[p] for p in queue],
                                                                               sweep.accounting),
                                                            profiled=all(s.profile for s in group))}
    budget = sum(_point_limit(s) for s in group) + KERNEL_START_GRACE_S
    metered = topo.kind != "ssh"  # other programs' CPU share is this host's: where the programs run
    if metered:
        sweep.host_load.begin()
    outcome = execute(NOTEBOOKS_DIR / "experiment.ipynb", notebook_tmp, params, sweep.kernel,
                      timeout_s=budget, cwd=NOTEBOOKS_DIR, watch=watch)
    share = sweep.host_load.end() if metered else None
    if notebook_tmp.exists() and sweep.runs.is_dir() and \
            not install_written(notebook_tmp, sweep.runs / f"{name}.ipynb", whole_notebook):
        # cut off mid-JSON (a full disk): not kept, as after a kill; the points keep their records
        sweep.say(f"WARNING: runs/{name}.ipynb was cut off while papermill wrote it ({outcome.error or 'no error said'}); "
                  "not kept: the points it measured keep their records")
    if folder.still_there(sweep.out, sweep.runs):
        sweep.placing.learned(watch.done)
        # between groups, while nothing is measured: rebuilding it takes CPU the programs would miss
        write_results(sweep.out, sweep.runs, sweep.rows)
        if share is not None:
            with open(sweep.out / "sweep.log", "a") as log:
                set_aside = sum(int(sweep.rows[p].get("placement_retries") or 0) for p in watch.done
                                if p in sweep.rows)
                log.write(f"{now()} {name}: {len(watch.done)} points, other programs used {100 * share:.1f}% "
                          f"of the CPU time, {set_aside} runs set aside (CPUs apart)\n")
    if outcome.kind == _FOLDER_LOST:
        raise CopylabError(f"{sweep.out}: the output folder (or its runs/) was removed during the sweep; "
                           "stopped without measuring further")
    kill_registered(sweep.work)  # whatever a failed or abandoned point left running
    missing = [s for s in group if s.point_id() not in watch.done]
    if missing and not outcome.ok:
        # the point in progress takes the blame; the ones after it were never started
        sweep.record_failure(missing[0], outcome.kind, outcome.error)
        missing = missing[1:]
    lost = any(sweep.rows[s.point_id()].get("error_kind") in (ErrorKind.NAMESPACE_LOST, ErrorKind.HOST_LOST)
               for s in group if s.point_id() in watch.done) or not _alive(topo)
    for spec in reversed(missing):
        pid = spec.point_id()
        sweep.attempts[pid] = sweep.attempts.get(pid, 0) + 1
        if sweep.attempts[pid] >= MAX_ATTEMPTS and not lost:
            sweep.record_failure(spec, ErrorKind.NOTEBOOK, "its notebook ended without measuring it, twice")
        else:
            queue.insert(0, pid)
    return not lost and outcome.kind != ErrorKind.KERNEL_DIED


_FOLDER_LOST = "folder_lost"


class _GroupWatch:
    """Called by kernel.execute every 0.2 s: picks up each point's record as it lands, updates the
    progress, and stops the execution when a point overruns its deadline or the folder vanishes."""

    def __init__(self, sweep, group: list[PointSpec]):
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

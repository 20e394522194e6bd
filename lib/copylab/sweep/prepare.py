"""Before the first point: the queue (what earlier sessions finished is kept), the peers this host
lacks, the native build, perf's plan and meta.json's session."""

from __future__ import annotations

import contextlib
import shutil
from pathlib import Path

from .. import buildinfo, cachelevels, hostmeta, memcpyref, userfiles
from .. import perf as perfmod
from ..contract import PEERS, WORKING_SET_DEFAULT
from ..errors import CopylabError
from ..experiment import PENDING, probe_topology
from ..fsutil import atomic_write_json, install_written, listing
from ..paths import NATIVE_DIR, NOTEBOOKS_DIR
from ..point import kill_registered, remove_stale_workdirs
from ..runners import runner_for
from ..topology import clean_leftovers
from . import budget as budgeting
from . import folder
from .kernel import execute, whole_notebook
from .meta import SweepMeta
from .records import load_rows, read_row


def plan_queue(sweep) -> list[str]:
    """Clear an interrupted run's debris, load what earlier sessions measured, and return the
    point ids still to measure (finished ones skipped unless --force)."""
    # an earlier session's programs still running (a kill -9 where setpriv was missing): by the process
    # groups its points registered, before their registry goes with the debris
    stopped = set(kill_registered(sweep.work)) if sweep.work.is_dir() else set()
    for stale in (sweep.pending, sweep.work, sweep.runs / ".pending"):
        shutil.rmtree(stale, ignore_errors=True)  # debris of an interrupted run
    for copy in (sweep.runs / "apart").glob(f"*{PENDING}"):  # a run kept apart, its re-take never done
        copy.unlink(missing_ok=True)
    repair_records(sweep)
    sweep.work.mkdir()
    found = clean_leftovers()
    for ns in found["removed_namespaces"]:
        sweep.say(f"removed namespace {ns} left by an earlier crashed run")
    stopped |= set(found["killed_processes"])
    if stopped:
        sweep.say(f"stopped {len(stopped)} program(s) an earlier crashed run left running (process groups "
                  f"{', '.join(map(str, sorted(stopped)))})")
    remove_stale_workdirs()
    drop_missing_peers(sweep)
    for spec in budgeting.extra_specs_from(recorded_specs(sweep.runs), sweep.grid, sweep.topology):
        sweep.specs.setdefault(spec.point_id(), spec)  # an earlier session's extra passes
    sweep.rows = load_rows(sweep.runs, sweep.specs)
    done = set() if sweep.force else {pid for pid, row in sweep.rows.items() if row.get("status") == "ok"}
    check_builds(sweep.out, {pid: sweep.rows[pid] for pid in done}, sweep.mixed_builds, sweep.say)
    sweep.skipped = len(done)
    queue = [pid for pid in sweep.specs if pid not in done]
    sweep.say(f"sweep {sweep.grid.name}: {len(sweep.specs)} points, {len(done)} already measured, "
             f"{len(queue)} to measure -> {sweep.out}")
    return queue

def repair_records(sweep) -> None:
    """What an earlier session left cut off mid-write (a full disk, a crash) is never kept: a point's
    record is removed and the point measured again, a run set aside or a group's notebook removed
    (the points it measured keep their records, as after a kill); said in one line."""
    damaged = [path for path in sorted(sweep.runs.glob("*.json")) if read_row(path) is None]
    damaged += [path for path in sorted((sweep.runs / "apart").glob("*.json")) if read_row(path) is None]
    damaged += [path for path in [*sorted(sweep.runs.glob("*.ipynb")), sweep.out / "build.ipynb"]
                if path.is_file() and not whole_notebook(path)]
    if not damaged:
        return
    for path in damaged:
        path.unlink()
    names = [str(path.relative_to(sweep.out)) for path in damaged]
    measured_again = sum(path.suffix == ".json" and path.parent == sweep.runs for path in damaged)
    sweep.say(f"removed {len(names)} file(s) an earlier session left cut off mid-write ({listing(names)}); "
              f"{measured_again} point(s) among them measured again")


def drop_missing_peers(sweep) -> None:
    """A peer tool this host lacks: say so once and measure the rest (A1/A2/A3 need no peer)."""
    sweep.missing_peers = {}
    hosts = list(sweep.remote.hosts().values()) if sweep.remote else [None]
    for impl in sorted({s.impl for s in sweep.specs.values()} & set(PEERS)):
        try:
            for host in hosts:
                runner_for(impl).check_installed(host)
        except CopylabError as exc:
            sweep.missing_peers[impl] = str(exc)
            sweep.say(f"WARNING: {exc}; its points are left out of this sweep")
    if sweep.missing_peers:
        sweep.specs = {pid: s for pid, s in sweep.specs.items() if s.impl not in sweep.missing_peers}

def build_here(sweep) -> None:
    """Build native/ through notebooks/build.ipynb before anything is checked against it (a peer's
    shim is built with the programs); topology ssh: each host built it on connecting."""
    if sweep.remote is not None:
        return
    sweep.say("building native programs (notebooks/build.ipynb)")
    tmp = sweep.out / ".build.tmp.ipynb"
    outcome = execute(NOTEBOOKS_DIR / "build.ipynb", tmp,
                      {"native_dir": str(NATIVE_DIR), "extra_cflags": "", "sanitize": False},
                      sweep.kernel, timeout_s=600, cwd=NOTEBOOKS_DIR)
    if tmp.exists():
        install_written(tmp, sweep.out / "build.ipynb", whole_notebook)  # a cut-off one is not kept
    if not outcome.ok:
        raise CopylabError(f"building native/ failed ({outcome.error}); see {sweep.out / 'build.ipynb'}")


def probe(sweep, to_measure: int) -> None:
    """What perf can count on each side, and meta.json's session opened; this host's copy limit."""
    if sweep.remote is not None:
        _probe_hosts(sweep, to_measure)
    else:
        _start_meta(sweep, perfmod.probe(), to_measure)
    sweep.meta.update(memcpy=copy_limit(sweep))


def copy_limit(sweep) -> dict:
    """meta.json memcpy (memcpyref.py): once per sweep folder (a resume keeps the first session's), on the
    sender's CPU, for the largest message and the working set Part E answers from."""
    earlier = sweep.meta.previous.get("memcpy")
    if isinstance(earlier, dict) and earlier:
        return earlier
    if sweep.remote is not None:
        return {"note": "the sender runs on another host: its copy limit is not measured from here"}
    grid = sweep.asked
    cpu = grid.pin_server.split(",")[0].split("-")[0] if isinstance(grid.pin_server, str) else None
    working_set = cachelevels.nearest(dict(enumerate(grid.working_set)), WORKING_SET_DEFAULT)
    cpu = int(cpu) if cpu is not None and cpu.isdigit() else None
    sweep.say("measuring this host's memcpy cost per byte (the cost model's reference, about a second)")
    found = memcpyref.measure(max(grid.msg_sizes), grid.working_set[working_set], cpu)
    levels = cache_level_sets(grid)
    if levels and "note" not in found:
        sweep.say(f"timing the copy alone at each of the {len(levels[1])} cache levels (Q2, about "
                  f"{len(levels[1])} s)")
        found["levels"] = memcpyref.measure_levels(*levels, cpu)
    return found


def cache_level_sets(grid) -> tuple[int, dict[str, int]] | None:
    """(message size, {level name: bytes}) of the working sets the grid places at cache levels: its cache
    part's, else its own when it varies them by level (params/cache.yaml); None with fewer than two."""
    if grid.cache is not None:
        size, pairs = min(grid.cache.msg_sizes), zip(grid.cache.levels, grid.cache.working_set)
    else:
        size, pairs = min(grid.msg_sizes), zip(grid.working_set_levels, grid.working_set)
    named = {level: nbytes for level, nbytes in pairs if level}
    return (size, named) if len(named) >= 2 else None


def _probe_hosts(sweep, to_measure: int) -> None:
    """topology ssh: perf on each host, and what each host contributes to meta.json."""
    topo = sweep.remote
    plan = probe_topology(topo)
    hosts = {}
    for side, host in topo.hosts().items():
        hosts[side] = {**topo.details[side], **hostmeta.remote_host_meta(host),
                       **hostmeta.net_meta(topo.details[side]["interface"], host)}
    _start_meta(sweep, plan, to_measure, hosts=hosts, **hostmeta.net_meta(topo.server_if, topo.server_host))

def _start_meta(sweep, plan, to_measure: int, **extra) -> None:
    sweep.plan = plan
    if sweep.plan.note:
        sweep.say(f"perf: {sweep.plan.note}")
    atomic_write_json(sweep.out / "perf_plan.json", sweep.plan.to_dict())
    previous = folder.previous_meta(sweep.out)
    sweep.meta = SweepMeta(sweep.out / "meta.json", previous, {
        **hostmeta.host_meta(), "perf_events": sweep.plan.supported, "cycles_source": sweep.plan.cycles_source,
        "perf_note": sweep.plan.note, "params_file": sweep.asked.source, "params": sweep.asked.to_dict(),
        "grid_fingerprint": folder.fingerprint(sweep.asked), "topology": sweep.topology,
        "peers_missing": sweep.missing_peers, **extra})
    sweep.meta.open_session(to_measure=to_measure)


def recorded_specs(runs: Path) -> list[dict]:
    """The spec of every record in runs/ (unreadable ones are skipped: the sweep re-measures them)."""
    specs = []
    for path in runs.glob("*.json"):
        with contextlib.suppress(OSError, ValueError, KeyError, TypeError, UnicodeDecodeError):
            spec = userfiles.loads_json(path.read_bytes())["raw"]["spec"]
            if isinstance(spec, dict):
                specs.append(spec)
    return specs


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

"""The sweep driver: a YAML grid -> papermill executions -> results.csv + meta.json.

Layout of output/<name>/ (flent-style: every result carries its metadata, runs are resumable):
  build.ipynb             the executed build notebook (compiler, flags)
  runs/<point_id>.ipynb   the executed experiment notebook of each point (immutable record)
  runs/<point_id>.json    its result record: the row and both programs' raw output
  results.csv             one row per point of the grid, rebuilt from the records after every point
  meta.json               host, kernel, perf, network settings, the grid, times
  sweep.log               one line per point
A point is finished when its record is in runs/ with status ok; a re-run skips those (unless
--force) and re-measures failed or missing ones. Records are renamed into place only when complete.
"""

from __future__ import annotations

import contextlib
import fcntl
import math
import os
import shutil
import sys
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd

from . import hostmeta
from . import perf as perfmod
from .errors import CopylabError
from .fsutil import atomic_write_json, atomic_write_text
from .experiment import load_record
from .params import Grid, load_grid
from .paths import NATIVE_DIR, NOTEBOOKS_DIR, OUTPUT_DIR
from .point import COLUMNS, PointSpec, empty_row
from .topology import Topology, choose_topology, clean_leftovers, open_topology

SORT_KEYS = ["impl", "mode", "msg_size", "threads", "rep"]
POINT_TIMEOUT_GRACE_S = 90  # beyond warm-up + duration: process start, drain, perf, notebook


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


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _check_pinning(grid: Grid) -> None:
    cpus = os.sched_getaffinity(0)
    for key in ("pin_server", "pin_client"):
        value = getattr(grid, key)
        if value is None:
            continue
        for part in value.split(","):
            low, _, high = part.partition("-")
            for cpu in range(int(low), int(high or low) + 1):
                if cpu not in cpus:
                    raise CopylabError(f"{key}: CPU {cpu} is not available on this host "
                                       f"(usable CPUs: {','.join(map(str, sorted(cpus)))})")


@contextlib.contextmanager
def _exclusive(out_dir: Path):
    """One sweep at a time per output folder."""
    lock_path = out_dir / ".lock"
    handle = open(lock_path, "w")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        raise CopylabError(f"another sweep is writing to {out_dir} (lock {lock_path})") from None
    try:
        yield
    finally:
        handle.close()


def failed_row(spec: PointSpec, error: str) -> dict:
    """A row for a point whose notebook itself failed (no row came back from the engine)."""
    row = empty_row(spec, spec.topology)
    row.update(error=error, started_at=_now())
    return row


def write_results(out_dir: Path, rows: list[dict]) -> Path:
    """results.csv in a stable order, so a resumed sweep rebuilds the same file."""
    frame = pd.DataFrame(rows, columns=list(COLUMNS))
    frame = frame.sort_values(SORT_KEYS, kind="stable").reset_index(drop=True)
    return atomic_write_text(out_dir / "results.csv", frame.to_csv(index=False))


class _WarmKernel:
    """One Jupyter kernel reused for every point: papermill per point then costs ~0.2 s, not ~1 s."""

    def __init__(self, cwd: Path, log_path: Path):
        self.cwd = cwd
        self.log_path = log_path
        self.km = self.kc = None

    def ensure(self):
        from jupyter_client.manager import KernelManager

        if self.km is not None and self.km.is_alive():
            return
        self.stop()
        self.km = KernelManager(kernel_name="python3")
        # the kernel's own chatter (transport warnings) goes to a log, not the user's terminal
        with open(self.log_path, "ab") as log:
            self.km.start_kernel(cwd=str(self.cwd), stdout=log, stderr=log)
        self.kc = self.km.client()
        self.kc.start_channels()
        self.kc.wait_for_ready(timeout=120)

    def interrupt(self) -> None:
        if self.km is not None and self.km.is_alive():
            with contextlib.suppress(Exception):
                self.km.interrupt_kernel()

    def stop(self) -> None:
        if self.kc is not None:
            with contextlib.suppress(Exception):
                self.kc.stop_channels()
        if self.km is not None:
            with contextlib.suppress(Exception):
                self.km.shutdown_kernel(now=True)
        self.km = self.kc = None


def _execute(notebook: Path, output: Path, parameters: dict, timeout: float, kernel: _WarmKernel | None = None,
             cwd: Path | None = None) -> str:
    """Run a notebook with papermill; "" on success, else the error in one line."""
    import papermill as pm
    from nbclient.exceptions import CellTimeoutError, DeadKernelError

    extra = {}
    if kernel is not None:
        kernel.ensure()
        extra = {"km": kernel.km, "kc": kernel.kc}
    try:
        pm.execute_notebook(str(notebook), str(output), parameters=parameters, kernel_name="python3",
                            progress_bar=False, execution_timeout=math.ceil(timeout), cwd=str(cwd) if cwd else None,
                            request_save_on_cell_execute=False,  # written once, when complete
                            **extra)
    except pm.PapermillExecutionError as exc:
        return f"notebook cell {exc.exec_count} raised {exc.ename}: {exc.evalue}".splitlines()[0]
    except CellTimeoutError:
        if kernel is not None:
            kernel.stop()  # the kernel may be stuck in the cell; start a fresh one for the next point
        return f"notebook cell timed out after {timeout:.0f} s"
    except DeadKernelError as exc:
        if kernel is not None:
            kernel.stop()
        return f"the notebook's kernel died: {exc}".splitlines()[0]
    return ""


def build_native(out_dir: Path, kernel: _WarmKernel, extra_cflags: str = "") -> None:
    """Execute notebooks/build.ipynb (the %%bash compile cells) into out_dir/build.ipynb."""
    tmp = out_dir / ".build.tmp.ipynb"
    error = _execute(NOTEBOOKS_DIR / "build.ipynb", tmp,
                     {"native_dir": str(NATIVE_DIR), "extra_cflags": extra_cflags, "sanitize": False},
                     timeout=600, kernel=kernel, cwd=NOTEBOOKS_DIR)
    if tmp.exists():
        os.replace(tmp, out_dir / "build.ipynb")
    if error:
        raise CopylabError(f"building native/ failed ({error}); see {out_dir / 'build.ipynb'}")


def _load_records(runs_dir: Path, wanted: dict[str, PointSpec]) -> dict[str, dict]:
    rows = {}
    for point_id in wanted:
        path = runs_dir / f"{point_id}.json"
        if path.exists():
            with contextlib.suppress(ValueError, KeyError, OSError):
                rows[point_id] = load_record(path)["row"]
    return rows


def _progress(total: int, initial: int, enabled: bool):
    from tqdm.auto import tqdm

    return tqdm(total=total, initial=initial, unit="point", disable=not enabled, file=sys.stderr,
                dynamic_ncols=True, bar_format="{l_bar}{bar}| {n_fmt}/{total_fmt} points [{elapsed}<{remaining}]{postfix}")


def _log(out_dir: Path, text: str) -> None:
    with open(out_dir / "sweep.log", "a") as handle:
        handle.write(f"{_now()} {text}\n")


def run_sweep(params_path: str | Path, out_dir: str | Path | None = None, force: bool = False,
              progress: bool = True, say=print) -> SweepSummary:
    grid = load_grid(params_path)
    _check_pinning(grid)
    topology = choose_topology(grid.topology)
    out = Path(out_dir) if out_dir else OUTPUT_DIR / grid.name
    if out.exists() and not out.is_dir():
        raise CopylabError(f"--out {out}: exists and is not a folder")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CopylabError(f"--out {out}: cannot create the output folder: {exc.strerror}") from None
    with _exclusive(out):
        return _sweep_locked(grid, topology, out, force, progress, say)


def _sweep_locked(grid: Grid, topology: str, out: Path, force: bool, progress: bool, say) -> SweepSummary:
    started = time.monotonic()
    runs = out / "runs"
    pending = runs / ".pending"
    shutil.rmtree(pending, ignore_errors=True)  # half-written leftovers of an interrupted run
    pending.mkdir(parents=True)
    leftovers = clean_leftovers()
    for ns in leftovers["removed_namespaces"]:
        say(f"removed namespace {ns} left by an earlier crashed run")

    specs = {spec.point_id(): spec for spec in grid.points(topology)}
    rows = _load_records(runs, specs)
    done = {pid for pid, row in rows.items() if row.get("status") == "ok"} if not force else set()
    todo = [pid for pid in specs if pid not in done]
    say(f"sweep {grid.name}: {len(specs)} points, {len(done)} already measured, {len(todo)} to measure "
        f"-> {out}")

    kernel = _WarmKernel(cwd=NOTEBOOKS_DIR, log_path=out / "kernel.log")
    say("building native programs (notebooks/build.ipynb)")
    try:
        build_native(out, kernel)
    except BaseException:
        kernel.stop()
        raise
    plan = perfmod.probe()
    if plan.note:
        say(f"perf: {plan.note}")
    atomic_write_json(out / "perf_plan.json", plan.to_dict())
    meta_path = out / "meta.json"
    previous = load_record(meta_path) if meta_path.exists() else {}
    meta = {**hostmeta.host_meta(), "perf_events": plan.supported, "cycles_source": plan.cycles_source,
            "perf_note": plan.note, "params_file": grid.source, "params": grid.to_dict(), "topology": topology,
            "started_at": previous.get("started_at") or _now(), "finished_at": None,
            "sessions": previous.get("sessions", []) + [{"started_at": _now(), "to_measure": len(todo)}]}
    atomic_write_json(meta_path, meta)

    failed = 0
    point_seconds = 0.0
    bar = _progress(len(specs), len(done), progress)
    queue = list(todo)
    try:
        while queue:
            with open_topology(topology) as topo:
                for warning in topo.warnings:
                    say(f"WARNING: {warning}")
                if "tcp_wmem" not in meta:  # the sysctls and link as the server's namespace sees them
                    meta.update(hostmeta.net_meta(topo.server_prefix() or None, topo.server_if))
                    atomic_write_json(meta_path, meta)
                while queue:
                    point_id = queue.pop(0)
                    spec = specs[point_id]
                    row = _measure_point(spec, topo, plan, runs, pending, kernel)
                    rows[point_id] = row
                    point_seconds += spec.warmup_s + spec.duration_s
                    write_results(out, list(rows.values()))
                    ok = row["status"] == "ok"
                    failed += not ok
                    _log(out, f"{point_id} {row['status']} throughput_gbps={row.get('throughput_gbps')} "
                              f"latency_us={row.get('latency_us')} {row.get('error') or ''}".rstrip())
                    bar.update(1)
                    bar.set_postfix_str(f"{point_id}{'' if ok else ' FAILED'}, {failed} failed", refresh=False)
                    if not ok and "disappeared" in str(row.get("error")):
                        break  # the namespaces are gone: open a fresh pair for the rest
    except KeyboardInterrupt:
        kernel.interrupt()  # let the running cell clean up its processes before the kernel goes
        time.sleep(1.0)
        raise
    finally:
        bar.close()
        kernel.stop()
        shutil.rmtree(pending, ignore_errors=True)
        meta["finished_at"] = _now()
        meta["sessions"][-1].update(finished_at=meta["finished_at"], measured=len(todo) - len(queue))
        atomic_write_json(meta_path, meta)
    write_results(out, [rows[pid] for pid in specs if pid in rows])
    wall = time.monotonic() - started
    summary = SweepSummary(out, len(specs), len(todo), len(done), failed, wall, point_seconds)
    meta["sessions"][-1].update(wall_s=round(wall, 2), point_seconds=point_seconds,
                                overhead=round(summary.overhead, 3) if summary.overhead else None, failed=failed)
    atomic_write_json(meta_path, meta)
    return summary


def _measure_point(spec: PointSpec, topo: Topology, plan, runs: Path, pending: Path, kernel: _WarmKernel) -> dict:
    """Execute experiment.ipynb for one point; move its notebook and record into runs/ when complete."""
    point_id = spec.point_id()
    nb_tmp, record_tmp = pending / f"{point_id}.ipynb", pending / f"{point_id}.json"
    parameters = {
        "impl": spec.impl, "mode": spec.mode, "msg_size": spec.msg_size, "threads": spec.threads, "rep": spec.rep,
        "duration_s": spec.duration_s, "warmup_s": spec.warmup_s, "topology": topo.kind,
        "pin_server": spec.pin_server, "pin_client": spec.pin_client, "verify": spec.verify,
        "server_ns": topo.server_ns, "client_ns": topo.client_ns, "perf_plan": plan.to_dict(),
        "record_path": str(record_tmp),
    }
    error = _execute(NOTEBOOKS_DIR / "experiment.ipynb", nb_tmp, parameters,
                     timeout=spec.warmup_s + spec.duration_s + POINT_TIMEOUT_GRACE_S, kernel=kernel, cwd=NOTEBOOKS_DIR)
    if error or not record_tmp.exists():
        kernel.stop()  # a failed cell may leave state behind: the next point gets a fresh kernel
        record = {"row": failed_row(spec, error or "the notebook wrote no record"), "raw": {}}
        atomic_write_json(record_tmp, record)
    else:
        record = load_record(record_tmp)
    if nb_tmp.exists():
        os.replace(nb_tmp, runs / f"{point_id}.ipynb")
    os.replace(record_tmp, runs / f"{point_id}.json")  # last: the point now counts as done
    return record["row"]


def describe(summary: SweepSummary) -> str:
    parts = [f"{summary.measured} measured", f"{summary.skipped} already done", f"{summary.failed} failed"]
    text = f"sweep finished: {summary.total} points ({', '.join(parts)}) in {summary.wall_s:.0f} s"
    if summary.overhead:
        text += f"; overhead {summary.overhead:.2f}x the measured seconds"
    return text + f"\nresults: {summary.out_dir / 'results.csv'}"



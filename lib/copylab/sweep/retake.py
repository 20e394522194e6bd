"""After the base passes, the runs kept while the CPUs were apart, measured again while the budget
lasts (placement.py: a stretch that outlasted every wait one point may spend, or an allowance
spent, keeps its runs flagged; by the end of the base passes such a stretch has usually passed).

Each kept run becomes a run set aside (runs/apart/<point_id>.<n>.json, as if measured again at
once), the new run takes its place and counts it among its point's runs set aside
(placement_retries), and its whole wall time is placement's (accounting.py). A re-take that fails
gives the kept run its place back: a finished result is never traded for a failure.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..fsutil import atomic_write_json
from ..userfiles import loads_json
from . import estimate as est
from .records import record_path


def retake(sweep) -> None:
    """The runs kept apart measured again, as many as the budget holds (the profiled runs still to
    come kept in reserve); one line in sweep.log, the counts in meta.json's placement."""
    placing = sweep.placing
    if placing is None or not placing.active or placing.effect["differs"] is False or sweep.clock.left() is None:
        return
    kept = [pid for pid, row in sweep.rows.items() if str(row.get("cpus_apart")) == "True"
            and row.get("status") == "ok" and pid in sweep.specs and not sweep.specs[pid].profile]
    if not kept:
        return
    pace = sweep.clock.pace(sweep.accounting)
    left = sweep.clock.left() - sweep.clock.reserve_s * pace
    chosen, need = [], 0.0
    for pid in kept:
        seconds = est.point_seconds(sweep.specs[pid]) * pace
        if need + seconds <= left:
            chosen.append(pid)
            need += seconds
    placing.retakes = {"kept_apart": len(kept), "measured_again": len(chosen)}
    placing.record()
    sweep.log(f"placement: {len(chosen)} of the {len(kept)} runs kept while the CPUs were apart measured again "
              "after the base passes" + ("" if len(chosen) == len(kept) else ", as many as the budget holds"))
    sweep.bar.total += len(chosen)
    for pid in chosen:
        placing.retaking[pid] = {"row": sweep.rows[pid], "moved": set_aside(sweep.runs, pid)}
    try:
        sweep.measure(chosen)
    finally:
        placing.retaking.clear()


def retaken(sweep, pid: str, row: dict) -> dict:
    """The row a re-take leaves for pid: the new run's, counting the run it replaced and the runs set
    aside before that one (placement_retries), written back to its record; or, when the re-take
    failed, the kept run's, its record back in place."""
    before = sweep.placing.retaking[pid]
    path = record_path(sweep.runs, pid)
    if row.get("status") != "ok":
        os.replace(before["moved"], path)
        sweep.log(f"placement: {pid} measured again failed ({row.get('error')}): the run kept apart stays")
        return before["row"]
    row["placement_retries"] = int(before["row"].get("placement_retries") or 0) + 1 + \
        int(row.get("placement_retries") or 0)
    record = loads_json(path.read_bytes())  # a resumed sweep reads its retries from there
    record["row"] = row
    atomic_write_json(path, record)
    return row


def set_aside(runs: Path, pid: str) -> Path:
    """Move a point's record to runs/apart/<point_id>.<n>.json (the next n free), as a run set aside."""
    folder = runs / "apart"
    folder.mkdir(exist_ok=True)
    n = 0
    while (folder / f"{pid}.{n}.json").exists():
        n += 1
    target = folder / f"{pid}.{n}.json"
    os.replace(record_path(runs, pid), target)
    return target

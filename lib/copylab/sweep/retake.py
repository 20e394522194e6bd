"""After the base passes, and after each extra pass, the runs kept while the CPUs were apart,
measured again while the budget lasts (placement.py: a stretch that outlasted every wait one point
may spend, or an allowance spent, keeps its runs flagged; by the end of their pass such a stretch
has usually passed).

Each kept run is copied to runs/apart/<point_id>.<n>.json.pending first; once the new run has
landed in its place, the copy becomes a run set aside (as if measured again at once) and the new
run counts it among its point's runs set aside (placement_retries). Its whole wall time is
placement's (accounting.py). A re-take that fails gives the kept run its place back, and one never
reached (the sweep interrupted) leaves it there: a finished result is never traded for a failure
or lost. None is taken while the CPUs are apart right now: it would be taken apart again.
"""

from __future__ import annotations

import os

from ..experiment import PENDING, apart_path
from ..fsutil import atomic_write_bytes, atomic_write_json
from ..userfiles import loads_json
from . import estimate as est
from .records import record_path


def retake(sweep, after: str = "the base passes") -> None:
    """The runs kept apart measured again, as many as the budget holds (the profiled runs still to
    come kept in reserve), unless the CPUs are apart right now; one line in sweep.log (after: the
    passes they follow, the base ones or an extra one), the counts in meta.json's placement."""
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
    why = placing.apart_now() if chosen else ""
    if why:  # measured again now, they would be taken apart again
        chosen = []
    if not chosen and not why and set(kept) <= placing.retake_points["kept_apart"]:
        return  # the budget holds none, as the last retake said: nothing new to say
    placing.retake_points["kept_apart"].update(kept)  # each run measured again is counted as it lands (retaken)
    placing.record()
    sweep.log(f"placement: {len(chosen)} of the {len(kept)} runs kept while the CPUs were apart measured again "
              f"after {after}" + (f" ({why})" if why else
                                         "" if len(chosen) == len(kept) else ", as many as the budget holds"))
    if not chosen:
        return
    sweep.bar.total += len(chosen)
    apart = sweep.runs / "apart"
    apart.mkdir(exist_ok=True)
    for pid in chosen:  # a copy: until the new run lands, the kept one stays the point's record
        pending = apart_path(apart, pid).with_suffix(".json" + PENDING)
        atomic_write_bytes(pending, record_path(sweep.runs, pid).read_bytes())
        placing.retaking[pid] = {"row": sweep.rows[pid], "pending": pending}
    try:
        sweep.measure(chosen)
    finally:
        for entry in placing.retaking.values():  # not reached (interrupted): the kept run keeps its place
            entry["pending"].unlink(missing_ok=True)
        placing.retaking.clear()
        placing.record()  # the runs measured again before an interruption too


def retaken(sweep, pid: str, row: dict) -> dict:
    """The row a re-take leaves for pid: the new run's, counting the run it replaced (now set aside)
    and the runs set aside before that one (placement_retries), written back to its record; or,
    when the re-take failed, the kept run's, its record back in place."""
    entry = sweep.placing.retaking.pop(pid)
    pending, path = entry["pending"], record_path(sweep.runs, pid)
    if row.get("status") != "ok":
        os.replace(pending, path)
        sweep.log(f"placement: {pid} measured again failed ({row.get('error')}): the run kept apart stays")
        return entry["row"]
    os.replace(pending, pending.with_name(pending.name.removesuffix(PENDING)))
    sweep.placing.retake_points["measured_again"].add(pid)  # recorded after its group (placing.learned)
    row["placement_retries"] = int(entry["row"].get("placement_retries") or 0) + 1 + \
        int(row.get("placement_retries") or 0)
    record = loads_json(path.read_bytes())  # a resumed sweep reads its retries from there
    record["row"] = row
    atomic_write_json(path, record)
    return row

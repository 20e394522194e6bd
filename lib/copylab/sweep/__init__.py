"""Sweeps: a YAML grid measured point by point through papermill into a resumable folder.

driver (the session), prepare (queue, build, perf plan, meta.json's session before the first point),
groups (points measured in one notebook execution, with a watchdog), budget (extra passes within
budget_min), kernel (notebook execution), records (runs/, results.csv, profiles.csv), meta
(meta.json), accounting (where the time went), folder (lock and ownership), estimate (time and
memory up front).
"""

from .driver import SweepSummary, describe, run_sweep
from .records import failed_row, write_results

__all__ = ["SweepSummary", "describe", "run_sweep", "failed_row", "write_results"]

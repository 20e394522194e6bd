"""Sweeps: a YAML grid measured point by point through papermill into a resumable folder.

driver (the session), kernel (notebook execution with a watchdog), records (runs/ and
results.csv), meta (meta.json), folder (lock and ownership), estimate (time and memory up front).
"""

from .driver import SweepSummary, describe, run_sweep
from .records import failed_row, write_results

__all__ = ["SweepSummary", "describe", "run_sweep", "failed_row", "write_results"]

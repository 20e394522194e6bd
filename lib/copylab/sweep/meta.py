"""meta.json of a sweep: the host, the grid and its fingerprint, and one entry per session
(started, measured, finished or interrupted). Written through one object, closed exactly once."""

from __future__ import annotations

import errno
import os
from pathlib import Path

from ..fsutil import atomic_write_json
from .records import now

# Room kept on the disk for meta.json's last write: on a full disk the sweep stops, and its books
# must still be closed (meta.json said "running" for ever). The default sweep's meta.json is ~13 KB.
RESERVE_BYTES = 64 << 10
RESERVE = ".meta-reserve"


class SweepMeta:
    def __init__(self, path: Path, previous: dict, fields: dict):
        self.path = path
        self.reserve = path.parent / RESERVE
        self.previous = previous  # the earlier sessions' meta.json, for what a session carries on (placing.py)
        self.data = {**fields, "started_at": previous.get("started_at") or now(), "finished_at": None,
                     "status": "running", "sessions": list(previous.get("sessions", []))}
        self._closed = False

    def open_session(self, **fields) -> None:
        self.data["sessions"].append({"started_at": now(), **fields})
        self.write()
        self._keep_room()

    def update(self, **fields) -> None:
        self.data.update(fields)
        self.write()

    def session(self, **fields) -> None:
        self.data["sessions"][-1].update(fields)

    def close(self, status: str, **session_fields) -> None:
        """status: finished, interrupted or failed. Later calls do nothing. On a full disk the room kept
        at the session's start is given back for this last write."""
        if self._closed:
            return
        self._closed = True
        self.data.update(status=status, finished_at=now())
        if self.data["sessions"]:
            self.session(finished_at=self.data["finished_at"], status=status, **session_fields)
        try:
            self.write()
        except OSError as exc:
            if exc.errno not in (errno.ENOSPC, errno.EDQUOT) or not self.reserve.exists():
                raise
            self.reserve.unlink()
            self.write()
        finally:
            self.reserve.unlink(missing_ok=True)

    def write(self) -> None:
        atomic_write_json(self.path, self.data)

    def _keep_room(self) -> None:
        """RESERVE_BYTES written (not a hole: a full disk must not take them) until close(); a disk
        already too full for them keeps none."""
        try:
            with open(self.reserve, "wb") as handle:
                handle.write(bytes(RESERVE_BYTES))
                handle.flush()
                os.fsync(handle.fileno())
        except OSError:
            self.reserve.unlink(missing_ok=True)

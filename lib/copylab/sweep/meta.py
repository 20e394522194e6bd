"""meta.json of a sweep: the host, the grid and its fingerprint, and one entry per session
(started, measured, finished or interrupted). Written through one object, closed exactly once."""

from __future__ import annotations

from pathlib import Path

from ..fsutil import atomic_write_json
from .records import now


class SweepMeta:
    def __init__(self, path: Path, previous: dict, fields: dict):
        self.path = path
        self.previous = previous  # the earlier sessions' meta.json, for what a session carries on (placing.py)
        self.data = {**fields, "started_at": previous.get("started_at") or now(), "finished_at": None,
                     "status": "running", "sessions": list(previous.get("sessions", []))}
        self._closed = False

    def open_session(self, **fields) -> None:
        self.data["sessions"].append({"started_at": now(), **fields})
        self.write()

    def update(self, **fields) -> None:
        self.data.update(fields)
        self.write()

    def session(self, **fields) -> None:
        self.data["sessions"][-1].update(fields)

    def close(self, status: str, **session_fields) -> None:
        """status: finished, interrupted or failed. Later calls do nothing."""
        if self._closed:
            return
        self._closed = True
        self.data.update(status=status, finished_at=now())
        if self.data["sessions"]:
            self.session(finished_at=self.data["finished_at"], status=status, **session_fields)
        self.write()

    def write(self) -> None:
        atomic_write_json(self.path, self.data)

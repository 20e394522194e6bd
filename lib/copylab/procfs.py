"""Reading /proc/<pid>/stat: one parser for the places that need a process's state, parent, flags
or CPU times."""

from __future__ import annotations

from pathlib import Path

PROC = Path("/proc")


def stat_fields(pid: int | str) -> list[str] | None:
    """The fields of /proc/<pid>/stat after the command name (which may hold spaces and parentheses):
    [0] state, [1] ppid, [2] pgrp, [3] session, ... [6] flags, ... [11:15] utime stime cutime cstime.
    None when the process is gone or unreadable."""
    try:
        text = (PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    fields = text.rsplit(")", 1)[-1].split()
    return fields if len(fields) > 14 else None

"""The output folder of a sweep: created once, locked while a sweep writes it, owned by one grid.

A folder belongs to the grid whose fingerprint its meta.json records: resuming with the same grid
continues it; a different grid is refused unless the user asks to start over, and then the old
folder is renamed aside, never deleted.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
from datetime import datetime, timezone
from pathlib import Path

from .. import userfiles
from ..errors import CopylabError
from ..fsutil import describe_os_error, listing
from ..params import Grid

# the grid keys that decide what is measured; the report's author fields and the description do not
MEASURED_KEYS = ("impls", "modes", "msg_sizes", "threads", "receive", "profile", "peers", "repetitions", "duration_s",
                 "warmup_s", "topology", "pin_server", "pin_client", "shuffle", "seed", "verify", "server_host",
                 "client_host", "server_addr", "client_addr")


def fingerprint(grid: Grid) -> str:
    return _fingerprint_of(grid.to_dict())


def prepare(out: Path) -> None:
    """Create the folder (and its parents); one line naming --out when that is impossible."""
    if out.exists() and not out.is_dir():
        raise CopylabError(f"--out {out}: exists and is not a folder")
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / ".copylab-write-test"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise CopylabError(f"--out {out}: cannot write there: {describe_os_error(exc)}") from None


@contextlib.contextmanager
def exclusive(out: Path):
    """One sweep at a time per output folder."""
    lock_path = out / ".lock"
    try:
        handle = open(lock_path, "w")
    except OSError as exc:
        raise CopylabError(f"--out {out}: cannot create its lock file: {describe_os_error(exc)}") from None
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        raise CopylabError(f"another sweep is writing to {out} (lock {lock_path})") from None
    try:
        yield
    finally:
        handle.close()


def previous_meta(out: Path) -> dict:
    """meta.json of an earlier sweep into out, {} when there is none; one line if it is unusable."""
    path = out / "meta.json"
    if not path.exists():
        return {}
    try:
        meta = userfiles.loads_json(path.read_bytes())
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        raise CopylabError(f"{path} is unreadable or not JSON ({str(exc).splitlines()[0]}): this folder's "
                           "sweep cannot be resumed; use --restart to set it aside and start over") from None
    if not isinstance(meta, dict):
        raise CopylabError(f"{path} does not hold a JSON object: use --restart to set it aside and start over")
    return meta


MARKER = ".copylab-sweep"  # written into a folder the moment a sweep claims it
_OURS = (".lock", ".copylab-write-test")


def is_sweep(out: Path) -> bool:
    """Does out hold a copylab sweep (its marker, or a sweep's meta.json or runs/ from before markers)?"""
    return any((out / name).exists() or (out / name).is_symlink() for name in (MARKER, "meta.json", "runs"))


def claim(out: Path, grid: Grid, restart: bool, say) -> Path:
    """Make sure out holds nothing but this grid's sweep. Returns the folder to use (out).

    A folder that is neither empty nor a copylab sweep is refused: its files are the user's (a
    thesis beside a results.csv of their own) and a sweep would overwrite them."""
    if not is_sweep(out):
        others = [entry.name for entry in out.iterdir() if entry.name not in _OURS]
        if others:
            raise CopylabError(f"--out {out}: not empty and not a copylab sweep (it holds {listing(others)}); a sweep "
                               "would overwrite files there: use an empty or new folder")
        _mark(out, grid)
        return out
    if not any((out / name).exists() for name in ("meta.json", "results.csv", "runs")):
        return out
    if restart:
        # everything but the lock we hold moves to a sibling folder: nothing measured is deleted
        stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        aside = out.with_name(f"{out.name}.superseded-{stamp}")
        aside.mkdir()
        for entry in out.iterdir():
            if entry.name != ".lock":
                os.rename(entry, aside / entry.name)
        say(f"the earlier sweep in {out} was moved to {aside}")
        _mark(out, grid)
        return out
    # without meta.json nothing says whose points these are; the records carry every parameter in
    # their names, so this grid resumes its own points and ignores the rest
    if not (out / "meta.json").exists():
        return out
    meta = previous_meta(out)
    theirs = meta.get("grid_fingerprint")
    if theirs is None and meta.get("params"):
        # a folder written before fingerprints: compare the grid it recorded
        theirs = _fingerprint_of(meta["params"])
    if theirs != fingerprint(grid):
        raise CopylabError(f"{out} holds a sweep of a different grid ({meta.get('params_file') or 'unknown'}); "
                           "measuring another grid there would mix two studies: use --out for a new folder, "
                           "or --restart to set the old one aside")
    return out


def _mark(out: Path, grid: Grid) -> None:
    from ..fsutil import atomic_write_text

    atomic_write_text(out / MARKER, f"copylab sweep of grid {grid.name} ({fingerprint(grid)})\n")


def _fingerprint_of(params: dict) -> str | None:
    try:
        fields = {key: params.get(key) if key == "peers" else params[key] for key in MEASURED_KEYS}
    except KeyError:
        return None
    text = json.dumps(fields, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def ensure_runs(out: Path) -> Path:
    """out/runs, created if needed; one line when something else is in its place."""
    runs = out / "runs"
    if runs.exists() and not runs.is_dir():
        raise CopylabError(f"{runs}: exists and is not a folder (the sweep keeps its records there)")
    runs.mkdir(exist_ok=True)
    return runs


def still_there(out: Path, runs: Path) -> bool:
    """False when the folder (or its runs/) was removed under a running sweep."""
    return out.is_dir() and runs.is_dir()


# ------------------------------------------------------------------------------------------------
# what state a sweep folder is in, for the commands that read one (report, compare, bundle)

RECORD_FOLDERS = ("runs", "profiles", ".pending", ".work")  # a sweep's records and work: nothing else goes there


def records_holding(path: Path) -> Path | None:
    """The sweep folder whose records (runs/, profiles/...) hold path, or None: a file written there
    would be read as the sweep's own (a resume, a report, the lab's guard)."""
    path = Path(path).resolve()
    for inner in (path, *path.parents):
        if inner.name in RECORD_FOLDERS and is_sweep(inner.parent):
            return inner.parent
    return None


def being_written(out: Path) -> bool:
    """Does a live sweep hold out's lock now? (A killed one's lock went with it.)"""
    try:
        handle = open(out / ".lock", "rb")
    except OSError:
        return False
    with handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        except OSError:
            return False
        fcntl.flock(handle, fcntl.LOCK_UN)
        return False


def sweep_state(out: Path, meta: dict) -> tuple[str, str]:
    """(state, in words) of the sweep whose folder out is: finished, interrupted or running; ("", "")
    for a results folder without a sweep's status (a CSV from elsewhere). meta.json says running for a
    sweep that was killed too (kill -9, a power cut): only a live sweep holds the folder's lock."""
    status = meta.get("status")
    if being_written(out):
        return "running", "a sweep is measuring into it now (it holds the folder's lock)"
    if status == "running":
        return "interrupted", ("its sweep ended without closing its books (killed, or the machine stopped): "
                               "meta.json still says running")
    if status in ("interrupted", "failed"):
        stopped = meta.get("finished_at") or "an unknown time"
        why = "interrupted" if status == "interrupted" else "stopped by an error"
        return "interrupted", f"its sweep was {why} at {stopped} (meta.json status {status!r})"
    if status == "finished":
        return "finished", "finished"
    return "", ""


def planned_points(meta: dict) -> int | None:
    """How many points the sweep's grid has (meta.json params), when that can be told."""
    params = meta.get("params")
    if not isinstance(params, dict):
        return None
    from ..params import parse_grid

    try:
        return len(parse_grid(params, source="meta.json").points(meta.get("topology") or "netns"))
    except (CopylabError, ValueError, TypeError, KeyError):
        return None


def check_state(out: Path, meta: dict, rows: int, who: str) -> str:
    """The one policy of every command that reads a sweep: a sweep measuring now is refused (its
    results change under the reader); an interrupted one is read with a warning saying so and how
    much it holds (returned, "" for a finished sweep). who names it in the lines ("A (path)")."""
    state, words = sweep_state(out, meta)
    if state == "running":
        raise CopylabError(f"{who} is mid-sweep: {words}; read it once the sweep has finished")
    if state != "interrupted":
        return ""
    planned = planned_points(meta)
    held = f"{rows} measured row(s)" + (f" of the grid's {planned} points" if planned else "")
    return (f"{who} is an interrupted sweep: {words}; it holds {held}, and what it lacks is missing from what "
            "follows (resume it: copylab sweep with --out the same folder)")

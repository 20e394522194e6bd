"""Files: atomic writes (a reader, or a crash, never sees half a file) and JSON-safe values.

One helper per idea: every file copylab writes goes through atomic_write_*, every value that
becomes JSON through jsonable().
"""

from __future__ import annotations

import contextlib
import errno
import json
import math
import os
import stat
import tempfile
from pathlib import Path

# results and records are meant to be read by others (a grader, a second user): not 0600
FILE_MODE = 0o644


def atomic_write_bytes(path: str | Path, data: bytes) -> Path:
    """Write to a temporary file in the same folder, fsync, then rename over path.

    The folder must exist: a folder removed under a running sweep is an error, not something to
    quietly re-create."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fchmod(handle.fileno(), FILE_MODE & ~_umask())
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return path


def install_written(tmp: str | Path, dest: str | Path, whole) -> bool:
    """A file another program wrote (papermill's notebook) moved over dest only when whole(tmp) says
    it is complete, after an fsync: as atomic_write_bytes leaves a file of ours. One cut off (a full
    disk, a crash mid-write) is removed instead, and False returned: no half-written record is ever
    put in place."""
    tmp, dest = Path(tmp), Path(dest)
    try:
        complete = whole(tmp)
    except OSError:
        complete = False
    if not complete:
        tmp.unlink(missing_ok=True)
        return False
    with open(tmp, "rb") as handle:
        os.fsync(handle.fileno())
    os.replace(tmp, dest)
    return True


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_write_text(path: str | Path, text: str) -> Path:
    return atomic_write_bytes(path, text.encode("utf-8"))


def jsonable(value):
    """Strict-JSON-safe copy: NaN/inf -> None, numpy scalars -> Python, keys -> str, tuples -> lists."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if hasattr(value, "item") and type(value).__module__ == "numpy":
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def atomic_write_json(path: str | Path, data, indent: int = 1) -> Path:
    return atomic_write_text(path, json.dumps(jsonable(data), indent=indent, allow_nan=False) + "\n")


def describe_os_error(exc: OSError) -> str:
    """An OSError as one line naming the path and the cause: "output/x: No space left on device (ENOSPC)"."""
    cause = exc.strerror or str(exc) or type(exc).__name__
    code = errno.errorcode.get(exc.errno or 0)
    if code:
        cause = f"{cause} ({code})"
    paths = [p for p in (exc.filename, exc.filename2) if p not in (None, "")]
    return f"{' -> '.join(map(str, paths))}: {cause}" if paths else cause


def sha256_file(path: str | Path) -> str:
    import hashlib

    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def free_bytes(path: str | Path) -> int | None:
    try:
        st = os.statvfs(path)
    except OSError:
        return None
    return st.f_bavail * st.f_frsize


def space_problem(folder: str | Path, need: int) -> str:
    """"" when folder (a TMPDIR) has need bytes free, else one phrase naming it and what is free."""
    free = free_bytes(folder)
    if free is None or free >= need:
        return ""
    return (f"TMPDIR {folder}: only {free >> 20} MiB free, and about {need >> 20} MiB are needed there; "
            "free some space or point TMPDIR at another folder")


@contextlib.contextmanager
def scratch_dir(prefix: str, need: int):
    """A private folder in TMPDIR for one command's temporary files, removed afterwards whatever
    happens. A TMPDIR that is full, or cannot be written, is one line naming it, up front."""
    from .errors import CopylabError

    # tempfile falls back to /tmp, silently, when TMPDIR cannot be written: the one the user set is checked
    tmp = os.environ.get("TMPDIR") or tempfile.gettempdir()
    try:
        mode = os.stat(tmp).st_mode
    except FileNotFoundError:
        raise CopylabError(f"TMPDIR {tmp}: no such folder; point TMPDIR at a writable folder") from None
    except OSError as exc:
        raise CopylabError(f"TMPDIR {tmp}: {describe_os_error(exc)}; point TMPDIR at a writable folder") from None
    if not stat.S_ISDIR(mode):
        from .userfiles import kind_of

        what = "a regular file" if stat.S_ISREG(mode) else kind_of(mode)
        raise CopylabError(f"TMPDIR {tmp}: is {what}, not a folder; point TMPDIR at a writable folder")
    problem = space_problem(tmp, need)
    if problem:
        raise CopylabError(problem)
    try:
        path = Path(tempfile.mkdtemp(prefix=prefix, dir=tmp))
    except OSError as exc:
        raise CopylabError(f"TMPDIR {tmp}: cannot create a folder there: {describe_os_error(exc)}") from None
    try:
        yield path
    except OSError as exc:  # ENOSPC and its kin met half-way: named by its path
        raise CopylabError(f"{describe_os_error(exc)}" + (f" (TMPDIR {tmp})" if str(tmp) not in str(exc) else "")) \
            from None
    finally:
        import shutil

        shutil.rmtree(path, ignore_errors=True)


@contextlib.contextmanager
def staging_dir(parent: str | Path, prefix: str):
    """A hidden folder beside the files it will replace (same file system: os.replace is a rename),
    removed with whatever is left in it."""
    import shutil

    path = Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@contextlib.contextmanager
def tempdir_in(folder: str | Path):
    """tempfile's default folder set to folder for a while (libraries that make their own temporary
    folders, nbconvert's LaTeX build, then make them there)."""
    old = tempfile.tempdir
    tempfile.tempdir = str(folder)
    try:
        yield
    finally:
        tempfile.tempdir = old


SOCKET_DIR_MAX = 60  # Chromium puts a UNIX socket under TMPDIR: the whole path must stay under 108 bytes


@contextlib.contextmanager
def socket_safe_dir(scratch: Path):
    """scratch when it is short enough to be the TMPDIR of a program that makes UNIX sockets there
    (Chromium: TMPDIR/.org.chromium.Chromium.XXXXXX/SingletonSocket; a longer path made kaleido wait
    forever); else a private folder under /tmp, removed afterwards as scratch is."""
    import shutil

    if len(str(scratch)) <= SOCKET_DIR_MAX:
        yield scratch
        return
    path = Path(tempfile.mkdtemp(prefix="copylab-", dir="/tmp"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def shown(path: str | Path) -> str:
    """A path as the user would type it: relative to the working directory when it is under it."""
    path = Path(path).resolve()
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


# ------------------------------------------------------------------------------------------------
# output folders: copylab writes only into a folder it made (or an empty one, which it then marks)

OUTPUT_MARK = ".copylab-output"  # written into every output folder copylab makes (compare, report --output-dir)


def listing(names, at_most: int = 4) -> str:
    """A few names of a folder's entries for a one-line message ("a, b, c, d and 3 more")."""
    names = sorted(names)
    shown = ", ".join(repr(n) if not n.isprintable() else n for n in names[:at_most])
    return shown + (f" and {len(names) - at_most} more" if len(names) > at_most else "")


def check_output_dir(path: str | Path, flag: str, what: str) -> None:
    """path may receive what a command writes: it does not exist yet, is empty, or carries the mark
    of a folder copylab made. Anything else is one line naming the flag, the folder and a few of its
    files: they are the user's, and the command would overwrite them (a sweep folder is claimed by
    sweep/folder.py instead)."""
    from .errors import CopylabError
    from .escape import quoted_path as quoted

    path = Path(path)
    if path.is_symlink() and not path.exists():
        raise CopylabError(f"{flag} {quoted(path)}: a link to nothing; name a folder")
    if path.exists() and not path.is_dir():
        raise CopylabError(f"{flag} {quoted(path)}: exists and is not a folder")
    if not path.exists() or (path / OUTPUT_MARK).is_file():
        return
    try:
        others = [entry.name for entry in path.iterdir()]
    except OSError as exc:
        raise CopylabError(f"{flag} {quoted(path)}: {describe_os_error(exc)}") from None
    if others:
        raise CopylabError(f"{flag} {quoted(path)}: not empty and not a folder copylab made (it holds "
                           f"{listing(others)}); {what} would overwrite files there: use an empty or new folder")


def make_output_dir(path: str | Path, what: str) -> Path:
    """Create the output folder (checked by check_output_dir) and mark it as copylab's."""
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    if not (path / OUTPUT_MARK).exists():
        atomic_write_text(path / OUTPUT_MARK, f"made by copylab: {what}\n")
    return path

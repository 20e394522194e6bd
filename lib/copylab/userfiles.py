"""Files copylab opens: the ones a user names (a grid, a declaration) and the ones inside a
results folder, each with the right one-line reason when it cannot be used.

A path the user names must be a regular file: a FIFO would block the reader forever and
/dev/zero never ends, so both are refused by what they are, not as "not found". A text file has a
size limit and a stated encoding (UTF-8). A file inside a results folder is data that arrived with
the folder: it is opened only by its fixed name, only when it is a regular file in that folder and
not a symbolic link (a shared folder must not make copylab read another file of the machine).
"""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path

from .errors import CopylabError
from .fsutil import atomic_write_text, describe_os_error

# how deep a JSON file of a results folder may nest: copylab's own nest 5 levels at most (a record's
# row of per-side counters); Python's parser recurses per level and dies of RecursionError long before
# a 16 MiB file runs out of brackets (100,000 deep was a traceback)
MAX_JSON_DEPTH = 64
_JSON_STRING = re.compile(rb'"(?:[^"\\]++|\\.)*+"')  # brackets inside strings do not nest
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
DECLARATION_FILE = "ai_declaration.txt"  # the declaration's copy in a results folder, taken at sweep time
MAX_DECLARATION_BYTES = 64 << 10         # a declaration is a paragraph or a page, not a book

_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def _size(n: int) -> str:
    return f"{n >> 20} MiB" if n >= 1 << 20 else f"{n >> 10} KiB"


def kind_of(mode: int) -> str:
    for test, name in _KINDS:
        if test(mode):
            return name
    return "not a regular file"


def check_regular(path, what: str) -> os.stat_result:
    """stat of path when it is a regular file (symbolic links followed: the user named it);
    otherwise one line naming what it is instead."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise CopylabError(f"{what} {path}: no such file") from None
    except OSError as exc:
        raise CopylabError(f"{what} {path}: {describe_os_error(exc)}") from None
    if not stat.S_ISREG(st.st_mode):
        raise CopylabError(f"{what} {path}: is {kind_of(st.st_mode)}, not a regular file")
    return st


def read_text(path, what: str, limit: int) -> str:
    """A UTF-8 text file the user named, at most limit bytes; one line for anything else."""
    check_regular(path, what)
    try:
        with open(path, "rb") as handle:
            data = handle.read(limit + 1)
    except OSError as exc:
        raise CopylabError(f"{what} {path}: {describe_os_error(exc)}") from None
    return decode(data, f"{what} {path}", limit)


def decode(data: bytes, where: str, limit: int) -> str:
    if len(data) > limit:
        raise CopylabError(f"{where}: larger than {_size(limit)}; a text file of at most that size is expected")
    if b"\0" in data:
        raise CopylabError(f"{where}: a binary file, not text (it holds NUL bytes); save it as UTF-8 text")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise CopylabError(f"{where}: not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start}); "
                           "save it as UTF-8") from None


def read_declaration(path, what: str = "--ai-declaration") -> str:
    """The AI-usage declaration a user names: UTF-8 text of at most MAX_DECLARATION_BYTES."""
    return read_text(path, what, MAX_DECLARATION_BYTES).strip()


def copy_declaration(path: str | None, out: Path) -> None:
    """At sweep time: the grid's declaration file, read once and copied into the results folder,
    where the report takes it from (the path itself stays in meta.json as provenance only)."""
    if path:
        atomic_write_text(out / DECLARATION_FILE, read_declaration(path, "ai_declaration") + "\n")


# ------------------------------------------------------------------------------------------------
# files inside a results folder

def inside(folder, name: str) -> Path | None:
    """folder/name when it is a regular file there, not a symbolic link; None when absent.
    Anything else there (a link, a FIFO, a folder) is a CopylabError naming it."""
    folder = Path(folder)
    path = folder / name
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise CopylabError(f"{path}: {describe_os_error(exc)}") from None
    if stat.S_ISLNK(st.st_mode):
        raise CopylabError(f"{path}: is a symbolic link; a results folder's files are read only from the "
                           "folder itself (copy the file in instead)")
    if not stat.S_ISREG(st.st_mode):
        raise CopylabError(f"{path}: is {kind_of(st.st_mode)}, not a regular file")
    return path


def read_inside(folder, name: str, limit: int) -> bytes | None:
    """The bytes of folder/name (see inside()), at most limit of them; None when absent."""
    path = inside(folder, name)
    if path is None:
        return None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):  # swapped after the check
                raise CopylabError(f"{path}: not a regular file")
            data = handle.read(limit + 1)
    except OSError as exc:
        raise CopylabError(f"{path}: {describe_os_error(exc)}") from None
    if len(data) > limit:
        raise CopylabError(f"{path}: larger than {_size(limit)}, more than such a file can hold")
    return data


def count_lines_inside(folder, name: str, stop_after: int, chunk: int = 1 << 20) -> int | None:
    """Lines of folder/name (see inside()), counted a chunk at a time and no further than the first
    stop_after + 1: how long a table is without holding it. None when absent."""
    path = inside(folder, name)
    if path is None:
        return None
    lines = 0
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):  # swapped after the check
                raise CopylabError(f"{path}: not a regular file")
            while lines <= stop_after:
                block = handle.read(chunk)
                if not block:
                    break
                lines += block.count(b"\n")
    except OSError as exc:
        raise CopylabError(f"{path}: {describe_os_error(exc)}") from None
    return lines


def folder_declaration(folder) -> str:
    """The declaration copied into a results folder at sweep time ("" when there is none)."""
    data = read_inside(folder, DECLARATION_FILE, MAX_DECLARATION_BYTES)
    return "" if data is None else decode(data, str(Path(folder) / DECLARATION_FILE), MAX_DECLARATION_BYTES).strip()


class JSONTooDeep(ValueError):
    """A JSON text nested deeper than MAX_JSON_DEPTH (a ValueError: to callers it is not usable JSON)."""


def loads_json(data: bytes | str, max_depth: int = MAX_JSON_DEPTH):
    """json.loads of data from a results folder, its nesting checked first (linear, no recursion, in C
    but for one numpy pass), so a hostile file is a ValueError like any other text that is not JSON."""
    import numpy as np

    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    brackets = _JSON_STRING.sub(b"", raw).translate(None, _NOT_BRACKETS)
    if len(brackets) > 2 * max_depth:
        codes = np.frombuffer(brackets, dtype=np.uint8)
        steps = np.where((codes == ord("[")) | (codes == ord("{")), 1, -1).astype(np.int32)
        if int(np.cumsum(steps).max()) > max_depth:
            raise JSONTooDeep(f"nested deeper than {max_depth} levels (copylab's own files nest a few)")
    return json.loads(raw)

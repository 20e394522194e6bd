"""Helpers shared by the tests of bad inputs and faults (one line per error, nothing written,
nothing left): fixtures and grids they start from."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from pathlib import Path

import yaml
from conftest import ROOT, copylab_namespaces, run_copylab

BUILD = ROOT / "native" / "build"
# Without privileges, wherever the checkout lives: the same user (so a checkout under a 0700 folder
# such as /root stays readable) with every capability dropped, as a non-root user has none.
UNPRIVILEGED = ["setpriv", "--bounding-set=-all", "--inh-caps=-all", "--ambient-caps=-all", "--"]
TINY_GRID = {"name": "tiny", "impls": ["a1", "a3"], "modes": ["throughput"], "msg_sizes": [4096],
             "threads": [1], "duration_s": 0.2, "warmup_s": 0.1}


# ------------------------------------------------------------------------------------------------
# helpers

def assert_one_line_error(proc: subprocess.CompletedProcess, needle: str) -> None:
    """Non-zero exit, one stderr line that names the problem, no traceback anywhere."""
    assert proc.returncode != 0, f"exit 0 for a bad input; stdout: {proc.stdout}"
    lines = proc.stderr.strip().splitlines()
    assert "Traceback" not in proc.stderr + proc.stdout, proc.stderr
    assert len(lines) == 1, f"expected one line on stderr, got {len(lines)}:\n{proc.stderr}"
    assert needle in lines[0], f"{needle!r} not named in: {lines[0]}"


HANG_S = 60.0  # a call that has not returned by then is blocked, not slow: no host is that loaded


def returns(call, *args, **kwargs):
    """call(*args, **kwargs)'s result (or its exception, raised here) and the bytes this process read
    meanwhile (/proc/self/io rchar: every read of every thread, a few KiB of pytest's own beside it).
    A call blocked (on a FIFO, say) fails the test after HANG_S instead of hanging the suite. What a
    "quickly" in a test means: neither blocked nor reading more than it needs, however loaded the
    host (a wall-time bound was a measurement of the machine: it failed beside other tests)."""
    import threading

    outcome: dict = {}

    def run():
        try:
            outcome["value"] = call(*args, **kwargs)
        except BaseException as exc:  # noqa: BLE001 - handed to the test's thread
            outcome["error"] = exc
    before = bytes_read()
    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(HANG_S)
    assert not thread.is_alive(), f"{getattr(call, '__name__', call)} did not return within {HANG_S:.0f} s: blocked"
    read = bytes_read() - before
    if "error" in outcome:
        outcome["error"].bytes_read = read
        raise outcome["error"]
    return outcome["value"], read


def bytes_read() -> int:
    """Bytes this process has read so far (all its threads): /proc/self/io's rchar."""
    for line in Path("/proc/self/io").read_text().splitlines():
        if line.startswith("rchar:"):
            return int(line.split()[1])
    raise AssertionError("/proc/self/io has no rchar")


def folder_state(folder: Path) -> dict[str, bytes]:
    """Every file under folder (hidden ones too) with its content: equal before/after = nothing written."""
    if not folder.exists():
        return {}
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def path_without(tmp_path: Path, *tools: str) -> str:
    """A PATH like this host's, minus the given programs: a folder of links to everything else.

    On Debian /bin is /usr/bin, so dropping one program means shadowing the whole folder.
    """
    shadow = tmp_path / f"path-without-{'-'.join(tools)}"
    shadow.mkdir()
    for folder in ("/usr/local/bin", "/usr/bin"):
        for entry in Path(folder).iterdir():
            if entry.name not in tools and not (shadow / entry.name).exists():
                (shadow / entry.name).symlink_to(entry)
    return os.pathsep.join([str(Path(sys.executable).parent), str(shadow), "/usr/local/sbin", "/usr/sbin"])


def env_with(**changes: str) -> dict:
    return {**os.environ, **changes}


def dead_pid() -> int:
    """The pid of a process that has just exited (what a crashed copylab run leaves in a namespace name)."""
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def own_descendants(name_suffix: str) -> list[int]:
    """Pids of our own descendant processes whose executable ends with name_suffix (never anyone else's)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    found, todo = [], list(children.get(os.getpid(), []))
    while todo:
        pid = todo.pop()
        todo += children.get(pid, [])
        try:
            if os.readlink(f"/proc/{pid}/exe").endswith(name_suffix):
                found.append(pid)
        except OSError:
            continue
    return found


def our_namespaces() -> list[str]:
    return [ns for ns in copylab_namespaces() if ns.startswith(f"copylab-{os.getpid()}-")]


TINY = {"name": "tiny", "impls": ["a1", "a2"], "modes": ["throughput"], "msg_sizes": [4096], "threads": [1],
        "duration_s": 0.2, "warmup_s": 0.1, "profile": False, "topology": "loopback"}


def grid_file(tmp_path: Path, name: str = "grid.yaml", **changes) -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump({**TINY, **changes}))
    return path


def sweep(params: Path, out: Path, *extra: str, timeout: float = 300, **kw) -> subprocess.CompletedProcess:
    return run_copylab("sweep", str(params), "--out", str(out), "--no-progress", *extra, timeout=timeout, **kw)


def make_namespace(name: str) -> None:
    subprocess.run(["ip", "netns", "add", name], check=True, capture_output=True)


def descendants(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError, ValueError, IndexError):
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
                children.setdefault(ppid, []).append(int(entry.name))
    found, todo = [], list(children.get(pid, []))
    while todo:
        p = todo.pop()
        found.append(p)
        todo += children.get(p, [])
    return found


def cmdline(pid: int) -> str:
    with contextlib.suppress(OSError):
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    return ""


@contextlib.contextmanager
def small_tmpfs(path: Path, size: str):
    """A tmpfs of size mounted at path (made) for a while: a disk that fills up. Root only."""
    path.mkdir(exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], check=True)
    try:
        yield path
    finally:
        subprocess.run(["umount", str(path)], check=True)

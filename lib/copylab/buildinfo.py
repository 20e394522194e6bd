"""Which build of native/ measured a row: a fingerprint of the native sources (the Makefile with
its flags included), the compiler and the flags the environment adds.

Every row carries it (results column build_id), so points measured by two builds can be told
apart, and a resumed sweep refuses to mix them unless asked (`copylab sweep --mixed-builds`).
It is taken once per process: the binaries a process measures are the ones built before it started
measuring (the sweep builds first, in the same kernel), whatever happens to the sources later.
"""

from __future__ import annotations

import functools
import hashlib
import os
import subprocess

from .hosts import native_digest

FLAG_VARIABLES = ("CC", "CFLAGS", "CPPFLAGS", "LDFLAGS", "LDLIBS")


def compiler_version(cc: str | None = None) -> str:
    """The first line of `cc --version` ("" when there is no compiler)."""
    try:
        proc = subprocess.run([cc or os.environ.get("CC") or "cc", "--version"], capture_output=True, text=True,
                              timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    lines = proc.stdout.splitlines()
    return lines[0].strip() if proc.returncode == 0 and lines else ""


def fingerprint() -> str:
    """16 hex digits over the native sources, the compiler and the build's environment flags."""
    digest = hashlib.sha256()
    digest.update(native_digest().encode() + b"\0" + compiler_version().encode() + b"\0")
    for name in FLAG_VARIABLES:
        digest.update(f"{name}={os.environ.get(name, '')}\0".encode())
    return digest.hexdigest()[:16]


@functools.lru_cache(maxsize=1)
def build_id() -> str:
    """fingerprint(), taken the first time this process asks."""
    return fingerprint()


def version_line() -> str:
    """`copylab --version`: the package's version, the checkout's git revision and the native build."""
    from . import __version__
    from .hostmeta import git_revision

    revision = git_revision() or "unknown (not a git checkout)"
    return f"copylab {__version__}, git revision {revision}, native build {build_id()}"

"""What this process may do, from its capabilities rather than its user id.

Network namespaces need CAP_SYS_ADMIN (and CAP_NET_ADMIN for the veth pair). Root normally has
both; root with its capabilities dropped (a container, `setpriv --bounding-set=-all`) has neither,
and a non-root user can hold them (ambient capabilities). Checking the capability answers the real
question in all three cases.
"""

from __future__ import annotations

from pathlib import Path

CAP_NET_ADMIN = 12
CAP_SYS_ADMIN = 21


def effective_capabilities(status_path: str | Path = "/proc/self/status") -> int | None:
    """The CapEff bit mask of this process, or None where /proc does not tell."""
    try:
        for line in Path(status_path).read_text().splitlines():
            if line.startswith("CapEff:"):
                return int(line.split()[1], 16)
    except (OSError, ValueError, IndexError):
        return None
    return None


def can_admin_network() -> bool:
    """Whether this process can create network namespaces and veth pairs."""
    caps = effective_capabilities()
    if caps is None:
        import os

        return os.geteuid() == 0  # no /proc: fall back to the user id
    needed = (1 << CAP_SYS_ADMIN) | (1 << CAP_NET_ADMIN)
    return caps & needed == needed

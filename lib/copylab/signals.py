"""The one signal policy. Every signal that ends a program (ENDING: Ctrl-C, `kill`, a closed
terminal or dropped ssh connection, Ctrl-\\) unwinds it like Ctrl-C, so every context manager
(namespaces, processes, a sweep's books) cleans up the same way whichever came (`unwind_on_ending`,
installed by the command line); and `held()` holds them while something must run to its end
(removing namespaces, closing a sweep's books), then delivers them again, once each kind, in the
order they came.

A second Ctrl-C during the clean-up therefore cannot leave a namespace behind or a meta.json half
closed, and it is not lost either: it takes effect as soon as the clean-up is done. Outside the
main thread (where Python cannot set handlers) the block simply runs.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from typing import Iterator

ENDING = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)
HELD = ENDING


def _unwind(signum, _frame):
    raise KeyboardInterrupt


def unwind_on_ending() -> None:
    """Make every ending signal raise KeyboardInterrupt (SIGINT already does)."""
    for s in ENDING:
        if s != signal.SIGINT:
            signal.signal(s, _unwind)


def ignore_ending() -> None:
    """After the clean-up: signals that still come must not turn the exit into a traceback."""
    for s in ENDING:
        signal.signal(s, signal.SIG_IGN)


@contextlib.contextmanager
def held() -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    pending: list[int] = []
    old = {s: signal.getsignal(s) for s in HELD}
    for s in old:
        signal.signal(s, lambda signum, _frame: pending.append(signum))
    try:
        yield
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)
        for s in dict.fromkeys(pending):
            os.kill(os.getpid(), s)

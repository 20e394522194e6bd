"""The one signal guard: SIGINT and SIGTERM held while something must run to its end (removing
namespaces, closing a sweep's books), then delivered again, once each kind, in the order they came.

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

HELD = (signal.SIGINT, signal.SIGTERM)


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

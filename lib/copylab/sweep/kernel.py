"""Executing notebooks for a sweep: one warm Jupyter kernel, papermill in a worker thread, and a
watchdog in the calling thread that nothing inside papermill can bypass.

papermill blocks until the kernel answers; a kernel killed with SIGKILL can leave it waiting in
zmq_poll forever. So the call runs in a daemon thread while the caller polls every 0.2 s: a dead
kernel, a deadline passed or the caller's own check (`watch`) ends the execution: the kernel is
killed, the thread abandoned, and the caller gets the reason.
"""

from __future__ import annotations

import contextlib
import math
import shutil
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from .. import signals
from ..errors import ErrorKind

POLL_S = 0.2
START_TIMEOUT_S = 120


def check_kernel_folders() -> None:
    """The folders a notebook kernel writes before it runs a cell (IPython's profile, Jupyter's
    runtime files, both under HOME unless set apart): one that cannot be made or written (HOME=/sys,
    a read-only home) is one line naming it, before anything else is made."""
    import os
    import tempfile

    from jupyter_core.paths import jupyter_runtime_dir

    from ..errors import CopylabError
    from ..fsutil import describe_os_error

    folders = (("IPYTHONDIR", os.environ.get("IPYTHONDIR") or os.path.join(os.path.expanduser("~"), ".ipython")),
               ("JUPYTER_RUNTIME_DIR", jupyter_runtime_dir()))
    for variable, path in folders:
        try:
            os.makedirs(path, exist_ok=True)
            with tempfile.TemporaryFile(dir=path):
                pass
        except OSError as exc:
            raise CopylabError(f"{describe_os_error(exc)}: the notebook kernels keep their files there "
                               f"(HOME={os.environ.get('HOME', '')}); set HOME, or {variable}, to a folder you "
                               "can write") from None


def whole_notebook(path: Path) -> bool:
    """Is path a complete notebook (JSON to its end, with its cells), not one cut off mid-write?"""
    from ..userfiles import loads_json

    try:
        nb = loads_json(Path(path).read_bytes())
    except (OSError, ValueError, UnicodeDecodeError):
        return False
    return isinstance(nb, dict) and isinstance(nb.get("cells"), list) and "nbformat" in nb


@dataclass
class Outcome:
    kind: str = ErrorKind.NONE   # ErrorKind; "" when the notebook ran to the end
    error: str = ""              # one line

    @property
    def ok(self) -> bool:
        return not self.kind


class WarmKernel:
    """One Jupyter kernel reused for every execution: papermill then costs ~0.2 s, not ~1 s.

    It talks over Unix sockets (ipc), as `make lab`'s kernels do, not over local TCP ports that any
    user of the machine could connect to (ipykernel warns about that). The sockets and the connection
    file live in a private folder of their own under /tmp: a socket's path must stay under 108 bytes,
    whatever the sweep's folder is called."""

    def __init__(self, cwd: Path, log_path: Path, env: dict | None = None):
        self.cwd = cwd
        self.log_path = log_path
        self.env = env  # the kernel's environment (None: this process's)
        self.km = self.kc = None
        self.ipc_dir: Path | None = None

    def ensure(self) -> None:
        from jupyter_client.manager import KernelManager

        if self.alive():
            return
        self.stop()
        self.ipc_dir = Path(tempfile.mkdtemp(prefix="copylab-kernel-", dir="/tmp"))  # mode 0700
        self.km = KernelManager(kernel_name="python3", transport="ipc", ip=str(self.ipc_dir / "kernel"),
                                connection_file=str(self.ipc_dir / "kernel.json"))
        # the kernel's own chatter (transport warnings) goes to a log, not the user's terminal
        with open(self.log_path, "ab") as log:
            self.km.start_kernel(cwd=str(self.cwd), stdout=log, stderr=log,
                                 **({"env": self.env} if self.env is not None else {}))
        self.kc = self.km.client()
        self.kc.start_channels()
        self.kc.wait_for_ready(timeout=START_TIMEOUT_S)

    def alive(self) -> bool:
        return self.km is not None and self.km.is_alive()

    def pid(self) -> int | None:
        provisioner = getattr(self.km, "provisioner", None)
        return getattr(getattr(provisioner, "process", None), "pid", None)

    def stop(self) -> None:
        """Kill the kernel now (no graceful shutdown request: it may not answer). Ending signals wait
        until it is done: a second SIGTERM inside jupyter_client's event loop left its shutdown task
        half done, and asyncio printed the task's traceback at exit ("Task exception was never
        retrieved", seen with three SIGTERMs under a loaded make test)."""
        with signals.held():
            self._stop()

    def _stop(self) -> None:
        if self.kc is not None:
            with contextlib.suppress(Exception):
                self.kc.stop_channels()
        if self.km is not None:
            with contextlib.suppress(Exception):
                self.km.shutdown_kernel(now=True)
        if self.ipc_dir is not None:
            shutil.rmtree(self.ipc_dir, ignore_errors=True)
        self.km = self.kc = self.ipc_dir = None


def execute(notebook: Path, output: Path, parameters: dict, kernel: WarmKernel, *, timeout_s: float,
            cwd: Path, watch=None) -> Outcome:
    """Run notebook with papermill on kernel, writing output when complete.

    watch(), if given, is called every POLL_S seconds from this thread and may return an Outcome
    that stops the execution (a point past its deadline); timeout_s bounds the whole execution."""
    kernel.ensure()
    result: dict = {}
    worker = threading.Thread(target=_papermill, daemon=True, name="papermill",
                              args=(notebook, output, parameters, kernel, timeout_s, cwd, result))
    deadline = time.monotonic() + timeout_s + 30
    worker.start()
    try:
        while worker.is_alive():
            worker.join(POLL_S)
            if not worker.is_alive():
                break
            stop = watch() if watch else None
            if stop is None and not kernel.alive():
                stop = Outcome(ErrorKind.KERNEL_DIED, "the notebook's kernel died")
            if stop is None and time.monotonic() > deadline:
                stop = Outcome(ErrorKind.TIMEOUT, f"the notebook did not finish within {timeout_s + 30:.0f} s")
            if stop is not None:
                kernel.stop()
                worker.join(2.0)  # papermill may notice; if it does not, the daemon thread is left behind
                return stop
    except BaseException:
        kernel.stop()  # Ctrl-C or SIGTERM: the kernel goes now, the caller cleans up the rest
        raise
    if watch:
        final = watch()
        if final is not None:
            return final
    return result.get("outcome", Outcome(ErrorKind.NOTEBOOK, "the notebook run ended without a result"))


def _papermill(notebook, output, parameters, kernel, timeout_s, cwd, result) -> None:
    import papermill as pm
    from nbclient.exceptions import CellTimeoutError, DeadKernelError

    try:
        pm.execute_notebook(str(notebook), str(output), parameters=parameters, kernel_name="python3",
                            progress_bar=False, execution_timeout=math.ceil(timeout_s), cwd=str(cwd),
                            request_save_on_cell_execute=False,  # written once, when complete
                            km=kernel.km, kc=kernel.kc)
        result["outcome"] = Outcome()
    except pm.PapermillExecutionError as exc:
        result["outcome"] = Outcome(ErrorKind.NOTEBOOK,
                                    f"notebook cell {exc.exec_count} raised {exc.ename}: {exc.evalue}".splitlines()[0])
    except CellTimeoutError:
        result["outcome"] = Outcome(ErrorKind.TIMEOUT, f"a notebook cell ran past {timeout_s:.0f} s")
    except DeadKernelError:
        result["outcome"] = Outcome(ErrorKind.KERNEL_DIED, "the notebook's kernel died")
    except Exception as exc:  # anything else papermill raises ends this execution, not the sweep
        result["outcome"] = Outcome(ErrorKind.NOTEBOOK, f"{type(exc).__name__}: {exc}".splitlines()[0])

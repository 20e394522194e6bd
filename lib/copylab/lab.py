"""`make lab` / `copylab lab [RESULTS_DIR]`: JupyterLab on a sweep folder, with working copies of the notebooks.

The notebooks in notebooks/ are templates (tracked by git, executed by papermill) and the sweep's
notebooks are records (what measured the results, what the report was made from). Neither is opened
for writing here:

- `prepare()` copies the three templates into RESULTS_DIR/work/ (once: a copy that exists is the
  user's work and stays), the analysis one with its parameters set to this sweep and to work/ as its
  output folder, so its answers.json lands in work/ and the report's stays as `copylab report` wrote it;
- JupyterLab's root is RESULTS_DIR and it opens work/analysis.ipynb;
- `SweepContents` shows the sweep's own files as read-only (JupyterLab then offers "Save As" and skips
  autosave) and refuses to write, rename, delete or restore them, or to create anything among them
  (runs/, profiles/, the sweep's names), whatever path leads there; work/ and new files of other
  names are the user's. A notebook it saves keeps each explorer as the chart it showed, with a line
  saying how to make it live, and each figure with its PNG (widgetsnapshot.for_saving): reopened
  without the kernel that held the widgets, it shows figures, not dead controls, and is not marked
  changed by opening it.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import quote, urlsplit

from jupyter_server.services.contents.largefilemanager import AsyncLargeFileManager
from tornado.web import HTTPError

from .errors import CopylabError
from .fsutil import shown
from .paths import NATIVE_DIR, NOTEBOOKS_DIR
from .widgetsnapshot import for_saving

WORK = "work"
TEMPLATES = ("analysis.ipynb", "experiment.ipynb", "build.ipynb")
FIRST_PORT = 8888
JUPYTER_CONFIG = Path(__file__).parent / "jupyter_config"
LAB_SETTINGS = JUPYTER_CONFIG / "lab_settings"
# what a sweep and its report write at the top of the folder (docs/contracts.md, "Sweep folder"), and
# the folders of per-point records
SWEEP_FILES = {"results.csv", "profiles.csv", "meta.json", "answers.json", "perf_plan.json", "sweep.log",
               "kernel.log", "build.ipynb", "analysis.ipynb", "analysis.failed.ipynb", "report.html",
               "report.pdf", "report.latex.log"}
SWEEP_FOLDERS = {"runs", "profiles"}
# How long `copylab lab` waits for the server's first answer before saying it is slow. Not a limit:
# it keeps waiting, and prints the line to open when the server answers. JupyterLab answered 11 s
# after it was started on the 2-vCPU VM this was built on, most of it importing its extensions; five
# times that leaves room for a slower disk or a busier machine before the user is told anything.
ANSWER_PATIENCE = 60.0
POLL_INTERVAL = 0.25  # s between two requests: the line comes at most this late
POLL_TIMEOUT = 5.0  # s one request may take (a server that accepted the connection but is busy starting)


def prepare(results_dir) -> Path:
    """Make RESULTS_DIR/work/ with the working copies (existing ones are kept); return the folder."""
    results_dir = Path(results_dir).resolve()
    if not (results_dir / "results.csv").is_file():
        raise CopylabError(f"{results_dir} has no results.csv: run `make report` first, "
                           "or give a sweep folder (make lab RESULTS=output/<name>)")
    work = results_dir / WORK
    try:
        work.mkdir(exist_ok=True)
        parameters = {"analysis.ipynb": {"results_dir": str(results_dir), "output_dir": str(work)},
                      "build.ipynb": {"native_dir": str(NATIVE_DIR)}}
        for name in TEMPLATES:
            if not (work / name).exists():
                _working_copy(NOTEBOOKS_DIR / name, work / name, parameters.get(name, {}))
    except PermissionError as exc:
        raise CopylabError(f"cannot write {exc.filename or work}: run make lab as the user who owns "
                           f"{results_dir} (it was made by uid {results_dir.stat().st_uid})") from exc
    return work


def _working_copy(template: Path, dest: Path, parameters: dict) -> None:
    """The template with papermill's injected-parameters cell, marked as a working copy."""
    import nbformat
    import nbformat.sign
    from papermill.iorw import load_notebook_node
    from papermill.parameterize import parameterize_notebook

    nb = load_notebook_node(str(template))  # as papermill reads a template (every cell gets its tags)
    if parameters:
        nb = parameterize_notebook(nb, parameters, comment="Parameters of this working copy (make lab)")
    nb.metadata["copylab"] = {"working_copy_of": f"notebooks/{template.name}"}
    for cell in nb.cells:
        cell.metadata.pop("papermill", None)  # papermill's bookkeeping, empty until it executes one
    # trusted as the project's own templates are (JupyterLab warns about every unsigned notebook)
    nbformat.sign.NotebookNotary().sign(nb)
    tmp = dest.with_name(f".{dest.name}.tmp")
    nbformat.write(nb, tmp)
    tmp.replace(dest)


def free_port(first: int = FIRST_PORT, tries: int = 50) -> int:
    """The first port from `first` on that nobody listens on (JupyterLab's own habit, made explicit
    so the URL printed is the one it serves)."""
    for port in range(first, first + tries):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise CopylabError(f"no free port in {first}-{first + tries - 1} for JupyterLab")


def command(results_dir, port: int, token: str, open_browser: bool) -> tuple[list[str], dict, str]:
    """(argv, environment, URL) of the JupyterLab server for a prepared sweep folder."""
    import sys

    results_dir = Path(results_dir).resolve()
    page = f"/lab/tree/{WORK}/analysis.ipynb"
    argv = [sys.executable, "-m", "jupyterlab",  # this environment's, whatever PATH holds
            f"--ServerApp.root_dir={results_dir}",
            f"--ServerApp.default_url={page}",
            "--ServerApp.ip=localhost", f"--ServerApp.port={port}", "--ServerApp.port_retries=0",
            f"--ServerApp.open_browser={open_browser}",
            f"--ServerApp.contents_manager_class={__name__}.SweepContents",
            # no requests to the outside: no news feed, no update check
            "--LabApp.news_url=None", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
            # quiet: the one line start() prints is what to open; warnings and errors still show
            "--ServerApp.log_level=WARN", "--LabApp.log_level=WARN",
            # the kernel over a Unix socket in Jupyter's runtime folder rather than local TCP
            "--KernelManager.transport=ipc",
            # no terminals: exploring a results folder needs notebooks, not a shell (as root, a root
            # shell past the guard on the sweep's files, for anyone holding the token)
            "--ServerApp.terminals_enabled=False",
            # JupyterLab's settings defaults from the package (overrides.json): widget state saved
            # with the notebook, so the explorer is drawn when the notebook is opened again
            f"--LabApp.app_settings_dir={LAB_SETTINGS}"]
    if os.geteuid() == 0:  # root is who runs the sweeps; Jupyter refuses it unless told
        argv.append("--allow-root")
    # the token in the environment, not on the command line where `ps` shows it to everyone; and
    # jupyter_config/ first on the config path: its page_config.json turns off the announcements
    # plugin, which asks every new user about fetching news from the internet
    config_path = os.pathsep.join(p for p in (str(JUPYTER_CONFIG), os.environ.get("JUPYTER_CONFIG_PATH")) if p)
    env = dict(os.environ, JUPYTER_TOKEN=token, JUPYTER_CONFIG_PATH=config_path)
    return argv, env, f"http://localhost:{port}{quote(page)}?token={token}"


def start(results_dir, port: int | None = None, open_browser: bool | None = None,
          patience: float = ANSWER_PATIENCE) -> int:
    """Prepare the working copies, start JupyterLab, print the one line saying what to open once the
    server answers, and wait for it to end (its exit status is returned)."""
    results_dir = Path(results_dir)
    work = prepare(results_dir)
    if open_browser is None:  # a browser only where one can show: a graphical session
        open_browser = bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))
    argv, env, url = command(results_dir, port or free_port(), secrets.token_urlsafe(24), open_browser)
    line = (f"copylab lab: open {url} : {shown(work / 'analysis.ipynb')}, your copy of the analysis of "
            f"{shown(results_dir)} (the sweep's own files are read-only; Ctrl-C twice stops JupyterLab)")
    return serve(argv, env, url, line, patience)


def serve(argv: list[str], env: dict, url: str, line: str, patience: float = ANSWER_PATIENCE) -> int:
    """Run the server `argv`; print `line` once `url` answers; say so in one line if it has not
    answered after `patience` seconds (and keep waiting: a slow machine still gets its line).

    Ctrl-C in the terminal reaches JupyterLab itself (the same process group), which asks before it
    stops; SIGTERM and SIGHUP sent to copylab are passed on to it."""
    proc = subprocess.Popen(argv, env=env)
    passed_on = {sig: signal.signal(sig, lambda signum, frame: proc.send_signal(signum))
                  for sig in (signal.SIGTERM, signal.SIGHUP)}
    previous_int = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        status = url.split("/lab/")[0] + "/api/status?" + urlsplit(url).query
        started, said_slow = time.monotonic(), False
        while proc.poll() is None:
            if answers(status):
                print(line, flush=True)
                break
            if not said_slow and time.monotonic() - started > patience:
                print(f"copylab lab: JupyterLab has not answered within {patience:g} s (its messages are "
                      f"above); still waiting, the line to open follows when it does", flush=True)
                said_slow = True
            time.sleep(POLL_INTERVAL)
        code = proc.wait()
    finally:
        signal.signal(signal.SIGINT, previous_int)
        for sig, handler in passed_on.items():
            signal.signal(sig, handler)
    if code not in (0, -signal.SIGINT, -signal.SIGTERM, -signal.SIGHUP):
        raise CopylabError(f"JupyterLab exited with status {code} (its messages are above)")
    return 0


def answers(url: str) -> bool:
    """Whether the server at `url` answers with 200 now."""
    try:
        with urllib.request.urlopen(url, timeout=POLL_TIMEOUT) as reply:
            return reply.status == 200
    except (urllib.error.URLError, OSError, ValueError):
        return False


# ---------------------------------------------------------------------------------------------
# the server side: what JupyterLab may overwrite

def _sweep_record(rel: str) -> bool:
    """Whether a file at `rel` (normalised, relative to the sweep folder) belongs to the sweep: the
    folder itself, its data, report and executed notebooks at the top, anything under runs/ or
    profiles/, and the sweep's own hidden entries at the top (.pending, .work, its lock)."""
    parts = Path(rel).parts
    if not parts or rel in (".", ""):
        return True
    top = parts[0]
    return (top in SWEEP_FOLDERS or (len(parts) == 1 and top in SWEEP_FILES)
            or (top.startswith(".") and top != CHECKPOINTS))


CHECKPOINTS = ".ipynb_checkpoints"  # where JupyterLab keeps its checkpoints of the files beside it


class SweepContents(AsyncLargeFileManager):
    """JupyterLab's file manager, with the sweep's files read-only (see the module's docstring).

    Every operation is decided on the files it touches, not on the path as the request spelt it:
    the URL is already decoded (%2e%2e, %2F) when it gets here, the path is normalised (work/../x is
    x) and links are followed (work/link.csv -> ../results.csv is results.csv), and both the link's
    own place and where it leads are checked. A path leading out of the sweep folder is refused too.
    Notebooks are saved as widgetsnapshot.for_saving makes them: explorers as charts, every figure with
    its PNG (made in a thread: the first takes seconds, and the server answers other requests meanwhile).
    """

    def _places(self, path: str) -> tuple[str, str]:
        """(where the entry itself is, where it leads), relative to the sweep folder's real path;
        '..'-prefixed when outside it."""
        root = os.path.realpath(self.root_dir)
        os_path = self._get_os_path(path.strip("/"))  # 404 for a path out of the root, as JupyterLab does
        own = os.path.join(os.path.realpath(os.path.dirname(os_path)), os.path.basename(os_path))
        return os.path.relpath(own, root), os.path.relpath(os.path.realpath(os_path), root)

    def _protected(self, path: str) -> bool:
        return any(rel == ".." or rel.startswith("../") or _sweep_record(rel) for rel in self._places(path))

    def _guard(self, path: str, what: str) -> None:
        if self._protected(path):
            raise HTTPError(403, _refusal(path, what))

    async def get(self, path, content=True, type=None, format=None, **kwargs):
        model = await super().get(path, content=content, type=type, format=format, **kwargs)
        if model.get("type") != "directory" and self._protected(path):
            model["writable"] = False
        if model.get("type") == "directory" and isinstance(model.get("content"), list):
            for entry in model["content"]:  # a listing shows what a save would do
                if entry.get("type") != "directory" and self._protected(entry["path"]):
                    entry["writable"] = False
        return model

    # save covers PUT (writes, uploads, new files and folders), new_untitled, new and copying a file
    async def save(self, model, path=""):
        self._guard(path, "written")
        if model.get("type") == "notebook" and isinstance(model.get("content"), dict):
            await asyncio.to_thread(for_saving, model["content"])
        return await super().save(model, path)

    async def _copy_dir(self, from_path, to_path_original, to_name, to_path):
        self._guard(to_path, "written")
        return await super()._copy_dir(from_path=from_path, to_path_original=to_path_original, to_name=to_name,
                                       to_path=to_path)

    async def delete(self, path):
        self._guard(path, "deleted")
        return await super().delete(path)

    async def rename(self, old_path, new_path):
        self._guard(old_path, "renamed")
        self._guard(new_path, "replaced")
        return await super().rename(old_path, new_path)

    async def create_checkpoint(self, path):
        self._guard(path, "checkpointed")
        return await super().create_checkpoint(path)

    async def restore_checkpoint(self, checkpoint_id, path):
        self._guard(path, "restored")
        return await super().restore_checkpoint(checkpoint_id, path)

    async def delete_checkpoint(self, checkpoint_id, path):
        self._guard(path, "changed")
        return await super().delete_checkpoint(checkpoint_id, path)


def _refusal(path: str, what: str) -> str:
    return (f"{path.strip('/')} is (or leads to) a file of the sweep (a record of what was measured and "
            f"reported) or outside its folder, and is not {what} here: your own work goes under {WORK}/ "
            "(File > Save Notebook As...)")

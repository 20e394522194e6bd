"""`make lab` / `copylab lab`: the working copies, the command JupyterLab is started with, and which
files JupyterLab may overwrite. The browser side is tests/test_lab_browser.py."""

from __future__ import annotations

import asyncio
import json
import os

import nbformat
import pytest
from tornado.web import HTTPError

from conftest import worker_port
from copylab import lab
from copylab.errors import CopylabError
from copylab.paths import NOTEBOOKS_DIR
from data.analysis import synthetic


@pytest.fixture
def sweep(tmp_path):
    folder = synthetic.write_sweep(tmp_path / "sweep", reps=1)
    # what `copylab report` and the sweep leave besides the data: executed notebooks (records)
    record = nbformat.v4.new_notebook(metadata={"papermill": {"parameters": {}}})
    for name in ("analysis.ipynb", "build.ipynb", "runs/group-s1-0001.ipynb"):
        (folder / name).parent.mkdir(exist_ok=True)
        nbformat.write(record, folder / name)
    (folder / "answers.json").write_text("{}\n")
    return folder


def test_working_copies_point_at_the_sweep_and_are_kept(sweep):
    work = lab.prepare(sweep)
    assert work == sweep / "work" and sorted(p.name for p in work.iterdir()) == sorted(lab.TEMPLATES)
    nb = nbformat.read(work / "analysis.ipynb", as_version=4)
    injected = [c for c in nb.cells if "injected-parameters" in c.metadata.get("tags", [])]
    assert len(injected) == 1
    assert f'results_dir = "{sweep}"' in injected[0].source and f'output_dir = "{work}"' in injected[0].source
    assert nb.metadata["copylab"] == {"working_copy_of": "notebooks/analysis.ipynb"}
    # the rest of the notebook is the template's, cell for cell
    template = nbformat.read(NOTEBOOKS_DIR / "analysis.ipynb", as_version=4)
    assert [c.source for c in nb.cells if c is not injected[0]] == [c.source for c in template.cells]
    build = nbformat.read(work / "build.ipynb", as_version=4)
    assert any(f'native_dir = "{lab.NATIVE_DIR}"' in c.source for c in build.cells)
    # a second `make lab` keeps the user's work
    (work / "analysis.ipynb").write_text((work / "analysis.ipynb").read_text().replace("Parameters", "Mine"))
    lab.prepare(sweep)
    assert "Mine" in (work / "analysis.ipynb").read_text()


def test_a_folder_without_results_is_one_line_saying_what_to_do(tmp_path):
    with pytest.raises(CopylabError, match=r"has no results.csv: run `make report` first"):
        lab.prepare(tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_allow_root_only_as_root(sweep, monkeypatch):
    for uid, allowed in ((0, True), (1000, False)):
        monkeypatch.setattr(lab.os, "geteuid", lambda uid=uid: uid)
        argv, env, url = lab.command(sweep, 8899, "t0ken", open_browser=False)
        assert ("--allow-root" in argv) is allowed
    assert url == "http://localhost:8899/lab/tree/work/analysis.ipynb?token=t0ken"
    # the token travels in the environment, not where `ps` shows it
    assert env["JUPYTER_TOKEN"] == "t0ken" and not any("t0ken" in a for a in argv)
    assert f"--ServerApp.root_dir={sweep}" in argv and "--ServerApp.open_browser=False" in argv
    assert env["JUPYTER_CONFIG_PATH"].split(os.pathsep)[0] == str(lab.JUPYTER_CONFIG)
    page_config = json.loads((lab.JUPYTER_CONFIG / "labconfig" / "page_config.json").read_text())
    assert page_config["disabledExtensions"] == {"@jupyterlab/apputils-extension:announcements": True}


def test_free_port_skips_a_port_in_use():
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert lab.free_port(port, tries=5) != port


def test_the_sweeps_files_are_read_only_and_work_is_the_users(sweep):
    lab.prepare(sweep)
    contents = lab.SweepContents(root_dir=str(sweep))
    run = asyncio.run

    def writable(path):
        return run(contents.get(path, content=False))["writable"]

    for path in ("results.csv", "meta.json", "answers.json", "analysis.ipynb", "build.ipynb",
                 "runs/group-s1-0001.ipynb"):
        assert writable(path) is False, path
    assert writable("work/analysis.ipynb") is True
    listing = {m["name"]: m["writable"] for m in run(contents.get("", content=True))["content"]}
    assert listing["results.csv"] is False and listing["work"] is True

    record = run(contents.get("analysis.ipynb", content=True))
    before = (sweep / "analysis.ipynb").read_bytes()
    with pytest.raises(HTTPError) as refused:
        run(contents.save(dict(record, content=record["content"]), "analysis.ipynb"))
    assert refused.value.status_code == 403 and "work/" in refused.value.log_message
    assert (sweep / "analysis.ipynb").read_bytes() == before
    for act in (lambda: contents.delete("results.csv"), lambda: contents.rename("runs", "old-runs")):
        with pytest.raises(HTTPError):
            run(act())
    assert (sweep / "results.csv").is_file() and (sweep / "runs").is_dir()

    # saving the working copy, "Save As" to a new name, and a new notebook of the user's are fine
    copy = run(contents.get("work/analysis.ipynb", content=True))
    run(contents.save(dict(copy), "work/analysis.ipynb"))
    for _ in range(2):
        run(contents.save(dict(record), "analysis-mine.ipynb"))
    assert writable("analysis-mine.ipynb") is True
    run(contents.save({"type": "notebook", "content": nbformat.v4.new_notebook()}, "Untitled.ipynb"))
    run(contents.save({"type": "notebook", "content": nbformat.v4.new_notebook()}, "Untitled.ipynb"))
    assert writable("Untitled.ipynb") is True


# a stand-in for JupyterLab: listens after DELAY seconds (writing a mark first), answers /api/status
# with 200, exits 0 a moment after its first 200 (or after LIFE seconds). It lived a fixed second
# once listening: a poll that a loaded host delayed past that second found it gone, and no line came
STAND_IN = """
import http.server, pathlib, sys, threading, time
delay, life, port, mark = float(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]), pathlib.Path(sys.argv[4])
time.sleep(delay)
class Status(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        ok = self.path.startswith("/api/status?token=t0ken")
        self.send_response(200 if ok else 404)
        self.end_headers()
        if ok:
            threading.Timer(0.2, server.shutdown).start()
    def log_message(self, *args):
        pass
server = http.server.HTTPServer(("127.0.0.1", port), Status)
mark.write_text("listening")
bound = threading.Timer(life, server.shutdown)
bound.daemon = True  # the process ends with its server, not at the bound
bound.start()
server.serve_forever()
"""


def _serve_stand_in(tmp_path, monkeypatch, delay: float, patience: float, code: str = STAND_IN):
    """lab.serve() on the stand-in; returns what it printed, each line with whether the stand-in was
    listening at that moment."""
    import sys

    port = worker_port()
    mark = tmp_path / "mark"
    printed = []
    monkeypatch.setattr(lab, "print", lambda text, **kw: printed.append((text, mark.exists())), raising=False)
    argv = [sys.executable, "-c", code, str(delay), "60", str(port), str(mark)]
    url = f"http://localhost:{port}/lab/tree/work/analysis.ipynb?token=t0ken"
    result = lab.serve(argv, dict(os.environ), url, "the line to open", patience=patience)
    return result, printed


@pytest.mark.slow
def test_the_line_to_open_comes_once_the_server_answers(tmp_path, monkeypatch):
    result, printed = _serve_stand_in(tmp_path, monkeypatch, delay=1.0, patience=30)
    assert result == 0 and printed == [("the line to open", True)]


@pytest.mark.slow
def test_a_server_slower_than_the_patience_is_said_in_one_line_then_the_line_follows(tmp_path, monkeypatch):
    result, printed = _serve_stand_in(tmp_path, monkeypatch, delay=1.5, patience=0.3)
    assert result == 0 and len(printed) == 2
    (slow, listening), (line, answered) = printed
    assert not listening and "has not answered within 0.3 s" in slow and "\n" not in slow
    assert line == "the line to open" and answered


def test_a_server_that_exits_is_one_line_error_and_no_line_to_open(tmp_path, monkeypatch):
    with pytest.raises(CopylabError, match=r"JupyterLab exited with status 3"):
        _serve_stand_in(tmp_path, monkeypatch, delay=0, patience=30, code="import sys; sys.exit(3)")


def test_jupyterlab_saves_widget_state_with_the_notebook(sweep):
    """JupyterLab sends the widgets' state with the notebook it saves, so that the save can keep each
    explorer as the chart it showed (test below; tests/test_lab_browser.py reopens it after a restart):
    make lab's JupyterLab takes its settings' defaults from the package."""
    argv, _, _ = lab.command(sweep, 8899, "t0ken", open_browser=False)
    assert f"--LabApp.app_settings_dir={lab.LAB_SETTINGS}" in argv
    overrides = json.loads((lab.LAB_SETTINGS / "overrides.json").read_text())
    assert overrides["@jupyter-widgets/jupyterlab-manager:plugin"] == {"saveState": True}


@pytest.mark.slow
def test_a_saved_notebook_keeps_the_explorer_as_its_chart_and_a_line_on_making_it_live(sweep):
    """What JupyterLab sends on save (widget outputs, their state in the metadata) is written with each
    explorer as the figure it showed (plotly's own output with its PNG, no pixel width) and one line saying
    how to make it live; no widget state is left for a reopened notebook to restore as dead controls, and
    no figure without the PNG JupyterLab's plotly renderer would add on opening it."""
    import base64
    from test_widgetsnapshot import FIGURE, _notebook

    from copylab.widgetsnapshot import NOTE, PLOTLY_JSON, WIDGET_VIEW

    lab.prepare(sweep)
    contents = lab.SweepContents(root_dir=str(sweep))
    sent = json.loads(nbformat.writes(_notebook()))
    asyncio.run(contents.save({"type": "notebook", "format": "json", "content": sent}, "work/mine.ipynb"))
    saved = json.loads((sweep / "work" / "mine.ipynb").read_text())
    outputs = saved["cells"][1]["outputs"]
    assert [WIDGET_VIEW in o["data"] for o in outputs] == [False, False] and "widgets" not in saved["metadata"]
    figure = outputs[0]["data"][PLOTLY_JSON]
    assert figure["data"] == FIGURE["_widget_data"] and "width" not in figure["layout"]
    assert figure["layout"]["title"] == FIGURE["_widget_layout"]["title"] and figure["config"]["responsive"]
    assert base64.b64decode(outputs[0]["data"]["image/png"]).startswith(b"\x89PNG")
    assert "".join(outputs[1]["data"]["text/plain"]) == NOTE and "Run > Run All Cells" in NOTE and "\n" not in NOTE


def test_make_lab_passes_its_port():
    import subprocess

    from conftest import ROOT

    lines = subprocess.run(["make", "-n", "-s", "lab", "PORT=9123", "RESULTS=output/x"], cwd=ROOT, capture_output=True,
                           text=True, check=True).stdout.strip().splitlines()
    assert lines[-1].endswith("-m copylab lab 'output/x' --port '9123'"), lines
    plain = subprocess.run(["make", "-n", "-s", "lab"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    assert "--port" not in plain.strip().splitlines()[-1]


def test_the_labs_server_turns_off_the_websocket_keepalive_whose_settings_tornado_warns_about():
    """jupyter_server's websockets read ws_ping_interval/ws_ping_timeout in ms for their own keep-alive, and
    Tornado reads the same properties in seconds and warns that 90000 > 30000 (jupyter_config/
    jupyter_server_config.py says why 0 is the only quiet setting); tests/test_lab_browser.py checks that
    the server's log stays free of the warning once a kernel is connected."""
    from traitlets.config.loader import PyFileConfigLoader

    config = PyFileConfigLoader("jupyter_server_config.py", path=str(lab.JUPYTER_CONFIG)).load_config()
    assert config.ServerApp.tornado_settings == {"ws_ping_interval": 0}
    assert config.HTMLExporter.template_name == "copylab_offline"  # and nbconvert's settings, loaded beside them

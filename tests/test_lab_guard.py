"""The lab's guard against JupyterLab's real REST API: `copylab lab`'s server (started as it starts
it, with its token), asked with every spelling of a path that leads to a file of the sweep. The
guard decides on the file a request resolves to: the URL decoded (%2e%2e, %2F), the path
normalised, links followed; for every contents operation. The requests go out byte for byte as
written here (http.client: nothing normalises them, as `curl --path-as-is`)."""

from __future__ import annotations

import hashlib
import http.client
import json
import os
import secrets
import subprocess
import time
from pathlib import Path

import nbformat
import pytest

from conftest import ROOT, worker_port
from copylab import lab
from data.analysis import synthetic

# a JupyterLab server starts (about 5 s here): once, with the module's tests on one worker
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("lab_guard")]

FILE = {"type": "file", "format": "text", "content": "planted\n"}


@pytest.fixture(scope="module")
def sweep(tmp_path_factory) -> Path:
    folder = synthetic.write_sweep(tmp_path_factory.mktemp("guard") / "sweep", reps=1)
    record = nbformat.v4.new_notebook(metadata={"papermill": {"parameters": {}}})
    for name in ("analysis.ipynb", "runs/group-s1-0001.ipynb"):
        (folder / name).parent.mkdir(exist_ok=True)
        nbformat.write(record, folder / name)
    (folder / "runs" / "a1-throughput-1024-1-0.json").write_text("{}\n")
    (folder / "profiles").mkdir()
    for name in ("answers.json", "report.html"):
        (folder / name).write_text("{}\n")
    lab.prepare(folder)
    return folder


@pytest.fixture(scope="module")
def server(sweep, tmp_path_factory):
    """JupyterLab as `copylab lab` starts it (lab.command), answering on its port; yields
    (port, token)."""
    home = tmp_path_factory.mktemp("jupyter-home")
    port, token = worker_port(), secrets.token_urlsafe(16)
    argv, env, _ = lab.command(sweep, port, token, open_browser=False)
    env.update(JUPYTER_CONFIG_DIR=str(home / "config"), JUPYTER_DATA_DIR=str(home / "data"),
               JUPYTER_RUNTIME_DIR=str(home / "runtime"), IPYTHONDIR=str(home / "ipython"))
    with open(home / "stderr", "w") as stderr:
        proc = subprocess.Popen(argv, env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=stderr,
                                stdin=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while True:
            assert proc.poll() is None, (home / "stderr").read_text()[-2000:]
            try:
                if request(port, token, "GET", "/api/status")[0] == 200:
                    break
            except OSError:
                pass
            assert time.monotonic() < deadline, "JupyterLab did not answer within 120 s"
            time.sleep(0.25)
        yield port, token
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def request(port: int, token: str, method: str, path: str, body=None) -> tuple[int, dict]:
    """One request with the path sent exactly as given."""
    conn = http.client.HTTPConnection("localhost", port, timeout=30)
    try:
        conn.request(method, f"{path}?token={token}", body=json.dumps(body) if body is not None else None,
                     headers={"Content-Type": "application/json"})
        response = conn.getresponse()
        data = response.read()
        try:
            return response.status, (json.loads(data) if data else {})
        except ValueError:  # a page of Tornado's own (a redirect, an error outside the API)
            return response.status, {"message": data.decode(errors="replace")[:200]}
    finally:
        conn.close()


def state(folder: Path) -> dict:
    """Every entry under the sweep folder but work/ (kind and contents), links as links."""
    found = {}
    for dirpath, dirnames, filenames in os.walk(folder):
        rel = Path(dirpath).relative_to(folder)
        if rel.parts[:1] == (lab.WORK,):
            continue
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            if path.is_symlink():
                found[str(rel / name)] = ("link", os.readlink(path))
            elif path.is_file():
                found[str(rel / name)] = ("file", hashlib.sha256(path.read_bytes()).hexdigest())
            else:
                found[str(rel / name)] = ("folder",)
    return found


@pytest.fixture
def api(server, sweep):
    port, token = server
    before = state(sweep)
    yield lambda method, path, body=None: request(port, token, method, path, body)
    # whatever a test tried, the sweep's own files are as they were, and nothing was planted among them
    assert state(sweep) == before


@pytest.fixture
def links(sweep):
    """Links the user made in work/ (a terminal, `ln -s`) to the sweep's files and folders."""
    work = sweep / lab.WORK
    made = {"link.csv": "../results.csv", "meta-link.json": "../meta.json", "runs-link": "../runs",
            "profiles-link": "../profiles", "outside.txt": "/etc/hostname"}
    for name, target in made.items():
        (work / name).symlink_to(target)
    yield made
    for name in made:
        (work / name).unlink()


REFUSED_WRITES = [
    "work/%2e%2e/results.csv",             # curl --path-as-is
    "work/%2E%2E/results.csv",
    "work%2F..%2Fmeta.json",
    "work%2f%2e%2e%2fmeta.json",
    "work/..%2Fanswers.json",
    "work/./../report.html",
    "work/sub/../../results.csv",
    "results.csv",
    "runs/planted.json",                   # new files among the per-point records
    "runs/a1-throughput-1024-1-0.json",
    "work/%2e%2e/runs/planted.json",
    "profiles/planted.srv.folded.gz",
    "report.pdf",                          # a sweep name that does not exist yet: a planted report
]


@pytest.mark.parametrize("path", REFUSED_WRITES)
def test_a_write_to_a_sweep_file_is_refused_however_the_path_is_spelt(api, path):
    status, body = api("PUT", f"/api/contents/{path}", FILE)
    assert status == 403, (status, body)
    assert f"{lab.WORK}/" in body["message"]


@pytest.mark.parametrize("path", ["work/link.csv", "work/meta-link.json", "work/runs-link/planted.json",
                                  "work/runs-link/a1-throughput-1024-1-0.json", "work/profiles-link/x.folded.gz",
                                  "work/outside.txt"])
def test_a_write_through_a_link_is_refused(api, links, path):
    assert api("PUT", f"/api/contents/{path}", FILE)[0] == 403


@pytest.mark.parametrize("old, new", [("work/link.csv", "results.csv"), ("work/build.ipynb", "results.csv"),
                                      ("work/build.ipynb", "work/../meta.json"),
                                      ("work/build.ipynb", "runs/group-s1-0002.ipynb"),
                                      ("work/build.ipynb", "work/runs-link/x.ipynb"),
                                      ("work/link.csv", "work/mine.csv"),
                                      ("results.csv", "work/results.csv"), ("runs", "work/runs"),
                                      ("work/%2e%2e/meta.json", "work/meta.json"),
                                      ("work/build.ipynb", "work/runs-link/../../runs/x.ipynb")])
def test_a_rename_to_or_from_a_sweep_file_is_refused(api, links, sweep, old, new):
    status, body = api("PATCH", f"/api/contents/{old}", {"path": new})
    assert status == 403, (status, body)
    assert (sweep / "work" / "build.ipynb").is_file()


@pytest.mark.parametrize("path", ["results.csv", "work/%2e%2e/results.csv", "work%2F..%2Fmeta.json", "runs",
                                  "runs/a1-throughput-1024-1-0.json", "profiles", "work/link.csv"])
def test_a_delete_of_a_sweep_file_is_refused(api, links, path):
    assert api("DELETE", f"/api/contents/{path}")[0] == 403


@pytest.mark.parametrize("folder, body", [
    ("runs", {"type": "notebook"}), ("runs", {"type": "directory"}), ("runs", {"type": "file", "ext": ".json"}),
    ("profiles", {"type": "file"}), ("work/%2e%2e/runs", {"type": "notebook"}), ("work/runs-link", {"type": "file"}),
    ("runs", {"copy_from": "work/build.ipynb"}), ("work%2F..%2Fprofiles", {"copy_from": "work/analysis.ipynb"}),
    ("runs", {"copy_from": "work"}),
])
def test_nothing_new_is_made_among_the_records(api, links, folder, body):
    assert api("POST", f"/api/contents/{folder}", body)[0] == 403


@pytest.mark.parametrize("path", ["results.csv", "analysis.ipynb", "work/%2e%2e/analysis.ipynb",
                                  "runs/group-s1-0001.ipynb", "work/link.csv"])
def test_checkpoints_of_a_sweep_file_are_refused(api, links, path):
    assert api("POST", f"/api/contents/{path}/checkpoints")[0] == 403
    assert api("POST", f"/api/contents/{path}/checkpoints/checkpoint")[0] == 403
    assert api("DELETE", f"/api/contents/{path}/checkpoints/checkpoint")[0] == 403


def test_the_users_own_work_is_still_written(server, sweep):
    port, token = server
    for method, path, body in (("PUT", "/api/contents/work/notes.txt", FILE),
                               ("POST", "/api/contents/work/notes.txt/checkpoints", None),
                               ("PATCH", "/api/contents/work/notes.txt", {"path": "work/renamed.txt"}),
                               ("POST", "/api/contents/work", {"copy_from": "work/analysis.ipynb"}),
                               ("PUT", "/api/contents/mine.txt", FILE),  # a new name beside the sweep's files
                               ("DELETE", "/api/contents/work/renamed.txt", None),
                               ("DELETE", "/api/contents/mine.txt", None)):
        status, answer = request(port, token, method, path, body)
        assert status in (200, 201, 204), (method, path, status, answer)
    assert (sweep / "work" / "analysis-Copy1.ipynb").is_file()
    assert request(port, token, "GET", "/api/contents/results.csv")[1]["writable"] is False
    assert request(port, token, "GET", "/api/contents/work%2F..%2Fresults.csv")[1]["writable"] is False


def test_the_lab_offers_no_terminal(server):
    """A lab on a results folder needs notebooks, not a shell: JupyterLab's terminals (a root shell
    when copylab runs as root, past every guard on the sweep's files) are off (lab.command)."""
    port, token = server
    assert request(port, token, "GET", "/api/status")[0] == 200  # the server answers, with this token
    assert request(port, token, "POST", "/api/terminals")[0] == 404
    assert request(port, token, "GET", "/api/terminals")[0] == 404
    status, body = request(port, token, "GET", "/terminals/1")
    assert status == 404, body

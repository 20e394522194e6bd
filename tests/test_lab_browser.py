"""In a real browser (Debian's headless Chromium, driven by Playwright): JupyterLab as `make lab`
starts it, the analysis notebook run on a real sweep, the explorer changed, saved and the page
reloaded with its chart intact, then JupyterLab restarted and the explorer drawn from the saved state;
report.html and the HTML of the executed analysis opened offline with an empty console.

Playwright drives the system Chromium (`executable_path`); it never downloads a browser of its own.
Each launch gets a fresh temporary profile (Playwright's own user-data-dir)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from playwright.sync_api import sync_playwright

from conftest import ROOT, worker_port
from copylab import lab, tools

# what Chromium needs headless as root, and nothing that phones home
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run", "--disable-dev-shm-usage"]
VIEWPORT = {"width": 1024, "height": 768}  # the smallest screen the explorer must be readable on
NOTEBOOK = ".jp-NotebookPanel:not(.lm-mod-hidden)"
EXPLORER = f"{NOTEBOOK} .jp-OutputArea-output:has(.widget-vbox .js-plotly-plot)"
# the explorer's chart as the page has it: traces, points per trace, visibility, titles, widths
CHART = """() => { const gd = document.querySelector('%s .js-plotly-plot');
  if (!gd || !gd._fullLayout) return null;
  return {traces: gd.data.length, points: gd.data.map(t => (t.x || []).length),
          visible: gd.data.map(t => t.visible !== false), title: gd._fullLayout.title.text,
          xtitle: gd._fullLayout.xaxis.title.text, drawn: gd.querySelectorAll('.scatterlayer .trace').length,
          width: gd._fullLayout.width, area: gd.closest('.jp-OutputArea-output').getBoundingClientRect().width};
}""" % EXPLORER


def _digest(*paths: Path) -> dict:
    return {str(p): hashlib.sha256(p.read_bytes()).hexdigest() for p in paths}


def _wait(predicate, timeout: float, what: str, step: float = 0.25):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(step)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")


def _run_all(page) -> None:
    """Run > Run All Cells, until a cell shows it ran: while the kernel is still starting, the menu
    item can be there and do nothing."""
    ran = page.locator(f"{NOTEBOOK} .jp-InputPrompt").filter(has_text=re.compile(r"\[(\*|\d+)\]"))
    _wait(lambda: page.locator("#jp-main-statusbar").get_by_text(re.compile(r"\| Idle")).count(), 60,
          "the kernel to start")
    for _ in range(3):
        page.get_by_role("menuitem", name="Run", exact=True).click()
        page.get_by_role("menuitem", name=re.compile(r"^Run All Cells")).click()
        try:
            _wait(lambda: ran.count(), 30, "a cell to run")
            return
        except AssertionError:
            page.keyboard.press("Escape")
    raise AssertionError("Run > Run All Cells ran nothing")


def _photographed(page, tmp_path: Path, steps) -> None:
    """steps(); if it fails, a full-page screenshot of where it stopped (its path is printed)."""
    try:
        steps()
    except BaseException:
        page.screenshot(path=tmp_path / "failure.png", full_page=True)
        print(f"screenshot of the failure: {tmp_path / 'failure.png'}")
        raise


@pytest.fixture(scope="module")
def sweep(quick_report, tmp_path_factory) -> Path:
    """A copy of the reported quick sweep (the lab writes work/ into it)."""
    folder = tmp_path_factory.mktemp("lab") / "quick"
    shutil.copytree(quick_report["dir"], folder)
    return folder


class Lab:
    """`copylab lab SWEEP` (what `make lab` runs) in the background, with Jupyter's per-user folders in a
    scratch folder: `url` and `line` (the one line it printed) of the running server; `restart()` stops
    it (SIGTERM, as a closed terminal) and starts another on the same folder."""

    def __init__(self, sweep: Path, home: Path):
        self.sweep, self.home, self.proc = sweep, home, None
        # the kernels' ipc sockets live in the runtime folder: a socket's path has 107 bytes at most, and
        # under pytest-xdist (popen-gw1/...) the temporary folder's was past it ("File name too long")
        self.runtime = Path(tempfile.mkdtemp(prefix="jrt-", dir="/tmp"))
        self.env = dict(os.environ, JUPYTER_CONFIG_DIR=str(home / "config"), JUPYTER_DATA_DIR=str(home / "data"),
                        JUPYTER_RUNTIME_DIR=str(self.runtime), IPYTHONDIR=str(home / "ipython"))

    def start(self) -> None:
        out, err = self.home / "stdout", self.home / "stderr"
        with open(out, "w") as stdout, open(err, "w") as stderr:
            self.proc = subprocess.Popen([sys.executable, "-m", "copylab", "lab", str(self.sweep), "--no-browser",
                                          "--port", str(worker_port())], cwd=ROOT, env=self.env,
                                         stdout=stdout, stderr=stderr, stdin=subprocess.DEVNULL)
        self.line = _wait(lambda: out.read_text().strip() or self.proc.poll() is not None, lab.ANSWER_PATIENCE + 60,
                          "copylab lab's line")
        assert self.proc.poll() is None, f"copylab lab exited {self.proc.returncode}: {err.read_text()[-2000:]}"
        self.url = re.search(r"open (http://\S+)", self.line).group(1)
        # the line comes once the server answers: it answers now, at once
        status = self.url.split("/lab/")[0] + "/api/status?token=" + self.url.split("token=")[1]
        assert _answers(status), f"{self.line!r} printed before {status} answers"

    def stop(self) -> None:
        self.proc.terminate()  # copylab passes it on to JupyterLab and waits for it
        try:
            # once over 30 s in a loaded make test, cause not found (JupyterLab logged nothing after "received
            # signal 15"): the stop gets the patience the start gets
            assert self.proc.wait(timeout=lab.ANSWER_PATIENCE + 60) == 0
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise

    def restart(self) -> None:
        self.stop()
        self.start()


@pytest.fixture(scope="module")
def lab_server(sweep, tmp_path_factory):
    server = Lab(sweep, tmp_path_factory.mktemp("jupyter-home"))
    server.start()
    try:
        yield server
    finally:
        if server.proc.poll() is None:
            server.stop()
        shutil.rmtree(server.runtime, ignore_errors=True)


def _widget_views(notebook: Path) -> int:
    """How many widget outputs a saved notebook holds (0 while it is being written)."""
    try:
        cells = json.loads(notebook.read_text())["cells"]
    except (ValueError, KeyError, OSError):
        return 0
    return sum("application/vnd.jupyter.widget-view+json" in out.get("data", {})
               for cell in cells for out in cell.get("outputs", []))


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            return r.status == 200
    except (urllib.error.URLError, OSError):
        return False


@pytest.fixture(scope="module")
def browser():
    chromium = tools.find("chromium")
    assert chromium, "chromium is a Debian dependency (tools/install-debian-deps.sh)"
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS, headless=True)
        yield b
        b.close()


@pytest.mark.slow
def test_make_lab_says_in_one_line_what_to_open(lab_server, sweep):
    url, line = lab_server.url, lab_server.line
    assert len(line.splitlines()) == 1 and line.startswith("copylab lab: open http://localhost:")
    assert url.endswith(f"/lab/tree/{lab.WORK}/analysis.ipynb?token=" + url.split("token=")[1])
    assert str(sweep / lab.WORK / "analysis.ipynb") in line
    assert (sweep / lab.WORK / "analysis.ipynb").is_file()


@pytest.mark.slow
def test_explorer_survives_save_and_reload(lab_server, browser, sweep, tmp_path):
    page = browser.new_page(viewport=VIEWPORT)
    _photographed(page, tmp_path, lambda: _explore(page, lab_server, sweep))
    page.close()


def _explore(page, server: Lab, sweep: Path) -> None:
    url = server.url
    templates = sorted((ROOT / "notebooks").glob("*.ipynb"))
    kept = _digest(*templates, sweep / "answers.json", sweep / "analysis.ipynb")
    console = []
    page.on("console", lambda m: console.append(f"{m.type}: {m.text}"))
    page.on("pageerror", lambda e: console.append(f"pageerror: {e}"))
    page.goto(url)
    page.wait_for_selector(f"{NOTEBOOK} .jp-Notebook", timeout=60_000)
    assert page.get_by_text("Would you like to get notified about official Jupyter news?").count() == 0

    # run the notebook as a user does: Run > Run All Cells; its last cell writes work/answers.json
    _run_all(page)
    _wait(lambda: (sweep / lab.WORK / "answers.json").is_file(), 180, "the notebook's last cell")
    chart = lambda: page.evaluate(CHART)
    explorer = page.locator(EXPLORER).first
    explorer.scroll_into_view_if_needed()  # JupyterLab lays out only the cells in view
    # drawn, and as wide as the output area once the kernel is free to hear the width
    before = _wait(lambda: (c := chart()) and c["drawn"] and c["width"] == c["area"] and c, 30,
                   "the explorer's chart to fill the output area")
    # a line and a trace of repetition dots per implementation
    assert before["traces"] == 10 and before["title"].endswith("at 1 thread")
    # readable at 1024x768: no scrollbars among the controls, every implementation listed in full
    assert page.evaluate("""(sel) => [...document.querySelectorAll(sel + ' .widget-box')]
        .filter(e => e.scrollWidth > e.clientWidth + 1 || e.scrollHeight > e.clientHeight + 1).length""",
                         EXPLORER) == 0
    boxes = explorer.get_by_role("checkbox")
    assert boxes.count() == 5
    for i in range(boxes.count()):
        assert boxes.nth(i).is_visible()
    assert page.evaluate("""(sel) => [...document.querySelectorAll(sel + ' .widget-checkbox label')]
        .every(l => l.scrollWidth <= l.clientWidth + 1)""", EXPLORER)

    # change it: threads on the x axis, A3 left out
    explorer.get_by_role("button", name="threads", exact=True).click()
    explorer.get_by_role("checkbox", name=re.compile(r"^A3 zero-copy")).uncheck()
    changed = _wait(lambda: (c := chart()) and c["xtitle"].startswith("client threads") and not c["visible"][2]
                    and c, 30, "the chart to follow the controls")
    assert changed["traces"] == 10 and changed["drawn"] >= 2

    # File > Save, then a reload: the chart comes back as it was, traces and all
    saved = sweep / lab.WORK / "analysis.ipynb"
    mtime = saved.stat().st_mtime
    page.keyboard.press("Control+s")
    _wait(lambda: saved.stat().st_mtime != mtime and _widget_views(saved), 30, "the notebook to be saved")
    page.reload()
    page.wait_for_selector(f"{NOTEBOOK} .jp-Notebook", timeout=60_000)

    _scroll_to_explorer(page)
    after = _wait(lambda: (c := chart()) and c["width"] == c["area"] and c, 30, "the reloaded chart")
    assert {k: after[k] for k in ("traces", "points", "visible", "title", "xtitle")} == \
        {k: changed[k] for k in ("traces", "points", "visible", "title", "xtitle")}
    assert after["drawn"] == changed["drawn"] >= 2

    # and it still answers its controls
    page.locator(EXPLORER).first.get_by_role("button", name="message size", exact=True).click()
    again = _wait(lambda: (c := chart()) and c["xtitle"].startswith("message size") and c, 30,
                  "the reloaded explorer to answer")
    assert again["drawn"] >= 2
    errors = [m for m in console if m.startswith(("error", "pageerror"))]
    assert not errors, errors
    # nothing tracked or reported was touched; the working copy wrote its own answers.json
    assert _digest(*templates, sweep / "answers.json", sweep / "analysis.ipynb") == kept
    assert json.loads((sweep / lab.WORK / "answers.json").read_text()).keys() == \
        json.loads((sweep / "answers.json").read_text()).keys()

    # saved, JupyterLab stopped and started again: a new kernel, none of the old widgets. The notebook
    # carries their state (make lab's settings), so the explorer is drawn at once as it was saved,
    # without "model not found"
    mtime = saved.stat().st_mtime
    page.keyboard.press("Control+s")
    _wait(lambda: saved.stat().st_mtime != mtime, 30, "the notebook to be saved")
    page.goto("about:blank")  # what the old page says about its lost server is not the new one's console
    console.clear()
    server.restart()
    page.goto(server.url)
    page.wait_for_selector(f"{NOTEBOOK} .jp-Notebook", timeout=60_000)
    _scroll_to_explorer(page)
    restored = _wait(lambda: (c := chart()) and c["drawn"] and c, 30, "the explorer drawn after the restart")
    assert {k: restored[k] for k in ("traces", "points", "visible", "title", "xtitle")} == \
        {k: again[k] for k in ("traces", "points", "visible", "title", "xtitle")}
    assert page.get_by_text(re.compile("model not found|Error displaying widget")).count() == 0
    # its controls answer once the new kernel has run the notebook (the widgets' logic is Python)
    _run_all(page)
    _wait(lambda: page.locator("#jp-main-statusbar").get_by_text(re.compile(r"\| Idle")).count()
          and page.locator(f"{NOTEBOOK} .jp-InputPrompt").filter(has_text="[*]").count() == 0, 240,
          "the notebook to run again")
    _scroll_to_explorer(page)
    page.locator(EXPLORER).first.get_by_role("button", name="threads", exact=True).click()
    answered = _wait(lambda: (c := chart()) and c["xtitle"].startswith("client threads") and c["drawn"] and c, 30,
                     "the explorer to answer after the restart")
    assert answered["traces"] == 10
    errors = [m for m in console if m.startswith(("error", "pageerror"))]
    assert not errors, errors


def _scroll_to_explorer(page) -> None:
    """A (re)opened notebook starts at its top, and JupyterLab attaches only the cells near the view:
    scroll down to the explorer as a user does (waiting for it to attach unseen raced the windowing)."""
    page.locator(f"{NOTEBOOK} .jp-Notebook").first.hover()

    def explorer_in_view() -> bool:
        if page.locator(EXPLORER).count() > 0:
            return True
        page.mouse.wheel(0, 800)
        return False
    _wait(explorer_in_view, 60, "the explorer's cell to come into view")
    page.locator(EXPLORER).first.scroll_into_view_if_needed()
    page.wait_for_selector(f"{EXPLORER} .js-plotly-plot .scatterlayer .trace", timeout=60_000)


def test_the_sweeps_records_cannot_be_overwritten_through_jupyter(lab_server, sweep):
    url = lab_server.url
    base, token = url.split("/lab/")[0], url.split("token=")[1]

    def api(method, path, body=None):
        query = "&".join(q for q in (path.partition("?")[2], f"token={token}") if q)
        request = urllib.request.Request(f"{base}/api/contents/{path.partition('?')[0]}?{query}", method=method,
                                         data=json.dumps(body).encode() if body else None,
                                         headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=30) as r:
                return r.status, json.loads(r.read() or b"null")
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read() or b"null")

    assert api("GET", "results.csv?content=0")[1]["writable"] is False
    assert api("GET", f"{lab.WORK}/analysis.ipynb?content=0")[1]["writable"] is True
    before = (sweep / "results.csv").read_bytes()
    status, body = api("PUT", "results.csv", {"type": "file", "format": "text", "content": "impl\n"})
    assert status == 403 and f"{lab.WORK}/" in body["message"]
    assert api("DELETE", "report.html")[0] == 403
    assert (sweep / "results.csv").read_bytes() == before and (sweep / "report.html").is_file()


def test_export_as_html_in_the_lab_asks_no_cdn(lab_server):
    """File > Save and Export As > HTML: the server's nbconvert takes make lab's settings (the offline
    template), so the page loads no script or style from elsewhere."""
    base, token = lab_server.url.split("/lab/")[0], lab_server.url.split("token=")[1]
    with urllib.request.urlopen(f"{base}/nbconvert/html/{lab.WORK}/analysis.ipynb?download=false&token={token}",
                                timeout=120) as reply:
        html = reply.read().decode()
    assert "<html" in html and not re.findall(r'<(?:script|link)[^>]+(?:src|href)="(?:https?:)?//', html)


@pytest.mark.slow
def test_executed_analysis_as_html_offline_shows_the_explorers_figure(quick_report, browser, tmp_path):
    """`jupyter nbconvert --to html` of the analysis notebook `copylab report` executed, with make lab's
    Jupyter settings (as File > Save and Export As > HTML in make lab uses them): offline, nothing asked
    of the network, the explorer's figure drawn where the widget was."""
    html = tmp_path / "analysis.html"
    env = dict(os.environ, JUPYTER_CONFIG_PATH=str(lab.JUPYTER_CONFIG))
    proc = subprocess.run([sys.executable, "-m", "jupyter", "nbconvert", "--to", "html",
                           str(quick_report["dir"] / "analysis.ipynb"), "--output", str(html)],
                          env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    page = browser.new_page(viewport=VIEWPORT)
    outside, console = _offline(page)
    page.goto(html.as_uri())
    page.wait_for_load_state("load")
    titles = _wait(lambda: page.evaluate("""() => { const all = [...document.querySelectorAll('.js-plotly-plot')];
        return all.length && all.every(g => g._fullLayout && g.querySelector('.main-svg'))
               && all.map(g => g._fullLayout.title.text); }"""), 60, "every figure to draw")
    # the explorer's first view (Explorer: throughput, message size on x, at the first thread count)
    assert any(re.fullmatch(r"throughput \(Gbit/s\), throughput mode, at 1 thread", t or "") for t in titles), titles
    assert page.get_by_text("The explorer as it was last shown").count() == 1
    assert not outside, outside
    assert not console, console
    page.close()


def _offline(page) -> tuple[list, list]:
    """Route every request that would leave the machine to a list (and abort it); the console's
    messages to another."""
    console, outside = [], []
    page.on("console", lambda m: console.append(f"{m.type}: {m.text}"))
    page.on("pageerror", lambda e: console.append(f"pageerror: {e}"))

    def only_local(route):
        if route.request.url.startswith(("file:", "data:", "blob:")):
            route.continue_()
        else:
            outside.append(route.request.url)
            route.abort()

    page.route("**/*", only_local)
    return outside, console


@pytest.mark.slow
def test_report_html_offline_with_an_empty_console(quick_report, browser, tmp_path):
    page = browser.new_page(viewport=VIEWPORT)
    _photographed(page, tmp_path, lambda: _read_report(page, quick_report["dir"] / "report.html"))
    page.close()


def _read_report(page, report: Path) -> None:
    outside, console = _offline(page)
    page.goto(report.as_uri())
    page.wait_for_load_state("load")
    figures = _wait(lambda: page.evaluate("""() => { const all = [...document.querySelectorAll('.js-plotly-plot')];
        return all.length && all.every(g => g._fullLayout && g.querySelector('.main-svg')) && all.length; }"""),
                    60, "every figure of report.html to draw")
    assert figures >= 8
    # a hover names the implementation, size, threads, the value with its unit and n
    index = page.evaluate("""() => [...document.querySelectorAll('.js-plotly-plot')]
        .findIndex(g => g._fullLayout.title.text.startsWith('Throughput vs message size'))""")
    assert index >= 0
    point = page.locator(".js-plotly-plot").nth(index).locator(".scatterlayer .trace .points path").first
    point.scroll_into_view_if_needed()
    point.hover(force=True)
    lines = "() => [...document.querySelectorAll('.hoverlayer .hovertext tspan')].map(t => t.textContent)"
    text = " ".join(_wait(lambda: page.evaluate(lines), 10, "a hover label"))
    assert re.search(r"\b\d+ (B|KiB)\b", text) and re.search(r"\b\d+ threads?\b", text), text
    assert "Gbit/s" in text and "n=" in text and "1 threads" not in text, text
    assert not outside, outside
    assert not console, console

"""In a real browser (Debian's headless Chromium, driven by Playwright): JupyterLab as `make lab`
starts it, the analysis notebook run on a real sweep, the explorer fitted to three window widths and a
closed sidebar, changed and saved, then JupyterLab restarted and the notebook reopened: the explorer
as its saved chart, not marked changed, live again after Run All. report.html, the HTML and webpdf
nbconvert makes of the executed analysis with no Jupyter setting in the environment, and the
comparison reports of two sweeps that differ and of two of one host with nothing changed, read offline.

Playwright drives the system Chromium (`executable_path`); it never downloads a browser of its own.
Each launch gets a fresh temporary profile (Playwright's own user-data-dir)."""

from __future__ import annotations

import hashlib
import json
import math
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
from copylab import lab, tools, widgetsnapshot
from copylab.fmt import fmt_num, fmt_size

# what Chromium needs headless as root, and nothing that phones home
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run", "--disable-dev-shm-usage"]
VIEWPORT = {"width": 1024, "height": 768}  # the smallest screen the explorer must be readable on
# three window widths in which the explorer's chart is from about 500 px (the narrowest it must be readable at,
# beside JupyterLab's file browser) to about 1500 px wide (issue 47)
NARROW, WIDE, WIDEST = {"width": 940, "height": 768}, {"width": 1366, "height": 768}, {"width": 1920, "height": 1080}
NOTEBOOK = ".jp-NotebookPanel:not(.lm-mod-hidden)"
EXPLORER = f"{NOTEBOOK} .jp-OutputArea-output:has(.widget-vbox .js-plotly-plot)"
EXPLORER_CELL = f'{NOTEBOOK} .jp-CodeCell:has(.cm-content:has-text("explorer.explore("))'
DIRTY_TAB = ".lm-TabBar-tab.jp-mod-current.jp-mod-dirty"
# widgetsnapshot.NOTE as the page shows it (its `make lab` set as code), one line under the saved chart
SAVED_NOTE = re.compile(r"^The explorer as it was last shown, saved as a chart: .*Run All Cells\)\.$")
# the explorer's saved view in a reopened notebook: the PNG JupyterLab's plotly renderer shows for it
SAVED_VIEW = """() => {
  const cell = [...document.querySelectorAll('%s .jp-CodeCell')]
    .find(c => (c.querySelector('.cm-content') || {}).textContent?.includes('explorer.explore('));
  const img = cell && cell.querySelector('.jp-OutputArea .jp-RenderedPlotly img');
  if (!img) return null;
  const area = img.closest('.jp-OutputArea-output');
  return {shown: img.complete && img.naturalWidth > 0 && getComputedStyle(img).display !== 'none',
          natural: img.naturalWidth, width: img.getBoundingClientRect().width,
          area: area.getBoundingClientRect().width, live: !!cell.querySelector('.widget-vbox')};
}""" % NOTEBOOK
# the explorer's chart as the page has it, live or as saved: traces, points per trace, visibility, titles,
# widths, and the boxes of its parts
CHART = """() => {
  const cell = [...document.querySelectorAll('%s .jp-CodeCell')]
    .find(c => (c.querySelector('.cm-content') || {}).textContent?.includes('explorer.explore('));
  const gd = cell && cell.querySelector('.jp-OutputArea .js-plotly-plot');
  if (!gd || !gd._fullLayout) return null;
  const box = e => { if (!e) return null; const r = e.getBoundingClientRect();
                     return [r.left, r.top, r.right, r.bottom]; };
  const area = gd.closest('.jp-OutputArea-output');
  return {traces: gd.data.length, points: gd._fullData.map(t => (t.x || []).length),
          visible: gd.data.map(t => t.visible !== false), title: gd._fullLayout.title.text,
          xtitle: gd._fullLayout.xaxis.title.text, drawn: gd.querySelectorAll('.scatterlayer .trace').length,
          width: gd._fullLayout.width, area: area.getBoundingClientRect().width, areaBox: box(area),
          svg: box(gd.querySelector('.main-svg')), legend: box(gd.querySelector('.legend')),
          xtitleBox: box(gd.querySelector('.g-xtitle')), titleBox: box(gd.querySelector('.g-gtitle')),
          ticks: box(gd.querySelector('.xaxislayer-above')), live: !!cell.querySelector('.widget-vbox')};
}""" % NOTEBOOK


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
        # the port is free when chosen, and can be taken before JupyterLab binds it: another engineer's tests
        # on this machine choose from the same range (seen: "port 18801 is not available"). Then another
        for _ in range(3):
            with open(out, "w") as stdout, open(err, "w") as stderr:
                self.proc = subprocess.Popen([sys.executable, "-m", "copylab", "lab", str(self.sweep), "--no-browser",
                                              "--port", str(worker_port())], cwd=ROOT, env=self.env,
                                             stdout=stdout, stderr=stderr, stdin=subprocess.DEVNULL)
            self.line = _wait(lambda: out.read_text().strip() or self.proc.poll() is not None,
                              lab.ANSWER_PATIENCE + 60, "copylab lab's line")
            if self.proc.poll() is None or "is not available" not in err.read_text():
                break
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
def test_explorer_fits_its_window_and_reopens_as_its_chart(lab_server, browser, sweep, tmp_path):
    page = browser.new_page(viewport=VIEWPORT)
    _photographed(page, tmp_path, lambda: _explore(page, lab_server, sweep))
    page.close()


def _chart(page) -> dict | None:
    """The explorer's chart (CHART); its cell brought into view first when JupyterLab has it detached (it
    attaches only the cells near the view, and running or resizing the notebook moves the view)."""
    if page.locator(EXPLORER_CELL).count() == 0:
        _scroll_to_explorer(page)
    return page.evaluate(CHART)


def _fits(c: dict) -> list[str]:
    """What is wrong with the chart's layout as drawn: cut off by its output area or the figure, or the
    legend drawn over the x axis' title or ticks (issue 47)."""
    def inside(inner, outer):
        return inner is None or (inner[0] >= outer[0] - 1 and inner[2] <= outer[2] + 1)

    def meet(a, b):
        return a is not None and b is not None and a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]
    wrong = []
    if abs(c["width"] - c["area"]) > 2:
        wrong.append(f"chart {c['width']} px wide in a {c['area']} px output area")
    if not inside(c["svg"], c["areaBox"]):
        wrong.append(f"figure {c['svg']} cut by its output area {c['areaBox']}")
    for part in ("titleBox", "legend", "xtitleBox"):
        if not inside(c[part], c["svg"]):
            wrong.append(f"{part} {c[part]} cut by the figure {c['svg']}")
    for part in ("xtitleBox", "ticks"):
        if meet(c["legend"], c[part]):
            wrong.append(f"legend {c['legend']} over the {part} {c[part]}")
    return wrong


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
    _scroll_to_explorer(page)  # JupyterLab lays out only the cells in view
    explorer = page.locator(EXPLORER).first
    before = _wait(lambda: (c := _chart(page)) and c["live"] and c["drawn"] and not _fits(c) and c, 30,
                   "the explorer's chart to fill its output area")
    # a line and a trace of repetition dots per implementation
    assert before["traces"] == 10 and before["title"].endswith("at 1 thread")
    # readable at 1024 px wide: no scrollbars among the controls, every implementation listed in full
    assert page.evaluate("""(sel) => [...document.querySelectorAll(sel + ' .widget-box')]
        .filter(e => e.scrollWidth > e.clientWidth + 1 || e.scrollHeight > e.clientHeight + 1).length""",
                         EXPLORER) == 0
    boxes = explorer.get_by_role("checkbox")
    assert boxes.count() == 5
    for i in range(boxes.count()):
        assert boxes.nth(i).is_visible()

    # the chart follows its container: three window widths, and the sidebar closed (the container
    # changes, the window does not); each time as wide as its output area, nothing cut, the legend clear
    # of the axis title (the saved figure keeps no width: below)
    widths = {}
    for viewport in (NARROW, WIDEST, WIDE):
        page.set_viewport_size(viewport)
        _scroll_to_explorer(page)
        fitted = _wait(lambda: (c := _chart(page)) and c["width"] != widths.get("last") and not _fits(c) and c, 30,
                       f"the chart to fit a {viewport['width']} px window")
        widths[viewport["width"]] = widths["last"] = fitted["width"]
    assert 480 < widths[NARROW["width"]] < widths[WIDE["width"]] < widths[WIDEST["width"]], widths
    page.keyboard.press("Control+b")  # View > Left Sidebar: the notebook gets the window's width
    wider = _wait(lambda: (c := _chart(page)) and c["width"] > widths["last"] + 100 and not _fits(c) and c, 30,
                  "the chart to follow its output area as the sidebar closes")
    page.keyboard.press("Control+b")
    _wait(lambda: (c := _chart(page)) and c["width"] == widths["last"] and c, 30, "the chart to follow it back")
    assert wider["width"] > widths[WIDE["width"]], (wider["width"], widths)

    # change it: threads on the x axis, A3 left out; then latency mode: its own metric, said in the title
    explorer.get_by_role("button", name="latency", exact=True).click()
    latency = _wait(lambda: (c := _chart(page)) and "latency mode" in c["title"] and c, 30, "latency mode")
    assert latency["title"].startswith("latency p50 (µs), latency mode"), latency["title"]
    explorer.get_by_role("button", name="throughput", exact=True).click()
    explorer.get_by_role("button", name="threads", exact=True).click()
    explorer.get_by_role("checkbox", name=re.compile(r"^A3 zero-copy")).uncheck()
    changed = _wait(lambda: (c := _chart(page)) and c["title"].startswith("throughput (Gbit/s)")
                    and c["xtitle"].startswith("client threads") and not c["visible"][2] and c, 30,
                    "the chart to follow the controls")
    assert changed["traces"] == 10 and changed["drawn"] >= 2
    errors = [m for m in console if m.startswith(("error", "pageerror"))]
    assert not errors, errors
    assert page.locator(DIRTY_TAB).count() == 1  # changed since it was opened: the tab says so

    # File > Save: the notebook keeps the explorer as the chart it shows, without a pixel width, and the
    # line on making it live; nothing tracked or reported was touched
    saved = sweep / lab.WORK / "analysis.ipynb"
    mtime = saved.stat().st_mtime
    page.keyboard.press("Control+s")
    _wait(lambda: saved.stat().st_mtime != mtime and _saved_explorer(saved), 30, "the notebook to be saved")
    figure, note = _saved_explorer(saved)
    assert "width" not in figure["layout"] and figure["layout"]["title"]["text"] == changed["title"]
    # the view as the page drew it: its traces, their points and which are shown
    assert [len(t.get("x") or []) for t in figure["data"]] == changed["points"]
    assert [t.get("visible", True) is not False for t in figure["data"]] == changed["visible"]
    assert note == widgetsnapshot.NOTE
    assert "widgets" not in json.loads(saved.read_text())["metadata"]
    assert page.locator(DIRTY_TAB).count() == 0
    assert _digest(*templates, sweep / "answers.json", sweep / "analysis.ipynb") == kept
    assert json.loads((sweep / lab.WORK / "answers.json").read_text()).keys() == \
        json.loads((sweep / "answers.json").read_text()).keys()

    # JupyterLab stopped and started again: a new kernel, none of the old widgets. The notebook opens with
    # the explorer as its chart, the line saying how to make it live, no dead controls, and unchanged
    page.goto("about:blank")  # what the old page says about its lost server is not the new one's console
    console.clear()
    server.restart()
    page.goto(server.url)
    page.wait_for_selector(f"{NOTEBOOK} .jp-Notebook", timeout=60_000)
    _wait(lambda: page.locator("#jp-main-statusbar").get_by_text(re.compile(r"\| Idle")).count(), 60,
          "the new kernel to start")
    _scroll_to_explorer(page)
    # the figure as saved: JupyterLab's plotly renderer shows the PNG the save gave it, inside the output area
    shown = _wait(lambda: (v := page.evaluate(SAVED_VIEW)) and v["shown"] and v, 30,
                  "the saved chart after the restart")
    assert not shown["live"] and shown["width"] <= shown["area"] + 1 and shown["natural"] >= 600, shown
    cell = page.locator(EXPLORER_CELL).first
    assert cell.get_by_text(SAVED_NOTE).count() == 1
    assert page.locator(".jupyter-widgets-disconnected").count() == 0
    assert page.get_by_text(re.compile("model not found|Error displaying widget")).count() == 0
    assert page.locator(DIRTY_TAB).count() == 0, "opening the notebook marked it changed"
    # Run All makes it live again: the explorer's controls answer
    _run_all(page)
    _wait(lambda: page.locator("#jp-main-statusbar").get_by_text(re.compile(r"\| Idle")).count()
          and page.locator(f"{NOTEBOOK} .jp-InputPrompt").filter(has_text="[*]").count() == 0, 240,
          "the notebook to run again")
    _scroll_to_explorer(page)
    _wait(lambda: (c := _chart(page)) and c["live"] and c, 30, "the live explorer")
    page.locator(EXPLORER).first.get_by_role("button", name="threads", exact=True).click()
    answered = _wait(lambda: (c := _chart(page)) and c["live"] and c["xtitle"].startswith("client threads")
                     and c["drawn"] and c, 30, "the explorer to answer after the restart")
    assert answered["traces"] == 10
    errors = [m for m in console if m.startswith(("error", "pageerror"))]
    assert not errors, errors
    # the server's log: no websocket keep-alive warning from Tornado (jupyter_config/jupyter_server_config.py)
    assert "websocket_ping_timeout" not in (server.home / "stderr").read_text()


def _saved_explorer(notebook: Path):
    """(figure, note) of the explorer's cell as saved: plotly's output and the line after it; None while
    the notebook is being written or holds the widget."""
    try:
        cells = json.loads(notebook.read_text())["cells"]
    except (ValueError, KeyError, OSError):
        return None
    cell = next(c for c in cells if "explorer.explore(" in "".join(c["source"]))
    data = [o.get("data", {}) for o in cell.get("outputs", [])]
    if len(data) != 2 or widgetsnapshot.PLOTLY_JSON not in data[0]:
        return None
    return data[0][widgetsnapshot.PLOTLY_JSON], "".join(data[1]["text/plain"])


def _scroll_to_explorer(page) -> None:
    """A (re)opened notebook starts at its top, and JupyterLab attaches only the cells near the view: scroll
    its panel down until the explorer's cell is there. The pointer waits over the file browser meanwhile:
    a saved figure the pointer enters turns into plotly's live chart, whose new PNG marks the notebook
    changed (jupyterlab-plotly), and opening a notebook is what is tested here, not hovering in it."""
    page.mouse.move(5, 400)
    if page.locator(EXPLORER_CELL).count() == 0:  # from the top: Run All may have left the view below it
        page.evaluate("(sel) => { const p = document.querySelector(sel + ' .jp-WindowedPanel-outer'); "
                      "if (p) p.scrollTop = 0; }", NOTEBOOK)

    def explorer_in_view() -> bool:
        if page.locator(EXPLORER_CELL).count() > 0:
            return True
        page.evaluate("""(sel) => { const panel = document.querySelector(sel + ' .jp-WindowedPanel-outer');
                                    if (panel) panel.scrollTop += 600; }""", NOTEBOOK)
        return False
    _wait(explorer_in_view, 60, "the explorer's cell to come into view")
    page.locator(EXPLORER_CELL).first.scroll_into_view_if_needed()
    page.wait_for_selector(f"{EXPLORER_CELL} .jp-OutputArea-output", timeout=60_000)


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


def _without_jupyter_settings(tmp_path: Path) -> dict:
    """The environment with no Jupyter setting of its own (no JUPYTER_CONFIG_PATH, an empty user config
    folder): what copylab's nbconvert settings come from then is the environment's own config path, where
    the Makefile puts their loader."""
    loader = Path(sys.prefix) / "etc" / "jupyter" / "jupyter_nbconvert_config.py"
    assert loader.is_file(), f"{loader} missing: `make .venv/.installed-from-pyproject` installs it"
    env = {k: v for k, v in os.environ.items() if not k.startswith("JUPYTER_")}
    env.update(JUPYTER_CONFIG_DIR=str(tmp_path / "empty-config"), JUPYTER_DATA_DIR=str(tmp_path / "data"))
    return env


def _nbconvert(to: str, notebook: Path, out: Path, env: dict) -> None:
    proc = subprocess.run([sys.executable, "-m", "jupyter", "nbconvert", "--to", to, str(notebook), "--output",
                           str(out)], env=env, cwd=out.parent, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]


@pytest.mark.slow
def test_nbconvert_of_the_executed_analysis_is_offline_by_default(quick_report, browser, tmp_path):
    """`jupyter nbconvert --to html` of the notebook `copylab report` executed, with no Jupyter setting in
    the environment: offline, nothing asked of the network, the explorer's figure drawn where the widget
    was, with the line on making it live."""
    _nbconvert("html", quick_report["dir"] / "analysis.ipynb", tmp_path / "analysis",
               _without_jupyter_settings(tmp_path))
    page = browser.new_page(viewport=VIEWPORT)
    outside, console = _offline(page)
    page.goto((tmp_path / "analysis.html").as_uri())
    page.wait_for_load_state("load")
    titles = _wait(lambda: page.evaluate("""() => { const all = [...document.querySelectorAll('.js-plotly-plot')];
        return all.length && all.every(g => g._fullLayout && g.querySelector('.main-svg'))
               && all.map(g => g._fullLayout.title.text); }"""), 60, "every figure to draw")
    # the explorer's first view (Explorer: throughput, message size on x, at the first thread count)
    assert "throughput (Gbit/s), throughput mode, at 1 thread" in titles, titles
    assert page.get_by_text(SAVED_NOTE).count() == 1
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


# ------------------------------------------------------------------------------------------------
# comparison.html and comparison.pdf (issue 47): two stored real sweeps that differ in their congestion
# control (a real change decided), and two sweeps of one host and configuration (none stands)

STORED = ROOT / "tests" / "data" / "compare"


def _stored(name: str, folder: Path) -> Path:
    import gzip

    (folder / name).mkdir(parents=True)
    shutil.copy(STORED / name / "meta.json", folder / name / "meta.json")
    packed = STORED / name / "results.csv.gz"
    (folder / name / "results.csv").write_bytes(gzip.decompress(packed.read_bytes()) if packed.is_file()
                                                 else (STORED / name / "results.csv").read_bytes())
    return folder / name


@pytest.fixture(scope="module")
def comparisons(tmp_path_factory) -> dict:
    """{"change": cc-cubic -> cc-bbr, "same": default-2334 -> default-2340}: each comparison's folder,
    both made at once by `copylab compare`."""
    root = tmp_path_factory.mktemp("comparisons")
    pairs = {"change": (_stored("cc-cubic", root), _stored("cc-bbr", root)),
             "same": (_stored("default-2334", root), _stored("default-2340", root))}
    procs = {key: subprocess.Popen([sys.executable, "-m", "copylab", "compare", str(a), str(b), "--out",
                                    str(root / f"out-{key}")], cwd=ROOT, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True) for key, (a, b) in pairs.items()}
    for key, proc in procs.items():
        _, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, (key, err[-3000:])
    return {key: root / f"out-{key}" for key in pairs}


# every figure of the page: its markers (not the legend's) and whether any two of them overlap, the title
# and figure boxes
MARKERS = """() => [...document.querySelectorAll('.js-plotly-plot')].map(gd => {
  const box = e => { if (!e) return null; const r = e.getBoundingClientRect();
                     return [r.left, r.top, r.right, r.bottom]; };
  const marks = [...gd.querySelectorAll('.scatterlayer .trace .points path')].map(box).filter(b => b[2] > b[0]);
  let overlaps = 0;
  for (let i = 0; i < marks.length; i++) for (let j = i + 1; j < marks.length; j++) {
    const [a, b] = [marks[i], marks[j]];
    const w = Math.min(a[2], b[2]) - Math.max(a[0], b[0]), h = Math.min(a[3], b[3]) - Math.max(a[1], b[1]);
    if (w > 1 && h > 1) overlaps++;
  }
  return {markers: marks.length, overlaps, title: box(gd.querySelector('.g-gtitle')),
          svg: box(gd.querySelector('.main-svg'))};
})"""


@pytest.mark.slow
@pytest.mark.parametrize("key", ["change", "same"])
def test_a_comparison_reads_as_a_change_report(comparisons, browser, key, tmp_path):
    out = comparisons[key]
    doc = json.loads((out / "comparison.json").read_text())
    changed = [e for e in doc["changes"] if e["threads"] is None and e["stands"] and e["decision"] in ("win", "loss")]
    assert bool(changed) == (key == "change")  # cubic against bbr decides changes; two of one host none that stands
    page = browser.new_page(viewport=VIEWPORT)
    _photographed(page, tmp_path, lambda: _read_comparison(page, out / "comparison.html", changed))
    page.close()
    _check_comparison_pdf(out / "comparison.pdf", changed, tmp_path)


def _read_comparison(page, html: Path, changed: list[dict]) -> None:
    outside, console = _offline(page)
    page.goto(html.as_uri())
    page.wait_for_load_state("load")
    figures = _wait(lambda: (f := page.evaluate(MARKERS)) and all(x["svg"] for x in f) and f, 60, "the figures")
    for fig in figures:
        assert fig["markers"] >= 4 and fig["overlaps"] == 0, fig  # no marker hides another
        assert fig["title"][0] >= fig["svg"][0] and fig["title"][2] <= fig["svg"][2] + 1, fig  # no cut title
    text = page.inner_text("body")
    if changed:
        assert f"B differs from A in {len(changed)} quantities" in text
        # the largest first, with its interval and how it reads
        top = max(changed, key=lambda e: abs(math.log(e["ratio"])))
        said = f"{fmt_num(top['ratio'])} ({fmt_num(top['low'])}–{fmt_num(top['high'])})"
        assert re.search(rf"{fmt_size(top['msg_size'])}\s+{re.escape(said)}\s+{top['verdict']}", text), text[:3000]
    else:
        assert "No change from A to B stands after Holm's correction" in text
        assert re.search(r"path\s+size\s+1 thread\s+2 threads\s+4 threads\s+8 threads", text)  # per thread count
    # a marker's hover: the path, the size, B ÷ A with its interval and the decision
    page.locator(".js-plotly-plot .scatterlayer .trace .points path").first.hover(force=True)
    lines = "() => [...document.querySelectorAll('.hoverlayer .hovertext tspan')].map(t => t.textContent)"
    said = " ".join(_wait(lambda: page.evaluate(lines), 10, "a hover label"))
    assert re.search(r"B ÷ A [\d.]+ \(95%: ", said), said
    assert not outside, outside
    assert not console, console


def _check_comparison_pdf(pdf: Path, changed: list[dict], tmp_path: Path) -> None:
    """The summary is the first page, whole; no page but the first and the last ends in its upper part."""
    from PIL import Image

    pages = subprocess.run(["pdftotext", "-layout", str(pdf), "-"], capture_output=True, text=True,
                           check=True).stdout.split("\f")
    pages = [p for p in pages if p.strip()]
    assert "What changed from A to B" in pages[0] and "Of the" in pages[0] and "undecided" in pages[0]
    assert re.match(r"\s*2\s+The changes, size by size", pages[1]), pages[1][:200]
    if changed:
        assert f"B differs from A in {len(changed)} quantities" in " ".join(pages[0].split())
    subprocess.run(["pdftoppm", "-r", "20", "-gray", str(pdf), str(tmp_path / "page")], check=True)
    images = sorted(tmp_path.glob("page-*.pgm"))
    assert len(images) == len(pages)
    for image in images[1:-1]:
        im = Image.open(image)
        width, height = im.size
        body = im.crop((0, 0, width, int(height * 0.88)))  # the page number sits below
        rows = [y for y in range(body.size[1]) if body.crop((0, y, width, y + 1)).getextrema()[0] < 200]
        assert rows and rows[-1] > 0.7 * height, f"{image.name}: content ends at {rows[-1] / height:.0%} of the page"


@pytest.mark.slow
def test_webpdf_of_a_copylab_notebook_prints_with_the_installed_chromium(comparisons, tmp_path):
    """`jupyter nbconvert --to webpdf` of the executed comparison notebook, with no Jupyter setting in the
    environment: Debian's Chromium (no Playwright download exists here), printed once the figures are
    drawn: the comparison's figure and the two-sweep explorer's chart are in the PDF's text (plotly's
    text is the PDF's), and so is the last section."""
    _nbconvert("webpdf", comparisons["change"] / "compare.ipynb", tmp_path / "compare",
               _without_jupyter_settings(tmp_path))
    pdf = tmp_path / "compare.pdf"
    assert pdf.read_bytes().startswith(b"%PDF")
    text = " ".join(subprocess.run(["pdftotext", str(pdf), "-"], capture_output=True, text=True,
                                   check=True).stdout.split())
    assert "B ÷ A per size" in text and "throughput (Gbit/s), throughput mode, at 1 thread" in text, text[:2000]
    assert "The explorer as it was last shown" in text and "How the decisions are made" in text

"""`jupyter nbconvert --to webpdf` with the Chromium this host has (Debian's `chromium`, tools.find), and
printed once the page's plotly figures are drawn.

nbconvert's own WebPDFExporter launches Playwright's browser, which Playwright downloads into its own
cache (`playwright install chromium`): offline, or wherever only the distribution's Chromium is
installed, it stops with "No suitable chromium executable found". It then prints 100 ms
(page_render_timeout) after the network went idle, which drops plotly charts drawn later, and with a
large notebook everything after them (the page was still being parsed).

copylab's nbconvert settings (jupyter_config/jupyter_nbconvert_config.py) call `install()`, which puts
this class where nbconvert's entry point for `webpdf` looks it up (nbconvert.exporters.WebPDFExporter):
`--to webpdf`, and File > Save and Export As > WebPDF in `make lab`, then use it. It keeps nbconvert's
name, so nbconvert's `--allow-chromium-download` and every `c.WebPDFExporter` setting still apply;
with a download allowed, or no Chromium installed, it is nbconvert's exporter unchanged.
"""

from __future__ import annotations

import concurrent.futures
import os
import tempfile
from pathlib import Path

from nbconvert.exporters import webpdf as _nbconvert_webpdf
from traitlets import Int

from . import tools

# The page is laid out PRINT_WIDTH px wide and printed scaled to the paper (a Letter page is 816 CSS px
# wide): figures are drawn at the width they are printed at (drawn for a wider screen, they were cut at
# the paper's edge), and the report's figures, 760 px wide, fit beside the notebook's margins.
PRINT_WIDTH = 1100
PAPER_WIDTH = 816
# the page whole (a notebook's HTML with plotly.js inside is megabytes: the network went idle while it was
# still being parsed, and the PDF ended at the figure reached by then) and every figure in it drawn
CHARTS_DRAWN = """() => document.readyState === 'complete' && [...document.querySelectorAll('.js-plotly-plot')]
    .every(g => g._fullLayout && g.querySelector('.main-svg'))"""


class WebPDFExporter(_nbconvert_webpdf.WebPDFExporter):
    """nbconvert's webpdf, printed by the installed Chromium once every plotly figure is drawn."""

    figure_timeout = Int(60_000, help="Milliseconds to wait for the page's plotly figures to be drawn before "
                                      "printing (then printed as it is).").tag(config=True)

    def run_playwright(self, html: str) -> bytes:
        chromium = tools.find("chromium")
        if chromium is None or self.allow_chromium_download:
            return super().run_playwright(html)
        with tempfile.TemporaryDirectory(prefix="copylab-webpdf-") as folder:
            page = Path(folder) / "notebook.html"
            page.write_text(html, encoding="utf-8")
            # a thread of its own: Playwright's sync API refuses to run inside an event loop (the server's)
            with concurrent.futures.ThreadPoolExecutor(1) as executor:
                return executor.submit(self._print, chromium, page).result()

    def _print(self, chromium: str, page_file: Path) -> bytes:
        from playwright.sync_api import TimeoutError as PlaywrightTimeout
        from playwright.sync_api import sync_playwright

        args = list(self.browser_args)
        if self.disable_sandbox or os.geteuid() == 0:  # Chromium refuses to start its sandbox as root
            args.append("--no-sandbox")
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=chromium, args=args, handle_sigint=False,
                                                 handle_sigterm=False, handle_sighup=False)
            try:
                page = browser.new_page(viewport={"width": PRINT_WIDTH, "height": PRINT_WIDTH * 11 // 8})
                page.emulate_media(media="print")
                page.goto(page_file.as_uri(), wait_until="load")
                try:
                    page.wait_for_function(CHARTS_DRAWN, timeout=self.figure_timeout)
                except PlaywrightTimeout:
                    self.log.warning("webpdf: the page's figures were not all drawn after %d ms; printed as it is",
                                     self.figure_timeout)
                page.wait_for_timeout(self.page_render_timeout)
                options = {"print_background": True, "scale": PAPER_WIDTH / PRINT_WIDTH}
                if not self.paginate:
                    size = page.evaluate("() => { const r = document.body.getBoundingClientRect(); "
                                         "return {width: Math.ceil(r.width) + 1, height: Math.ceil(r.height) + 1}; }")
                    # 200 inches: Acrobat Reader's largest page
                    options.update(width=f"{min(size['width'], 200 * 96) * PAPER_WIDTH / PRINT_WIDTH}px",
                                   height=f"{min(size['height'], 200 * 96) * PAPER_WIDTH / PRINT_WIDTH}px")
                return page.pdf(**options)
            finally:
                browser.close()


def install() -> None:
    """Make `--to webpdf` this exporter: nbconvert's entry point names nbconvert.exporters.WebPDFExporter."""
    import nbconvert.exporters

    nbconvert.exporters.WebPDFExporter = WebPDFExporter

"""widgetsnapshot.py: the HTML of a notebook with a widget that holds a plotly figure (the explorer)
shows that figure, asks nothing of a CDN, and carries no widget state. The browser side (the figure
drawn offline, 0 outside requests) is tests/test_lab_browser.py."""

from __future__ import annotations

import re

import nbformat

from copylab import lab
from copylab.widgetsnapshot import WIDGET_STATE, WIDGET_VIEW, figure_in

FIGURE = {"_widget_data": [{"type": "scatter", "x": [64, 1024], "y": [1.5, 2.5], "name": "A1"}],
          "_widget_layout": {"title": {"text": "throughput (Gbit/s), throughput mode, at 1 thread"}, "width": 613}}
# a box of widgets (the explorer) whose second child holds the figure
STATE = {"box": {"model_name": "VBoxModel", "state": {"children": ["IPY_MODEL_label", "IPY_MODEL_fig"],
                                                      "layout": "IPY_MODEL_layout"}},
         "label": {"model_name": "LabelModel", "state": {"value": "x"}},
         "layout": {"model_name": "LayoutModel", "state": {}},
         "fig": {"model_name": "AnyModel", "state": FIGURE}}


def _notebook() -> nbformat.NotebookNode:
    view = nbformat.v4.new_output("display_data", data={WIDGET_VIEW: {"model_id": "box", "version_major": 2},
                                                        "text/plain": "VBox(...)"})
    cell = nbformat.v4.new_code_cell("explorer.explore(df, meta)", outputs=[view])
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# analysis"), cell])
    nb.metadata["widgets"] = {WIDGET_STATE: {"version_major": 2, "version_minor": 0, "state": STATE}}
    return nb


def test_the_figure_is_found_through_the_boxes_children():
    assert figure_in(STATE, "box") == {"data": FIGURE["_widget_data"], "layout": FIGURE["_widget_layout"]}
    assert figure_in(STATE, "label") is None and figure_in(STATE, "missing") is None
    looped = {"a": {"state": {"children": ["IPY_MODEL_b"]}}, "b": {"state": {"children": ["IPY_MODEL_a"]}}}
    assert figure_in(looped, "a") is None


def test_html_with_make_labs_settings_shows_the_figure_and_asks_no_cdn():
    from nbconvert import HTMLExporter
    from traitlets.config import Config

    # the settings make lab puts on JUPYTER_CONFIG_PATH (jupyter_config/jupyter_nbconvert_config.py)
    config = Config()
    path = lab.JUPYTER_CONFIG / "jupyter_nbconvert_config.py"
    exec(path.read_text(), {"get_config": lambda: config, "__file__": str(path)})
    html, _ = HTMLExporter(config=config).from_notebook_node(_notebook())
    assert "throughput mode, at 1 thread" in html and "Plotly.newPlot" in html
    assert "The explorer as it was last shown" in html
    # no script or style from elsewhere (plotly.js, embedded, names URLs in code it never runs here)
    assert not re.findall(r'<(?:script|link)[^>]+(?:src|href)="(?:https?:)?//', html)
    for name in ("require.min.js", "MathJax.js", "embed-amd.js", WIDGET_STATE, WIDGET_VIEW):
        assert name not in html, name
    assert '"width": 613' not in html  # the page's width, not the one the notebook was saved at

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


def test_a_figures_arrays_saved_apart_as_buffers_are_put_back():
    """JupyterLab saves a FigureWidget's numeric arrays as binary buffers beside the state (base64, with the
    path they belong at), plotly's typed arrays ({"buffer", "dtype", "shape"}): the figure gets them back."""
    import base64
    import copy

    import numpy as np

    state = copy.deepcopy(STATE)
    traits = state["fig"]["state"]
    traits["_widget_data"] = [{"type": "scatter", "name": "A1", "x": {"dtype": "float64", "shape": [2]},
                               "y": {"dtype": "float32", "shape": [2]}}]
    state["fig"]["buffers"] = [
        {"path": ["_widget_data", 0, "x", "buffer"], "encoding": "base64",
         "data": base64.b64encode(np.array([64.0, 1024.0]).tobytes()).decode()},
        {"path": ["_widget_data", 0, "y", "buffer"], "encoding": "base64",
         "data": base64.b64encode(np.array([1.5, 2.5], dtype="float32").tobytes()).decode()}]
    figure = figure_in(state, "box")
    assert figure["data"] == [{"type": "scatter", "name": "A1", "x": [64.0, 1024.0], "y": [1.5, 2.5]}]
    assert "buffer" not in str(STATE)  # the notebook's own state is left as it was


def test_the_explorers_own_record_of_its_chart_wins_over_the_figure_widgets_copy():
    """In the browser plotly's updates edit the FigureWidget's copy (traces were found without points);
    the explorer's record (explorer.FollowWidth.copylab_figure) is only the kernel's."""
    import copy

    state = copy.deepcopy(STATE)
    state["box"]["state"]["children"].insert(1, "IPY_MODEL_follow")
    drawn = {"data": [{"type": "scatter", "x": [1, 2], "y": [3.0, 4.0], "name": "A1"}],
             "layout": {"title": {"text": "t"}}}
    state["follow"] = {"model_name": "AnyModel", "state": {"copylab_figure": drawn}}
    assert figure_in(state, "box") == drawn

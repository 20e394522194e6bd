"""An nbconvert preprocessor for HTML that works offline: every widget output that holds a plotly
figure (the explorer) becomes that figure as it was last shown, a static plotly chart; the widget
state leaves the notebook's metadata.

Why: a widget in nbconvert's HTML needs the widget manager (and require.js) from a CDN, and no CDN is
reachable offline; the figure the explorer last drew is in the widget state the notebook was saved
with (papermill stores it; JupyterLab does with `make lab`'s settings), in the plotly FigureWidget's
`_widget_data` and `_widget_layout` (explorer.Explorer keeps those current). The templates under
templates/ name this preprocessor in their conf.json, so `jupyter nbconvert --to html --template
copylab_offline` (and File > Save and Export As > HTML in `make lab`) applies it.
"""

from __future__ import annotations

import re

from nbconvert.preprocessors import Preprocessor

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
MODEL_REF = re.compile(r"^IPY_MODEL_(\w+)$")
# plotly.js announces itself in its first line; a notebook whose figures already embed it needs no second copy
PLOTLY_JS_BANNER = "* plotly.js v"
NOTE = ("<p><small><i>The explorer as it was last shown. Its controls need a live kernel: open the notebook "
        "in JupyterLab (<code>make lab</code>).</i></small></p>")


class WidgetSnapshot(Preprocessor):
    """Widget outputs holding a plotly figure -> that figure (static); widget state removed."""

    def preprocess(self, nb, resources):
        state = nb.metadata.get("widgets", {}).get(WIDGET_STATE, {}).get("state", {})
        plotly_js_seen = False
        for cell in nb.cells:
            for i, output in enumerate(cell.get("outputs", [])):
                data = output.get("data", {})
                html = data.get("text/html", "")
                plotly_js_seen = plotly_js_seen or PLOTLY_JS_BANNER in html
                if WIDGET_VIEW not in data:
                    continue
                figure = figure_in(state, data[WIDGET_VIEW].get("model_id", ""))
                if figure is None:
                    continue
                cell.outputs[i] = output_of(figure, include_plotlyjs=not plotly_js_seen)
                plotly_js_seen = True
        nb.metadata.pop("widgets", None)  # nothing left for a CDN widget manager to draw
        return nb, resources


def figure_in(state: dict, model_id: str, seen: set | None = None) -> dict | None:
    """The first plotly figure (data + layout) found in the widget `model_id` or its children."""
    seen = set() if seen is None else seen
    if model_id in seen or model_id not in state:
        return None
    seen.add(model_id)
    traits = state[model_id].get("state", {})
    if "_widget_data" in traits and "_widget_layout" in traits:
        return {"data": traits["_widget_data"], "layout": traits["_widget_layout"]}
    for ref in _references(traits):
        found = figure_in(state, ref, seen)
        if found is not None:
            return found
    return None


def _references(value):
    """Model ids a widget's state refers to (children, a box's layout...), in order."""
    if isinstance(value, str):
        match = MODEL_REF.match(value)
        if match:
            yield match.group(1)
    elif isinstance(value, dict):
        for v in value.values():
            yield from _references(v)
    elif isinstance(value, list):
        for v in value:
            yield from _references(v)


def output_of(figure: dict, include_plotlyjs: bool) -> dict:
    """A display_data output with the figure as offline HTML (its width follows the page)."""
    import nbformat
    import plotly.graph_objects as go
    import plotly.io as pio

    layout = dict(figure["layout"])
    layout.pop("width", None)  # the notebook's width when it was saved; the page has its own
    fig = go.Figure(data=figure["data"], layout=layout)
    html = pio.to_html(fig, include_plotlyjs=include_plotlyjs, include_mathjax=False, full_html=False,
                       config={"responsive": True})
    return nbformat.v4.new_output("display_data", data={"text/html": html + NOTE,
                                                        "text/plain": "<the explorer's figure>"})

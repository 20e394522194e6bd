"""A widget that holds a plotly figure (the explorer) turned into that figure as it was last shown, a
plain plotly output, followed by one line saying how to make it live; the widget state leaves the
notebook's metadata once no widget is left to draw from it.

Two places do it:

- nbconvert (`WidgetSnapshot`, named by the templates under templates/ in their conf.json, which
  copylab's nbconvert settings make the default: jupyter_config/): a widget in nbconvert's HTML needs
  the widget manager (and require.js) from a CDN, and no CDN is reachable offline.
- JupyterLab's save in `make lab` (`pre_save`, lab.SweepContents): a notebook saved with its widgets
  reopens, after the kernel that held them is gone, as dead controls (a red "disconnected" icon on each)
  and is marked changed as soon as it opens (the widget manager marks the notebook dirty for every
  model it restores when it saves widget state). Saved as a figure it opens as a figure, unchanged.

The figure the explorer last drew is in the widget state the notebook carries (papermill stores it;
JupyterLab does with `make lab`'s settings), in the plotly FigureWidget's `_widget_data` and
`_widget_layout` (explorer.Explorer keeps those current).
"""

from __future__ import annotations

import re

from nbconvert.preprocessors import Preprocessor

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
PLOTLY_JSON = "application/vnd.plotly.v1+json"
MODEL_REF = re.compile(r"^IPY_MODEL_(\w+)$")
# plotly.js announces itself in its first line; a notebook whose figures already embed it needs no second copy
PLOTLY_JS_BANNER = "* plotly.js v"
NOTE = ("The explorer as it was last shown, saved as a chart: its controls answer again once a kernel runs "
        "this notebook (in JupyterLab, `make lab`: Run > Run All Cells).")


class WidgetSnapshot(Preprocessor):
    """Widget outputs holding a plotly figure -> that figure (static) and NOTE; widget state removed."""

    def preprocess(self, nb, resources):
        snapshot(nb, keep_state=False)
        return nb, resources


def pre_save(model: dict, **kwargs) -> None:
    """jupyter_server's pre-save hook (ContentsManager.register_pre_save_hook): a notebook is saved with
    each explorer as its figure (see the module's docstring)."""
    if model.get("type") == "notebook" and isinstance(model.get("content"), dict):
        snapshot(model["content"], keep_state=True)


def snapshot(nb: dict, keep_state: bool) -> int:
    """Each widget output of `nb` (a notebook, as nbformat's node or its JSON) whose widget holds a plotly
    figure becomes that figure and NOTE; returns how many did. The widget state goes unless keep_state and
    some other widget output is left to draw from it."""
    metadata = nb.get("metadata", {})
    state = metadata.get("widgets", {}).get(WIDGET_STATE, {}).get("state", {})
    plotly_js_seen, done, left = False, 0, 0
    for cell in nb.get("cells", []):
        outputs = cell.get("outputs")
        if not outputs:
            continue
        new = []
        for output in outputs:
            data = output.get("data", {})
            plotly_js_seen = plotly_js_seen or PLOTLY_JS_BANNER in "".join(data.get("text/html", ""))
            figure = figure_in(state, data[WIDGET_VIEW].get("model_id", "")) if WIDGET_VIEW in data else None
            if figure is None:
                left += WIDGET_VIEW in data
                new.append(output)
                continue
            new += [output_of(figure, include_plotlyjs=not plotly_js_seen), note_output()]
            plotly_js_seen, done = True, done + 1
        cell["outputs"] = new
    if "widgets" in metadata and not (keep_state and left):
        del metadata["widgets"]  # nothing left for a widget manager to draw (or, offline, to fetch)
    return done


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
    """A display_data output with the figure as plotly's own output (JupyterLab draws it) and as offline
    HTML (nbconvert's), its width the page's: the one the notebook had when it was saved is dropped."""
    import nbformat
    import plotly.graph_objects as go
    import plotly.io as pio

    layout = dict(figure["layout"])
    layout.pop("width", None)
    fig = go.Figure(data=figure["data"], layout=layout)
    config = {"responsive": True, "displaylogo": False}
    html = pio.to_html(fig, include_plotlyjs=include_plotlyjs, include_mathjax=False, full_html=False, config=config)
    return nbformat.v4.new_output("display_data", data={PLOTLY_JSON: {"data": figure["data"], "layout": layout,
                                                                      "config": config},
                                                        "text/html": html,
                                                        "text/plain": "<the explorer's figure>"})


def note_output() -> dict:
    """NOTE, one line under the figure."""
    import nbformat

    return nbformat.v4.new_output("display_data", data={"text/markdown": f"*{NOTE}*", "text/plain": NOTE})

"""A widget that holds a plotly figure (the explorer) turned into that figure as it was last shown, a
plain plotly output, followed by one line saying how to make it live; the widget state leaves the
notebook's metadata once no widget is left to draw from it.

Two places do it:

- nbconvert (`WidgetSnapshot`, named by the templates under templates/ in their conf.json, which
  copylab's nbconvert settings make the default: jupyter_config/): a widget in nbconvert's HTML needs
  the widget manager (and require.js) from a CDN, and no CDN is reachable offline.
- JupyterLab's save in `make lab` (`for_saving`, lab.SweepContents): a notebook saved with its widgets
  reopens, after the kernel that held them is gone, as dead controls (a red "disconnected" icon on each)
  and is marked changed as soon as it opens (the widget manager marks the notebook dirty for every
  model it restores when it saves widget state). Saved as a figure it opens as a figure, unchanged.
  JupyterLab's plotly renderer shows a figure's saved PNG when it has one, and otherwise draws it and
  adds the PNG to the output, which marks the notebook changed as soon as it is opened: the save gives
  every plotly figure without one its PNG (kaleido, the installed Chromium).

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


def for_saving(nb: dict) -> None:
    """A notebook as the lab saves it (see the module's docstring): each explorer as its figure and the line
    on making it live, and every plotly figure with a PNG."""
    snapshot(nb, keep_state=True)
    for cell in nb.get("cells", []):
        for output in cell.get("outputs") or []:
            data = output.get("data", {})
            if PLOTLY_JSON in data and "image/png" not in data:
                png = png_of(data[PLOTLY_JSON])
                if png:
                    data["image/png"] = png


PNG_WIDTH, PNG_HEIGHT = 900, 460  # px, for a figure without its own size (the page had it)
_pngs: dict[str, str] = {}  # a figure's JSON -> its PNG: the browser sends the notebook without them at every save
_kaleido_started = False


def png_of(figure: dict) -> str | None:
    """The figure ({"data", "layout"}) as a PNG, base64; None where it cannot be made (no Chromium, or
    kaleido failed: the figure is then saved without one)."""
    import base64
    import json
    import logging
    import warnings

    key = json.dumps([figure.get("data"), figure.get("layout")], sort_keys=True, default=str)
    if key in _pngs:
        return _pngs[key]
    from . import tools

    if tools.find("chromium") is None:
        return None
    global _kaleido_started
    try:
        import kaleido
        import plotly.graph_objects as go
        import plotly.io as pio

        if not _kaleido_started:  # one Chromium for the server's life: later figures take ~0.3 s instead of seconds
            kaleido.start_sync_server(mathjax=False, silence_warnings=True)
            _kaleido_started = True
        layout = figure.get("layout") or {}
        fig = go.Figure(data=figure.get("data"), layout=layout)
        with warnings.catch_warnings():  # plotly passes options the shared server ignores: harmless
            warnings.filterwarnings("ignore", message="The kopts argument is ignored")
            png = pio.to_image(fig, format="png", width=layout.get("width") or PNG_WIDTH,
                               height=layout.get("height") or PNG_HEIGHT)
    except Exception as exc:  # noqa: BLE001 - a figure without its PNG is still saved
        logging.getLogger(__name__).warning("copylab: no PNG for a saved figure (%s)", exc)
        return None
    _pngs[key] = base64.b64encode(png).decode()
    return _pngs[key]


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


EXPLORER_FIGURE = "copylab_figure"  # the chart as the explorer last drew it (explorer.FollowWidth)


def figure_in(state: dict, model_id: str) -> dict | None:
    """The figure (data + layout) the widget `model_id` or one of its children shows: the explorer's own
    record of it where there is one (EXPLORER_FIGURE), else the first plotly FigureWidget's."""
    ids = list(_tree(state, model_id, set()))
    for mid in ids:
        figure = state[mid].get("state", {}).get(EXPLORER_FIGURE)
        if figure:
            return dict(figure)
    for mid in ids:
        traits = state[mid].get("state", {})
        if "_widget_data" in traits and "_widget_layout" in traits:
            traits = with_buffers(state[mid])
            return {"data": traits["_widget_data"], "layout": traits["_widget_layout"]}
    return None


def _tree(state: dict, model_id: str, seen: set):
    """model_id and the models it refers to (children, layouts...), depth first, each once."""
    if model_id in seen or model_id not in state:
        return
    seen.add(model_id)
    yield model_id
    for ref in _references(state[model_id].get("state", {})):
        yield from _tree(state, ref, seen)


def with_buffers(model: dict) -> dict:
    """A widget's saved state whole: the widget state keeps binary values apart (`buffers`: a path into the
    state and the bytes, base64), as JupyterLab saves plotly's numeric arrays once the browser has sent
    them (a FigureWidget's typed arrays: {"buffer", "dtype", "shape"}); each goes back to its place, and
    a typed array becomes the list it stands for. Without them the figure's traces had no points."""
    import base64
    import copy

    state = copy.deepcopy(model.get("state", {}))
    for buffer in model.get("buffers", []):
        *path, last = buffer["path"]
        place = state
        for key in path:
            place = place[key]
        data = buffer.get("data", "")
        place[last] = bytes.fromhex(data) if buffer.get("encoding") == "hex" else base64.b64decode(data)
    return _typed_arrays_as_lists(state)


def _typed_arrays_as_lists(value):
    if isinstance(value, dict):
        if isinstance(value.get("buffer"), bytes) and "dtype" in value:
            import numpy as np

            return np.frombuffer(value["buffer"], dtype=value["dtype"]).reshape(value.get("shape") or -1).tolist()
        return {k: _typed_arrays_as_lists(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_typed_arrays_as_lists(v) for v in value]
    return value


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

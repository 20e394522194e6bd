"""Data-path diagrams of the study's three send paths (roles two_copy, one_copy, zero_copy in
native/registry.def): which component copies the payload, where.

Drawn as plotly shapes so they render through the same path as the figures: interactive in
JupyterLab/HTML and a vector PDF image (kaleido) that nbconvert's LaTeX exporter embeds.
These are explanations of the code paths (kernel: net/ipv4/tcp.c, net/core/skbuff.c,
Documentation/networking/msg_zerocopy.rst), not measurements.
"""

from __future__ import annotations

from dataclasses import dataclass

import plotly.graph_objects as go

from . import registry

USER, KERNEL = "user", "kernel"
FILL = {USER: "#dbe9f6", KERNEL: "#fde7cf"}
BORDER = {USER: "#1f77b4", KERNEL: "#d9822b"}
COPY_COLOR, MOVE_COLOR, NOTIFY_COLOR = "#c0392b", "#7f7f7f", "#6a3d9a"
BOX_W, BOX_H = 14.5, 22.0


@dataclass(frozen=True)
class Node:
    x: float
    y: float
    text: str
    owner: str  # USER or KERNEL


@dataclass(frozen=True)
class Edge:
    src: str
    dst: str
    label: str
    kind: str  # "copy", "move" or "notify"


def _draw(title: str, nodes: dict[str, Node], edges: list[Edge], height: int,
          footnote: str) -> go.Figure:
    fig = go.Figure()
    for node in nodes.values():
        fig.add_shape(type="rect", x0=node.x - BOX_W / 2, x1=node.x + BOX_W / 2,
                      y0=node.y - BOX_H / 2, y1=node.y + BOX_H / 2, line=dict(color=BORDER[node.owner]),
                      fillcolor=FILL[node.owner], layer="below")
        fig.add_annotation(x=node.x, y=node.y, text=node.text, showarrow=False, font=dict(size=11))
    color = {"copy": COPY_COLOR, "move": MOVE_COLOR, "notify": NOTIFY_COLOR}
    for e in edges:
        a, b = nodes[e.src], nodes[e.dst]
        same_row = abs(a.y - b.y) < 1e-9
        # start/end on the box edges facing each other
        if same_row:
            sign = 1 if b.x > a.x else -1
            x0, y0, x1, y1 = a.x + sign * BOX_W / 2, a.y, b.x - sign * BOX_W / 2, b.y
        else:
            sign = 1 if b.y > a.y else -1
            x0, y0, x1, y1 = a.x, a.y + sign * BOX_H / 2, b.x, b.y - sign * BOX_H / 2
        fig.add_annotation(x=x1, y=y1, ax=x0, ay=y0, xref="x", yref="y", axref="x", ayref="y",
                           showarrow=True, arrowhead=3, arrowsize=1.2,
                           arrowwidth=3 if e.kind == "copy" else 1.6, arrowcolor=color[e.kind], text="")
        mx, my = (x0 + x1) / 2, (y0 + y1) / 2
        # labels sit just above a horizontal arrow (growing upwards), or beside a slanted one
        fig.add_annotation(x=mx, y=my + (BOX_H / 2 + 1 if same_row else 0),
                           yanchor="bottom" if same_row else "middle",
                           xshift=0 if same_row else 8, xanchor="center" if same_row else "left",
                           text=e.label, showarrow=False, font=dict(size=11, color=color[e.kind]))
    # legend entries for what colours mean (shapes themselves have no legend)
    for name, style in ((("user space (the process)", dict(symbol="square", color=FILL[USER],
                                                           line=dict(color=BORDER[USER], width=1))),
                         ("kernel", dict(symbol="square", color=FILL[KERNEL],
                                         line=dict(color=BORDER[KERNEL], width=1))))):
        fig.add_trace(go.Scatter(x=[None], y=[None], mode="markers", marker=dict(size=14, **style),
                                 name=name))
    for name, c in (("copy of the payload", COPY_COLOR), ("pointer hand-off, no copy", MOVE_COLOR),
                    ("completion notification", NOTIFY_COLOR)):
        if any(color[e.kind] == c for e in edges):
            fig.add_trace(go.Scatter(x=[None], y=[None], mode="lines", line=dict(color=c, width=3),
                                     name=name))
    ys = [n.y for n in nodes.values()]
    fig.update_xaxes(visible=False, range=[0, 100])
    fig.update_yaxes(visible=False, range=[min(ys) - BOX_H, max(ys) + BOX_H + 12])
    fig.update_layout(title=dict(text=title, subtitle=dict(text=footnote, font=dict(size=11))),
                      height=height, margin=dict(t=80, l=4, r=4, b=40), plot_bgcolor="white",
                      legend=dict(orientation="h", y=-0.02, x=0), showlegend=True)
    return fig


def _xs(n: int) -> list[float]:
    step = 100 / n
    return [step / 2 + i * step for i in range(n)]


def _receiver(nodes: dict, edges: list, xs, y: float, copy_no: int) -> None:
    """The part every implementation shares: receive queue, recv() copy."""
    nodes["rq"] = Node(xs[-2], y, "receiver socket<br>receive queue<br>(kernel)", KERNEL)
    nodes["rbuf"] = Node(xs[-1], y, "receiver's<br>user buffer", USER)
    edges.append(Edge("rq", "rbuf", f"COPY {copy_no}: recv() →<br>copy_to_user<br>(kernel, receiver)", "copy"))


def _veth_and_receiver(nodes: dict, edges: list, xs, y: float, copy_no: int) -> None:
    """The copying senders after the send copy: the skb travels by pointer to the peer, then recv() copies."""
    nodes["tcp"] = Node(xs[-3], y, "TCP/IP, then veth:<br>skb handed to the<br>peer namespace", KERNEL)
    edges += [Edge("skb", "tcp", "no copy", "move"), Edge("tcp", "rq", "no copy (veth)", "move")]
    _receiver(nodes, edges, xs, y, copy_no)


def _label(role: str) -> str:
    """"A1 two-copy": the short name of the implementation playing role, and the role."""
    return f"{registry.by_role(role).upper()} {role.replace('_', '-')}"


def two_copy_diagram() -> go.Figure:
    xs = _xs(6)
    nodes = {
        "fields": Node(xs[0], 50, "8 fields,<br>each malloc'd", USER),
        "buf": Node(xs[1], 50, "one contiguous<br>send buffer", USER),
        "skb": Node(xs[2], 50, "socket send buffer<br>(skb data pages)", KERNEL),
    }
    edges = [Edge("fields", "buf", "COPY 1: memcpy<br>(user space, sender)", "copy"),
             Edge("buf", "skb", "COPY 2: send() →<br>copy_from_user<br>(kernel, sender)", "copy")]
    _veth_and_receiver(nodes, edges, xs, 50, 3)
    return _draw(f"{_label('two_copy')}: send()", nodes, edges, 330,
                 "Sender: 2 copies (1 user, 1 kernel); receiver: 1 kernel copy. Over veth there is no NIC DMA.")


def one_copy_diagram() -> go.Figure:
    xs = _xs(5)
    nodes = {
        "fields": Node(xs[0], 50, "8 fields +<br>iovec[8] over them<br>(built once)", USER),
        "skb": Node(xs[1], 50, "socket send buffer<br>(skb data pages)", KERNEL),
    }
    edges = [Edge("fields", "skb", "COPY 1: sendmsg() →<br>copy_from_user gathers<br>the 8 fields (kernel)", "copy")]
    _veth_and_receiver(nodes, edges, xs, 50, 2)
    return _draw(f"{_label('one_copy')}: sendmsg() with a pre-built iovec", nodes, edges, 330,
                 "Sender: 1 kernel copy (the two-copy path's user-space memcpy is gone); receiver: 1 kernel copy.")


def zero_copy_diagram() -> go.Figure:
    xs = _xs(6)
    nodes = {
        "fields": Node(xs[0], 70, "8 page-aligned<br>fields (must stay<br>untouched in flight)", USER),
        "skb": Node(xs[1], 70, "skb frags reference<br>the pinned user<br>pages (no data copy)", KERNEL),
        "tcp": Node(xs[2], 70, "TCP/IP, then veth:<br>local delivery", KERNEL),
        "orphan": Node(xs[3], 70, "skb_orphan_frags_rx<br>copies the frags<br>into kernel pages", KERNEL),
        "errq": Node(xs[1], 25, "error queue:<br>completion [lo, hi],<br>flag COPIED", KERNEL),
        "reap": Node(xs[0], 25, "sender reads<br>MSG_ERRQUEUE;<br>buffer reusable", USER),
    }
    edges = [Edge("fields", "skb", "sendmsg(MSG_ZEROCOPY):<br>pin pages", "move"),
             Edge("skb", "tcp", "no copy", "move"),
             Edge("tcp", "orphan", "COPY 1 (kernel,<br>deferred, on<br>delivery)", "copy"),
             Edge("orphan", "errq", "user pages released", "notify"),
             Edge("errq", "reap", "notification", "notify")]
    _receiver(nodes, edges, xs, 70, 2)
    edges.append(Edge("orphan", "rq", "no copy", "move"))
    return _draw(f"{_label('zero_copy')}: sendmsg(MSG_ZEROCOPY) over veth", nodes, edges, 440,
                 "Queueing the send copies nothing (the pages are pinned); local delivery copies them (flagged COPIED)<br>"
                 "in the delivering softirq, often on the sender's CPU inside its sendmsg; a real NIC would DMA them.")


# (implementation, its diagram) for the study's three roles, in the order Part E compares them
DIAGRAMS = tuple((registry.by_role(role), make) for role, make in (
    ("two_copy", two_copy_diagram), ("one_copy", one_copy_diagram), ("zero_copy", zero_copy_diagram)))

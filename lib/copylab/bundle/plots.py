"""Part D: one matplotlib script per required plot, the measured values written in as literals.

The course forbids reading the CSV at plot time, so each script carries its numbers: the mean over
repetitions of results.csv's ok rows per (implementation, message size, threads), computed with
the analysis' own load_results + aggregate, written with repr() so every float round-trips
exactly. A metric this host could not measure (cache misses without a PMU) is not drawn: the
script still writes its PNG, saying what is missing and why (the sweep's own note).
"""

from __future__ import annotations

import math
import re
import textwrap
from dataclasses import dataclass

from .. import escape

from ..analysis import IMPL_LABELS, aggregate, measured, system_summary, unmeasured_reason
from ..figures import IMPL_COLORS


ROLL = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,31}")  # bundle.ROLL_PATTERN


@dataclass(frozen=True)
class Metric:
    column: str   # results.csv column, or a per-byte metric analysis.add_derived computes
    legend: str   # what tells its lines apart from the other metrics of the plot ("" if alone)
    style: str    # matplotlib line style
    raw: str      # the perf counter behind it (for "why is it empty"); "" for the programs' own
    name: str     # what it is, in words


@dataclass(frozen=True)
class PlotSpec:
    name: str          # <ROLL>_Part_D_<name>.py
    title: str
    mode: str          # which rows: throughput or latency mode
    x: str             # column on the x axis
    panel: str         # one panel per value of this column
    metrics: tuple[Metric, ...]
    y_label: str
    y_label_tsc: str = ""  # the y label when cycles are TSC reference cycles (no PMU)


PLOTS = (
    PlotSpec("throughput_vs_size", "Throughput vs message size (throughput mode)", "throughput",
             "msg_size", "threads", (Metric("throughput_gbps", "", "-", "", "throughput"),), "throughput (Gbit/s)"),
    PlotSpec("latency_vs_threads", "Round-trip latency vs client threads (latency mode)", "latency",
             "threads", "msg_size", (Metric("latency_us", "mean", "-", "", "mean round-trip latency"),
                                     Metric("latency_p99_us", "p99", "--", "", "99th percentile latency")),
             "round-trip latency (µs)"),
    PlotSpec("cache_misses_vs_size", "Cache load misses per byte vs message size (throughput mode)",
             "throughput", "msg_size", "threads",
             (Metric("l1_misses_per_byte", "L1-dcache", "-", "l1_misses", "L1-dcache load misses per byte"),
              Metric("llc_misses_per_byte", "LLC", "--", "llc_misses", "LLC load misses per byte")),
             "load misses per byte (misses/B, sender + receiver)"),
    PlotSpec("cycles_per_byte_vs_size", "CPU cycles per byte transferred vs message size (throughput mode)",
             "throughput", "msg_size", "threads",
             (Metric("cycles_per_byte", "sender + receiver", "-", "cycles", "cycles per byte, sender + receiver"),
              Metric("srv_cycles_per_byte", "sender", "--", "srv_cycles", "cycles per byte, sender"),
              Metric("cli_cycles_per_byte", "receiver", ":", "cli_cycles", "cycles per byte, receiver")),
             "CPU cycles per byte (cycles/B)", "TSC reference cycles per byte (cycles/B)"),
)


def series(df, spec: PlotSpec) -> list[dict]:
    """One entry per (implementation[, receive strategy], panel value): the x values and each
    metric's mean per x (None where no repetition has a value). The receive strategy tells entries
    apart only when the sweep measured more than one."""
    rows = df[df["mode"] == spec.mode]
    columns = [m.column for m in spec.metrics]
    split = ["receive"] if "receive" in rows and rows["receive"].nunique() > 1 else []
    table = aggregate(rows, columns, by=["impl", *split, spec.panel, spec.x])
    out = []
    for keys, group in table.groupby(["impl", *split, spec.panel], sort=True):
        group = group.sort_values(spec.x)
        entry = dict(zip(["impl", *split], map(str, keys[:-1])))
        entry[spec.panel] = int(keys[-1])
        entry[spec.x] = [int(v) for v in group[spec.x]]
        for column in columns:
            entry[column] = [None if math.isnan(v) else float(v) for v in group[column]]
        out.append(entry)
    return out


def not_measured(df, meta: dict, spec: PlotSpec) -> dict[str, str]:
    """Metric -> why it has no value at all in this sweep."""
    rows = df[df["mode"] == spec.mode]
    reasons = {}
    for metric in spec.metrics:
        if measured(rows, metric.column):
            continue
        if rows.empty:
            reasons[metric.column] = f"the sweep has no {spec.mode}-mode rows"
        elif metric.raw:
            reasons[metric.column] = unmeasured_reason(df, meta, metric.raw)
        else:
            reasons[metric.column] = f"results.csv has no values for {metric.column}"
    return reasons


def plot_script(spec: PlotSpec, df, meta: dict, provenance: dict, roll: str) -> str:
    """The text of <roll>_Part_D_<spec.name>.py. Every value from the sweep (the numbers, the
    host, the sweep's name and revision, the notes) travels in DATA, a JSON text the script parses
    (escape.python): none of it is ever Python source, so no value can add code to the script."""
    if not ROLL.fullmatch(roll):
        raise ValueError(f"roll {roll!r} is not an identifier")  # bundle.check_roll refused it already
    y_label, notes = spec.y_label, []
    if spec.y_label_tsc and meta.get("cycles_source") == "tsc":
        y_label = spec.y_label_tsc
        notes.append("No PMU on this host: cycles are TSC reference cycles while the task ran "
                     "(CPU time x TSC rate), not core clock cycles.")
    params = meta.get("params") if isinstance(meta.get("params"), dict) else {}
    pins = [f"{side} on CPU {params[key]}" for side, key in (("server", "pin_server"), ("client", "pin_client"))
            if params.get(key) not in (None, "")]
    reps = int(df.groupby(["impl", "mode", "msg_size", "threads"])["rep"].nunique().max()) if len(df) else 0
    system = system_summary(meta) + (" · " + ", ".join(pins) if pins else "")
    source = (f"sweep {provenance['sweep']!r}, {provenance['finished_at'] or provenance['started_at'] or 'time unknown'}"
              f"; mean of {reps} repetition{'s' if reps != 1 else ''} per point")
    impls = set(df["impl"].unique().tolist())
    data = {
        "PROVENANCE": {key: provenance.get(key) for key in ("results_dir", "sweep", "started_at", "finished_at",
                                                            "git_revision", "failed_points")},
        "TITLE": spec.title, "SYSTEM": system, "SOURCE": source, "MODE": spec.mode, "X": spec.x,
        "PANEL": spec.panel,
        "X_LABEL": ("message size (bytes, log scale)" if spec.x == "msg_size" else "client threads (connections)"),
        "Y_LABEL": y_label,
        "METRICS": [[m.column, m.legend, m.style, m.name] for m in spec.metrics],
        # the study's three, and any reference program the sweep measured beside them (grey)
        "IMPL_LABELS": {i: IMPL_LABELS.get(i, f"{i} (reference)") for i in sorted(set(IMPL_LABELS) | impls)},
        "IMPL_COLORS": {i: IMPL_COLORS.get(i, "#666666") for i in sorted(set(IMPL_LABELS) | impls)},
        "NOTES": notes,
        "NOT_MEASURED": not_measured(df, meta, spec),
        "SERIES": series(df, spec),
    }
    doc = textwrap.dedent(f'''\
        """{roll} PA02 Part D: {spec.title}.

        Generated by `copylab bundle` from the sweep's results.csv (copied beside this script as
        {roll}_results.csv; DATA["PROVENANCE"] names the sweep, when it ran and the code revision).
        DATA["SERIES"] holds, per implementation and {spec.panel}, the mean over repetitions of the
        rows with status ok. DATA is a JSON text, parsed here: no file is read. Run
            python3 {roll}_Part_D_{spec.name}.py
        and it writes {roll}_Part_D_{spec.name}.png beside itself.
        """''')
    names = [k for k in data if k != "PROVENANCE"]
    constants = "\n".join(f"{name} = DATA[{name!r}]" for name in names)
    return "\n".join([doc, _IMPORTS, "# the sweep's values: data, parsed (never code)",
                      f"DATA = {escape.python(data)}", "", constants, _DRAW])


_IMPORTS = '''
import json
import math
import textwrap
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # no display needed: the figure goes to a PNG file
if "text.parse_math" in matplotlib.rcParams:  # a '$' in a host name is a dollar sign, not math
    matplotlib.rcParams["text.parse_math"] = False
import matplotlib.pyplot as plt  # noqa: E402

'''

_DRAW = '''

MARKERS = {"message": "o", "bulk": "s"}  # by receive strategy, when the sweep compared them


def size_label(n):
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale and n % scale == 0:
            return f"{n // scale} {unit}"
    return f"{n} B"


def panel_title(value):
    if PANEL == "msg_size":
        return f"message size {size_label(value)}"
    return f"{value} client thread{'s' if value != 1 else ''}"


def with_note(label, note):
    # 'throughput (Gbit/s)' + 'log scale' -> 'throughput (Gbit/s, log scale)'
    return label[:-1] + f", {note})" if label.endswith(")") else f"{label} ({note})"


def draw_panel(ax, value, metrics):
    xs = set()
    for entry in SERIES:
        if entry[PANEL] != value:
            continue
        for column, legend, style, _ in metrics:
            points = [(x, y) for x, y in zip(entry[X], entry[column]) if y is not None]
            if not points:
                continue
            xs.update(x for x, _ in points)
            label = IMPL_LABELS.get(entry["impl"], entry["impl"])
            if "receive" in entry:  # the sweep compared how the receiver reads
                label += f", receive {entry['receive']}"
            label += f", {legend}" if legend else ""
            ax.plot([x for x, _ in points], [y for _, y in points], linestyle=style,
                    marker=MARKERS.get(entry.get("receive"), "o"), markersize=4,
                    color=IMPL_COLORS.get(entry["impl"], "#666666"), label=label)
    ys = [y for entry in SERIES if entry[PANEL] == value for column, _, _, _ in metrics
          for y in entry[column] if y is not None]
    log_y = bool(ys) and min(ys) > 0 and max(ys) / min(ys) > 30  # orders of magnitude apart
    if log_y:
        ax.set_yscale("log")
    if X == "msg_size":
        ax.set_xscale("log", base=2)
        ax.minorticks_off()
    ax.set_xticks(sorted(xs))
    ax.set_xticklabels([size_label(x) if X == "msg_size" else str(x) for x in sorted(xs)])
    ax.set_title(panel_title(value), fontsize=10)
    ax.set_xlabel(X_LABEL, fontsize=9)
    ax.set_ylabel(with_note(Y_LABEL, "log scale") if log_y else Y_LABEL, fontsize=9)
    ax.grid(True, alpha=0.3)


def main():
    metrics = [m for m in METRICS if any(y is not None for entry in SERIES for y in entry[m[0]])]
    panels = sorted({entry[PANEL] for entry in SERIES})
    missing = {}
    for column, legend, style, name in METRICS:
        if column in NOT_MEASURED:
            missing.setdefault(NOT_MEASURED[column], []).append(name)
    notes = NOTES + [f"Not measured on this host, so not drawn: {', '.join(names)}. Why: {why}."
                     for why, names in missing.items()]
    header = "\\n".join([TITLE, textwrap.fill(SYSTEM, 150), SOURCE])
    header_in = 0.19 * (header.count("\\n") + 1) + 0.15
    if not (metrics and panels):
        fig = plt.figure(figsize=(11, 3 + header_in))
        put_header(fig, header)
        fig.text(0.5, 0.45, "\\n\\n".join(textwrap.fill(n, 110) for n in notes) or "No data.",
                 ha="center", va="center", fontsize=11, color="#a00")
        return save(fig)
    note_text = "\\n".join(textwrap.fill(n, 170) for n in notes)
    notes_in = 0.17 * (note_text.count("\\n") + 1) + 0.1 if note_text else 0.0
    entries = len(metrics) * len({(entry["impl"], entry.get("receive")) for entry in SERIES})
    ncol = min(3, entries)
    legend_in = 0.22 * math.ceil(entries / ncol) + 0.2
    cols = min(3, math.ceil(math.sqrt(len(panels))))
    rows = math.ceil(len(panels) / cols)
    height = 3.7 * rows + header_in + legend_in + notes_in
    fig, axes = plt.subplots(rows, cols, figsize=(6.2 * cols, height), squeeze=False)
    for ax, value in zip(axes.flat, panels):
        draw_panel(ax, value, metrics)
    for ax in list(axes.flat)[len(panels):]:
        ax.axis("off")
    legend = {}
    for ax in axes.flat:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            legend.setdefault(label, handle)
    put_header(fig, header)
    fig.legend(list(legend.values()), list(legend.keys()), loc="lower center", ncol=ncol, fontsize=9,
               frameon=False, bbox_to_anchor=(0.5, (notes_in + 0.05) / height))
    if note_text:
        fig.text(0.5, 0.05 / height, note_text, ha="center", va="bottom", fontsize=8, color="#a00")
    fig.tight_layout(rect=(0, (notes_in + legend_in) / height, 1, 1 - header_in / height))
    return save(fig)


def put_header(fig, header):
    # fig.text, not suptitle: tight_layout leaves it alone, so the space kept for it is exact
    fig.text(0.5, 1 - 0.08 / fig.get_figheight(), header, ha="center", va="top", fontsize=10)


def save(fig):
    out = Path(__file__).resolve().with_suffix(".png")
    fig.savefig(out, dpi=110)
    print(out)
    return out


if __name__ == "__main__":
    main()
'''

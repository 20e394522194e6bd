"""How numbers, sizes and the host are written in prose, tables and figure subtitles.

Shared by the analysis, the figures, the explorer and the report, so a size reads "4 KiB" and a
host reads the same everywhere.
"""

from __future__ import annotations

import math

import pandas as pd

from . import escape, registry

# every implementation's label for legends and tables, from native/registry.def
IMPL_LABELS = {impl.name: impl.label for impl in registry.all_impls()}


def impl_name(impl: str) -> str:
    return impl.upper()


def fmt_size(nbytes) -> str:
    """4096 -> '4 KiB', 1048576 -> '1 MiB', 1500 -> '1500 B'."""
    if nbytes is None or (isinstance(nbytes, float) and math.isnan(nbytes)):
        return "n/a"
    n = int(nbytes)
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale and n % scale == 0:
            return f"{n // scale} {unit}"
    return f"{n} B"


def fmt_num(x, digits: int = 3) -> str:
    """Significant digits, no scientific notation for everyday magnitudes; NaN -> 'n/a'."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "n/a"
    x = float(x)
    if x == 0:
        return "0"
    mag = math.floor(math.log10(abs(x)))
    if mag >= 6 or mag <= -4:
        return f"{x:.{digits - 1}e}"
    decimals = max(digits - 1 - mag, 0)
    return f"{x:,.{decimals}f}"


def fmt_pct(x) -> str:
    return "n/a" if x is None or math.isnan(x) else f"{x:.1f}%"


def plural(n, word: str) -> str:
    """plural(1, 'thread') -> '1 thread', plural(8, 'thread') -> '8 threads', plural(2, 'pass') -> '2 passes'."""
    try:
        one = float(n) == 1
    except (TypeError, ValueError):
        one = False
    return f"{n} {word}{'' if one else ('es' if word.endswith(('s', 'sh', 'ch', 'x')) else 's')}"


def md_escape(text: str) -> str:
    """Prose copylab composed, with values from a sweep inside it, about to be rendered as
    markdown: shown as written (no raw HTML or TeX, links or math can start), its `*` emphasis and
    code spans kept. Only for display: answers.json holds plain text. (escape.markdown_prose)"""
    return escape.markdown_prose(text)


def markdown_table(frame: pd.DataFrame) -> str:
    """A pipe table (pandoc turns it into a LaTeX longtable; HTML renders it). Floats formatted."""
    cols = list(frame.columns)
    lines = ["| " + " | ".join(escape.markdown(c) for c in cols) + " |",
             "|" + "|".join("---:" if pd.api.types.is_numeric_dtype(frame[c]) else ":---"
                            for c in cols) + "|"]
    for _, row in frame.iterrows():
        cells = []
        for c in cols:
            v = row[c]
            if isinstance(v, float):
                cells.append(fmt_num(v))
            elif v is None:
                cells.append("n/a")
            else:
                cells.append(escape.markdown(v))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def system_fields(meta: dict) -> dict:
    """The system configuration every figure states; 'unknown' where meta.json has nothing."""
    def get(key, fmt=str):
        v = meta.get(key)
        return "unknown" if v in (None, "") else fmt(v)
    return {
        "kernel": get("kernel"),
        "CPU": get("cpu_model"),
        "cores": get("cores"),
        "memory": get("memory_gib", lambda v: f"{float(v):.1f} GiB"),
        "topology": get("topology"),
        "cycles": get("cycles_source", lambda v: {"pmu": "PMU cycles",
                                                  "tsc": "TSC reference cycles"}.get(v, v)),
    }


def system_summary(meta: dict) -> str:
    """One line for a figure: the machine, or (topology ssh) each host the programs ran on."""
    f = system_fields(meta)
    hosts = meta.get("hosts") or {}
    if hosts:
        parts = []
        for side in ("server", "client"):
            h = system_fields(hosts.get(side) or {})
            parts.append(f"{side} {(hosts.get(side) or {}).get('destination', '?')}: Linux {h['kernel']}, "
                         f"{h['CPU']}, {h['cores']} cores")
        return " · ".join(parts) + f" · topology ssh · cycles: {f['cycles']}"
    return (f"Linux {f['kernel']} · {f['CPU']} · {f['cores']} cores · {f['memory']} · "
            f"topology {f['topology']} · cycles: {f['cycles']}")

"""The report's words: one Jinja2 template per section (analysis/templates/<section>.md.j2), given
the Study's verdicts and evidence. Templates choose among verdicts and format numbers; they decide
nothing (every outcome, interval and crossover arrives decided) and compute nothing beyond a
number's format. Changing a section's wording is editing its template."""

from __future__ import annotations

import functools
import math

import jinja2

from .. import escape
from ..fmt import fmt_num, fmt_pct, fmt_size, plural
from .roles import name


def _ratio(d) -> str:
    """A decided ratio with its 95% interval: '1.07 (1.04-1.10)'; the ratio alone without an interval."""
    ratio, low, high = (getattr(d, k, math.nan) for k in ("ratio", "low", "high"))
    if not (low == low and high == high):
        return fmt_num(ratio)
    return f"{fmt_num(ratio)} ({fmt_num(low)}–{fmt_num(high)})"


def _bytes(n) -> str:
    """A continuous number of bytes, three significant digits: '9.12 KiB', '850 B', 'unbounded' for inf."""
    if n is None or n != n:
        return "n/a"
    if n == math.inf:
        return "unbounded"
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if abs(n) >= scale:
            return f"{fmt_num(n / scale)} {unit}"
    return f"{fmt_num(n)} B"


def _percent(x, digits: int = 3) -> str:
    """A share of 1 as a percentage: 0.123 -> '12.3%'."""
    return "n/a" if x is None or x != x else f"{fmt_num(100 * x, digits)}%"


def _join(items, last: str = "and") -> str:
    """['a', 'b', 'c'] -> 'a, b and c'."""
    items = [str(i) for i in items]
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + f" {last} " + items[-1]


# the comparison report's templates (comparison_*) are written with a block tag's newline removed
TRIMMED_PREFIX = "comparison_"


@functools.lru_cache(maxsize=2)
def environment(trim_blocks: bool) -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.PackageLoader("copylab.analysis", "templates"),
                             undefined=jinja2.StrictUndefined, trim_blocks=trim_blocks, lstrip_blocks=True,
                             keep_trailing_newline=False, autoescape=False)
    env.filters.update(size=fmt_size, num=fmt_num, pct=fmt_pct, ratio=_ratio, join=_join, plural=plural,
                       bytes=_bytes, percent=_percent, impl=name,
                       md=lambda text: escape.markdown(str(text)))
    env.globals.update(inf=math.inf, nan=math.nan)
    return env


def render(section: str, **context) -> str:
    """The section's template (templates/<section>.md.j2) given context: Markdown, blank runs collapsed."""
    text = environment(section.startswith(TRIMMED_PREFIX)).get_template(f"{section}.md.j2").render(**context)
    lines, out = text.splitlines(), []
    for line in lines:
        if line.strip() or (out and out[-1].strip()):
            out.append(line.rstrip())
    return "\n".join(out).strip() + "\n"

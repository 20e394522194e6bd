"""A YAML loader for files people write by hand: it refuses what a grid never needs.

PyYAML's SafeLoader builds plain values only, but it silently keeps the last of two equal keys,
expands aliases without bound ("billion laughs": a few lines that stand for 10^9 values), and
composes nested collections recursively (20 000 brackets raise RecursionError). This loader
refuses each of those with a one-line error naming the line, before building anything.
"""

from __future__ import annotations

import re
from pathlib import Path

import yaml
from yaml.nodes import MappingNode, Node, SequenceNode

from .errors import CopylabError

MAX_BYTES = 1 << 20          # a grid is a few hundred bytes; a megabyte is not a grid
MAX_DEPTH = 16               # the schema nests two levels (a mapping of lists)
MAX_EXPANDED_NODES = 100_000  # values after expanding aliases; the largest sane grid is far below


class _Refused(Exception):
    """Raised inside the loader; turned into a CopylabError naming the file."""


class _Strict:
    """What both loaders refuse while constructing: duplicate keys, keys that are not plain values."""

    def construct_mapping(self, node, deep=False):
        if isinstance(node, MappingNode):
            seen = {}
            for key_node, _ in node.value:
                key = self.construct_object(key_node, deep=True)
                try:
                    hash(key)
                except TypeError:
                    raise _Refused(f"a key at line {key_node.start_mark.line + 1} is not a plain value") from None
                if key in seen:
                    raise _Refused(f"key {key!r} appears twice (lines {seen[key]} and "
                                   f"{key_node.start_mark.line + 1}); remove one")
                seen[key] = key_node.start_mark.line + 1
        return super().construct_mapping(node, deep=deep)


class StrictLoader(_Strict, yaml.SafeLoader):
    """PyYAML's own parser (when libyaml is missing): the depth is checked while composing."""

    def __init__(self, stream):
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent, index):
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                raise _Refused(f"nested deeper than {MAX_DEPTH} levels at line {self._line()}")
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def _line(self) -> int:
        mark = self.peek_event().start_mark if self.check_event() else None
        return mark.line + 1 if mark else 0


# libyaml's parser, about 10 times faster (a grid of 60,000 sizes: 0.5 s instead of 5 s before its
# refusal); its composer recurses in C, so the depth is checked on the parser's events first
CStrictLoader = type("CStrictLoader", (_Strict, yaml.CSafeLoader), {}) if yaml.__with_libyaml__ else None


def _check_depth(text: str) -> None:
    depth = 0
    try:
        for event in yaml.parse(text, Loader=yaml.CSafeLoader):
            if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
                depth += 1
                if depth > MAX_DEPTH:
                    raise _Refused(f"nested deeper than {MAX_DEPTH} levels at line {event.start_mark.line + 1}")
            elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
                depth -= 1
    except yaml.MarkedYAMLError as exc:  # libyaml's scanner stops deep flow nesting before its events
        if "nesting depth" not in str(exc.problem):
            raise
        raise _Refused(f"nested deeper than {MAX_DEPTH} levels at line {exc.problem_mark.line + 1}") from None


# YAML 1.2's numbers, which PyYAML (YAML 1.1) reads as strings: 2e-1, 1E3, 1.0e5 (no dot or no
# exponent sign), and 0o17. PyYAML's own int and float resolvers come first; these catch the rest.
for _loader in (StrictLoader, CStrictLoader):
    if _loader is not None:
        _loader.add_implicit_resolver(
            "tag:yaml.org,2002:float",
            re.compile(r"^[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9_]+)(?:[eE][-+]?[0-9]+)?$"),
            list("-+0123456789."))
        _loader.add_implicit_resolver("tag:yaml.org,2002:int", re.compile(r"^[-+]?0o[0-7_]+$"), list("-+0"))


def _expanded_size(node: Node, memo: dict[int, int]) -> int:
    """How many values the document stands for once every alias is expanded (aliases share nodes)."""
    key = id(node)
    if key in memo:
        return memo[key]
    memo[key] = 1  # a node that refers to itself counts once more, not forever
    size = 1
    if isinstance(node, SequenceNode):
        size += sum(_expanded_size(child, memo) for child in node.value)
    elif isinstance(node, MappingNode):
        size += sum(_expanded_size(k, memo) + _expanded_size(v, memo) for k, v in node.value)
    memo[key] = size
    return size


def load(path: Path):
    """Parse one YAML document from path with the limits above; CopylabError (one line) if refused."""
    try:
        size = path.stat().st_size
        if size > MAX_BYTES:
            raise CopylabError(f"{path}: {size} bytes is too large for a grid (limit {MAX_BYTES})")
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise CopylabError(f"{path}: not a text file") from None
    loader = None
    try:
        if CStrictLoader is not None:
            _check_depth(text)
        loader = (CStrictLoader or StrictLoader)(text)
        node = loader.get_single_node()
        if node is None:
            return None
        nodes = _expanded_size(node, {})
        if nodes > MAX_EXPANDED_NODES:
            raise _Refused(f"aliases expand to over {MAX_EXPANDED_NODES} values ({nodes}); write the values out")
        return loader.construct_document(node)
    except _Refused as exc:
        raise CopylabError(f"{path}: {exc}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise CopylabError(f"{path}: not valid YAML{where}: {problem}") from None
    finally:
        if loader is not None:
            loader.dispose()

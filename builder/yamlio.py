"""YAML loading that keeps line numbers and refuses duplicate keys.

PyYAML silently keeps the last of two equal keys; a contributor who types ``flags`` twice would
lose one without a word. We compose the node tree first (cheap, with marks), reject duplicates and
record the line of every key, then construct the values.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import yaml

try:  # the C loader is ~10x faster; fall back where libyaml is missing
    _Loader: Any = yaml.CSafeLoader
except AttributeError:  # pragma: no cover
    _Loader = yaml.SafeLoader

Loc = tuple[str | int, ...]


@dataclass
class YamlDoc:
    """A parsed YAML document with the 1-based line of each key path (relative to the text)."""

    value: Any
    lines: dict[Loc, int] = field(default_factory=dict)

    def line_of(self, loc: Loc, default: int = 1) -> int:
        """Line of the deepest known prefix of ``loc``."""
        for end in range(len(loc), 0, -1):
            if loc[:end] in self.lines:
                return self.lines[loc[:end]]
        return default


class YamlProblem(Exception):
    def __init__(self, message: str, line: int) -> None:
        super().__init__(message)
        self.message = message
        self.line = line


def _walk(node: yaml.Node, loc: Loc, lines: dict[Loc, int]) -> None:
    if isinstance(node, yaml.MappingNode):
        seen: dict[str, int] = {}
        for key_node, value_node in node.value:
            key = str(key_node.value)
            line = key_node.start_mark.line + 1
            if key in seen:
                raise YamlProblem(f"duplicate key '{key}' (first defined on line {seen[key]})", line)
            seen[key] = line
            lines[(*loc, key)] = line
            _walk(value_node, (*loc, key), lines)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            lines[(*loc, index)] = item.start_mark.line + 1
            _walk(item, (*loc, index), lines)


def load_yaml(text: str) -> YamlDoc:
    """Parse ``text``; raise :class:`YamlProblem` with a 1-based line on any defect."""
    try:
        node = yaml.compose(text, Loader=_Loader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else 1
        raise YamlProblem(f"invalid YAML: {exc.problem or exc.context}", line) from None
    except yaml.YAMLError as exc:
        raise YamlProblem(f"invalid YAML: {exc}", 1) from None
    if node is None:
        return YamlDoc(None)
    lines: dict[Loc, int] = {}
    _walk(node, (), lines)
    try:
        value = yaml.load(text, Loader=_Loader)  # noqa: S506 - a safe loader
    except yaml.YAMLError as exc:  # pragma: no cover - compose already validated syntax
        raise YamlProblem(f"invalid YAML: {exc}", 1) from None
    return YamlDoc(value, lines)

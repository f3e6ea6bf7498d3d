"""YAML loading that keeps line numbers and refuses duplicate keys.

PyYAML silently keeps the last of two equal keys; a contributor who types ``flags`` twice would
lose one without a word. We compose the node tree first (cheap, with marks), reject duplicates and
record the line of every key, then construct the values.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import yaml

_Base: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # the C loader is ~10x faster


class _Loader(_Base):  # type: ignore[misc,valid-type]
    """Safe loader whose impossible dates (2026-02-30) stay strings for validation to report."""


def _timestamp(loader: Any, node: yaml.ScalarNode) -> Any:
    try:
        return yaml.SafeLoader.construct_yaml_timestamp(loader, node)
    except ValueError:
        return str(node.value)


_Loader.add_constructor("tag:yaml.org,2002:timestamp", _timestamp)

Loc = tuple[str | int, ...]


class YamlProblem(Exception):
    def __init__(self, message: str, line: int) -> None:
        super().__init__(message)
        self.message = message
        self.line = line


@dataclass
class YamlDoc:
    """A parsed YAML document with the file line of each key path.

    ``duplicates`` lists repeated keys: they are errors, but the document is still returned (the
    last value wins, as in PyYAML) so one typo does not cascade into errors elsewhere.
    """

    value: Any
    lines: dict[Loc, int] = field(default_factory=dict)
    duplicates: list[YamlProblem] = field(default_factory=list)

    def line_of(self, loc: Loc, default: int = 1) -> int:
        """Line of the deepest known prefix of ``loc``."""
        for end in range(len(loc), 0, -1):
            if loc[:end] in self.lines:
                return self.lines[loc[:end]]
        return default


def _walk(node: yaml.Node, loc: Loc, doc: YamlDoc, first: int) -> None:
    if isinstance(node, yaml.MappingNode):
        seen: dict[str, int] = {}
        for key_node, value_node in node.value:
            key = str(key_node.value)
            line = key_node.start_mark.line + first
            if key in seen:
                doc.duplicates.append(
                    YamlProblem(f"duplicate key '{key}' (first defined on line {seen[key]})", line)
                )
            seen[key] = line
            doc.lines[(*loc, key)] = line
            _walk(value_node, (*loc, key), doc, first)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            doc.lines[(*loc, index)] = item.start_mark.line + first
            _walk(item, (*loc, index), doc, first)


def load_yaml(text: str, first_line: int = 1) -> YamlDoc:
    """Parse ``text`` whose first line is file line ``first_line``.

    Raise :class:`YamlProblem` (with a file line) on a syntax error; duplicate keys are collected
    in :attr:`YamlDoc.duplicates` instead.
    """
    # One parse: the composed node tree gives the key lines and is then constructed into values.
    loader = _Loader(text)
    try:
        try:
            node = loader.get_single_node()
        except yaml.MarkedYAMLError as exc:
            mark = exc.problem_mark or exc.context_mark
            line = mark.line + first_line if mark is not None else first_line
            raise YamlProblem(f"invalid YAML: {exc.problem or exc.context}", line) from None
        except yaml.YAMLError as exc:
            raise YamlProblem(f"invalid YAML: {exc}", first_line) from None
        if node is None:
            return YamlDoc(None)
        doc = YamlDoc(None)
        _walk(node, (), doc, first_line)
        try:
            doc.value = loader.construct_document(node)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            line = mark.line + first_line if mark is not None else first_line
            raise YamlProblem(f"invalid YAML: {exc}", line) from None
        return doc
    finally:
        loader.dispose()

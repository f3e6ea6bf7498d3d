"""YAML loading that keeps line numbers and refuses duplicate keys.

PyYAML silently keeps the last of two equal keys; a contributor who types ``flags`` twice would
lose one without a word. We compose the node tree first (cheap, with marks), reject duplicates and
record the line of every key, then construct the values.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import yaml

_Base: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # the C loader is much faster


class _Loader(_Base):  # type: ignore[misc,valid-type]
    """Safe loader whose impossible dates (2026-02-30) stay strings for validation to report."""


def _timestamp(loader: Any, node: yaml.ScalarNode) -> Any:
    try:
        return yaml.SafeLoader.construct_yaml_timestamp(loader, node)
    except ValueError:
        return str(node.value)


_Loader.add_constructor("tag:yaml.org,2002:timestamp", _timestamp)

Loc = tuple[str | int, ...]

CONTROL_CHARACTERS = r"\x00-\x08\x0b\x0c\x0e-\x1f\x7f"
"""Characters no text may hold, as the body of a regex class (Python, RE2 and ECMA read it alike):
the C0 controls but tab and line breaks, and DEL. XML cannot carry them (the feeds), and a YAML
escape (``"\\x01"``) is the only way one gets into a value."""
CONTROL_RE = re.compile(f"[{CONTROL_CHARACTERS}]")


def control_problem(text: str) -> str | None:
    """Why ``text`` may not be used as text (it holds a control character), or None."""
    found = CONTROL_RE.search(text)
    if found is None:
        return None
    return (
        f"control character U+{ord(found.group()):04X} in text: text may hold tabs and line breaks, "
        "no other control character"
    )


class YamlProblem(Exception):
    def __init__(self, message: str, line: int) -> None:
        super().__init__(message)
        self.message = message
        self.line = line

    def __reduce__(self) -> tuple[type[YamlProblem], tuple[str, int]]:
        # Documents cross process boundaries (render workers, the record): keep the line when pickled.
        return (YamlProblem, (self.message, self.line))


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
            _key_line(key_node, loc, doc, first, seen)
            _walk(value_node, (*loc, str(key_node.value)), doc, first)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            doc.lines[(*loc, index)] = item.start_mark.line + first
            _walk(item, (*loc, index), doc, first)
    else:
        _check_scalar(node, first)


def _check_scalar(node: yaml.Node, first: int) -> None:
    problem = control_problem(str(node.value))
    if problem is not None:
        raise YamlProblem(problem, node.start_mark.line + first)


def _key_line(key_node: yaml.Node, loc: Loc, doc: YamlDoc, first: int, seen: dict[str, int]) -> None:
    """Record a key's line, and a duplicate when the mapping already had that key."""
    key = str(key_node.value)
    line = key_node.start_mark.line + first
    if key in seen:
        doc.duplicates.append(YamlProblem(f"duplicate key '{key}' (first defined on line {seen[key]})", line))
    seen[key] = line
    doc.lines[(*loc, key)] = line


_STR = "tag:yaml.org,2002:str"
_MAP = "tag:yaml.org,2002:map"
_SEQ = "tag:yaml.org,2002:seq"


class _Unusual(Exception):
    """The document needs PyYAML's full constructor (aliases, merge keys, explicit collection tags)."""


def _build(node: yaml.Node, loc: Loc, doc: YamlDoc, first: int, loader: Any, seen_nodes: set[int]) -> Any:
    """Construct ``node`` and record its key lines in one walk, as :func:`_walk` plus PyYAML's
    constructor would: plain maps, lists and strings are built here, any other scalar by the loader.
    """
    if id(node) in seen_nodes:
        raise _Unusual  # an alias: PyYAML shares the constructed object
    seen_nodes.add(id(node))
    if isinstance(node, yaml.ScalarNode):
        _check_scalar(node, first)
        return node.value if node.tag == _STR else loader.construct_object(node, deep=True)
    if isinstance(node, yaml.MappingNode):
        if node.tag != _MAP:
            raise _Unusual
        data: dict[Any, Any] = {}
        seen: dict[str, int] = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode) or key_node.tag not in _PLAIN_KEY_TAGS:
                raise _Unusual  # merge keys (<<), '=' keys, collections as keys: PyYAML's rules apply
            _key_line(key_node, loc, doc, first, seen)
            _check_scalar(key_node, first)
            key = key_node.value if key_node.tag == _STR else loader.construct_object(key_node, deep=True)
            data[key] = _build(value_node, (*loc, str(key_node.value)), doc, first, loader, seen_nodes)
        return data
    if isinstance(node, yaml.SequenceNode):
        if node.tag != _SEQ:
            raise _Unusual
        items = []
        for index, item in enumerate(node.value):
            doc.lines[(*loc, index)] = item.start_mark.line + first
            items.append(_build(item, (*loc, index), doc, first, loader, seen_nodes))
        return items
    raise _Unusual


_PLAIN_KEY_TAGS = frozenset(
    {
        _STR,
        "tag:yaml.org,2002:int",
        "tag:yaml.org,2002:float",
        "tag:yaml.org,2002:bool",
        "tag:yaml.org,2002:null",
        "tag:yaml.org,2002:timestamp",
    }
)


MAX_DEPTH = 64
"""Deepest nesting of lists and mappings a document may have (libyaml's composer recurses: a few
thousand levels of ``[`` overflow the stack)."""


_INDENT_RE = re.compile(r"^ +", re.MULTILINE)


def _may_alias_or_nest_deeply(text: str) -> bool:
    """Whether ``text`` can hold an alias or nest deeper than :data:`MAX_DEPTH` (else the event
    pass of :func:`_check_events`, which costs as much as the parse, is skipped).

    An alias needs a ``*``. A level of nesting opens a flow collection (``[``, ``{``), sits after
    a ``- `` or ``? `` on the same line, or is indented (by at least one space for every two levels:
    a list may sit at its key's indentation)."""
    if "*" in text:
        return True
    indent = max((len(match) for match in _INDENT_RE.findall(text)), default=0)
    bound = text.count("[") + text.count("{") + text.count("- ") + text.count("? ") + 2 * indent + 2
    return bound > MAX_DEPTH


def _check_events(text: str, first_line: int) -> None:
    """Refuse aliases and too deep nesting before anything is composed.

    An alias repeats a value: 500 bytes of nested aliases expand to gigabytes, and ``&a [*a]`` is a
    value that contains itself. No site file needs one, so each is an error at its line."""
    loader = _Loader(text)
    try:
        depth = 0
        while True:
            event = loader.get_event()
            if event is None or isinstance(event, yaml.StreamEndEvent):
                return
            line = (event.start_mark.line if event.start_mark is not None else 0) + first_line
            if isinstance(event, yaml.AliasEvent):
                raise YamlProblem(
                    f"YAML aliases are not allowed (*{event.anchor}): write the value out", line
                )
            if isinstance(event, yaml.CollectionStartEvent):
                depth += 1
                if depth > MAX_DEPTH:
                    raise YamlProblem(f"nested more than {MAX_DEPTH} levels deep", line)
            elif isinstance(event, yaml.CollectionEndEvent):
                depth -= 1
    finally:
        loader.dispose()


def load_yaml(text: str, first_line: int = 1) -> YamlDoc:
    """Parse ``text`` whose first line is file line ``first_line``.

    Raise :class:`YamlProblem` (with a file line) on a syntax error, an alias or nesting deeper
    than :data:`MAX_DEPTH`; duplicate keys are collected in :attr:`YamlDoc.duplicates` instead.
    """
    # The events first (aliases, depth: see _check_events), then the composed node tree gives the
    # key lines and is constructed into values.
    loader = _Loader(text)
    try:
        try:
            if _may_alias_or_nest_deeply(text):
                _check_events(text, first_line)
            node = loader.get_single_node()
        except yaml.MarkedYAMLError as exc:
            mark = exc.problem_mark or exc.context_mark
            line = mark.line + first_line if mark is not None else first_line
            raise YamlProblem(f"invalid YAML: {exc.problem or exc.context}", line) from None
        except yaml.YAMLError as exc:
            raise YamlProblem(f"invalid YAML: {exc}", first_line) from None
        if node is None:
            return YamlDoc(None)
        try:
            try:
                doc = YamlDoc(None)
                doc.value = _build(node, (), doc, first_line, loader, set())
            except _Unusual:
                doc = YamlDoc(None)
                _walk(node, (), doc, first_line)
                doc.value = loader.construct_document(node)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            line = mark.line + first_line if mark is not None else first_line
            raise YamlProblem(f"invalid YAML: {exc}", line) from None
        return doc
    finally:
        loader.dispose()

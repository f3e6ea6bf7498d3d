"""Figures in prose: the ``{{ ... }}`` syntax that binds a figure to the rows, and plain figures.

A body writes a figure from the rows as ``{{ decode_tok_s prompt=2048 concurrency=1 }}``, a ratio of
two as ``{{ ratio decode_tok_s recipe=a / recipe=b }}``, and marks a number that is not a row figure
(a download size, a duration timed by hand) as ``{{ unbound about 22 GB }}``. This module parses the
syntax into :class:`Binding` values (a markdown-it plugin, :func:`figure_plugin`) and finds the
figures written as plain numbers with a unit (:func:`plain_figures`). Which rows a binding names, and
whether a row supports a plain figure, is the site layer's business (:mod:`builder.site.prose`): this
layer knows nothing of rows.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from markdown_it import MarkdownIt
    from markdown_it.rules_inline import StateInline
    from markdown_it.token import Token

SELECTORS: dict[str, str] = {
    "recipe": "recipe",
    "prompt": "prompt_tokens",
    "output": "output_tokens",
    "context": "context_tokens",
    "concurrency": "concurrency",
    "request_rate": "request_rate",
    "date": "date",
    "node": "node",
    "version": "engine_version",
}
"""Selector key in the syntax → the row field it compares (``recipe`` picks the recipe's rows)."""

_INT_KEYS = frozenset({"prompt", "output", "context", "concurrency"})

UNBOUND = "unbound"
RATIO = "ratio"

Selector = tuple[str, Any]
"""A selector key and its typed value (``None``: the field is not recorded, written ``unknown``)."""


@dataclass(frozen=True)
class Side:
    """One figure of a binding: a metric (a numeric row field) and the selectors that pick its rows."""

    metric: str
    selectors: tuple[Selector, ...] = ()

    def get(self, key: str, default: Any = None) -> Any:
        return next((value for name, value in self.selectors if name == key), default)


@dataclass(frozen=True)
class Binding:
    """One ``{{ ... }}`` of a body, as written."""

    source: str
    """The text between the braces, stripped."""
    line: int = 0
    """Line in the body (0 = its first line); :class:`~builder.content.markdown.Markdown` adds the
    file's."""
    in_heading: bool = False
    in_link: bool = False
    kind: str = "value"
    """``value``, ``ratio`` or ``unbound``."""
    sides: tuple[Side, ...] = ()
    """One side for a value, two for a ratio (the second with the first's selectors under its own)."""
    text: str = ""
    """An unbound figure's text."""
    error: str = ""
    """Why the text is not a binding (the build fails with it)."""


@dataclass(frozen=True)
class BoundFigure:
    """What a binding shows: its text and, for a figure from the rows, the link to its row."""

    text: str
    href: str = ""
    title: str = ""
    key: str = ""
    """The (recipe, setting, metric) of a figure from the rows, marked on it as ``data-figure``."""


def parse_binding(source: str, metrics: frozenset[str] | None = None) -> Binding:
    """The binding written as ``{{ source }}`` (errors in :attr:`Binding.error`). ``metrics``: the
    names a figure may take (the row fields with a unit); any name when None."""
    text = source.strip()
    words = text.split()
    if not words:
        return Binding(text, error="empty figure: write {{ METRIC KEY=VALUE ... }}")
    if words[0] == UNBOUND:
        rest = text[len(UNBOUND) :].strip()
        if not rest:
            return Binding(text, error="'unbound' needs the figure's text: {{ unbound 22 GB }}")
        return Binding(text, kind=UNBOUND, text=rest)
    try:
        if words[0] == RATIO:
            if words.count("/") != 1:
                raise ValueError("a ratio is {{ ratio METRIC KEY=VALUE ... / [METRIC] KEY=VALUE ... }}")
            cut = words.index("/")
            top = _side(words[1:cut], None, metrics)
            bottom = _side(words[cut + 1 :], top, metrics)
            return Binding(text, kind=RATIO, sides=(top, bottom))
        return Binding(text, sides=(_side(words, None, metrics),))
    except ValueError as exc:
        return Binding(text, error=str(exc))


def _side(words: list[str], inherit: Side | None, metrics: frozenset[str] | None) -> Side:
    metric = inherit.metric if inherit is not None else ""
    if words and "=" not in words[0]:
        metric, words = words[0], words[1:]
    if not metric:
        raise ValueError("a figure starts with its metric, e.g. {{ decode_tok_s prompt=2048 }}")
    if metrics is not None and metric not in metrics:
        raise ValueError(f"unknown metric '{metric}' (one of: {', '.join(sorted(metrics))})")
    chosen: dict[str, Any] = dict(inherit.selectors) if inherit is not None else {}
    seen: set[str] = set()
    for word in words:
        key, eq, raw = word.partition("=")
        if not eq or not raw:
            raise ValueError(f"'{word}' is not KEY=VALUE (keys: {', '.join(SELECTORS)})")
        if key not in SELECTORS:
            raise ValueError(f"unknown key '{key}' (keys: {', '.join(SELECTORS)})")
        if key in seen:
            raise ValueError(f"'{key}' is given twice")
        seen.add(key)
        chosen[key] = _typed(key, raw)
    return Side(metric, tuple(sorted(chosen.items())))


def _typed(key: str, raw: str) -> Any:
    if raw == "unknown" and key != "recipe":
        return None
    if key in _INT_KEYS:
        if not raw.isdigit():
            raise ValueError(f"{key}={raw}: a whole number (or 'unknown')")
        return int(raw)
    if key == "request_rate":
        if raw == "inf":
            return float("inf")
        try:
            return float(raw)
        except ValueError:
            raise ValueError(f"request_rate={raw}: a number or 'inf'") from None
    if key == "date":
        try:
            return dt.date.fromisoformat(raw)
        except ValueError:
            raise ValueError(f"date={raw}: a date, YYYY-MM-DD") from None
    return raw


# --- the markdown-it plugin ------------------------------------------------------------------------


class _Scan:
    """Where the next ``}}`` and how many line breaks before a position are, in one inline source.

    The inline rule runs at every ``{{``; finding the close or counting lines from the start each
    time would make a body of many ``{{`` quadratic. Positions mostly move forward, so each answer
    starts from the last one: every character is looked at about once.
    """

    __slots__ = ("src", "_close", "_close_from", "_line_pos", "_lines")

    def __init__(self, src: str) -> None:
        self.src = src
        self._close = -1
        self._close_from = len(src) + 1  # nothing asked yet
        self._line_pos = 0
        self._lines = 0

    def close(self, start: int) -> int:
        """The next ``}}`` at or after ``start``, or -1."""
        if self._close_from <= start and (self._close < 0 or self._close >= start):
            return self._close
        self._close, self._close_from = self.src.find("}}", start), start
        return self._close

    def lines_before(self, pos: int) -> int:
        if pos >= self._line_pos:
            self._lines += self.src.count("\n", self._line_pos, pos)
        else:
            self._lines -= self.src.count("\n", pos, self._line_pos)
        self._line_pos = pos
        return self._lines


_SCAN = "figure_scan"
"""The key of the current :class:`_Scan` in a parse's ``env``."""


def _scan(state: StateInline) -> _Scan:
    scan: _Scan | None = state.env.get(_SCAN)
    if scan is None or scan.src is not state.src:
        scan = state.env[_SCAN] = _Scan(state.src)
    return scan


def _figure_rule(state: StateInline, silent: bool) -> bool:
    src, pos = state.src, state.pos
    if not src.startswith("{{", pos):
        return False
    scan = _scan(state)
    end = scan.close(pos + 2)
    if end < 0:
        return False
    if not silent:
        token = state.push("figure", "", 0)
        token.content = src[pos + 2 : end]
        token.meta = {"offset": scan.lines_before(pos)}
        words = token.content.split(None, 1)
        if len(words) == 2 and words[0] == UNBOUND:  # shown as written, bound or not
            token.meta["bound"] = BoundFigure(words[1].strip())
    state.pos = end + 2
    return True


def _locate(state: Any) -> None:
    """Give each figure token its line in the body, whether it sits in a heading, and its index
    in document order (the order :meth:`Markdown.bindings` lists them in)."""
    line = 0
    heading = False
    index = 0
    for token in state.tokens:
        if token.map is not None:
            line = token.map[0]
        if token.type == "heading_open":
            heading = True
        elif token.type == "heading_close":
            heading = False
        link = 0
        for child in token.children or ():
            link += 1 if child.type == "link_open" else -1 if child.type == "link_close" else 0
            if child.type == "figure":
                child.meta.update(
                    line=line + child.meta.get("offset", 0), heading=heading, link=link > 0, index=index
                )
                index += 1


def _render_figure(self: Any, tokens: list[Token], idx: int, options: Any, env: Any) -> str:
    from markdown_it.common.utils import escapeHtml

    token = tokens[idx]
    bound: BoundFigure | None = token.meta.get("bound")
    if bound is None:  # a body rendered without its figures: shown as written
        return escapeHtml("{{" + token.content + "}}")
    if not bound.href:
        return escapeHtml(bound.text)
    title = f' title="{escapeHtml(bound.title)}"' if bound.title else ""
    key = f' data-figure="{escapeHtml(bound.key)}"' if bound.key else ""
    return f'<a class="bound-figure" href="{escapeHtml(bound.href)}"{title}{key}>{escapeHtml(bound.text)}</a>'


def figure_plugin(md: MarkdownIt) -> None:
    """``{{ ... }}`` as a ``figure`` token (see the module's docstring)."""
    md.inline.ruler.before("text", "figure", _figure_rule)
    md.core.ruler.after("inline", "figure_lines", _locate)
    md.add_render_rule("figure", _render_figure)


# --- plain figures ---------------------------------------------------------------------------------

UNITS = ("tok/s", "t/s", "ms", "s", "GiB", "GB", "×", "x")
"""Units after which a number is a figure a row could support (a space between is allowed, except
before ``×`` and ``x``: "1 × DGX Spark" is a count)."""

_PLAIN = re.compile(
    r"(?<![\w.,/+-])(\d{1,3}(?:,\d{3})+|\d+)(?:\.(\d+))?(?:[ \u00a0]?(tok/s|t/s|ms|GiB|GB|s)|(×|x))(?![\w/])"
)
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_TICKS = re.compile(r"`+")


def _without_code_spans(line: str) -> str:
    """``line`` with each code span (a run of backticks to the next run of the same length) a space.

    Linear: the runs are found once, and the next run of each length is looked up from a pointer that
    only moves forward (a regular expression that searches for the closing run from every opening one
    is quadratic in a line of unmatched backticks)."""
    if "`" not in line:
        return line
    runs = [(m.start(), m.end()) for m in _TICKS.finditer(line)]
    by_length: dict[int, list[int]] = {}
    for index, (start, end) in enumerate(runs):
        by_length.setdefault(end - start, []).append(index)
    pointer = dict.fromkeys(by_length, 0)
    out, last, index = [], 0, 0
    while index < len(runs):
        start, end = runs[index]
        same, at = by_length[end - start], pointer[end - start]
        while at < len(same) and same[at] <= index:
            at += 1
        pointer[end - start] = at
        if at < len(same):
            out += [line[last:start], " "]
            last = runs[same[at]][1]
            index = same[at] + 1
        else:
            index += 1
    out.append(line[last:])
    return "".join(out)


class _Next:
    """The next ``needle`` at or after a start that never moves back: each character is read once."""

    __slots__ = ("text", "needle", "at", "since")

    def __init__(self, text: str, needle: str) -> None:
        self.text, self.needle, self.at, self.since = text, needle, -1, -1

    def find(self, start: int) -> int:
        if self.since >= 0 and (self.at < 0 or self.at >= start):
            return self.at  # none after an earlier start is none after this one
        self.at, self.since = self.text.find(self.needle, start), start
        return self.at


_HIDDEN_OPENERS = ("{{", "](", "<http://", "<https://", "http://", "https://")


def _without_hidden(line: str) -> str:
    """``line`` with what holds no prose figure a space each: ``{{ ... }}``, a link target ``](...)``,
    ``<http...>`` and a bare URL (to the next blank). Linear in the line (see :class:`_Next`)."""
    if not any(opener in line for opener in _HIDDEN_OPENERS):
        return line
    braces, paren, angle = _Next(line, "}}"), _Next(line, ")"), _Next(line, ">")
    out, last, pos, size = [], 0, 0, len(line)
    while pos < size:
        char, end = line[pos], -1
        if char == "{" and line.startswith("{{", pos):
            close = braces.find(pos + 2)
            end = close + 2 if close >= 0 else -1
        elif char == "]" and line.startswith("](", pos):
            close = paren.find(pos + 2)
            end = close + 1 if close >= 0 else -1
        elif char == "<" and line.startswith(("<http://", "<https://"), pos):
            close = angle.find(pos + 1)
            end = close + 1 if close >= 0 else -1
        elif char == "h" and line.startswith(("http://", "https://"), pos):
            scheme_end = stop = pos + (8 if line.startswith("https://", pos) else 7)
            while stop < size and not line[stop].isspace():
                stop += 1
            end = stop if stop > scheme_end else -1
        if end < 0:
            pos += 1
            continue
        out += [line[last:pos], " "]
        pos = last = end
    out.append(line[last:])
    return "".join(out)


@dataclass(frozen=True)
class PlainFigure:
    """A number with a unit written in a body's text."""

    line: int
    """Line in the body (0 = its first line)."""
    text: str
    """As written, e.g. ``42.6 tok/s``."""
    value: float
    decimals: int
    """Digits after the point: the figure stands for ``value ± 0.5 × 10**-decimals``."""
    unit: str
    """One of :data:`UNITS` (``t/s`` read as ``tok/s``, ``x`` as ``×``)."""
    context: str = field(default="", compare=False)


def plain_figures(body: str) -> list[PlainFigure]:
    """The numbers with a unit in a body's text: not in code (fenced blocks, code spans), link
    targets, bare URLs or ``{{ ... }}``."""
    if not _PLAIN.search(body):
        return []
    out: list[PlainFigure] = []
    fence = ""
    for number, line in enumerate(body.split("\n")):
        opened = _FENCE.match(line)
        if fence:
            if opened and opened.group(1)[0] == fence[0] and len(opened.group(1)) >= len(fence):
                fence = ""
            continue
        if opened:
            fence = opened.group(1)
            continue
        text = _without_hidden(_without_code_spans(line))
        for match in _PLAIN.finditer(text):
            whole, frac, unit = match.group(1), match.group(2) or "", match.group(3) or match.group(4)
            value = float(whole.replace(",", "") + ("." + frac if frac else ""))
            unit = {"t/s": "tok/s", "x": "×"}.get(unit, unit)
            out.append(PlainFigure(number, match.group(0), value, len(frac), unit, line.strip()))
    return out

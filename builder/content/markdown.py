"""Markdown documents: front matter, body rendering and the troubleshooting FAQ.

One :class:`Markdown` instance (one markdown-it parser) is built per build and reused for every page.
Raw HTML is off and links go through markdown-it's ``validateLink`` (no ``javascript:``, ``data:``,
``vbscript:``, ``file:``), so a body cannot inject markup.
"""

from __future__ import annotations

import dataclasses
import hashlib
import pickle
import re
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from builder.content.figures import Binding, BoundFigure, figure_plugin, parse_binding
from builder.errors import ContentError
from builder.limits import BODY_CHARS, FRONT_MATTER_CHARS
from builder.yamlio import YamlDoc, YamlProblem, load_yaml

if TYPE_CHECKING:
    from markdown_it.token import Token

FAQ_HEADING = "troubleshooting"


@dataclass(frozen=True)
class Document:
    """A content file split into front matter and body."""

    rel: str
    """Path relative to the site root, for messages."""
    front: YamlDoc
    """Parsed front matter with key lines relative to the front matter's first line."""
    body: str
    """Markdown after the closing ``---``."""
    body_line: int
    """File line on which the body starts."""
    digest: str
    """SHA-256 of the whole file, the key of render caches."""
    body_keys: tuple[str, str] = ("", "")
    """The body's :class:`Markdown` cache keys (without, with the FAQ taken out), made once when the
    file is parsed: an edit build looks up every body, and hashing them each time adds up."""

    def __reduce__(self) -> tuple[Any, ...]:
        # Pickled for the load cache, the front matter as bytes of its own: once validated, it is
        # only read to place an error, so an edit build restoring every document need not unpickle it.
        front = self.__dict__.get("_front_blob") if "front" not in self.__dict__ else None
        if front is None:
            front = pickle.dumps(self.front, protocol=pickle.HIGHEST_PROTOCOL)
        return (_restore_document, (self.rel, front, self.body, self.body_line, self.digest, self.body_keys))

    def __getattr__(self, name: str) -> Any:
        # Only for attributes not set: a restored document's front matter, on first use.
        if name == "front":
            blob = self.__dict__.get("_front_blob")
            if blob is not None:
                front = pickle.loads(blob)
                object.__setattr__(self, "front", front)
                return front
        raise AttributeError(name)

    def line_of(self, loc: tuple[str | int, ...]) -> int:
        """File line of a front-matter key path (line 1, the opening ``---``, when unknown)."""
        return self.front.line_of(loc, default=1)


def _restore_document(
    rel: str, front: bytes, body: str, body_line: int, digest: str, body_keys: tuple[str, str]
) -> Document:
    doc = object.__new__(Document)
    doc.__dict__.update(
        rel=rel, _front_blob=front, body=body, body_line=body_line, digest=digest, body_keys=body_keys
    )
    return doc


def split_document(rel: str, text: str) -> Document:
    """Split ``---`` front matter from the body; raise :class:`ContentError` with a line."""
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    if text.startswith("\ufeff"):
        text = text[1:]
    lines = text.split("\n")
    if not lines or lines[0].rstrip("\r") != "---":
        raise ContentError("missing front matter: the file must start with a '---' line", rel, 1)
    for index in range(1, len(lines)):
        if lines[index].rstrip("\r") == "---":
            front_text = "\n".join(lines[1:index])
            body = "\n".join(lines[index + 1 :])
            break
    else:
        raise ContentError("front matter is not closed by a '---' line", rel, 1)
    if len(front_text) > FRONT_MATTER_CHARS:
        raise ContentError(
            f"front matter of {len(front_text):,} characters: at most {FRONT_MATTER_CHARS:,}", rel, 2
        )
    if len(body) > BODY_CHARS:
        raise ContentError(f"body of {len(body):,} characters: at most {BODY_CHARS:,}", rel, index + 2)
    try:
        front = load_yaml(front_text, first_line=2)
    except YamlProblem as exc:
        raise ContentError(exc.message, rel, exc.line) from None
    if not isinstance(front.value, dict):
        raise ContentError("front matter must be a mapping of keys to values", rel, 2)
    return Document(
        rel, front, body, index + 2, digest, (markdown_key(body, False), markdown_key(body, True))
    )


def _focusable_pre(render: Any) -> Any:
    """A code block renderer whose ``<pre>`` takes keyboard focus: a long line scrolls it sideways,
    and a scrolling box must be reachable without a mouse (WCAG 2.1.1)."""

    def rule(self: Any, tokens: list[Token], idx: int, options: Any, env: Any) -> str:
        html: str = render(tokens, idx, options, env)
        return html.replace("<pre>", '<pre tabindex="0">', 1)

    return rule


def markdown_key(body: str, faq: bool) -> str:
    """The :class:`Markdown` cache key of a body, rendered with or without the FAQ taken out."""
    return hashlib.sha256(f"{int(faq)}\0{body}".encode()).hexdigest()


def slugify(text: str) -> str:
    """A stable, readable anchor id for a heading."""
    norm = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii").lower()
    norm = re.sub(r"[^a-z0-9]+", "-", norm).strip("-")
    return norm or "section"


def numbered_apart(base: str, taken: set[str]) -> str:
    """``base``, or the first of ``base-2``, ``base-3``… not in ``taken``; the one chosen joins it."""
    slug, number = base, 1
    while slug in taken:
        number += 1
        slug = f"{base}-{number}"
    taken.add(slug)
    return slug


@dataclass(frozen=True)
class FaqItem:
    """One troubleshooting question and its rendered answer."""

    question: str
    anchor: str
    answer_html: str
    answer_text: str
    answer_words: str = ""
    """``answer_text`` with its whitespace collapsed, made once with the answer (the search records
    use it in every build that indexes, and the answer is kept across builds)."""


@dataclass(frozen=True)
class Heading:
    level: int
    text: str
    anchor: str


@dataclass(frozen=True)
class RenderedBody:
    """A body rendered to HTML, with the FAQ taken out of it."""

    html: str
    text: str
    """The body as plain words (code included, the FAQ left out), whitespace collapsed to single spaces."""
    headings: tuple[Heading, ...] = ()
    faq: tuple[FaqItem, ...] = field(default_factory=tuple)


def _inline_text(token: Token) -> str:
    # Line breaks inside a paragraph are word breaks: without them "same\nnode" reads "samenode".
    return "".join(
        _child_text(child) if child.type in ("text", "code_inline", "figure") else " "
        for child in token.children or []
        if child.type in ("text", "code_inline", "softbreak", "hardbreak", "figure")
    )


def _child_text(child: Token) -> str:
    if child.type != "figure":
        return child.content
    bound: BoundFigure | None = child.meta.get("bound")
    return bound.text if bound is not None else "{{" + child.content + "}}"


def figures_digest(figures: tuple[BoundFigure, ...]) -> str:
    """A hash of what a body's figures show (part of its render cache key)."""
    hasher = hashlib.sha256()
    for figure in figures:
        for part in (figure.text, figure.href, figure.title, figure.key):
            data = part.encode()
            hasher.update(len(data).to_bytes(8, "little") + data)
    return hasher.hexdigest()


class Markdown:
    """The one markdown parser of a build; each body is rendered once, by its content key."""

    def __init__(self, known: Mapping[str, RenderedBody] | None = None) -> None:
        self._known: Mapping[str, RenderedBody] = known if known is not None else {}
        """Bodies rendered before, by key (an earlier build's, kept by the engine): a key covers the
        body, the mode and what its figures show, so a body found here is the one rendering gives."""
        self._parser: Any = None
        """Made when a body first needs rendering (:meth:`_md`): a build whose bodies are all
        ``known`` never imports markdown-it (a slow import, with its regexes)."""
        self._cache: dict[str, RenderedBody] = {}
        self.used: set[str] = set()
        """Keys rendered or looked up by this build."""
        self._keys: dict[tuple[bool, str], str] = {}
        self._bound: dict[tuple[str, str], tuple[BoundFigure, ...]] = {}
        """What each document's figures show, by (path, file digest): :meth:`bind`."""
        self._bound_keys: dict[str, tuple[BoundFigure, ...]] = {}
        """The same by cache key, for :meth:`render_body`."""

    def bind(self, figures: dict[tuple[str, str], tuple[BoundFigure, ...]]) -> None:
        """What the ``{{ ... }}`` figures of each document show, by the document's (path, digest), in
        the order :meth:`bindings` lists them: worked out from the rows by the site layer
        (:func:`builder.site.prose.bind_figures`). A body's cache key covers its figures."""
        self._bound = dict(figures)
        self._bound_keys = {}

    @property
    def bound(self) -> dict[tuple[str, str], tuple[BoundFigure, ...]]:
        """What :meth:`bind` was given."""
        return self._bound

    def figures_of(self, doc: Document) -> tuple[BoundFigure, ...]:
        """What the document's figures show, as bound (none when it has none)."""
        return self._bound.get((doc.rel, doc.digest), ())

    def bindings(self, doc: Document) -> list[Binding]:
        """The ``{{ ... }}`` figures of a document's body, in order, with their file lines."""
        if "{{" not in doc.body:
            return []
        from builder.content.models import QUANTITIES

        metrics = frozenset(QUANTITIES)
        out = []
        for token in self._md().parse(doc.body):
            for child in token.children or ():
                if child.type == "figure":
                    found = parse_binding(child.content, metrics)
                    out.append(
                        dataclasses.replace(
                            found,
                            line=doc.body_line + child.meta["line"],
                            in_heading=child.meta["heading"],
                            in_link=child.meta["link"],
                        )
                    )
        return out

    def _key(self, source: str | Document, faq: bool) -> str:
        if isinstance(source, Document):
            bound = self._bound.get((source.rel, source.digest))
            if bound is not None:
                key = hashlib.sha256(
                    f"{self._plain_key(source, faq)}\0{figures_digest(bound)}".encode()
                ).hexdigest()
                self._bound_keys[key] = bound
                return key
        return self._plain_key(source, faq)

    def _plain_key(self, source: str | Document, faq: bool) -> str:
        if isinstance(source, Document) and source.body_keys[faq]:
            return source.body_keys[faq]
        body = _body(source)
        # Pages and the FAQ index ask for the same bodies again and again: the digest of a body is
        # looked up by the string itself (Python keeps a string's hash), not recomputed.
        key = self._keys.get((faq, body))
        if key is None:
            key = self._keys[(faq, body)] = markdown_key(body, faq)
        return key

    def render(self, source: str | Document, *, faq: bool = False) -> RenderedBody:
        """A body rendered (a document's: keyed by what its parse worked out)."""
        key = self._key(source, faq)
        self.used.add(key)
        cached = self._cache.get(key) or self._known.get(key)
        if cached is None:
            cached = self._render(_body(source), faq, self._bound_keys.get(key, ()))
        self._cache[key] = cached
        return cached

    def missing(self, bodies: Iterable[str | Document], *, faq: bool = False) -> dict[str, str]:
        """The bodies neither rendered nor known yet, by key, for a caller that renders them
        elsewhere (:meth:`render_body`) and hands them back (:meth:`add`)."""
        out: dict[str, str] = {}
        for source in bodies:
            key = self._key(source, faq)
            if key in out or key in self._cache:
                continue
            found = self._known.get(key)
            if found is not None:
                self._cache[key] = found
            else:
                out[key] = _body(source)
        return out

    def render_body(self, body: str, faq: bool, key: str = "") -> RenderedBody:
        """One body rendered, nothing kept (see :meth:`missing`; ``key``: the one it gave, which
        says what the body's figures show)."""
        return self._render(body, faq, self._bound_keys.get(key, ()))

    def add(self, rendered: dict[str, RenderedBody]) -> None:
        """Bodies rendered elsewhere, by key."""
        self._cache.update(rendered)

    def prerender(self, bodies: Iterable[str | Document], *, faq: bool = False) -> None:
        """Render every body not cached yet (a cold build needs every recipe body before its pages:
        the FAQ index counts questions)."""
        for source in bodies:
            self.render(source, faq=faq)

    @property
    def cache(self) -> dict[str, RenderedBody]:
        """The bodies this process rendered or was given, by digest of (mode, source)."""
        return self._cache

    def _md(self) -> Any:
        if self._parser is None:
            from markdown_it import MarkdownIt

            parser = (
                MarkdownIt("commonmark", {"html": False, "typographer": False})
                .enable(["table", "strikethrough"])
                .use(figure_plugin)
            )
            for rule in ("fence", "code_block"):
                parser.add_render_rule(rule, _focusable_pre(getattr(parser.renderer, rule)))
            self._parser = parser
        return self._parser

    def _render(self, body: str, faq: bool, figures: tuple[BoundFigure, ...] = ()) -> RenderedBody:
        tokens = self._md().parse(body)
        if figures:
            for token in tokens:
                for child in token.children or ():
                    if child.type == "figure" and child.meta["index"] < len(figures):
                        child.meta["bound"] = figures[child.meta["index"]]
        used: set[str] = set()

        def unique(anchor: str) -> str:
            candidate, n = anchor, 2
            while candidate in used:
                candidate = f"{anchor}-{n}"
                n += 1
            used.add(candidate)
            return candidate

        headings: list[Heading] = []
        faq_items: list[FaqItem] = []
        main: list[Token] = []
        index = 0
        while index < len(tokens):
            token = tokens[index]
            if token.type == "heading_open":
                level = int(token.tag[1])
                text = _inline_text(tokens[index + 1])
                if faq and level == 2 and text.strip().lower() == FAQ_HEADING:
                    index = self._collect_faq(tokens, index + 3, faq_items, unique)
                    continue
                anchor = unique(slugify(text))
                token.attrSet("id", anchor)
                headings.append(Heading(level, text, anchor))
            main.append(token)
            index += 1
        md = self._md()
        html = md.renderer.render(main, md.options, {})
        return RenderedBody(html, " ".join(_plain(main).split()), tuple(headings), tuple(faq_items))

    def _collect_faq(self, tokens: list[Token], index: int, items: list[FaqItem], unique: Any) -> int:
        """Gather ``###`` questions until the next ``##`` or higher; return where to resume."""
        question: str | None = None
        answer: list[Token] = []

        def flush() -> None:
            if question is not None:
                md = self._md()
                html = md.renderer.render(answer, md.options, {})
                text = _plain(answer)
                anchor = unique("faq-" + slugify(question))
                items.append(FaqItem(question, anchor, html, text, " ".join(text.split())))

        while index < len(tokens):
            token = tokens[index]
            if token.type == "heading_open" and int(token.tag[1]) <= 2:
                break
            if token.type == "heading_open" and token.tag == "h3":
                flush()
                question = _inline_text(tokens[index + 1]).strip()
                answer = []
                index += 3
                continue
            if question is not None:
                answer.append(token)
            index += 1
        flush()
        return index


def _body(source: str | Document) -> str:
    return source.body if isinstance(source, Document) else source


def _plain(tokens: list[Token]) -> str:
    parts: list[str] = []
    for token in tokens:
        if token.type == "inline":
            parts.append(_inline_text(token))
        elif token.type in ("fence", "code_block"):
            parts.append(token.content)
    return " ".join(p.strip() for p in parts if p.strip())

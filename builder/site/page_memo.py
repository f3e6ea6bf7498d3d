"""What recipe pages compute from the site, kept across the preview's template-only rebuilds.

A template edit in the preview re-renders every recipe page over the same site, rows and
reconciliation (the engine reuses them when only templates changed). What a page computes from
those — statuses, findings views, row anchors, headline, chart values, serve command — and the HTML
of the pure helpers its templates call (the row table, the charts' data tables, the chart data
block) are then what they were last time. A :class:`PageMemo` keeps them, by page.

Validity
    A memo belongs to the data it was computed from, by identity: the site's loaded values (every
    field but its config and connection), the reconciliation and the rows by recipe
    (:func:`owner_of`). :func:`builder.site.render.make_context` hands a memo made for other data to no
    page (it empties it), and a page renders from the memo only while its context still has that
    data (a quick page's edited site does not). A helper's result is kept only for a call whose
    arguments are all values of the page (named by role, so the key outlives the objects) or plain
    scalars: the helpers are pure functions of their arguments.

Workers
    Pages render in forked workers (:mod:`builder.engine.render_pool`), whose memo is a copy: the entries a
    worker makes are sent back (:meth:`PageMemo.take_fresh`) and kept by the parent, so the next
    build's workers inherit them.
"""

from __future__ import annotations

import dataclasses
import pickle
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import jinja2

    from builder.site.render import RenderContext

MEMOISED_HELPERS = ("row_table_rows", "chart_rows", "chart_data")
"""Template globals that are pure functions of their arguments (see :func:`builder.site.render.make_environment`)."""

_SCALARS = (str, int, float, bool, type(None))
_ITEMS = 64

COMPRESSION = 1
"""zlib level of packed entries: 131 KB → 13 KB a recipe page (100 rows), ~0.4 ms to unpack."""


@dataclass
class PageEntry:
    """One page's template-independent values and the helper results its templates asked for."""

    values: dict[str, Any]
    fragments: dict[tuple[Any, ...], Any] = field(default_factory=dict)
    """``(helper, role or scalar, ...)`` → result."""


class _Current:
    """The page being rendered: its entry and the roles of its values (by object identity)."""

    def __init__(self, entry: PageEntry, named: dict[str, Any]) -> None:
        self.entry = entry
        self.roles: dict[int, tuple[Any, ...]] = {}
        for name, value in named.items():
            if isinstance(value, _SCALARS):
                continue
            self.roles.setdefault(id(value), ("v", name))
            # Items of short lists too (a page's charts); not of its rows, which no helper takes alone.
            if isinstance(value, list | tuple) and len(value) <= _ITEMS:
                for i, item in enumerate(value):
                    if not isinstance(item, _SCALARS):
                        self.roles.setdefault(id(item), ("v", name, i))
        self._named = named  # keeps every object whose id is a key alive while the page renders

    def key(self, helper: str, args: tuple[Any, ...]) -> tuple[Any, ...] | None:
        parts: list[Any] = [helper]
        for arg in args:
            if isinstance(arg, _SCALARS):
                parts.append((type(arg).__name__, arg))
            else:
                role = self.roles.get(id(arg))
                if role is None:
                    return None  # made by the template: not ours to remember
                parts.append(role)
        return tuple(parts)


def owner_of(ctx: RenderContext) -> tuple[Any, ...]:
    """The objects a memo's values are computed from (compared by identity)."""
    site = ctx.site
    loaded = tuple(
        getattr(site, f.name) for f in dataclasses.fields(site) if f.name not in ("config", "_con")
    )
    return (*loaded, ctx.recon, ctx.rows)


def _pack(entry: PageEntry) -> bytes:
    return zlib.compress(pickle.dumps(entry, protocol=pickle.HIGHEST_PROTOCOL), COMPRESSION)


def _unpack(data: bytes) -> PageEntry:
    entry = pickle.loads(zlib.decompress(data))
    assert isinstance(entry, PageEntry)
    return entry


class PageMemo:
    """Template-independent values of pages, by output path, for one site's data.

    Entries are kept packed (pickled, compressed): a recipe page's values and fragments are ~270 KB
    as objects and ~12 KB packed, and a worker sends them packed anyway.
    """

    def __init__(self) -> None:
        self.owner: tuple[Any, ...] = ()
        self.entries: dict[str, bytes] = {}
        self.fresh: set[str] = set()
        """Entries made in this process since :meth:`take_fresh`."""
        self._filling: dict[str, PageEntry] = {}
        """Entries of pages being rendered (packed once the page is done, not kept as objects: a
        worker holding dozens of pages' values made every garbage collection pass slower)."""
        self.current: _Current | None = None

    def bind(self, ctx: RenderContext) -> None:
        """Serve ``ctx``: entries made for other data are dropped."""
        if not self.serves(ctx):
            self.entries = {}
            self.fresh = set()
            self._filling = {}
            self.owner = owner_of(ctx)
        self.current = None

    def serves(self, ctx: RenderContext) -> bool:
        owner = owner_of(ctx)
        return len(owner) == len(self.owner) and all(a is b for a, b in zip(owner, self.owner, strict=True))

    def get(self, path: str) -> PageEntry | None:
        entry = self._filling.get(path)
        if entry is not None:
            return entry
        data = self.entries.get(path)
        return None if data is None else _unpack(data)

    def add(self, path: str, values: dict[str, Any]) -> PageEntry:
        entry = PageEntry(values)
        self.entries.pop(path, None)
        self._filling[path] = entry
        return entry

    @contextmanager
    def page(self, path: str, entry: PageEntry, named: dict[str, Any]) -> Iterator[None]:
        """While a page renders, its helper calls are looked up in (and added to) ``entry``; an
        entry made for this page is packed when it is done."""
        self.current = _Current(entry, named)
        try:
            yield
        finally:
            self.current = None
            if self._filling.get(path) is entry:
                self._seal(path)

    def _seal(self, path: str) -> None:
        self.entries[path] = _pack(self._filling.pop(path))
        self.fresh.add(path)

    def take_fresh(self) -> dict[str, bytes]:
        """The entries made since the last call, packed (and kept packed)."""
        for path in list(self._filling):
            self._seal(path)
        fresh = {path: self.entries[path] for path in self.fresh if path in self.entries}
        self.fresh = set()
        return fresh

    def merge(self, entries: dict[str, bytes]) -> None:
        """Entries a worker made (for the same data: the worker is a fork of this process)."""
        self.entries.update(entries)

    def install(self, env: jinja2.Environment) -> None:
        """Wrap the pure helpers of ``env`` so a page being rendered remembers their results."""
        for name in MEMOISED_HELPERS:
            helper = env.globals.get(name)
            if callable(helper):
                env.globals[name] = self._memoised(name, helper)

    def _memoised(self, name: str, helper: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            current = self.current
            key = current.key(name, args) if current is not None and not kwargs else None
            if current is None or key is None:
                return helper(*args, **kwargs)
            fragments = current.entry.fragments
            if key not in fragments:
                fragments[key] = helper(*args)
            return fragments[key]

        return call

"""What a step reads, written down as it reads it.

The incremental engine keeps a page (or any other step's result) from one build to the next when
nothing it read has changed. Nobody declares what a step reads: the engine hands the step *reading
views* of the domain values (:mod:`builder.engine.reading`), which name each thing read with a key
(``recipe:<slug>``, ``rows-of:<slug>``, ``file:<path>``, ``value:<name>:<hash>``…) through
:func:`note`, and runs the step inside :func:`recording`. Outside a recording, :func:`note` does
nothing, so the pure build (:func:`builder.engine.pure.build_site`) and every other caller of the
domain code pay nothing for it.

A value worked out once and read by many steps (:class:`Once`) hands each reader the keys its
making read, so a step that reads it reads what the value was made from.

A *derived* value (:func:`derived`) is named instead: a step that asks for it reads its name
(``card:<slug>``, ``disputes:<model>``…), and the engine keeps the value from build to build under
what making it read. A page that read it is kept while the value is the same, even when something the
value was made from changed (a new row that moves no recipe card keeps the list pages). Outside the
engine, :func:`derived` makes the value and the caller reads what making it read.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Generic, Protocol, TypeVar, cast

T = TypeVar("T")

_current: ContextVar[set[str] | None] = ContextVar("builder_reads", default=None)


def note(key: str) -> None:
    """Say that the running step read ``key`` (nothing when no step is being recorded)."""
    reads = _current.get()
    if reads is not None:
        reads.add(key)


def noting() -> bool:
    """Whether a step is being recorded (a view may skip working out a key otherwise)."""
    return _current.get() is not None


@contextmanager
def recording() -> Iterator[set[str]]:
    """Record the keys read inside the block into the set it gives."""
    reads: set[str] = set()
    token = _current.set(reads)
    try:
        yield reads
    finally:
        _current.reset(token)


class Deriver(Protocol):
    """What the engine puts behind :func:`derived` while it renders (:mod:`builder.engine.derived`)."""

    def __call__(self, name: str, make: Callable[[], Any]) -> Any: ...


_deriver: ContextVar[Deriver | None] = ContextVar("builder_deriver", default=None)


def derived(name: str, make: Callable[[], T]) -> T:
    """The value ``make`` gives, read under ``name`` (``<kind>:<argument>``) when the engine keeps
    derived values (see the module's docstring); ``make`` must depend only on what it reads through
    the reading views and on ``name``."""
    deriver = _deriver.get()
    if deriver is None:
        return make()
    return cast("T", deriver(name, make))


@contextmanager
def deriving(deriver: Deriver | None) -> Iterator[None]:
    """Send :func:`derived` to ``deriver`` inside the block (None: make every value as asked)."""
    token = _deriver.set(deriver)
    try:
        yield
    finally:
        _deriver.reset(token)


_UNSET: object = object()


class Once(Generic[T]):
    """A value made when first asked for and kept for the rest of the build; every caller is said
    to read what making it read (a cached value must not hide its inputs from the second reader)."""

    def __init__(self, make: Callable[[], T]) -> None:
        self._make = make
        self._value: object = _UNSET
        self._reads: frozenset[str] = frozenset()

    def __call__(self) -> T:
        if self._value is _UNSET:
            with recording() as reads:
                self._value = self._make()
            self._reads = frozenset(reads)
        outer = _current.get()
        if outer is not None:
            outer.update(self._reads)
        return self._value  # type: ignore[return-value]

"""The output stages' units: the files feeds, downloads and search make, and what each is made from.

Pages declare nothing: the engine records what each page reads (:mod:`builder.engine.reading`).
The output stages still name what each of their units reads, from this vocabulary, so the engine
(:class:`builder.engine.depindex.StageMemo`) makes a unit again only when that changed:

``recipe:<slug>``
    the recipe's file (front matter and body) and every row whose ``recipe`` is the slug;
``recipes``
    the front matter of every recipe, and which recipes exist;
``rows``
    every row file;
``case-studies`` / ``posts``
    every case study / post file.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

RECIPES = "recipes"
ROWS = "rows"
CASE_STUDIES = "case-studies"
POSTS = "posts"


def recipe(slug: str) -> str:
    return f"recipe:{slug}"


Files = dict[str, bytes]


@dataclass(frozen=True)
class Batch:
    """Output units made together: ``make(names)`` makes the files of every name asked for in one
    computation (they share its work). ``keys`` gives what each name's files are made from: the
    dependencies it reads (the vocabulary above; None: not declared, made on every build) and a
    digest of anything else it reads, worked out by the site."""

    keys: Mapping[str, tuple[tuple[str, ...] | None, bytes]]
    make: Callable[[set[str]], Mapping[str, Files]]


@dataclass(frozen=True)
class Unit:
    """Output files made by ``make()`` from what ``reads`` names and ``digest`` (as in :class:`Batch`).

    An output stage declares its units; the engine makes those whose inputs changed and keeps the
    others' files from the previous build."""

    name: str
    reads: tuple[str, ...] | None
    digest: bytes
    make: Callable[[], Files]

    def batch(self) -> Batch:
        return Batch({self.name: (self.reads, self.digest)}, lambda names: {self.name: self.make()})

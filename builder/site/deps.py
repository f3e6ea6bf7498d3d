"""What a page depends on, declared where the page job is made, so a rebuild can skip it.

A page job is ``(output path, render)``. Wrapping ``render`` with :func:`depends` declares the
inputs the page reads; the incremental engine (:mod:`builder.engine.incremental`) re-renders the page only
when one of them, the templates it used (recorded while it rendered) or anything global (the
builder's code, ``site.yaml``, ``data/*.yaml``, static assets, the build date) changed. A job
without a declaration is rendered on every build — always correct, only slower — so a new page
kind is safe before anyone declares anything.

Declare what the page *reads*, not what it shows: a page that looks up recipes by slug reads every
recipe's front matter (:data:`RECIPES`). When in doubt, declare more; a missing dependency is a
stale page, which ``tests/engine/test_incremental.py`` and ``tests/engine/test_equivalence.py`` are
there to catch.

Output stages (feeds, downloads, search) declare their files the same way, as units (:class:`Unit`,
:class:`Batch`): the engine makes a unit again only when what it reads changed.

The vocabulary:

``recipe:<slug>``
    the recipe's file (front matter and body) and every row whose ``recipe`` is the slug (its
    values, file, line and status);
``rows-of:<slug>``
    every row whose ``recipe`` is the slug (its values, file and line), not the recipe's file;
``recipes``
    the front matter of every recipe, and which recipes exist (not bodies, not rows);
``models``
    which recipes exist and the base model of each (comparison links and slugs);
``model:<base model id>``
    which recipes have that base model, with their front matter and rows (comparison pages);
``rows``
    every row file (totals, latest dates, downloads);
``case-studies`` / ``posts``
    every case study / post file;
``file:<path>``
    one input file by its path from the site root (``content/posts/x.md``);
``value:<name>:<hash>``
    a value the page shows, worked out before the page renders (:func:`value`): the page renders
    again when the value changes, whatever input changed it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass

RECIPES = "recipes"
MODELS = "models"
ROWS = "rows"
CASE_STUDIES = "case-studies"
POSTS = "posts"


def recipe(slug: str) -> str:
    return f"recipe:{slug}"


def rows_of(slug: str) -> str:
    return f"rows-of:{slug}"


def model(model_id: str) -> str:
    return f"model:{model_id}"


def file(rel: str) -> str:
    return f"file:{rel}"


def value(name: str, *parts: str) -> str:
    """A dependency on a value itself (its parts, hashed into the name)."""
    hasher = hashlib.sha256()
    for part in parts:
        data = part.encode()
        hasher.update(len(data).to_bytes(8, "little") + data)
    return f"value:{name}:{hasher.hexdigest()[:32]}"


@dataclass(frozen=True)
class Declared:
    """A render function with the inputs it reads."""

    render: Callable[[], bytes]
    deps: tuple[str, ...]

    def __call__(self) -> bytes:
        return self.render()


def depends(render: Callable[[], bytes], *deps: str) -> Declared:
    """Declare that ``render`` reads only ``deps`` (besides templates and global inputs)."""
    return Declared(render, tuple(deps))


def declared(render: Callable[[], bytes]) -> tuple[str, ...] | None:
    """The declared dependencies of a render function, or None: render it on every build."""
    return render.deps if isinstance(render, Declared) else None


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

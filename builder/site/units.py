"""The output stages' units: the files feeds, downloads and search make, each under a name.

A unit declares nothing of what it reads. The engine makes each unit inside a recording
(:mod:`builder.reads`) over reading views of the site (:mod:`builder.engine.reading`), as it does
pages, and keeps the unit's files while every key it read is unchanged
(:class:`builder.engine.depindex.StageMemo`). A unit's ``digest`` covers what it is given that is
not a domain value read through a view: the paths of the rendered pages (the sitemap), the search
records (the search shards).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

Files = dict[str, bytes]


@dataclass(frozen=True)
class Batch:
    """Output units made together: ``make(names)`` yields ``(name, files)`` for every name asked for,
    one at a time, so that what making each one reads is recorded apart. Work the names share is
    made once, before the first or through :class:`builder.reads.Once` (which hands its reads to
    every name that uses it). ``digests``: each name's digest (see the module docstring)."""

    digests: Mapping[str, bytes]
    make: Callable[[set[str]], Iterator[tuple[str, Files]]]


@dataclass(frozen=True)
class Unit:
    """Output files made by ``make()``, with a digest as in :class:`Batch`.

    An output stage gives its units; the engine makes those whose reads changed and keeps the
    others' files from the previous build."""

    name: str
    digest: bytes
    make: Callable[[], Files]

    def batch(self) -> Batch:
        def make(names: set[str]) -> Iterator[tuple[str, Files]]:
            yield self.name, self.make()

        return Batch({self.name: self.digest}, make)

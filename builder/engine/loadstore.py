"""The load cache on disk: ``load.pickle`` and ``blobs.pickle``.

``load.pickle`` holds the :class:`~builder.engine.loadcache.LoadCache` (findings, statuses, row files'
entries); ``blobs.pickle`` every content page's parse and every rendered body, pickled one by one and
kept by key, and named by ``load.pickle`` through its checksum. A row file changes the cache object
but not the blobs: only ``load.pickle`` is written again. A ``blobs.pickle`` that is not the one
``load.pickle`` names discards the cache.
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from builder.engine.build_state import (
    LOAD_BASE,
    LOAD_BLOBS,
    ROWS_TABLE,
    CacheCorrupt,
    checksum,
    read_cache_checked,
    write_cache,
)

if TYPE_CHECKING:
    from builder.engine.loadcache import LoadCache

BASE = LOAD_BASE
BLOBS = LOAD_BLOBS

Blobs = dict[Any, bytes]


@dataclass
class Base:
    """What ``blobs.pickle`` on disk holds, and the signature of the cache object ``load.pickle``
    holds."""

    digest: bytes
    """Checksum of ``blobs.pickle``."""
    signature: tuple[Any, ...]
    pages: Blobs
    bodies: Blobs
    code: bytes | None
    """The builder code the blobs were made by."""


@dataclass
class Loaded:
    cache: LoadCache
    pages: Blobs
    bodies: Blobs
    rows_digest: bytes | None
    code: bytes | None
    base: Base


def cache_signature(cache: LoadCache, code: bytes | None) -> tuple[Any, ...]:
    """What the cache object holds besides the blobs, cheaply compared (not its memos of parsed
    flags: missing ones are parsed again)."""
    return (
        id(cache.rows.typed),
        tuple(cache.rows.entries),
        frozenset((slug, kept[0]) for slug, kept in cache.findings.items()),
        frozenset(cache.statuses),
        frozenset(cache.chart_specs),
        code,
    )


def read(folder: Path) -> Loaded | None:
    """The stored load cache; None when there is none. Raises :class:`CacheCorrupt` when it cannot
    be trusted."""
    from builder.engine.loadcache import LoadCache

    found = read_cache_checked(folder / BASE)
    if found is None:
        return None
    try:
        cache, rows_digest, code, named = found[0]
    except (TypeError, ValueError):
        raise CacheCorrupt("load.pickle holds something else") from None
    if not isinstance(cache, LoadCache):
        raise CacheCorrupt("load.pickle holds something else")
    kept = read_cache_checked(folder / BLOBS)
    if kept is None or kept[1] != named:
        raise CacheCorrupt("blobs.pickle is not the one load.pickle names")
    (pages, bodies), digest = kept
    if not isinstance(pages, dict) or not isinstance(bodies, dict):
        raise CacheCorrupt("blobs.pickle holds something else")
    return Loaded(cache, pages, bodies, rows_digest, code, Base(digest, (), pages, bodies, code))


def write(
    folder: Path,
    cache: LoadCache,
    pages: Blobs,
    bodies: Blobs,
    rows_digest: bytes | None,
    code: bytes | None,
    base: Base | None,
) -> Base:
    """Store the load cache: ``blobs.pickle`` when the blobs changed, ``load.pickle`` when the cache
    object changed or names new blobs. Returns what is on disk now.

    ``cache`` is written without its pages and rows table (they are the blobs and ``rows.arrow``)."""
    signature = cache_signature(cache, code)
    if (
        base is None
        or base.code != code
        or base.pages.keys() != pages.keys()
        or base.bodies.keys() != bodies.keys()
    ):
        # Blobs first: a load.pickle written after names them (one torn in between names old ones).
        base = Base(write_cache(folder / BLOBS, (pages, bodies)), (), pages, bodies, code)
    if base.signature != signature:
        typed, cache.rows.typed = cache.rows.typed, None
        kept_pages, cache.pages = cache.pages, {}
        try:
            write_cache(folder / BASE, (cache, rows_digest, code, base.digest))
        finally:
            cache.rows.typed, cache.pages = typed, kept_pages
        base.signature = signature
    return base


def load_signature(cache: LoadCache, markdown: dict[str, Any], code: bytes | None) -> tuple[Any, ...]:
    """What the load cache holds, cheaply compared: it is saved only when this changes (the cache
    object's :func:`cache_signature` and which pages and bodies it keeps)."""
    return (cache_signature(cache, code), frozenset(cache.pages), frozenset(markdown))


def blobs(entries: dict[Any, Any], earlier: dict[Any, bytes]) -> dict[Any, bytes]:
    """Each entry pickled, reusing ``earlier``'s bytes for a key it has (keys are content hashes:
    an entry never changes under its key while the builder's code does not)."""
    return {
        key: earlier[key] if key in earlier else pickle.dumps(value, pickle.HIGHEST_PROTOCOL)
        for key, value in entries.items()
    }


def write_rows(folder: Path, typed: Any) -> bytes:
    """Write the rows table as ``rows.arrow`` (through a temporary file); its checksum."""
    import os

    import pyarrow as pa

    folder.mkdir(parents=True, exist_ok=True)
    tmp = folder / f".{ROWS_TABLE}.{os.getpid()}.tmp"
    try:
        with pa.OSFile(str(tmp), "wb") as sink, pa.ipc.new_file(sink, typed.schema) as writer:
            writer.write_table(typed)
        digest = checksum(tmp.read_bytes())
        os.replace(tmp, folder / ROWS_TABLE)
    finally:
        tmp.unlink(missing_ok=True)
    return digest

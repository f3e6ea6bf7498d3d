"""The load cache on disk: ``load.pickle`` (the cache object) and ``blobs.pickle`` (its memo).

``blobs.pickle`` holds the engine's memo (:mod:`builder.engine.memo`) as stored: each entry pickled
on its own, named by ``load.pickle`` through its checksum; ``rows.arrow`` holds the rows table. A row
file changes the cache object but seldom the memo: only what changed is written again. A
``blobs.pickle`` that is not the one ``load.pickle`` names discards the cache.
"""

from __future__ import annotations

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
class Stored:
    """What the two files hold, as last read or written."""

    digest: bytes
    """Checksum of ``blobs.pickle``."""
    blobs: Blobs
    signature: tuple[Any, ...]
    """:func:`cache_signature` of the cache object in ``load.pickle``."""


@dataclass
class Loaded:
    cache: LoadCache
    blobs: Blobs
    rows_digest: bytes | None
    code: bytes | None
    stored: Stored


def cache_signature(cache: LoadCache, rows_digest: bytes | None, code: bytes | None) -> tuple[Any, ...]:
    """What the cache object holds besides its memo and rows table, cheaply compared."""
    return (
        rows_digest,
        tuple(cache.rows.entries),
        tuple(sorted(cache.recipe_keys.items())),
        cache.status_key,
        tuple(sorted(cache.front.items())),
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
    blobs, digest = kept
    if not isinstance(blobs, dict):
        raise CacheCorrupt("blobs.pickle holds something else")
    stored = Stored(digest, blobs, cache_signature(cache, rows_digest, code))
    return Loaded(cache, blobs, rows_digest, code, stored)


def write(
    folder: Path,
    cache: LoadCache,
    blobs: Blobs,
    rows_digest: bytes | None,
    code: bytes | None,
    stored: Stored | None,
) -> Stored:
    """Store the load cache: ``blobs.pickle`` when the memo changed, ``load.pickle`` when the cache
    object changed or names new blobs. Returns what is on disk now.

    ``cache`` is written without its memo and rows table (they are ``blobs.pickle`` and ``rows.arrow``)."""
    signature = cache_signature(cache, rows_digest, code)
    named_anew = stored is None or stored.blobs.keys() != blobs.keys()
    if named_anew:
        # Blobs first: a load.pickle written after names them (one torn in between names old ones).
        stored = Stored(write_cache(folder / BLOBS, blobs), blobs, ())
    assert stored is not None
    if named_anew or stored.signature != signature:
        memo, cache.memo = cache.memo, None  # type: ignore[assignment]
        typed, cache.rows.typed = cache.rows.typed, None
        try:
            write_cache(folder / BASE, (cache, rows_digest, code, stored.digest))
        finally:
            cache.memo, cache.rows.typed = memo, typed
        stored.signature = signature
    return stored


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

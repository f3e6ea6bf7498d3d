"""The load cache on disk: ``load.pickle`` (the cache object) and ``blobs.pickle`` (its memo).

``blobs.pickle`` holds the engine's memo (:mod:`builder.engine.memo`) as stored: each entry pickled
on its own, named by ``load.pickle`` through its checksum; ``rows.arrow`` holds the rows table. A save
writes a file again only when its content changed. A
``blobs.pickle`` that is not the one ``load.pickle`` names discards the cache.
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
    write_payload,
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
    signature: bytes
    """Checksum of ``load.pickle``'s payload: a save writes it again only when the payload differs."""


@dataclass
class Loaded:
    cache: LoadCache
    blobs: Blobs
    rows_digest: bytes | None
    code: bytes | None
    stored: Stored


def read(folder: Path) -> Loaded | None:
    """The stored load cache; None when there is none. Raises :class:`CacheCorrupt` when it cannot
    be trusted."""
    from builder.engine.loadcache import LoadCache

    found = read_cache_checked(folder / BASE)
    if found is None:
        return None
    try:
        (cache, rows_digest, code, named), signature = found
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
    stored = Stored(digest, blobs, signature)
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
    named_anew = stored is None or stored.blobs.keys() != blobs.keys()
    if named_anew:
        # Blobs first: a load.pickle written after names them (one torn in between names old ones).
        stored = Stored(write_cache(folder / BLOBS, blobs), blobs, b"")
    assert stored is not None
    memo, cache.memo = cache.memo, None  # type: ignore[assignment]
    typed, cache.rows.typed = cache.rows.typed, None
    try:
        payload = pickle.dumps((cache, rows_digest, code, stored.digest), pickle.HIGHEST_PROTOCOL)
    finally:
        cache.memo, cache.rows.typed = memo, typed
    # Whatever the cache object holds, it is saved when its bytes changed: no list of its fields.
    if checksum(payload) != stored.signature:
        stored.signature = write_payload(folder / BASE, payload)
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

"""The load cache on disk: ``load.pickle``, ``blobs.pickle``, and a delta of the blobs since.

``load.pickle`` holds the :class:`~builder.data.loadcache.LoadCache` (findings, statuses, row files'
entries, 2.6 MB at 1,000 recipes); ``blobs.pickle`` every content page's parse and every rendered
body, pickled one by one and kept by key (11 MB). An edit changes one page and one body: rewriting
them all took an edit build ≈ 0.05 s, so a build writes only ``load.delta.pickle``, the blobs added
and the keys removed since ``blobs.pickle``, which it names by its checksum. A row file changes the
cache object but not the blobs: only ``load.pickle`` is written again (it too names the blobs it goes
with). Reading applies the delta when it names the ``blobs.pickle`` beside it, and ignores it
otherwise; a ``blobs.pickle`` that is not the one ``load.pickle`` names discards the cache. A cache
that lags behind is only slower, never wrong (every entry is keyed by what it was made from), so a
lost or stale delta costs time, not correctness. The delta is cumulative; past :data:`DELTA_SHARE`
of the whole, ``blobs.pickle`` is written again and the delta removed.
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from builder.engine.build_state import (
    LOAD_BASE,
    LOAD_BLOBS,
    LOAD_DELTA,
    ROWS_TABLE,
    CacheCorrupt,
    Fetched,
    Prefetch,
    checksum,
    read_cache_checked,
    write_cache,
)

if TYPE_CHECKING:
    from builder.data.loadcache import LoadCache

BASE = LOAD_BASE
BLOBS = LOAD_BLOBS
DELTA = LOAD_DELTA
DELTA_SHARE = 0.25
"""Above this share of ``blobs.pickle``'s bytes, the delta gives way to a new ``blobs.pickle``."""

Blobs = dict[Any, bytes]


@dataclass
class Base:
    """What ``blobs.pickle`` on disk holds, to write deltas against, and the signature of the cache
    object ``load.pickle`` holds."""

    digest: bytes
    """Checksum of ``blobs.pickle``."""
    signature: tuple[Any, ...]
    pages: Blobs
    bodies: Blobs
    code: bytes | None
    """The builder code the blobs were made by: another code's are never amended (its entries
    differ under the same keys), they are written anew."""


@dataclass
class Loaded:
    cache: LoadCache
    pages: Blobs
    """Page blobs, the delta applied."""
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
        code,
    )


def read(folder: Path, prefetch: Prefetch | None = None) -> Loaded | None:
    """The stored load cache with its delta applied; None when there is none.

    Raises :class:`CacheCorrupt` when ``load.pickle`` cannot be trusted; a bad delta is dropped.
    ``prefetch``: the files as already being mapped and checked."""
    from builder.data.loadcache import LoadCache

    found = read_cache_checked(folder / BASE, _take(prefetch, folder / BASE))
    if found is None:
        return None
    try:
        cache, rows_digest, code, named = found[0]
    except (TypeError, ValueError):
        raise CacheCorrupt("load.pickle holds something else") from None
    if not isinstance(cache, LoadCache):
        raise CacheCorrupt("load.pickle holds something else")
    kept = read_cache_checked(folder / BLOBS, _take(prefetch, folder / BLOBS))
    if kept is None or kept[1] != named:
        raise CacheCorrupt("blobs.pickle is not the one load.pickle names")
    (pages, bodies), digest = kept
    if not isinstance(pages, dict) or not isinstance(bodies, dict):
        raise CacheCorrupt("blobs.pickle holds something else")
    base = Base(digest, (), pages, bodies, code)
    merged_pages, merged_bodies = pages, bodies
    delta = _read_delta(folder, _take(prefetch, folder / DELTA))
    if delta is not None and delta[0] == digest:
        _, page_add, page_gone, body_add, body_gone = delta
        merged_pages = _applied(pages, page_add, page_gone)
        merged_bodies = _applied(bodies, body_add, body_gone)
    return Loaded(cache, merged_pages, merged_bodies, rows_digest, code, base)


def write(
    folder: Path,
    cache: LoadCache,
    pages: Blobs,
    bodies: Blobs,
    rows_digest: bytes | None,
    code: bytes | None,
    base: Base | None,
) -> Base:
    """Store the load cache: the blobs as a delta against ``base`` when it can be, else a new
    ``blobs.pickle``; ``load.pickle`` when the cache object changed or names new blobs. Returns
    what is on disk now.

    ``cache`` is written without its pages and rows table (they are the blobs and ``rows.arrow``)."""
    signature = cache_signature(cache, code)
    if base is not None and base.code != code:
        base = None
    if base is not None:
        page_add, page_gone = _diff(base.pages, pages)
        body_add, body_gone = _diff(base.bodies, bodies)
        size = sum(map(len, page_add.values())) + sum(map(len, body_add.values()))
        whole = sum(map(len, base.pages.values())) + sum(map(len, base.bodies.values()))
        if size > DELTA_SHARE * whole:
            base = None
        elif page_add or page_gone or body_add or body_gone:
            write_cache(folder / DELTA, (base.digest, page_add, page_gone, body_add, body_gone))
        else:
            discard_delta(folder)
    if base is None:
        # Blobs first: a load.pickle written after names them (one torn in between names old ones).
        base = Base(write_cache(folder / BLOBS, (pages, bodies)), (), pages, bodies, code)
        discard_delta(folder)
    if base.signature != signature:
        typed, cache.rows.typed = cache.rows.typed, None
        kept_pages, cache.pages = cache.pages, {}
        try:
            write_cache(folder / BASE, (cache, rows_digest, code, base.digest))
        finally:
            cache.rows.typed, cache.pages = typed, kept_pages
        base.signature = signature
    return base


def discard_delta(folder: Path) -> None:
    try:
        (folder / DELTA).unlink()
    except OSError:
        pass


def _take(prefetch: Prefetch | None, path: Path) -> Fetched | None:
    return prefetch.take(path) if prefetch is not None else None


def _read_delta(folder: Path, fetched: Fetched | None) -> tuple[Any, ...] | None:
    try:
        found = read_cache_checked(folder / DELTA, fetched)
    except CacheCorrupt:
        discard_delta(folder)
        return None
    delta = None if found is None else found[0]
    if not (isinstance(delta, tuple) and len(delta) == 5):
        return None
    return delta


def _diff(base: Blobs, now: Blobs) -> tuple[Blobs, list[Any]]:
    """(entries of ``now`` the base lacks, keys of the base ``now`` lacks); keys are content hashes,
    so an entry never changes under its key."""
    added = {key: now[key] for key in now.keys() - base.keys()}
    return added, sorted(base.keys() - now.keys(), key=repr)


def _applied(base: Blobs, added: Blobs, gone: list[Any]) -> Blobs:
    merged = dict(base)
    merged.update(added)
    for key in gone:
        merged.pop(key, None)
    return merged


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


class RowsFile:
    """``rows.arrow`` for a new rows table, written on a thread while the build renders.

    Arrow's IPC writer, the checksum and the file write all let go of the GIL: ≈ 0.1 s of a row-file
    build (36 MB at 100,000 rows) leaves the main thread. The table goes to a temporary file beside
    ``rows.arrow``, which :meth:`commit` puts in place once the build has succeeded and
    :meth:`abandon` removes when it has not.
    """

    def __init__(self, folder: Path, typed: Any) -> None:
        import os
        import threading

        self.typed = typed
        self._folder = folder
        self._tmp = folder / f".{ROWS_TABLE}.{os.getpid()}.{id(self)}.tmp"
        self._digest: bytes | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._write, name="rows-file", daemon=True)
        self._thread.start()

    def _write(self) -> None:
        import mmap

        import pyarrow as pa

        try:
            self._folder.mkdir(parents=True, exist_ok=True)
            # Straight into the file, then checksummed from its pages in the page cache: built in a
            # growing in-memory buffer first, the 36 MB were copied on each growth and faulted in
            # as fresh huge pages (0.4 s of a row-file build on this thread, half of it system time).
            with pa.OSFile(str(self._tmp), "wb") as sink, pa.ipc.new_file(sink, self.typed.schema) as writer:
                writer.write_table(self.typed)
            with (
                open(self._tmp, "rb") as handle,
                mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as pages,
            ):
                self._digest = checksum(memoryview(pages))
        except BaseException as exc:  # noqa: BLE001 - raised by commit, in the main thread
            self._error = exc

    def wait(self) -> None:
        """Until the file is written (or failed to be)."""
        self._thread.join()

    def commit(self) -> bytes:
        """Put the file in place; its checksum. Raises what writing it raised (an ``OSError``)."""
        import os

        self._thread.join()
        if self._error is not None:
            raise self._error
        assert self._digest is not None
        os.replace(self._tmp, self._folder / ROWS_TABLE)
        return self._digest

    def abandon(self) -> None:
        self._thread.join()
        self._tmp.unlink(missing_ok=True)

"""The incremental record on disk: read at a build's start, written at its end.

One folder per (site root, output folder), ``<root>/.cache/builder/incremental/<hash>/``:
``state.pickle`` (inputs and outputs, read by every build, :mod:`builder.engine.build_state`) and the load
cache (``load.pickle``, ``blobs.pickle``, ``rows.arrow``: :mod:`builder.engine.loadstore`). What was read
or last written is remembered here, so a save rewrites only what changed: an unchanged load cache
is not written at all, a changed one writes only its new blobs and, when the rows changed, a new
``rows.arrow``. Anything unreadable is discarded, and the build that finds it starts clean.
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from builder.engine import loadstore
from builder.engine.build_state import (
    ROWS_TABLE,
    CacheCorrupt,
    State,
    checksum,
    read_cache,
    read_mapped,
    write_cache,
)

if TYPE_CHECKING:
    from builder.content.markdown import RenderedBody
    from builder.engine.loadcache import LoadCache


@dataclass
class Restored:
    """What a build takes over from the record."""

    state: State
    cache: LoadCache
    markdown: dict[str, RenderedBody]
    """Rendered bodies by key (:attr:`builder.content.markdown.Markdown.cache`)."""
    code: bytes | None
    """Builder code and toolchain the load cache was made with."""


class Record:
    """The record kept in ``folder`` (nothing is read or written when ``persist`` is false)."""

    def __init__(self, folder: Path, *, persist: bool = True) -> None:
        self.folder = folder
        self.persist = persist
        self.note: str | None = None
        """Why the record was discarded, when it was (the build report says so)."""
        self._read = False
        # What load.pickle and rows.arrow hold now, so an unchanged load cache is not rewritten.
        self._saved_load: tuple[Any, ...] | None = None
        self._saved_typed: Any = None
        self._saved_rows_digest: bytes | None = None
        self._base: loadstore.Base | None = None
        """``blobs.pickle`` as on disk."""
        self._page_blobs: dict[Any, bytes] = {}
        self._body_blobs: dict[Any, bytes] = {}
        """Each kept parse and rendered body as last pickled, by its content key: a save pickles
        only the new ones (pickling every page's models again cost ~0.1 s of an edit build)."""

    @property
    def spare(self) -> Path | None:
        """Where the replaced site waits to begin the next build's tree (see
        :class:`builder.engine.output.Staging`); None without a kept record."""
        return self.folder / "spare" if self.persist else None

    def read(self) -> Restored | None:
        """The record, once per process (later calls: None). None when there is none or it is
        unreadable (then it is discarded and :attr:`note` says why)."""
        if self._read or not self.persist:
            return None
        self._read = True
        folder = self.folder
        try:
            state = read_cache(folder / "state.pickle")
            if state is not None and not isinstance(state, State):
                raise CacheCorrupt("state.pickle holds something else")
            stored = loadstore.read(folder) if state is not None else None
            if state is None or stored is None:
                return None
            cache, code = stored.cache, stored.code
            try:
                cache.pages = {key: pickle.loads(blob) for key, blob in stored.pages.items()}
                markdown = {key: pickle.loads(blob) for key, blob in stored.bodies.items()}
            except Exception as exc:  # a checksum-valid file from a different code shape
                raise CacheCorrupt(f"blobs.pickle cannot be loaded: {type(exc).__name__}") from None
            self._page_blobs, self._body_blobs = stored.pages, stored.bodies
            rows = folder / ROWS_TABLE
            cache.rows.typed = _read_rows(rows, stored.rows_digest)
            self._saved_load = loadstore.load_signature(cache, markdown, code)
            stored.base.signature = self._saved_load[0]
            self._base = stored.base
            self._saved_typed, self._saved_rows_digest = cache.rows.typed, stored.rows_digest
        except CacheCorrupt as exc:
            self.note = f"build cache discarded ({exc}); built from scratch"
            self.discard()
            return None
        return Restored(state, cache, markdown, code)

    def forget_blobs(self) -> None:
        """The builder's code changed: blobs made by other code are written anew, never amended."""
        self._page_blobs, self._body_blobs = {}, {}
        self._base = None

    def discard(self) -> None:
        for name in ("state.pickle", loadstore.BASE, loadstore.BLOBS, ROWS_TABLE):
            try:
                (self.folder / name).unlink()
            except OSError:
                pass

    def save_state(self, state: State) -> None:
        """Write ``state.pickle`` alone (a no-op build: the load cache is as it was)."""
        if not self.persist:
            return
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            write_cache(self.folder / "state.pickle", state)
        except OSError:
            pass  # a cache that cannot be written only costs speed

    def save(self, state: State, cache: LoadCache, markdown: dict[str, Any], code: bytes | None) -> None:
        """Write the record; the load cache only when it changed (it is most of the bytes)."""
        if not self.persist:
            return
        cache.settle()
        folder = self.folder
        try:
            folder.mkdir(parents=True, exist_ok=True)
            typed = cache.rows.typed
            signature = loadstore.load_signature(cache, markdown, code)
            if signature != self._saved_load:
                rows_digest = self._saved_rows_digest if typed is self._saved_typed else None
                if typed is not None and rows_digest is None:
                    rows_digest = loadstore.write_rows(folder, typed)
                page_blobs = loadstore.blobs(cache.pages, self._page_blobs)
                body_blobs = loadstore.blobs(markdown, self._body_blobs)
                self._base = loadstore.write(
                    folder, cache, page_blobs, body_blobs, rows_digest, code, self._base
                )
                self._page_blobs, self._body_blobs = page_blobs, body_blobs
                self._saved_load, self._saved_typed, self._saved_rows_digest = signature, typed, rows_digest
            # state.pickle last: it vouches for the others.
            write_cache(folder / "state.pickle", state)
        except OSError:
            self._saved_load = self._base = None
            self.discard()


def _read_rows(path: Path, digest: bytes | None) -> Any:
    """``rows.arrow`` as an Arrow table, checked against ``digest`` (None: no rows kept)."""
    if digest is None:
        return None
    import pyarrow as pa

    # Mapped, not read: the table's buffers stay in the file's pages (the file is only ever
    # replaced, never written into, so they stay valid).
    try:
        data = read_mapped(path)
    except OSError:
        raise CacheCorrupt("rows.arrow is missing") from None
    if checksum(data) != digest:
        raise CacheCorrupt("rows.arrow fails its checksum")
    try:
        return pa.ipc.open_file(pa.py_buffer(data)).read_all()
    except pa.ArrowInvalid as exc:
        raise CacheCorrupt(f"rows.arrow cannot be read: {exc}") from None

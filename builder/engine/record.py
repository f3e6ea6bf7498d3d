"""The incremental record on disk: read at a build's start, written at its end.

One folder per (site root, output folder), ``<root>/.cache/builder/incremental/<hash>/``:
``state.pickle`` (inputs and outputs, read by every build, :mod:`builder.engine.build_state`) and the load
cache (``load.pickle``, ``blobs.pickle`` with the engine's memo, ``rows.arrow``:
:mod:`builder.engine.loadstore`). What was read or last written is remembered here, so a save rewrites
only what changed. Anything unreadable is discarded, and the build that finds it starts clean.
"""

from __future__ import annotations

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
from builder.engine.memo import Memo

if TYPE_CHECKING:
    from builder.engine.loadcache import LoadCache


@dataclass
class Restored:
    """What a build takes over from the record."""

    state: State
    cache: LoadCache
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
        # What the files hold now, so that a save rewrites only what changed.
        self._stored: loadstore.Stored | None = None
        self._saved_typed: Any = None
        self._saved_rows_digest: bytes | None = None

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
            cache = stored.cache
            cache.memo = Memo(stored.blobs)
            cache.rows.typed = _read_rows(folder / ROWS_TABLE, stored.rows_digest)
            self._stored = stored.stored
            self._saved_typed, self._saved_rows_digest = cache.rows.typed, stored.rows_digest
        except CacheCorrupt as exc:
            self.note = f"build cache discarded ({exc}); built from scratch"
            self.discard()
            return None
        return Restored(state, cache, stored.code)

    def forget_blobs(self) -> None:
        """The builder's code changed: what other code stored is written anew."""
        self._stored = None

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

    def save(self, state: State, cache: LoadCache, code: bytes | None) -> None:
        """Write the record: the load cache's files only where they changed."""
        if not self.persist:
            return
        blobs = cache.memo.settled()
        folder = self.folder
        try:
            folder.mkdir(parents=True, exist_ok=True)
            typed = cache.rows.typed
            rows_digest = self._saved_rows_digest if typed is self._saved_typed else None
            if typed is not None and rows_digest is None:
                rows_digest = loadstore.write_rows(folder, typed)
            self._stored = loadstore.write(folder, cache, blobs, rows_digest, code, self._stored)
            self._saved_typed, self._saved_rows_digest = typed, rows_digest
            # state.pickle last: it vouches for the others.
            write_cache(folder / "state.pickle", state)
        except OSError:
            self._stored = None
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

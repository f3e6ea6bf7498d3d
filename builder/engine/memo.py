"""The engine's one memo: values kept from build to build under a content key.

A key is a tuple naming the step and what it read, by content: ``("page", path, digest of the
file)`` for a content file's parse, ``("markdown", digest of the body)`` for a rendered body,
``("findings", digest of the recipe's front matter, row files and nodes)`` for a recipe's findings,
``("statuses", ...)``, ``("stage", digest of a producer's declared inputs)`` for the files an output
stage made, ``("chart-spec", kind, quantity)`` for a chart's spec template. Nothing names a value by what it is
for: an entry is right for whoever asks with the same key. Values depend on the builder's code too,
so the engine starts an empty memo whenever the code (or a library's version) changes.

A build keeps what it used: :meth:`settled` gives the entries asked for or added since the last call
(pickled, each once: the bytes read from the record are written back as they were) and forgets the
rest, so the memo holds the worth of the builds since the last save (one, but in the preview), whatever
was edited before.
"""

from __future__ import annotations

import pickle
from collections.abc import Iterator
from typing import Any

Key = tuple[Any, ...]


class Memo:
    """Values by content key, with the pickled bytes they were read from (see the module docstring)."""

    def __init__(self, blobs: dict[Key, bytes] | None = None) -> None:
        self._values: dict[Key, Any] = {}
        self._blobs: dict[Key, bytes] = dict(blobs or {})
        """Entries as stored, unpickled when first asked for."""
        self._used: set[Key] = set()

    def get(self, key: Key) -> Any | None:
        """The value under ``key`` (None when there is none, or it cannot be read back)."""
        if key in self._values:
            self._used.add(key)
            return self._values[key]
        blob = self._blobs.get(key)
        if blob is None:
            return None
        try:
            value = pickle.loads(blob)
        except Exception:  # noqa: BLE001 - a value that cannot be read back is made again
            del self._blobs[key]
            return None
        self._values[key] = value
        self._used.add(key)
        return value

    def put(self, key: Key, value: Any) -> None:
        self._values[key] = value
        self._blobs.pop(key, None)
        self._used.add(key)

    def use(self, key: Key) -> bool:
        """Keep ``key``'s entry this build without reading it; False when there is none."""
        if key in self._values or key in self._blobs:
            self._used.add(key)
            return True
        return False

    def drop(self, key: Key) -> None:
        """Forget an entry found wrong (it is made again)."""
        self._values.pop(key, None)
        self._blobs.pop(key, None)
        self._used.discard(key)

    def entries(self, step: str) -> dict[Key, object]:
        """Every entry of ``step`` as it is held (pickled or not): an entry :meth:`put` since is
        another object, one only read is the same."""
        held: dict[Key, object] = {key: value for key, value in self._values.items() if key[0] == step}
        held.update((key, blob) for key, blob in self._blobs.items() if key[0] == step)
        return held

    def keys(self, step: str) -> Iterator[Key]:
        """Every key of ``step`` (used or not)."""
        for key in {*self._values, *self._blobs}:
            if key[0] == step:
                yield key

    def settled(self) -> dict[Key, bytes]:
        """The entries used since the last call, pickled; the others are forgotten."""
        out: dict[Key, bytes] = {}
        for key in self._used:
            blob = self._blobs.get(key)
            if blob is None:
                blob = pickle.dumps(self._values[key], pickle.HIGHEST_PROTOCOL)
            out[key] = blob
        self._blobs = out
        self._values = {key: value for key, value in self._values.items() if key in out}
        self._used = set()
        return out

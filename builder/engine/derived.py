"""Derived values kept from build to build under what making them read (:func:`builder.reads.derived`).

A derived value is named ``<kind>:<argument>``. Its memo entry, under ``("derived", global digest,
name)``, holds the keys its making read with their digests, the value and the value's digest. A build
takes the value from the entry while every key's digest is the same; otherwise it makes the value
again, inside a recording of its own. A step that asks for the value reads only its name, and
:class:`~builder.engine.depindex.DepIndex` digests the name to the value's digest: a page whose reads
include ``card:<slug>`` stays while the card is the same, whatever changed in the rows it came from.
The digest of a name no step of this build asked for is worked out through the kind's maker.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from functools import partial
from typing import TYPE_CHECKING, Any

from builder.reads import deriving, note, recording

if TYPE_CHECKING:
    from builder.engine.depindex import DepIndex
    from builder.engine.memo import Memo

Entry = tuple[tuple[tuple[str, bytes | None], ...], Any, bytes]
"""(the keys making the value read, with their digests; the value; the value's digest)."""


def value_digest(value: Any) -> bytes:
    """The digest of a derived value, from its ``repr``: derived values are plain data (dataclasses,
    tuples, dicts of numbers and strings), whose ``repr`` is the same in every process."""
    return hashlib.blake2b(repr(value).encode(), digest_size=16).digest()


class Derived:
    """This build's derived values. ``makers``: each kind's maker from its argument, for names
    :class:`~builder.engine.depindex.DepIndex` digests before (or without) any step asking."""

    def __init__(
        self, memo: Memo, glob: bytes, deps: DepIndex, makers: Mapping[str, Callable[[str], Any]]
    ) -> None:
        self._memo = memo
        self._glob = glob
        self._deps = deps
        self._makers = makers
        self._values: dict[str, tuple[Any, bytes]] = {}
        self.made: dict[str, Entry] = {}
        """Entries this process made in this build (a forked worker hands them to the parent)."""

    def __call__(self, name: str, make: Callable[[], Any]) -> Any:
        note(name)
        return self._get(name, make)[0]

    def digest(self, name: str) -> bytes | None:
        """The digest of the value named ``name``; None for a kind without a maker, or a maker that
        fails (a page that read the name then renders again, and meets the error itself)."""
        found = self._values.get(name)
        if found is not None:
            return found[1]
        kind, _, arg = name.partition(":")
        maker = self._makers.get(kind)
        if maker is None:
            return None
        try:
            return self._get(name, partial(maker, arg))[1]
        except Exception:  # noqa: BLE001 - see the docstring
            return None

    def value_digests(self) -> dict[str, Callable[[str], bytes | None]]:
        """For :class:`~builder.engine.depindex.DepIndex`: each kind's digest of a name's argument."""

        def of(kind: str) -> Callable[[str], bytes | None]:
            return lambda arg: self.digest(f"{kind}:{arg}")

        return {kind: of(kind) for kind in self._makers}

    def adopt(self, entries: Mapping[str, Entry]) -> None:
        """Take entries a forked worker made."""
        for name, entry in entries.items():
            if name not in self._values:
                self._values[name] = (entry[1], entry[2])
                self._memo.put(self._key(name), entry)

    def _key(self, name: str) -> tuple[str, bytes, str]:
        return ("derived", self._glob, name)

    def _get(self, name: str, make: Callable[[], Any]) -> tuple[Any, bytes]:
        found = self._values.get(name)
        if found is not None:
            return found
        entry: Entry | None = self._memo.get(self._key(name))
        if entry is not None and all(self._deps.digest(dep) == digest for dep, digest in entry[0]):
            found = self._values[name] = (entry[1], entry[2])
            return found
        # Under this store wherever it is asked (a page, a fingerprint, a key's digest): a value it
        # reads is read by name, as a page would.
        with deriving(self), recording() as reads:
            value = make()
        digest = value_digest(value)
        self._values[name] = (value, digest)
        keys = tuple((dep, self._deps.digest(dep)) for dep in sorted(reads))
        if all(d is not None for _, d in keys):  # else made again by every build
            entry = (keys, value, digest)
            self._memo.put(self._key(name), entry)
            self.made[name] = entry
        return value, digest

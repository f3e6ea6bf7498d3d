"""Digests of the keys steps read (:mod:`builder.engine.reading`) and the reuse of earlier outputs."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from builder.engine.inputs import Inputs
from builder.reads import recording
from builder.site.units import Batch, Unit

if TYPE_CHECKING:
    from builder.engine.loadcache import LoadCache
    from builder.engine.memo import Memo


def digest_parts(*parts: bytes | str) -> bytes:
    """A hash of the parts, each prefixed with its length (so parts cannot run into each other)."""
    chunks: list[bytes] = []
    for part in parts:
        data = part.encode() if isinstance(part, str) else part
        chunks.append(len(data).to_bytes(8, "little"))
        chunks.append(data)
    # One update: the hasher's per-call overhead was most of the cost (thousands of pages' fingerprints).
    return hashlib.blake2b(b"".join(chunks), digest_size=16).digest()


GLOBAL_PREFIXES = ("@builder/", "templates/static/")


def global_digest(inputs: Inputs, environment: bytes) -> bytes:
    parts: list[bytes | str] = [environment]
    for key in sorted(inputs.digests):
        if (
            key == "site.yaml"
            or key.startswith(GLOBAL_PREFIXES)
            or (key.startswith("data/") and not key.startswith("data/rows/"))
        ):
            parts += [key, inputs.digests[key]]
    return digest_parts(*parts)


class DepIndex:
    """Digests of what pages and output units read, for one build: the keys of
    :mod:`builder.engine.reading`, each worked out from the input files' content hashes when first
    asked for.

    ``earlier``: the digests the previous build gave (:attr:`digests`), for :meth:`unchanged`.
    """

    def __init__(
        self,
        inputs: Inputs,
        cache: LoadCache,
        site: Any,
        earlier: Mapping[str, bytes | None] | None = None,
        findings: Callable[[], str | None] | None = None,
        values: Mapping[str, Callable[[str], bytes | None]] | None = None,
    ) -> None:
        self.inputs = inputs
        self.site = site
        self._earlier = earlier if earlier is not None else {}
        self._findings = findings
        self._values = values if values is not None else {}
        self.front: dict[str, bytes] = dict(cache.front)
        self.rows_of: dict[str, list[bytes | str]] = {}
        self.rows_entries = cache.rows.entries
        for rel, row_entry in cache.rows.entries.items():
            for slug in row_entry.recipes:
                self.rows_of.setdefault(slug, []).extend([rel, row_entry.digest])
        self._memo: dict[str, bytes | None] = {}
        self._by_model: dict[str, list[str]] | None = None

    def _recipes_of(self, model: str) -> list[str]:
        """Slugs of the recipes of base model ``model``, sorted (one pass over the recipes per build,
        not one per model)."""
        if self._by_model is None:
            self._by_model = {}
            for slug in sorted(self.site.recipes):
                self._by_model.setdefault(self.site.recipes[slug].meta.model, []).append(slug)
        return self._by_model.get(model, [])

    def _files(self, prefix: str) -> bytes:
        parts: list[bytes | str] = []
        for key in sorted(k for k in self.inputs.digests if k.startswith(prefix)):
            parts += [key, self.inputs.digests[key]]
        return digest_parts(prefix, *parts)

    @property
    def digests(self) -> dict[str, bytes | None]:
        """Every dependency's digest given so far (for the next build's ``earlier``)."""
        return self._memo

    def digest(self, dep: str) -> bytes | None:
        """None for a key this index does not know: a page that read it renders every time."""
        if dep in self._memo:
            return self._memo[dep]
        value = self._memo[dep] = self._digest(dep)
        return value

    def unchanged(self, dep: str) -> bool:
        """Whether ``dep``'s digest is the one the previous build gave."""
        earlier = self._earlier.get(dep)
        return earlier is not None and self.digest(dep) == earlier

    def _digest(self, dep: str) -> bytes | None:
        kind, _, arg = dep.partition(":")
        if dep == "recipes":
            parts: list[bytes | str] = []
            for slug in sorted(self.site.recipes):
                rel = f"content/recipes/{slug}.md"
                parts += [slug, self.front.get(rel, b"?")]
            return digest_parts("recipes", *parts)
        if dep == "models":
            pairs = [f"{slug}\0{self.site.recipes[slug].meta.model}" for slug in sorted(self.site.recipes)]
            return digest_parts("models", *pairs)
        if dep == "rows":
            return self._files("data/rows/")
        if dep == "findings":
            # Every finding: their digest when the findings memo gives one, else all they come from.
            digest = self._findings() if self._findings is not None else None
            if digest is not None:
                return digest_parts(dep, digest)
            return digest_parts(dep, *(self.digest(d) or b"?" for d in ("recipes", "rows")))
        if dep == "case-studies":
            return self._files("content/case-studies/")
        if dep == "posts":
            return self._files("content/posts/")
        if kind == "value" and arg:  # the value is in the name
            return digest_parts(dep)
        if kind == "file" and arg:
            return digest_parts(dep, self.inputs.digests.get(arg, b"-"))
        if kind in self._values and arg:
            value = self._values[kind](arg)
            return None if value is None else digest_parts(dep, value)
        if kind == "rows-on" and arg:
            nodes = {name for name, node in self.site.nodes.items() if node.hardware == arg}
            parts = [dep, *sorted(nodes)]
            for rel, entry in sorted(self.rows_entries.items()):
                if nodes.intersection(entry.nodes):
                    parts += [rel, entry.digest]
            return digest_parts(*parts)
        if kind == "front" and arg:
            return digest_parts(dep, self.front.get(f"content/recipes/{arg}.md", b"-"))
        if kind == "recipe" and arg:
            rel = f"content/recipes/{arg}.md"
            return digest_parts(dep, self.inputs.digests.get(rel, b"-"), *self.rows_of.get(arg, []))
        if kind == "rows-of" and arg:
            return digest_parts(dep, *self.rows_of.get(arg, []))
        if kind == "model" and arg:
            # Front matter and rows of the model's recipes, not their bodies: a comparison page
            # shows no prose, and a body edit should not re-render it.
            parts = []
            for slug in self._recipes_of(arg):
                parts += [
                    slug,
                    self.front.get(f"content/recipes/{slug}.md", b"?"),
                    *self.rows_of.get(slug, []),
                ]
            return digest_parts(dep, *parts)
        return None


# --------------------------------------------------------------------------------------------------
# Rendering page jobs, in this process or in forked workers.


class _Kept(bytes):
    """Marks a file reused from the previous output: linked, never read unless a stage asks."""


KEPT = _Kept()


class StageMemo:
    """Makes the output units a stage gives (:mod:`builder.site.units`), in order, each inside a
    recording of what it reads. A unit's entry in the memo, under ``("stage", global digest, name,
    unit digest)``, holds the keys it read with their digests and the paths of its files; while every
    key's digest is the same in this build and the files are in the previous output, the files are
    linked from there. The others are made, a batch's in one call."""

    def __init__(self, memo: Memo, usable: Callable[[str], bool], glob: bytes, deps_index: DepIndex) -> None:
        self.memo = memo
        self.usable = usable
        self.glob = glob
        self.deps_index = deps_index

    def _kept(self, key: tuple[Any, ...]) -> tuple[str, ...] | None:
        entry = self.memo.get(key)
        if entry is None:
            return None
        reads, paths = entry
        if all(self.deps_index.digest(dep) == digest for dep, digest in reads) and all(
            self.usable(p) for p in paths
        ):
            return tuple(paths)
        return None

    def __call__(self, units: Iterable[Unit | Batch]) -> dict[str, bytes]:
        out: dict[str, bytes] = {}
        for unit in units:
            batch = unit.batch() if isinstance(unit, Unit) else unit
            keys = {name: ("stage", self.glob, name, digest) for name, digest in batch.digests.items()}
            made: dict[str, dict[str, bytes]] = {}
            for name, key in keys.items():
                paths = self._kept(key)
                if paths is not None:
                    made[name] = dict.fromkeys(paths, KEPT)  # not read: linked as they are (see KEPT)
            missing = set(keys) - set(made)
            results = batch.make(missing) if missing else iter(())
            while True:
                with recording() as reads:
                    result = next(results, None)
                if result is None:
                    break
                name, files = result
                made[name] = files
                digests = [(dep, self.deps_index.digest(dep)) for dep in sorted(reads)]
                if all(digest is not None for _, digest in digests):  # else made on every build
                    self.memo.put(keys[name], (tuple(digests), tuple(sorted(files))))
            for name in sorted(made):
                out.update(made[name])
        return out

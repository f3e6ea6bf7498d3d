"""Which pages a build renders again: a page whose fingerprint is unchanged keeps its published file.

A page's *fingerprint* hashes the digests of what it read when it last rendered (the keys of
:mod:`builder.engine.reading`'s views, digested by :class:`builder.engine.depindex.DepIndex`), the
templates it loaded then, and the build's global digest (builder code, toolchain, ``site.yaml``,
``data/*.yaml``, static assets).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from builder.engine.depindex import DepIndex, digest_parts
from builder.errors import BuilderError

if TYPE_CHECKING:
    from builder.engine.build_state import OutputRecord
    from builder.site.context import PageJob


class Fingerprints:
    """Pages' fingerprints in one build.

    ``template_digests``: the build's input digests (templates are keyed ``templates/<name>``);
    ``changed_templates``: the template keys changed since the last build (None: not known, so
    every kept page's fingerprint is hashed and compared).
    """

    def __init__(
        self,
        glob: bytes,
        deps_index: DepIndex,
        template_digests: Mapping[str, bytes],
        changed_templates: set[str] | None,
    ) -> None:
        self._glob = glob
        self._deps = deps_index
        self._digests = template_digests
        # Names as pages record them (relative to templates/): one set test per page, no strings made.
        self._changed_names = (
            {key[len("templates/") :] for key in changed_templates} if changed_templates is not None else None
        )
        self._looked_at: set[str] = set()
        """Every dependency whose digest was compared with the last build's."""
        self._stale: set[str] = set()
        """Those whose digest is not the last build's."""

    def unchanged(self, old: OutputRecord) -> bool:
        """Whether a page's fingerprint is the one it had, without hashing: same global digest,
        same digest of each thing it read, none of its templates changed. Each dependency is
        compared once a build: pages read a hundred keys each, mostly the same ones."""
        if self._changed_names is None or not self._changed_names.isdisjoint(old.templates):
            return False
        for dep in set(old.deps) - self._looked_at:
            self._looked_at.add(dep)
            if not self._deps.unchanged(dep):
                self._stale.add(dep)
        return self._stale.isdisjoint(old.deps)

    def of(self, path: str, deps: tuple[str, ...], templates: tuple[str, ...]) -> bytes | None:
        """The fingerprint of the page at ``path``; None when a dependency has no digest."""
        parts: list[bytes | str] = [self._glob, path]
        for dep in sorted(set(deps)):
            value = self._deps.digest(dep)
            if value is None:
                return None
            parts += [dep, value]
        for name in templates:
            parts += [name, self._digests.get(f"templates/{name}", b"-")]
        return digest_parts(*parts)


@dataclass
class Sorted:
    """The page jobs of a build, sorted into kept and to render."""

    kept: dict[str, str]
    """Output path → the published file that stays (``out_prefix`` + path)."""
    records: dict[str, OutputRecord]
    """The previous record of each kept page."""
    pending: list[int]
    """Indices of the jobs to render, in job order."""


def sort_jobs(
    jobs: Sequence[PageJob],
    previous: Mapping[str, OutputRecord],
    damaged: set[str],
    prints: Fingerprints,
    out_prefix: str,
) -> Sorted:
    """Keep each page whose published file is intact (not in ``damaged``) and whose fingerprint,
    over what it read when it last rendered, is the recorded one; render the rest. Raises when two
    jobs would write one path."""
    result = Sorted({}, {}, [])
    seen: set[str] = set()
    for index, (path, _) in enumerate(jobs):
        if path in seen:
            raise BuilderError(f"two pages would be written to {path}", "<builder>")
        seen.add(path)
        old = previous.get(path)
        if (
            old is not None
            and old.fingerprint is not None
            and path not in damaged
            and (prints.unchanged(old) or prints.of(path, old.deps, old.templates) == old.fingerprint)
        ):
            # Output paths as strings: pathlib objects for thousands of kept pages cost more than linking them.
            result.kept[path] = out_prefix + path
            result.records[path] = old
        else:
            result.pending.append(index)
    return result

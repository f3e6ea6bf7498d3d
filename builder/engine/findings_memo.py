"""Findings kept across builds, per recipe: an edit reconciles only the recipes it touches.

Findings are computed per recipe (:func:`builder.analysis.findings.find_non_reproduction` with ``recipes``
gives the whole site's findings of those recipes), from that recipe's rows, its front matter
and what the site declares beside them. A recipe's *key* hashes all of it: its whole front matter (as
the model serialises it: no list of fields to keep up to date), every row file naming the recipe (path
and content hash: its rows, their order and their lines) and the *context*: ``site.yaml`` and every
file under ``data/`` that is not a row file (nodes, hardware, annotations), whole, so a setting or a
field the analysis starts to read is in the key without anyone listing it. A recipe whose key is unchanged gets its
findings of the previous build back, detached from that build's rows and bound to this one's
(:func:`builder.analysis.findings.restore_findings`) when first asked for (:class:`SiteFindings`: an edit
build restores those of the pages it renders); the others are computed. Annotations are attached
afterwards, every build, as without the memo. Row statuses are kept too, whole, while no row file,
front matter or context changes (:func:`statuses_key`). The builder's code is not in the
keys: the incremental engine drops the whole load cache, this memo with it, when the code changes.
Every load works out every key afresh (≈ 25 ms at 1,000 recipes): no key is carried from a build to
the next.
"""

from __future__ import annotations

import pickle
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from builder.analysis.findings import (
    Finding,
    StaleFindings,
    detach_findings,
    find_non_reproduction,
    restore_findings,
)
from builder.analysis.reconcile import Reconciliation, annotate, row_statuses
from builder.analysis.run_groups import combinations
from builder.engine.memo import Memo
from builder.errors import Problems

if TYPE_CHECKING:
    import numpy as np

    from builder.analysis.annotations import LocatedAnnotation
    from builder.analysis.reconcile import RowStatus
    from builder.analysis.run_groups import Combinations
    from builder.config import SiteConfig
    from builder.data.load import Site
    from builder.engine.loadcache import RowEntry

Stored = dict[str, tuple[bytes, bytes, int]]
"""Recipe slug → (key, pickled detached findings, how many)."""


def recipe_keys(site: Site, row_entries: Mapping[str, RowEntry], context: bytes = b"") -> dict[str, bytes]:
    """Each recipe's key: everything its findings are computed from (see the module docstring)."""
    from builder.engine.depindex import digest_parts

    files: dict[str, list[bytes | str]] = {}
    for rel in sorted(row_entries):
        entry = row_entries[rel]
        for slug in entry.recipes:
            files.setdefault(slug, []).extend((rel, entry.kind, entry.digest))
    return {
        slug: digest_parts(slug, recipe.meta.model_dump_json(), context, *files.get(slug, ()))
        for slug, recipe in site.recipes.items()
    }


def context_digest(config: SiteConfig) -> bytes:
    """What the site declares beside its content and rows: ``site.yaml`` and the files directly under
    ``data/`` (nodes, hardware, annotations), whole (a few small files, read on every load)."""
    from builder.engine.depindex import digest_parts
    from builder.files import read_regular

    root = config.root
    paths = [root / "site.yaml", *sorted((root / "data").glob("*"))]
    parts: list[bytes | str] = []
    for path in paths:
        if path.is_file():
            parts += [path.relative_to(root).as_posix(), read_regular(path)]
    return digest_parts("context", *parts)


def statuses_key(row_entries: Mapping[str, RowEntry], keys: Mapping[str, bytes]) -> bytes:
    """What every row's status is computed from: every row file in order (their rows, their ids)
    and every recipe's key (its front matter, the context)."""
    from builder.engine.depindex import digest_parts

    parts: list[bytes | str] = []
    for rel, entry in row_entries.items():  # in row order
        parts += [rel, entry.kind, entry.digest]
    for slug in sorted(keys):
        parts += [slug, keys[slug]]
    return digest_parts("statuses", *parts)


class FindingsMemo:
    """Findings and row statuses kept in the engine's memo (:mod:`builder.engine.memo`): a recipe's
    findings under ``("findings", its key)``, the statuses under ``("statuses", status_key)``."""

    def __init__(self, memo: Memo, keys: Mapping[str, bytes], status_key: bytes) -> None:
        self.memo = memo
        self.keys = keys
        self.status_key = status_key
        self.stored: Stored = {}
        """This build's findings by recipe, as kept (key, pickled detached findings, how many)."""
        self.computed: set[str] = set()
        """Recipes whose findings the last :meth:`findings` call computed (the rest were restored)."""
        self._pending: tuple[Site, list[Finding], dict[str, bytes]] | None = None

    def statuses(self) -> tuple[list[RowStatus], np.ndarray] | None:
        """The last build's row statuses (kinds, kind of each row), when nothing they read changed."""
        kept: tuple[list[RowStatus], np.ndarray] | None = self.memo.get(("statuses", self.status_key))
        return kept

    def keep_statuses(self, kinds: list[RowStatus], kind_of_row: np.ndarray) -> None:
        self.memo.put(("statuses", self.status_key), (kinds, kind_of_row))

    def findings(self, site: Site, combos: Combinations | None) -> SiteFindings:
        """Every finding of the site, unannotated: computed now for the recipes whose key changed,
        restored when first asked for the others (:class:`SiteFindings`)."""
        slugs = sorted(site.recipes)
        kept: Stored = {}
        for slug in slugs:
            key = self.keys.get(slug)
            found = self.memo.get(("findings", key)) if key is not None else None
            if found is not None:
                kept[slug] = (key, *found)
        missing = [slug for slug in slugs if slug not in kept]
        computed: dict[str, list[Finding]] = {slug: [] for slug in missing}
        fresh: list[Finding] = []
        if missing:
            # Every recipe missing (a first build): the whole site at once, no filtering by recipe.
            fresh = find_non_reproduction(site, combos, recipes=set(missing) if kept else None)
            for finding in fresh:
                computed[finding.recipe].append(finding)
        pending = {slug: self.keys[slug] for slug in missing if slug in self.keys}
        self.stored.clear()
        self.stored.update(kept)
        self.computed = set(missing)
        self._pending = (site, fresh, pending) if pending else None  # stored by settle()
        return SiteFindings(self, site, combos, slugs, computed, kept)

    def settle(self) -> None:
        """Store the findings :meth:`findings` computed, detached from the site and pickled (once).

        Not done by :meth:`findings`: a first build's load stage spent ≈ 0.2 s of its 1 s on it,
        for a record written only at the end of the build (and not at all by ``build --no-cache``);
        the engine calls this when it saves (:meth:`builder.engine.loadcache.LoadCache.settle`)."""
        if self._pending is None:
            return
        site, fresh, pending = self._pending
        self._pending = None
        detached: dict[str, list[Finding]] = {slug: [] for slug in pending}
        try:
            # Detached in one pass: locating rows indexes the site's row files once.
            for finding in detach_findings(fresh, site):
                detached[finding.recipe].append(finding)
        except Exception:  # noqa: BLE001 - not stored: computed again next build
            return
        for slug, key in pending.items():
            found = detached[slug]
            blob = pickle.dumps(found, pickle.HIGHEST_PROTOCOL)
            self.stored[slug] = (key, blob, len(found))
            self.memo.put(("findings", key), (blob, len(found)))

    def forget(self, slug: str) -> None:
        """Drop a recipe's kept findings (they could not be restored): the next build computes them."""
        entry = self.stored.pop(slug, None)
        if entry is not None:
            self.memo.drop(("findings", entry[0]))
        self.computed.add(slug)


def restore(kept: Stored, slugs: list[str], site: Site) -> dict[str, list[Finding]]:
    """The kept findings of ``slugs`` bound to ``site``; a recipe that cannot be is left out."""
    try:
        detached = {slug: pickle.loads(kept[slug][1]) for slug in slugs}
        # One pass over them all: locating rows needs an index of the site's row files.
        flat = restore_findings([f for slug in slugs for f in detached[slug]], site)
    except (StaleFindings, pickle.UnpicklingError, AttributeError, TypeError, ValueError, KeyError):
        if len(slugs) <= 1:
            return {}
        return {  # find the recipe at fault (a key should have caught it)
            slug: found
            for part in (slugs[: len(slugs) // 2], slugs[len(slugs) // 2 :])
            for slug, found in restore(kept, part, site).items()
        }
    out: dict[str, list[Finding]] = {slug: [] for slug in slugs}
    for finding in flat:
        out[finding.recipe].append(finding)
    return out


class SiteFindings:
    """The site's findings by recipe: those computed this build in hand, the kept ones restored
    (unpickled and bound to this build's rows) when first asked for. An edit build's pages ask
    for a few recipes' findings; restoring all 1,000 took ≈ 0.08 s. The same objects are handed
    out every time (annotations are attached to them)."""

    def __init__(
        self,
        memo: FindingsMemo,
        site: Site,
        combos: Combinations | None,
        slugs: list[str],
        computed: dict[str, list[Finding]],
        kept: Stored,
    ) -> None:
        self._memo, self._site, self._combos, self._slugs = memo, site, combos, slugs
        self._done = computed
        self._kept = kept  # its own: the memo's entries change with the next build

    def of(self, slug: str) -> list[Finding]:
        """The recipe's findings (not a copy)."""
        found = self._done.get(slug)
        if found is None:
            if slug not in self._kept:
                return []
            self._take([slug])
            found = self._done[slug]
        return found

    def all(self) -> list[Finding]:
        """Every finding, recipes in name order (their findings' first sort key: the site's order)."""
        self._take([slug for slug in self._slugs if slug not in self._done])
        return [f for slug in self._slugs for f in self._done[slug]]

    def digest(self) -> str | None:
        """A hash of every recipe's findings as stored (the computed ones detached and pickled
        now, which the record's save then reuses), without restoring any: pages that list the
        findings depend on it, not on every row. A first build gives it too, so that the edit after
        it finds the same digest and renders none of those pages again. None when a recipe's
        findings cannot be stored."""
        import hashlib

        self._memo.settle()
        stored = self._memo.stored
        whole = hashlib.sha256(b"findings\0")
        for slug in self._slugs:
            entry = stored.get(slug)
            if entry is None:
                return None
            whole.update(f"{slug}\0{len(entry[1])}\0".encode())
            whole.update(entry[1])
        return whole.hexdigest()

    def counts(self) -> dict[str, tuple[int, int]]:
        """Per recipe, (findings, open findings), without restoring a kept recipe's: its stored
        count is both (one never restored has no annotation)."""
        out: dict[str, tuple[int, int]] = {}
        for slug in self._slugs:
            done = self._done.get(slug)
            if done is None:
                count = self._kept[slug][2] if slug in self._kept else 0
                out[slug] = (count, count)
            else:
                out[slug] = (len(done), sum(1 for f in done if f.is_open))
        return out

    def _take(self, slugs: list[str]) -> None:
        if not slugs:
            return
        restored = restore(self._kept, slugs, self._site)
        failed = [slug for slug in slugs if slug not in restored]
        if failed:  # a key should have caught it: computed here, and no longer kept
            for slug in failed:
                restored[slug] = []
                self._memo.forget(slug)
            for finding in find_non_reproduction(self._site, self._combos, recipes=set(failed)):
                restored[finding.recipe].append(finding)
        self._done.update(restored)


def reconcile_memoised(
    site: Site, annotations: Sequence[LocatedAnnotation], problems: Problems, memo: FindingsMemo
) -> Reconciliation:
    """:func:`builder.analysis.reconcile.reconcile_rows` with the statuses and findings ``memo``
    kept from an earlier build where their inputs are unchanged: the same reconciliation."""
    kept = memo.statuses()
    if kept is not None:
        combos = None
        kinds, kind_of_row = kept
    else:
        combos = combinations(site)
        kinds, kind_of_row = row_statuses(site, combos)
        memo.keep_statuses(kinds, kind_of_row)
    result = Reconciliation(kinds, kind_of_row)
    result.source = memo.findings(site, combos)
    return annotate(result, annotations, problems)

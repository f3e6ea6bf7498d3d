"""Findings kept across builds, per recipe: an edit reconciles only the recipes it touches.

Findings are computed per recipe (:func:`builder.findings.find_non_reproduction` with ``recipes``
gives the whole site's findings of those recipes), from that recipe's rows, its front matter
and which hardware each node is. A recipe's *key* hashes all of it: the fields reconciliation
reads from the front matter, every row file naming the recipe (path and content hash: its rows,
their order and their lines) and the node → hardware map. A recipe whose key is unchanged gets its
findings of the previous build back, detached from that build's rows and bound to this one's
(:func:`builder.findings.restore_findings`); the others are computed. Annotations are attached
afterwards, every build, as without the memo. The builder's code is not in the key: the
incremental engine drops the whole load cache, this memo with it, when the code changes.
"""

from __future__ import annotations

import pickle
from collections.abc import Mapping
from typing import TYPE_CHECKING

from builder.findings import Finding, StaleFindings, detach_findings, find_non_reproduction, restore_findings

if TYPE_CHECKING:
    from builder.load import Site
    from builder.loadcache import RowEntry
    from builder.run_groups import Combinations

Stored = dict[str, tuple[bytes, bytes]]
"""Recipe slug → (key, pickled detached findings)."""


def recipe_keys(site: Site, row_entries: Mapping[str, RowEntry]) -> dict[str, bytes]:
    """Each recipe's key: everything its findings are computed from (see the module docstring)."""
    from builder.depindex import digest_parts

    nodes = digest_parts(*(f"{node}\0{site.nodes[node].hardware}" for node in sorted(site.nodes)))
    files: dict[str, list[bytes | str]] = {}
    for rel in sorted(row_entries):
        entry = row_entries[rel]
        for slug in entry.recipes:
            files.setdefault(slug, []).extend((rel, entry.kind, entry.digest))
    keys: dict[str, bytes] = {}
    for slug, recipe in site.recipes.items():
        meta = recipe.meta
        fields = repr((meta.engine, meta.engine_version, meta.hardware, meta.flags, sorted(meta.env.items())))
        keys[slug] = digest_parts(slug, fields, nodes, *files.get(slug, ()))
    return keys


class FindingsMemo:
    """The findings of the previous build by recipe (``stored``, updated by :meth:`findings`)."""

    def __init__(self, stored: Stored, keys: Mapping[str, bytes]) -> None:
        self.stored = stored
        self.keys = keys
        self.computed: set[str] = set()
        """Recipes whose findings the last :meth:`findings` call computed (the rest were restored)."""

    def findings(self, site: Site, combos: Combinations) -> list[Finding]:
        """Every finding of the site, in :func:`find_non_reproduction`'s order, unannotated."""
        slugs = sorted(site.recipes)
        reusable = [
            slug for slug in slugs if slug in self.stored and self.stored[slug][0] == self.keys.get(slug)
        ]
        restored = self._restore(reusable, site)
        missing = {slug for slug in slugs if slug not in restored}
        computed: dict[str, list[Finding]] = {slug: [] for slug in missing}
        if missing:
            for finding in find_non_reproduction(site, combos, recipes=missing):
                computed[finding.recipe].append(finding)
        stored: Stored = {}
        for slug in slugs:
            key = self.keys.get(slug)
            if key is None:
                continue
            if slug in restored:
                stored[slug] = self.stored[slug]
            else:
                stored[slug] = (
                    key,
                    pickle.dumps(detach_findings(computed[slug], site), pickle.HIGHEST_PROTOCOL),
                )
        self.stored.clear()
        self.stored.update(stored)
        self.computed = missing
        # Recipes are the findings' first sort key: per recipe in name order is the site's order.
        return [f for slug in slugs for f in (restored[slug] if slug in restored else computed[slug])]

    def _restore(self, slugs: list[str], site: Site) -> dict[str, list[Finding]]:
        """The stored findings of ``slugs`` bound to ``site``; a recipe that cannot be is left out."""
        try:
            detached = {slug: pickle.loads(self.stored[slug][1]) for slug in slugs}
            # One pass over them all: locating rows needs an index of the site's row files.
            flat = restore_findings([f for slug in slugs for f in detached[slug]], site)
        except (StaleFindings, pickle.UnpicklingError, AttributeError, TypeError, ValueError, KeyError):
            if len(slugs) <= 1:
                return {}
            return {  # find the recipe at fault (a key should have caught it)
                slug: found
                for part in (slugs[: len(slugs) // 2], slugs[len(slugs) // 2 :])
                for slug, found in self._restore(part, site).items()
            }
        out: dict[str, list[Finding]] = {slug: [] for slug in slugs}
        for finding in flat:
            out[finding.recipe].append(finding)
        return out

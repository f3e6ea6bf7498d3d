"""The build, top to bottom: load → validate → ingest → reconcile → render → write."""

from __future__ import annotations

import time
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from builder.analysis.annotations import LocatedAnnotation, load_annotations
from builder.analysis.reconcile import Reconciliation, reconcile_rows
from builder.config import SiteConfig
from builder.data.load import Site, SiteLoader, load_site
from builder.errors import BuildAborted, Problems
from builder.site.units import Batch, Unit

if TYPE_CHECKING:
    from builder.engine.loadcache import LoadCache
    from builder.site.context import RenderContext
    from builder.site.search import SearchPlan


@dataclass
class Timings:
    """Seconds per stage, for ``--verbose``."""

    stages: dict[str, float] = field(default_factory=dict)

    def measure(self, name: str, fn: Callable[[], Any]) -> Any:
        start = time.perf_counter()
        try:
            return fn()
        finally:
            self.stages[name] = self.stages.get(name, 0.0) + time.perf_counter() - start

    def summary(self) -> str:
        total = sum(self.stages.values())
        parts = " ".join(f"{name} {secs:.2f}s" for name, secs in self.stages.items())
        return f"{parts} | total {total:.2f}s"


@dataclass
class Loaded:
    """The outcome of the load stages: a site (possibly partial) and every problem found."""

    site: Site
    problems: Problems
    recon: Reconciliation | None


def load_with_annotations(
    config: SiteConfig, timings: Timings | None = None, *, loader: SiteLoader | None = None
) -> tuple[Site, Problems, list[LocatedAnnotation]]:
    """The load stage: the site (possibly partial), every problem found, and the annotations.
    ``loader``: how each file's load is had (:class:`builder.data.load.SiteLoader`)."""
    timings = timings or Timings()
    problems = Problems()
    site: Site = timings.measure("load", lambda: load_site(config, problems, loader=loader))
    return site, problems, load_annotations(config.root, site.recipes, problems, site.recipe_files)


def load_and_reconcile(
    config: SiteConfig, timings: Timings | None = None, *, cache: LoadCache | None = None
) -> Loaded:
    """Load and validate everything; reconcile only when the input is valid.

    ``cache`` is the incremental builder's record of earlier loads (see :mod:`builder.engine.loadcache`).
    """
    timings = timings or Timings()
    site, problems, annotations = load_with_annotations(config, timings, loader=cache)
    # Annotations are matched against findings, so an annotation that matches none is reported
    # after reconciliation (and still aborts a build).
    if problems:
        return Loaded(site, problems, None)
    if cache is None:
        recon = timings.measure("reconcile", lambda: reconcile_rows(site, annotations, problems))
        return Loaded(site, problems, recon)
    from builder.engine.findings_memo import (
        FindingsMemo,
        context_digest,
        recipe_keys,
        reconcile_memoised,
        statuses_key,
    )

    entries = cache.rows.entries
    keys = recipe_keys(site, entries, context_digest(config))
    memo = FindingsMemo(cache.memo, keys, statuses_key(entries, keys))
    recon = timings.measure("reconcile", lambda: reconcile_memoised(site, annotations, problems, memo))
    cache.unsettled = memo.settle  # when the record is saved, if it is
    return Loaded(site, problems, recon)


Stage = Callable[[Collection[str]], list[Unit | Batch]]
"""A producer of output files: given the path of every page and asset, it declares the units it
makes (:mod:`builder.site.units`)."""


def output_stages(site: Site, ctx: RenderContext, plan: SearchPlan | None = None) -> list[tuple[str, Stage]]:
    """Producers of output files that read the rendered pages' paths, after the page jobs.

    Each gets the path of every page and asset and declares the units it makes; the engine makes
    those whose inputs changed. They read no page and none of each other's files, so the engine
    may run them beside the render. Add a producer here, not in :func:`build`, so incremental
    builds run it too. ``plan``: the search records' plan, when the caller made it.
    """
    # Imported here so that ``check`` (load and reconcile only) does not load the renderers.
    from builder.site.downloads import document_units
    from builder.site.faq import faq_entries
    from builder.site.search import SearchPlan as Plan
    from builder.site.search import page_records, search_units
    from builder.site.toolkit import reader_units

    def search(_: Collection[str]) -> list[Unit | Batch]:  # the records come from content, not pages
        return search_units(
            plan or Plan.of(page_records(site, ctx.markdown, faq_entries(site, ctx.markdown)))
        )

    return [
        ("data", lambda files: reader_units(site, ctx.recon, ctx.markdown, files)),
        ("api", lambda _: document_units(site, ctx.recon, ctx.markdown)),
        ("search", search),
    ]


def abort(problems: Problems) -> BuildAborted:
    return BuildAborted(problems.errors, problems.warnings)

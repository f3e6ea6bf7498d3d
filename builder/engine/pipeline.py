"""The build, top to bottom: load → validate → ingest → reconcile → render → write."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from builder.analysis.annotations import LocatedAnnotation, load_annotations
from builder.analysis.reconcile import Reconciliation, reconcile_rows
from builder.config import SiteConfig
from builder.data.load import Site, load_site
from builder.errors import BuildAborted, Problem, Problems
from builder.site.deps import Reuse, no_reuse

if TYPE_CHECKING:
    from builder.content.markdown import Markdown
    from builder.data.loadcache import LoadCache
    from builder.engine.forked import Forked
    from builder.site.context import ContentSummary, RenderContext
    from builder.site.downloads import SiteWideAhead


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
    config: SiteConfig,
    timings: Timings | None = None,
    *,
    cache: LoadCache | None = None,
    started: Forked[Any] | None = None,
    on_content: Callable[[Site], None] | None = None,
) -> tuple[Site, Problems, list[LocatedAnnotation]]:
    """The load stage: the site (possibly partial), every problem found, and the annotations.

    ``started``: a content load begun ahead (:func:`builder.data.load.start_content_load`);
    ``on_content``: see :func:`builder.data.load.load_site`."""
    timings = timings or Timings()
    problems = Problems()
    site: Site = timings.measure(
        "load", lambda: load_site(config, problems, cache=cache, started=started, on_content=on_content)
    )
    return site, problems, load_annotations(config.root, site.recipes, problems)


def load_and_reconcile(
    config: SiteConfig,
    timings: Timings | None = None,
    *,
    cache: LoadCache | None = None,
    on_loaded: Callable[[Site], None] | None = None,
    on_content: Callable[[Site], None] | None = None,
    on_statuses: Callable[[Site, Reconciliation], None] | None = None,
) -> Loaded:
    """Load and validate everything; reconcile only when the input is valid.

    ``cache`` is the incremental builder's record of earlier loads (see :mod:`builder.data.loadcache`).
    ``on_loaded`` is called with the site once it loaded without problems, before reconciliation
    (the engine starts the stages that need no reconciliation then); ``on_content`` with its
    content pages alone as soon as they are loaded (:func:`builder.data.load.load_site`);
    ``on_statuses`` with the site and its reconciliation once the rows' statuses are known, before
    the findings (see :func:`builder.analysis.reconcile.reconcile_rows`).
    """
    timings = timings or Timings()
    site, problems, annotations = load_with_annotations(config, timings, cache=cache, on_content=on_content)
    # Annotations are matched against findings, so an annotation that matches none is reported
    # after reconciliation (and still aborts a build).
    if problems:
        return Loaded(site, problems, None)
    if on_loaded is not None:
        on_loaded(site)
    memo = None
    if cache is not None:
        from builder.analysis.findings_memo import FindingsMemo, data_unchanged, recipe_keys, statuses_key

        entries = cache.rows.entries
        changed, cache.changed = cache.changed, None
        earlier = {slug: kept[0] for slug, kept in cache.findings.items()}
        keys = recipe_keys(site, entries, earlier, changed)
        same = changed is not None and data_unchanged(changed) and keys == earlier
        # No row file and no recipe's key changed: the kept statuses' key is still theirs.
        status_key = next(iter(cache.statuses)) if same and len(cache.statuses) == 1 else None
        if status_key is None:
            status_key = statuses_key(entries, keys)
        memo = FindingsMemo(cache.findings, keys, cache.statuses, status_key)
    statuses = functools.partial(on_statuses, site) if on_statuses is not None else None
    recon = timings.measure(
        "reconcile", lambda: reconcile_rows(site, annotations, problems, memo=memo, on_statuses=statuses)
    )
    if cache is not None and memo is not None:
        cache.unsettled = memo.settle  # when the record is saved, if it is
    return Loaded(site, problems, recon)


@dataclass
class BuildResult:
    files: int
    rows: int
    warnings: list[Problem]
    timings: Timings


Stage = Callable[[Mapping[str, bytes]], dict[str, bytes]]


def output_stages(
    site: Site, ctx: RenderContext, reuse: Reuse = no_reuse, ahead: SiteWideAhead | None = None
) -> list[tuple[str, Stage]]:
    """Producers of output files that read the rendered pages, in order, after the page jobs.

    Each gets every file produced so far (pages, assets, earlier stages) and returns new ones. Add
    a producer here, not in :func:`build`, so incremental builds run it too; an expensive one can
    memoise its files across builds with ``reuse`` (see :class:`builder.site.deps.Reuse`).
    """
    # Imported here so that ``check`` (load and reconcile only) does not load the renderers.
    from builder.site.toolkit import reader_files

    return [
        ("data", lambda files: reader_files(site, ctx.recon, ctx.markdown, files, reuse, ahead)),
        *page_independent_stages(site, ctx.markdown, reuse),
    ]


def page_independent_stages(
    site: Site,
    markdown: Markdown,
    reuse: Reuse = no_reuse,
    announce: Callable[[ContentSummary], None] | None = None,
) -> list[tuple[str, Stage]]:
    """The stages of :func:`output_stages` that read no page, only the site and its markdown (the
    engine starts them before the pages, in a forked child: same files, sooner). ``announce``: given
    the content summary as soon as the search records are known (:mod:`builder.site.content_summary`),
    before Pagefind starts."""
    from builder.site.faq import faq_entries
    from builder.site.search import SearchPlan, page_records, search_files

    def search(files: Mapping[str, bytes]) -> dict[str, bytes]:
        entries = faq_entries(site, markdown)
        plan = SearchPlan.of(page_records(site, markdown, entries))
        if announce is not None:
            from builder.site.content_summary import summarize

            announce(summarize(site, markdown, plan, entries))
        return search_files(site, markdown, files, reuse, plan)

    return [("search", search)]


def build(config: SiteConfig, *, cache: bool = True, workers: int | None = None) -> BuildResult:
    """Build the site into ``config.out``; raise :class:`BuildAborted` leaving the old site untouched.

    The build is incremental (:mod:`builder.engine.incremental`): with ``cache`` it reuses and keeps its
    record in ``<root>/.cache/builder/``; the output is the same bytes either way.
    """
    from builder.engine.incremental import IncrementalBuilder

    report = IncrementalBuilder(config, persist=cache, workers=workers).run(None)
    timings = Timings(dict(report.seconds))
    return BuildResult(report.files, report.rows, report.warnings, timings)


def abort(problems: Problems) -> BuildAborted:
    return BuildAborted(problems.errors, problems.warnings)

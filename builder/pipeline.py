"""The build, top to bottom: load → validate → ingest → reconcile → render → write."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from builder.annotations import load_annotations
from builder.config import SiteConfig
from builder.errors import BuildAborted, Problem, Problems
from builder.load import Site, load_site
from builder.output import publish
from builder.reconcile import Reconciliation, reconcile_rows
from builder.render import make_context, render_site
from builder.search import search_files
from builder.toolkit import reader_files


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


def load_and_reconcile(config: SiteConfig, timings: Timings | None = None) -> Loaded:
    """Load and validate everything; reconcile only when the input is valid."""
    timings = timings or Timings()
    problems = Problems()
    site: Site = timings.measure("load", lambda: load_site(config, problems))
    annotations = load_annotations(config.root, site.recipes, problems)
    # Annotations are matched against findings, so an annotation that matches none is reported
    # after reconciliation (and still aborts a build).
    recon = (
        None if problems else timings.measure("reconcile", lambda: reconcile_rows(site, annotations, problems))
    )
    return Loaded(site, problems, recon)


@dataclass
class BuildResult:
    files: int
    rows: int
    warnings: list[Problem]
    timings: Timings


def build(config: SiteConfig) -> BuildResult:
    """Build the site into ``config.out``; raise :class:`BuildAborted` leaving the old site untouched."""
    timings = Timings()
    loaded = load_and_reconcile(config, timings)
    loaded.problems.raise_if_any()
    assert loaded.recon is not None
    site = loaded.site
    ctx = timings.measure("prepare", lambda: make_context(site, loaded.recon))  # type: ignore[arg-type]
    files = timings.measure("render", lambda: render_site(ctx))
    files.update(timings.measure("data", lambda: reader_files(site, ctx.recon, ctx.markdown, files)))
    files.update(timings.measure("search", lambda: search_files(site, ctx.markdown, files)))
    timings.measure("write", lambda: publish(files, config.out, config.root))
    return BuildResult(len(files), site.rows.num_rows, loaded.problems.warnings, timings)


def abort(problems: Problems) -> BuildAborted:
    return BuildAborted(problems.errors, problems.warnings)

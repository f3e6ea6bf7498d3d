"""The whole build, top to bottom, as plain functions: load → validate → ingest → reconcile → render.

:func:`build_site` is the pipeline a newcomer can read from first line to last: nothing kept between
builds, no loader strategy, memo, thread, fork or callback. It returns every output file's bytes and
writes no output; :func:`publish_site` swaps them in as the new site. ``build --no-cache`` is these two
steps, and the equivalence tests compare the incremental engine's output with :func:`build_site`'s.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

from builder.analysis.annotations import load_annotations
from builder.analysis.reconcile import reconcile_rows
from builder.config import SiteConfig
from builder.data.load import load_site
from builder.engine.pipeline import Stage, Timings, output_stages
from builder.errors import BuilderError, Problem, Problems
from builder.site.units import Unit


class SiteFiles(dict[str, bytes]):
    """Every output file's bytes by its path in the site, with what a build reports besides."""

    def __init__(self, files: dict[str, bytes], rows: int, warnings: list[Problem]) -> None:
        super().__init__(files)
        self.rows = rows
        """How many rows the site was built from."""
        self.warnings = warnings
        """The load's warnings, sorted (a build with errors raises instead)."""


def build_site(config: SiteConfig, timings: Timings | None = None) -> SiteFiles:
    """Every file of the site ``config`` describes, by output path. Nothing is written but the Vega
    runtime's bundle, cached by its versions (:func:`builder.site.chart_runtime.runtime_bundle`).

    Raises :class:`builder.errors.BuildAborted` with every problem of the input (``path:line``), as
    the incremental build does, or another :class:`builder.errors.BuilderError` (a template error).
    ``timings``: seconds per stage are added to it (``build --verbose``).
    """
    from builder.site.render import make_context, render_site

    timings = timings if timings is not None else Timings()
    problems = Problems()
    site = timings.measure("load", lambda: load_site(config, problems))
    try:
        annotations = load_annotations(config.root, site.recipes, problems, site.recipe_files)
        problems.raise_if_any()  # reconciled only when the load found nothing wrong
        recon = timings.measure("reconcile", lambda: reconcile_rows(site, annotations, problems))
        problems.raise_if_any()  # an annotation that matches no finding
        ctx = make_context(site, recon)
        files = timings.measure("render", lambda: render_site(ctx))
        paths = sorted(files)
        for name, stage in output_stages(site, ctx):
            made: dict[str, bytes] = timings.measure(name, partial(stage_files, stage, paths))
            for path in made:
                if path in files:
                    raise BuilderError(f"two producers write {path}", "<builder>")
            files.update(made)
        return SiteFiles(files, site.rows.num_rows, sorted(problems.warnings))
    finally:
        site.close_connection()


def stage_files(stage: Stage, paths: list[str]) -> dict[str, bytes]:
    """The files of every unit an output stage gives, each batch made in one call."""
    files: dict[str, bytes] = {}
    for unit in stage(paths):
        batch = unit.batch() if isinstance(unit, Unit) else unit
        for _, made in batch.make(set(batch.digests)):
            files.update(made)
    return files


def publish_site(files: dict[str, bytes], out: Path, root: Path, trash: Path) -> None:
    """Replace the site in ``out`` by ``files`` atomically (:func:`builder.engine.output.publish`):
    a build that failed before this step left the previous site as it was. The replaced tree is
    deleted in the background from ``trash``."""
    from builder.engine.output import publish

    publish(files, out, root, trash=trash)

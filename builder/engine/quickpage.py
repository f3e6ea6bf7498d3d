"""The preview's first answer to a save: the one recipe page the change touches, rendered alone.

A save of a recipe's markdown or of one row file changes that recipe's page at once, but a full
incremental build (every page whose inputs changed, reconciliation over every row, search, the
downloads) takes seconds on a big site. :func:`quick_recipe_page` renders just the recipe page from
a *mini site*: the last build's site with the edited recipe swapped in and only that recipe's rows
(the new file's rows parsed and validated with the same code as a build), reconciled on their own —
findings are per recipe, so they come out the same. The preview writes that page, reloads it, and
runs the full build right after, which rewrites the page only if anything site-wide made it differ.

Anything the quick path cannot answer exactly as a build would (a problem in the file, a new or
deleted recipe, a file that names another recipe, several files, a figure no row supports) returns
``None``: the full build handles it and reports its problems. The page's ``{{ ... }}`` figures come
from the recipe's rows as the mini site has them and from the other recipes' as the last build had.
"""

from __future__ import annotations

import dataclasses
from pathlib import PurePosixPath

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from builder.analysis.annotations import load_annotations
from builder.analysis.reconcile import reconcile_rows
from builder.content.models import RecipeMeta
from builder.data.ingest import validate_rows
from builder.data.load import Recipe, Site, _load_page, _make_recipe
from builder.data.rows import ROW_FILE_SUFFIXES, ParsedFile, RowFile, parse_row_files
from builder.errors import Problems
from builder.site.context import RenderContext
from builder.site.prose import bind_figures
from builder.site.render import render_recipe
from builder.site.views import rows_by_recipe


def quick_recipe_page(
    ctx: RenderContext, rel: str, data: bytes, con: duckdb.DuckDBPyConnection
) -> dict[str, bytes] | None:
    """``{output path: bytes}`` of the recipe page that saving ``data`` as ``rel`` (a path from the
    site root) changes, or ``None``.

    ``con`` is a DuckDB connection the caller keeps for these (opening one costs tens of ms); the
    tables registered on it are removed again."""
    parts = PurePosixPath(rel).parts
    if len(parts) == 3 and parts[:2] == ("content", "recipes") and rel.endswith(".md"):
        return _recipe_edit(ctx, rel, data, con)
    if len(parts) >= 3 and parts[:2] == ("data", "rows") and PurePosixPath(rel).suffix in ROW_FILE_SUFFIXES:
        return _row_file(ctx, rel, data, con)
    return None


def _recipe_edit(
    ctx: RenderContext, rel: str, data: bytes, con: duckdb.DuckDBPyConnection
) -> dict[str, bytes] | None:
    slug = PurePosixPath(rel).stem
    site = ctx.site
    if slug not in site.recipes:
        return None  # a new recipe changes indexes and comparisons first
    problems = Problems()
    recipe = _load_page(rel, slug, data, RecipeMeta, problems, make=_make_recipe)
    if recipe is None or problems.errors or not isinstance(recipe, Recipe):
        return None
    if site.hardware and recipe.meta.hardware not in site.hardware:
        return None
    recipes = dict(site.recipes)
    recipes[slug] = recipe
    edited = dataclasses.replace(site, recipes=recipes)
    return _render(ctx, edited, slug, _rows_of(site, slug), None, con)


def _row_file(
    ctx: RenderContext, rel: str, data: bytes, con: duckdb.DuckDBPyConnection
) -> dict[str, bytes] | None:
    site = ctx.site
    problems = Problems()
    source = RowFile(rel, data, PurePosixPath(rel).suffix[1:].lower())
    parsed, raw = parse_row_files([source], problems)
    if problems.errors or not raw.num_rows:
        return None
    typed = validate_rows(con, parsed, raw, sorted(site.recipes), sorted(site.nodes), problems)
    if problems.errors or problems.warnings:
        return None
    named = pc.unique(typed.column("recipe")).to_pylist()
    if len(named) != 1:
        return None
    slug = str(named[0])
    # The file's place among the site's row files: its old one when it was edited, else a new one.
    row_files = list(site.row_files)
    old = next((i for i, f in enumerate(row_files) if f.source.rel == rel), None)
    item = ParsedFile(source, None, ragged=parsed[0].ragged)
    if old is None:
        file_id = len(row_files)
        row_files.append(item)
    else:
        file_id = old
        row_files[old] = item
    old_rows = _rows_of(site, slug)
    if old is not None:
        old_rows = old_rows.filter(pc.not_equal(old_rows.column("file_id"), file_id))
    typed = typed.set_column(
        typed.schema.get_field_index("file_id"),
        "file_id",
        pa.array(np.full(typed.num_rows, file_id, np.int32)),
    )
    mini = dataclasses.replace(site, row_files=row_files)
    return _render(ctx, mini, slug, old_rows, typed.cast(old_rows.schema), con)


def _rows_of(site: Site, slug: str) -> pa.Table:
    return site.rows.filter(pc.equal(site.rows.column("recipe"), slug))


def _render(
    ctx: RenderContext,
    site: Site,
    slug: str,
    rows: pa.Table,
    added: pa.Table | None,
    con: duckdb.DuckDBPyConnection,
) -> dict[str, bytes] | None:
    """Reconcile ``slug``'s rows alone (plus ``added``) and render its page from them."""
    pieces = [rows] if added is None else [rows, added]
    table = pa.concat_tables(pieces).combine_chunks() if len(pieces) > 1 else rows
    # Rows in the order a full load gives them (files by path, rows in file order); row ids are
    # positions in the table, as everywhere else.
    files = table.column("file_id").to_pylist()
    lines = table.column("file_row").to_pylist()
    parts = {f: PurePosixPath(site.row_files[f].source.rel).parts for f in set(files)}
    order = sorted(range(table.num_rows), key=lambda i: (parts[files[i]], lines[i]))
    table = pc.take(table, pa.array(order, pa.int64()))
    table = table.set_column(
        table.schema.get_field_index("row_id"),
        "row_id",
        pa.array(np.arange(table.num_rows, dtype=np.int32)),
    )
    con.register("rows", table)
    try:
        mini = dataclasses.replace(site, rows=table, _con=con, extra={})
        problems = Problems()
        annotations = [
            a for a in load_annotations(site.config.root, site.recipes, problems) if a.entry.recipe == slug
        ]
        if problems.errors:
            return None
        recon = reconcile_rows(mini, annotations, problems)
        if problems.errors:
            return None
        mine = rows_by_recipe(mini)
        doc = mini.recipes[slug].doc
        if "{{" in doc.body:
            # Its figures: this recipe's from its rows here, the others' from the last build's.
            figures, failed = bind_figures(
                ctx.site, ctx.rows, ctx.markdown, pages=[(doc, slug, slug)], overlay=(slug, mini, mine)
            )
            if failed:
                return None
            ctx.markdown.bind({**ctx.markdown.bound, **figures})
        quick = dataclasses.replace(ctx, site=mini, recon=recon, rows=mine)
        html = render_recipe(quick, slug)
    finally:
        con.unregister("rows")
    return {f"recipes/{slug}/index.html": html}

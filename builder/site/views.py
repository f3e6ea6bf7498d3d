"""View models: the plain values templates receive, built from the site with batched queries."""

from __future__ import annotations

import datetime as dt
import functools
import json
from collections import defaultdict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from builder.analysis.findings import load_text
from builder.analysis.reconcile import MATCHES, NOT_RECORDED, Reconciliation
from builder.content.flags import FlagSyntaxError, is_hub_id, parse_flags, serve_command
from builder.content.markdown import numbered_apart, slugify
from builder.content.models import METRICS, QUANTITIES, ROW_FIELDS, RecipeMeta
from builder.content.shell import shell_command
from builder.data.load import CaseStudy, Recipe, Site
from builder.data.rows import ParsedFile
from builder.site.figures import HEADLINE_SHAPE, SHAPE, Cell, pick_cell, setting_of
from builder.site.figures import Setting as FigureSetting
from builder.site.reproduce import RunReproduction, reproduce_run

METRIC_LABELS: dict[str, tuple[str, str]] = {m: (QUANTITIES[m].label, QUANTITIES[m].unit) for m in METRICS}

ROW_COLUMNS = ("row_id", *ROW_FIELDS)
"""The columns of a row on pages and in the downloads: its position in the build, then every field."""


def _file_slugs(
    site: Site, rows: list[dict[str, Any]]
) -> tuple[list[tuple[ParsedFile, int]], dict[str, str]]:
    """Where each row comes from (its file and row number there), and the slug of each of those
    files by path (:func:`row_anchors`)."""
    located = site.row_sources([r["row_id"] for r in rows])
    files = {parsed.source.rel for parsed, _ in located}
    names = {rel: PurePosixPath(rel).stem for rel in files}
    if len(set(names.values())) < len(names):
        names = {rel: rel.removeprefix("data/rows/").rsplit(".", 1)[0] for rel in files}
    # Unique by construction: names that slugify alike (spark-01, spark_01) are numbered in path order.
    slugs: dict[str, str] = {}
    taken: set[str] = set()
    for rel in sorted(names):
        slugs[rel] = numbered_apart(slugify(names[rel]), taken)
    return located, slugs


def row_anchors(site: Site, rows: list[dict[str, Any]]) -> dict[int, str]:
    """Anchor of each row on its recipe page, from where the row comes from: ``row-<file>-<line>``.

    Not the row id: ids shift whenever an earlier file gains or loses rows, which would break links
    and tie every recipe page to every row file. ``<file>`` is the file's name without extension,
    or its whole path under ``data/rows/`` when two of the recipe's files share a name, numbered
    (``-2``, ``-3``) in path order when two still make the same slug (``spark-01``, ``spark_01``).
    """
    located, slugs = _file_slugs(site, rows)
    return {
        row["row_id"]: f"row-{slugs[parsed.source.rel]}-{parsed.line_of(file_row)}"
        for row, (parsed, file_row) in zip(rows, located, strict=True)
    }


NOTE_FIELDS = ("source", "engine_build", "harness", "contributor", "notes")
"""The row fields a recipe page shows as a row's notes; those all of a run's rows have alike are shown
once, with the run (:attr:`Run.shared`)."""


@dataclass(frozen=True)
class Run:
    """One run of a recipe page, a row file: where it is, its rows and the commands that reproduce them."""

    file_slug: str
    """The file's slug, as in its rows' anchors (:func:`row_anchors`)."""
    rel: str
    """The row file, relative to the site root."""
    row_ids: tuple[int, ...]
    """Its rows on the page, in the file's order."""
    commands: RunReproduction
    """The commands that reproduce its rows (:func:`builder.site.reproduce.reproduce_run`)."""
    shared: tuple[tuple[str, Any], ...] = ()
    """The note fields (:data:`NOTE_FIELDS`, in that order) every row of the run has alike, with
    their value (``None`` when none of them records it): shown once with the run, in no row."""

    @property
    def anchor(self) -> str:
        """The id of the run on its recipe page: ``run-<file>``."""
        return f"run-{self.file_slug}"


def recipe_runs(site: Site, recipe: Recipe, rows: list[dict[str, Any]]) -> list[Run]:
    """The runs of a recipe page's rows, in the order their newest row comes in ``rows``."""
    located, slugs = _file_slugs(site, rows)
    members: dict[str, tuple[ParsedFile, list[tuple[int, dict[str, Any]]]]] = {}
    for row, (parsed, file_row) in zip(rows, located, strict=True):
        members.setdefault(parsed.source.rel, (parsed, []))[1].append((file_row, row))
    runs = []
    for rel, (parsed, found) in members.items():
        found.sort(key=lambda member: member[0])
        in_file = [row for _, row in found]
        runs.append(
            Run(
                file_slug=slugs[rel],
                rel=rel,
                row_ids=tuple(row["row_id"] for row in in_file),
                commands=reproduce_run(
                    recipe.meta, recipe.slug, in_file, [parsed.line_of(file_row) for file_row, _ in found]
                ),
                shared=tuple(
                    (name, in_file[0][name])
                    for name in NOTE_FIELDS
                    if all(row[name] == in_file[0][name] for row in in_file)
                ),
            )
        )
    return runs


_ROW_ORDER = [
    ("date", "descending", "at_end"),
    ("prompt_tokens", "ascending", "at_end"),
    ("context_tokens", "ascending", "at_end"),
    ("concurrency", "ascending", "at_end"),
    ("row_id", "ascending", "at_end"),
]
"""A recipe's rows, newest first (nulls last, as ``ORDER BY`` puts them); ``row_id`` breaks ties."""


def _setting_key(r: dict[str, Any]) -> tuple[Any, ...]:
    """The row's setting's :data:`~builder.site.figures.SHAPE`."""
    return tuple(r[key] for key in SHAPE)


class RowsByRecipe(Mapping[str, list[dict[str, Any]]]):
    """All rows grouped by recipe, newest first; a recipe's rows become dicts on first use.

    Converting every row to Python objects is slow, and an incremental build renders a handful of
    recipes; so each recipe's slice is converted when a page asks for it. An unknown recipe has no
    rows (``[]``), as with a ``defaultdict``. Sorting every row is not worth it for a few recipes, so
    the first few asked for are taken one by one and all rows are sorted only once more are wanted.
    Arrow only (no DuckDB): the preview keeps this after the build's connection is closed.
    """

    ONE_BY_ONE = 16
    """Recipes taken on their own before all rows are sorted at once."""

    def __init__(self, site: Site) -> None:
        self._rows = site.rows.select(list(ROW_COLUMNS))
        counts = pc.value_counts(self._rows.column("recipe")).to_pylist()
        self._counts: dict[str, int] = {
            item["values"]: item["counts"] for item in sorted(counts, key=lambda item: item["values"])
        }
        self._table: pa.Table | None = None
        self._slices: dict[str, tuple[int, int]] = {}
        self._tables: dict[str, pa.Table] = {}
        self._converted: dict[str, list[dict[str, Any]]] = {}

    def _sort_all(self) -> None:
        order = pc.sort_indices(self._rows, [("recipe", "ascending", "at_end"), *_ROW_ORDER])
        self._table = pc.take(self._rows, order)
        offset = 0
        for slug, count in self._counts.items():
            self._slices[slug] = (offset, count)
            offset += count

    def table(self, slug: str) -> pa.Table:
        """The recipe's rows as Arrow columns (``ROW_COLUMNS``, newest first), not converted to dicts."""
        if self._table is None and len(self._tables) >= self.ONE_BY_ONE:
            self._sort_all()
        if self._table is not None:
            where = self._slices.get(slug)
            return self._table.slice(*where) if where is not None else self._table.slice(0, 0)
        found = self._tables.get(slug)
        if found is None:
            mine = pc.filter(self._rows, pc.equal(self._rows.column("recipe"), slug))
            order = pc.sort_indices(mine, _ROW_ORDER)
            found = self._tables[slug] = pc.take(mine, order)
        return found

    def __getitem__(self, slug: str) -> list[dict[str, Any]]:
        rows = self._converted.get(slug)
        if rows is None:
            rows = _to_dicts(self.table(slug)) if slug in self._counts else []
            self._converted[slug] = rows
        return rows

    def __contains__(self, slug: object) -> bool:
        return slug in self._counts

    def __iter__(self) -> Iterator[str]:
        return iter(self._counts)

    def __len__(self) -> int:
        return len(self._counts)


_EPOCH_ORDINAL = dt.date(1970, 1, 1).toordinal()


@functools.lru_cache(maxsize=1 << 14)
def _date_of(days: int) -> dt.date:
    return dt.date.fromordinal(_EPOCH_ORDINAL + days)


def _to_dicts(table: pa.Table) -> list[dict[str, Any]]:
    """``table.to_pylist()``, faster: Arrow makes a ``date`` object per cell slowly, so dates come
    through their day numbers, each distinct day made once."""
    columns = []
    for column in table.columns:
        if column.type == pa.date32():
            columns.append(
                [None if d is None else _date_of(d) for d in pc.cast(column, pa.int32()).to_pylist()]
            )
        else:
            columns.append(column.to_pylist())
    names = table.column_names
    return [dict(zip(names, values)) for values in zip(*columns)]  # noqa: B905 (same lengths)


def rows_by_recipe(site: Site) -> RowsByRecipe:
    """All rows grouped by recipe, newest first, in one query (converted lazily)."""
    return RowsByRecipe(site)


@dataclass(frozen=True)
class Headline:
    """The figures that lead a recipe page, computed from its matching rows."""

    setting: dict[str, Any]
    date: dt.date
    node: str
    figures: list[tuple[str, str, float, int]]
    """(label, unit, value, trials) per metric measured at the headline setting."""
    weights_gib: float | None
    kv_pool_tokens: int | None
    unrecorded: tuple[str, ...] = ()
    """Empty when the figures come from rows that match the recipe. Otherwise no row can be fully
    checked (the recipe or its rows leave these fields unrecorded) and the figures come from rows
    that agree on everything that is recorded; the page says so."""
    cells: tuple[Cell, ...] = ()
    """The figures as :func:`~builder.site.figures.pick_cell` gives them, in :data:`METRICS` order."""
    where: FigureSetting | None = None
    """The headline setting, hardware and output length included (the figures' key)."""

    @property
    def keys(self) -> list[str]:
        """:func:`~builder.site.figures.figure_key` of each figure, in :attr:`figures` order."""
        where = self.where
        return [where.key(c.recipe, c.metric) if where else "" for c in self.cells]


def headline(
    recipe: Recipe, rows: list[dict[str, Any]], recon: Reconciliation, node_hw: Mapping[str, str]
) -> Headline | None:
    """The recipe's figures at its headline setting: :func:`~builder.site.figures.pick_cell`, the one
    figure of a recipe at a setting, for each metric, from rows that match the recipe or leave
    something unrecorded (rows that differ are history and never lead the page).

    The setting: the recipe's ``headline`` when it gives one, else the single-stream setting measured
    most; among its hardware and output lengths, the one measured most. The rows that choose it are
    the matching ones, or without any, the rows that leave fewest fields unrecorded.
    """
    matching = [r for r in rows if recon.status(r["row_id"]).status == MATCHES]
    if not matching:
        candidates = [r for r in rows if recon.status(r["row_id"]).status == NOT_RECORDED]
        if candidates:
            # Prefer the rows that leave least unchecked: a row that records its flags and agrees
            # with the recipe beats one that records none.
            fewest = min(len(recon.status(r["row_id"]).unrecorded) for r in candidates)
            matching = [r for r in candidates if len(recon.status(r["row_id"]).unrecorded) == fewest]
    if not matching:
        return None
    wanted = recipe.meta.headline
    if wanted is not None:
        # What the headline does not name is empty: a headline is closed-loop (no request rate).
        key: tuple[Any, ...] = tuple(getattr(wanted, k) if k in HEADLINE_SHAPE else None for k in SHAPE)
    else:
        counts: dict[tuple[Any, ...], int] = defaultdict(int)
        for r in matching:
            if r["concurrency"] == 1 and r["request_rate"] is None:
                counts[_setting_key(r)] += 1
        if not counts:
            for r in matching:
                counts[_setting_key(r)] += 1
        prompt, rate = SHAPE.index("prompt_tokens"), SHAPE.index("request_rate")
        key = max(counts, key=lambda k: (counts[k], -(k[prompt] or 0), k[rate] is None))
    shaped = [r for r in matching if _setting_key(r) == key]
    if not shaped:
        return None
    # Hardware and output length: the most measured, then a recorded output, then the smaller.
    places: dict[FigureSetting, int] = defaultdict(int)
    for r in shaped:
        places[setting_of(r, node_hw)] += 1
    where = min(places, key=lambda s: (-places[s], s.sort_key()))
    at_setting = [r for r in rows if setting_of(r, node_hw) == where]
    cells = [pick_cell(at_setting, metric, recon, allow_differs=False) for metric in METRICS]
    found = [c for c in cells if c is not None]
    if not found:
        return None
    figures = [(*METRIC_LABELS[c.metric], c.value, c.trials) for c in found]
    lead = found[0]
    run = [r for r in at_setting if r["row_id"] in lead.row_ids]
    unrecorded = sorted({f for c in found for i in c.row_ids for f in recon.status(i).unrecorded})
    if all(c.status == MATCHES for c in found):
        unrecorded = []
    weights = next((r["weights_gib"] for r in run if r["weights_gib"] is not None), None)
    kv_pool = next((r["kv_pool_tokens"] for r in run if r["kv_pool_tokens"] is not None), None)
    shape = dict(zip(SHAPE, key, strict=True))
    return Headline(
        {**shape, "load": load_text(shape)},
        lead.date,
        lead.node,
        figures,
        weights,
        kv_pool,
        tuple(unrecorded),
        tuple(found),
        where,
    )


def key_parameters(recipe: Recipe) -> list[dict[str, str]]:
    try:
        flags = parse_flags(recipe.meta.flags)
    except FlagSyntaxError:
        return []
    notes = {k.replace("_", "-"): v for k, v in recipe.meta.flag_notes.items()}
    out = []
    for flag in flags:
        value = "on" if flag.value is True else "off" if flag.value is False else str(flag.value)
        out.append({"name": flag.name, "value": value, "why": notes.get(flag.name, "")})
    return out


API_PROMPT = "Explain speculative decoding in two sentences."
"""The question the page's API example asks."""


def api_example(meta: RecipeMeta) -> str | None:
    """The ``curl`` request to the served model; its JSON body is one quoted argument."""
    model = meta.served_model or (meta.checkpoint if is_hub_id(meta.checkpoint) else None)
    if model is None:
        return None
    body = {
        "model": model,
        "messages": [{"role": "user", "content": API_PROMPT}],
        "max_tokens": 256,
        "temperature": 0,
    }
    return shell_command(
        [
            ["curl", "-s", "http://127.0.0.1:8000/v1/chat/completions"],
            ["-H", "Content-Type: application/json"],
            ["-d", json.dumps(body, ensure_ascii=False, separators=(",", ":"))],
        ]
    )


def recipe_command(recipe: Recipe) -> str:
    """The serve command of the recipe page and of its API document."""
    meta = recipe.meta
    model = meta.checkpoint if is_hub_id(meta.checkpoint) else "<repository id not recorded>"
    return serve_command(model, recipe.flag_args, meta.env, meta.engine)


def case_studies_by_recipe(site: Site) -> dict[str, list[tuple[CaseStudy, str]]]:
    out: dict[str, list[tuple[CaseStudy, str]]] = defaultdict(list)
    for case in sorted(site.case_studies.values(), key=lambda c: (c.meta.date, c.slug), reverse=True):
        for arm in case.meta.arms:
            if arm.recipe:
                out[arm.recipe].append((case, arm.role))
    return out

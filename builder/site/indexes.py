"""Index pages: by hardware (``/hardware/<id>/``), by engine and engine version
(``/engines/<engine>/``) and by base model (``/models/``, linking to the comparison pages).

Row counts come from batched queries over the ``rows`` table: one per page at most.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from functools import cache, partial
from typing import Any

import pyarrow as pa

from builder.content.markdown import slugify
from builder.data.load import Recipe, Site
from builder.data.model_slugs import comparison_slugs
from builder.reads import Once
from builder.site.context import PageJob, RenderContext
from builder.site.home import Cards


@dataclass
class RowStats:
    """How many rows, from which recipes, over which dates."""

    rows: int = 0
    recipes: set[str] = field(default_factory=set)
    first: dt.date | None = None
    last: dt.date | None = None

    def add(self, rows: int, recipe: str, first: dt.date, last: dt.date) -> None:
        self.rows += rows
        self.recipes.add(recipe)
        self.first = first if self.first is None else min(self.first, first)
        self.last = last if self.last is None else max(self.last, last)


@dataclass
class EngineVersion:
    version: str
    recipes: list[Recipe] = field(default_factory=list)
    """Recipes verified on this version."""
    stats: RowStats = field(default_factory=RowStats)
    """Rows measured on this version, whichever recipe they follow."""


@dataclass
class Engine:
    slug: str
    name: str
    versions: dict[str, EngineVersion] = field(default_factory=dict)

    def version(self, version: str) -> EngineVersion:
        return self.versions.setdefault(version, EngineVersion(version))

    @property
    def sorted_versions(self) -> list[EngineVersion]:
        """Newest first by version number; ``unknown`` and other non-numbers last."""
        return sorted(self.versions.values(), key=lambda v: _version_key(v.version), reverse=True)

    @property
    def recipe_count(self) -> int:
        return len({r.slug for v in self.versions.values() for r in v.recipes})

    @property
    def row_count(self) -> int:
        return sum(v.stats.rows for v in self.versions.values())


def _version_key(version: str) -> tuple[int, tuple[Any, ...]]:
    parts: list[Any] = []
    for piece in version.replace("-", ".").replace("+", ".").split("."):
        parts.append((1, int(piece), "") if piece.isdigit() else (0, 0, piece))
    numeric = 1 if version[:1].isdigit() else 0
    return numeric, tuple(parts)


@cache
def engine_slug(engine: str) -> str:
    # Asked for every recipe and every group of rows, of a handful of engine names: cached so the
    # regex runs once per name.
    return slugify(engine)


def engines(site: Site) -> dict[str, Engine]:
    """Engines by slug, with each version's recipes and rows (one query)."""
    out: dict[str, Engine] = {}

    def engine(name: str) -> Engine:
        slug = engine_slug(name)
        if slug not in out:
            out[slug] = Engine(slug, name)
        return out[slug]

    for slug in sorted(site.recipes):
        recipe = site.recipes[slug]
        engine(recipe.meta.engine).version(recipe.meta.engine_version).recipes.append(recipe)
    recipe_engine = pa.table(
        {
            "recipe": pa.array(list(site.recipes), pa.string()),
            "recipe_engine": pa.array([r.meta.engine for r in site.recipes.values()], pa.string()),
        }
    )
    site.con.register("_recipe_engine", recipe_engine)
    try:
        grouped = site.con.execute(
            """SELECT coalesce(r.engine, e.recipe_engine) AS engine, r.engine_version, r.recipe,
                      count(*), min(r.date), max(r.date)
               FROM rows r JOIN _recipe_engine e USING (recipe)
               GROUP BY ALL ORDER BY ALL"""
        ).fetchall()
    finally:
        site.con.unregister("_recipe_engine")
    for name, version, recipe_slug, count, first, last in grouped:
        engine(name).version(version).stats.add(count, recipe_slug, first, last)
    # One page per engine whatever its capitalisation; it is named as most recipes spell it.
    spellings: dict[str, Counter[str]] = defaultdict(Counter)
    for recipe in site.recipes.values():
        spellings[engine_slug(recipe.meta.engine)][recipe.meta.engine] += 1
    for slug, entry in out.items():
        if spellings[slug]:
            entry.name = min(spellings[slug].items(), key=lambda kv: (-kv[1], kv[0]))[0]
    return dict(sorted(out.items()))


@dataclass
class HardwareEntry:
    id: str
    name: str
    description: str
    recipes: list[Recipe] = field(default_factory=list)
    nodes: list[tuple[str, Any, RowStats]] = field(default_factory=list)
    """(node id, Node, rows measured on it)."""

    @property
    def row_count(self) -> int:
        return sum(stats.rows for _, _, stats in self.nodes)


def hardware_entries(site: Site, hardware: str | None = None) -> dict[str, HardwareEntry]:
    """Every hardware id used by data/hardware.yaml, a recipe or a node, with its recipes and nodes;
    with ``hardware``, that one alone, from the rows measured on its nodes only."""
    ids = hardware_ids(site) if hardware is None else [hardware]
    out = {
        hw: HardwareEntry(
            hw, site.hardware_name(hw), site.hardware[hw].description if hw in site.hardware else ""
        )
        for hw in ids
    }
    for slug in sorted(site.recipes):
        recipe = site.recipes[slug]
        if recipe.meta.hardware in out:
            out[recipe.meta.hardware].recipes.append(recipe)
    rows = site.rows if hardware is None else site.measured_on(hardware).rows
    grouped = rows.group_by(["node", "recipe"]).aggregate(
        [([], "count_all"), ("date", "min"), ("date", "max")]
    )
    per_node: dict[str, RowStats] = defaultdict(RowStats)
    for node, recipe, count, first, last in zip(
        *(grouped.column(c).to_pylist() for c in ("node", "recipe", "count_all", "date_min", "date_max")),
        strict=True,
    ):
        per_node[node].add(count, recipe, first, last)
    for node_id in sorted(site.nodes):
        node = site.nodes[node_id]
        if node.hardware in out:
            out[node.hardware].nodes.append((node_id, node, per_node[node_id]))
    return out


@dataclass(frozen=True)
class ModelEntry:
    model: str
    recipes: list[Recipe]
    comparison: str | None
    """Slug of the comparison page (``/models/<slug>/``), for models with more than one recipe."""


def model_entries(site: Site) -> list[ModelEntry]:
    by_model: dict[str, list[Recipe]] = defaultdict(list)
    for slug in sorted(site.recipes):
        by_model[site.recipes[slug].meta.model].append(site.recipes[slug])
    pages = comparison_slugs(site)
    return [ModelEntry(model, recipes, pages.get(model)) for model, recipes in sorted(by_model.items())]


def render_hardware_index(ctx: RenderContext, entries: dict[str, HardwareEntry]) -> bytes:
    return ctx.page("hardware_index.html", "hardware/index.html", entries=list(entries.values()))


def render_hardware(ctx: RenderContext, entry: HardwareEntry) -> bytes:
    cards = Cards(ctx.site, ctx.recon, ctx.rows, ctx.node_hw)
    return ctx.page(
        "hardware.html", f"hardware/{entry.id}/index.html", hw=entry, engine_slug=engine_slug, cards=cards
    )


def render_engines_index(ctx: RenderContext, all_engines: dict[str, Engine]) -> bytes:
    return ctx.page("engines.html", "engines/index.html", engines=list(all_engines.values()))


def render_engine(ctx: RenderContext, engine: Engine) -> bytes:
    return ctx.page(
        "engine.html",
        f"engines/{engine.slug}/index.html",
        engine=engine,
        recipes=ctx.site.recipes,
        hardware_name=ctx.site.hardware_name,
    )


def render_models_index(ctx: RenderContext) -> bytes:
    return ctx.page(
        "models_index.html",
        "models/index.html",
        models=model_entries(ctx.site),
        hardware_name=ctx.site.hardware_name,
    )


def hardware_ids(site: Site) -> list[str]:
    """The ids :func:`hardware_entries` lists, sorted, without its query."""
    return sorted(
        set(site.hardware)
        | {r.meta.hardware for r in site.recipes.values()}
        | {n.hardware for n in site.nodes.values()}
    )


def engine_slugs(site: Site) -> list[str]:
    """The slugs :func:`engines` lists, sorted: engines of recipes and of rows."""
    import pyarrow.compute as pc

    named = {r.meta.engine for r in site.recipes.values()}
    # Arrow, not SQL: a build that needs no query then never opens DuckDB (Site.con).
    named.update(pc.drop_null(pc.unique(site.rows.column("engine"))).to_pylist())
    return sorted({engine_slug(name) for name in named})


def index_page_jobs(ctx: RenderContext) -> list[PageJob]:
    """Index pages; the two queries behind them run once, when the first page needing them renders
    (a rebuild that renders none of them, as after a recipe's text changed, does not run them)."""
    hw = Once(lambda: hardware_entries(ctx.site))
    eng = Once(lambda: engines(ctx.site))
    jobs: list[PageJob] = [
        ("hardware/index.html", lambda: render_hardware_index(ctx, hw())),
        ("engines/index.html", lambda: render_engines_index(ctx, eng())),
        ("models/index.html", lambda: render_models_index(ctx)),
    ]

    def hardware_page(id_: str) -> bytes:
        # Its own entry: a page reads the rows of its hardware, not every row file.
        return render_hardware(ctx, hardware_entries(ctx.site, id_)[id_])

    def engine_page(slug: str) -> bytes:
        return render_engine(ctx, eng()[slug])

    jobs += [(f"hardware/{id_}/index.html", partial(hardware_page, id_)) for id_ in hardware_ids(ctx.site)]
    jobs += [(f"engines/{slug}/index.html", partial(engine_page, slug)) for slug in engine_slugs(ctx.site)]
    return jobs

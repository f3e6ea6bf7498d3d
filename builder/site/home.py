"""The home page and the recipe list, at any scale.

The home page leads with the chooser and what changed lately (the newest row files, the newest
open findings) and lists base models × hardware with their recipe counts, each linking to where the
recipe list shows that group; it never lists every recipe. The recipe list is cut into pages of
:data:`PER_PAGE` recipes: ``recipes/index.html``, then ``recipes/page/<n>/index.html``.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from builder.analysis.reconcile import Reconciliation
from builder.content.markdown import slugify
from builder.content.models import QUANTITIES, SETTING_KEYS
from builder.data.load import Recipe, Site
from builder.reads import Once, derived
from builder.site.figures import Setting as FigureSetting
from builder.site.figures import headline_shape
from builder.site.views import headline

PER_PAGE = 60
"""Recipes per page of the recipe list."""
RECENT_FILES = 6
"""Row files the home page names under "what changed lately"."""
RECENT_FINDINGS = 5
"""Open findings the home page names."""


def group_anchor(model: str, hardware: str) -> str:
    return f"g-{slugify(model)}--{slugify(hardware)}"


def list_page_path(number: int) -> str:
    """Output path of the recipe list's page ``number`` (1-based)."""
    return "recipes/index.html" if number == 1 else f"recipes/page/{number}/index.html"


def list_page_url(number: int) -> str:
    return list_page_path(number).removesuffix("index.html")


@dataclass
class ListPage:
    """One page of the recipe list: groups of (model, [(hardware, recipes)]), in list order."""

    number: int
    groups: list[tuple[str, list[tuple[str, list[Recipe]]]]] = field(default_factory=list)


def sorted_recipes(site: Site) -> list[Recipe]:
    """Every recipe by base model, hardware and slug: the recipe list's order."""
    return sorted(site.recipes.values(), key=lambda r: (r.meta.model, r.meta.hardware, r.slug))


def list_pages(site: Site) -> list[ListPage]:
    """The recipe list cut into pages; a group cut by a page break goes on on the next page."""
    recipes = sorted_recipes(site)
    pages: list[ListPage] = []
    for start in range(0, max(len(recipes), 1), PER_PAGE):
        page = ListPage(len(pages) + 1)
        for recipe in recipes[start : start + PER_PAGE]:
            model, hw = recipe.meta.model, recipe.meta.hardware
            if not page.groups or page.groups[-1][0] != model:
                page.groups.append((model, []))
            by_hw = page.groups[-1][1]
            if not by_hw or by_hw[-1][0] != hw:
                by_hw.append((hw, []))
            by_hw[-1][1].append(recipe)
        pages.append(page)
    return pages


def page_count(site: Site) -> int:
    return max(1, -(-len(site.recipes) // PER_PAGE))


@dataclass(frozen=True)
class ModelRow:
    """A base model on the home page: its recipes per hardware, each linking into the recipe list."""

    model: str
    comparison: str | None
    cells: list[tuple[int, str] | None]
    """Per hardware column: (recipes, URL of their group in the recipe list), or None."""
    total: int


def model_table(site: Site, comparisons: dict[str, str]) -> tuple[list[str], list[ModelRow]]:
    """(hardware ids with recipes, one row per base model)."""
    recipes = sorted_recipes(site)
    counts: dict[tuple[str, str], int] = defaultdict(int)
    where: dict[tuple[str, str], str] = {}
    for position, recipe in enumerate(recipes):
        key = (recipe.meta.model, recipe.meta.hardware)
        counts[key] += 1
        if key not in where:
            where[key] = f"{list_page_url(position // PER_PAGE + 1)}#{group_anchor(*key)}"
    hardware = sorted({hw for _, hw in counts})
    rows = []
    for model in sorted({m for m, _ in counts}):
        cells: list[tuple[int, str] | None] = [
            (counts[(model, hw)], where[(model, hw)]) if (model, hw) in counts else None for hw in hardware
        ]
        rows.append(ModelRow(model, comparisons.get(model), cells, sum(c[0] for c in cells if c)))
    return hardware, rows


@dataclass(frozen=True)
class RecentFile:
    """A row file among the newest: its rows' latest date, recipe, node and how many rows."""

    date: dt.date
    recipe: str
    node: str
    rows: int
    path: str


def recent_files(site: Site, limit: int = RECENT_FILES) -> list[RecentFile]:
    """The newest row files by their latest row date (then path), one entry per recipe in a file."""
    if not site.rows.num_rows:
        return []
    grouped = (
        site.rows.select(["file_id", "recipe", "node", "date"])
        .group_by(["file_id", "recipe"])
        .aggregate([("date", "max"), ("node", "min"), ("date", "count")])
    )
    entries = [
        RecentFile(date, recipe, node, count, site.row_files[file_id].source.rel)
        for file_id, recipe, date, node, count in zip(
            grouped.column("file_id").to_pylist(),
            grouped.column("recipe").to_pylist(),
            grouped.column("date_max").to_pylist(),
            grouped.column("node_min").to_pylist(),
            grouped.column("date_count").to_pylist(),
            strict=True,
        )
    ]
    entries.sort(key=lambda e: (-e.date.toordinal(), e.path, e.recipe))
    return entries[:limit]


def recent_open_findings(findings: list[Any], limit: int = RECENT_FINDINGS) -> list[Any]:
    """The newest open findings (by the latest date of their runs, then id)."""
    opened = [f for f in findings if f.is_open]
    return sorted(opened, key=lambda f: (-f.date.toordinal(), f.id))[:limit]


@dataclass(frozen=True)
class Card:
    """What a recipe card on a list shows besides its front matter: the headline figure (the first
    of the recipe page's, with its key) and the open findings, and whether that figure is contested."""

    slug: str
    label: str = ""
    unit: str = ""
    value: float | None = None
    key: str = ""
    """:func:`~builder.site.figures.figure_key` of the figure (``data-figure``)."""
    setting: str = ""
    open_findings: int = 0
    contested: bool = False
    """An open finding at the figure's setting and metric, or the recipe's single-stream claim
    disagrees with another recipe's about the same checkpoint (as the chooser marks it)."""


class Cards:
    """:class:`Card` of each recipe, worked out on first use (a list page shows a few dozen).

    A card and the disputed claims of a base model are derived values (:func:`builder.reads.derived`:
    ``card:<slug>``, ``disputes:<model>``): a page that shows a card reads the card, not the rows it
    was worked out from. :meth:`makers` gives the engine the same values by name."""

    def __init__(
        self,
        site: Site,
        recon: Reconciliation,
        rows: Mapping[str, list[dict[str, Any]]],
        node_hw: Mapping[str, str],
    ) -> None:
        self._site, self._recon, self._rows, self._node_hw = site, recon, rows, node_hw
        # Once, not the values: every card that asks reads what the first one's asking read.
        self._cards: dict[str, Once[Card | None]] = {}
        self._disputed: dict[str, Once[dict[str, FigureSetting]]] = {}

    def makers(self) -> dict[str, Callable[[str], Any]]:
        """Each derived value's maker by kind, from its argument."""
        return {"card": self._card, "disputes": self._disputes_of}

    def _disputes_of(self, model: str) -> dict[str, FigureSetting]:
        from builder.site.comparisons import disputes_of  # only when a value is made (not an edit)

        return disputes_of(self._site, self._rows, self._recon, model)

    def _disputes(self, model: str) -> dict[str, FigureSetting]:
        found = self._disputed.get(model)
        if found is None:
            from builder.site.comparisons import model_disputes  # only when a list page renders

            found = self._disputed[model] = Once(
                lambda: model_disputes(self._site, self._rows, self._recon, model)
            )
        return found()

    def __call__(self, slug: str) -> Card:
        found = self._cards.get(slug)
        if found is None:
            found = self._cards[slug] = Once(lambda: derived(f"card:{slug}", lambda: self._card(slug)))
        card = found()
        if card is None:
            raise KeyError(slug)
        return card

    def _card(self, slug: str) -> Card | None:
        recipe = self._site.recipes.get(slug)
        if recipe is None:  # asked by name for a recipe gone since (see makers)
            return None
        findings = [f for f in self._recon.findings_for(slug) if f.is_open]
        head = headline(recipe, self._rows.get(slug, []), self._recon, self._node_hw)
        if head is None or not head.cells or head.where is None:
            return Card(slug, open_findings=len(findings))
        cell, where = head.cells[0], head.where
        at = tuple(getattr(where, k) for k in SETTING_KEYS)
        contested = any(
            f.metric == cell.metric and tuple(f.setting.get(k) for k in SETTING_KEYS) == at for f in findings
        )
        claim = self._disputes(recipe.meta.model).get(slug)
        if claim is not None and cell.metric == "decode_tok_s":
            # A claim is a headline's: its hardware and the shape a headline names.
            contested |= (claim.hardware, *headline_shape(claim)) == (where.hardware, *headline_shape(where))
        label, unit = QUANTITIES[cell.metric].label, QUANTITIES[cell.metric].unit
        return Card(slug, label, unit, cell.value, head.keys[0], where.label(), len(findings), contested)

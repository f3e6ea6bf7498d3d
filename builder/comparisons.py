"""Comparisons: the builds of one base model side by side, with ratios computed from rows.

Every base model (``meta.model``) with more than one recipe gets a comparison page. Figures are put
side by side only at the same setting (hardware, prompt length, context, concurrency); a figure
whose prompt length the source does not give is listed on its own, never lined up with another.
Each figure comes from :func:`builder.figures.pick_cell`: matching rows first, and the page says
when a figure comes from an off-recipe row.

Recipes that serve the same checkpoint are claims about the same weights. When their single-stream
figures differ, the page shows both claims with their sources, the serve flags that differ and the
findings of each recipe.
"""

from __future__ import annotations

import functools
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from builder.figures import (
    QUANTITY_LABELS,
    SERVE_PROPERTIES,
    SMALLER_IS_BETTER,
    Cell,
    Row,
    Setting,
    pick_cell,
    setting_of,
)
from builder.flags import format_value
from builder.load import Recipe, Site
from builder.models import METRICS
from builder.reconcile import DIFFERS, MATCHES, NOT_RECORDED, Reconciliation

DISAGREE_AT = 1.10
"""Two claims about one checkpoint disagree when one figure is this many times the other, or more."""

_RANK = {MATCHES: 0, NOT_RECORDED: 1, DIFFERS: 2}


def model_slug(model: str) -> str:
    """``Qwen/Qwen3.6-35B-A3B`` → ``qwen-qwen3.6-35b-a3b``."""
    return re.sub(r"[^a-z0-9.]+", "-", model.lower()).strip("-.") or "model"


def comparison_slugs(site: Site) -> dict[str, str]:
    """Base model → page slug, for every model with more than one recipe (collisions numbered)."""
    counts: dict[str, int] = defaultdict(int)
    for recipe in site.recipes.values():
        counts[recipe.meta.model] += 1
    return model_slugs(m for m, n in counts.items() if n > 1)


def model_slugs(models: Iterable[str]) -> dict[str, str]:
    """Base model → ``model_slug``, numbered in sorted order where two models share a slug."""
    out: dict[str, str] = {}
    taken: set[str] = set()
    for model in sorted(models):
        slug = base = model_slug(model)
        n = 1
        while slug in taken:
            n += 1
            slug = f"{base}-{n}"
        taken.add(slug)
        out[model] = slug
    return out


@dataclass(frozen=True)
class Build:
    """One recipe of the model, as a column of the comparison."""

    slug: str
    title: str
    label: str
    """The title without the part every build shares (``NVIDIA NVFP4``)."""
    checkpoint: str
    hardware: str
    engine: str
    engine_version: str


@dataclass(frozen=True)
class Ratio:
    """Best figure over worst (or worst over best when smaller is better): always >= 1."""

    better: str
    worse: str
    value: float
    context: str
    """What the two runs share (same node, same day, same engine version), or that they do not."""


@dataclass(frozen=True)
class Line:
    """One quantity at one setting across builds."""

    quantity: str
    setting: Setting | None
    """``None`` for serve properties (weights, KV pool), which belong to a run rather than a setting."""
    cells: dict[str, Cell]
    """Recipe slug → figure, in build order."""
    ratio: Ratio | None = None

    @property
    def label(self) -> str:
        return QUANTITY_LABELS[self.quantity][0]

    @property
    def unit(self) -> str:
        return QUANTITY_LABELS[self.quantity][1]

    @property
    def smaller_is_better(self) -> bool:
        return self.quantity in SMALLER_IS_BETTER

    def setting_label(self, hardware_name: Any = None) -> str:
        if self.setting is None:
            return "latest run with the figure"
        name = hardware_name(self.setting.hardware) if hardware_name else None
        return self.setting.label(hardware_name=name)


def short_labels(titles: list[str]) -> list[str]:
    """Drop the ``Model — `` part every title shares, so columns read ``NVIDIA NVFP4``."""
    heads = {t.partition(" — ")[0] for t in titles}
    if len(titles) > 1 and len(heads) == 1 and all(" — " in t for t in titles):
        return [t.partition(" — ")[2] for t in titles]
    return list(titles)


def make_builds(recipes: list[Recipe], labels: list[str] | None = None) -> list[Build]:
    labels = labels or short_labels([r.meta.title for r in recipes])
    return [
        Build(
            r.slug,
            r.meta.title,
            label,
            r.meta.checkpoint,
            r.meta.hardware,
            r.meta.engine,
            r.meta.engine_version,
        )
        for r, label in zip(recipes, labels, strict=True)
    ]


def _ratio(line_cells: dict[str, Cell], quantity: str) -> Ratio | None:
    if len(line_cells) < 2:
        return None
    cells = sorted(line_cells.values(), key=lambda c: (c.value, c.recipe))
    low, high = cells[0], cells[-1]
    if quantity in SMALLER_IS_BETTER:
        better, worse = low, high
        value = high.value / low.value if low.value > 0 else None
    else:
        better, worse = high, low
        value = high.value / low.value if low.value > 0 else None
    if value is None:
        return None
    return Ratio(better.recipe, worse.recipe, value, run_context(better, worse))


def run_context(a: Cell, b: Cell) -> str:
    same = []
    if a.node == b.node:
        same.append(f"node ({a.node})")
    if a.date == b.date:
        same.append(f"day ({a.date.isoformat()})")
    if a.engine_version == b.engine_version and a.engine_version != "unknown":
        same.append(f"engine version ({a.engine_version})")
    if not same:
        return "different nodes and days"
    return "same " + ", same ".join(same)


def _by_setting(rows: Iterable[Row], node_hw: dict[str, str]) -> dict[Setting, list[Row]]:
    out: dict[Setting, list[Row]] = defaultdict(list)
    for row in rows:
        out[setting_of(row, node_hw)].append(row)
    return out


def side_by_side(
    builds: list[Build], rows: Mapping[str, list[Row]], recon: Reconciliation, node_hw: dict[str, str]
) -> tuple[list[Line], list[Line]]:
    """(lines shared by two builds or more, figures of one build only), each in a stable order."""
    grouped = {b.slug: _by_setting(rows.get(b.slug, []), node_hw) for b in builds}
    settings = sorted({s for g in grouped.values() for s in g}, key=Setting.sort_key)
    shared: list[Line] = []
    alone: list[Line] = []
    for quantity in METRICS:
        for setting in settings:
            cells = {}
            for build in builds:
                at = grouped[build.slug].get(setting)
                cell = pick_cell(at, quantity, recon, allow_differs=True) if at else None
                if cell is not None:
                    cells[build.slug] = cell
            if not cells:
                continue
            if setting.comparable and len(cells) > 1:
                shared.append(Line(quantity, setting, cells, _ratio(cells, quantity)))
            else:
                alone.extend(Line(quantity, setting, {slug: cell}) for slug, cell in cells.items())
    for quantity in SERVE_PROPERTIES:
        cells = {}
        for build in builds:
            cell = pick_cell(rows.get(build.slug, []), quantity, recon, allow_differs=True)
            if cell is not None:
                cells[build.slug] = cell
        if len(cells) > 1:
            shared.append(Line(quantity, None, cells, _ratio(cells, quantity)))
        else:
            alone.extend(Line(quantity, None, {slug: cell}) for slug, cell in cells.items())
    return shared, alone


@dataclass(frozen=True)
class FlagDifference:
    """A serve flag two recipes of one checkpoint set differently (``None`` = not set)."""

    name: str
    values: dict[str, str | None]


@dataclass(frozen=True)
class Claim:
    """What one recipe (one source) says about a checkpoint."""

    build: Build
    figure: Cell | None
    """Its single-stream decode figure, when it has one."""
    setting: Setting | None
    summary: str
    sources: list[str]
    findings: list[dict[str, Any]]
    """``as_json()`` of each finding of the recipe."""


@dataclass(frozen=True)
class SameCheckpoint:
    """Recipes that serve the same checkpoint, and whether their figures agree."""

    checkpoint: str
    claims: list[Claim]
    flag_differences: list[FlagDifference]
    ratio: Ratio | None
    """Highest single-stream decode figure over the lowest."""

    @property
    def disagree(self) -> bool:
        return self.ratio is not None and self.ratio.value >= DISAGREE_AT


def single_stream_figure(
    recipe: Recipe, rows: list[Row], recon: Reconciliation, node_hw: dict[str, str]
) -> tuple[Setting, Cell] | None:
    """The recipe's decode figure at concurrency 1: its headline setting if measured, else its best."""
    candidates = []
    for setting, at in _by_setting((r for r in rows if r["concurrency"] == 1), node_hw).items():
        cell = pick_cell(at, "decode_tok_s", recon, allow_differs=False)
        if cell is None:
            cell = pick_cell(at, "decode_tok_s", recon, allow_differs=True)
        if cell is not None:
            candidates.append((setting, cell))
    if not candidates:
        return None
    wanted = recipe.meta.headline
    for setting, cell in candidates:
        if wanted and (setting.prompt_tokens, setting.context_tokens, setting.concurrency) == (
            wanted.prompt_tokens,
            wanted.context_tokens,
            wanted.concurrency,
        ):
            return setting, cell
    return min(
        candidates,
        key=lambda sc: (_RANK[sc[1].status], -sc[1].date.toordinal(), -sc[1].trials, sc[0].sort_key()),
    )


def _flag_differences(recipes: list[Recipe]) -> list[FlagDifference]:
    names = sorted({name for r in recipes for name in r.flags})
    out = []
    for name in names:
        values = {r.slug: (format_value(r.flags[name]) if name in r.flags else None) for r in recipes}
        if len(set(values.values())) > 1:
            out.append(FlagDifference(name, values))
    return out


def same_checkpoint(
    site: Site,
    builds: list[Build],
    rows: Mapping[str, list[Row]],
    recon: Reconciliation,
    node_hw: dict[str, str],
) -> list[SameCheckpoint]:
    by_checkpoint: dict[str, list[Build]] = defaultdict(list)
    for build in builds:
        by_checkpoint[build.checkpoint].append(build)
    out = []
    for checkpoint in sorted(by_checkpoint):
        group = by_checkpoint[checkpoint]
        if len(group) < 2:
            continue
        claims = []
        for build in group:
            recipe = site.recipes[build.slug]
            picked = single_stream_figure(recipe, rows.get(build.slug, []), recon, node_hw)
            claims.append(
                Claim(
                    build,
                    picked[1] if picked else None,
                    picked[0] if picked else None,
                    recipe.meta.summary,
                    list(recipe.meta.sources),
                    [f.as_json() for f in recon.findings_for(build.slug)],
                )
            )
        figures = {c.build.slug: c.figure for c in claims if c.figure is not None}
        out.append(
            SameCheckpoint(
                checkpoint,
                claims,
                _flag_differences([site.recipes[b.slug] for b in group]),
                _ratio(figures, "decode_tok_s"),
            )
        )
    return out


@dataclass(frozen=True)
class Comparison:
    """Everything the comparison page of one base model shows."""

    model: str
    slug: str
    builds: list[Build]
    shared: list[Line]
    alone: list[Line]
    same_checkpoint: list[SameCheckpoint] = field(default_factory=list)

    def build(self, slug: str) -> Build:
        return next(b for b in self.builds if b.slug == slug)

    @functools.cached_property  # read once per row of the page's tables
    def shared_builds(self) -> list[Build]:
        """Builds with a figure in a shared line: the columns of the side-by-side table."""
        used = {slug for line in self.shared for slug in line.cells}
        return [b for b in self.builds if b.slug in used]

    @property
    def multi_hardware(self) -> bool:
        """Settings name their hardware only when the builds run on more than one."""
        return len({b.hardware for b in self.builds}) > 1


def node_hardware(site: Site) -> dict[str, str]:
    return {name: node.hardware for name, node in site.nodes.items()}


def comparison(
    site: Site, model: str, slug: str, rows: Mapping[str, list[Row]], recon: Reconciliation
) -> Comparison:
    """The comparison of every recipe of ``model``, builds ordered by slug."""
    recipes = [site.recipes[s] for s in sorted(site.recipes) if site.recipes[s].meta.model == model]
    builds = make_builds(recipes)
    node_hw = node_hardware(site)
    shared, alone = side_by_side(builds, rows, recon, node_hw)
    return Comparison(model, slug, builds, shared, alone, same_checkpoint(site, builds, rows, recon, node_hw))

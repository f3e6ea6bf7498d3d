"""Comparisons: the builds of one base model side by side, with ratios computed from rows.

Every base model (``meta.model``) with more than one recipe gets a comparison page. Figures are put
side by side only at the same setting (hardware, prompt length, context, concurrency); a figure
whose prompt length the source does not give is listed on its own, never lined up with another.
Each figure comes from :func:`builder.site.figures.pick_cell`: matching rows first, and the page says
when a figure comes from an off-recipe row.

Recipes that serve the same checkpoint are claims about the same weights. When their single-stream
figures differ, the page shows both claims with their sources, the serve flags that differ and the
findings of each recipe.
"""

from __future__ import annotations

import functools
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from builder.analysis.findings import Finding
from builder.analysis.reconcile import DIFFERS, MATCHES, NOT_RECORDED, Reconciliation
from builder.content.flags import format_value
from builder.content.markdown import numbered_apart, slugify
from builder.data.load import Recipe, Site
from builder.reads import derived
from builder.site.figure_grid import QUANTITIES, FigureGrid, rows_table
from builder.site.figures import (
    QUANTITY_LABELS,
    SMALLER_IS_BETTER,
    Cell,
    Row,
    Setting,
    headline_shape,
)

DISAGREE_AT = 1.10
"""Two claims about one checkpoint disagree when one figure is this many times the other, or more."""

SHARED_SHOWN = 12
"""Settings per quantity a comparison page lines up (more only to keep every build in view).

At scale a model's builds share hundreds of settings; a table of all of them is more than a reader
choosing a build reads (and than the page budget holds). Every row of a build stays on its recipe's
page and in the data downloads."""
ALONE_SHOWN = 6
"""Figures per quantity without a match that a comparison page lists (the same rule)."""
AT_LOAD: frozenset[str] = frozenset({"aggregate_tok_s"})
"""Quantities that say most at the highest concurrency (all streams together): a page shows their
settings from the highest concurrency down, the others' from a single stream up."""

_RANK = {MATCHES: 0, NOT_RECORDED: 1, DIFFERS: 2}


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


class Slot(NamedTuple):  # a tuple: a page makes hundreds
    """Where a quantity was measured and by which builds, before any figure is picked."""

    quantity: str
    setting: Setting | None
    """``None`` for serve properties."""
    recipes: tuple[str, ...]
    """Slugs, in build order."""


def figure_grid(
    builds: list[Build], rows: Mapping[str, list[Row]], recon: Reconciliation, node_hw: Mapping[str, str]
) -> FigureGrid:
    """The picks of every build at every setting, recipes in build order."""
    return FigureGrid(rows_table(rows, [b.slug for b in builds]), recon, node_hw)


def slots(grid: FigureGrid) -> tuple[list[Slot], list[Slot]]:
    """(slots of two builds or more at a comparable setting, a slot per figure of one build alone),
    each by quantity, then setting."""
    shared: list[Slot] = []
    alone: list[Slot] = []
    for quantity in QUANTITIES:
        for setting, recipes in grid.measured(quantity):  # in setting order
            if len(recipes) > 1 and (setting is None or setting.comparable):
                shared.append(Slot(quantity, setting, tuple(recipes)))
            else:
                alone.extend(Slot(quantity, setting, (r,)) for r in recipes)
    return shared, alone


def line(grid: FigureGrid, slot: Slot) -> Line:
    """The slot's figures (and their ratio, when there are two or more)."""
    cells = {}
    for recipe in slot.recipes:
        cell = grid.cell(slot.quantity, slot.setting, recipe)
        if cell is not None:
            cells[recipe] = cell
    return Line(slot.quantity, slot.setting, cells, _ratio(cells, slot.quantity) if len(cells) > 1 else None)


def side_by_side(
    builds: list[Build], rows: Mapping[str, list[Row]], recon: Reconciliation, node_hw: Mapping[str, str]
) -> tuple[list[Line], list[Line]]:
    """Every figure: (lines shared by two builds or more, figures of one build only), in a stable order."""
    grid = figure_grid(builds, rows, recon, node_hw)
    shared, alone = slots(grid)
    return [line(grid, s) for s in shared], [line(grid, s) for s in alone]


HeadlineKeys = Mapping[str, tuple[Any, ...]]
"""Recipe slug → its headline setting's :func:`~builder.site.figures.headline_shape`."""


def headline_keys(recipes: Iterable[Recipe]) -> dict[str, tuple[Any, ...]]:
    out = {}
    for recipe in recipes:
        wanted = recipe.meta.headline
        if wanted is not None:
            out[recipe.slug] = headline_shape(wanted)
    return out


def _slot_rank(
    slot: Slot,
    headlines: HeadlineKeys,
    shapes: set[tuple[Any, ...]],
    settings: dict[int, tuple[Any, ...]],
) -> tuple[Any, ...]:
    """Which slots a page shows first: a build's headline setting, then settings more builds share,
    then by concurrency (from a single stream up; :data:`AT_LOAD` quantities from the highest down),
    then the setting order."""
    setting = slot.setting
    if setting is None:
        return (0,)
    known = settings.get(id(setting))  # settings are shared objects: their keys are worked out once
    if known is None:
        # An open-loop setting is never a headline's (their shape has no rate): ``None`` matches none.
        shape = None if setting.open_loop else headline_shape(setting)
        level = setting.concurrency or 0
        load = (setting.open_loop, -level if slot.quantity in AT_LOAD else level)
        known = settings[id(setting)] = (shape, load, setting.sort_key())
    shape, load, order = known
    at_headline = shape in shapes and any(headlines.get(r) == shape for r in slot.recipes)
    return (not at_headline, -len(slot.recipes), load, order)


def shown(
    slots_of_quantity: list[Slot], limit: int, group: Callable[[Slot], str], headlines: HeadlineKeys
) -> list[Slot]:
    """The slots of one quantity a page shows: at most ``limit``, in their given order.

    First, for each build, the best-ranked slot it is in (so no build drops out of view, even past
    the limit); then the rest by rank, taking turns between groups (hardware, or builds) so one group
    with many settings does not crowd the others out.
    """
    if len(slots_of_quantity) <= limit:
        return slots_of_quantity
    keys: dict[int, tuple[Any, ...]] = {}
    shapes = set(headlines.values())
    ranks = [_slot_rank(slot, headlines, shapes, keys) for slot in slots_of_quantity]
    ranked = sorted(range(len(slots_of_quantity)), key=ranks.__getitem__)
    chosen: set[int] = set()
    covered: set[str] = set()
    for i in ranked:
        if not covered.issuperset(slots_of_quantity[i].recipes):
            chosen.add(i)
            covered.update(slots_of_quantity[i].recipes)
    queues: dict[str, list[int]] = {}
    for i in ranked:
        if i not in chosen:
            queues.setdefault(group(slots_of_quantity[i]), []).append(i)
    turns = [q[::-1] for q in queues.values()]  # popped from the end: best first
    while len(chosen) < limit and turns:
        for queue in turns:
            if len(chosen) < limit and queue:
                chosen.add(queue.pop())
        turns = [q for q in turns if q]
    return [slots_of_quantity[i] for i in sorted(chosen)]


def _shown_by_quantity(
    all_slots: list[Slot], limit: int, group: Callable[[Slot], str], headlines: HeadlineKeys
) -> list[Slot]:
    by_quantity: dict[str, list[Slot]] = defaultdict(list)
    for slot in all_slots:
        by_quantity[slot.quantity].append(slot)
    return [s for q in QUANTITIES for s in shown(by_quantity.get(q, []), limit, group, headlines)]


@dataclass(frozen=True)
class FlagDifference:
    """A serve flag two recipes of one checkpoint set differently (``None`` = not set)."""

    name: str
    values: dict[str, str | None]


@dataclass(frozen=True)
class FindingNote:
    """A finding of non-reproduction on a recipe, as a claim lists it."""

    summary: str
    explanation: str
    annotation: str
    """The curator's reason (``data/annotations.yaml``), empty while the finding is open."""


def finding_note(finding: Finding) -> FindingNote:
    return FindingNote(
        finding.summary(), finding.explanation_text(), str((finding.annotation or {}).get("reason") or "")
    )


@dataclass(frozen=True)
class Claim:
    """What one recipe (one source) says about a checkpoint."""

    build: Build
    figure: Cell | None
    """Its single-stream decode figure, when it has one."""
    setting: Setting | None
    summary: str
    sources: list[str]
    findings: list[FindingNote]
    """The findings on the recipe."""


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


def single_stream_figure(recipe: Recipe, grid: FigureGrid) -> tuple[Setting, Cell] | None:
    """The recipe's decode figure at concurrency 1: at its headline setting if measured there, else
    its best (matching rows first, then the latest, then the most trials)."""
    candidates = []
    for setting in grid.settings_of("decode_tok_s", recipe.slug):
        if setting is not None and setting.concurrency == 1 and not setting.open_loop:
            cell = grid.cell("decode_tok_s", setting, recipe.slug)
            if cell is not None:
                candidates.append((setting, cell))
    if not candidates:
        return None
    wanted = recipe.meta.headline
    if wanted:
        key = headline_shape(wanted)
        at_headline = [(s, c) for s, c in candidates if headline_shape(s) == key]
        candidates = at_headline or candidates
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
    site: Site, builds: list[Build], grid: FigureGrid, recon: Reconciliation
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
            picked = single_stream_figure(recipe, grid)
            claims.append(
                Claim(
                    build,
                    picked[1] if picked else None,
                    picked[0] if picked else None,
                    recipe.meta.summary,
                    list(recipe.meta.sources),
                    [finding_note(f) for f in recon.findings_for(build.slug)],
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


def disputed_claims(
    site: Site, rows: Mapping[str, list[Row]], recon: Reconciliation, recipes: Iterable[str]
) -> dict[str, Setting]:
    """Recipe → the setting of its single-stream decode claim, for those of ``recipes`` whose claim
    disagrees with another's about the same checkpoint (the comparison page's "Sources disagree").
    Only ``recipes`` are compared with each other."""
    by_model: dict[str, list[Recipe]] = defaultdict(list)
    for slug in sorted(recipes):
        if slug in site.recipes:
            by_model[site.recipes[slug].meta.model].append(site.recipes[slug])
    out: dict[str, Setting] = {}
    for group in by_model.values():
        checkpoints = Counter(r.meta.checkpoint for r in group)
        shared = [r for r in group if checkpoints[r.meta.checkpoint] > 1]
        if not shared:
            continue
        builds = make_builds(shared)
        grid = figure_grid(builds, rows, recon, site.node_hardware())
        for same in same_checkpoint(site, builds, grid, recon):
            if same.disagree:
                out.update((c.build.slug, c.setting) for c in same.claims if c.setting is not None)
    return out


def model_disputes(
    site: Site, rows: Mapping[str, list[Row]], recon: Reconciliation, model: str
) -> dict[str, Setting]:
    """:func:`disputed_claims` among every recipe of base model ``model``: the claims its comparison
    page says "Sources disagree" about. A derived value (``disputes:<model>``,
    :func:`builder.reads.derived`): the cards and the chooser read it by name."""
    return derived(f"disputes:{model}", lambda: disputes_of(site, rows, recon, model))


def disputes_of(
    site: Site, rows: Mapping[str, list[Row]], recon: Reconciliation, model: str
) -> dict[str, Setting]:
    """What :func:`model_disputes` names, worked out."""
    slugs = [slug for slug, recipe in site.recipes.items() if recipe.meta.model == model]
    return disputed_claims(site, rows, recon, slugs)


@dataclass(frozen=True)
class SharedTable:
    """One table of figures lined up: its builds are its columns, its lines its rows."""

    hardware: str | None
    """The hardware every setting of the table is on, when the page has a table per hardware."""
    serve: bool
    """The serve properties' table, on a page with a table per hardware."""
    builds: list[Build]
    lines: list[Line]
    key: str = ""
    """Tells the page's tables (and their charts) apart in ids: empty for a page with one table."""

    @property
    def id(self) -> str:
        return f"compare-{self.key}" if self.key else "compare"


@dataclass(frozen=True)
class Comparison:
    """Everything the comparison page of one base model shows."""

    model: str
    slug: str
    builds: list[Build]
    shared: list[Line]
    """The lines the page shows (see :data:`SHARED_SHOWN`), by quantity, then setting."""
    alone: list[Line]
    """The figures without a match the page shows (see :data:`ALONE_SHOWN`)."""
    same_checkpoint: list[SameCheckpoint] = field(default_factory=list)
    shared_total: int = 0
    """Lines shared by two builds or more, shown or not."""
    alone_total: int = 0
    """Figures without a match, shown or not."""

    def build(self, slug: str) -> Build:
        return next(b for b in self.builds if b.slug == slug)

    @functools.cached_property
    def shared_tables(self) -> list[SharedTable]:
        """The shown shared lines as the page's tables: one per hardware where settings span more
        than one (builds on different hardware never share a setting), serve properties last."""
        hardware = sorted({line.setting.hardware for line in self.shared if line.setting is not None})
        split = len(hardware) > 1
        groups: dict[str, list[Line]] = {}
        for line in self.shared:
            key = line.setting.hardware if split and line.setting is not None else ""
            groups.setdefault(key, []).append(line)
        order = [*(hardware if split else ()), ""]
        tables = []
        taken: set[str] = set()
        for key in order:
            lines = groups.get(key)
            if lines:
                used = {slug for line in lines for slug in line.cells}
                builds = [b for b in self.builds if b.slug in used]
                # Two hardware ids can make one slug: numbered apart.
                anchor = numbered_apart((slugify(key) if key else "serve") if split else "", taken)
                tables.append(SharedTable(key or None, split and not key, builds, lines, anchor))
        return tables

    @property
    def multi_hardware(self) -> bool:
        """Settings name their hardware only when the builds run on more than one."""
        return len({b.hardware for b in self.builds}) > 1


def model_recipes(site: Site, model: str) -> list[Recipe]:
    """The recipes of ``model``, by slug: the builds of its comparison, in order."""
    return sorted((r for r in site.recipes.values() if r.meta.model == model), key=lambda r: r.slug)


def comparison(
    site: Site, model: str, slug: str, rows: Mapping[str, list[Row]], recon: Reconciliation
) -> Comparison:
    """The comparison page of every recipe of ``model``: a bounded set of its figures (every figure
    of it is in :func:`side_by_side`)."""
    recipes = model_recipes(site, model)
    builds = make_builds(recipes)
    grid = figure_grid(builds, rows, recon, site.node_hardware())
    shared, alone = slots(grid)
    headlines = headline_keys(recipes)
    shown_shared = _shown_by_quantity(shared, SHARED_SHOWN, _hardware_of, headlines)
    shown_alone = _shown_by_quantity(alone, ALONE_SHOWN, _build_of, headlines)
    return Comparison(
        model,
        slug,
        builds,
        [line(grid, s) for s in shown_shared],
        [line(grid, s) for s in shown_alone],
        same_checkpoint(site, builds, grid, recon),
        shared_total=len(shared),
        alone_total=len(alone),
    )


def _hardware_of(slot: Slot) -> str:
    return slot.setting.hardware if slot.setting is not None else ""


def _build_of(slot: Slot) -> str:
    return slot.recipes[0]

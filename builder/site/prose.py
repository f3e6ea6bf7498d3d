"""Figures in prose and the rows behind them.

``{{ ... }}`` figures (:mod:`builder.content.figures`) are resolved here, against the rows, before
any body renders (:func:`bind_figures`): each shows its row's value with its unit and links to the
row on its recipe page; a figure no row supports, or that several disagreeing rows support, fails
the build and ``check`` with its ``path:line``.

Which figure: the rows of its recipe (``recipe=``, else the page's own: a recipe page's recipe, a
case study's one arm recipe) that record the metric and agree with every selector give, at each
setting, that setting's figure (:func:`builder.site.figures.pick_cell`, as every page shows it); of
those, the figures from rows that match their recipe if any, else from rows that leave something
unrecorded, else from rows that differ (history is quoted by naming its date); of those, the newest.
Those must agree on the value; when they do not, the figure is ambiguous and the message names the
selectors that tell them apart. The figure links to its run's row nearest the value.

:func:`prose_figure_warnings` is ``check``'s side: numbers written with a unit in recipe and case
study bodies that no row of the page's recipes supports within the number's printed precision.
"""

from __future__ import annotations

import bisect
import datetime as dt
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from builder.analysis.reconcile import DIFFERS, MATCHES, RowStatus, status_for
from builder.content.figures import RATIO, SELECTORS, UNBOUND, Binding, BoundFigure, Side, plain_figures
from builder.content.markdown import Document, Markdown
from builder.content.models import QUANTITIES, WORKLOAD
from builder.data.load import Site
from builder.errors import Problem
from builder.site.figures import median_row, pick_cell, setting_of
from builder.site.formats import fmt_number
from builder.site.views import row_anchors

PROSE_FIGURE = "prose_figure"
"""The ``kind`` of ``check``'s warning about a plain figure no row supports."""

_SELECTOR_OF = {field: key for key, field in SELECTORS.items()}
_SETTING_KEYS = (*(_SELECTOR_OF[field] for field in WORKLOAD), "node", "version")
"""Selectors that tell apart rows of one date: the setting's (the node for its hardware) and the run's."""
_RUN_KEYS = frozenset({"date", "node", "version"})
"""Selectors that pick out runs within a setting."""

DocKey = tuple[str, str]


def unit_of(metric: str) -> str:
    """The unit a figure of ``metric`` is written with (``tok/s``, not "tok/s per stream")."""
    return QUANTITIES[metric].unit.split(" ")[0]


def fmt_ratio_prose(value: float) -> str:
    """A ratio in prose: one decimal and a multiplication sign, ``2.5×``."""
    return f"{value:.1f}×"


@dataclass(frozen=True)
class _Found:
    row: dict[str, Any]
    value: float
    key: str = ""


class _Resolver:
    def __init__(self, site: Site, rows: Mapping[str, list[dict[str, Any]]]) -> None:
        self.site = site
        self.rows = rows
        self._anchors: dict[str, dict[int, str]] = {}
        self._status: dict[int, RowStatus] = {}
        self._node_hw = site.node_hardware()

    def anchor(self, recipe: str, row: dict[str, Any]) -> str:
        anchors = self._anchors.get(recipe)
        if anchors is None:
            anchors = self._anchors[recipe] = row_anchors(self.site, self.rows.get(recipe, []))
        return anchors[row["row_id"]]

    def status(self, recipe: str, row: dict[str, Any]) -> RowStatus:
        found = self._status.get(row["row_id"])
        if found is None:
            node = self.site.nodes.get(row["node"])
            found = status_for(
                self.site.recipes[recipe],
                engine=row["engine"],
                engine_version=row["engine_version"],
                flags=row["flags"],
                env=row["env"],
                hardware=node.hardware if node is not None else None,
            )
            self._status[row["row_id"]] = found
        return found

    def find(self, side: Side, default: str | None) -> tuple[str, _Found]:
        recipe = side.get("recipe", default)
        if recipe is None:
            raise ValueError("name the recipe: recipe=SLUG (this page has no recipe of its own)")
        if recipe not in self.site.recipes:
            raise ValueError(f"unknown recipe '{recipe}'")
        wanted = [(SELECTORS[key], value) for key, value in side.selectors if key != "recipe"]
        rows = [
            r
            for r in self.rows.get(recipe, [])
            if r.get(side.metric) is not None and all(_same(r[f], v) for f, v in wanted)
        ]
        if not rows:
            raise ValueError(f"no row of {recipe} has {side.metric}{_describe(side)}")
        # The figure of each setting the rows are at (figures.pick_cell: the one figure of a
        # recipe at a setting, as every page shows it), then the best-ranked, newest of those.
        statuses = _Statuses({r["row_id"]: self.status(recipe, r) for r in rows})
        by_setting: dict[Any, list[dict[str, Any]]] = {}
        for r in rows:
            by_setting.setdefault(setting_of(r, self._node_hw), []).append(r)
        cells = [
            (cell, [r for r in at if r["row_id"] in cell.row_ids], where)
            for where, at in by_setting.items()
            if (cell := pick_cell(at, side.metric, statuses, allow_differs=True)) is not None
        ]
        best = min(_tier(cell.status) for cell, _, _ in cells)
        cells = [c for c in cells if _tier(c[0].status) == best]
        newest = max((run[0]["date"], run[0]["time"] or "") for _, run, _ in cells)
        cells = [c for c in cells if (c[1][0]["date"], c[1][0]["time"] or "") == newest]
        values = sorted({float(cell.value) for cell, _, _ in cells})
        if len(values) > 1:
            rows = [r for _, run, _ in cells for r in run]
            differ = [
                key
                for key in _SETTING_KEYS
                if len({_text(r[SELECTORS[key]]) for r in rows}) > 1 and side.get(key, "?") == "?"
            ]
            told = (
                f"tell them apart with {', '.join(k + '=' for k in differ)}"
                if differ
                else "no key tells them apart (runs that differ only in what no key selects)"
            )
            shown = ", ".join(fmt_number(v) for v in values)
            raise ValueError(
                f"{len(rows)} rows of {recipe} on {newest[0]} give {side.metric}{_describe(side)} "
                f"different values ({shown}): {told}"
            )
        cell, run, where = cells[0]
        values_of = {r["row_id"]: float(r[side.metric]) for r in run}
        nearest = median_row(cell, values_of.__getitem__)
        # Marked as the setting's figure unless a run was picked out (date=, node=, version=):
        # then it quotes that run, not the figure every page shows for the setting.
        picked = any(k in _RUN_KEYS for k, _ in side.selectors)
        key = where.key(recipe, side.metric) if len(cells) == 1 and not picked else ""
        return recipe, _Found(next(r for r in run if r["row_id"] == nearest), cell.value, key)

    def bind(self, binding: Binding, default: str | None, own: str | None) -> BoundFigure:
        if binding.kind == UNBOUND:
            return BoundFigure(binding.text)
        if binding.in_heading:
            raise ValueError(
                "a figure from the rows cannot be in a heading (its anchor would move with the rows)"
            )
        if binding.in_link:
            raise ValueError("a figure from the rows cannot be in a link's text (it links to its row)")
        found = [self.find(side, default) for side in binding.sides]

        def href(recipe: str, row: dict[str, Any]) -> str:
            anchor = self.anchor(recipe, row)
            return f"#{anchor}" if recipe == own else f"../../recipes/{recipe}/#{anchor}"

        def said(side: Side, recipe: str, hit: _Found) -> str:
            return (
                f"{fmt_number(hit.value)} {unit_of(side.metric)}: {side.metric} of {recipe}, "
                f"{hit.row['date'].isoformat()} on {hit.row['node']}"
            )

        (top_recipe, top), *rest = found
        if binding.kind == RATIO:
            bottom_recipe, bottom = rest[0]
            if bottom.value == 0:
                raise ValueError("the ratio's second figure is 0")
            title = (
                f"{said(binding.sides[0], top_recipe, top)} / {said(binding.sides[1], bottom_recipe, bottom)}"
            )
            return BoundFigure(fmt_ratio_prose(top.value / bottom.value), href(top_recipe, top.row), title)
        metric = binding.sides[0].metric
        return BoundFigure(
            f"{fmt_number(_natural(top.value, top.row[metric]))} {unit_of(metric)}",
            href(top_recipe, top.row),
            said(binding.sides[0], top_recipe, top),
            top.key,
        )


def _tier(status: str) -> int:
    """Rows that match their recipe first, then those that leave something unrecorded, then history."""
    return 0 if status == MATCHES else 2 if status == DIFFERS else 1


def _natural(value: float, raw: Any) -> float | int:
    return raw if isinstance(raw, int) and raw == value else value


class _Statuses:
    """Row id → status, for :func:`~builder.site.figures.pick_cell` (prose works out its own)."""

    def __init__(self, statuses: dict[int, RowStatus]) -> None:
        self._statuses = statuses

    def status(self, row_id: int) -> RowStatus:
        return self._statuses[row_id]


def _same(have: Any, want: Any) -> bool:
    if want is None:
        return have is None
    if isinstance(want, float) and isinstance(have, (int, float)):
        return float(have) == want
    return bool(have == want)


def _text(value: Any) -> str:
    return "unknown" if value is None else value.isoformat() if isinstance(value, dt.date) else str(value)


def _describe(side: Side) -> str:
    shown = [f"{k}={_text(v)}" for k, v in side.selectors if k != "recipe"]
    return f" at {' '.join(shown)}" if shown else ""


def page_documents(site: Site) -> Iterable[tuple[Document, str | None, str | None]]:
    """Every content document with (its default recipe, the recipe whose page it is)."""
    for slug in sorted(site.recipes):
        yield site.recipes[slug].doc, slug, slug
    for _, case in sorted(site.case_studies.items()):
        arms = sorted({arm.recipe for arm in case.meta.arms if arm.recipe})
        yield case.doc, arms[0] if len(arms) == 1 else None, None
    for _, post in sorted(site.posts.items()):
        yield post.doc, None, None


def bind_figures(
    site: Site,
    rows: Mapping[str, list[dict[str, Any]]],
    markdown: Markdown,
    *,
    pages: Iterable[tuple[Document, str | None, str | None]] | None = None,
) -> tuple[dict[DocKey, tuple[BoundFigure, ...]], list[Problem]]:
    """What every ``{{ ... }}`` figure of every body shows, by document (path, digest), and a
    problem for each that no row supports (see the module's docstring).

    ``pages``: only these (document, default recipe, recipe whose page it is), not every page."""
    resolver = _Resolver(site, rows)
    bound: dict[DocKey, tuple[BoundFigure, ...]] = {}
    problems: list[Problem] = []
    for doc, default, own in page_documents(site) if pages is None else pages:
        if "{{" not in doc.body:
            continue
        shown: list[BoundFigure] = []
        for binding in markdown.bindings(doc):
            try:
                if binding.error:
                    raise ValueError(binding.error)
                shown.append(resolver.bind(binding, default, own))
            except ValueError as exc:
                problems.append(Problem(doc.rel, binding.line, f"{{{{ {binding.source} }}}}: {exc}"))
                shown.append(BoundFigure(binding.source))
        if shown:
            bound[(doc.rel, doc.digest)] = tuple(shown)
    return bound, problems


# --- check: plain figures --------------------------------------------------------------------------

_GIB_PER_GB = 1e9 / 2**30


_RECIPE_LINK = re.compile(r"recipes/([a-z0-9._-]+)/?[)#]")


def _linked_recipes(body: str, site: Site) -> set[str]:
    """The recipes a body links to (``](../../recipes/<slug>/)``)."""
    return {slug for slug in _RECIPE_LINK.findall(body) if slug in site.recipes}


def _supported_values(rows: Iterable[dict[str, Any]]) -> dict[str, list[float]]:
    """Per unit of prose, every value the rows support, sorted."""
    out: dict[str, list[float]] = {"tok/s": [], "ms": [], "s": [], "GiB": [], "GB": []}
    for row in rows:
        for metric, quantity in QUANTITIES.items():
            value = row.get(metric)
            if value is None:
                continue
            unit = quantity.unit.split(" ")[0]
            if unit == "tok/s":
                out["tok/s"].append(float(value))
            elif unit == "ms":
                out["ms"].append(float(value))
                out["s"].append(float(value) / 1000)
            elif unit == "GiB":
                out["GiB"].append(float(value))
                out["GB"].append(float(value) / _GIB_PER_GB)
        pool, per_gib = row.get("kv_pool_tokens"), row.get("kv_tokens_per_gib")
        if pool is not None and per_gib:
            out["GiB"].append(pool / per_gib)
            out["GB"].append(pool / per_gib / _GIB_PER_GB)
    return {unit: sorted(set(values)) for unit, values in out.items()}


def _any_within(values: list[float], low: float, high: float) -> bool:
    at = bisect.bisect_left(values, low)
    return at < len(values) and values[at] <= high


def _ratio_within(supported: dict[str, list[float]], low: float, high: float) -> bool:
    for unit in ("tok/s", "ms"):
        values = [v for v in supported[unit] if v > 0]
        for top in values:
            if _any_within(values, top / high, top / low):
                return True
    return False


def prose_figure_warnings(site: Site, rows: Mapping[str, list[dict[str, Any]]]) -> list[Problem]:
    """A warning for each number written with a unit in a recipe or case study body that no row of
    the recipes the page is about (its own or its arms', and those its body links to) supports
    within the number's printed precision: ``42.6 tok/s`` is supported by a row value in
    42.55–42.65, ``2.5×`` by the ratio of two such values of one kind (throughputs, latencies)."""
    pages: list[tuple[Document, set[str]]] = [
        (recipe.doc, {slug}) for slug, recipe in sorted(site.recipes.items())
    ]
    pages += [
        (case.doc, {arm.recipe for arm in case.meta.arms if arm.recipe})
        for _, case in sorted(site.case_studies.items())
    ]
    out: list[Problem] = []
    for doc, recipes in pages:
        figures = plain_figures(doc.body)
        if not figures:
            continue
        about = sorted(recipes | _linked_recipes(doc.body, site))
        supported = _supported_values(r for slug in about for r in rows.get(slug, []))
        for figure in figures:
            half = 0.5 * 10.0**-figure.decimals
            places = figure.decimals + 1
            low, high = figure.value - half, figure.value + half
            # The bounds are in: "42.6" stands for 42.55 too (binary fractions must not cut it off).
            slack = 1e-9 * max(abs(high), 1.0)
            if figure.unit == "×":
                ok = _ratio_within(supported, low - slack, high + slack)
            else:
                ok = _any_within(supported[figure.unit], low - slack, high + slack)
            if not ok:
                named = ", ".join(about) if about else "any recipe (the page names none)"
                out.append(
                    Problem(
                        doc.rel,
                        doc.body_line + figure.line,
                        f"'{figure.text}': no row of {named} supports it within its printed precision "
                        f"({low:.{places}f}–{high:.{places}f}); bind it to its row with "
                        "{{ METRIC KEY=VALUE ... }}, or mark a figure that is not a row's {{ unbound ... }}",
                        PROSE_FIGURE,
                    )
                )
    return out

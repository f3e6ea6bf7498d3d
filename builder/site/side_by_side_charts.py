"""The side-by-side charts: a comparison page's builds and a case study's arms, a chart per quantity.

A quantity gets a chart where two builds or more were measured at a shared setting (the lines that
:func:`builder.site.comparisons.side_by_side` lines up). The page's table of the same figures is the charts'
data for readers without JavaScript: the charts link to it (``rows_link``) rather than repeat it. A
recipe page's own charts are in :mod:`builder.site.chart_data`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from builder.analysis.reconcile import Reconciliation
from builder.content.models import METRICS, Arm
from builder.data.load import Site
from builder.site.charts import ARMS, BUILDS, Chart, Column, axis_title, make_chart
from builder.site.comparisons import Build, Comparison, Line, make_builds, side_by_side
from builder.site.figures import QUANTITY_LABELS, SERVE_PROPERTIES, SMALLER_IS_BETTER, Row

HardwareName = Callable[[str], str]


def _side_by_side_values(
    lines: list[Line], builds: list[Build], who: str, hardware_name: HardwareName | None
) -> list[dict[str, Any]]:
    order = {b.slug: i for i, b in enumerate(builds)}
    label = {b.slug: b.label for b in builds}
    values = []
    for line in lines:
        setting = line.setting_label(hardware_name)
        for slug, cell in sorted(line.cells.items(), key=lambda kv: order[kv[0]]):
            values.append(
                {
                    "setting": setting,
                    who: label[slug],
                    "order": order[slug],
                    "value": cell.value,
                    "trials": cell.trials,
                    "date": cell.date.isoformat(),
                    "node": cell.node,
                    "why": cell.why,
                }
            )
    return values


def side_by_side_charts(
    kind: str,
    lines: list[Line],
    builds: list[Build],
    hardware_name: HardwareName | None = None,
    *,
    key: str = "",
    where: str = "",
    rows_link: str = "",
) -> list[Chart]:
    """One chart per quantity measured by two builds or more at a shared setting.

    A page with a set of charts per hardware tells them apart by ``key`` (in ids) and ``where``
    (the hardware's name, in titles). ``rows_link``: where the page lists the same figures (then
    the charts link there instead of repeating them in data tables)."""
    who = "arm" if kind == ARMS else "build"
    by_quantity: dict[str, list[Line]] = defaultdict(list)
    for line in lines:
        if len(line.cells) > 1:
            by_quantity[line.quantity].append(line)
    multi_hw = len({b.hardware for b in builds}) > 1
    charts = []
    for quantity in (*METRICS, *SERVE_PROPERTIES):
        if quantity not in by_quantity:
            continue
        label, unit = QUANTITY_LABELS[quantity]
        values = _side_by_side_values(by_quantity[quantity], builds, who, hardware_name if multi_hw else None)
        columns = (
            Column("setting", "Setting"),
            Column(who, "Arm" if kind == ARMS else "Build"),
            Column("value", axis_title(quantity), True),
            Column("trials", "Rows", True),
            Column("date", "Date"),
            Column("node", "Node"),
            Column("why", "Off-recipe because"),
        )
        better = "smaller is better" if quantity in SMALLER_IS_BETTER else "higher is better"
        caption = (
            f"{label} ({unit}, {better}) of each {who} at the settings two or more of them were measured at; "
            "each bar is the median of the latest run, from matching rows where there are any."
        )
        charts.append(
            make_chart(
                kind,
                f"chart-{who}s-{key}-{quantity}" if key else f"chart-{who}s-{quantity}",
                f"{label} side by side" + (f" on {where}" if where else ""),
                caption,
                columns,
                values,
                quantity=quantity,
                rows_link=rows_link,
            )
        )
    return charts


def comparison_charts(comp: Comparison, hardware_name: HardwareName) -> list[Chart]:
    """The figures of each of a comparison page's tables as charts, a chart per quantity: a set per
    hardware where the page has a table per hardware (their builds never share a setting). The
    table is the charts' data for readers without JavaScript: they link to it, not repeat it."""
    charts = []
    for table in comp.shared_tables:
        where = hardware_name(table.hardware) if table.hardware else ""
        charts += side_by_side_charts(
            BUILDS,
            table.lines,
            table.builds,
            hardware_name,
            key=table.key,
            where=where,
            rows_link=f"#{table.id}",
        )
    return charts


def case_charts(
    site: Site,
    arms: Iterable[Arm],
    rows: Mapping[str, list[Row]],
    recon: Reconciliation,
    node_hw: dict[str, str],
) -> list[Chart]:
    """A case study's arms side by side: every arm that ran a recipe, labelled as the study labels it."""
    linked = [(arm, site.recipes[arm.recipe]) for arm in arms if arm.recipe and arm.recipe in site.recipes]
    if len({recipe.slug for _, recipe in linked}) < 2:
        return []
    seen: set[str] = set()
    recipes, labels = [], []
    for arm, recipe in linked:
        if recipe.slug not in seen:
            seen.add(recipe.slug)
            recipes.append(recipe)
            labels.append(f"{arm.label} ({arm.role})")
    builds = make_builds(recipes, labels)
    shared, _ = side_by_side(builds, rows, recon, node_hw)
    return side_by_side_charts(ARMS, shared, builds, site.hardware_name)

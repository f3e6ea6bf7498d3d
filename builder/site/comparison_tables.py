"""A comparison page's tables, built in Python.

As with a recipe's tables (:mod:`builder.site.tables`), a row is an f-string rather than a template loop:
every text value passes through ``markupsafe.escape``, numbers through the site's ``num`` filter
(digits and separators only), so nothing a contributor wrote becomes markup. The table heads,
captions and wrappers stay in ``templates/comparison.html``.
"""

from __future__ import annotations

from collections.abc import Callable

from markupsafe import Markup, escape

from builder.analysis.reconcile import DIFFERS, NOT_RECORDED
from builder.site.comparisons import Comparison, Line, SharedTable
from builder.site.figures import Cell, Setting
from builder.site.formats import fmt_number, fmt_ratio

HardwareName = Callable[[str], str]


def _e(text: object) -> str:
    return str(escape(text))


def figure_html(cell: Cell, setting: Setting | None) -> str:
    """A figure with where it comes from: its value, its run's date and node, and its status. A
    figure at a setting is marked with its key (``data-figure``, :func:`~builder.site.figures.figure_key`)."""
    date = cell.date.isoformat()
    key = "" if setting is None else f' data-figure="{_e(setting.key(cell.recipe, cell.metric))}"'
    out = f'<span class="figure-cell"{key}>{fmt_number(cell.value)}</span>'
    if cell.varied:
        out += f' <span class="muted small">median of {cell.trials} rows</span>'
    out += f'<br><span class="muted small"><time datetime="{date}">{date}</time> · {_e(cell.node)}</span>'
    if cell.status == DIFFERS:
        out += f'<br><span class="badge warn">off-recipe row</span> <span class="muted small">{_e(cell.detail)}</span>'
    elif cell.status == NOT_RECORDED:
        out += f'<br><span class="badge muted">not recorded</span> <span class="muted small">{_e(cell.detail)}</span>'
    return out


def _quantity(line: Line) -> str:
    return f'{_e(line.label)} <span class="unit">{_e(line.unit)}</span>'


def shared_rows(comp: Comparison, table: SharedTable, hardware_name: HardwareName) -> Markup:
    """``<tr>`` per line of a table of shared figures: the figure, the setting, a cell per build, the ratio.

    Settings name their hardware only where the builds run on more than one and the table is not
    one hardware's own."""
    name = hardware_name if comp.multi_hardware and table.hardware is None else None
    labels = {b.slug: _e(b.label) for b in comp.builds}
    columns = [b.slug for b in table.builds]
    out = []
    for line in table.lines:
        cells = "".join(
            f'<td class="n">{figure_html(line.cells[slug], line.setting)}</td>'
            if slug in line.cells
            else '<td class="n"><span class="muted">—</span></td>'
            for slug in columns
        )
        ratio = ""
        if line.ratio:
            direction = "lower" if line.smaller_is_better else "higher"
            ratio = (
                f"<strong>{labels[line.ratio.better]}: {fmt_ratio(line.ratio.value)}</strong> "
                f"{direction} than {labels[line.ratio.worse]}"
                f'<br><span class="muted small">{_e(line.ratio.context)}</span>'
            )
        out.append(
            f'<tr><th scope="row">{_quantity(line)}</th><td>{_e(line.setting_label(name))}</td>'
            f'{cells}<td class="ratio">{ratio}</td></tr>\n'
        )
    return Markup("".join(out))


def alone_rows(comp: Comparison, base: str, hardware_name: HardwareName) -> Markup:
    """``<tr>`` per figure without a match the page shows: the build, the figure, the setting, the value."""
    name = hardware_name if comp.multi_hardware else None
    builds = {b.slug: b for b in comp.builds}
    out = []
    for line in comp.alone:
        setting = _e(line.setting_label(name))
        for slug, cell in line.cells.items():
            out.append(
                f'<tr><td><a href="{_e(base)}recipes/{_e(slug)}/">{_e(builds[slug].label)}</a></td>'
                f"<td>{_quantity(line)}</td><td>{setting}</td>"
                f'<td class="n">{figure_html(cell, line.setting)}</td></tr>\n'
            )
    return Markup("".join(out))

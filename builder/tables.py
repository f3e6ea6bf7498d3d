"""The bodies of the two big tables, built in Python rather than in a template loop.

A recipe page carries its row table and a data table per chart: hundreds of rows of ten cells. In a
jinja loop every cell costs an attribute lookup, a filter call and an escape through the template
machinery, and those loops were most of a 1,000-recipe build's render time. Here a row is one
f-string; every value still goes through ``markupsafe.escape`` (numbers through the site's ``num``
formatting), so nothing a contributor wrote can become markup. The tables' heads, captions and
wrappers stay in the templates (``partials/row_table.html``, ``partials/chart.html``).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Collection, Mapping
from typing import Any

from markupsafe import Markup, escape


def _num(value: float | int | None) -> str:
    from builder.render import fmt_number  # the ``num`` filter; render imports this module

    return fmt_number(value)


def chart_rows(chart: Any) -> Markup:
    """``<tr>`` per value of a chart's data table (cells from :meth:`Chart.table_rows`)."""
    out = []
    for cells in chart.table_rows():
        tds = "".join(
            f'<td class="n">{escape(text)}</td>' if numeric else f"<td>{escape(text)}</td>"
            for text, numeric in cells
        )
        out.append(f"<tr>{tds}</tr>\n")
    return Markup("".join(out))


def _status_cell(st: Any) -> str:
    if st.status == "matches":
        return '<span class="badge ok">matches recipe</span>'
    if st.status == "differs":
        items = "".join(
            f"<li><code>{escape(d.field)}</code>: {escape(d.row_value)} "
            f'<span class="muted">(recipe: {escape(d.recipe_value)})</span></li>'
            for d in st.differences
        )
        return f'<span class="badge warn">differs</span><ul class="diffs">{items}</ul>'
    return (
        '<span class="badge muted">not recorded</span> '
        f'<span class="muted small">{escape(", ".join(st.unrecorded))}</span>'
    )


def _notes_cell(r: Mapping[str, Any]) -> str:
    parts = []
    if r["source"]:
        parts.append(f'<span class="source">{escape(r["source"])}</span>')
    if r["harness"]:
        parts.append(f'<br><span class="muted small">harness: {escape(r["harness"])}</span>')
    if r["contributor"]:
        parts.append(f'<br><span class="muted small">by {escape(r["contributor"])}</span>')
    if r["notes"]:
        parts.append(f'<p class="small">{escape(r["notes"])}</p>')
    return "".join(parts)


def row_table_rows(
    rows: list[Mapping[str, Any]],
    statuses: Mapping[int, Any],
    anchors: Mapping[int, str],
    marked: Collection[int],
    default_engine: str,
) -> Markup:
    """``<tr>`` per row of a recipe's results table, newest first as given."""
    marked = set(marked)
    out = []
    status_html: dict[int, str] = {}  # statuses are shared objects: render each once
    for r in rows:
        row_id = r["row_id"]
        st = statuses[row_id]
        cell = status_html.get(id(st))
        if cell is None:
            cell = status_html[id(st)] = _status_cell(st)
        date = r["date"].isoformat() if isinstance(r["date"], dt.date) else ""
        engine = escape(f"{r['engine'] or default_engine} {r['engine_version']}")
        if r["engine_build"]:
            engine += Markup("<br><code>") + escape(r["engine_build"]) + Markup("</code>")
        prompt = (
            '<abbr title="not recorded by the source">n/r</abbr>'
            if r["prompt_tokens"] is None
            else escape(_num(r["prompt_tokens"]))
        )
        css = f"status-{escape(st.status)}" + (" in-finding" if row_id in marked else "")
        out.append(
            f'<tr class="{css}" id="{escape(anchors[row_id])}">'
            f'<td><time datetime="{date}">{date}</time></td>'
            f"<td>{escape(r['node'])}</td>"
            f"<td>{engine}</td>"
            f'<td class="n">{prompt}</td>'
            f'<td class="n">{escape(_num(r["context_tokens"]))}</td>'
            f'<td class="n">{escape(r["concurrency"])}</td>'
            f'<td class="n">{escape(_num(r["decode_tok_s"]))}</td>'
            f'<td class="n">{escape(_num(r["aggregate_tok_s"]))}</td>'
            f'<td class="n">{escape(_num(r["prefill_tok_s"]))}</td>'
            f'<td class="n">{escape(_num(r["ttft_ms"]))}</td>'
            f'<td class="n">{escape(_num(r["itl_ms"]))}</td>'
            f"<td>{cell}</td>"
            f'<td class="notes">{_notes_cell(r)}</td>'
            "</tr>\n"
        )
    return Markup("".join(out))

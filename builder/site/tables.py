"""The bodies of the two big tables, built in Python rather than in a template loop.

A recipe page carries its row table and a data table per chart: hundreds of rows of ten cells. In a
jinja loop every cell costs an attribute lookup, a filter call and an escape through the template
machinery, and on a big site those loops dominate render time. Here a row is one f-string; every
text value is escaped as ``markupsafe.escape`` escapes it (numbers are formatted by the site's ``num``
filter, digits and separators only), so nothing a contributor wrote becomes markup. The tables'
heads, captions and wrappers stay in the templates (``partials/row_table.html``,
``partials/chart.html``).
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

from markupsafe import Markup

from builder.content.models import DETAILS, QUANTITIES, SPREADS, RecipeMeta
from builder.site.formats import fmt_number
from builder.site.views import NOTE_FIELDS, Run

_DETAIL_LABELS = [(name, QUANTITIES[name].label, QUANTITIES[name].unit) for name in DETAILS]


def _esc(text: str) -> str:
    """``markupsafe.escape`` for a plain string, without building Markup objects (faster)."""
    if "&" in text or "<" in text or ">" in text or '"' in text or "'" in text:
        return (
            text.replace("&", "&amp;")
            .replace("<", "&lt;")
            .replace(">", "&gt;")
            .replace('"', "&#34;")
            .replace("'", "&#39;")
        )
    return text


def chart_rows(chart: Any) -> Markup:
    """``<tr>`` per value of a chart's data table: its columns, read from the chart's rows by position."""
    index = {key: i for i, key in enumerate(chart.fields)}
    columns = [(index.get(col.key), col.numeric) for col in chart.columns]
    out = []
    for row in chart.rows:
        cells = []
        for i, numeric in columns:
            cell = None if i is None else row[i]
            if numeric:
                if cell is None or cell == "":
                    cells.append('<td class="n">—</td>')
                elif isinstance(cell, int | float):
                    cells.append(f'<td class="n">{fmt_number(cell)}</td>')
                else:
                    cells.append(f'<td class="n">{_esc(str(cell))}</td>')
            elif cell is None:
                cells.append("<td></td>")
            else:
                cells.append(f"<td>{_esc(str(cell))}</td>")
        out.append(f"<tr>{''.join(cells)}</tr>\n")
    return Markup("".join(out))


def _status_cell(st: Any) -> str:
    """The status badge; what differs or is not recorded behind a disclosure, so the row stays short."""
    if st.status == "matches":
        return '<span class="badge ok">matches<span class="visually-hidden"> recipe</span></span>'
    if st.status == "differs":
        items = "".join(
            f"<li><code>{_esc(d.field)}</code>: {_esc(d.row_value)} "
            f'<span class="muted">(recipe: {_esc(d.recipe_value)})</span></li>'
            for d in st.differences
        )
        return (
            '<details class="row-more"><summary><span class="badge warn">differs</span></summary>'
            f'<div class="row-more-body"><ul class="diffs">{items}</ul></div></details>'
        )
    return (
        '<details class="row-more"><summary><span class="badge muted">not recorded</span></summary>'
        f'<div class="row-more-body"><p class="small">{_esc(", ".join(st.unrecorded))}</p></div></details>'
    )


def _load_cell(r: Mapping[str, Any]) -> str:
    """The concurrency column: a closed-loop run's concurrency, or an open-loop run's rate and cap."""
    rate, cap = r["request_rate"], r["concurrency"]
    if rate is None:
        return fmt_number(cap)
    text = "∞ req/s" if rate == float("inf") else f"{fmt_number(rate)} req/s"
    return text if cap is None else f"{text}, cap {fmt_number(cap)}"


def _metric_cell(r: Mapping[str, Any], metric: str) -> str:
    value = fmt_number(r[metric])
    spread = r[SPREADS[metric]]
    if spread is not None and r[metric] is not None:
        value += f' <span class="muted small">± {fmt_number(spread)}</span>'
    return f'<td class="n">{value}</td>'


def _details_text(r: Mapping[str, Any]) -> str:
    """Percentiles, spread count, time and burstiness: shown with the row, never compared."""
    parts = [
        f"{label} {fmt_number(r[name])} {unit}" for name, label, unit in _DETAIL_LABELS if r[name] is not None
    ]
    if r["repetitions"] is not None:
        parts.append(f"mean ± sd over {fmt_number(r['repetitions'])} repetitions")
    if r["time"] is not None:
        parts.append(f"started {r['time']}")
    if r["burstiness"] is not None:
        parts.append(f"burstiness {fmt_number(r['burstiness'])}")
    return f'<p class="small muted">{_esc("; ".join(parts))}</p>' if parts else ""


_URL = re.compile(r"https?://[^\s<>\"'`]+")
SOURCE_LABEL = 28
"""Longest source label shown in the table (characters); the whole source is in the notes."""


def source_label(source: str) -> tuple[str, str | None]:
    """A short label for a row's source, and the link it makes: a URL's host (``github.com``), or the
    text up to its first comma, cut at a word to :data:`SOURCE_LABEL` characters."""
    found = _URL.search(source)
    if found is not None:
        url = found.group(0).rstrip(".,;:)]")
        try:
            host = urlsplit(url).hostname or url
        except ValueError:  # a malformed host ("http://[x"): the URL is still the link
            host = url
        return host.removeprefix("www."), url
    head = source.split(",", 1)[0].strip() or source.strip()
    if len(head) > SOURCE_LABEL:
        cut = head[: SOURCE_LABEL - 1]
        head = (cut.rsplit(" ", 1)[0] if " " in cut else cut).rstrip() + "…"
    return head, None


def _source_cell(source: str | None) -> str:
    if not source:
        return '<span class="muted">not recorded</span>'
    label, url = source_label(source)
    if url is not None:
        return f'<a href="{_esc(url)}">{_esc(label)}</a>'
    return _esc(label)


def _note_paragraphs(values: Iterable[tuple[str, Any]]) -> list[str]:
    """A paragraph per note field (:data:`~builder.site.views.NOTE_FIELDS`) that records something."""
    parts = []
    for name, value in values:
        if not value:
            continue
        text = _esc(value)
        if name == "source":
            parts.append(f'<p class="small"><strong>Source:</strong> {text}</p>')
        elif name == "engine_build":
            parts.append(f'<p class="small"><strong>Engine build:</strong> <code>{text}</code></p>')
        elif name == "harness":
            parts.append(f'<p class="small"><strong>Harness:</strong> {text}</p>')
        elif name == "contributor":
            parts.append(f'<p class="small"><strong>By:</strong> {text}</p>')
        else:
            parts.append(f'<p class="small">{text}</p>')
    return parts


def _notes_body(r: Mapping[str, Any], shared: Collection[str]) -> str:
    """A row's notes: its details, and the note fields its run does not give for all its rows."""
    details = _details_text(r)
    parts = [details] if details else []
    parts += _note_paragraphs((name, r[name]) for name in NOTE_FIELDS if name not in shared)
    return "".join(parts)


def run_notes(run: Run) -> Markup:
    """What every row of ``run`` records alike (its source, engine build, harness, contributor and
    notes), shown once with the run's commands (``partials/runs.html``) and in none of its rows."""
    parts = _note_paragraphs(run.shared)
    return Markup(f'<div class="run-notes">{"".join(parts)}</div>' if parts else "")


def _engine_cell(r: Mapping[str, Any], default_engine: str) -> str:
    engine = _esc(f"{r['engine'] or default_engine} {r['engine_version']}")
    build = r["engine_build"]
    if build:
        short = build if len(build) <= 14 else build[:13] + "…"
        engine += f'<br><code class="build">{_esc(short)}</code>'
    return engine


def row_table_rows(
    rows: list[Mapping[str, Any]],
    statuses: Mapping[int, Any],
    anchors: Mapping[int, str],
    marked: Collection[int],
    meta: RecipeMeta,
    runs: Sequence[Run],
) -> Markup:
    """``<tr>`` per row of a recipe's results table, newest first as given.

    A row stays one or two lines high: the source is a short label (a link for a URL), the notes sit
    behind a disclosure, and the commands that reproduce the row are its run's, once per run below
    the table (``partials/runs.html``): the row links to them. The notes all of a run's rows share are
    shown there too (:func:`run_notes`), so a row's notes hold only what differs from its run, and a
    row with nothing of its own has no notes disclosure. Cells that repeat from row to row (status,
    engine, notes) are built once per distinct value.
    """
    num = fmt_number
    marked = set(marked)
    default_engine = meta.engine
    out = []
    status_html: dict[int, str] = {}  # statuses are shared objects: render each once
    engines: dict[tuple[Any, ...], str] = {}
    notes: dict[tuple[Any, ...], str] = {}
    sources: dict[Any, str] = {}
    run_links: dict[int, str] = {}
    run_shared: dict[int, frozenset[str]] = {}
    for run in runs:
        link = f'<a class="run-link" href="#{_esc(run.anchor)}">Reproduce</a>'
        shared = frozenset(name for name, _ in run.shared)
        for row_id in run.row_ids:
            run_links[row_id] = link
            run_shared[row_id] = shared
    texts: dict[str, str] = {}
    dates: dict[Any, str] = {}
    for r in rows:
        row_id = r["row_id"]
        st = statuses[row_id]
        cell = status_html.get(id(st))
        if cell is None:
            cell = status_html[id(st)] = _status_cell(st)
        date = dates.get(r["date"])
        if date is None:
            date = dates[r["date"]] = r["date"].isoformat() if isinstance(r["date"], dt.date) else ""
        engine_key = (r["engine"], r["engine_version"], r["engine_build"])
        engine = engines.get(engine_key)
        if engine is None:
            engine = engines[engine_key] = _engine_cell(r, default_engine)
        shared = run_shared[row_id]
        notes_key = (
            shared,
            r["source"],
            r["engine_build"],
            r["harness"],
            r["contributor"],
            r["notes"],
            r["time"],
            r["burstiness"],
            r["repetitions"],
            *(r[name] for name in DETAILS),
        )
        note = notes.get(notes_key)
        if note is None:
            body = _notes_body(r, shared)
            note = notes[notes_key] = (
                '<details class="row-more"><summary>Notes</summary>'
                f'<div class="row-more-body">{body}</div></details>'
                if body
                else ""
            )
        source = sources.get(r["source"])
        if source is None:
            source = sources[r["source"]] = _source_cell(r["source"])
        node = texts.get(r["node"])
        if node is None:
            node = texts[r["node"]] = _esc(r["node"])
        prompt = (
            '<abbr title="not recorded by the source">n/r</abbr>'
            if r["prompt_tokens"] is None
            else num(r["prompt_tokens"])
        )
        anchor = _esc(anchors[row_id])
        css = f"status-{_esc(st.status)} in-finding" if row_id in marked else f"status-{_esc(st.status)}"
        out.append(
            f'<tr class="{css}" id="{anchor}">'
            f'<td><time datetime="{date}">{date}</time></td>'
            f"<td>{node}</td>"
            f"<td>{engine}</td>"
            f'<td class="n">{prompt}</td>'
            f'<td class="n">{num(r["context_tokens"])}</td>'
            f'<td class="n">{_load_cell(r)}</td>'
            f"{_metric_cell(r, 'decode_tok_s')}"
            f"{_metric_cell(r, 'aggregate_tok_s')}"
            f"{_metric_cell(r, 'prefill_tok_s')}"
            f"{_metric_cell(r, 'ttft_ms')}"
            f"{_metric_cell(r, 'itl_ms')}"
            f'<td class="status">{cell}</td>'
            f'<td class="source">{source}</td>'
            f'<td class="notes">{note}{run_links[row_id]}</td>'
            "</tr>\n"
        )
    return Markup("".join(out))

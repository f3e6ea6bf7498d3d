"""Chart kinds, defined once with Altair and filled with data per page.

Altair is slow to build a chart, and a site has thousands of them. So each kind is
built with Altair once per process and turned into a spec *template*: the Vega-Lite JSON text split
around its dataset. A page embeds each template it uses once and each chart's values once, in one
JSON block (:func:`page_data`: string concatenation plus one ``json.dumps``); the page's script puts
a chart's values into its spec. Contributors' strings only ever travel as data values; no Vega
expression is built from them (filters are field predicates on constants of ours).

A reader without JavaScript (or with a screen reader) gets the same figures: a chart carries its
values as a data table, or, when the page already lists the rows it plots (a recipe's history
charts and its results table), a link to them.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from builder.analysis.reconcile import DIFFERS, MATCHES, NOT_RECORDED
from builder.site.figures import QUANTITY_LABELS, STATUS_LABELS

DATA_NAME = "rows"
_SENTINEL = "@@chart-data@@"

PROMPT = "prompt"
"""Recipe: decode tok/s against prompt length, a line per concurrency."""
CONCURRENCY = "concurrency"
"""Recipe: aggregate (and per-stream) throughput against concurrency."""
HISTORY = "history"
"""Recipe: one metric's history per setting over time, findings ringed, off-recipe rows told apart."""
ARMS = "arms"
"""Case study: its arms side by side, one chart per metric."""
BUILDS = "builds"
"""Comparison page: the builds of one base model side by side, one chart per quantity."""

KINDS: tuple[str, ...] = (PROMPT, CONCURRENCY, HISTORY, ARMS, BUILDS)
PER_QUANTITY: frozenset[str] = frozenset({HISTORY, ARMS, BUILDS})
"""Kinds whose axis title names a quantity: one template per (kind, quantity)."""

FINDING_COLOR = "#c2410c"
_SHAPES = {MATCHES: "circle", NOT_RECORDED: "square", DIFFERS: "triangle-up"}

# Characters that could end a <script> element or confuse an HTML parser, and the two line
# separators JavaScript once refused inside strings. In JSON they only occur inside strings, where
# the \u escape is equivalent, so the escaped text is still the same JSON.
_ESCAPES = (
    ("&", "\\u0026"),
    ("<", "\\u003c"),
    (">", "\\u003e"),
    ("\u2028", "\\u2028"),
    ("\u2029", "\\u2029"),
)


def escape_json(text: str) -> str:
    """Make JSON text safe inside ``<script type="application/json">``."""
    for char, escaped in _ESCAPES:
        if char in text:
            text = text.replace(char, escaped)
    return text


def dump_values(values: Any) -> str:
    return escape_json(json.dumps(values, ensure_ascii=False, separators=(",", ":"), allow_nan=False))


@dataclass(frozen=True)
class SpecTemplate:
    """A chart kind's Vega-Lite spec as text, split where the page's data goes."""

    prefix: str
    suffix: str

    def fill(self, values: list[dict[str, Any]]) -> str:
        return f'{self.prefix}{{"values":{dump_values(values)}}}{self.suffix}'

    @functools.cached_property
    def bare(self) -> str:
        """The spec as Altair wrote it, reading the named dataset the page's script fills."""
        return f'{self.prefix}{{"name":{json.dumps(DATA_NAME)}}}{self.suffix}'


@dataclass(frozen=True)
class Column:
    """A column of a chart's data table."""

    key: str
    label: str
    numeric: bool = False


@dataclass(frozen=True)
class Chart:
    """One chart on one page: what the template shows and the data the page's script draws.

    The values are held as ``fields`` and one list per value (``rows``, in field order): the page
    embeds them that way (one JSON block per page, :func:`page_data`), and the data table reads the
    columns it shows by position.
    """

    id: str
    """DOM id, fixed by the page's content (never a counter), so output is deterministic."""
    kind: str
    title: str
    caption: str
    columns: tuple[Column, ...]
    fields: tuple[str, ...]
    rows: list[list[Any]]
    quantity: str = ""
    rows_link: str = ""
    """Where the page lists the rows this chart plots, when it does: then the figure links there
    instead of repeating them in a data table of its own."""

    @property
    def spec_key(self) -> str:
        """Which spec template draws it: the kind, and the quantity for per-quantity kinds."""
        return f"{self.kind}/{self.quantity}" if self.quantity else self.kind

    @property
    def values(self) -> list[dict[str, Any]]:
        """The values as the spec sees them: one object per row, absent (``None``) fields left out."""
        return [{k: v for k, v in zip(self.fields, row, strict=True) if v is not None} for row in self.rows]


def make_chart(
    kind: str,
    chart_id: str,
    title: str,
    caption: str,
    columns: tuple[Column, ...],
    values: list[dict[str, Any]],
    *,
    quantity: str = "",
    rows_link: str = "",
) -> Chart:
    """A chart from its values as objects (fields in order of first appearance)."""
    fields: dict[str, None] = {}
    for value in values:
        fields.update(dict.fromkeys(value))
    keys = tuple(fields)
    rows = [[value.get(k) for k in keys] for value in values]
    return chart_from_rows(
        kind, chart_id, title, caption, columns, keys, rows, quantity=quantity, rows_link=rows_link
    )


def chart_from_rows(
    kind: str,
    chart_id: str,
    title: str,
    caption: str,
    columns: tuple[Column, ...],
    fields: tuple[str, ...],
    rows: list[list[Any]],
    *,
    quantity: str = "",
    rows_link: str = "",
) -> Chart:
    """A chart from its values as rows in ``fields`` order (``None`` where a value has no such field)."""
    if kind not in KINDS:
        raise ValueError(f"unknown chart kind {kind!r}")
    if (kind in PER_QUANTITY) != bool(quantity):
        raise ValueError(f"chart kind {kind!r} {'needs' if kind in PER_QUANTITY else 'takes no'} quantity")
    return Chart(chart_id, kind, title, caption, columns, fields, rows, quantity, rows_link)


def page_data(charts: Iterable[Chart], templates: SpecTemplates) -> str:
    """The page's one chart data block, JSON escaped for ``<script type="application/json">``.

    ``{"specs": {key: Vega-Lite spec}, "charts": {chart id: {"spec": key, "fields": [...], "rows":
    [[...], ...], "strings": [...]}}}``: each spec template once (constant per kind, see
    :class:`SpecTemplates`), each chart's values once. A text field whose values repeat (a history
    chart's setting, its status, dates, nodes) gives each value once: ``strings`` has, by field
    position, the field's distinct values in order of first use, or ``null`` for a field given as is,
    and its rows give the value's position there (``null`` stays ``null``); ``strings`` is left out
    when no field is so given (:func:`_shared_strings`). ``static/charts.js`` turns a chart's rows back
    into objects and sets them as the spec's ``data.values``; nothing in the block is ever evaluated.
    """
    specs: dict[str, str] = {}
    data: dict[str, dict[str, Any]] = {}
    for chart in charts:
        key = chart.spec_key
        if key not in specs:
            specs[key] = templates.get(chart.kind, chart.quantity).bare
        rows, strings = _shared_strings(chart.rows, len(chart.fields))
        data[chart.id] = {"spec": key, "fields": chart.fields, "rows": rows}
        if strings is not None:
            data[chart.id]["strings"] = strings
    # The templates are escaped already (see _build_spec_template); the keys are ours. orjson:
    # faster than json.dumps on a page's values, and as deterministic (no NaN or infinity reaches
    # a chart: row values are validated finite).
    spec_text = ",".join(f"{escape_json(json.dumps(key))}:{text}" for key, text in specs.items())
    return f'{{"specs":{{{spec_text}}},"charts":{escape_json(orjson.dumps(data, default=_plain).decode())}}}'


def _shared_strings(
    rows: Sequence[Sequence[Any]], width: int
) -> tuple[Sequence[Sequence[Any]], list[list[str] | None] | None]:
    """A chart's rows with each text field whose values repeat given by position in its distinct
    values, and those values by field (``None`` for a field kept as is); the rows as they are and
    ``None`` when no field repeats a text."""
    strings: list[list[str] | None] = [None] * width
    for i in range(width):
        values = [row[i] for row in rows if row[i] is not None]
        if values and all(type(v) is str for v in values) and len(set(values)) < len(values):
            strings[i] = list(dict.fromkeys(values))
    if all(s is None for s in strings):
        return rows, None
    index = [None if s is None else {v: n for n, v in enumerate(s)} for s in strings]
    coded = [
        [v if (at := index[i]) is None or v is None else at[v] for i, v in enumerate(row)] for row in rows
    ]
    return coded, strings


def _plain(value: Any) -> Any:
    """A numpy scalar as the Python number it holds (orjson does not serialise numpy scalars)."""
    item = getattr(value, "item", None)
    if callable(item):
        return item()
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def axis_title(quantity: str) -> str:
    label, unit = QUANTITY_LABELS[quantity]
    return f"{label} ({unit})"


def spec_template(kind: str, quantity: str = "") -> SpecTemplate:
    """The kind's spec template, built with Altair."""
    if kind not in KINDS:
        raise ValueError(f"unknown chart kind {kind!r}")
    if (kind in PER_QUANTITY) != bool(quantity):
        raise ValueError(f"chart kind {kind!r} {'needs' if kind in PER_QUANTITY else 'takes no'} quantity")
    return _build_spec_template(kind, quantity)


class SpecTemplates:
    """A render's spec templates, each built once when a page first needs it. A template is a pure
    function of the code running (the kind's definition, the labels it shows, the Altair version),
    so ``known`` may hand in templates an earlier build of the same code made."""

    def __init__(self, known: dict[tuple[str, str], SpecTemplate] | None = None) -> None:
        self.by_kind: dict[tuple[str, str], SpecTemplate] = dict(known or {})
        """Every template this render has, by (kind, quantity)."""

    def get(self, kind: str, quantity: str = "") -> SpecTemplate:
        found = self.by_kind.get((kind, quantity))
        if found is None:
            found = self.by_kind[kind, quantity] = spec_template(kind, quantity)
        return found


def _build_spec_template(kind: str, quantity: str) -> SpecTemplate:
    """Build the kind's chart with Altair and split its JSON around the dataset."""
    # Validated against the Vega-Lite schema by the tests, for every kind and quantity; a build
    # re-validating what only the code decides would spend most of its chart time on jsonschema.
    spec = _define(kind, quantity).to_dict(validate=False)
    if spec.get("data") != {"name": DATA_NAME}:
        raise ValueError(f"chart kind {kind!r} must read the top-level dataset {DATA_NAME!r}")
    spec["data"] = _SENTINEL
    text = escape_json(json.dumps(spec, ensure_ascii=False, separators=(",", ":")))
    prefix, sep, suffix = text.partition(json.dumps(_SENTINEL))
    if not sep or json.dumps(_SENTINEL) in suffix:
        raise ValueError(f"chart kind {kind!r}: data placeholder not found exactly once")
    return SpecTemplate(prefix, suffix)


def _define(kind: str, quantity: str) -> Any:
    import altair as alt  # heavy; only builds with charts pay for it

    data = alt.Data(name=DATA_NAME)  # type: ignore[no-untyped-call]
    if kind == PROMPT:
        return _prompt_chart(alt, data)
    if kind == CONCURRENCY:
        return _concurrency_chart(alt, data)
    if kind == HISTORY:
        return _history_chart(alt, data, quantity)
    return _side_by_side(alt, data, quantity, "arm" if kind == ARMS else "build")


def _prompt_chart(alt: Any, data: Any) -> Any:
    # Ordinal: prompt lengths are a handful of settings (512, 2,048, 8,192), evenly spaced.
    x = alt.X(
        "prompt:O",
        title="Prompt length (tokens)",
        axis=alt.Axis(labelAngle=0, format=",d", formatType="number"),
    )
    color = alt.Color("concurrency:O", title="Concurrency", legend=alt.Legend(orient="bottom"))
    line = alt.Chart(data).mark_line().encode(x=x, y=alt.Y("median(decode):Q"), color=color)
    points = (
        alt.Chart(data)
        .mark_point(filled=True, size=60)
        .encode(
            x=x,
            y=alt.Y("decode:Q", title=axis_title("decode_tok_s"), scale=alt.Scale(zero=True)),
            color=color,
            tooltip=[
                alt.Tooltip("prompt:O", title="Prompt tokens"),
                alt.Tooltip("concurrency:O", title="Concurrency"),
                alt.Tooltip("decode:Q", title="Decode tok/s", format=","),
                alt.Tooltip("date:N", title="Date"),
                alt.Tooltip("node:N", title="Node"),
            ],
        )
    )
    return alt.layer(line, points, data=data).properties(width="container", height=260)


def _concurrency_chart(alt: Any, data: Any) -> Any:
    x = alt.X("concurrency:O", title="Concurrent requests", axis=alt.Axis(labelAngle=0))
    color = alt.Color(
        "measure:N", title="Throughput", sort=["Aggregate", "Per stream"], legend=alt.Legend(orient="bottom")
    )
    line = alt.Chart(data).mark_line().encode(x=x, y=alt.Y("median(value):Q"), color=color, detail="prompt:N")
    points = (
        alt.Chart(data)
        .mark_point(filled=True, size=60)
        .encode(
            x=x,
            y=alt.Y("value:Q", title="Output tokens/s", scale=alt.Scale(zero=True)),
            color=color,
            tooltip=[
                alt.Tooltip("measure:N", title="Throughput"),
                alt.Tooltip("concurrency:O", title="Concurrency"),
                alt.Tooltip("value:Q", title="tok/s", format=","),
                alt.Tooltip("prompt:N", title="Prompt"),
                alt.Tooltip("date:N", title="Date"),
                alt.Tooltip("node:N", title="Node"),
            ],
        )
    )
    return alt.layer(line, points, data=data).properties(width="container", height=260)


def _history_chart(alt: Any, data: Any, quantity: str) -> Any:
    x = alt.X(
        "date:T",
        title="Run date",
        scale=alt.Scale(type="utc", padding=24),
        axis=alt.Axis(format="%Y-%m-%d", labelAngle=0),
    )
    y_title = axis_title(quantity)
    color = alt.Color(
        "setting:N", title="Setting", legend=alt.Legend(orient="bottom", columns=1, labelLimit=420)
    )
    status_domain = [STATUS_LABELS[s] for s in (MATCHES, NOT_RECORDED, DIFFERS)]
    shape = alt.Shape(
        "status:N",
        title="Row",
        scale=alt.Scale(domain=status_domain, range=[_SHAPES[s] for s in (MATCHES, NOT_RECORDED, DIFFERS)]),
        # a mid grey reads on the light and the dark theme alike (the default is black)
        legend=alt.Legend(orient="bottom", symbolFillColor="#8a8f96", symbolStrokeColor="#8a8f96"),
    )
    rows = alt.FieldEqualPredicate(field="layer", equal="row")
    on_recipe = alt.FieldEqualPredicate(field="status", equal=STATUS_LABELS[MATCHES])
    line = (
        alt.Chart(data)
        .transform_filter(rows)
        .transform_filter(on_recipe)
        .mark_line(strokeWidth=1.5)
        .encode(x=x, y=alt.Y("median(value):Q"), color=color)
    )
    points = (
        alt.Chart(data)
        .transform_filter(rows)
        .mark_point(filled=True, size=70, opacity=0.9)
        .encode(
            x=x,
            y=alt.Y("value:Q", title=y_title, scale=alt.Scale(zero=True)),
            color=color,
            shape=shape,
            tooltip=[
                alt.Tooltip("date:T", title="Date", format="%Y-%m-%d", formatType="utc"),
                alt.Tooltip("setting:N", title="Setting"),
                alt.Tooltip("value:Q", title=y_title, format=","),
                alt.Tooltip("trials:Q", title="Rows (median of)"),
                alt.Tooltip("status:N", title="Row"),
                alt.Tooltip("note:N", title="Off-recipe because"),
                alt.Tooltip("node:N", title="Node"),
                alt.Tooltip("engine_version:N", title="Engine version"),
            ],
        )
    )
    rings = (
        alt.Chart(data)
        .transform_filter(alt.FieldEqualPredicate(field="layer", equal="finding"))
        .mark_point(shape="circle", size=420, filled=False, strokeWidth=2.5, color=FINDING_COLOR)
        .encode(
            x=x,
            y=alt.Y("value:Q"),
            tooltip=[
                alt.Tooltip("note:N", title="Finding"),
                alt.Tooltip("date:T", title="Run", format="%Y-%m-%d", formatType="utc"),
                alt.Tooltip("value:Q", title=y_title, format=","),
                alt.Tooltip("setting:N", title="Setting"),
            ],
        )
    )
    return alt.layer(line, points, rings, data=data).properties(width="container", height=280)


def _side_by_side(alt: Any, data: Any, quantity: str, who: str) -> Any:
    title = "Arm" if who == "arm" else "Build"
    # Columns grouped by setting, a bar per build; sort=None keeps the order of the data values,
    # which list settings and builds in the page's order.
    x = alt.X("setting:N", title=None, sort=None, axis=alt.Axis(labelAngle=0, labelLimit=320))
    x_offset = alt.XOffset(f"{who}:N", sort=None)
    color = alt.Color(
        f"{who}:N", title=title, sort=None, legend=alt.Legend(orient="bottom", columns=1, labelLimit=520)
    )
    y = alt.Y("value:Q", title=axis_title(quantity), scale=alt.Scale(zero=True))
    tooltip = [
        alt.Tooltip(f"{who}:N", title=title),
        alt.Tooltip("setting:N", title="Setting"),
        alt.Tooltip("value:Q", title=axis_title(quantity), format=","),
        alt.Tooltip("trials:Q", title="Rows"),
        alt.Tooltip("date:N", title="Date"),
        alt.Tooltip("node:N", title="Node"),
        alt.Tooltip("why:N", title="Off-recipe"),
    ]
    bars = alt.Chart(data).mark_bar().encode(x=x, xOffset=x_offset, y=y, color=color, tooltip=tooltip)
    labels = (
        alt.Chart(data)
        # currentColor: the SVG text takes the page's text colour, light or dark theme alike
        .mark_text(baseline="bottom", dy=-3, color="currentColor")
        .encode(x=x, xOffset=x_offset, y=y, text=alt.Text("value:Q", format=","))
    )
    # A fixed height: a step height would make Vega-Lite drop the container fit (and warn).
    return alt.layer(bars, labels, data=data).properties(width="container", height=240)

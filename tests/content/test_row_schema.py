"""The row format is declared once, by ``builder.content.models.Row``: every place that spells out the
row's columns (the parsers' kinds, the typed Arrow table, the downloads in every format, the JSON
Schema, the pages' labels, the CONTRIBUTING.md table) agrees with it."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Annotated, Any, Literal

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pydantic import BaseModel

from builder.config import load_config
from builder.content import models
from builder.content.models import ROW_FIELDS, ROW_SCHEMA, RowColumn
from builder.data.ingest import ARROW_TYPES, ROWS_SCHEMA, empty_typed_table
from builder.engine.pipeline import Loaded, load_and_reconcile
from builder.review import diff as prdiff
from builder.site import downloads, figure_grid, figures, views
from tests.conftest import REPO, SITES

DUCKDB_TYPES = {"date": "DATE", "text": "VARCHAR", "integer": "BIGINT", "number": "DOUBLE"}
JSON_TYPES = {"date": "string", "text": "string", "integer": "integer", "number": "number"}


@pytest.fixture(scope="module")
def loaded() -> Loaded:
    result = load_and_reconcile(load_config(SITES / "minimal"))
    assert not result.problems.errors and result.recon is not None
    assert result.site.rows.num_rows > 0
    return result


def test_columns_are_read_from_the_types_and_markers_of_a_model() -> None:
    class Sample(BaseModel):
        day: dt.date
        name: models.Slug
        count: models.PositiveInt | Literal["unknown"]
        depth: Annotated[models.NonNegativeInt | None, models.EmptyMeans(0)] = None
        speed: Annotated[models.Metric | None, models.Measured("Speed", "tok/s")] = None
        memory: Annotated[
            models.Metric | None, models.ServeProperty("Memory", "GiB", lower_is_better=True)
        ] = None
        note: str | None = None

    assert list(models.row_columns(Sample).values()) == [
        RowColumn("day", "date", True),
        RowColumn("name", "text", True),
        RowColumn("count", "integer", True, minimum=1, words=("unknown",)),
        RowColumn("depth", "integer", False, minimum=0, empty=0),
        RowColumn("speed", "number", False, minimum=0, quantity=models.Measured("Speed", "tok/s")),
        RowColumn("memory", "number", False, minimum=0, quantity=models.ServeProperty("Memory", "GiB", True)),
        RowColumn("note", "text", False),
    ]


def test_a_field_of_another_type_is_refused_when_the_columns_are_read() -> None:
    class Sample(BaseModel):
        either: int | str

    with pytest.raises(TypeError, match="row field 'either' must be one of date, str, int or float"):
        models.row_columns(Sample)


def test_the_column_groups_partition_the_declared_columns() -> None:
    assert ROW_FIELDS == tuple(models.Row.model_fields)
    assert models.REQUIRED_ROW_FIELDS == tuple(
        n for n, f in models.Row.model_fields.items() if f.is_required()
    )
    groups = [
        models.INT_ROW_FIELDS,
        models.FLOAT_ROW_FIELDS,
        models.TEXT_ROW_FIELDS,
        tuple(c.name for c in ROW_SCHEMA.values() if c.kind == "date" or (c.required and c.kind == "text")),
        tuple(c.name for c in ROW_SCHEMA.values() if c.words),
    ]
    assert sorted(name for group in groups for name in group) == sorted(ROW_FIELDS)
    assert set(models.METRICS) <= set(models.FLOAT_ROW_FIELDS)
    assert models.METRICS and not set(models.METRICS) & set(models.REQUIRED_ROW_FIELDS)


def test_the_typed_rows_table_has_every_column_with_its_kinds_arrow_type(loaded: Loaded) -> None:
    for column in ROW_SCHEMA.values():
        assert ROWS_SCHEMA.field(column.name).type == ARROW_TYPES[column.kind], column.name
    assert ROWS_SCHEMA.names == ["row_id", "file_id", "file_row", *ROW_FIELDS]
    assert empty_typed_table().schema == ROWS_SCHEMA
    assert loaded.site.rows.schema == ROWS_SCHEMA
    described = loaded.site.con.sql("DESCRIBE rows").fetchall()
    types = {name: kind for name, kind, *_ in described}
    assert {name: types[name] for name in ROW_FIELDS} == {
        c.name: DUCKDB_TYPES[c.kind] for c in ROW_SCHEMA.values()
    }


def test_every_download_has_every_column_in_declared_order_with_its_type(
    loaded: Loaded, tmp_path: Path
) -> None:
    assert views.ROW_COLUMNS == ("row_id", *ROW_FIELDS)
    assert downloads.EXPORT_COLUMNS == (*views.ROW_COLUMNS, *downloads.STATUS_COLUMNS)
    assert loaded.recon is not None
    table = downloads.export_rows(loaded.site, loaded.recon)
    header = downloads.rows_csv(table).split(b"\n", 1)[0].decode()
    assert header == ",".join(f'"{name}"' for name in downloads.EXPORT_COLUMNS)
    parquet = pq.read_table(pa.BufferReader(downloads.rows_parquet(table))).schema
    assert parquet.names == list(downloads.EXPORT_COLUMNS)
    for column in ROW_SCHEMA.values():
        assert parquet.field(column.name).type == ARROW_TYPES[column.kind], column.name
    path = tmp_path / "rows.duckdb"
    path.write_bytes(downloads.duckdb_file({"rows": table}))
    con = duckdb.connect(str(path), read_only=True)
    try:
        types = {name: kind for name, kind, *_ in con.sql("DESCRIBE rows").fetchall()}
    finally:
        con.close()
    assert list(types)[: len(views.ROW_COLUMNS)] == list(views.ROW_COLUMNS)
    assert {n: types[n] for n in ROW_FIELDS} == {c.name: DUCKDB_TYPES[c.kind] for c in ROW_SCHEMA.values()}
    kinds = {name: kind for name, kind, _ in downloads.column_docs()}
    assert {name: kinds[name] for name in ROW_FIELDS} == {c.name: c.kind for c in ROW_SCHEMA.values()}


def _accepted(prop: dict[str, Any]) -> list[dict[str, Any]]:
    return [option for option in prop.get("anyOf", [prop]) if option.get("type") != "null"]


def test_the_json_schema_has_every_column_with_its_kind_and_bounds() -> None:
    document = json.loads((REPO / "schema" / "row.schema.json").read_text(encoding="utf-8"))
    assert set(document["properties"]) == set(ROW_FIELDS)
    assert document["required"] == list(models.REQUIRED_ROW_FIELDS)
    assert document["additionalProperties"] is False
    for column in ROW_SCHEMA.values():
        options = _accepted(document["properties"][column.name])
        words = [o["const"] for o in options if "const" in o]
        (value,) = [o for o in options if "const" not in o]
        assert (value["type"], value.get("format")) == (
            JSON_TYPES[column.kind],
            "date" if column.kind == "date" else None,
        ), column.name
        if column.kind == "number":
            bounds = (value.get("minimum"), value.get("exclusiveMinimum"))
            assert bounds == (column.minimum, column.above), column.name
        else:
            minimum = value["exclusiveMinimum"] + 1 if "exclusiveMinimum" in value else value.get("minimum")
            assert minimum == column.minimum, column.name
        assert tuple(words) == column.words, column.name
        assert value.get("pattern") == column.pattern or column.required, column.name
    annotations = json.loads((REPO / "schema" / "annotations.schema.json").read_text(encoding="utf-8"))
    (metric,) = _accepted(annotations["$defs"]["Annotation"]["properties"]["metric"])
    assert metric["enum"] == list(models.METRICS)


def test_pages_label_every_quantity_and_read_declared_columns() -> None:
    assert tuple(views.METRIC_LABELS) == models.METRICS
    assert set(figures.QUANTITY_LABELS) == set(models.QUANTITIES)
    serve = {n for n, q in models.QUANTITIES.items() if isinstance(q, models.ServeProperty)}
    assert set(figures.SERVE_PROPERTIES) == serve and len(figures.SERVE_PROPERTIES) == len(serve)
    assert set(figure_grid.QUANTITIES) == set(models.QUANTITIES) - set(models.DETAILS)
    assert set(models.SPREADS) == set(models.METRICS)
    assert figures.SMALLER_IS_BETTER == {n for n, q in models.QUANTITIES.items() if q.lower_is_better}
    for field in figure_grid.SCHEMA:
        assert ROWS_SCHEMA.field(field.name) == field
    assert set(prdiff._ROW_COLUMNS) <= set(ROW_FIELDS)

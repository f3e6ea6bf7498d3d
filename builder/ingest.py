"""Load parsed rows into DuckDB, checking every cell in bulk.

The parsed rows arrive as one all-string Arrow table. One SQL pass computes, per row, the list of
problems (type, range, date validity, unknown recipe or node, no metric); rows without problems are
cast into the typed ``rows`` table. Nothing is coerced: a cell either matches its exact textual form
or is reported, so the typed table holds exactly the values written in the files.
"""

from __future__ import annotations

from collections.abc import Sequence

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from builder.errors import Problems
from builder.models import FLOAT_ROW_FIELDS, INT_ROW_FIELDS, METRICS, REQUIRED_ROW_FIELDS
from builder.rows import STRING_SCHEMA_FIELDS, ParsedFile

_INT_RE = r"^[0-9]+$"
_FLOAT_RE = r"^([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?$"
_DATE_RE = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$"

_INT_MIN = {"concurrency": 1, "output_tokens": 1, "context_tokens": 0, "kv_pool_tokens": 1}


def _q(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _blank(col: str) -> str:
    return f"coalesce({col}, '') = ''"


def _int_check(col: str, minimum: int) -> str:
    return f"""CASE WHEN {_blank(col)} THEN NULL
        WHEN NOT regexp_full_match({col}, '{_INT_RE}')
            THEN '{col} must be a whole number >= {minimum}, not ''' || {col} || ''''
        WHEN TRY_CAST({col} AS BIGINT) IS NULL THEN '{col} ''' || {col} || ''' is too large'
        WHEN CAST({col} AS BIGINT) < {minimum} THEN '{col} must be >= {minimum}, not ' || {col}
        END"""


def _float_check(col: str) -> str:
    return f"""CASE WHEN {_blank(col)} THEN NULL
        WHEN regexp_full_match({col}, '{_FLOAT_RE}') AND isfinite(TRY_CAST({col} AS DOUBLE)) THEN NULL
        WHEN regexp_full_match({col}, '^[0-9]+,[0-9]+$')
            THEN '{col} ''' || {col} || ''' uses a decimal comma; write a point'
        WHEN regexp_full_match(lower({col}), '^[+-]?(nan|inf|infinity)$')
            THEN '{col} must be a finite number, not ''' || {col} || ''''
        WHEN starts_with({col}, '-') THEN '{col} must be >= 0, not ' || {col}
        ELSE '{col} must be a number, not ''' || {col} || '''' END"""


def _checks() -> list[str]:
    """Each check yields NULL or ``column<US>message``; the column lets known problems be dropped."""
    checks: list[tuple[str, str]] = [
        ("", f"CASE WHEN {' AND '.join(_blank(c) for c in REQUIRED_ROW_FIELDS)} THEN 'blank line' END"),
    ]
    all_blank = " AND ".join(_blank(c) for c in REQUIRED_ROW_FIELDS)
    for col in REQUIRED_ROW_FIELDS:
        checks.append(
            (
                col,
                f"CASE WHEN {_blank(col)} AND NOT ({all_blank}) THEN 'missing required value for {col}' END",
            )
        )
    checks.append(
        (
            "date",
            f"""CASE WHEN {_blank("date")} THEN NULL
        WHEN NOT regexp_full_match(date, '{_DATE_RE}')
            THEN 'date ''' || date || ''' is not an ISO date (YYYY-MM-DD)'
        WHEN TRY_CAST(date AS DATE) IS NULL THEN 'date ''' || date || ''' does not exist' END""",
        )
    )
    checks.append(
        (
            "prompt_tokens",
            f"""CASE WHEN {_blank("prompt_tokens")} OR prompt_tokens = 'unknown' THEN NULL
        WHEN NOT regexp_full_match(prompt_tokens, '{_INT_RE}')
            THEN 'prompt_tokens must be a whole number > 0 (or unknown), not ''' || prompt_tokens || ''''
        WHEN TRY_CAST(prompt_tokens AS BIGINT) IS NULL THEN 'prompt_tokens is too large'
        WHEN CAST(prompt_tokens AS BIGINT) < 1 THEN 'prompt_tokens must be > 0, not ' || prompt_tokens
        END""",
        )
    )
    checks.extend((col, _int_check(col, _INT_MIN[col])) for col in INT_ROW_FIELDS)
    checks.extend((col, _float_check(col)) for col in FLOAT_ROW_FIELDS)
    checks.append(
        (
            "recipe",
            f"CASE WHEN NOT {_blank('recipe')} AND NOT recipe_ok "
            "THEN 'unknown recipe ''' || recipe || ''' (no content/recipes/' || recipe || '.md)' END",
        )
    )
    checks.append(
        (
            "node",
            f"CASE WHEN NOT {_blank('node')} AND NOT node_ok "
            "THEN 'unknown node ''' || node || ''' (not in data/nodes.yaml)' END",
        )
    )
    checks.append(
        (
            "",
            f"CASE WHEN {' AND '.join(_blank(c) for c in METRICS)} AND NOT ({_blank('date')} "
            f"AND {_blank('recipe')}) THEN 'no metric: give at least one of {', '.join(METRICS)}' END",
        )
    )
    return [f"'{col}' || chr(31) || ({sql})" for col, sql in checks]


def _ok() -> str:
    """A cheap predicate that is true for a valid row; messages are built only for the others."""
    parts = [f"NOT {_blank(c)}" for c in REQUIRED_ROW_FIELDS]
    parts.append(f"regexp_full_match(date, '{_DATE_RE}') AND TRY_CAST(date AS DATE) IS NOT NULL")
    parts.append(
        f"(prompt_tokens = 'unknown' OR (regexp_full_match(prompt_tokens, '{_INT_RE}') "
        "AND coalesce(TRY_CAST(prompt_tokens AS BIGINT) >= 1, false)))"
    )
    for col in INT_ROW_FIELDS:
        parts.append(
            f"({_blank(col)} OR (regexp_full_match({col}, '{_INT_RE}') "
            f"AND coalesce(TRY_CAST({col} AS BIGINT) >= {_INT_MIN[col]}, false)))"
        )
    for col in FLOAT_ROW_FIELDS:
        parts.append(
            f"({_blank(col)} OR (regexp_full_match({col}, '{_FLOAT_RE}') "
            f"AND coalesce(isfinite(TRY_CAST({col} AS DOUBLE)), false)))"
        )
    parts.append("recipe_ok AND node_ok")
    parts.append("NOT (" + " AND ".join(_blank(c) for c in METRICS) + ")")
    return " AND ".join(parts)


_VALIDATE_SQL = f"""
WITH marked AS (
    SELECT *, recipe IN (SELECT slug FROM _recipes) AS recipe_ok, node IN (SELECT id FROM _nodes) AS node_ok
    FROM raw
), failing AS (
    SELECT * FROM marked WHERE NOT coalesce({_ok()}, false)
)
SELECT _file, _row, unnest(errs) AS message FROM (
    SELECT _file, _row, list_filter([{", ".join(_checks())}], lambda x: x IS NOT NULL) AS errs FROM failing
) WHERE len(errs) > 0
ORDER BY _file, _row
"""


_TEXT = ("engine", "flags", "env", "engine_build", "driver", "harness", "contributor", "source", "notes")


def _nullable(column: pa.ChunkedArray) -> pa.ChunkedArray:
    """Empty cells become nulls ("not measured" / "not recorded")."""
    return pc.if_else(pc.equal(column, ""), pa.scalar(None, pa.string()), column)


def _typed_table(raw: pa.Table) -> pa.Table:
    """Cast validated string columns to their types with Arrow kernels (no Python loop)."""
    out: dict[str, pa.ChunkedArray | pa.Array] = {
        "file_id": raw.column("_file"),
        "file_row": raw.column("_row"),
        "date": pc.cast(raw.column("date"), pa.date32()),
        "recipe": raw.column("recipe"),
        "node": raw.column("node"),
        "engine_version": raw.column("engine_version"),
        "prompt_tokens": pc.cast(
            pc.if_else(
                pc.equal(raw.column("prompt_tokens"), "unknown"),
                pa.scalar(None, pa.string()),
                raw.column("prompt_tokens"),
            ),
            pa.int64(),
        ),
        "concurrency": pc.cast(raw.column("concurrency"), pa.int64()),
    }
    for col in METRICS:
        out[col] = pc.cast(_nullable(raw.column(col)), pa.float64())
    for col in _TEXT[:3]:
        out[col] = _nullable(raw.column(col))
    out["output_tokens"] = pc.cast(_nullable(raw.column("output_tokens")), pa.int64())
    out["context_tokens"] = pc.fill_null(pc.cast(_nullable(raw.column("context_tokens")), pa.int64()), 0)
    out["kv_pool_tokens"] = pc.cast(_nullable(raw.column("kv_pool_tokens")), pa.int64())
    out["kv_tokens_per_gib"] = pc.cast(_nullable(raw.column("kv_tokens_per_gib")), pa.float64())
    out["weights_gib"] = pc.cast(_nullable(raw.column("weights_gib")), pa.float64())
    for col in _TEXT[3:]:
        out[col] = _nullable(raw.column(col))
    table = pa.table(out)
    return table.add_column(0, "row_id", pa.array(np.arange(table.num_rows, dtype=np.int32)))


def ingest_rows(
    con: duckdb.DuckDBPyConnection,
    parsed: Sequence[ParsedFile],
    raw: pa.Table,
    recipes: Sequence[str],
    nodes: Sequence[str],
    problems: Problems,
) -> pa.Table:
    """Validate ``raw``; register and return the typed ``rows`` table of the rows that passed."""
    typed = validate_rows(con, parsed, raw, recipes, nodes, problems)
    # The typed Arrow table is queried in place (no copy into DuckDB's storage); exports copy it.
    con.register("rows", typed)
    return typed


def empty_typed_table() -> pa.Table:
    """The ``rows`` table of a site without rows."""
    names = [*(f.name for f in STRING_SCHEMA_FIELDS)]
    raw = pa.table({name: pa.array([], pa.string()) for name in names})
    raw = raw.append_column("_file", pa.array([], pa.int32())).append_column("_row", pa.array([], pa.int32()))
    return _typed_table(raw)


def validate_rows(
    con: duckdb.DuckDBPyConnection,
    parsed: Sequence[ParsedFile],
    raw: pa.Table,
    recipes: Sequence[str],
    nodes: Sequence[str],
    problems: Problems,
) -> pa.Table:
    """Check every cell of ``raw`` in one SQL pass; return the typed rows that passed, in order."""
    con.register("raw", raw)
    con.register("_recipes", pa.table({"slug": pa.array(list(recipes), pa.string())}))
    con.register("_nodes", pa.table({"id": pa.array(list(nodes), pa.string())}))
    try:
        bad = con.execute(_VALIDATE_SQL).fetchall()
        for file_index, row, tagged in bad:
            item = parsed[file_index]
            column, _, message = tagged.partition("\x1f")
            if (row, column) in item.reported:
                continue
            problems.error(item.source.rel, item.line_of(row), message)
    finally:
        for name in ("raw", "_recipes", "_nodes"):
            con.unregister(name)
    if bad:
        failed = {(f, r) for f, r, _ in bad}
        keep = [
            (f, r) not in failed
            for f, r in zip(raw.column("_file").to_pylist(), raw.column("_row").to_pylist(), strict=True)
        ]
        raw = raw.filter(pa.array(keep))
    return _typed_table(raw)

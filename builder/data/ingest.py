"""Load parsed rows into DuckDB, checking every cell in bulk.

The parsed rows arrive as one all-string Arrow table. One SQL pass computes, per row, the list of
problems (type, range, date validity, unknown recipe or node, no metric); rows without problems are
cast into the typed ``rows`` table. Nothing is coerced: a cell either matches its exact textual form
or is reported, so the typed table holds exactly the values written in the files.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import Executor, ThreadPoolExecutor
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from builder.content.models import (
    CONCURRENCY_NEEDED,
    FLOAT_ROW_FIELDS,
    FORMULA_STARTS,
    INT_ROW_FIELDS,
    METRICS,
    REQUIRED_ROW_FIELDS,
    ROW_SCHEMA,
    ROW_TEXT_PATTERN,
    SPREADS,
    TEXT_ROW_FIELDS,
    VERSION_PATTERN,
    ColumnKind,
    spread_without_metric,
)
from builder.data.rowfile import take_rows
from builder.data.rows import STRING_SCHEMA_FIELDS, ParsedFile
from builder.errors import Problems
from builder.yamlio import CONTROL_CHARACTERS

if TYPE_CHECKING:
    import duckdb  # the caller's connection; importing it here would cost builds that validate nothing

_INT_RE = r"^[0-9]+$"
_FLOAT_RE = r"^([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?$"
_DATE_RE = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$"
_ZERO_RE = r"^[0.]*([eE][+-]?[0-9]+)?$"
"""A number written as zero: any other that casts to 0 underflowed (``1e-400``)."""
_TEXT_PATTERNS = {"engine_version": VERSION_PATTERN}
"""The pattern of each text column that is not :data:`ROW_TEXT_PATTERN`."""

ARROW_TYPES: dict[ColumnKind, pa.DataType] = {
    "date": pa.date32(),
    "text": pa.string(),
    "integer": pa.int64(),
    "number": pa.float64(),
}
"""The Arrow type of each kind of row column (DuckDB reads them as DATE, VARCHAR, BIGINT, DOUBLE)."""
ROWS_SCHEMA = pa.schema(
    [
        ("row_id", pa.int32()),
        ("file_id", pa.int32()),
        ("file_row", pa.int32()),
        *((column.name, ARROW_TYPES[column.kind]) for column in ROW_SCHEMA.values()),
    ]
)
"""The typed ``rows`` table: position in the build, file and row in the file, then every row field."""


def _minimum(column: str) -> int:
    """The declared smallest value of an integer column (cells are digits only, so at least 0)."""
    minimum = ROW_SCHEMA[column].minimum
    return 0 if minimum is None else minimum


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


def _float_ok(col: str) -> str:
    """True for a cell the column takes (blank aside): a finite number in the plain form that casts
    to what it says (nothing underflows to 0), above the column's exclusive bound, or ``inf`` (any
    case) where the column takes it."""
    column = ROW_SCHEMA[col]
    ok = (
        f"(regexp_full_match({col}, '{_FLOAT_RE}') AND coalesce(isfinite(TRY_CAST({col} AS DOUBLE)), false)"
        f" AND (TRY_CAST({col} AS DOUBLE) <> 0 OR regexp_full_match({col}, '{_ZERO_RE}'))"
    )
    if column.above is not None:
        ok += f" AND TRY_CAST({col} AS DOUBLE) > {column.above}"
    ok += ")"
    if column.infinite:
        ok = f"({ok} OR lower({col}) = 'inf')"
    return ok


def _text_check(col: str) -> str:
    """Control characters, a formula start, spaces around a version: what a text cell may not hold."""
    pattern = _TEXT_PATTERNS.get(col, ROW_TEXT_PATTERN)
    control = f"[{CONTROL_CHARACTERS}]"
    return f"""CASE WHEN {col} IS NULL OR regexp_full_match({col}, {_q(pattern)}) THEN NULL
        WHEN regexp_matches({col}, '{control}')
            THEN '{col} holds the control character '
                || printf('U+%04X', unicode(regexp_extract({col}, '{control}')))
                || ' at character ' || (length(regexp_extract({col}, '^[^{CONTROL_CHARACTERS}]*')) + 1)
                || '; text may hold tabs and line breaks, no other control character'
        WHEN regexp_matches({col}, '^[{FORMULA_STARTS}]')
            THEN '{col} begins with ''' || left({col}, 1) || ''': a spreadsheet opening the downloads '
                || 'would run it as a formula; write it otherwise'
        WHEN {col} = '' THEN NULL
        ELSE '{col} ''' || left({col}, 80) || ''' has spaces around it; remove them' END"""


def _float_check(col: str) -> str:
    column = ROW_SCHEMA[col]
    if column.above is not None:
        words = " or inf" if column.infinite else ""
        return f"""CASE WHEN {_blank(col)} OR {_float_ok(col)} THEN NULL
        WHEN regexp_full_match({col}, '^[0-9]+,[0-9]+$')
            THEN '{col} ''' || {col} || ''' uses a decimal comma; write a point'
        ELSE '{col} must be a number > {column.above:g}{words}, not ''' || {col} || '''' END"""
    return f"""CASE WHEN {_blank(col)} THEN NULL
        WHEN {_float_ok(col)} THEN NULL
        WHEN regexp_full_match({col}, '{_FLOAT_RE}') AND isfinite(TRY_CAST({col} AS DOUBLE))
            THEN '{col} ''' || {col} || ''' is too small to store (it would be 0)'
        WHEN regexp_full_match({col}, '^[0-9]+,[0-9]+$')
            THEN '{col} ''' || {col} || ''' uses a decimal comma; write a point'
        WHEN regexp_full_match(lower({col}), '^[+-]?(nan|inf|infinity)$')
            THEN '{col} must be a finite number, not ''' || {col} || ''''
        WHEN starts_with({col}, '-') THEN '{col} must be >= 0, not ' || {col}
        ELSE '{col} must be a number, not ''' || {col} || '''' END"""


# Text columns with a shape of their own (the plain text patterns are _text_check's).
_PATTERNED = tuple(
    c.name for c in ROW_SCHEMA.values() if c.pattern not in (None, ROW_TEXT_PATTERN, VERSION_PATTERN)
)
_SHAPES = {"time": "HH:MM (00:00 to 23:59)"}
"""How a message names the form of each patterned text column."""
_NEEDED = tuple(c for c in ROW_SCHEMA.values() if c.required_unless is not None)


def _pattern_check(col: str) -> str:
    return f"""CASE WHEN {_blank(col)} OR regexp_full_match({col}, {_q(ROW_SCHEMA[col].pattern or "")}) THEN NULL
        ELSE '{col} must be {_SHAPES[col]}, not ''' || {col} || '''' END"""


def _needed_message(col: str) -> str:
    return CONCURRENCY_NEEDED if col == "concurrency" else f"missing value for {col}"


def _value_checks() -> list[tuple[str, str]]:
    """Checks that read one cell (and whether its recipe or node exists), as (column, SQL)."""
    checks: list[tuple[str, str]] = [
        (
            "date",
            f"""CASE WHEN {_blank("date")} THEN NULL
        WHEN NOT regexp_full_match(date, '{_DATE_RE}')
            THEN 'date \'\'\' || date || \'\'\' is not an ISO date (YYYY-MM-DD)'
        WHEN TRY_CAST(date AS DATE) IS NULL OR date < '0001' THEN 'date \'\'\' || date || \'\'\' does not exist' END""",
        ),
        ("engine_version", _text_check("engine_version")),
        (
            "prompt_tokens",
            f"""CASE WHEN {_blank("prompt_tokens")} OR prompt_tokens = 'unknown' THEN NULL
        WHEN NOT regexp_full_match(prompt_tokens, '{_INT_RE}')
            THEN 'prompt_tokens must be a whole number > 0 (or unknown), not \'\'\' || prompt_tokens || \'\'\'\'
        WHEN TRY_CAST(prompt_tokens AS BIGINT) IS NULL THEN 'prompt_tokens is too large'
        WHEN CAST(prompt_tokens AS BIGINT) < 1 THEN 'prompt_tokens must be > 0, not ' || prompt_tokens
        END""",
        ),
    ]
    checks.extend((col, _int_check(col, _minimum(col))) for col in INT_ROW_FIELDS)
    checks.extend((col, _float_check(col)) for col in FLOAT_ROW_FIELDS)
    checks.extend((col, _pattern_check(col)) for col in _PATTERNED)
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
    return checks


def _checks() -> list[str]:
    """Each check yields NULL or ``column<US>message``; the column lets known problems be dropped."""
    all_blank = " AND ".join(_blank(c) for c in REQUIRED_ROW_FIELDS)
    checks: list[tuple[str, str]] = [("", f"CASE WHEN {all_blank} THEN 'blank line' END")]
    for col in REQUIRED_ROW_FIELDS:
        checks.append(
            (
                col,
                f"CASE WHEN {_blank(col)} AND NOT ({all_blank}) THEN 'missing required value for {col}' END",
            )
        )
    checks.extend(_value_checks())
    for metric, spread in SPREADS.items():
        checks.append(
            (
                spread,
                f"CASE WHEN NOT {_blank(spread)} AND {_blank(metric)} "
                f"THEN {_q(spread_without_metric(spread, metric))} END",
            )
        )
    for column in _NEEDED:
        other = column.required_unless or ""
        checks.append(
            (
                column.name,
                f"CASE WHEN {_blank(column.name)} AND {_blank(other)} "
                f"AND NOT ({all_blank}) THEN {_q(_needed_message(column.name))} END",
            )
        )
    checks.extend((col, _text_check(col)) for col in TEXT_ROW_FIELDS)
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
    parts.append(
        f"regexp_full_match(date, '{_DATE_RE}') AND TRY_CAST(date AS DATE) IS NOT NULL AND date >= '0001'"
    )
    parts.append(f"regexp_full_match(engine_version, {_q(VERSION_PATTERN)})")
    parts.extend(
        f"({col} IS NULL OR regexp_full_match({col}, {_q(ROW_TEXT_PATTERN)}))" for col in TEXT_ROW_FIELDS
    )
    parts.append(
        f"(prompt_tokens = 'unknown' OR (regexp_full_match(prompt_tokens, '{_INT_RE}') "
        "AND coalesce(TRY_CAST(prompt_tokens AS BIGINT) >= 1, false)))"
    )
    for col in INT_ROW_FIELDS:
        parts.append(
            f"({_blank(col)} OR (regexp_full_match({col}, '{_INT_RE}') "
            f"AND coalesce(TRY_CAST({col} AS BIGINT) >= {_minimum(col)}, false)))"
        )
    for col in FLOAT_ROW_FIELDS:
        parts.append(f"({_blank(col)} OR {_float_ok(col)})")
    for col in _PATTERNED:
        parts.append(f"({_blank(col)} OR regexp_full_match({col}, {_q(ROW_SCHEMA[col].pattern or '')}))")
    for column in _NEEDED:
        parts.append(f"NOT ({_blank(column.name)} AND {_blank(column.required_unless or '')})")
    for metric, spread in SPREADS.items():
        parts.append(f"NOT (NOT {_blank(spread)} AND {_blank(metric)})")
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


# Columns whose distinct values are few (dates, references, settings, rates, times): each distinct
# value is checked once by the SQL above. Metrics are as many as rows: they get a vectorised test.
_PLAIN_NUMBERS = tuple(
    c.name for c in ROW_SCHEMA.values() if c.kind == "number" and c.above is None and not c.infinite
)
_BY_VALUE = tuple(
    name
    for name in ROW_SCHEMA
    if name not in _PLAIN_NUMBERS and (name not in TEXT_ROW_FIELDS or name in _PATTERNED)
)


def _as_null(column: pa.ChunkedArray, *texts: str) -> pa.ChunkedArray:
    """Cells equal to one of ``texts`` become nulls ("not measured" / "not recorded").

    The strings are not copied: each chunk gets a new validity bitmap over its own buffers.
    """
    chunks = []
    for chunk in column.chunks:
        drop = pc.equal(chunk, texts[0])
        for text in texts[1:]:
            drop = pc.or_(drop, pc.equal(chunk, text))
        drop = pc.fill_null(drop, False)
        if not pc.any(drop).as_py():
            chunks.append(chunk)
        elif chunk.offset:
            chunks.append(pc.if_else(drop, pa.scalar(None, pa.string()), chunk))
        else:
            valid = pc.and_not(pc.is_valid(chunk), drop)
            _, offsets, data = chunk.buffers()
            chunks.append(pa.StringArray.from_buffers(len(chunk), offsets, data, valid.buffers()[1]))
    return pa.chunked_array(chunks, pa.string())


def _typed_table(raw: pa.Table) -> pa.Table:
    """Cast validated string columns to their types with Arrow kernels (no Python loop).

    Text columns share the parsed table's buffers (only validity bitmaps are new).
    """
    out: dict[str, pa.ChunkedArray | pa.Array] = {
        "file_id": raw.column("_file"),
        "file_row": raw.column("_row"),
    }
    absent: dict[pa.DataType, pa.Array] = {}
    for column in ROW_SCHEMA.values():
        cells = raw.column(column.name)
        # Required cells are never empty here; an optional one empty is "not measured" or "not recorded".
        nulls = column.words if column.required else ("", *column.words)
        if nulls:
            cells = _as_null(cells, *nulls)
        if column.kind != "text" and column.empty is None and cells.null_count == len(cells):
            # A column no row gives: every such column of a type shares one array of nulls (most of
            # the optional columns, each otherwise eight bytes a row).
            kind = ARROW_TYPES[column.kind]
            out[column.name] = absent.setdefault(kind, pa.nulls(len(cells), kind))
            continue
        if column.kind != "text":
            cells = pc.cast(cells, ARROW_TYPES[column.kind])
        if column.empty is not None:
            cells = pc.fill_null(cells, column.empty)
        out[column.name] = cells
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


def _blank_cells(column: pa.ChunkedArray) -> pa.ChunkedArray:
    return pc.fill_null(pc.equal(column, ""), True)


def _dictionary(column: pa.ChunkedArray) -> pa.ChunkedArray:
    # One dictionary for every chunk (the encoder's memo table is shared; unify makes sure).
    return pc.dictionary_encode(column).unify_dictionaries()


def _values_ok(con: duckdb.DuckDBPyConnection, encoded: Sequence[pa.ChunkedArray], rows: int) -> np.ndarray:
    """Per row, whether the value checks of every :data:`_BY_VALUE` column pass: each distinct value
    (``encoded``: the columns dictionary-encoded) is checked once, all columns in one SQL query."""
    refs = {
        "recipe": "recipe IN (SELECT slug FROM _recipes) AS recipe_ok",
        "node": "node IN (SELECT id FROM _nodes) AS node_ok",
    }
    selects: list[str] = []
    dictionaries: list[pa.Array] = []
    for number, (column, codes) in enumerate(zip(_BY_VALUE, encoded, strict=True)):
        values = codes.chunk(0).dictionary if codes.num_chunks else pa.array([], pa.string())
        dictionaries.append(values)
        if not len(values):
            continue  # a column no row gives: its null cells are judged below without a query
        con.register(
            f"_values{number}",
            pa.table({column: values, "_i": pa.array(np.arange(len(values), dtype=np.int32))}),
        )
        conditions = [f"({sql}) IS NULL" for col, sql in _value_checks() if col == column]
        if column in REQUIRED_ROW_FIELDS:
            conditions.append(f"NOT {_blank(column)}")
        extra = f", {refs[column]}" if column in refs else ""
        selects.append(
            f"SELECT {number} AS c, _i FROM (SELECT *{extra} FROM _values{number}) WHERE {' AND '.join(conditions)}"
        )
    empty = {"c": np.zeros(0, np.int32), "_i": np.zeros(0, np.int32)}
    try:
        good = con.execute(" UNION ALL ".join(selects)).fetchnumpy() if selects else empty
    finally:
        for number, values in enumerate(dictionaries):
            if len(values):
                con.unregister(f"_values{number}")
    ok = np.ones(rows, dtype=bool)
    for number, (column, codes) in enumerate(zip(_BY_VALUE, encoded, strict=True)):
        if not codes.num_chunks:
            continue
        size = len(dictionaries[number])
        # The last slot stands for a null cell (column absent from its file): as good as an empty one.
        flags = np.zeros(size + 1, dtype=bool)
        flags[np.asarray(good["_i"][good["c"] == number], dtype=np.int64)] = True
        flags[size] = column not in REQUIRED_ROW_FIELDS
        indices = pa.chunked_array([chunk.indices for chunk in codes.chunks])
        ok &= flags[pc.fill_null(indices, size).to_numpy()]
    return ok


def _number_ok(column: pa.ChunkedArray) -> np.ndarray:
    """Blank, or digits with at most one point and fewer than 300 characters (a finite double): a
    subset of what the float check accepts, so a row it passes is valid; others go to the SQL."""
    digits = pc.ascii_is_decimal(pc.replace_substring(column, ".", "", max_replacements=1))
    short = pc.less(pc.binary_length(column), 300)
    ok: np.ndarray = pc.or_(_blank_cells(column), pc.fill_null(pc.and_(digits, short), False)).to_numpy()
    return ok


_FORMULA_BYTES = np.zeros(256, dtype=bool)
_FORMULA_BYTES[[ord(c) for c in FORMULA_STARTS]] = True


def _text_ok(column: pa.ChunkedArray) -> np.ndarray:
    """Null, or row text (:data:`ROW_TEXT_PATTERN`), erring only towards suspecting a cell.

    A regex per cell would cost more than the rest of the check: the bytes of each chunk are
    scanned at once for a control character (none, usually: then only each cell's first byte is
    looked at); a chunk that has one is matched cell by cell."""
    parts = [np.zeros(0, dtype=bool)]
    for chunk in column.chunks:
        n = len(chunk)
        _, offsets_buffer, data_buffer = chunk.buffers() if chunk.type == pa.string() else (None, None, None)
        if n == 0 or offsets_buffer is None or data_buffer is None:
            parts.append(
                pc.fill_null(pc.match_substring_regex(chunk, ROW_TEXT_PATTERN), True).to_numpy(False)
            )
            continue
        offsets = np.frombuffer(offsets_buffer, dtype=np.int32)[chunk.offset : chunk.offset + n + 1]
        data = np.frombuffer(data_buffer, dtype=np.uint8)
        body = data[offsets[0] : offsets[-1]]
        if len(body) and (int(body.min()) < 32 or bool((body == 127).any())):
            control = (body < 9) | (body == 11) | (body == 12) | ((body > 13) & (body < 32)) | (body == 127)
            if bool(control.any()):
                parts.append(
                    pc.fill_null(pc.match_substring_regex(chunk, ROW_TEXT_PATTERN), True).to_numpy(False)
                )
                continue
        lengths = np.diff(offsets)
        first = data[np.minimum(offsets[:-1], max(len(data) - 1, 0))] if len(data) else np.zeros(n, np.uint8)
        ok = (lengths == 0) | ~_FORMULA_BYTES[first]
        if chunk.null_count:
            ok |= ~chunk.is_valid().to_numpy(zero_copy_only=False)
        parts.append(ok)
    return np.concatenate(parts)


def _metric_given(raw: pa.Table) -> np.ndarray:
    given = np.zeros(raw.num_rows, dtype=bool)
    for column in METRICS:
        given |= ~_blank_cells(raw.column(column)).to_numpy()
    return given


def _passing_rows(con: duckdb.DuckDBPyConnection, raw: pa.Table, pool: Executor) -> np.ndarray:
    """Rows every check passes, found without building a message: the SQL below then runs only on
    the others (none, usually). Only ever errs towards suspecting a valid row.

    The column checks are Arrow kernels, which release the GIL: they run on ``pool``.
    """
    # A column no file gives (most optional ones) is null throughout: nothing in it to check.
    given = {name for name in raw.column_names if raw.column(name).null_count < raw.num_rows}
    numbers = [pool.submit(_number_ok, raw.column(column)) for column in _PLAIN_NUMBERS if column in given]
    numbers += [pool.submit(_text_ok, raw.column(column)) for column in TEXT_ROW_FIELDS if column in given]
    measured = pool.submit(_metric_given, raw)
    encoded = list(pool.map(_dictionary, [raw.column(column) for column in _BY_VALUE]))
    ok = _values_ok(con, encoded, raw.num_rows)
    for future in numbers:
        ok &= future.result()
    ok &= measured.result()
    for metric, spread in SPREADS.items():
        if spread not in given:
            continue
        alone = pc.and_(pc.invert(_blank_cells(raw.column(spread))), _blank_cells(raw.column(metric)))
        ok &= ~alone.to_numpy()
    for column in _NEEDED:
        either = pc.and_(
            _blank_cells(raw.column(column.name)), _blank_cells(raw.column(column.required_unless or ""))
        )
        ok &= ~either.to_numpy()
    return ok


def _typed_if_valid(raw: pa.Table) -> pa.Table | None:
    """The typed table, or None when a cell does not cast (it then has a problem to report)."""
    try:
        return _typed_table(raw)
    except pa.ArrowInvalid:
        return None


def validate_rows(
    con: duckdb.DuckDBPyConnection,
    parsed: Sequence[ParsedFile],
    raw: pa.Table,
    recipes: Sequence[str],
    nodes: Sequence[str],
    problems: Problems,
) -> pa.Table:
    """Check every cell of ``raw``; return the typed rows that passed, in order.

    A vectorised pass finds the rows that certainly pass; the SQL that builds messages runs on
    the rest only, so the messages are those of checking every row in SQL.
    """
    con.register("_recipes", pa.table({"slug": pa.array(list(recipes), pa.string())}))
    con.register("_nodes", pa.table({"id": pa.array(list(nodes), pa.string())}))
    try:
        with ThreadPoolExecutor(max_workers=2) as pool:
            # Cast while checking: when every row passes (the usual case) this is the result.
            typed = pool.submit(_typed_if_valid, raw)
            passing = _passing_rows(con, raw, pool)
            suspects = np.flatnonzero(~passing)
            bad: list[tuple[int, int, str]] = []
            if len(suspects):
                con.register("raw", take_rows(raw, pa.array(suspects)))
                try:
                    bad = con.execute(_VALIDATE_SQL).fetchall()
                finally:
                    con.unregister("raw")
            speculative = typed.result()
    finally:
        for name in ("_recipes", "_nodes"):
            con.unregister(name)
    for file_index, row, tagged in bad:
        item = parsed[file_index]
        column, _, message = tagged.partition("\x1f")
        if (row, column) in item.reported:
            continue
        problems.error(item.source.rel, item.line_of(row), message)
    # A cell the parser already refused (a JSON value of the wrong type) fails its row too, even
    # when the text it was kept as would pass the SQL.
    refused = {(f, r) for f, r, _ in bad} | {
        (f, r) for f, item in enumerate(parsed) for r, _ in item.reported
    }
    if not refused and speculative is not None:
        return speculative
    if refused:
        key = raw.column("_file").to_numpy().astype(np.int64) << 32 | raw.column("_row").to_numpy()
        failed = np.unique(np.array([(f << 32) | r for f, r in refused], dtype=np.int64))
        keep = ~np.isin(key, failed)
        raw = pc.filter(raw, pa.array(keep))
    return _typed_table(raw)

"""Parse benchmark row files exactly, without losing or coercing anything.

Files are parsed into all-string Arrow tables (pyarrow's CSV reader: fast, and no type sniffing that
could round a late float into an integer column); types and ranges are then checked by SQL in
:mod:`builder.data.ingest`. Each table carries ``_file`` (index into the list of files) and ``_row`` (the
row's position in its file) so every problem can be traced back to its physical line, which is only
computed for files that have a problem.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from builder.content.models import (
    REQUIRED_ROW_FIELDS,
    ROW_FIELDS,
    ROW_SCHEMA,
)
from builder.data.csvbatch import CsvBatches
from builder.data.rowfile import (
    STRING_SCHEMA_FIELDS,
    ParsedFile,
    RowFile,
    empty_string_table,
    normalise,
    read_string_csv,
    strip_bom,
)
from builder.errors import Problems
from builder.files import UNREADABLE, InputError, excerpt, readable, walk
from builder.limits import (
    HEADER_COLUMNS,
    PARQUET_DECODED_BYTES,
    PARQUET_METADATA_BYTES,
    PARQUET_ROW_GROUPS,
    ROWS_PER_FILE,
)

__all__ = [
    "PARSERS",
    "ROW_FILE_SUFFIXES",
    "STRING_SCHEMA_FIELDS",
    "ParsedFile",
    "RowFile",
    "discover_row_files",
    "parse_row_files",
    "read_string_csv",
    "row_file_kind",
    "row_file_order",
]

_ROW_FIELD_SET = frozenset(ROW_FIELDS)


def _ragged_records(data: bytes) -> list[tuple[int, int, int]]:
    """(line, expected, found) for every record whose field count differs from the header's."""
    text = strip_bom(data).decode("utf-8")
    reader = csv.reader(io.StringIO(text, newline=""))
    header = next(reader, [])
    out = []
    prev = reader.line_num
    for record in reader:
        if len(record) not in (0, len(header)):
            out.append((prev + 1, len(header), len(record)))
        prev = reader.line_num
    return out


def _decode_check(source: RowFile, data: bytes, problems: Problems) -> str | None:
    try:
        return strip_bom(data).decode("utf-8")
    except UnicodeDecodeError as exc:
        body = strip_bom(data)
        line = body.count(b"\n", 0, exc.start) + 1
        problems.error(
            source.rel,
            line,
            f"not valid UTF-8 (byte 0x{body[exc.start]:02x}); save the file as UTF-8",
        )
        return None


def _check_header(rel: str, header: list[str], problems: Problems) -> bool:
    ok = True
    seen: set[str] = set()
    for name in header:
        if name in seen:
            problems.error(rel, 1, f"duplicate column '{excerpt(name)}'")
            ok = False
        seen.add(name)
        if name not in _ROW_FIELD_SET:
            hint = ""
            if any(sep in name for sep in (";", "\t", "|")):
                hint = " (rows must be comma-separated)"
            elif name.strip() in _ROW_FIELD_SET:
                hint = f" (remove the spaces around '{name.strip()}')"
            problems.error(rel, 1, f"unknown column '{excerpt(name)}'{hint}")
            ok = False
    for name in REQUIRED_ROW_FIELDS:
        if name not in seen and all(name != h.strip() for h in header):
            problems.error(rel, 1, f"missing required column '{name}'")
            ok = False
    return ok


def parse_csv(source: RowFile, problems: Problems) -> ParsedFile:
    data = source.read()
    text = _decode_check(source, data, problems)
    if text is None:
        return ParsedFile(source, None)
    first = text.split("\n", 1)[0].rstrip("\r")
    if not first.strip():
        problems.error(source.rel, 1, "empty file or missing header line")
        return ParsedFile(source, None)
    if "\r" in first:
        problems.error(
            source.rel, 1, "lines end in a bare carriage return (\\r): save the file with LF or CRLF endings"
        )
        return ParsedFile(source, None)
    if first.count(",") >= HEADER_COLUMNS:  # before the line is split into that many names
        problems.error(
            source.rel,
            1,
            f"{first.count(',') + 1:,} columns in the header: a row file has at most {HEADER_COLUMNS}",
        )
        return ParsedFile(source, None)
    try:
        header = next(csv.reader([first]))
    except csv.Error as exc:
        problems.error(source.rel, 1, f"cannot parse the header line: {exc}")
        return ParsedFile(source, None)
    if len(header) == 1 and (sep := next((c for c in ";\t|" if c in header[0]), None)):
        shown = {"\t": "tabs"}.get(sep, f"'{sep}'")
        problems.error(source.rel, 1, f"rows must be comma-separated; this file separates with {shown}")
        return ParsedFile(source, None)
    if not _check_header(source.rel, header, problems):
        return ParsedFile(source, None)
    body = strip_bom(data).rstrip(b"\r\n")
    if b"\n" not in body:
        problems.error(source.rel, 1, "no rows: the file holds only its header line")
        return ParsedFile(source, None)
    has_quote = b'"' in body
    if not _whole(source, body, has_quote, problems):
        return ParsedFile(source, None)
    over = _row_over_limit(body, has_quote)
    if over is not None:
        problems.error(
            source.rel, over, f"more than {ROWS_PER_FILE:,} rows: a row file has at most {ROWS_PER_FILE:,}"
        )
        return ParsedFile(source, None)
    try:
        table, ragged = read_string_csv(body, header, skip_rows=1, newlines_in_values=has_quote)
    except pa.ArrowInvalid as exc:
        problems.error(source.rel, None, f"cannot parse as CSV: {excerpt(str(exc))}")
        return ParsedFile(source, None)
    parsed = ParsedFile(source, table, ragged=ragged, plain=not ragged and not has_quote)
    if ragged:
        for line, expected, found in _ragged_records(data):
            problems.error(
                source.rel,
                line,
                f"expected {expected} fields (as in the header), found {found}; "
                "a decimal comma or an unquoted comma splits a cell",
            )
    return parsed


def _row_over_limit(body: bytes, has_quote: bool) -> int | None:
    """The line where the first row past :data:`ROWS_PER_FILE` starts, or None. ``body`` is the
    file from its header line on; the rows are counted before anything is parsed (a row is a line
    unless a quoted cell holds a line break)."""
    if body.count(b"\n") <= ROWS_PER_FILE:
        return None
    if not has_quote:
        return ROWS_PER_FILE + 2
    reader = csv.reader(io.StringIO(body.decode("utf-8"), newline=""))
    start = 1
    for number, _record in enumerate(reader):  # the header is record 0
        if number > ROWS_PER_FILE:
            return start
        start = reader.line_num + 1
    return None


LONGEST_LINE = 1 << 20
"""Longest line of a CSV file, in bytes (the CSV reader's block): no benchmark row is near it."""


def _whole(source: RowFile, body: bytes, has_quote: bool, problems: Problems) -> bool:
    """Whether ``body`` has no line too long to parse and no quote left open at its end; else the
    problem is reported at its line."""
    if len(body) > LONGEST_LINE:
        ends = np.flatnonzero(np.frombuffer(body, dtype=np.uint8) == 10)
        starts = np.concatenate([[0], ends + 1])
        lengths = np.concatenate([ends, [len(body)]]) - starts
        long = np.flatnonzero(lengths > LONGEST_LINE)
        if len(long):
            problems.error(
                source.rel,
                int(long[0]) + 1,
                f"line of {int(lengths[long[0]]):,} bytes: a row is at most {LONGEST_LINE:,} bytes",
            )
            return False
    if has_quote and body.count(b'"') % 2:
        reader = csv.reader(io.StringIO(body.decode("utf-8"), newline=""), strict=True)
        start = 1
        try:
            for _record in reader:
                start = reader.line_num + 1
        except csv.Error:
            pass
        problems.error(source.rel, start, 'a quote (") opened in this record is never closed')
        return False
    return True


class _JsonNumber(str):
    """A JSON number with a fraction or exponent, kept as written: the SQL checks then see what the
    file says (``1e-400`` would be 0.0 as a float, silently)."""

    __slots__ = ()


def _json_cell(name: str, value: Any) -> tuple[str | None, str | None]:
    """Convert one JSON value to the CSV text form; (text, error)."""
    if value is None:
        return "", None
    if isinstance(value, _JsonNumber):
        if ROW_SCHEMA[name].kind == "number":
            return str(value), None
        value = float(value)
    kind = ROW_SCHEMA[name].kind
    if kind == "integer":
        if value in ROW_SCHEMA[name].words:
            return value, None
        if isinstance(value, bool) or not isinstance(value, int):
            return None, f"'{name}' must be an integer, not {excerpt(json.dumps(value))}"
        return str(value), None
    if kind == "number":
        if ROW_SCHEMA[name].infinite and isinstance(value, str) and value.lower() == "inf":
            return value, None
        if isinstance(value, bool) or not isinstance(value, int | float):
            words = ' or "inf"' if ROW_SCHEMA[name].infinite else ""
            return None, f"'{name}' must be a number{words}, not {excerpt(json.dumps(value))}"
        if isinstance(value, float) and not math.isfinite(value):
            return None, f"'{name}' must be a finite number, not {value}"
        return repr(value) if isinstance(value, float) else str(value), None
    if not isinstance(value, str):
        return None, f"'{name}' must be a string, not {excerpt(json.dumps(value))}"
    if not _encodable(value):
        return None, f"'{name}' holds a lone surrogate (an escape like \\ud800 that is not a character)"
    return value, None


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"duplicate key '{key}'")
        out[key] = value
    return out


def _reject_constant(name: str) -> float:
    raise ValueError(f"'{name}' is not a finite number")


def parse_jsonl(source: RowFile, problems: Problems) -> ParsedFile:
    text = _decode_check(source, source.read(), problems)
    if text is None:
        return ParsedFile(source, None)
    columns: dict[str, list[str]] = {name: [] for name in ROW_FIELDS}
    rows: list[int] = []
    reported: set[tuple[int, str]] = set()
    lines = text.split("\n")
    while lines and not lines[-1].strip():
        lines.pop()
    if len(lines) > ROWS_PER_FILE:
        problems.error(
            source.rel,
            ROWS_PER_FILE + 1,
            f"more than {ROWS_PER_FILE:,} rows: a row file has at most {ROWS_PER_FILE:,}",
        )
        return ParsedFile(source, None)
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            problems.error(source.rel, number, "blank line (one JSON object per line)")
            continue
        if len(line) > LONGEST_LINE:
            problems.error(
                source.rel, number, f"line of {len(line):,} characters: a row is at most {LONGEST_LINE:,}"
            )
            continue
        try:
            obj = json.loads(
                line,
                object_pairs_hook=_no_duplicates,
                parse_constant=_reject_constant,
                parse_float=_JsonNumber,
            )
        except ValueError as exc:
            problems.error(source.rel, number, f"invalid JSON: {exc}")
            continue
        except RecursionError:
            problems.error(source.rel, number, "invalid JSON: nested too deeply")
            continue
        if not isinstance(obj, dict):
            problems.error(source.rel, number, "each line must be a JSON object")
            continue
        if len(obj) > HEADER_COLUMNS:
            problems.error(source.rel, number, f"{len(obj):,} keys: a row has at most {HEADER_COLUMNS}")
            continue
        for key in obj:
            if key not in _ROW_FIELD_SET:
                problems.error(source.rel, number, f"unknown key '{excerpt(key)}'")
        cells: dict[str, str] = {}
        for name in ROW_FIELDS:
            cell, error = _json_cell(name, obj.get(name))
            if error:
                # Reported here; the line still goes through the SQL checks of its other cells,
                # so every problem of the line shows in one pass.
                problems.error(source.rel, number, error)
                reported.add((number, name))
                cell = json.dumps(obj.get(name))  # ASCII: a lone surrogate is escaped
            cells[name] = cell or ""
        for name in ROW_FIELDS:
            columns[name].append(cells[name])
        rows.append(number)
    table = pa.table({name: pa.array(columns[name], pa.string()) for name in ROW_FIELDS})
    return ParsedFile(source, table.append_column("_line", pa.array(rows, pa.int32())), reported=reported)


def _parquet_type_error(name: str, kind: pa.DataType) -> str | None:
    """Why a Parquet column's type cannot hold the field, or None when it can (exactly)."""
    if pa.types.is_dictionary(kind):  # dictionary encoded: its values are what the cells hold
        kind = kind.value_type
    if pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_null(kind):
        return None
    declared = ROW_SCHEMA[name].kind
    if declared == "integer":
        return None if pa.types.is_integer(kind) else f"'{name}' must be an integer column, not {kind}"
    if declared == "number":
        if pa.types.is_integer(kind) or pa.types.is_floating(kind):
            return None
        return f"'{name}' must be a number column, not {kind}"
    if declared == "date":
        return None if pa.types.is_date32(kind) else f"'{name}' must be a date or string column, not {kind}"
    return f"'{name}' must be a string column, not {kind}"


def parse_parquet(source: RowFile, problems: Problems) -> ParsedFile:
    """A Parquet file of rows (for bulk imports): columns named like CSV headers.

    Every cell is turned into the text a CSV file would hold (numbers in their shortest exact form,
    dates as ISO text), then validated by the same SQL as CSV cells, so a Parquet file loads exactly
    what it holds or is reported. A column whose type cannot hold its field exactly (a float in an
    integer field, a timestamp for a date) is an error. Problems name the 1-based row number.

    The file's metadata is checked against the limits (:mod:`builder.limits`) before any cell is
    read, then the cells are read a row group at a time, text columns as dictionaries, and their
    decoded size is counted before they are expanded: a few kilobytes that decompress to gigabytes
    are refused, never held.
    """
    import pyarrow.parquet as pq

    data = source.read()
    footer = int.from_bytes(data[-8:-4], "little") if len(data) >= 12 and data.endswith(b"PAR1") else 0
    if footer > PARQUET_METADATA_BYTES:
        problems.error(source.rel, None, f"metadata of {footer:,} bytes: at most {PARQUET_METADATA_BYTES:,}")
        return ParsedFile(source, None)
    try:
        schema = pq.ParquetFile(pa.BufferReader(data)).schema_arrow
        texts = [f.name for f in schema if _is_text(f.type)]
        reader = pq.ParquetFile(pa.BufferReader(data), read_dictionary=texts)
    except (pa.ArrowException, OSError) as exc:
        problems.error(source.rel, None, f"cannot read as Parquet: {exc}")
        return ParsedFile(source, None)
    meta = reader.metadata
    for count, limit, what in (
        (meta.num_columns, HEADER_COLUMNS, "columns"),
        (meta.num_row_groups, PARQUET_ROW_GROUPS, "row groups"),
        (meta.num_rows, ROWS_PER_FILE, "rows"),
    ):
        if count > limit:
            problems.error(source.rel, None, f"{count:,} {what}: a row file has at most {limit:,}")
            return ParsedFile(source, None)
    declared = sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups))
    if declared > PARQUET_DECODED_BYTES:
        problems.error(
            source.rel,
            None,
            f"{declared:,} bytes of cells once decompressed: a row file has at most {PARQUET_DECODED_BYTES:,}",
        )
        return ParsedFile(source, None)
    if not _check_header(source.rel, schema.names, problems):
        return ParsedFile(source, None)
    ok = True
    for field in schema:
        error = _parquet_type_error(field.name, field.type)
        if error is not None:
            problems.error(source.rel, None, error)
            ok = False
    if not ok:
        return ParsedFile(source, None)
    groups: list[pa.Table] = []
    decoded = 0
    for index in range(meta.num_row_groups):
        try:
            group = reader.read_row_group(index)
        except (pa.ArrowException, OSError) as exc:
            problems.error(source.rel, None, f"cannot read as Parquet: {exc}")
            return ParsedFile(source, None)
        decoded += sum(_decoded_bytes(column) for column in group.columns)
        if decoded > PARQUET_DECODED_BYTES:
            problems.error(
                source.rel,
                None,
                f"more than {PARQUET_DECODED_BYTES:,} bytes of cells once decompressed and decoded "
                f"(row group {index + 1} of {meta.num_row_groups:,}): a row file has at most {PARQUET_DECODED_BYTES:,}",
            )
            return ParsedFile(source, None)
        groups.append(
            pa.table({name: pc.cast(group.column(name), pa.string()) for name in group.column_names})
        )
    if not schema.names:
        return ParsedFile(source, None)
    if not groups:
        return ParsedFile(source, pa.table({name: pa.array([], pa.string()) for name in schema.names}))
    return ParsedFile(source, pa.concat_tables(groups))


def _is_text(kind: pa.DataType) -> bool:
    if pa.types.is_dictionary(kind):
        kind = kind.value_type
    return bool(pa.types.is_string(kind) or pa.types.is_large_string(kind))


def _decoded_bytes(column: pa.ChunkedArray) -> int:
    """Bytes the column takes once expanded: a dictionary column's values counted per row, from the
    lengths of its dictionary (without expanding it)."""
    total = 0
    for chunk in column.chunks:
        if isinstance(chunk, pa.DictionaryArray):
            lengths = pc.binary_length(chunk.dictionary)
            taken = pc.sum(pc.take(lengths, chunk.indices)).as_py()
            total += (taken or 0) + 4 * len(chunk)
        else:
            total += chunk.nbytes
    return total


PARSERS: dict[str, Callable[[RowFile, Problems], ParsedFile]] = {
    "csv": parse_csv,
    "jsonl": parse_jsonl,
    "parquet": parse_parquet,
}
ROW_FILE_SUFFIXES = (".csv", ".jsonl", ".parquet")


def row_file_kind(name: str) -> str | None:
    """``csv``, ``jsonl`` or ``parquet`` for a file named so (any case), else None (the file is
    ignored, with a warning)."""
    entry_name = name.rsplit("/", 1)[-1]
    dot = entry_name.rfind(".")
    # os.path.splitext's suffix: none when only dots come before the last one.
    suffix = entry_name[dot:].lower() if dot > 0 and entry_name[:dot].strip(".") else ""
    return suffix[1:] if suffix in ROW_FILE_SUFFIXES else None


def row_file_order(rel: str) -> str:
    """The key row files are ordered by: as ``PurePosixPath(rel).parts`` compare ("/" below every
    other character)."""
    return rel.replace("/", "\0")


def discover_row_files(root: Path, problems: Problems, *, read: bool = True) -> list[RowFile]:
    """Every ``*.csv``, ``*.jsonl`` and ``*.parquet`` under ``data/rows``, in a stable order (by path).

    Listed by :func:`builder.files.walk`, as the engine's input scan lists them: a symbolic link,
    a special file or an unreadable file is an error, any other file a warning (it is ignored).
    With ``read=False`` the files are not read here: :func:`parse_row_files` reads each when it
    parses it and keeps only the bytes it needs later (a big import does not sit in memory twice).
    """
    listing = walk(root / "data" / "rows", "data/rows/")
    found: list[tuple[str, str, str, str]] = []
    for name, entry in listing.files.items():
        path = entry.path
        kind = row_file_kind(name)
        if kind is None:
            problems.warn(name, None, "ignored: row files end in .csv, .jsonl or .parquet")
        elif not readable(path):
            problems.error(name, None, UNREADABLE)
        else:
            found.append((row_file_order(name), name, path, kind))
    for name, reason in sorted(listing.refused.items()):
        problems.error(name, None, reason)
    found.sort()
    out = [RowFile(rel, None, kind, path) for _, rel, path, kind in found]
    if read:
        kept = []
        for source in out:
            try:
                source.data = source.read()
            except InputError as exc:  # too big: refused before it is read
                problems.error(source.rel, None, exc.message)
                continue
            kept.append(source)
        return kept
    return out


def _batch_header(line: bytes) -> list[str] | None:
    """Column names of a header line shared by files parsed in one batch, or ``None`` when its files
    go alone (each then reports its own header problems)."""
    try:
        first = line.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if first.count(",") >= HEADER_COLUMNS:
        return None
    header = next(csv.reader([first]), [])
    return header if header and _check_header("", header, Problems()) else None


def _in_file_order(pieces: list[pa.Table]) -> pa.Table:
    """One table of every piece's rows in file order, then row order.

    Each piece is in that order and no file spans two pieces, so the result is a sequence of runs
    of consecutive rows of the pieces: those are concatenated without a copy, unless there are
    so many (files with different headers alternating) that one gather is cheaper.
    """
    if not pieces:
        return empty_string_table()
    combined = pa.concat_tables(pieces)
    if len(pieces) == 1:
        return combined
    file_ids = np.concatenate([p.column("_file").to_numpy() for p in pieces])
    if not bool(np.any(file_ids[1:] < file_ids[:-1])):
        return combined
    order = np.argsort(file_ids, kind="stable")
    breaks = np.flatnonzero(np.diff(order) != 1) + 1
    if len(breaks) > 256:
        return pc.take(combined, pa.array(order))
    starts = np.concatenate([[0], breaks])
    stops = np.concatenate([breaks, [len(order)]])
    return pa.concat_tables(
        [combined.slice(int(order[a]), int(b - a)) for a, b in zip(starts, stops, strict=True)]
    )


def parse_row_files(files: list[RowFile], problems: Problems) -> tuple[list[ParsedFile], pa.Table]:
    """Parse every file; return them and one all-string table with ``_file`` and ``_row`` columns.

    Rows are in file order, then line order. CSV files that share a header are parsed in batches
    (:mod:`builder.data.csvbatch`); anything unusual is parsed alone. A file read here whose lines
    cannot be told without its bytes (a quoted multi-line cell, a ragged record) keeps them in
    ``source.data``; the others are not kept.
    """
    parsed: list[ParsedFile | None] = [None] * len(files)
    alone: list[tuple[int, RowFile, bytes]] = []
    # One thread parses a batch while this one reads the files of the next.
    with ThreadPoolExecutor(max_workers=1) as pool:
        batches = CsvBatches(_batch_header, pool)
        for index, source in enumerate(files):
            try:
                data = source.read()
            except InputError as exc:  # too big: refused before it is read
                problems.error(source.rel, None, exc.message)
                parsed[index] = ParsedFile(source, None)
                continue
            # A lone file is parsed alone: a batch would only add its buffer (the preview's saves).
            if source.kind == "csv" and len(files) > 1 and batches.add(index, source, data):
                continue
            alone.append((index, source, data))
        batches.finish()
    for index, item in batches.parsed.items():
        parsed[index] = item
    pieces = list(batches.tables)
    for index, source, data in sorted(alone + batches.rejected, key=lambda member: member[0]):
        held = source.data
        source.data = data
        item = PARSERS[source.kind](source, problems)
        if held is None and (source.kind != "csv" or item.plain):
            source.data = None  # lines are known without the bytes
        parsed[index] = item
        if item.table is None:
            continue
        table = item.table
        item.table = None
        n = table.num_rows
        if "_line" in table.column_names:
            row_ids = table.column("_line").combine_chunks()
            table = table.drop_columns(["_line"])
        else:
            row_ids = pa.array(np.arange(n, dtype=np.int32))
        pieces.append(normalise(table, pa.array(np.full(n, index, dtype=np.int32)), row_ids))
    return [p for p in parsed if p is not None], _in_file_order(pieces)

"""Parse benchmark row files exactly, without losing or coercing anything.

Files are parsed into all-string Arrow tables (pyarrow's CSV reader: fast, and no type sniffing that
could round a late float into an integer column); types and ranges are then checked by SQL in
:mod:`builder.ingest`. Each table carries ``_file`` (index into the list of files) and ``_row`` (the
row's position in its file) so every problem can be traced back to its physical line, which is only
computed for files that have a problem.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from builder.errors import Problems
from builder.models import (
    FLOAT_ROW_FIELDS,
    INT_ROW_FIELDS,
    REQUIRED_ROW_FIELDS,
    ROW_FIELDS,
)

BOM = b"\xef\xbb\xbf"
_ROW_FIELD_SET = frozenset(ROW_FIELDS)
STRING_SCHEMA_FIELDS = [pa.field(name, pa.string()) for name in ROW_FIELDS]


@dataclass
class RowFile:
    """One row file as read from disk (or from an importer, before it is written)."""

    rel: str
    """Path shown in messages, relative to the site root."""
    data: bytes
    """The file's bytes, BOM included."""
    kind: str = "csv"
    """``csv``, ``jsonl`` or ``parquet``."""


@dataclass
class ParsedFile:
    """A row file as an all-string table plus what is needed to locate its rows."""

    source: RowFile
    table: pa.Table | None
    ragged: bool = False
    reported: set[tuple[int, str]] = field(default_factory=set)
    """(row id, column) already reported while parsing; the SQL checks stay quiet about them."""
    _lines: list[int] | None = field(default=None, repr=False)

    def line_of(self, row: int) -> int:
        """Physical 1-based line where table row ``row`` starts (header = line 1)."""
        if self.source.kind == "jsonl":
            return row  # JSONL tables store the physical line as the row id
        if self.source.kind == "parquet":
            return row + 1  # Parquet has no lines: the 1-based row number stands in
        if self._lines is None:
            if b'"' not in self.source.data and not self.ragged:
                return row + 2
            self._lines = _csv_record_lines(self.source.data)
        return self._lines[row]


def _strip_bom(data: bytes) -> bytes:
    return data[len(BOM) :] if data.startswith(BOM) else data


def _csv_record_lines(data: bytes) -> list[int]:
    """Start line of every table row: records that are not ragged, in order (slow path)."""
    text = _strip_bom(data).decode("utf-8")
    reader = csv.reader(io.StringIO(text, newline=""))
    header = next(reader, [])
    lines: list[int] = []
    prev = reader.line_num
    for record in reader:
        if len(record) in (0, len(header)):
            lines.append(prev + 1)
        prev = reader.line_num
    return lines


def _ragged_records(data: bytes) -> list[tuple[int, int, int]]:
    """(line, expected, found) for every record whose field count differs from the header's."""
    text = _strip_bom(data).decode("utf-8")
    reader = csv.reader(io.StringIO(text, newline=""))
    header = next(reader, [])
    out = []
    prev = reader.line_num
    for record in reader:
        if len(record) not in (0, len(header)):
            out.append((prev + 1, len(header), len(record)))
        prev = reader.line_num
    return out


def _decode_check(source: RowFile, problems: Problems) -> str | None:
    try:
        return _strip_bom(source.data).decode("utf-8")
    except UnicodeDecodeError as exc:
        body = _strip_bom(source.data)
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
            problems.error(rel, 1, f"duplicate column '{name}'")
            ok = False
        seen.add(name)
        if name not in _ROW_FIELD_SET:
            hint = ""
            if any(sep in name for sep in (";", "\t", "|")):
                hint = " (rows must be comma-separated)"
            elif name.strip() in _ROW_FIELD_SET:
                hint = f" (remove the spaces around '{name.strip()}')"
            problems.error(rel, 1, f"unknown column '{name}'{hint}")
            ok = False
    for name in REQUIRED_ROW_FIELDS:
        if name not in seen and all(name != h.strip() for h in header):
            problems.error(rel, 1, f"missing required column '{name}'")
            ok = False
    return ok


def read_string_csv(
    data: bytes, header: list[str], *, skip_rows: int, newlines_in_values: bool
) -> tuple[pa.Table, bool]:
    """Parse comma-separated ``data`` into string columns named ``header``, typing nothing.

    Returns the table and whether any record had the wrong number of fields (those are skipped
    here; callers locate them). Raises ``pa.ArrowInvalid`` on what Arrow cannot read at all.
    """
    invalid: list[bool] = []

    def on_invalid(_row: Any) -> str:
        invalid.append(True)
        return "skip"

    table = pacsv.read_csv(
        io.BytesIO(data),
        read_options=pacsv.ReadOptions(
            column_names=header, skip_rows=skip_rows, use_threads=len(data) > 4_000_000
        ),
        parse_options=pacsv.ParseOptions(
            delimiter=",",
            quote_char='"',
            double_quote=True,
            escape_char=False,
            newlines_in_values=newlines_in_values,
            ignore_empty_lines=False,
            invalid_row_handler=on_invalid,
        ),
        convert_options=pacsv.ConvertOptions(
            column_types={name: pa.string() for name in header},
            strings_can_be_null=False,
            quoted_strings_can_be_null=False,
            null_values=[],
        ),
    )
    return table, bool(invalid)


def parse_csv(source: RowFile, problems: Problems) -> ParsedFile:
    text = _decode_check(source, problems)
    if text is None:
        return ParsedFile(source, None)
    first = text.split("\n", 1)[0].rstrip("\r")
    if not first.strip():
        problems.error(source.rel, 1, "empty file or missing header line")
        return ParsedFile(source, None)
    header = next(csv.reader([first]))
    if len(header) == 1 and (sep := next((c for c in ";\t|" if c in header[0]), None)):
        shown = {"\t": "tabs"}.get(sep, f"'{sep}'")
        problems.error(source.rel, 1, f"rows must be comma-separated; this file separates with {shown}")
        return ParsedFile(source, None)
    if not _check_header(source.rel, header, problems):
        return ParsedFile(source, None)
    body = _strip_bom(source.data).rstrip(b"\r\n")
    has_quote = b'"' in body
    try:
        table, ragged = read_string_csv(body, header, skip_rows=1, newlines_in_values=has_quote)
    except pa.ArrowInvalid as exc:
        problems.error(source.rel, None, f"cannot parse as CSV: {exc}")
        return ParsedFile(source, None)
    parsed = ParsedFile(source, table, ragged=ragged)
    if ragged:
        for line, expected, found in _ragged_records(source.data):
            problems.error(
                source.rel,
                line,
                f"expected {expected} fields (as in the header), found {found}; "
                "a decimal comma or an unquoted comma splits a cell",
            )
    return parsed


def _json_cell(name: str, value: Any) -> tuple[str | None, str | None]:
    """Convert one JSON value to the CSV text form; (text, error)."""
    if value is None:
        return "", None
    if name in INT_ROW_FIELDS or name == "prompt_tokens":
        if name == "prompt_tokens" and value == "unknown":
            return "unknown", None
        if isinstance(value, bool) or not isinstance(value, int):
            return None, f"'{name}' must be an integer, not {json.dumps(value)}"
        return str(value), None
    if name in FLOAT_ROW_FIELDS:
        if isinstance(value, bool) or not isinstance(value, int | float):
            return None, f"'{name}' must be a number, not {json.dumps(value)}"
        if isinstance(value, float) and not math.isfinite(value):
            return None, f"'{name}' must be a finite number, not {value}"
        return repr(value) if isinstance(value, float) else str(value), None
    if not isinstance(value, str):
        return None, f"'{name}' must be a string, not {json.dumps(value)}"
    return value, None


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
    text = _decode_check(source, problems)
    if text is None:
        return ParsedFile(source, None)
    columns: dict[str, list[str]] = {name: [] for name in ROW_FIELDS}
    rows: list[int] = []
    reported: set[tuple[int, str]] = set()
    lines = text.split("\n")
    while lines and not lines[-1].strip():
        lines.pop()
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            problems.error(source.rel, number, "blank line (one JSON object per line)")
            continue
        try:
            obj = json.loads(line, object_pairs_hook=_no_duplicates, parse_constant=_reject_constant)
        except ValueError as exc:
            problems.error(source.rel, number, f"invalid JSON: {exc}")
            continue
        if not isinstance(obj, dict):
            problems.error(source.rel, number, "each line must be a JSON object")
            continue
        for key in obj:
            if key not in _ROW_FIELD_SET:
                problems.error(source.rel, number, f"unknown key '{key}'")
        cells: dict[str, str] = {}
        for name in ROW_FIELDS:
            cell, error = _json_cell(name, obj.get(name))
            if error:
                # Reported here; the line still goes through the SQL checks of its other cells,
                # so every problem of the line shows in one pass.
                problems.error(source.rel, number, error)
                reported.add((number, name))
                cell = json.dumps(obj.get(name))
            cells[name] = cell or ""
        for name in ROW_FIELDS:
            columns[name].append(cells[name])
        rows.append(number)
    table = pa.table({name: pa.array(columns[name], pa.string()) for name in ROW_FIELDS})
    return ParsedFile(source, table.append_column("_line", pa.array(rows, pa.int32())), reported=reported)


def _parquet_type_error(name: str, kind: pa.DataType) -> str | None:
    """Why a Parquet column's type cannot hold the field, or None when it can (exactly)."""
    if pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_null(kind):
        return None
    if name in INT_ROW_FIELDS or name == "prompt_tokens":
        return None if pa.types.is_integer(kind) else f"'{name}' must be an integer column, not {kind}"
    if name in FLOAT_ROW_FIELDS:
        if pa.types.is_integer(kind) or pa.types.is_floating(kind):
            return None
        return f"'{name}' must be a number column, not {kind}"
    if name == "date":
        return None if pa.types.is_date32(kind) else f"'date' must be a date or string column, not {kind}"
    return f"'{name}' must be a string column, not {kind}"


def parse_parquet(source: RowFile, problems: Problems) -> ParsedFile:
    """A Parquet file of rows (for bulk imports): columns named like CSV headers.

    Every cell is turned into the text a CSV file would hold (numbers in their shortest exact form,
    dates as ISO text), then validated by the same SQL as CSV cells, so a Parquet file loads exactly
    what it holds or is reported. A column whose type cannot hold its field exactly (a float in an
    integer field, a timestamp for a date) is an error. Problems name the 1-based row number.
    """
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(pa.BufferReader(source.data))
    except (pa.ArrowException, OSError) as exc:
        problems.error(source.rel, None, f"cannot read as Parquet: {exc}")
        return ParsedFile(source, None)
    if not _check_header(source.rel, table.column_names, problems):
        return ParsedFile(source, None)
    columns: dict[str, pa.ChunkedArray] = {}
    ok = True
    for name in table.column_names:
        column = table.column(name)
        error = _parquet_type_error(name, column.type)
        if error is not None:
            problems.error(source.rel, None, error)
            ok = False
            continue
        columns[name] = pc.cast(column, pa.string())
    if not ok:
        return ParsedFile(source, None)
    return ParsedFile(source, pa.table(columns) if columns else None)


PARSERS: dict[str, Callable[[RowFile, Problems], ParsedFile]] = {
    "csv": parse_csv,
    "jsonl": parse_jsonl,
    "parquet": parse_parquet,
}
ROW_FILE_SUFFIXES = (".csv", ".jsonl", ".parquet")


def discover_row_files(root: Path) -> list[RowFile]:
    """Every ``*.csv``, ``*.jsonl`` and ``*.parquet`` under ``data/rows``, in a stable order (by path)."""
    rows_dir = root / "data" / "rows"
    if not rows_dir.is_dir():
        return []
    # os.scandir rather than Path.rglob: a bulk import has tens of thousands of files.
    found: list[tuple[str, str, str]] = []
    stack = [(str(rows_dir), "data/rows/")]
    while stack:
        folder, rel = stack.pop()
        with os.scandir(folder) as entries:
            for entry in entries:
                if entry.is_dir():
                    stack.append((entry.path, f"{rel}{entry.name}/"))
                    continue
                suffix = os.path.splitext(entry.name)[1].lower()
                if suffix in ROW_FILE_SUFFIXES and entry.is_file():
                    found.append((f"{rel}{entry.name}", entry.path, suffix[1:]))
    out = []
    for rel, path, kind in sorted(found, key=lambda item: PurePosixPath(item[0]).parts):
        with open(path, "rb") as handle:
            out.append(RowFile(rel, handle.read(), kind))
    return out


def _normalise(table: pa.Table, file_ids: pa.Array, row_ids: pa.Array) -> pa.Table:
    """Every row field as a column (absent ones null), in order, then ``_file`` and ``_row``."""
    n = table.num_rows
    for name in ROW_FIELDS:
        if name not in table.column_names:
            table = table.append_column(name, pa.nulls(n, pa.string()))
    table = table.select(list(ROW_FIELDS))
    return table.append_column("_file", file_ids).append_column("_row", row_ids)


def _group_key(source: RowFile) -> bytes | None:
    """The header line of a CSV file with at least one row, as bytes (files sharing it parse as one)."""
    if source.kind != "csv":
        return None
    data = _strip_bom(source.data)
    end = data.find(b"\n")
    if end < 0:
        return None
    return data[:end].rstrip(b"\r")


def _parse_group(header: list[str], files: list[tuple[int, RowFile]]) -> pa.Table | None:
    """Parse CSV files sharing one header as one buffer; None when any file needs the careful path.

    The bodies are joined and handed to the CSV reader once (threaded on big inputs) instead of once
    per file, which costs most of the time on thousands of small files. It is only right when
    every physical line is one record, so the result is kept only if the reader found exactly as
    many records as there are lines: a quoted newline, a blank line, a ragged row or a stray
    carriage return all change that count, and the group is then parsed file by file as before.
    """
    # One copy of the bytes, into one buffer: slicing and stripping each file would copy it again.
    joined = bytearray()
    counts = []
    for _, source in files:
        data = source.data
        start = data.find(b"\n") + 1
        end = len(data)
        while end > start and data[end - 1] in b"\r\n":
            end -= 1
        if end <= start:
            return None
        joined += memoryview(data)[start:end]
        joined += b"\n"
        counts.append(data.count(b"\n", start, end) + 1)
    buffer = bytes(joined)
    del joined
    try:
        table, invalid = read_string_csv(buffer, header, skip_rows=0, newlines_in_values=b'"' in buffer)
    except pa.ArrowInvalid:
        return None  # e.g. invalid UTF-8: the careful path says where
    if invalid or table.num_rows != sum(counts):
        return None
    ids = np.array([index for index, _ in files], dtype=np.int32)
    counts_array = np.array(counts, dtype=np.int64)
    file_ids = pa.array(np.repeat(ids, counts_array))
    starts = np.repeat(np.cumsum(counts_array) - counts_array, counts_array)
    row_ids = pa.array((np.arange(table.num_rows, dtype=np.int64) - starts).astype(np.int32))
    return _normalise(table, file_ids, row_ids)


def parse_row_files(files: list[RowFile], problems: Problems) -> tuple[list[ParsedFile], pa.Table]:
    """Parse every file; return them and one all-string table with ``_file`` and ``_row`` columns.

    Rows are in file order, then line order. CSV files that share a header are parsed together
    (see :func:`_parse_group`); anything unusual falls back to parsing its file alone.
    """
    parsed: list[ParsedFile | None] = [None] * len(files)
    pieces: list[pa.Table] = []
    groups: dict[bytes, list[tuple[int, RowFile]]] = {}
    for index, source in enumerate(files):
        key = _group_key(source)
        if key is not None:
            groups.setdefault(key, []).append((index, source))
    for key, members in groups.items():
        if len(members) < 2:
            continue
        try:
            first = key.decode("utf-8")
        except UnicodeDecodeError:
            continue
        header = next(csv.reader([first]))
        if not _check_header("", header, Problems()):
            continue  # each file reports its own header problems
        table = _parse_group(header, members)
        if table is None:
            continue
        pieces.append(table)
        offsets = np.searchsorted(
            table.column("_file").to_numpy(), [index for index, _ in members] + [len(files)]
        )
        for number, (index, source) in enumerate(members):
            start, stop = int(offsets[number]), int(offsets[number + 1])
            parsed[index] = ParsedFile(source, table.slice(start, stop - start))
    for index, source in enumerate(files):
        if parsed[index] is not None:
            continue
        item = PARSERS[source.kind](source, problems)
        parsed[index] = item
        if item.table is None:
            continue
        table = item.table
        n = table.num_rows
        if "_line" in table.column_names:
            row_ids = table.column("_line").combine_chunks()
            table = table.drop_columns(["_line"])
        else:
            row_ids = pa.array(np.arange(n, dtype=np.int32))
        pieces.append(_normalise(table, pa.array(np.full(n, index, dtype=np.int32)), row_ids))
    if pieces:
        combined = pa.concat_tables(pieces)
        file_ids = combined.column("_file").to_numpy()
        if len(file_ids) > 1 and bool(np.any(file_ids[1:] < file_ids[:-1])):
            # Groups and single files interleave: back to file order, then line order.
            combined = combined.take(
                pc.sort_indices(combined, [("_file", "ascending"), ("_row", "ascending")])
            )
    else:
        schema = pa.schema(
            [*STRING_SCHEMA_FIELDS, pa.field("_file", pa.int32()), pa.field("_row", pa.int32())]
        )
        combined = schema.empty_table()
    return [p for p in parsed if p is not None], combined

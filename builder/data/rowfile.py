"""A row file, its parse as an all-string table, and the CSV reader both the batched and the
file-by-file parse use (:mod:`builder.data.rows`, :mod:`builder.data.csvbatch`)."""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from builder.content.models import ROW_FIELDS
from builder.files import read_regular
from builder.limits import ROW_FILE_BYTES

BOM = b"\xef\xbb\xbf"
STRING_SCHEMA_FIELDS = [pa.field(name, pa.string()) for name in ROW_FIELDS]


@dataclass
class RowFile:
    """One row file as read from disk (or from an importer, before it is written)."""

    rel: str
    """Path shown in messages, relative to the site root."""
    data: bytes | None
    """The file's bytes, BOM included; ``None`` when they are read from :attr:`path` on demand."""
    kind: str = "csv"
    """``csv``, ``jsonl`` or ``parquet``."""
    path: str | None = None
    """Where the bytes are on disk, when :attr:`data` is not held."""

    def read(self) -> bytes:
        """The file's bytes: :attr:`data`, or read from :attr:`path` now (and not kept)."""
        if self.data is not None:
            return self.data
        if self.path is None:
            raise ValueError(f"{self.rel}: neither bytes nor a path")
        return read_regular(self.path, ROW_FILE_BYTES)


@dataclass
class ParsedFile:
    """A row file as an all-string table plus what is needed to locate its rows."""

    source: RowFile
    table: pa.Table | None
    """The file's rows (only while :func:`builder.data.rows.parse_row_files` works: files parsed in a batch
    have none)."""
    ragged: bool = False
    reported: set[tuple[int, str]] = field(default_factory=set)
    """(row id, column) already reported while parsing; the SQL checks stay quiet about them."""
    plain: bool = False
    """A CSV file with no quoted cell and no ragged record: table row ``r`` is line ``r + 2``, so
    its bytes need not be kept to locate rows."""
    _lines: list[int] | None = field(default=None, repr=False)

    def line_of(self, row: int) -> int:
        """Physical 1-based line where table row ``row`` starts (header = line 1)."""
        if self.source.kind == "jsonl":
            return row  # JSONL tables store the physical line as the row id
        if self.source.kind == "parquet":
            return row + 1  # Parquet has no lines: the 1-based row number stands in
        if self.plain:
            return row + 2
        if self._lines is None:
            data = self.source.read()
            if b'"' not in data and not self.ragged:
                return row + 2
            self._lines = csv_record_lines(data)
        return self._lines[row]


def strip_bom(data: bytes) -> bytes:
    return data[len(BOM) :] if data.startswith(BOM) else data


def csv_record_lines(data: bytes) -> list[int]:
    """Start line of every table row: records that are not ragged, in order (slow path)."""
    text = strip_bom(data).decode("utf-8")
    reader = csv.reader(io.StringIO(text, newline=""))
    header = next(reader, [])
    lines: list[int] = []
    prev = reader.line_num
    for record in reader:
        if len(record) in (0, len(header)):
            lines.append(prev + 1)
        prev = reader.line_num
    return lines


def read_string_csv(
    data: bytes | bytearray | memoryview,
    header: list[str],
    *,
    skip_rows: int,
    newlines_in_values: bool,
    ragged: bool = True,
    threads: bool | None = None,
) -> tuple[pa.Table, bool]:
    """Parse comma-separated ``data`` into string columns named ``header``, typing nothing.

    With ``ragged``, records with the wrong number of fields are skipped and reported by the
    returned flag (callers locate them); without, such a record raises ``pa.ArrowInvalid`` — much
    faster, as the reader then calls no Python per record. Raises ``pa.ArrowInvalid`` on what Arrow
    cannot read at all (invalid UTF-8, for one). ``threads`` (default: for inputs over 4 MB) lets the
    reader parse blocks on several cores.
    """
    invalid: list[bool] = []

    def on_invalid(_row: Any) -> str:
        invalid.append(True)
        return "skip"

    table = pacsv.read_csv(
        pa.BufferReader(pa.py_buffer(data)),
        read_options=pacsv.ReadOptions(
            column_names=header,
            skip_rows=skip_rows,
            use_threads=len(data) > 4_000_000 if threads is None else threads,
        ),
        parse_options=pacsv.ParseOptions(
            delimiter=",",
            quote_char='"',
            double_quote=True,
            escape_char=False,
            newlines_in_values=newlines_in_values,
            ignore_empty_lines=False,
            invalid_row_handler=on_invalid if ragged else None,
        ),
        convert_options=pacsv.ConvertOptions(
            column_types={name: pa.string() for name in header},
            strings_can_be_null=False,
            quoted_strings_can_be_null=False,
            null_values=[],
        ),
    )
    return table, bool(invalid)


def normalise(table: pa.Table, file_ids: pa.Array, row_ids: pa.Array) -> pa.Table:
    """Every row field as a column (absent ones null), in order, then ``_file`` and ``_row``."""
    n = table.num_rows
    for name in ROW_FIELDS:
        if name not in table.column_names:
            table = table.append_column(name, pa.nulls(n, pa.string()))
    table = table.select(list(ROW_FIELDS))
    return table.append_column("_file", file_ids).append_column("_row", row_ids)


def empty_string_table() -> pa.Table:
    """The all-string table of no rows."""
    schema = pa.schema([*STRING_SCHEMA_FIELDS, pa.field("_file", pa.int32()), pa.field("_row", pa.int32())])
    return schema.empty_table()


def file_row_ids(indices: np.ndarray, counts: np.ndarray) -> tuple[pa.Array, pa.Array]:
    """``_file`` and ``_row`` columns for files ``indices`` contributing ``counts`` rows each, in order."""
    counts = counts.astype(np.int64)
    file_ids = pa.array(np.repeat(indices.astype(np.int32), counts))
    starts = np.repeat(np.cumsum(counts) - counts, counts)
    rows = (np.arange(int(counts.sum()), dtype=np.int64) - starts).astype(np.int32)
    return file_ids, pa.array(rows)


def take_rows(table: pa.Table, positions: pa.Array | pa.ChunkedArray) -> pa.Table:
    """``table.take(positions)`` chunk by chunk: Arrow's take first concatenates a chunked string
    column (a copy of the whole column to pick a few rows)."""
    wanted = np.asarray(positions.to_numpy(zero_copy_only=False), dtype=np.int64)
    order = np.argsort(wanted, kind="stable")
    ordered = wanted[order]
    back = pa.array(np.argsort(order, kind="stable"))
    columns = {}
    for name in table.column_names:
        column = table.column(name)
        if column.num_chunks <= 1:
            columns[name] = pc.take(column, pa.array(wanted))
            continue
        bounds = np.cumsum([0, *(len(chunk) for chunk in column.chunks)])
        cuts = np.searchsorted(ordered, bounds)
        parts = [
            pc.take(chunk, pa.array(ordered[cuts[i] : cuts[i + 1]] - bounds[i]))
            for i, chunk in enumerate(column.chunks)
            if cuts[i + 1] > cuts[i]
        ]
        taken = pa.chunked_array(parts, column.type) if parts else pa.chunked_array([], column.type)
        columns[name] = pc.take(taken, back)
    return pa.table(columns)

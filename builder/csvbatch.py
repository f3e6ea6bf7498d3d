"""CSV row files that share a header, parsed together in batches of a few megabytes.

The Arrow CSV reader has a fixed cost per call that dominates on thousands of small files, so the
bodies of files with the same header line are joined (header lines left out) and each batch of
about :data:`BATCH_BYTES` is parsed in one call. That is only right when every physical line is one
record, so a batch is kept only if it has no lone carriage return and the reader found exactly as
many records as the batch has newlines: a quoted newline, a blank line, a ragged row or invalid
UTF-8 all break that, and the files of that batch are then parsed one by one (the careful path,
which says where the problem is). In a kept batch every record is one line, so row ``r`` of a file
is on line ``r + 2`` and the file's bytes can be dropped as soon as the batch is parsed: memory
holds one batch of bytes at a time, not every file.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from builder.rowfile import BOM, ParsedFile, RowFile, file_row_ids, normalise, read_string_csv

BATCH_BYTES = 16 << 20
"""Bytes of CSV bodies per parse: big enough for the reader's threads, small enough that one bad
file sends few others down the careful path and that the joined copy stays small."""


@dataclass
class _Batch:
    header: list[str]
    buffer: bytearray = field(default_factory=bytearray)
    members: list[tuple[int, RowFile, bytes]] = field(default_factory=list)
    """(file index, source, bytes): the bytes are held until the batch is parsed, for the careful
    path should it fail."""
    ends: list[int] = field(default_factory=list)
    """Offset in :attr:`buffer` just past each member's last newline."""
    quoted: bool = False


@dataclass
class CsvBatches:
    """Takes CSV files in file order, batches them by header line and parses each full batch.

    ``header_of(line)`` gives the column names of a header line, or ``None`` when its files must be
    parsed alone (undecodable, unknown or missing columns: the careful path reports them).
    """

    header_of: Callable[[bytes], list[str] | None]
    tables: list[pa.Table] = field(default_factory=list)
    """Parsed batches: every row field as a string column, plus ``_file`` and ``_row``."""
    parsed: dict[int, ParsedFile] = field(default_factory=dict)
    """File index → its parse, for every file of a kept batch."""
    rejected: list[tuple[int, RowFile, bytes]] = field(default_factory=list)
    """Files of batches that could not be kept, with their bytes, for the careful path."""
    _open: dict[bytes, _Batch] = field(default_factory=dict)
    _headers: dict[bytes, list[str] | None] = field(default_factory=dict)

    def add(self, index: int, source: RowFile, data: bytes) -> bool:
        """Take file ``index`` into a batch; ``False`` when it must be parsed alone."""
        start = len(BOM) if data.startswith(BOM) else 0
        newline = data.find(b"\n", start)
        if newline < 0:
            return False
        end = len(data)
        while end > newline + 1 and data[end - 1] in b"\r\n":
            end -= 1
        if end <= newline + 1:
            return False  # no rows: alone, so a file of just a header is not a batch's problem
        key = data[start:newline].rstrip(b"\r")
        if key not in self._headers:
            self._headers[key] = self.header_of(key)
        header = self._headers[key]
        if header is None:
            return False
        batch = self._open.get(key)
        if batch is None:
            batch = self._open[key] = _Batch(header)
        batch.buffer += memoryview(data)[newline + 1 : end]
        batch.buffer += b"\n"
        batch.ends.append(len(batch.buffer))
        batch.members.append((index, source, data))
        batch.quoted = batch.quoted or data.find(b'"', newline + 1, end) >= 0
        if len(batch.buffer) >= BATCH_BYTES:
            self._parse(self._open.pop(key))
        return True

    def finish(self) -> None:
        """Parse the batches still open."""
        for key in list(self._open):
            self._parse(self._open.pop(key))

    def _parse(self, batch: _Batch) -> None:
        counts = _line_counts(batch.buffer, batch.ends)
        table = None
        if counts is not None:
            try:
                table, _ = read_string_csv(
                    batch.buffer, batch.header, skip_rows=0, newlines_in_values=batch.quoted, ragged=False
                )
            except pa.ArrowInvalid:
                table = None  # e.g. a ragged row or invalid UTF-8: the careful path says where
        batch.buffer = bytearray()  # the joined copy is not needed any more
        if table is None or counts is None or table.num_rows != int(counts.sum()):
            self.rejected.extend(batch.members)
            return
        indices = np.array([index for index, _, _ in batch.members], dtype=np.int32)
        file_ids, row_ids = file_row_ids(indices, counts)
        self.tables.append(normalise(table, file_ids, row_ids))
        for index, source, _ in batch.members:
            self.parsed[index] = ParsedFile(source, None, plain=True)


def _line_counts(buffer: bytearray, ends: list[int]) -> np.ndarray | None:
    """Newlines of each member, or ``None`` when a lone carriage return would end a record the
    newline count does not see (the reader treats ``\\r`` alone as a line break)."""
    raw = np.frombuffer(buffer, dtype=np.uint8)
    returns = np.flatnonzero(raw == 13)
    # The buffer ends with a newline, so the byte after a carriage return always exists.
    if len(returns) and not bool(np.all(raw[returns + 1] == 10)):
        return None
    newlines = np.flatnonzero(raw == 10)
    del raw
    before = np.searchsorted(newlines, np.asarray(ends, dtype=np.int64))
    return np.diff(before, prepend=0)

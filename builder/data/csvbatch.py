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
from concurrent.futures import Executor, Future
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from builder.data.rowfile import BOM, ParsedFile, RowFile, file_row_ids, normalise, read_string_csv
from builder.limits import ROWS_PER_FILE

BATCH_BYTES = 16 << 20
"""Bytes of CSV bodies per parse: big enough that the reader's cost per call vanishes, small enough
that one bad file sends few others down the careful path and that the joined copies stay small."""


@dataclass
class _Batch:
    header: list[str]
    buffer: bytearray
    """Allocated once (at least :data:`BATCH_BYTES`): growing it would copy it again and again."""
    used: int = 0
    members: list[tuple[int, RowFile, bytes]] = field(default_factory=list)
    """(file index, source, bytes): the bytes are held until the batch is parsed, for the careful
    path should it fail."""
    lines: list[int] = field(default_factory=list)
    """Newlines each member adds to :attr:`buffer`."""
    quoted: bool = False


@dataclass
class CsvBatches:
    """Takes CSV files in file order, batches them by header line and parses each full batch.

    ``header_of(line)`` gives the column names of a header line, or ``None`` when its files must be
    parsed alone (undecodable, unknown or missing columns: the careful path reports them). Batches
    are parsed on ``executor`` when one is given, so reading the next batch overlaps parsing this
    one (the reader releases the GIL); :meth:`finish` waits for them.
    """

    header_of: Callable[[bytes], list[str] | None]
    executor: Executor | None = None
    tables: list[pa.Table] = field(default_factory=list)
    """Parsed batches: every row field as a string column, plus ``_file`` and ``_row``."""
    parsed: dict[int, ParsedFile] = field(default_factory=dict)
    """File index → its parse, for every file of a kept batch."""
    rejected: list[tuple[int, RowFile, bytes]] = field(default_factory=list)
    """Files of batches that could not be kept, with their bytes, for the careful path."""
    _open: dict[bytes, _Batch] = field(default_factory=dict)
    _headers: dict[bytes, list[str] | None] = field(default_factory=dict)
    _pending: list[tuple[_Batch, memoryview, Future[pa.Table | None]]] = field(default_factory=list)
    _spare: list[bytearray] = field(default_factory=list)
    """Buffers of parsed batches, reused: a fresh one costs a page fault per 4 KiB written."""

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
        body = newline + 1
        if data.find(b"\r", body, end) >= 0 and data.count(b"\r", body, end) != data.count(
            b"\r\n", body, end
        ):
            return False  # a lone carriage return ends a record the newline count would not see
        quoted = data.find(b'"', body, end) >= 0
        if quoted and data.count(b'"', body, end) % 2:
            return False  # a quote left open: alone, so the file's own parse says where
        key = data[start:newline].rstrip(b"\r")
        if key not in self._headers:
            self._headers[key] = self.header_of(key)
        header = self._headers[key]
        if header is None:
            return False
        lines = data.count(b"\n", body, end) + 1
        if lines > ROWS_PER_FILE:
            return False  # alone: its own parse says where the limit is passed
        size = end - body + 1
        batch = self._open.get(key)
        if batch is not None and batch.used + size > len(batch.buffer):
            self._submit(self._open.pop(key))
            batch = None
        if batch is None:
            batch = self._open[key] = _Batch(header, self._buffer(max(BATCH_BYTES, size)))
        batch.buffer[batch.used : batch.used + size - 1] = memoryview(data)[body:end]
        batch.buffer[batch.used + size - 1] = 10
        batch.used += size
        batch.lines.append(lines)
        batch.members.append((index, source, data))
        batch.quoted = batch.quoted or quoted
        return True

    def finish(self) -> None:
        """Parse the batches still open and collect every batch's result, in order."""
        for key in list(self._open):
            self._submit(self._open.pop(key))
        self._collect(keep=0)

    def _collect(self, keep: int) -> None:
        """Take in parsed batches, oldest first, until at most ``keep`` are still pending.

        Waiting here bounds memory: a batch's bytes are held until it is taken in.
        """
        while len(self._pending) > keep:
            batch, view, future = self._pending.pop(0)
            table = future.result()
            try:
                view.release()  # fails if anything still looks at the bytes: then they are not reused
                self._spare.append(batch.buffer)
            except BufferError:
                pass
            batch.buffer = bytearray()
            if table is None:
                self.rejected.extend(batch.members)
                continue
            self.tables.append(table)
            for index, source, _ in batch.members:
                self.parsed[index] = ParsedFile(source, None, plain=True)
            batch.members = []

    def _buffer(self, size: int) -> bytearray:
        while self._spare:
            spare = self._spare.pop()
            if len(spare) >= size:
                return spare
        return bytearray(size)

    def _submit(self, batch: _Batch) -> None:
        view = memoryview(batch.buffer)[: batch.used]
        args = (batch.header, view, batch.members, batch.lines, batch.quoted)
        future: Future[pa.Table | None]
        if self.executor is None:
            future = Future()
            future.set_result(_parse(*args))
        else:
            future = self.executor.submit(_parse, *args)
        self._pending.append((batch, view, future))
        self._collect(keep=1)


def _parse(
    header: list[str],
    buffer: memoryview,
    members: list[tuple[int, RowFile, bytes]],
    lines: list[int],
    quoted: bool,
) -> pa.Table | None:
    """The batch as one table with ``_file`` and ``_row``, or ``None`` when records are not lines."""
    try:
        # One thread: the other core is reading the next batch.
        table, _ = read_string_csv(
            buffer, header, skip_rows=0, newlines_in_values=quoted, ragged=False, threads=False
        )
    except pa.ArrowInvalid:
        return None  # e.g. a ragged row or invalid UTF-8: the careful path says where
    counts = np.asarray(lines, dtype=np.int64)
    if table.num_rows != int(counts.sum()):
        return None
    indices = np.array([index for index, _, _ in members], dtype=np.int32)
    file_ids, row_ids = file_row_ids(indices, counts)
    return normalise(table, file_ids, row_ids)

"""The one table every row download is made from: each row with its status and its source file and line.

Read straight from the typed ``rows`` Arrow table (no copy out of DuckDB); statuses are taken per
distinct metadata combination and source lines per file, not looked up row by row.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from builder.analysis.reconcile import Reconciliation, RowStatus
from builder.data.load import Site
from builder.site.views import ROW_COLUMNS


def status_codes(recon: Reconciliation, row_ids: np.ndarray) -> tuple[list[RowStatus], np.ndarray]:
    """The distinct statuses of ``row_ids`` and, per row, the index of its status in that list."""
    kinds = list(recon.kinds)
    if not recon.statuses:
        return kinds, recon.kind_of_row[row_ids].astype(np.int32)
    # Statuses set one by one (tests, hand-made reconciliations): looked up row by row.
    index = {id(kind): number for number, kind in enumerate(kinds)}
    codes = np.empty(len(row_ids), np.int32)
    for position, row_id in enumerate(row_ids.tolist()):
        status = recon.status(row_id)
        if id(status) not in index:
            index[id(status)] = len(kinds)
            kinds.append(status)
        codes[position] = index[id(status)]
    return kinds, codes


def _source_lines(site: Site, file_ids: np.ndarray, file_rows: np.ndarray) -> np.ndarray:
    """Physical line of each row in its file; rows of one file are contiguous (row-id order)."""
    lines = np.empty(len(file_ids), np.int32)
    if len(file_ids) == 0:
        return lines
    starts = np.flatnonzero(np.diff(file_ids, prepend=-1))
    ends = np.append(starts[1:], len(file_ids))
    for start, end in zip(starts.tolist(), ends.tolist(), strict=True):
        parsed = site.row_files[int(file_ids[start])]
        rows = file_rows[start:end]
        first, last = parsed.line_of(int(rows[0])), parsed.line_of(int(rows[-1]))
        # Lines grow with rows, so equal spans mean one line per row: no need to ask each row.
        if last - first == int(rows[-1]) - int(rows[0]):
            lines[start:end] = rows - rows[0] + first
        else:
            lines[start:end] = [parsed.line_of(r) for r in rows.tolist()]
    return lines


class Export(NamedTuple):
    """The export table (:func:`export_rows`) with the distinct statuses and each row's index into them."""

    table: pa.Table
    kinds: list[RowStatus]
    codes: np.ndarray

    def of(self, recipes: Collection[str]) -> Export:
        """The rows of ``recipes`` only."""
        keep = pc.is_in(self.table.column("recipe"), pa.array(sorted(recipes), pa.string()))
        return Export(pc.filter(self.table, keep), self.kinds, self.codes[np.asarray(keep)])


def export_table(site: Site, recon: Reconciliation, recipes: Collection[str] | None) -> Export:
    """:func:`export_rows` as an :class:`Export`."""
    # The typed Arrow table DuckDB queries as ``rows``, read directly: no copy out of DuckDB.
    table = site.rows.select([*ROW_COLUMNS, "file_id", "file_row"])
    if recipes is not None:
        table = pc.filter(table, pc.is_in(table.column("recipe"), pa.array(sorted(recipes), pa.string())))
    row_ids = table.column("row_id").to_numpy()
    if len(row_ids) > 1 and not np.all(row_ids[1:] > row_ids[:-1]):
        order = np.argsort(row_ids, kind="stable")
        table, row_ids = pc.take(table, pa.array(order)), row_ids[order]
    # One chunk: the files' bytes must not depend on how the rows were batched when loaded.
    table = table.combine_chunks()
    kinds, codes = status_codes(recon, row_ids)
    # Only the statuses and files these rows have: one recipe's export costs what its rows cost.
    used, codes = np.unique(codes, return_inverse=True)
    kinds = [kinds[k] for k in used.tolist()]
    codes = codes.astype(np.int32)
    file_ids = table.column("file_id").to_numpy()
    used_files, file_codes = np.unique(file_ids, return_inverse=True)
    files = pa.array([site.row_files[f].source.rel for f in used_files.tolist()], pa.string())
    lines = _source_lines(site, file_ids, table.column("file_row").to_numpy())
    table = table.drop_columns(["file_id", "file_row"])
    take = pa.array(codes)
    extra = {
        "status": pc.take(pa.array([s.status for s in kinds], pa.string()), take),
        "differences": pc.take(
            pa.array(["; ".join(d.describe() for d in s.differences) or None for s in kinds], pa.string()),
            take,
        ),
        "unrecorded": pc.take(pa.array([", ".join(s.unrecorded) or None for s in kinds], pa.string()), take),
        "source_file": pc.take(files, pa.array(file_codes)),
        "source_line": pa.array(lines),  # int32
    }
    for name, column in extra.items():
        table = table.append_column(name, column)
    return Export(table, kinds, codes)


def export_rows(site: Site, recon: Reconciliation, recipes: Collection[str] | None = None) -> pa.Table:
    """Every row (of ``recipes``, when given) with its status and its source file and line, in row-id
    order."""
    return export_table(site, recon, recipes).table

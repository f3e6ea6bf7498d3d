"""JSON text straight from Arrow columns, byte for byte what ``json.dumps`` writes.

The API documents hold every row as a JSON object: turning every row into Python dicts and dumping
them is slow, most of it building the dicts. Here each column becomes an array of JSON values with
Arrow kernels, the columns are joined into one object per row, and rows are joined into arrays per
group, all without a Python object per row.

The text equals ``json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)``
of the same values as ``Table.to_pylist()`` gives them (dates as ISO text once cast to strings):

* strings: ``json.encoder.encode_basestring`` (what ``ensure_ascii=False`` uses), once per
  distinct value;
* integers and booleans: Arrow's decimal text, the same as Python's;
* floats: ``repr``. Arrow's shortest round-trip text has the same digits but switches to an
  exponent at other magnitudes and drops ``.0``: it is used (with ``.0`` added) where it was
  checked to agree, 1e-4 <= |x| < 1e9, and ``repr`` is called for the rest (rare in benchmark
  figures); NaN and infinities raise ``ValueError`` like ``allow_nan=False``.
"""

from __future__ import annotations

import json.encoder
from collections.abc import Collection, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

_encode_string = json.encoder.encode_basestring


def json_values(array: pa.Array | pa.ChunkedArray, prefix: str = "") -> pa.Array:
    """Each value of ``array`` as JSON text (``null`` for a missing value), as a string array.

    ``prefix`` goes before each value (cheaply for strings: once per distinct value).
    """
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    kind = array.type
    if not (
        _is_text(kind) or pa.types.is_integer(kind) or pa.types.is_boolean(kind) or pa.types.is_floating(kind)
    ):
        raise TypeError(f"no JSON text for Arrow type {kind}")
    if array.null_count == len(array):  # common for optional fields
        return pc.take(pa.array([prefix + "null"], pa.string()), pa.array(np.zeros(len(array), np.int32)))
    if _is_text(kind):
        encoded = pc.dictionary_encode(array)
        words = [prefix + _encode_string(v) for v in encoded.dictionary.to_pylist()]
        return pc.take(
            pa.array([*words, prefix + "null"], pa.string()), pc.fill_null(encoded.indices, len(words))
        )
    if pa.types.is_integer(kind) or pa.types.is_boolean(kind):
        out = pc.cast(array, pa.string())
    else:
        out = _floats(pc.cast(array, pa.float64()))
    out = pc.fill_null(out, "null")
    return pc.binary_join_element_wise(prefix, out, "") if prefix else out


def _is_text(kind: pa.DataType) -> bool:
    return bool(pa.types.is_string(kind) or pa.types.is_large_string(kind))


def _floats(array: pa.Array) -> pa.Array:
    bad = pc.and_kleene(pc.is_valid(array), pc.invert(pc.is_finite(array)))
    if pc.any(bad).as_py():
        raise ValueError("Out of range float values are not JSON compliant")
    text = pc.cast(array, pa.string())
    whole = pc.invert(pc.or_(pc.match_substring(text, "."), pc.match_substring(text, "e")))
    text = pc.if_else(whole, pc.binary_join_element_wise(text, ".0", ""), text)
    values = array.to_numpy(zero_copy_only=False)
    magnitude = np.abs(np.nan_to_num(values))
    odd = np.flatnonzero((magnitude != 0) & ((magnitude < 1e-4) | (magnitude >= 1e9)))
    if len(odd) == 0:
        return text
    patched = text.to_pylist()
    for i in odd.tolist():
        patched[i] = repr(float(values[i]))
    return pa.array(patched, pa.string())


def json_objects(table: pa.Table, raw: Collection[str] = (), *, end: str = "}") -> pa.Array:
    """One JSON object per row, keys in column order; columns in ``raw`` already hold JSON text.

    ``end`` closes each object (``},`` to have them ready to be joined into an array).
    """
    if table.num_columns == 0:
        return pa.array(["{" + end] * table.num_rows, pa.string())
    parts: list[str | pa.Array] = []
    for number, name in enumerate(table.column_names):
        key = ("{" if number == 0 else ",") + _encode_string(name) + ":"
        column = table.column(name)
        if name in raw:
            parts += [key, pc.fill_null(column.combine_chunks(), "null")]
        elif _is_text(column.type) or column.null_count == len(column):
            parts.append(json_values(column, key))  # the key is written once per distinct value
        else:
            parts += [key, json_values(column)]
    parts.append(end)
    return pc.binary_join_element_wise(*parts, "")


ROWS_PER_SLICE = 1 << 13
"""Rows turned into JSON text at a time. Each column's text and the joined objects are arrays as
long as the slice, and a group's text is given out as soon as it is complete (a slice's buffers are
freed with its groups'), so peak memory follows the slice, not the whole table; a slice this size
costs no more CPU than bigger ones."""


def json_array_pieces(
    table: pa.Table, groups: pa.Array | pa.ChunkedArray, raw: Collection[str] = ()
) -> Iterator[tuple[str, list[memoryview]]]:
    """The rows of ``table`` as JSON objects (see :func:`json_objects`), a group at a time.

    ``groups`` holds one non-null string per row. Yields ``(group, pieces)`` as each group's last
    row is written, rows in table order: ``b"[" + b"".join(pieces) + b"]"`` is the group's JSON
    array. The pieces are views of the slice's text (nothing is copied); a slice's buffers are
    freed once the pieces of its groups are dropped. When a group's rows are contiguous (row files
    are per recipe, so they usually are) nothing is sorted.
    """
    if table.num_rows == 0:
        return
    if isinstance(groups, pa.ChunkedArray):
        groups = groups.combine_chunks()
    starts, names = _runs(groups)
    if len(set(names)) < len(names):  # a group in several runs: sort rows by group, stably
        order = pc.sort_indices(
            pa.table({"g": groups, "i": pa.array(np.arange(len(groups)))}),
            [("g", "ascending"), ("i", "ascending")],
        )
        table, groups = pc.take(table, order), pc.take(groups, order)
        starts, names = _runs(groups)
    bounds = np.append(starts, table.num_rows).tolist()
    run = 0
    pieces: list[memoryview] = []
    for begin in range(0, table.num_rows, ROWS_PER_SLICE):
        objects = json_objects(table.slice(begin, ROWS_PER_SLICE), raw, end="},")
        end = begin + len(objects)
        offsets = np.frombuffer(objects.buffers()[1], np.int32, len(objects) + 1, objects.offset * 4)
        text = memoryview(objects.buffers()[2])  # type: ignore[arg-type]
        while run < len(names) and bounds[run] < end:
            low, high = max(bounds[run], begin), min(bounds[run + 1], end)
            pieces.append(text[int(offsets[low - begin]) : int(offsets[high - begin])])
            if bounds[run + 1] > end:
                break  # the group goes on in the next slice
            pieces[-1] = pieces[-1][:-1]  # the last row's comma
            yield names[run], pieces
            pieces = []
            run += 1
        del objects, text


def json_arrays(
    table: pa.Table, groups: pa.Array | pa.ChunkedArray, raw: Collection[str] = ()
) -> dict[str, bytes]:
    """The rows of ``table`` as JSON objects (see :func:`json_objects`), one JSON array per group:
    ``{group: b"[row,row,...]"}``, rows in table order (see :func:`json_array_pieces`)."""
    return {name: b"".join([b"[", *pieces, b"]"]) for name, pieces in json_array_pieces(table, groups, raw)}


def _runs(groups: pa.Array) -> tuple[np.ndarray, list[str]]:
    """Where each run of equal values starts, and its value."""
    change = pc.not_equal(groups.slice(1), groups.slice(0, len(groups) - 1))
    starts = np.concatenate([[0], np.flatnonzero(change.to_numpy(zero_copy_only=False)) + 1])
    return starts, pc.take(groups, pa.array(starts)).to_pylist()

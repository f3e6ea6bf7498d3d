"""JSON text straight from Arrow columns, byte for byte what ``json.dumps`` writes.

The API documents hold every row as a JSON object (about 800 bytes each): turning 100k rows into
Python dicts and dumping them cost seconds, most of it building the dicts. Here each column
becomes an array of JSON values with Arrow kernels, the columns are joined into one object per
row, and rows are joined into arrays per group, all without a Python object per row.

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
from collections.abc import Collection, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

_encode_string = json.encoder.encode_basestring


def json_values(array: pa.Array | pa.ChunkedArray) -> pa.Array:
    """Each value of ``array`` as JSON text (``null`` for a missing value), as a string array."""
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    kind = array.type
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        encoded = array.dictionary_encode()
        words = pa.array([_encode_string(v) for v in encoded.dictionary.to_pylist()], pa.string())
        out = words.take(encoded.indices)
    elif pa.types.is_integer(kind) or pa.types.is_boolean(kind):
        out = pc.cast(array, pa.string())
    elif pa.types.is_floating(kind):
        out = _floats(pc.cast(array, pa.float64()))
    else:
        raise TypeError(f"no JSON text for Arrow type {kind}")
    return pc.fill_null(out, "null")


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


def json_objects(table: pa.Table, raw: Collection[str] = ()) -> pa.Array:
    """One JSON object per row, keys in column order; columns in ``raw`` already hold JSON text."""
    parts: list[str | pa.Array] = []
    for number, name in enumerate(table.column_names):
        parts.append(("{" if number == 0 else ",") + _encode_string(name) + ":")
        column = table.column(name)
        if name in raw:
            parts.append(pc.fill_null(column.combine_chunks(), "null"))
        else:
            parts.append(json_values(column))
    if not parts:
        return pa.array(["{}"] * table.num_rows, pa.string())
    parts.append("}")
    return pc.binary_join_element_wise(*parts, "")


def json_arrays(items: pa.Array, groups: pa.Array | pa.ChunkedArray) -> dict[str, bytes]:
    """``items`` (JSON texts) gathered into one JSON array per value of ``groups``, in item order.

    ``groups`` holds one non-null string per item. Returns ``{group: b"[item,item,...]"}``.
    """
    if len(items) == 0:
        return {}
    if isinstance(groups, pa.ChunkedArray):
        groups = groups.combine_chunks()
    order = pc.sort_indices(
        pa.table({"g": groups, "i": pa.array(np.arange(len(groups)))}),
        [("g", "ascending"), ("i", "ascending")],
    )
    # Large strings: a million rows of about 800 bytes each come close to 32-bit offsets.
    items = pc.cast(items, pa.large_string()).take(order)
    counts = pc.value_counts(groups.take(order))  # in order of first appearance: sorted
    names: Sequence[str] = counts.field("values").to_pylist()
    offsets = np.concatenate([[0], np.cumsum(counts.field("counts").to_numpy())]).astype(np.int32)
    lists = pa.ListArray.from_arrays(pa.array(offsets), items)
    comma, left, right = (pa.scalar(text, pa.large_string()) for text in ",[]")
    joined = pc.binary_join_element_wise(
        left, pc.binary_join(lists, comma), right, pa.scalar("", pa.large_string())
    )
    data = pc.cast(joined, pa.large_binary()).to_pylist()
    return dict(zip(names, data, strict=True))

"""Row file helpers: taking rows chunk by chunk gives what Arrow's take gives."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from builder.data.rowfile import take_rows
from tests.conftest import examples


@settings(max_examples=examples(60), deadline=None)
@given(
    st.lists(st.integers(min_value=0, max_value=6), min_size=1, max_size=6),
    st.lists(st.integers(min_value=0, max_value=10_000), max_size=30),
)
def test_take_rows_equals_arrow_take(chunk_sizes: list[int], picks: list[int]) -> None:
    total = sum(chunk_sizes)
    texts = [f"row {i}" if i % 3 else None for i in range(total)]
    chunks, start = [], 0
    for size in chunk_sizes:
        chunks.append(pa.array(texts[start : start + size], pa.string()))
        start += size
    table = pa.table({"text": pa.chunked_array(chunks, pa.string()), "n": pa.array(np.arange(total))})
    positions = pa.array([p % total for p in picks] if total else [], pa.int64())
    assert take_rows(table, positions).to_pylist() == table.take(positions).to_pylist()

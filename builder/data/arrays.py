"""numpy → Arrow without ``pa.array``'s masked-array check.

``pa.array(ndarray)`` asks whether the array is a ``numpy.ma.MaskedArray``, and that attribute
imports ``numpy.ma`` (≈ 0.02–0.04 s): an edit build that writes one recipe's API document paid it.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa


def from_numpy(values: np.ndarray) -> pa.Array:
    """The Arrow array of a one-dimensional numpy array of numbers (no nulls), sharing its buffer
    when it is contiguous."""
    if values.dtype.kind not in "iuf":  # numpy's booleans are bytes, Arrow's are bits
        raise TypeError(f"from_numpy takes numbers, not {values.dtype}")
    values = np.ascontiguousarray(values)
    return pa.Array.from_buffers(pa.from_numpy_dtype(values.dtype), len(values), [None, pa.py_buffer(values)])

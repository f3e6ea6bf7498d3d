"""numpy → Arrow without importing numpy.ma."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pyarrow as pa

from builder.data.arrays import from_numpy


def test_from_numpy_gives_the_values_and_type_of_pa_array() -> None:
    for values in (
        np.arange(5, dtype=np.int32),
        np.array([3, -1, 7], dtype=np.int64),
        np.array([0.5, 2.0], dtype=np.float64),
        np.arange(10, dtype=np.int64)[::3],  # not contiguous
        np.zeros(0, dtype=np.int32),
    ):
        got = from_numpy(values)
        assert got.equals(pa.array(values)), values
        assert got.null_count == 0


def test_from_numpy_does_not_import_numpy_ma() -> None:
    code = (
        "import sys, numpy as np\n"
        "from builder.data.arrays import from_numpy\n"
        "from_numpy(np.arange(3)).take(from_numpy(np.array([2, 0])))\n"
        "assert 'numpy.ma' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)

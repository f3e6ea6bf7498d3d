"""The builder's Arrow kernels by name give what ``pyarrow.compute`` gives, and an edit build runs
without importing ``pyarrow.compute`` (the reason they exist)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as reference
import pytest

from builder.data import arrow_compute
from tests.conftest import edit_first_recipe, imported_by_build, synthetic_site

STRINGS = pa.chunked_array([["a", "", None, "1.5"], ["b.c", "a", "12", None]])
NUMBERS = pa.array([3, None, 1, 2, 3], pa.int64())
FLOATS = pa.array([1.0, float("inf"), None, -2.5])
BOOLS = pa.array([True, False, None, True])
OTHER_BOOLS = pa.array([False, False, True, None])
TABLE = pa.table({"k": ["b", "a", None, "a"], "v": [1, 2, 3, None]})

CASES: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = [
    ("and_", (BOOLS, OTHER_BOOLS), {}),
    ("and_kleene", (BOOLS, OTHER_BOOLS), {}),
    ("and_not", (BOOLS, OTHER_BOOLS), {}),
    ("or_", (BOOLS, OTHER_BOOLS), {}),
    ("invert", (BOOLS,), {}),
    ("any", (BOOLS,), {}),
    ("any", (pa.array([None, False]),), {}),
    ("ascii_is_decimal", (STRINGS,), {}),
    ("binary_length", (STRINGS,), {}),
    ("binary_join_element_wise", (STRINGS, STRINGS, "-"), {}),
    ("cast", (NUMBERS, pa.string()), {}),
    ("cast", (pa.array([dt.date(2026, 7, 6), None]), pa.int32()), {}),
    ("dictionary_encode", (STRINGS,), {}),
    ("drop_null", (NUMBERS,), {}),
    ("equal", (STRINGS, "a"), {}),
    ("not_equal", (NUMBERS, 3), {}),
    ("less", (NUMBERS, 3), {}),
    ("fill_null", (NUMBERS, 0), {}),
    ("fill_null", (STRINGS, "null"), {}),
    ("fill_null", (pa.array([1, None], pa.int32()), pa.scalar(7, pa.int64())), {}),
    ("filter", (TABLE, pa.array([True, None, False, True])), {}),
    ("if_else", (BOOLS, pa.array([1, 2, 3, 4]), pa.array([5, 6, 7, 8])), {}),
    ("is_finite", (FLOATS,), {}),
    ("is_in", (STRINGS, pa.array(["a", "12"])), {}),
    ("is_valid", (NUMBERS,), {}),
    ("list_flatten", (pa.array([[1, 2], [], None, [3]]),), {}),
    ("list_value_length", (pa.array([[1, 2], [], None]),), {}),
    ("match_substring", (STRINGS, "."), {}),
    ("replace_substring", (STRINGS, ".", ""), {"max_replacements": 1}),
    ("sort_indices", (TABLE, [("k", "ascending", "at_end"), ("v", "descending")]), {}),
    ("sort_indices", (NUMBERS,), {}),
    ("take", (TABLE, pa.array([3, 0, 0])), {}),
    ("take", (STRINGS, pa.array([7, 1])), {}),
    ("unique", (STRINGS,), {}),
    ("value_counts", (STRINGS,), {}),
]


def test_every_kernel_is_checked() -> None:
    assert {name for name, _, _ in CASES} == set(arrow_compute.__all__)


@pytest.mark.parametrize(("name", "args", "kwargs"), CASES, ids=[c[0] for c in CASES])
def test_kernel_matches_pyarrow_compute(name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    ours = getattr(arrow_compute, name)(*args, **kwargs)
    if name == "filter":
        theirs = args[0].filter(args[1])
    else:
        theirs = getattr(reference, name)(*args, **kwargs)
    assert type(ours) is type(theirs)
    assert ours.equals(theirs)


def test_options_are_refused_where_a_kernel_has_none() -> None:
    with pytest.raises(TypeError, match="equal takes no options"):
        arrow_compute.equal(NUMBERS, 3, 4)


def test_a_checked_cast_still_fails_on_overflow() -> None:
    with pytest.raises(pa.ArrowInvalid):
        arrow_compute.cast(pa.array([300]), pa.int8())


def test_plain_values_become_typed_scalars() -> None:
    # A bare value would have Arrow infer its type, which imports dateutil first.
    assert arrow_compute._typed("a") == pa.scalar("a", pa.string())
    assert arrow_compute._typed(True).type == pa.bool_()
    assert arrow_compute._typed(3).type == pa.int64()
    assert arrow_compute._typed(2.5).type == pa.float64()
    assert arrow_compute._typed(NUMBERS) is NUMBERS
    assert arrow_compute.less(FLOATS, 0.5).to_pylist() == reference.less(FLOATS, 0.5).to_pylist()


def test_edit_and_row_file_builds_import_neither_pyarrow_compute_nor_dateutil(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = synthetic_site(tmp_path / "site", monkeypatch, recipes=4, rows=6, cases=1, posts=1)
    import generate  # bench/, put on the path by synthetic_site

    unwanted = ("pyarrow.compute", "dateutil")
    imported_by_build(root, ())
    edit_first_recipe(root)
    printed, imported = imported_by_build(root, unwanted)
    assert "built" in printed
    assert imported == []
    # A row file: the rows are validated and reconciled again (ListArray.flatten imported it there).
    generate.add_row_file(root, 1, "2027-04-01")
    printed, imported = imported_by_build(root, unwanted)
    assert "built" in printed
    assert imported == []
    # A run at half the speed: a new finding, whose runs' details are read (Table.take imported it).
    generate.add_row_file(root, 1, "2027-04-02", factor=0.5)
    printed, imported = imported_by_build(root, unwanted)
    assert "built" in printed
    assert imported == []

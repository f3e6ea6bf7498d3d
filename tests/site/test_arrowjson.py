"""JSON text from Arrow columns equals ``json.dumps`` of the same values, byte for byte."""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from builder.site.arrowjson import json_array_pieces, json_arrays, json_objects, json_values
from tests.conftest import examples


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


finite = st.floats(allow_nan=False, allow_infinity=False)
text = st.text(alphabet=st.characters(codec="utf-8"), max_size=12)


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(st.one_of(st.none(), finite), max_size=40))
def test_floats_are_written_as_python_writes_them(values: list[float | None]) -> None:
    got = json_values(pa.array(values, pa.float64())).to_pylist()
    assert got == [_dumps(v) for v in values]


@pytest.mark.parametrize(
    "value",
    [0.0, -0.0, 40.0, 1e-4, 9.99e-5, 1e9, 999999999.5, 1e16, 1e22, 5e-324, 1.7976931348623157e308, 123.456],
)
def test_float_magnitudes_at_the_edges(value: float) -> None:
    assert json_values(pa.array([value, -value])).to_pylist() == [_dumps(value), _dumps(-value)]


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), float("-inf")])
def test_non_finite_floats_are_refused_like_allow_nan_false(bad: float) -> None:
    with pytest.raises(ValueError):
        json_values(pa.array([1.0, bad]))


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(st.one_of(st.none(), text), max_size=30))
def test_strings_are_escaped_as_python_escapes_them(values: list[str | None]) -> None:
    # Control characters, quotes, backslashes, U+2028 and non-ASCII included.
    got = json_values(pa.array(values, pa.string())).to_pylist()
    assert got == [_dumps(v) for v in values]


def test_integers_and_booleans() -> None:
    assert json_values(pa.array([1, None, -(2**62)], pa.int64())).to_pylist() == ["1", "null", str(-(2**62))]
    assert json_values(pa.array([True, None, False])).to_pylist() == ["true", "null", "false"]


def test_other_types_are_refused() -> None:
    with pytest.raises(TypeError, match="date32"):
        json_values(pa.array([None], pa.date32()))


rows = st.lists(
    st.tuples(st.sampled_from(["a", "b", "c"]), st.one_of(st.none(), finite), st.one_of(st.none(), text)),
    max_size=25,
)


@settings(max_examples=examples(100), deadline=None)
@given(rows)
def test_objects_and_arrays_equal_json_dumps_of_the_rows(
    items: list[tuple[str, float | None, str | None]],
) -> None:
    table = pa.table(
        {
            "group": pa.array([g for g, _, _ in items], pa.string()),
            "x": pa.array([x for _, x, _ in items], pa.float64()),
            'we"ird': pa.array([t for _, _, t in items], pa.string()),
        }
    )
    raw = pa.array([_dumps({"n": n}) for n in range(len(items))], pa.string())
    objects = json_objects(table.append_column("raw", raw), raw={"raw"})
    expected_rows = [{"group": g, "x": x, 'we"ird': t, "raw": {"n": n}} for n, (g, x, t) in enumerate(items)]
    assert objects.to_pylist() == [_dumps(r) for r in expected_rows]
    grouped = json_arrays(table.append_column("raw", raw), table.column("group"), raw={"raw"})
    want: dict[str, list[Any]] = {}
    for row in expected_rows:
        want.setdefault(row["group"], []).append(row)
    assert grouped == {g: _dumps(v).encode() for g, v in want.items()}


@pytest.mark.parametrize("groups", [list("aaabbbbcdd"), list("abacabadab"), ["x"] * 10])
@pytest.mark.parametrize("per_slice", [1, 2, 3, 1000])
def test_arrays_span_slices(monkeypatch: pytest.MonkeyPatch, groups: list[str], per_slice: int) -> None:
    """Rows are written in slices (bounded string buffers); a group's array may span several."""
    monkeypatch.setattr("builder.site.arrowjson.ROWS_PER_SLICE", per_slice)
    table = pa.table({"g": groups, "n": list(range(len(groups)))})
    want: dict[str, list[Any]] = {}
    for g, n in zip(groups, range(len(groups)), strict=True):
        want.setdefault(g, []).append({"g": g, "n": n})
    assert json_arrays(table, table.column("g")) == {g: _dumps(v).encode() for g, v in want.items()}


@pytest.mark.parametrize("per_slice", [1, 3, 1000])
def test_a_group_is_given_out_as_soon_as_its_last_row_is_written(
    monkeypatch: pytest.MonkeyPatch, per_slice: int
) -> None:
    """So a caller joins each group while later slices are still to be written, and drops the text."""
    monkeypatch.setattr("builder.site.arrowjson.ROWS_PER_SLICE", per_slice)
    written: list[int] = []
    real = json_objects

    def counting(table: pa.Table, raw: Any = (), *, end: str = "}") -> pa.Array:
        written.append(table.num_rows)
        return real(table, raw, end=end)

    monkeypatch.setattr("builder.site.arrowjson.json_objects", counting)
    groups = list("aaabbbbcdd")
    table = pa.table({"g": groups, "n": list(range(len(groups)))})
    seen = []
    for name, pieces in json_array_pieces(table, table.column("g")):
        assert all(isinstance(p, memoryview) for p in pieces)
        last_row = len(groups) - 1 - groups[::-1].index(name)
        assert sum(written) == min(len(groups), (last_row // per_slice + 1) * per_slice)  # no slice more
        rows = [{"g": name, "n": n} for n, g in enumerate(groups) if g == name]
        assert b"".join([b"[", *pieces, b"]"]) == _dumps(rows).encode()
        seen.append(name)
    assert seen == ["a", "b", "c", "d"]


def test_no_rows_no_arrays() -> None:
    assert json_arrays(pa.table({"g": pa.array([], pa.string())}), pa.array([], pa.string())) == {}

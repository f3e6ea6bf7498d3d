"""The Arrow compute functions the builder calls, by name, without importing ``pyarrow.compute``.

``import pyarrow.compute`` makes a Python wrapper, with its docstring, for each of Arrow's ~600
kernels: ≈ 40 ms of every build that touches a table, an edit build's included. The kernels
themselves live in ``pyarrow._compute`` (which ``pyarrow.compute`` re-exports); the functions here
call them as ``pyarrow.compute``'s generated wrappers do: data arguments first, then the options
(positional or by keyword) given to the kernel's options class. Only what the builder uses is here;
``Array.take``, ``Table.filter`` and their kin import ``pyarrow.compute`` on first use, so the
builder calls :func:`take` and :func:`filter` instead on the paths an edit build runs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pyarrow as pa
from pyarrow._compute import (
    CastOptions,
    DictionaryEncodeOptions,
    FilterOptions,
    MatchSubstringOptions,
    ReplaceSubstringOptions,
    ScalarAggregateOptions,
    SetLookupOptions,
    SortOptions,
    TakeOptions,
    call_function,
)

__all__ = [
    "and_",
    "and_kleene",
    "and_not",
    "any",
    "ascii_is_decimal",
    "binary_join_element_wise",
    "binary_length",
    "cast",
    "dictionary_encode",
    "drop_null",
    "equal",
    "fill_null",
    "filter",
    "if_else",
    "invert",
    "is_finite",
    "is_in",
    "is_valid",
    "less",
    "list_flatten",
    "list_value_length",
    "match_substring",
    "not_equal",
    "or_",
    "replace_substring",
    "sort_indices",
    "take",
    "unique",
    "value_counts",
]


_SCALAR_TYPES: tuple[tuple[type, Any], ...] = (
    (bool, pa.bool_()),  # before int: a bool is an int too
    (int, pa.int64()),
    (float, pa.float64()),
    (str, pa.string()),
)


def _typed(value: Any) -> Any:
    """A plain Python value as an Arrow scalar of its type. Arrow infers the type of a bare value
    given to a kernel, and its inference first imports ``dateutil`` (and looks for pandas): ≈ 15 ms
    of an edit build, for a recipe's slug."""
    for kind, arrow_type in _SCALAR_TYPES:
        if isinstance(value, kind):
            return pa.scalar(value, arrow_type)
    return value


def _kernel(name: str, arity: int | None, options: Callable[..., Any] | None = None) -> Callable[..., Any]:
    """``name`` called on its first ``arity`` arguments (all of them when None); the rest, and any
    keywords, make its options."""

    def call(*args: Any, **kwargs: Any) -> Any:
        data, rest = (args, ()) if arity is None else (args[:arity], args[arity:])
        if (rest or kwargs) and options is None:
            raise TypeError(f"{name} takes no options")
        return call_function(
            name,
            [_typed(value) for value in data],
            options(*rest, **kwargs) if options and (rest or kwargs) else None,
        )

    call.__name__ = call.__qualname__ = name
    call.__doc__ = f"Arrow's ``{name}`` kernel, as ``pyarrow.compute.{name}``."
    return call


and_ = _kernel("and", 2)
and_kleene = _kernel("and_kleene", 2)
and_not = _kernel("and_not", 2)
any = _kernel("any", 1, ScalarAggregateOptions)  # noqa: A001 - pyarrow.compute's name
ascii_is_decimal = _kernel("ascii_is_decimal", 1)
binary_join_element_wise = _kernel("binary_join_element_wise", None)
binary_length = _kernel("binary_length", 1)
dictionary_encode = _kernel("dictionary_encode", 1, DictionaryEncodeOptions)
drop_null = _kernel("drop_null", 1)
equal = _kernel("equal", 2)
if_else = _kernel("if_else", 3)
invert = _kernel("invert", 1)
is_finite = _kernel("is_finite", 1)
is_in = _kernel("is_in", 1, SetLookupOptions)
is_valid = _kernel("is_valid", 1)
less = _kernel("less", 2)
list_flatten = _kernel("list_flatten", 1)
list_value_length = _kernel("list_value_length", 1)
match_substring = _kernel("match_substring", 1, MatchSubstringOptions)
not_equal = _kernel("not_equal", 2)
or_ = _kernel("or", 2)
replace_substring = _kernel("replace_substring", 1, ReplaceSubstringOptions)
sort_indices = _kernel("sort_indices", 1, SortOptions)
unique = _kernel("unique", 1)
value_counts = _kernel("value_counts", 1)


def cast(arr: Any, target_type: Any, safe: bool = True) -> Any:
    """``arr`` as ``target_type`` (``safe``: fail on overflow and truncation, as ``pc.cast``)."""
    target = pa.lib.ensure_type(target_type)
    return call_function("cast", [arr], CastOptions.safe(target) if safe else CastOptions.unsafe(target))


def fill_null(values: Any, fill_value: Any) -> Any:
    """``values`` with nulls replaced, a plain value taken as a scalar of the values' type (as
    ``pc.fill_null``)."""
    if not isinstance(fill_value, pa.Array | pa.ChunkedArray | pa.Scalar):
        fill_value = pa.scalar(fill_value, type=values.type)
    elif values.type != fill_value.type:
        fill_value = pa.scalar(fill_value.as_py(), type=values.type)
    return call_function("coalesce", [values, fill_value])


def take(data: Any, indices: Any) -> Any:
    """The rows (or values) of ``data`` at ``indices``, bounds checked (``Table.take``)."""
    return call_function("take", [data, indices], TakeOptions(boundscheck=True))


def filter(data: Any, mask: Any) -> Any:  # noqa: A001 - pyarrow.compute's name
    """The rows of ``data`` where ``mask`` is true, nulls dropped (``Table.filter``)."""
    return call_function("filter", [data, mask], FilterOptions("drop"))

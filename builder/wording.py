"""Counts and figures in words: ``1 post``, ``2 recipes``, ``100,000 rows``; figures exactly as recorded."""

from __future__ import annotations

import functools
import math


def counted(n: int, one: str, many: str | None = None) -> str:
    """``n`` with its noun, singular for exactly one (``many`` defaults to ``one`` + "s")."""
    return f"{n:,} {one if n == 1 else (many or one + 's')}"


def fmt_number(value: float | int | None) -> str:
    """Show a number exactly as recorded (shortest round-trip form), with thousands separators."""
    # Most figures are below 1,000: no separator to add, so their shortest round-trip text is the
    # answer (a recipe page formats hundreds of numbers, most of them seen once).
    if type(value) is float:
        if 0.0 <= value < 1000.0:
            return str(int(value)) if value.is_integer() else repr(value)
    elif type(value) is int and 0 <= value < 1000:
        return str(value)
    return _fmt_number(value)


@functools.lru_cache(maxsize=1 << 16, typed=True)  # tables repeat the same figures many times
def _fmt_number(value: float | int | None) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        if not math.isfinite(value):
            return str(value)
        if value.is_integer() and abs(value) < 1e15:
            return f"{int(value):,}"
        text = repr(value)
        if "e" in text:
            return text
        whole, _, frac = text.partition(".")
        return f"{int(whole):,}.{frac}"
    return f"{value:,}"

"""Counts in words for what the commands print: ``1 post``, ``2 recipes``, ``100,000 rows``."""

from __future__ import annotations


def counted(n: int, one: str, many: str | None = None) -> str:
    """``n`` with its noun, singular for exactly one (``many`` defaults to ``one`` + "s")."""
    return f"{n:,} {one if n == 1 else (many or one + 's')}"

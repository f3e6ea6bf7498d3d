"""How pages write numbers: figures exactly as recorded with thousands separators, ratios to two places.

The ``num`` and ``ratio`` filters of the templates, and the tables built in Python.
"""

from __future__ import annotations

from builder.wording import fmt_number

__all__ = ["fmt_number", "fmt_ratio"]


def fmt_ratio(value: float) -> str:
    return f"{value:.2f}×"

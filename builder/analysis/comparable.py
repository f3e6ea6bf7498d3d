"""Rows that can take part in no comparison, and why: ``check`` warns about them.

A finding compares runs of one recipe at one setting (hardware, prompt length, context depth,
concurrency, request rate). A row whose prompt length is unknown is at no setting; a row whose setting
no other run of its recipe measured has nothing to be compared with. Neither is an error (history is
kept), but a contributor should know that such rows can never show that a result does not reproduce.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from builder.analysis.candidates import lone_setting_rows
from builder.analysis.run_groups import Combinations, RunCodes, combinations

if TYPE_CHECKING:
    from builder.data.load import Site

UNKNOWN_PROMPT = (
    "not compared: the prompt length is unknown, so the row is at no setting another run could share "
    "(give prompt_tokens)"
)
ALONE = (
    "not compared: no other run of recipe '{recipe}' measured this setting ({setting}); "
    "runs are compared only at the same hardware, prompt, context, concurrency and request rate"
)


@dataclass(frozen=True)
class NotCompared:
    """A row that can take part in no comparison."""

    file_id: int
    file_row: int
    message: str


def _setting_text(prompt: int, context: int, concurrency: int | None, rate: float | None) -> str:
    parts = [f"{prompt}-token prompt", f"context {context}"]
    if rate is not None:
        parts.append("unlimited rate" if rate == float("inf") else f"{rate:g} req/s")
    if concurrency is not None:
        parts.append(f"concurrency {concurrency}")
    return ", ".join(parts)


def not_compared(site: Site, combos: Combinations | None = None) -> list[NotCompared]:
    """Every row that can take part in no comparison, in row order, with the reason.

    Runs and settings are those :mod:`builder.analysis.findings` compares (flags and env by their
    normalised form), counted on the integer codes of :mod:`builder.analysis.run_groups`."""
    rows = site.rows
    if rows.num_rows == 0:
        return []
    codes = RunCodes(site, combos if combos is not None else combinations(site)).table
    unknown = np.flatnonzero(pc.is_null(codes.column("prompt_tokens")).to_numpy(zero_copy_only=False))
    positions = np.concatenate([unknown, lone_setting_rows(codes)])
    row_id = rows.column("row_id").to_numpy()[positions]
    positions = positions[np.argsort(row_id, kind="stable")]
    shown = rows.select(
        ["file_id", "file_row", "recipe", "prompt_tokens", "context_tokens", "concurrency", "request_rate"]
    ).take(pa.array(positions))
    out = []
    for file_id, file_row, recipe, prompt, context, concurrency, rate in zip(
        *(column.to_pylist() for column in shown.columns), strict=True
    ):
        if prompt is None:
            message = UNKNOWN_PROMPT
        else:
            message = ALONE.format(recipe=recipe, setting=_setting_text(prompt, context, concurrency, rate))
        out.append(NotCompared(file_id, file_row, message))
    return out

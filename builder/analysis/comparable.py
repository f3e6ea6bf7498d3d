"""Rows that can take part in no comparison, and why: ``check`` warns about them.

A finding compares runs of one recipe at one setting (hardware, prompt length, context depth,
concurrency, request rate). A row whose prompt length is unknown is at no setting; a row whose setting
no other run of its recipe measured has nothing to be compared with. Neither is an error (history is
kept), but a contributor should know that such rows can never show that a result does not reproduce.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from builder.analysis.candidates import COMPARED, UNKNOWABLE, at_known_setting, lone_setting_rows
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


def _setting_text(setting: dict[str, Any]) -> str:
    parts = [f"{setting['prompt_tokens']}-token prompt", f"context {setting['context_tokens']}"]
    rate, concurrency = setting["request_rate"], setting["concurrency"]
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
    unknown = np.flatnonzero(~at_known_setting(codes))
    positions = np.concatenate([unknown, lone_setting_rows(codes)])
    row_id = rows.column("row_id").to_numpy()[positions]
    positions = positions[np.argsort(row_id, kind="stable")]
    told = COMPARED[1:]  # row columns all but the hardware, which the row's node gives
    shown = rows.select(["file_id", "file_row", "recipe", *told]).take(pa.array(positions))
    out = []
    for file_id, file_row, recipe, *values in zip(
        *(column.to_pylist() for column in shown.columns), strict=True
    ):
        setting = dict(zip(told, values, strict=True))
        if any(setting[key] is None for key in UNKNOWABLE):
            message = UNKNOWN_PROMPT  # prompt_tokens is the one column a row may give as unknown
        else:
            message = ALONE.format(recipe=recipe, setting=_setting_text(setting))
        out.append(NotCompared(file_id, file_row, message))
    return out

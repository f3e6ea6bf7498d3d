"""Rows that can take part in no comparison, and why: ``check`` warns about them.

A finding compares runs of one recipe at one setting (hardware, prompt length, context depth,
concurrency, request rate). A row whose prompt length is unknown is at no setting; a row whose setting
no other run of its recipe measured has nothing to be compared with. Neither is an error (history is
kept), but a contributor should know that such rows can never show that a result does not reproduce.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import pyarrow as pa

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


def not_compared(site: Site) -> list[NotCompared]:
    """Every row that can take part in no comparison, in row order, with the reason."""
    if site.rows.num_rows == 0:
        return []
    nodes = pa.table({"id": list(site.nodes), "hardware": [node.hardware for node in site.nodes.values()]})
    con = site.con
    con.register("_node_hw", nodes)
    try:
        found = con.execute(
            """
            WITH r AS (
                SELECT rows.*, _node_hw.hardware,
                    [date::VARCHAR, coalesce(time, ''), node, engine_version, coalesce(engine_build, ''),
                     coalesce(flags, ''), coalesce(env, '')] AS run
                FROM rows JOIN _node_hw ON rows.node = _node_hw.id
            ), settings AS (
                SELECT recipe, hardware, prompt_tokens, context_tokens, concurrency, request_rate,
                    count(DISTINCT run) AS runs
                FROM r WHERE prompt_tokens IS NOT NULL
                GROUP BY ALL
            )
            SELECT r.row_id, r.file_id, r.file_row, r.recipe, r.prompt_tokens, r.context_tokens,
                r.concurrency, r.request_rate, s.runs
            FROM r LEFT JOIN settings s
                ON r.recipe = s.recipe AND r.hardware = s.hardware AND r.prompt_tokens = s.prompt_tokens
                AND r.context_tokens = s.context_tokens
                AND r.concurrency IS NOT DISTINCT FROM s.concurrency
                AND r.request_rate IS NOT DISTINCT FROM s.request_rate
            WHERE r.prompt_tokens IS NULL OR s.runs = 1
            ORDER BY r.row_id
            """
        ).fetchall()
    finally:
        con.unregister("_node_hw")
    out = []
    for _row_id, file_id, file_row, recipe, prompt, context, concurrency, rate, _runs in found:
        if prompt is None:
            message = UNKNOWN_PROMPT
        else:
            message = ALONE.format(recipe=recipe, setting=_setting_text(prompt, context, concurrency, rate))
        out.append(NotCompared(file_id, file_row, message))
    return out

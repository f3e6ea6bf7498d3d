"""The figure of a recipe at a setting for a metric: which rows, which run, which value.

One rule gives every figure the site shows for a (recipe, setting, metric) — headlines, the chooser,
comparison pages and their charts, recipe cards, prose figures and the API — so that one key never
reads two values. :func:`pick_cell` is that rule on a list of rows; :class:`builder.site.figure_grid.FigureGrid`
is the same rule vectorised over many recipes (a test holds the two equal on random rows).

- **Setting**: the row columns :class:`~builder.content.models.Row` marks as the setting
  (:data:`~builder.content.models.SETTING_KEYS`): hardware (through the node), prompt length, output
  length, context depth, concurrency and request rate (:func:`setting_of`). Rows at another output
  length are another setting, never trials of this one.
- **Which rows**: of the recipe's rows at the setting that record the metric, the best-ranked
  (:func:`status_rank`): rows that match the recipe, then rows that agree on everything they record
  (fewest fields unrecorded first), then rows that differ (fewest differences first) where a caller
  allows them.
- **Which run**: among those, the latest run (:func:`run_key`: date, time, node, engine version and
  build, flags, env — compared in that order).
- **Which value**: the median of that run's rows (its trials), as the results table lists them.
"""

from __future__ import annotations

import datetime as dt
import math
import statistics
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any, Protocol

from builder.analysis.findings import load_text
from builder.analysis.reconcile import DIFFERS, MATCHES, NOT_RECORDED, RowStatus
from builder.content.models import (
    LOWER_IS_BETTER,
    QUANTITIES,
    ROW_SCHEMA,
    SETTING_KEYS,
    WORKLOAD,
    HeadlineSetting,
)

Row = dict[str, Any]

STATUS_LABELS: dict[str, str] = {
    MATCHES: "matches recipe",
    NOT_RECORDED: "not recorded",
    DIFFERS: "differs from recipe",
}
"""Reader-facing names of row statuses (also the legend of the history chart)."""

SERVE_PROPERTIES: tuple[str, ...] = ("weights_gib", "kv_tokens_per_gib", "kv_pool_tokens")
"""Row fields that describe the serve rather than one benchmark setting (those the row model marks
:class:`~builder.content.models.ServeProperty`), in the order pages show them."""

QUANTITY_LABELS: dict[str, tuple[str, str]] = {name: (q.label, q.unit) for name, q in QUANTITIES.items()}
"""(label, unit) of every quantity a chart or comparison shows."""

SMALLER_IS_BETTER: frozenset[str] = LOWER_IS_BETTER
"""Quantities where the smaller figure is the better one (latency; memory taken by weights)."""

STATUS_ORDER = {MATCHES: 0, NOT_RECORDED: 1, DIFFERS: 2}


SHAPE: tuple[str, ...] = tuple(key for key in WORKLOAD if key != "output_tokens")
"""The setting's shape as a headline names it (prompt, context, load): a headline names no hardware or
output length (of those, the one measured most is taken)."""
HEADLINE_SHAPE: tuple[str, ...] = tuple(key for key in SHAPE if key in HeadlineSetting.model_fields)
"""What a recipe's ``headline`` gives of the shape (a headline is closed-loop: no request rate)."""


def headline_shape(setting: Any) -> tuple[Any, ...]:
    """A recipe's ``headline``, or a :class:`Setting`, as the keys of :data:`HEADLINE_SHAPE`."""
    return tuple(getattr(setting, key) for key in HEADLINE_SHAPE)


FIRST, LAST = False, True
PAGE_ORDER: tuple[tuple[str, bool], ...] = (
    ("hardware", LAST),
    ("prompt_tokens", LAST),
    ("context_tokens", LAST),
    ("request_rate", FIRST),
    ("concurrency", FIRST),
    ("output_tokens", LAST),
)
"""The order pages list settings in (:meth:`Setting.sort_key`, :class:`~builder.site.figure_grid.FigureGrid`),
each key with where its empty value goes: not :data:`SETTING_KEYS`' order, since a page keeps the
settings of one prompt and context together, closed-loop runs (no rate) before open-loop ones, a
missing cap first, and output lengths last. ``tests/content/test_setting.py`` holds its keys to the
setting's."""


@dataclass(frozen=True)
class Setting:
    """Where a figure was measured: hardware and the benchmark shape, one field per key of
    :data:`~builder.content.models.SETTING_KEYS` (``tests/content/test_setting.py`` holds them equal)."""

    hardware: str
    prompt_tokens: int | None
    """``None`` when the source does not give the prompt length."""
    context_tokens: int
    concurrency: int | None
    """The cap on concurrent requests; ``None`` for an open-loop run without one."""
    request_rate: float | None = None
    """Requests/s of an open-loop run (``inf``: unlimited); ``None`` for a closed-loop run."""
    output_tokens: int | None = None
    """Output length; ``None`` when the source does not give it."""

    @classmethod
    def of(cls, values: Sequence[Any]) -> Setting:
        """The setting whose values of :data:`~builder.content.models.SETTING_KEYS` are ``values``."""
        return cls(*[values[i] for i in _FIELD_PLACES])

    def __lt__(self, other: Setting) -> bool:
        return self.sort_key() < other.sort_key()

    @property
    def open_loop(self) -> bool:
        return self.request_rate is not None

    @property
    def comparable(self) -> bool:
        """Figures at an unknown prompt length are not put side by side with anything."""
        return self.prompt_tokens is not None

    def label(self, *, hardware_name: str | None = None) -> str:
        prompt = (
            "prompt length not recorded"
            if self.prompt_tokens is None
            else f"{self.prompt_tokens:,}-token prompt"
        )
        parts = [prompt]
        if self.output_tokens is not None:
            parts.append(f"{self.output_tokens:,} output tokens")
        if self.context_tokens:
            parts.append(f"{self.context_tokens:,}-token context")
        parts.append(load_label(self.concurrency, self.request_rate))
        if hardware_name:
            parts.append(hardware_name)
        return " · ".join(parts)

    def key(self, recipe: str, metric: str) -> str:
        """:func:`figure_key` of ``recipe``'s ``metric`` at this setting."""
        return figure_key(recipe, metric, self.hardware, *self.workload())

    def workload(self) -> tuple[Any, ...]:
        """The values of :data:`~builder.content.models.WORKLOAD` (the setting without its hardware)."""
        return tuple(getattr(self, key) for key in WORKLOAD)

    def sort_key(self) -> tuple[Any, ...]:
        """Orders settings as pages list them (:data:`PAGE_ORDER`)."""
        key: list[Any] = []
        for name, empty in PAGE_ORDER:
            value = getattr(self, name)
            key += ((value is None) == empty, 0 if value is None else value)
        return tuple(key)


_FIELD_PLACES = tuple(SETTING_KEYS.index(field.name) for field in fields(Setting))
"""Where each field of :class:`Setting` is among :data:`~builder.content.models.SETTING_KEYS`."""


def figure_key(recipe: str, metric: str, hardware: str, *workload: Any) -> str:
    """The (recipe, setting, metric) a figure is of, as one string: pages mark each figure they show
    with it (``data-figure``), so a test can find two values for one key. ``workload``: the values of
    :data:`~builder.content.models.WORKLOAD`, in order."""

    def part(name: str, value: float | None) -> str:
        if value is None:
            value = ROW_SCHEMA[name].empty
        if value is None:
            return "-"
        return "inf" if math.isinf(value) else f"{value:g}"

    parts = (part(name, value) for name, value in zip(WORKLOAD, workload, strict=True))
    return "|".join((recipe, metric, hardware, *parts))


def load_label(concurrency: int | None, request_rate: float | None) -> str:
    """How a setting loads the server: ``concurrency 8``; an open-loop run's rate, ``10 req/s`` or
    ``∞ req/s`` (unlimited), with its cap when it has one."""
    return load_text({"concurrency": concurrency, "request_rate": request_rate})


_WORKLOAD_EMPTY = tuple((key, ROW_SCHEMA[key].empty) for key in WORKLOAD)
"""Each key of the workload with what its empty cell reads as (:class:`~builder.content.models.EmptyMeans`:
a context not given is 0), else ``None``."""


def setting_values(row: Row, hardware: str) -> tuple[Any, ...]:
    """The row's setting's values of :data:`~builder.content.models.SETTING_KEYS`, on ``hardware`` (its
    node's), an empty cell read as the row model says (charts call it for every row)."""
    return (
        hardware,
        *[empty if (value := row.get(key)) is None else value for key, empty in _WORKLOAD_EMPTY],
    )


def setting_of(row: Row, node_hardware: Mapping[str, str]) -> Setting:
    return Setting.of(setting_values(row, node_hardware.get(row["node"], "")))


RUN_FIELDS: tuple[str, ...] = ("date", "time", "node", "engine_version", "engine_build", "flags", "env")
"""What tells the runs of one setting apart, in the order that makes one run later than another."""


def run_key(row: Row) -> tuple[Any, ...]:
    """Orders runs: the latest run has the largest key (unrecorded fields compare as empty)."""
    return (row["date"], *(row.get(f) or "" for f in RUN_FIELDS[1:]))


def status_rank(status: RowStatus) -> tuple[int, int]:
    """Lower is better: matching rows, then rows that leave fewer fields unrecorded, then off-recipe rows."""
    return (STATUS_ORDER.get(status.status, 3), len(status.unrecorded) + len(status.differences))


def why_text(status: RowStatus) -> str:
    """One line saying why a row is off-recipe; empty for a matching row."""
    if status.status == DIFFERS:
        return "differs: " + "; ".join(d.describe() for d in status.differences)
    if status.status == NOT_RECORDED:
        return "not recorded: " + ", ".join(status.unrecorded)
    return ""


@dataclass(frozen=True)
class Cell:
    """One figure: the median of one run's rows for one metric."""

    recipe: str
    metric: str
    value: float
    trials: int
    date: dt.date
    node: str
    engine_version: str
    status: str
    """Status of the rows used (all rows of a run picked together share their rank)."""
    why: str
    """Why the rows are off-recipe; empty when they match."""
    row_ids: tuple[int, ...]
    varied: bool = False
    """Whether the run's rows disagree (so the median is worth saying)."""

    @property
    def detail(self) -> str:
        """:attr:`why` without its ``differs:`` / ``not recorded:`` lead, for beside a status badge."""
        return self.why.partition(": ")[2]

    @property
    def off_recipe(self) -> bool:
        return self.status != MATCHES


class Statuses(Protocol):
    """Where :func:`pick_cell` reads row statuses: a :class:`Reconciliation`, or a page's own."""

    def status(self, row_id: int) -> RowStatus: ...


def pick_cell(rows: Iterable[Row], metric: str, recon: Statuses, *, allow_differs: bool) -> Cell | None:
    """The figure for ``metric`` from ``rows`` (one recipe, one setting), or ``None`` (see the module).

    ``allow_differs``: whether rows that differ from the recipe may give the figure when no better
    row has the metric; without, such a setting has no figure (its rows are history).
    """
    candidates = [(status_rank(recon.status(r["row_id"])), r) for r in rows if r.get(metric) is not None]
    if not candidates:
        return None
    best = min(rank for rank, _ in candidates)
    if best[0] >= STATUS_ORDER[DIFFERS] and not allow_differs:
        return None
    ranked = [r for rank, r in candidates if rank == best]
    latest = max(run_key(r) for r in ranked)
    run = sorted((r for r in ranked if run_key(r) == latest), key=lambda r: r["row_id"])
    status = recon.status(run[0]["row_id"])
    values = [r[metric] for r in run]
    return Cell(
        recipe=run[0]["recipe"],
        metric=metric,
        value=statistics.median(values),
        trials=len(run),
        date=run[0]["date"],
        node=run[0]["node"],
        engine_version=run[0]["engine_version"],
        status=status.status,
        why=why_text(status),
        row_ids=tuple(r["row_id"] for r in run),
        varied=len(set(values)) > 1,
    )


def median_row(cell: Cell, value_of: Callable[[int], float]) -> int:
    """The row id of ``cell``'s run nearest its median (the first of equals): the row a figure links to."""
    return min(cell.row_ids, key=lambda i: (abs(value_of(i) - cell.value), i))

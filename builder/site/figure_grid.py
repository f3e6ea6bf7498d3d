"""Every figure of a few recipes at once: per recipe, setting and quantity, the run ``pick_cell`` picks.

A comparison page lines up hundreds of (build, setting) pairs. Picking each with
:func:`builder.site.figures.pick_cell` walks the setting's rows once per quantity, after turning every row
of every build into a dict. Here the rows stay in Arrow columns: one numpy sort per quantity orders
them by (recipe, setting, status rank, latest run first), so the first run of each group is the
pick, found for every group at once. A :class:`~builder.site.figures.Cell` (median, status, why) is
built only for the figures a page shows.

The choice is ``pick_cell``'s with ``allow_differs=True`` (``tests/site/test_figure_grid.py`` checks it on
random rows). ``pick_cell(..., allow_differs=False)`` gives the same cell unless its status is
``differs``, where it gives ``None``.
"""

from __future__ import annotations

import datetime as dt
import statistics
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from builder.analysis.reconcile import Reconciliation
from builder.content.models import METRICS, ROW_SCHEMA, WORKLOAD
from builder.data.ingest import ROWS_SCHEMA
from builder.site.figures import (
    FIRST,
    LAST,
    PAGE_ORDER,
    RUN_FIELDS,
    SERVE_PROPERTIES,
    STATUS_ORDER,
    Cell,
    Row,
    Setting,
    status_rank,
    why_text,
)

QUANTITIES: tuple[str, ...] = (*METRICS, *SERVE_PROPERTIES)
"""Per-setting metrics first, then the serve properties (one figure per recipe, no setting)."""

SCHEMA = pa.schema(
    [ROWS_SCHEMA.field(name) for name in ("row_id", "recipe", *RUN_FIELDS, *WORKLOAD, *QUANTITIES)]
)
"""The columns a grid reads, typed as in the ``rows`` table: the row, its run, its setting (the node
gives the hardware), its figures."""


def rows_table(rows: Mapping[str, list[Row]], slugs: Iterable[str]) -> pa.Table:
    """The rows of ``slugs`` as one Arrow table: sliced, never converted, from ``rows_by_recipe`` (or a
    view of it with the same ``table`` method); converted from rows given as dicts."""
    names = SCHEMA.names
    table_of = getattr(rows, "table", None)
    if table_of is not None:
        parts = [table_of(slug).select(names) for slug in slugs]
    else:
        parts = [
            pa.Table.from_pylist([{k: r.get(k) for k in names} for r in rows.get(slug, [])], schema=SCHEMA)
            for slug in slugs
        ]
    return pa.concat_tables(parts) if parts else SCHEMA.empty_table()


def _codes(column: pa.ChunkedArray) -> tuple[np.ndarray, list[Any]]:
    """(code per row, distinct values in sorted order): codes compare as the values do."""
    encoded = pc.dictionary_encode(column.combine_chunks())
    values = encoded.dictionary.to_pylist()
    order = sorted(range(len(values)), key=values.__getitem__)
    rank = np.empty(len(values), np.int64)
    rank[order] = np.arange(len(values))
    indices = encoded.indices.to_numpy(zero_copy_only=False)
    return rank[indices] if len(values) else indices.astype(np.int64), [values[i] for i in order]


def _ranks(recon: Reconciliation, row_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`status_rank` of every row, as two arrays (status order, fields off or unrecorded)."""
    if recon.statuses:  # statuses set one by one (hand-made reconciliations): ask for each
        ranks = [status_rank(recon.status(int(i))) for i in row_ids]
        return np.array([r[0] for r in ranks], np.int64), np.array([r[1] for r in ranks], np.int64)
    kinds = recon.kinds
    first = np.array([STATUS_ORDER.get(k.status, 3) for k in kinds], np.int64)
    second = np.array([len(k.unrecorded) + len(k.differences) for k in kinds], np.int64)
    kind = recon.kind_of_row[row_ids]
    return first[kind], second[kind]


_EPOCH = dt.date(1970, 1, 1)
_EMPTY_VALUE = {FIRST: -1, LAST: np.iinfo(np.int64).max // 2}
"""Stands for an empty setting value (a prompt length not recorded, a closed-loop run's rate, an
open-loop run's missing cap): below every real one (each is >= 0) or above, as ``PAGE_ORDER`` puts it."""


def _dense(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(distinct values sorted, code of each value)."""
    distinct, codes = np.unique(values, return_inverse=True)
    return distinct, codes.reshape(-1)


class FigureGrid:
    """The picked run of every (recipe, setting, quantity) of ``table``; cells on demand.

    Recipes are numbered in the order their rows come in ``table`` (``rows_table`` keeps the order
    of the slugs it is given), and :meth:`measured` lists them in that order.
    """

    def __init__(self, table: pa.Table, recon: Reconciliation, node_hw: Mapping[str, str]) -> None:
        self._table = table
        self._recon = recon
        self._py: dict[str, list[Any]] = {}
        self._cells: dict[tuple[str, Setting | None, str], Cell | None] = {}
        self._measured: dict[str, list[tuple[Setting | None, list[str]]]] = {}
        self._py_runs: dict[str, tuple[dict[int, tuple[int, int]], list[int]]] = {}
        self._by_recipe: dict[str, dict[str, list[Setting | None]]] = {}
        self._dates: dict[int, dt.date] = {}
        self._whys: dict[int, str] = {}
        # Per quantity: the sorted row positions, and per picked run its group key
        # (setting code × recipes + recipe code), its start in that order and its length.
        self._picked: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = {}
        recipe = pc.dictionary_encode(table.column("recipe").combine_chunks())
        self._recipes: list[str] = recipe.dictionary.to_pylist()
        self._recipe_code = {slug: i for i, slug in enumerate(self._recipes)}
        self._settings: list[Setting] = []
        self._code_of: dict[int, int] = {}
        """Setting code by object identity: callers pass back the settings :meth:`measured` gave."""
        self._setting_code: dict[Setting, int] | None = None
        if table.num_rows == 0:
            return
        recipe_code = recipe.indices.to_numpy(zero_copy_only=False).astype(np.int64)
        row_id = table.column("row_id").to_numpy().astype(np.int64)
        r0, r1 = _ranks(recon, row_id)
        date = table.column("date").to_numpy().astype("datetime64[D]").astype(np.int64)
        node, nodes = _codes(table.column("node"))
        self._nodes: list[str] = nodes
        self._node_of: list[int] = node.tolist()
        self._days: list[int] = date.tolist()
        hw_names = sorted({node_hw.get(n, "") for n in nodes})
        hw_index = {h: i for i, h in enumerate(hw_names)}
        hw = np.array([hw_index[node_hw.get(n, "")] for n in nodes], np.int64)[node]
        # A setting as one integer: mixed radix over the dense codes of its parts in PAGE_ORDER (the
        # hardware first), so setting codes sort as Setting.sort_key does.
        parts: list[tuple[str, np.ndarray, Any]] = []
        combined = hw
        for name, empty in PAGE_ORDER[1:]:
            column = table.column(name)
            if ROW_SCHEMA[name].empty is not None:  # an empty cell reads as a value (context: 0)
                column = pc.fill_null(column, ROW_SCHEMA[name].empty)
            stand_in = pa.scalar(_EMPTY_VALUE[empty], column.type)
            distinct_values, code = _dense(pc.fill_null(column, stand_in).to_numpy())
            parts.append((name, distinct_values, stand_in.as_py()))
            combined = combined * len(distinct_values) + code
        distinct, setting_code = _dense(combined)
        fields: dict[str, list[Any]] = {}
        rest = distinct
        for name, distinct_values, stand_in in reversed(parts):
            rest, code = np.divmod(rest, len(distinct_values))
            fields[name] = [None if v == stand_in else v for v in distinct_values[code].tolist()]
        fields["hardware"] = [hw_names[i] for i in rest.tolist()]
        self._settings = [
            Setting(**dict(zip(fields, values, strict=True))) for values in zip(*fields.values(), strict=True)
        ]
        self._code_of = {id(setting): i for i, setting in enumerate(self._settings)}
        n_recipes = len(self._recipes)
        per_setting = setting_code * n_recipes + recipe_code
        # Sort keys shared by every quantity; lexsort sorts by the last key first: best rank, then
        # the latest run (figures.run_key: date, time, node, version, build, flags, env), then row
        # order, as pick_cell chooses.
        later = [
            date if f == "date" else node if f == "node" else _codes(pc.fill_null(table.column(f), ""))[0]
            for f in RUN_FIELDS
        ]
        tie_keys = (row_id, *(-k for k in reversed(later)), r1, r0)
        for quantity in QUANTITIES:
            column = table.column(quantity)
            if column.null_count == len(column):
                continue  # most sites record a few of the quantities
            present = np.flatnonzero(pc.is_valid(column).to_numpy(zero_copy_only=False))
            group = recipe_code if quantity in SERVE_PROPERTIES else per_setting
            order = present[np.lexsort((*(k[present] for k in tie_keys), group[present]))]
            g = group[order]
            starts = np.flatnonzero(np.r_[True, g[1:] != g[:-1]])
            head = order[np.repeat(starts, np.diff(np.r_[starts, len(order)]))]
            same_run = (r0[order] == r0[head]) & (r1[order] == r1[head])
            for k in later:
                same_run &= k[order] == k[head]
            lengths = np.add.reduceat(same_run.astype(np.int64), starts)
            self._picked[quantity] = (order, g[starts], starts, lengths)

    @property
    def recipes(self) -> list[str]:
        return list(self._recipes)

    def measured(self, quantity: str) -> list[tuple[Setting | None, list[str]]]:
        """Every setting where ``quantity`` was measured (``None`` for a serve property) with the
        recipes measured there, settings in :meth:`Setting.sort_key` order, recipes in table order."""
        measured = self._measured.get(quantity)
        if measured is None:
            measured = self._measured[quantity] = self._list_measured(quantity)
        return list(measured)

    def settings_of(self, quantity: str, recipe: str) -> list[Setting | None]:
        """The settings where ``recipe`` measured ``quantity``, in code order."""
        by_recipe = self._by_recipe.get(quantity)
        if by_recipe is None:
            by_recipe = self._by_recipe[quantity] = {}
            for setting, recipes in self.measured(quantity):
                for slug in recipes:
                    by_recipe.setdefault(slug, []).append(setting)
        return list(by_recipe.get(recipe, ()))

    def _list_measured(self, quantity: str) -> list[tuple[Setting | None, list[str]]]:
        picked = self._picked.get(quantity)
        if picked is None:
            return []
        keys = picked[1]
        n_recipes = len(self._recipes)
        names = [self._recipes[r] for r in (keys % n_recipes).tolist()]
        if quantity in SERVE_PROPERTIES:
            return [(None, names)]
        codes = keys // n_recipes
        bounds = [0, *(np.flatnonzero(np.diff(codes)) + 1).tolist(), len(keys)]
        settings = codes.tolist()
        return [(self._settings[settings[a]], names[a:b]) for a, b in zip(bounds, bounds[1:], strict=False)]

    def _column(self, name: str) -> list[Any]:
        values = self._py.get(name)
        if values is None:
            values = self._py[name] = self._table.column(name).to_pylist()
        return values

    def _code(self, setting: Setting | None) -> int | None:
        if setting is None:
            return None
        code = self._code_of.get(id(setting))
        if code is not None and self._settings[code] is setting:
            return code
        if self._setting_code is None:  # a setting made elsewhere: look it up by value
            self._setting_code = {s: i for i, s in enumerate(self._settings)}
        return self._setting_code.get(setting)

    def cell(self, quantity: str, setting: Setting | None, recipe: str) -> Cell | None:
        """The figure :func:`~builder.site.figures.pick_cell` gives (off-recipe rows allowed), or ``None``."""
        key = (quantity, setting, recipe)
        if key in self._cells:
            return self._cells[key]
        self._cells[key] = cell = self._make_cell(quantity, setting, recipe)
        return cell

    def _runs(self, quantity: str) -> tuple[dict[int, tuple[int, int]], list[int]] | None:
        """Group key → (start, length) of its run, and the sorted positions, as Python objects:
        a page asks for dozens of cells, and numpy's per-call cost would be most of each."""
        runs = self._py_runs.get(quantity)
        if runs is None:
            picked = self._picked.get(quantity)
            if picked is None:
                return None
            order, keys, starts, lengths = picked
            where = dict(zip(keys.tolist(), zip(starts.tolist(), lengths.tolist(), strict=True), strict=True))
            runs = self._py_runs[quantity] = (where, order.tolist())
        return runs

    def _make_cell(self, quantity: str, setting: Setting | None, recipe: str) -> Cell | None:
        runs = self._runs(quantity)
        recipe_code = self._recipe_code.get(recipe)
        if runs is None or recipe_code is None:
            return None
        if quantity in SERVE_PROPERTIES:
            if setting is not None:
                return None
            wanted = recipe_code
        else:
            code = self._code(setting)
            if code is None:
                return None
            wanted = code * len(self._recipes) + recipe_code
        where, order = runs
        run = where.get(wanted)
        if run is None:
            return None
        positions = order[run[0] : run[0] + run[1]]
        column = self._column(quantity)
        values = [column[p] for p in positions]
        ids = self._column("row_id")
        row_ids = tuple(ids[p] for p in positions)
        head = positions[0]
        status = self._recon.status(row_ids[0])
        why = self._whys.get(id(status))
        if why is None:
            why = self._whys[id(status)] = why_text(status)
        days = self._days[head]
        date = self._dates.get(days)
        if date is None:
            date = self._dates[days] = _EPOCH + dt.timedelta(days=days)
        return Cell(
            recipe=recipe,
            metric=quantity,
            value=values[0] if len(values) == 1 else statistics.median(values),
            trials=len(values),
            date=date,
            node=self._nodes[self._node_of[head]],
            engine_version=self._column("engine_version")[head],
            status=status.status,
            why=why,
            row_ids=row_ids,
            varied=len(set(values)) > 1,
        )

"""Rows grouped into runs per setting and metric; only groups that could split reach Python.

A *run* is the rows of one recipe with the same date, node, engine_version, engine_build, flags and
env (flags and env by their normalised form); a *group* is the runs of one recipe at one setting
(:data:`~builder.analysis.candidates.COMPARED`: the row's setting columns, the node as its hardware, but
output_tokens) for one metric. Rows at no known setting (without a prompt length) take no part.

For speed every grouping column becomes an integer first: strings are dictionary-encoded with Arrow
kernels, flags and env map to the id of their normalised form (parsed once per distinct string),
nodes to their hardware. :mod:`builder.analysis.candidates` then sorts the rows into runs and summarises
every metric of every run (count, mean and sum of squares of the log values) in numpy. A group can
only produce a finding when the widest gap between neighbouring run means exceeds the narrowest band
:mod:`builder.analysis.noise` could use for it, so only those groups (and groups whose rows give different
output_tokens) are fetched, as flat trial rows; the display columns of those rows are taken from
the Arrow table by position.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from builder.analysis.candidates import COMPARED, LOOSE, candidate_trials
from builder.analysis.noise import Run, RunMeta, TrialDetails
from builder.content.flags import FlagSyntaxError, flag_map, format_value, parse_env
from builder.content.models import METRICS, ROW_SCHEMA, SETTING_COLUMN_OF, SPREADS
from builder.data.rowfile import take_rows

if TYPE_CHECKING:
    from builder.data.load import Site

GroupKey = tuple[Any, ...]
"""(recipe, metric, then the group's value of each of :data:`~builder.analysis.candidates.COMPARED`)."""

_RUN = "date, time, run_class"
_EMPTY = 0
"""Stands for an empty optional setting column in the grouping columns (concurrency: an open-loop run
without a cap; request_rate: a closed-loop run): no such column takes 0."""
_OPTIONAL = frozenset(
    key
    for key in COMPARED
    if not ROW_SCHEMA[SETTING_COLUMN_OF[key]].required and ROW_SCHEMA[SETTING_COLUMN_OF[key]].empty is None
)
"""Setting columns a row may leave empty, an empty one being a value of its own."""
_TAKES_EMPTY = sorted(
    column.name
    for column in (ROW_SCHEMA[SETTING_COLUMN_OF[key]] for key in _OPTIONAL)
    if not (column.minimum is not None and column.minimum > _EMPTY)
    and not (column.above is not None and column.above >= _EMPTY)
)
if _TAKES_EMPTY:
    raise TypeError(f"optional setting columns {_TAKES_EMPTY} take {_EMPTY}, which stands for empty")


def _canon_flags(text: str) -> str:
    return json.dumps(sorted((k, format_value(v)) for k, v in flag_map(text).items()))


def _canon_env(text: str) -> str:
    return json.dumps(sorted(parse_env(text).items()))


@dataclass
class Combinations:
    """The distinct combinations of recorded metadata, and each row's.

    One ``GROUP BY`` serves both row statuses (:mod:`builder.analysis.reconcile`) and runs (here): a run is
    a date plus a combination's recipe, node, engine_version, engine_build, flags and env.
    """

    recipe: list[str]
    engine: list[str | None]
    engine_version: list[str]
    flags: list[str | None]
    env: list[str | None]
    node: list[str]
    engine_build: list[str | None]
    of_row_id: np.ndarray
    """``row_id`` → combination index."""

    def __len__(self) -> int:
        return len(self.recipe)


_COMBINATION = ("recipe", "engine", "engine_version", "flags", "env", "node", "engine_build")


def combinations(site: Site) -> Combinations:
    table = site.con.sql(
        f"SELECT {', '.join(_COMBINATION)}, list(row_id) AS ids FROM rows GROUP BY ALL "
        # DuckDB groups in no fixed order: sorted, so that every use of the codes is repeatable
        f"ORDER BY {', '.join(f'{name} NULLS FIRST' for name in _COMBINATION)}"
    ).to_arrow_table()
    columns = {name: table.column(name).to_pylist() for name in _COMBINATION}
    ids = table.column("ids").combine_chunks() if table.num_rows else pa.array([], pa.list_(pa.int32()))
    flat = pc.list_flatten(ids).to_numpy(zero_copy_only=False)  # ListArray.flatten imports pyarrow.compute
    lengths = pc.list_value_length(ids).to_numpy(zero_copy_only=False)
    of_row_id = np.zeros(int(flat.max()) + 1 if len(flat) else 0, np.int32)
    of_row_id[flat] = np.repeat(np.arange(table.num_rows, dtype=np.int32), lengths)
    return Combinations(**columns, of_row_id=of_row_id)


class RunCodes:
    """Every row as the integer codes of its setting and run (``pos``: its position in ``site.rows``):
    the slim all-integer table the runs are grouped from, and what its codes stand for."""

    def __init__(self, site: Site, combos: Combinations) -> None:
        rows = site.rows
        flag_keys: dict[str, int] = {}
        env_keys: dict[str, int] = {}
        classes: dict[tuple[Any, ...], int] = {}
        recipes: dict[str, int] = {}
        self.hardware = sorted({node.hardware for node in site.nodes.values()})
        hw_index = {hw: i for i, hw in enumerate(self.hardware)}
        class_of, recipe_of, hw_of = [], [], []
        canonical: dict[tuple[str, str], str] = {}  # strings repeat across combinations

        def form(text: str, canon: Callable[[str], str]) -> str:
            key = (canon.__name__, text)
            if key not in canonical:
                canonical[key] = _canonical(text, canon)
            return canonical[key]

        for i in range(len(combos)):
            flags, env = combos.flags[i], combos.env[i]
            key = (
                combos.recipe[i],
                combos.node[i],
                combos.engine_version[i],
                combos.engine_build[i],
                None if flags is None else flag_keys.setdefault(form(flags, _canon_flags), len(flag_keys)),
                None if env is None else env_keys.setdefault(form(env, _canon_env), len(env_keys)),
            )
            class_of.append(classes.setdefault(key, len(classes)))
            recipe_of.append(recipes.setdefault(combos.recipe[i], len(recipes)))
            hw_of.append(hw_index[site.nodes[combos.node[i]].hardware])  # ingest checks every node
        self.recipes = list(recipes)
        self.classes = list(classes)
        """Per run class: (recipe, node, engine_version, engine_build, flags key, env key)."""
        combo = pa.array(combos.of_row_id[rows.column("row_id").to_numpy()])
        columns: dict[str, Any] = {
            "pos": pa.array(np.arange(rows.num_rows, dtype=np.int32)),
            "recipe": pc.take(pa.array(recipe_of, pa.int32()), combo),
            "hardware": pc.take(pa.array(hw_of, pa.int32()), combo),
        }
        for name in COMPARED[1:]:  # after the hardware
            column = rows.column(name)
            columns[name] = pc.fill_null(column, _EMPTY) if name in _OPTIONAL else column
        columns |= {
            LOOSE: rows.column(LOOSE),
            "date": rows.column("date"),
            "time": pc.fill_null(rows.column("time"), ""),
            "run_class": pc.take(pa.array(class_of, pa.int32()), combo),
            "repetitions": rows.column("repetitions"),
        }
        for metric in METRICS:
            columns[metric] = rows.column(metric)
            columns[SPREADS[metric]] = rows.column(SPREADS[metric])
        self.table = pa.table(columns)


def _canonical(text: str, canon: Callable[[str], str]) -> str:
    try:
        return canon(text)
    except FlagSyntaxError:
        return "raw:" + text  # unreadable: equal only to itself


def candidate_runs(
    site: Site,
    combos: Combinations | None = None,
    *,
    exhaustive: bool = False,
    recipes: Collection[str] | None = None,
) -> dict[GroupKey, list[Run]]:
    """The runs of every group that could hold a finding (``exhaustive``: of every group); with
    ``recipes``, of those recipes' groups only (the same runs: groups never span recipes)."""
    if site.rows.num_rows == 0:
        return {}
    codes = RunCodes(site, combos if combos is not None else combinations(site))
    mask = None
    if recipes is not None:
        # Rows keep their order, so runs are cut and ordered as from the whole table.
        wanted = np.array([slug in recipes for slug in codes.recipes], dtype=bool)
        mask = wanted[codes.table.column("recipe").to_numpy()]
    trials = candidate_trials(codes.table, exhaustive=exhaustive, rows=mask)
    if trials.num_rows == 0:
        return {}
    return _runs(trials, codes, site)


def _per_run(column: pa.ChunkedArray, starts: np.ndarray, summarise: Callable[[list[Any]], Any]) -> list[Any]:
    """``summarise(non-null values of the run)`` for each run (runs are consecutive, from ``starts``).

    Runs whose rows all hold one value (or none) are summarised once per distinct value."""
    encoded = pc.dictionary_encode(column.combine_chunks())
    values = encoded.dictionary.to_pylist()
    none = len(values)
    codes = pc.fill_null(encoded.indices, none).to_numpy(zero_copy_only=False).astype(np.int64)
    low = np.minimum.reduceat(codes, starts)
    high = np.maximum.reduceat(codes, starts)
    ends = np.append(starts[1:], len(codes))
    by_code = {
        code: summarise([] if code == none else [values[code]])
        for code in np.unique(low[low == high]).tolist()
    }
    out: list[Any] = []
    for lo, hi, start, end in zip(low.tolist(), high.tolist(), starts.tolist(), ends.tolist(), strict=True):
        if lo == hi:
            out.append(by_code[lo])
        else:
            out.append(summarise([values[c] for c in codes[start:end].tolist() if c != none]))
    return out


def _runs(trials: pa.Table, codes: RunCodes, site: Site) -> dict[GroupKey, list[Run]]:
    """Cut the flat, ordered trial rows into runs: boundaries, means and sums of squares with numpy,
    the rest by list slicing (no Python loop over trials)."""
    key_names = ("metric", "recipe", *COMPARED, *_RUN.split(", "))
    group_keys = 2 + len(COMPARED)  # metric, recipe and the setting: a group
    n = trials.num_rows
    change = np.zeros(n, dtype=bool)
    change[0] = True
    arrays: dict[str, np.ndarray] = {}
    for name in key_names:
        column = trials.column(name).combine_chunks()
        # Nulls (engine_build, flags, env not recorded) compare as a value of their own.
        values = pc.fill_null(column, -1) if name not in ("date", "time") else column
        arrays[name] = array = values.to_numpy(zero_copy_only=False)
        change[1:] |= array[1:] != array[:-1]
    starts = np.flatnonzero(change)
    ends = np.append(starts[1:], n)
    logs = np.log(trials.column("value").to_numpy())
    weight = trials.column("weight").to_numpy()
    spread = trials.column("spread").to_numpy()
    counts = np.add.reduceat(weight, starts)
    mus = np.add.reduceat(logs * weight, starts) / counts
    sss = np.add.reduceat(weight * (logs - np.repeat(mus, ends - starts)) ** 2 + spread, starts)

    # Each run's keys, from its first trial; numpy's tolist, not Arrow's per-value conversion.
    head: dict[str, list[Any]] = {}
    for name in key_names:
        if trials.column(name).null_count:
            head[name] = pc.take(trials.column(name), pa.array(starts)).to_pylist()
        elif name == "date":
            head[name] = arrays[name][starts].astype(object).tolist()  # datetime64[D] → dt.date
        else:
            head[name] = arrays[name][starts].tolist()
    # A run's group (setting and metric) changes only where one of the group's keys does.
    new_group = np.zeros(len(starts), dtype=bool)
    new_group[:1] = True
    for name in key_names[:group_keys]:
        at_start = arrays[name][starts]
        new_group[1:] |= at_start[1:] != at_start[:-1]
    value = trials.column("value").to_numpy().tolist()
    weights = weight.tolist()
    spreads = spread.tolist()
    taken = pc.take(site.rows.column(LOOSE), trials.column("pos")).combine_chunks()
    if taken.null_count == 0:
        output: list[int | None] = taken.to_numpy().tolist()
    elif taken.null_count == len(taken):
        output = [None] * len(taken)
    else:
        output = taken.to_pylist()
    positions = trials.column("pos")

    shown: list[pa.Table] = []

    def table() -> pa.Table:
        if not shown:
            shown.append(take_rows(site.rows.select(list(TrialDetails.COLUMNS)), positions))
        return shown[0]

    def load_meta() -> list[RunMeta]:
        """Each run's engine, flags, env, drivers and harnesses, from per-run code ranges: a run whose
        rows agree (nearly all) needs no Python beyond a lookup."""
        trials_meta = table()
        firsts = pc.take(trials_meta, pa.array(starts))
        engine = _per_run(trials_meta.column("engine"), starts, lambda values: min(values, default=None))
        drivers = _per_run(trials_meta.column("driver"), starts, lambda values: tuple(sorted(set(values))))
        harnesses = _per_run(trials_meta.column("harness"), starts, lambda values: tuple(sorted(set(values))))
        return list(
            zip(
                engine,
                firsts.column("flags").to_pylist(),
                firsts.column("env").to_pylist(),
                drivers,
                harnesses,
                strict=True,
            )
        )

    def load_one(name: str, index: int) -> Any:
        return site.rows.column(name)[positions[index].as_py()].as_py()

    details = TrialDetails(lambda name: table().column(name).to_pylist(), load_meta, load_one)
    engines = {slug: recipe.meta.engine for slug, recipe in site.recipes.items()}
    groups: dict[GroupKey, list[Run]] = defaultdict(list)
    runs: list[Run] = []
    recipe, engine = "", ""
    for r, (lo, hi, starts_group, mu, ss) in enumerate(
        zip(starts.tolist(), ends.tolist(), new_group.tolist(), mus.tolist(), sss.tolist(), strict=True)
    ):
        if starts_group:
            recipe = codes.recipes[head["recipe"][r]]
            engine = engines.get(recipe, "")
            group: GroupKey = (
                recipe,
                METRICS[head["metric"][r]],
                codes.hardware[head["hardware"][r]],
                *(
                    None if key in _OPTIONAL and head[key][r] == _EMPTY else head[key][r]
                    for key in COMPARED[1:]
                ),
            )
            runs = groups[group]
        _, node, version, build, _, _ = codes.classes[head["run_class"][r]]
        runs.append(
            Run(
                date=head["date"][r],
                time=head["time"][r] or None,
                node=node,
                engine_version=version,
                engine_build=build,
                trials=value[lo:hi],
                weights=weights[lo:hi],
                spreads=spreads[lo:hi],
                outputs=output[lo:hi],
                details=details,
                positions=range(lo, hi),
                default_engine=engine,
                index=r,
                mu=mu,
                ss=ss,
            )
        )
    return groups

"""Which groups of runs could hold a finding: run statistics and the exact pre-filter, in numpy.

Rows at a known setting (with a prompt length) are sorted once by recipe and setting (:data:`COMPARED`:
the columns :class:`~builder.content.models.Row` marks as the setting, the node as its hardware, but
``output_tokens``), date, time, run class and position. A *run* is a stretch of equal setting, date,
time and run class; per metric, its trials are the rows whose value is > 0 (on the log scale, a zero
cannot be compared), each weighing as many repetitions as its reported spread says
(:func:`spread_weights`). Per run: weighted count, mean and sum of squares of the log values, and the
range of output_tokens; per group (setting, metric) of two runs or more: the widest gap between
neighbouring run means and the narrowest band detection could use (by
:func:`builder.analysis.noise.noise_band`, the formula detection uses). A group can only split when its
widest gap exceeds that band (with a hair of slack for rounding: Python recomputes everything for the
groups that pass), can only drift when it has three runs or more whose range exceeds it (a drift is
first to last beyond a band no narrower than that one, whatever its steps), and is kept too when its
rows give different output_tokens.

Everything is a sort and a few ``reduceat`` passes over flat arrays: no hash table per run, so
memory stays small even when nearly every row is a run of its own.
"""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from builder.analysis.noise import noise_band
from builder.content.models import METRICS, ROW_SCHEMA, SETTING_COLUMN_OF, SETTING_KEYS, SPREADS

SLACK = 0.999999
"""A gap within this factor of the band still counts as a possible split (rounding)."""

LOOSE = "output_tokens"
"""The setting column findings compare loosely: a run that does not give it is compared with the runs
at every value (:func:`builder.analysis.findings._sub_settings` splits a group by it), so it is no part
of a group's key; a group whose rows give different ones is always a candidate."""
COMPARED: tuple[str, ...] = tuple(key for key in SETTING_KEYS if key != LOOSE)
"""What puts runs of a recipe in one group: the setting's keys (the node as its hardware) but :data:`LOOSE`."""
UNKNOWABLE: tuple[str, ...] = tuple(key for key in COMPARED if ROW_SCHEMA[SETTING_COLUMN_OF[key]].words)
"""Setting columns a row may give as unknown (``prompt_tokens``): such a row is at no setting."""
_SETTING = ("recipe", *COMPARED)
_KEYS = (*_SETTING, "date", "time", "run_class")
_CODES = frozenset({"recipe", "hardware", "run_class"})
TRIAL_COLUMNS = ("metric", *_SETTING, "date", "time", "run_class", "pos", "value", "weight", "spread")


def spread_weights(
    values: np.ndarray, sd: np.ndarray, repetitions: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Per row, how many trials it stands for and its within-row sum of squares on the log scale.

    A row giving a metric's sample standard deviation summarises ``repetitions`` trials (two, the
    fewest a standard deviation needs, when the count is not given): it weighs that many, and its
    spread is ``(n - 1) * (sd / mean)^2`` (the log-scale variance of a small relative spread). A row
    without one is one trial. ``sd`` and ``repetitions`` are NaN where not given.
    """
    n = np.where(np.isnan(repetitions), 2.0, repetitions)
    reported = ~np.isnan(sd) & (n >= 2) & (values > 0)
    weight = np.where(reported, n, 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        spread = np.where(reported, (n - 1) * (sd / values) ** 2, 0.0)
    return weight, spread


_BIG = np.iinfo(np.int64).max
_SMALL = np.iinfo(np.int64).min


def _ranks(column: pa.ChunkedArray | pa.Array) -> tuple[np.ndarray, int]:
    """Dense codes of a column without nulls that sort as its values do, and how many there are."""
    encoded = pc.dictionary_encode(column)
    if isinstance(encoded, pa.ChunkedArray):
        encoded = encoded.unify_dictionaries().combine_chunks()
    values = encoded.dictionary.to_numpy(zero_copy_only=False)
    rank = np.empty(len(values), dtype=np.int64)
    rank[np.argsort(values, kind="stable")] = np.arange(len(values), dtype=np.int64)
    return rank[encoded.indices.to_numpy(zero_copy_only=False)], len(values)


_TABLE_SPAN = 1 << 22
"""Integer columns spanning fewer values than this are ranked through a lookup table (no hashing)."""


def _integer_ranks(values: np.ndarray) -> tuple[np.ndarray, int]:
    """:func:`_ranks` of integers (or days): the same codes, from a table of the values present."""
    low, high = int(values.min()), int(values.max())
    if high - low >= _TABLE_SPAN:
        distinct, codes = np.unique(values, return_inverse=True)
        return codes.reshape(-1).astype(np.int64), len(distinct)
    offsets = values - low
    present = np.zeros(high - low + 1, dtype=bool)
    present[offsets] = True
    rank = np.cumsum(present, dtype=np.int64) - 1
    return rank[offsets], int(rank[-1]) + 1


def _boundaries(keys: list[tuple[np.ndarray, int]], split: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Stable order of rows by the keys (most significant first), and in that order where the
    first ``split`` keys change (a new setting) and where any key changes (a new run).

    The codes are packed into one integer when they fit in 62 bits (one sort, one comparison),
    else sorted lexicographically and compared key by key.
    """
    n = len(keys[0][0])
    starts = np.zeros(n, dtype=bool)
    starts[:1] = True
    if math.prod(max(size, 1) for _, size in keys) < 2**62:
        packed = np.zeros(n, dtype=np.int64)
        for codes, size in keys:
            packed *= size
            packed += codes
        order = np.argsort(packed, kind="stable")
        ordered = packed[order]
        new_run = starts.copy()
        new_run[1:] = ordered[1:] != ordered[:-1]
        ordered //= math.prod(max(size, 1) for _, size in keys[split:])
        new_setting = starts
        new_setting[1:] = ordered[1:] != ordered[:-1]
        return order, new_setting, new_run
    order = np.lexsort([codes for codes, _ in reversed(keys)])
    new_setting = starts
    for codes, _ in keys[:split]:
        ordered = codes[order]
        new_setting[1:] |= ordered[1:] != ordered[:-1]
    new_run = new_setting.copy()
    for codes, _ in keys[split:]:
        ordered = codes[order]
        new_run[1:] |= ordered[1:] != ordered[:-1]
    return order, new_setting, new_run


def _sorted_runs(table: pa.Table, chosen: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The ``chosen`` rows of ``table`` (a mask) sorted by setting, date, time and run class:
    their positions in the table in that order, and where a setting and a run start."""
    everything = bool(chosen.all())
    kept = None if everything else np.flatnonzero(chosen)

    def column_of(array: pa.ChunkedArray) -> np.ndarray:
        values: np.ndarray = array.to_numpy(zero_copy_only=False)
        return values if kept is None else values[kept]

    def column(name: str) -> np.ndarray:
        return column_of(table.column(name))

    keys = []
    for name in _KEYS:
        if name in _CODES:  # already dense codes, in the order the groups are walked
            codes = column(name).astype(np.int64)
            keys.append((codes, int(codes.max()) + 1))
        elif table.column(name).null_count == 0 and (
            pa.types.is_integer(table.column(name).type) or pa.types.is_date32(table.column(name).type)
        ):
            array = table.column(name)
            if pa.types.is_date32(array.type):
                array = pc.cast(array, pa.int32())
            keys.append(_integer_ranks(column_of(array)))
        else:
            keys.append(
                _ranks(table.column(name) if kept is None else pc.take(table.column(name), pa.array(kept)))
            )
    order, new_setting, new_run = _boundaries(keys, len(_SETTING))
    return (order if kept is None else kept[order]), new_setting, new_run


def at_known_setting(table: pa.Table) -> np.ndarray:
    """Mask of the rows of ``table`` whose setting is known: none of :data:`UNKNOWABLE` is null."""
    known = np.ones(table.num_rows, dtype=bool)
    for key in UNKNOWABLE:
        known &= pc.is_valid(table.column(key)).to_numpy(zero_copy_only=False)
    return known


def lone_setting_rows(table: pa.Table) -> np.ndarray:
    """Positions in ``table`` of the rows at a known setting that only one run measured
    (a table of :func:`candidate_trials`' form)."""
    known = at_known_setting(table)
    if not known.any():
        return np.zeros(0, dtype=np.int64)
    source_of, new_setting, new_run = _sorted_runs(table, known)
    setting_of_row = np.cumsum(new_setting) - 1
    runs = np.bincount(setting_of_row[new_run], minlength=int(setting_of_row[-1]) + 1)
    return np.sort(source_of[runs[setting_of_row] == 1])


def candidate_trials(
    table: pa.Table, *, exhaustive: bool = False, rows: np.ndarray | None = None
) -> pa.Table:
    """The trials of every group that could hold a finding (``exhaustive``: of every group of two
    runs or more), as columns :data:`TRIAL_COLUMNS`, ordered by setting, metric, date, run class
    and position.

    ``table`` has the integer columns of :data:`_KEYS` (``recipe``, ``hardware``, ``run_class`` as
    codes), ``pos``, :data:`LOOSE` and one column per metric. ``rows``: a mask of the rows to consider
    (whole recipes: a group is never cut), else all.
    """
    known = at_known_setting(table)
    if rows is not None:
        known = known & rows
    empty = pa.table({name: pa.array([], pa.int64()) for name in TRIAL_COLUMNS})
    if not known.any():
        return empty
    source_of, new_setting, new_run = _sorted_runs(table, known)
    n = len(source_of)
    setting_of_row = np.cumsum(new_setting) - 1
    run_starts = np.flatnonzero(new_run)
    run_sizes = np.diff(np.append(run_starts, n))
    setting_of_run = setting_of_row[run_starts]
    settings = int(setting_of_row[-1]) + 1

    output_column = table.column(LOOSE)
    output = pc.fill_null(output_column, _BIG).to_numpy(zero_copy_only=False)[source_of]
    run_low = np.minimum.reduceat(output, run_starts)
    output = pc.fill_null(output_column, _SMALL).to_numpy(zero_copy_only=False)[source_of]
    run_high = np.maximum.reduceat(output, run_starts)
    del output

    repetitions = pc.cast(table.column("repetitions"), pa.float64()).to_numpy(zero_copy_only=False)[source_of]
    picked: list[tuple[np.ndarray, int]] = []
    weights: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    for index, name in enumerate(METRICS):
        if table.column(name).null_count == table.num_rows:
            continue  # nobody measured it
        values = table.column(name).to_numpy(zero_copy_only=False)[source_of]
        valid = values > 0  # NaN (not measured) is not
        if not valid.any():
            continue
        sd = table.column(SPREADS[name])
        if sd.null_count == len(sd) and valid.all():  # the usual case: the same sums without weights
            logs = np.log(values)
            count = run_sizes.astype(np.float64)
            mean = np.add.reduceat(logs, run_starts) / count
            has = np.ones(len(count), dtype=bool)
            deviation = logs - np.repeat(mean, run_sizes)
            squares = np.add.reduceat(deviation * deviation, run_starts)
            reported_run = np.zeros(len(count), dtype=bool)
        else:
            weight, spread = spread_weights(
                values, sd.to_numpy(zero_copy_only=False)[source_of].astype(np.float64), repetitions
            )
            weights[index] = (weight, spread)
            weight = weight * valid
            logs = np.log(np.where(valid, values, 1.0))
            count = np.add.reduceat(weight, run_starts)
            total = np.add.reduceat(logs * weight, run_starts)
            has = count > 0
            mean = np.divide(total, count, out=np.zeros(len(count)), where=has)
            deviation = logs - np.repeat(mean, run_sizes)
            squares = np.add.reduceat(weight * deviation * deviation + spread * valid, run_starts)
            # A run whose every trial reports its spread: the noise is measured, not assumed.
            reported_run = np.minimum.reduceat((weight > 1) | ~valid, run_starts) & has
        # The runs that measured this metric, grouped: runs are in setting order already.
        measured = np.flatnonzero(has)
        group = setting_of_run[measured]
        starts = np.flatnonzero(np.diff(group, prepend=-1))
        runs = np.diff(np.append(starts, len(group)))
        dof = np.add.reduceat(count[measured] - 1, starts)
        spread = np.add.reduceat(squares[measured], starts)
        measured_noise = np.minimum.reduceat(reported_run[measured], starts)
        split = np.minimum.reduceat(run_low[measured], starts) < np.maximum.reduceat(
            run_high[measured], starts
        )
        # The narrowest band detection could use: the runs' own trials' when they give an estimate
        # (the band is never narrower), else the prior's against the most runs that could agree.
        within = dof > 0
        threshold = SLACK * noise_band(
            np.where(within, spread, 0.0), np.where(within, dof, runs - 1), measured_noise & within
        )
        chosen = (runs >= 2) & (exhaustive | split)
        # No gap between neighbouring means exceeds the whole range: only groups whose range
        # exceeds the band need their means sorted to find the widest gap.
        means = mean[measured]
        spans = np.maximum.reduceat(means, starts) - np.minimum.reduceat(means, starts)
        # A drift (three runs or more, first to last beyond the runs' own noise) is compared too.
        chosen |= (runs >= 3) & (spans > threshold)
        open_groups = np.flatnonzero((runs >= 2) & ~chosen & (spans > threshold))
        if len(open_groups):
            members = np.repeat(np.isin(np.arange(len(starts)), open_groups), runs)
            member_group = np.repeat(np.arange(len(starts)), runs)[members]
            by_mean = np.lexsort((means[members], member_group))
            sorted_group = member_group[by_mean]
            gaps = np.diff(means[members][by_mean])
            gaps[sorted_group[1:] != sorted_group[:-1]] = -np.inf
            widest = np.full(len(starts), -np.inf)
            np.maximum.at(widest, sorted_group[1:], gaps)
            chosen |= widest > threshold
        candidate = np.zeros(settings, dtype=bool)
        candidate[group[starts[chosen]]] = True
        if not candidate.any():
            continue
        positions = np.flatnonzero(valid & candidate[setting_of_row])
        picked.append((positions, index))
    if not picked:
        return empty
    positions = np.concatenate([p for p, _ in picked])
    metric = np.concatenate([np.full(len(p), index, dtype=np.int32) for p, index in picked])
    final = np.lexsort((positions, metric, setting_of_row[positions]))
    positions, metric = positions[final], metric[final]
    source = source_of[positions]
    trials = pc.take(table.select(["pos", *_SETTING, "date", "time", "run_class"]), pa.array(source))
    value = np.empty(len(source))
    weight = np.ones(len(source))
    spread = np.zeros(len(source))
    for index in np.unique(metric):
        chosen = metric == index
        picked_values = pc.take(table.column(METRICS[int(index)]), pa.array(source[chosen]))
        value[chosen] = picked_values.to_numpy(zero_copy_only=False)
        if int(index) in weights:
            weight[chosen] = weights[int(index)][0][positions[chosen]]
            spread[chosen] = weights[int(index)][1][positions[chosen]]
    return pa.table(
        {
            "metric": pa.array(metric),
            **{name: trials.column(name) for name in _SETTING},
            "date": trials.column("date"),
            "time": trials.column("time"),
            "run_class": trials.column("run_class"),
            "pos": trials.column("pos"),
            "value": pa.array(value),
            "weight": pa.array(weight),
            "spread": pa.array(spread),
        }
    )

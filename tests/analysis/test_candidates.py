"""The numpy run statistics and pre-filter give exactly the trials a plain Python reading of the rule
gives: every group of two runs or more whose widest gap between neighbouring run means exceeds the
narrowest band (or whose rows give different output_tokens), its trials in order. And the pre-filter
keeps every group detection splits or could call a drift in (both bands from ``noise.noise_band``)."""

from __future__ import annotations

import datetime as dt
import math
from collections import defaultdict
from typing import Any

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from builder.analysis.candidates import (
    COMPARED,
    SLACK,
    TRIAL_COLUMNS,
    _integer_ranks,
    _ranks,
    candidate_trials,
    spread_weights,
)
from builder.analysis.noise import Run, TrialDetails, detect, noise_band, within_noise
from builder.content.models import METRICS, SPREADS
from tests.conftest import examples

SETTING = ("recipe", *COMPARED)
RUN = ("date", "time", "run_class")


def weighed(row: dict[str, Any], metric: str) -> tuple[float, float]:
    """(repetitions the row stands for, its within-row sum of squares), read plainly."""
    sd = row[SPREADS[metric]]
    n = 2 if row["repetitions"] is None else row["repetitions"]
    if sd is None or n < 2:
        return 1.0, 0.0
    return float(n), (n - 1) * (sd / row[metric]) ** 2


def reference(rows: list[dict[str, Any]], exhaustive: bool) -> list[tuple[Any, ...]]:
    rows = [r for r in rows if r["prompt_tokens"] is not None]
    runs: dict[tuple[Any, ...], list[dict[str, Any]]] = defaultdict(list)
    for row in sorted(rows, key=lambda r: (*(r[k] for k in SETTING), *(r[k] for k in RUN), r["pos"])):
        runs[(*(row[k] for k in SETTING), *(row[k] for k in RUN))].append(row)
    out = []
    chosen: list[tuple[tuple[Any, ...], int]] = []
    for index, metric in enumerate(METRICS):
        groups: dict[tuple[Any, ...], list[tuple[float, float, float, list[int], bool]]] = defaultdict(list)
        for key, members in runs.items():
            valid = [r for r in members if r[metric] is not None and r[metric] > 0]
            if not valid:
                continue
            weights = [weighed(r, metric) for r in valid]
            logs = [math.log(r[metric]) for r in valid]
            count = sum(w for w, _ in weights)
            mu = sum(w * x for (w, _), x in zip(weights, logs, strict=True)) / count
            ss = sum(w * (x - mu) ** 2 + inner for (w, inner), x in zip(weights, logs, strict=True))
            outputs = [r["output_tokens"] for r in members if r["output_tokens"] is not None]
            reported = all(w > 1 for w, _ in weights)
            groups[key[: len(SETTING)]].append((count, mu, ss, outputs, reported))
        for setting, stats in groups.items():
            m = len(stats)
            if m < 2:
                continue
            dof = sum(n - 1 for n, *_ in stats)
            spread = sum(ss for _, _, ss, _, _ in stats)
            mus = sorted(mu for _, mu, *_ in stats)
            gap = max(b - a for a, b in zip(mus, mus[1:], strict=False))
            outputs = [o for *_, outs, _ in stats for o in outs]
            split = bool(outputs) and min(outputs) < max(outputs)
            # The narrowest band detection could use: the trials' own estimate when there is one,
            # else the prior's against every run agreeing (noise_band: the one formula of the band).
            if dof > 0:
                band = noise_band(spread, dof, all(reported for *_, reported in stats))
            else:
                band = noise_band(0.0, m - 1)
            threshold = SLACK * float(band)
            drift = m >= 3 and mus[-1] - mus[0] > threshold
            if exhaustive or split or drift or gap > threshold:
                chosen.append((setting, index))
    for setting, index in sorted(chosen):
        metric = METRICS[index]
        for key, members in runs.items():
            if key[: len(SETTING)] != setting:
                continue
            for r in members:
                if r[metric] is not None and r[metric] > 0:
                    run = tuple(r[k] for k in RUN)
                    out.append((index, *setting, *run, r["pos"], r[metric], *weighed(r, metric)))
    return out


_SCHEMA = pa.schema(
    [
        ("pos", pa.int32()),
        ("recipe", pa.int32()),
        ("hardware", pa.int32()),
        ("prompt_tokens", pa.int64()),
        ("context_tokens", pa.int64()),
        ("concurrency", pa.int64()),
        ("request_rate", pa.float64()),
        ("output_tokens", pa.int64()),
        ("date", pa.date32()),
        ("time", pa.string()),
        ("run_class", pa.int32()),
        ("repetitions", pa.int64()),
        *((metric, pa.float64()) for metric in METRICS),
        *((SPREADS[metric], pa.float64()) for metric in METRICS),
    ]
)
"""The candidates table of the tests' rows (the integer codes of :class:`RunCodes`' table)."""


def values(draw: st.DrawFn) -> float | None:
    return draw(st.one_of(st.none(), st.just(0.0), st.floats(min_value=10, max_value=14)))


@st.composite
def tables(draw: st.DrawFn) -> pa.Table:
    n = draw(st.integers(min_value=0, max_value=40))
    rows = []
    for pos in range(n):
        row: dict[str, Any] = {
            "pos": pos,
            "recipe": draw(st.integers(0, 1)),
            "hardware": draw(st.integers(0, 1)),
            "prompt_tokens": draw(st.sampled_from([None, 512, 2048])),
            "context_tokens": draw(st.sampled_from([0, 4096])),
            "concurrency": draw(st.sampled_from([0, 1, 8])),
            "request_rate": draw(st.sampled_from([0.0, 0.0, 10.0, math.inf])),
            "output_tokens": draw(st.sampled_from([None, 128, 256])),
            "date": dt.date(2026, 1, draw(st.integers(1, 4))),
            "time": draw(st.sampled_from(["", "", "09:00"])),
            "run_class": draw(st.integers(0, 2)),
            "repetitions": draw(st.sampled_from([None, 1, 3])),
        }
        for metric in METRICS:
            row[metric] = values(draw) if metric in ("decode_tok_s", "ttft_ms") else None
            spread = draw(st.sampled_from([None, None, 0.0, 0.4])) if metric == "decode_tok_s" else None
            row[SPREADS[metric]] = spread
        rows.append(row)
    return pa.Table.from_pylist(rows, schema=_SCHEMA)


@settings(max_examples=examples(40), deadline=None)
@given(tables(), st.booleans())
def test_candidate_trials_are_those_of_the_rule_read_plainly(table: pa.Table, exhaustive: bool) -> None:
    got = candidate_trials(table, exhaustive=exhaustive)
    assert got.column_names == list(TRIAL_COLUMNS)
    rows = list(zip(*(got.column(name).to_pylist() for name in TRIAL_COLUMNS), strict=True))
    assert rows == reference(table.to_pylist(), exhaustive)


@settings(max_examples=examples(50), deadline=None)
@given(tables(), st.booleans(), st.sampled_from([{0}, {1}, {0, 1}, set()]))
def test_candidate_trials_of_some_recipes_are_theirs_in_the_whole_table(
    table: pa.Table, exhaustive: bool, recipes: set[int]
) -> None:
    mask = np.isin(table.column("recipe").to_numpy(), sorted(recipes))
    got = candidate_trials(table, exhaustive=exhaustive, rows=mask)
    rows = list(zip(*(got.column(name).to_pylist() for name in TRIAL_COLUMNS), strict=True))
    assert rows == [row for row in reference(table.to_pylist(), exhaustive) if row[1] in recipes]


@settings(max_examples=examples(50), deadline=None)
@given(
    st.lists(
        st.one_of(st.integers(-5, 5), st.integers(-(2**40), 2**40), st.integers(0, 1 << 23)),
        min_size=1,
        max_size=60,
    )
)
def test_integer_ranks_are_the_dictionary_ranks(values: list[int]) -> None:
    codes, count = _integer_ranks(np.array(values, dtype=np.int64))
    expected, expected_count = _ranks(pa.array(values, pa.int64()))
    assert count == expected_count == len(set(values))
    assert codes.tolist() == expected.tolist()


@settings(max_examples=examples(50), deadline=None)
@given(tables(), st.booleans())
def test_candidate_trials_of_fully_measured_metrics_are_those_of_the_rule(
    table: pa.Table, exhaustive: bool
) -> None:
    # Every row measures both metrics (> 0): the unmasked path of the run statistics.
    for metric in ("decode_tok_s", "ttft_ms"):
        values = [v if v else 12.5 for v in table.column(metric).to_pylist()]
        table = table.set_column(table.schema.get_field_index(metric), metric, pa.array(values, pa.float64()))
    got = candidate_trials(table, exhaustive=exhaustive)
    rows = list(zip(*(got.column(name).to_pylist() for name in TRIAL_COLUMNS), strict=True))
    assert rows == reference(table.to_pylist(), exhaustive)


@st.composite
def histories(draw: st.DrawFn) -> list[list[tuple[float, float | None, int | None]]]:
    """Runs of one setting: per run, its trials as (value, reported sd or None, repetitions or None).
    Levels mostly agree within a few percent; some runs depart or drift."""
    runs = []
    for _ in range(draw(st.integers(2, 6))):
        level = draw(st.sampled_from([100.0, 100.0, 100.0, 101.0, 102.5, 97.0, 92.0, 80.0, 125.0]))
        reported = draw(st.sampled_from([None, None, 0.005, 0.02, 0.06]))
        repetitions = draw(st.sampled_from([None, 3, 5]))
        trials = draw(st.lists(st.floats(min_value=0.97, max_value=1.03), min_size=1, max_size=4))
        runs.append(
            [(level * t, None if reported is None else level * t * reported, repetitions) for t in trials]
        )
    return runs


def _group_table(runs: list[list[tuple[float, float | None, int | None]]]) -> pa.Table:
    """The runs as rows of :func:`candidate_trials`' table: one recipe and setting, a date per run."""
    rows: list[dict[str, Any]] = []
    for day, trials in enumerate(runs, start=1):
        for value, sd, repetitions in trials:
            row: dict[str, Any] = {
                "pos": len(rows),
                "recipe": 0,
                "hardware": 0,
                "prompt_tokens": 512,
                "context_tokens": 0,
                "concurrency": 1,
                "request_rate": 0.0,
                "output_tokens": None,
                "date": dt.date(2026, 1, day),
                "time": "",
                "run_class": 0,
                "repetitions": repetitions,
            }
            for metric in METRICS:
                row[metric] = value if metric == "decode_tok_s" else None
                row[SPREADS[metric]] = sd if metric == "decode_tok_s" else None
            rows.append(row)
    return pa.Table.from_pylist(rows, schema=_SCHEMA)


@settings(max_examples=examples(150), deadline=None)
@given(histories())
def test_the_pre_filter_keeps_every_group_detection_splits_or_could_call_a_drift(
    runs: list[list[tuple[float, float | None, int | None]]],
) -> None:
    # Detection (noise.detect, which the findings use) and the pre-filter (candidates) read their
    # bands from one formula (noise.noise_band); the pre-filter may keep more, never fewer.
    table = _group_table(runs)
    kept = candidate_trials(table).num_rows > 0
    details = TrialDetails(lambda name: [])
    measured = []
    for day, trials in enumerate(runs, start=1):
        values = np.array([v for v, _, _ in trials])
        sd = np.array([np.nan if s is None else s for _, s, _ in trials])
        repetitions = np.array([np.nan if n is None else float(n) for _, _, n in trials])
        weights, spreads = spread_weights(values, sd, repetitions)
        measured.append(
            Run(
                dt.date(2026, 1, day),
                "node-a",
                "1.0.0",
                None,
                values.tolist(),
                [None] * len(trials),
                details,
                range(len(trials)),
                weights=weights.tolist(),
                spreads=spreads.tolist(),
            )
        )
    groups, _ = detect(measured)
    if len(groups) > 1:
        assert kept, f"detection splits {groups}, the pre-filter dropped the group"
    mus = [run.mu for run in measured]
    if len(measured) >= 3 and max(mus) - min(mus) > within_noise(measured).band:
        assert kept, "a drift could be called here, the pre-filter dropped the group"

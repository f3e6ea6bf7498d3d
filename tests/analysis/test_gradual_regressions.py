"""Gradual regressions (issue 31): runs that move one way are one finding whether each step is within
the trials' noise or beyond it; jitter is none; a change between two runs is still found.

Every history here is synthetic (the minimal site with generated rows).
"""

from __future__ import annotations

import datetime as dt
import random

import pytest

from builder.analysis.findings import find_non_reproduction
from tests.conftest import MakeSite
from tests.rowsite import findings, history, load, run

START = dt.date(2026, 5, 1)


def _weekly(levels: list[float], trials: tuple[float, ...]) -> list[dict[str, object]]:
    """One run a week at each level, its trials at ``level * t``."""
    return history(
        *(
            run((START + dt.timedelta(weeks=week)).isoformat(), *(round(level * t, 2) for t in trials))
            for week, level in enumerate(levels)
        )
    )


def _gradual(steps: list[float]) -> list[float]:
    levels = [100.0]
    for step in steps:
        levels.append(round(levels[-1] * (1 + step), 2))
    return levels


EIGHT_WEEKS = _gradual([-0.025, -0.024, -0.026, -0.025, -0.025, -0.024, -0.026])
"""Eight weekly runs, each about 2.5 % below the last: 16 % lost."""


@pytest.mark.parametrize(
    "trials",
    [
        (0.997, 1.0, 1.003),  # the band from three trials is wider than a step: each step within it
        (0.997, 0.998, 1.0, 1.002, 1.003),  # five tight trials: each step beyond the noise
    ],
)
def test_eight_weekly_runs_each_lower_are_one_finding(make_site: MakeSite, trials: tuple[float, ...]) -> None:
    [finding] = findings(make_site, _weekly(EIGHT_WEEKS, trials))
    assert finding.kind == "drift" and finding.departs == "later"
    assert [r.date for r in finding.reference.runs] == [START]
    assert [r.date for r in finding.departing.runs] == [START + dt.timedelta(weeks=7)]
    # The runs between are listed, in order.
    assert [r.date for r in finding.between] == [START + dt.timedelta(weeks=w) for w in range(1, 7)]
    assert finding.change == pytest.approx(EIGHT_WEEKS[-1] / 100.0 - 1) and finding.direction == "worse"
    assert [r["role"] for r in finding.as_json()["runs"]] == ["reference", *["between"] * 6, "departing"]
    assert finding.summary().startswith("A steady loss over 8 runs: ")
    assert finding.explanation_text().startswith("Unexplained by the recorded metadata.")


def test_uneven_steps_that_the_scatter_of_runs_absorbs_are_one_finding(make_site: MakeSite) -> None:
    # Steps of 1.5 % and 3.5 % in turn: the close pairs agree, the scatter between the pairs widens the
    # band until every run is one group, while the big steps are beyond the trials' noise.
    levels = _gradual([-0.015, -0.035, -0.015, -0.035, -0.015, -0.035, -0.015])
    [finding] = findings(make_site, _weekly(levels, (0.997, 0.998, 1.0, 1.002, 1.003)))
    assert finding.kind == "drift" and len(finding.between) == 6
    assert finding.noise.source == "trials"  # measured against the runs' own trials


def test_a_gradual_rise_in_latency_is_a_loss(make_site: MakeSite) -> None:
    levels = _gradual([0.03, 0.028, 0.031, 0.03, 0.029])
    rows = history(
        *(
            run(
                (START + dt.timedelta(weeks=w)).isoformat(),
                *(round(v * t, 3) for t in (0.999, 1.0, 1.001)),
                metric="ttft_ms",
            )
            for w, v in enumerate(levels)
        )
    )
    [finding] = findings(make_site, rows)
    assert finding.kind == "drift" and finding.direction == "worse" and finding.change > 0.15


def test_twelve_runs_of_jitter_are_none(make_site: MakeSite) -> None:
    rnd = random.Random(31)
    for _ in range(5):
        levels = [round(100.0 * (1 + rnd.uniform(-0.01, 0.01)), 2) for _ in range(12)]
        assert findings(make_site, _weekly(levels, (0.997, 1.0, 1.003))) == []
        assert findings(make_site, _weekly(levels, (1.0,))) == []


def test_a_change_between_two_runs_is_still_found(make_site: MakeSite) -> None:
    [finding] = findings(make_site, _weekly([100.0, 84.0], (0.997, 1.0, 1.003)))
    assert finding.kind == "non_reproducing" and finding.departs == "later"
    assert finding.change == pytest.approx(84.0 / 100.0 - 1)


def test_one_step_in_a_falling_history_stays_a_step(make_site: MakeSite) -> None:
    # Two flat stretches with one drop between: the drop is the finding, not a drift over the whole.
    levels = [100.0, 99.9, 99.8, 80.0, 79.9]
    [finding] = findings(make_site, _weekly(levels, (0.998, 1.0, 1.002)))
    assert finding.kind == "non_reproducing"
    assert sorted(r.date for r in finding.departing.runs) == [START + dt.timedelta(weeks=w) for w in (3, 4)]


def test_a_history_that_steps_back_is_no_drift(make_site: MakeSite) -> None:
    levels = [100.0, 97.5, 95.0, 96.0, 92.5, 90.0]  # one step back up, beyond the noise
    assert [f.kind for f in findings(make_site, _weekly(levels, (0.997, 0.998, 1.0, 1.002, 1.003)))].count(
        "drift"
    ) == 0


def test_the_pre_filter_keeps_every_gradual_history(make_site: MakeSite) -> None:
    # Gradual, uneven, one-step and jittery histories side by side, one prompt length each: the
    # numpy pre-filter drops none that the detector flags.
    rnd = random.Random(5)
    histories = [
        EIGHT_WEEKS,
        _gradual([-0.015, -0.035, -0.015, -0.035, -0.015, -0.035, -0.015]),
        _gradual([0.012, 0.011, 0.012, 0.013]),
        [100.0, 99.9, 99.8, 80.0, 79.9],
        [round(100.0 * (1 + rnd.uniform(-0.01, 0.01)), 2) for _ in range(12)],
    ]
    rows = []
    for prompt, levels in enumerate(histories, start=100):
        for trials in ((0.997, 1.0, 1.003), (0.997, 0.998, 1.0, 1.002, 1.003), (1.0,)):
            for row in _weekly(levels, trials):
                rows.append({**row, "prompt_tokens": prompt, "concurrency": len(trials)})
    loaded = load(make_site, rows)
    assert loaded.recon is not None
    fast = [f.as_json() for f in loaded.recon.findings]
    assert fast == [f.as_json() for f in find_non_reproduction(loaded.site, exhaustive=True)]
    assert sum(f["kind"] == "drift" for f in fast) >= 6

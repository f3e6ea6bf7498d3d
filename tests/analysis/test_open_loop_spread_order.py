"""Open-loop settings, reported spread, the order of same-day runs, finding groups and drift.
Every figure here is synthetic (tests/rowsite.py)."""

from __future__ import annotations

import math

from tests.conftest import MakeSite
from tests.rowsite import RECIPE_FLAGS, findings, history, run


def test_open_and_closed_loop_runs_are_never_compared(make_site: MakeSite) -> None:
    rows = history(
        run("2026-01-01", 100.0, metric="aggregate_tok_s"),
        run("2026-02-01", 50.0, metric="aggregate_tok_s", concurrency="", request_rate=10),
        run("2026-03-01", 20.0, metric="aggregate_tok_s", concurrency=1, request_rate="inf"),
    )
    assert findings(make_site, rows) == []
    rows += run("2026-04-01", 10.0, metric="aggregate_tok_s", concurrency="", request_rate=10)
    [finding] = findings(make_site, rows)
    assert finding.setting["request_rate"] == 10 and finding.setting["concurrency"] is None
    assert "10 req/s" in finding.detail() and finding.id.endswith("-r10-2026-04-01")


def test_an_unlimited_rate_reads_as_such_and_writes_inf_in_json(make_site: MakeSite) -> None:
    rows = history(
        run("2026-01-01", 100.0, metric="aggregate_tok_s", concurrency="", request_rate="inf"),
        run("2026-02-01", 50.0, metric="aggregate_tok_s", concurrency="", request_rate="INF"),
    )
    [finding] = findings(make_site, rows)
    assert finding.setting["request_rate"] == math.inf
    assert "unlimited rate (∞ req/s)" in finding.detail()
    assert finding.as_json()["setting"]["request_rate"] == "inf"


def test_a_reported_spread_counts_as_its_repetitions(make_site: MakeSite) -> None:
    # -6 %: beyond the floor, within the default ±10 % band of single values...
    plain = history(run("2026-01-01", 100.0), run("2026-02-01", 94.0))
    assert findings(make_site, plain) == []
    # ...flagged when each value is a mean of 5 repetitions with a spread of 0.5.
    tight = history(
        run("2026-01-01", 100.0, decode_tok_s_sd=0.5, repetitions=5),
        run("2026-02-01", 94.0, decode_tok_s_sd=0.5, repetitions=5),
    )
    [finding] = findings(make_site, tight)
    assert finding.noise.source == "reported spread" and finding.change < 0
    # A spread as wide as the difference hides it.
    wide = history(
        run("2026-01-01", 100.0, decode_tok_s_sd=20.0, repetitions=5),
        run("2026-02-01", 94.0, decode_tok_s_sd=20.0, repetitions=5),
    )
    assert findings(make_site, wide) == []


def test_same_day_runs_are_ordered_by_time_then_version_never_by_value(make_site: MakeSite) -> None:
    # By version (PEP 440: 1.10 after 1.9): the newer version departs and its loss reads as worse.
    by_version = history(
        run("2026-01-01", 70.0, engine_version="1.10.0"),
        run("2026-01-01", 100.0, engine_version="1.9.0"),
    )
    [finding] = findings(make_site, by_version)
    assert [r.engine_version for r in finding.departing.runs] == ["1.10.0"]
    assert finding.direction == "worse" and finding.change == 70.0 / 100.0 - 1
    # By time of day when both runs give one: the later run departs, whatever the versions say.
    by_time = history(
        run("2026-01-01", 70.0, engine_version="1.10.0", time="08:00"),
        run("2026-01-01", 100.0, engine_version="1.9.0", time="14:30"),
    )
    [finding] = findings(make_site, by_time)
    assert [r.engine_version for r in finding.departing.runs] == ["1.9.0"]
    assert finding.direction == "better" and [r.time for r, _ in finding.runs] == ["08:00", "14:30"]


def test_with_one_version_the_run_matching_the_recipe_is_the_reference(make_site: MakeSite) -> None:
    rows = history(
        run("2026-01-01", 70.0, flags="--max-model-len 8192"),
        run("2026-01-01", 100.0, flags=RECIPE_FLAGS),
    )
    [finding] = findings(make_site, rows)
    assert [r.flags for r in finding.reference.runs] == [RECIPE_FLAGS]
    assert finding.direction == "worse"


def test_one_regression_at_several_settings_and_metrics_is_one_group(make_site: MakeSite) -> None:
    rows = []
    for prompt in (512, 2048):
        for metric, old, new in (("decode_tok_s", 100.0, 60.0), ("ttft_ms", 50.0, 90.0)):
            rows += run("2026-01-01", old, metric=metric, prompt_tokens=prompt, engine_version="1.0.0")
            rows += run("2026-01-01", new, metric=metric, prompt_tokens=prompt, engine_version="1.1.0")
    found = findings(make_site, rows)
    assert len(found) == 4 and len({f.group for f in found}) == 1
    assert all(f.direction == "worse" for f in found)
    # Another departing run is another group.
    rows += run("2026-02-01", 20.0, metric="decode_tok_s", prompt_tokens=512, engine_version="1.2.0")
    assert len({f.group for f in findings(make_site, rows)}) == 2


def test_a_steady_drift_is_a_finding_first_against_last(make_site: MakeSite) -> None:
    # Each step -5 % (within the ±10 % default band), first to last -18.5 % (beyond it).
    values = [100.0, 95.0, 90.25, 85.74, 81.45]
    rows = history(*(run(f"2026-0{i + 1}-01", v) for i, v in enumerate(values)))
    [finding] = findings(make_site, rows)
    assert finding.kind == "drift" and finding.id.endswith("-2026-05-01-drift")
    assert [r.value for r in finding.reference.runs] == [100.0]
    assert [r.value for r in finding.departing.runs] == [81.45]
    assert [r.value for r in finding.between] == [95.0, 90.25, 85.74]
    data = finding.as_json()
    assert data["kind"] == "drift" and [r["role"] for r in data["runs"]] == [
        "reference",
        "between",
        "between",
        "between",
        "departing",
    ]
    # Not steady (one step back up): no drift.
    wavy = history(*(run(f"2026-0{i + 1}-01", v) for i, v in enumerate([100.0, 95.0, 97.0, 90.0, 86.0])))
    assert [f.kind for f in findings(make_site, wavy)] == []

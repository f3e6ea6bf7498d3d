"""Findings of non-reproduction on small synthetic histories (builder.analysis.findings).

Every site here is the minimal site with generated rows; no figure is real.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from builder.analysis.findings import find_non_reproduction
from builder.analysis.run_groups import _COMBINATION, Combinations, combinations
from builder.config import load_config
from builder.review.check import check_site
from tests.conftest import REPO, MakeSite
from tests.rowsite import RECIPE_FLAGS, departing_dates, fields_of, findings, history, load, run

# ----------------------------------------------------------------------------------- staying silent


def test_noise_only_history_with_trials_is_silent(make_site: MakeSite) -> None:
    means = [100.0, 101.2, 99.1, 100.6, 98.9, 100.3]
    rows = history(
        *(run(f"2026-01-{day:02d}", m * 0.99, m, m * 1.01) for day, m in enumerate(means, start=1))
    )
    assert findings(make_site, rows) == []


def test_noise_only_history_of_single_trials_is_silent(make_site: MakeSite) -> None:
    values = [100.0, 102.0, 98.5, 101.0, 99.2, 100.8, 97.9]
    rows = history(*(run(f"2026-01-{day:02d}", v) for day, v in enumerate(values, start=1)))
    assert findings(make_site, rows) == []


def test_single_run_is_silent(make_site: MakeSite) -> None:
    # Trials of one run scatter wildly, but there is nothing to reproduce yet.
    assert findings(make_site, run("2026-01-01", 100.0, 60.0, 140.0)) == []


@pytest.mark.parametrize(
    ("other", "comparable"),
    [
        ({"prompt_tokens": 512}, False),
        ({"concurrency": 8}, False),
        ({"context_tokens": 8192}, False),
        ({"node": "node-c"}, False),  # other hardware
        ({"output_tokens": 512}, True),  # the first run does not give it: comparable
        ({"node": "node-b"}, True),  # another machine of the same hardware
    ],
)
def test_only_comparable_settings_are_compared(
    make_site: MakeSite, other: dict[str, object], comparable: bool
) -> None:
    rows = history(run("2026-01-01", 100.0), run("2026-02-01", 50.0, **other))
    assert bool(findings(make_site, rows)) is comparable


def test_different_output_lengths_are_not_compared(make_site: MakeSite) -> None:
    rows = history(run("2026-01-01", 100.0, output_tokens=256), run("2026-02-01", 50.0, output_tokens=512))
    assert findings(make_site, rows) == []


def test_unknown_prompt_length_is_not_comparable(make_site: MakeSite) -> None:
    rows = history(
        run("2026-01-01", 100.0, prompt_tokens="unknown"), run("2026-02-01", 50.0, prompt_tokens="unknown")
    )
    assert findings(make_site, rows) == []


# ------------------------------------------------------------------------------------ the noise band


def test_widely_scattering_trials_widen_the_band(make_site: MakeSite) -> None:
    # +15 %: beyond the default band for single trials...
    assert findings(make_site, history(run("2026-01-01", 100.0), run("2026-02-01", 115.0)))
    # ...but within what trials scattering by ±10 % show.
    wide = history(run("2026-01-01", 90.0, 100.0, 110.0), run("2026-02-01", 103.5, 115.0, 126.5))
    assert findings(make_site, wide) == []


def test_tight_trials_narrow_the_band(make_site: MakeSite) -> None:
    # +7 %: within the conservative default band for single trials...
    assert findings(make_site, history(run("2026-01-01", 100.0), run("2026-02-01", 107.0))) == []
    # ...but far outside what five tight trials per run show.
    tight = history(
        run("2026-01-01", 100.0, 100.3, 99.8, 100.1, 99.9),
        run("2026-02-01", 107.1, 106.8, 107.3, 107.0, 106.9),
    )
    [finding] = findings(make_site, tight)
    assert finding.noise.source == "trials"
    assert finding.noise.relative < 0.07


def test_agreeing_runs_set_the_band(make_site: MakeSite) -> None:
    # Eight single-trial runs agreeing within ~1 % make a 7 % departure stand out, which the
    # default band alone (±10 %) would not flag.
    values = [100.0, 100.8, 99.4, 100.3, 99.7, 100.5, 99.9, 100.2]
    rows = history(
        *(run(f"2026-01-{day:02d}", v) for day, v in enumerate(values, start=1)), run("2026-02-01", 93.0)
    )
    [finding] = findings(make_site, rows)
    assert finding.noise.source == "runs"
    assert departing_dates(finding) == ["2026-02-01"]


def test_two_percent_is_never_a_finding(make_site: MakeSite) -> None:
    tight = history(
        run("2026-01-01", 100.0, 100.0, 100.0, 100.0, 100.0, 100.0),
        run("2026-02-01", 101.9, 101.9, 101.9, 101.9, 101.9, 101.9),
    )
    assert findings(make_site, tight) == []


# ---------------------------------------------------------------------------- what is flagged, where


def test_drop_is_flagged(make_site: MakeSite) -> None:
    rows = history(
        run("2026-01-01", 100.0),
        run("2026-02-01", 101.0),
        run("2026-03-01", 99.0),
        run("2026-04-01", 100.0),
        run("2026-05-01", 80.0),
        run("2026-06-01", 81.0),
    )
    [finding] = findings(make_site, rows)
    assert finding.metric == "decode_tok_s"
    assert departing_dates(finding) == ["2026-05-01", "2026-06-01"]
    assert finding.change == pytest.approx(80.5 / 100.0 - 1)
    assert finding.direction == "worse"
    # A later loss reads as a loss since the departing version, each side by its runs' own figures.
    assert finding.departs == "later"
    assert finding.summary() == (
        "A loss since 1.0.0 on 2026-05-01: both later runs read 80–81 tok/s, against 99–101 tok/s in all 4 "
        "earlier runs, on 4 dates from 2026-01-01 to 2026-04-01 (−19.5 %)."
    )


def test_an_earlier_figure_that_later_runs_do_not_reproduce_reads_so(make_site: MakeSite) -> None:
    rows = history(run("2026-01-01", 130.0), run("2026-02-01", 100.0, 100.4), run("2026-03-01", 99.8))
    [finding] = findings(make_site, rows)
    assert departing_dates(finding) == ["2026-01-01"]
    assert finding.departs == "earlier"
    # The later runs against the earlier one: what was found since, not the old figure's "gain".
    assert finding.change == pytest.approx(100.0 / 130.0 - 1) and finding.direction == "worse"
    assert finding.earlier is finding.departing and finding.later is finding.reference
    summary = finding.summary()
    assert summary == (
        "130 tok/s on 2026-01-01 did not reproduce: both later runs, on 2026-02-01 and 2026-03-01, read "
        "99.8–100.4 tok/s (−23.1 %)."
    )
    assert "better" not in summary and "worse" not in summary
    data = finding.as_json()
    assert (data["departs"], data["change"], data["summary"]) == ("earlier", -0.2308, summary)
    assert (data["earlier"]["low"], data["earlier"]["high"]) == (130.0, 130.0)
    assert (data["later"]["low"], data["later"]["high"]) == (99.8, 100.4)


def test_rise_is_flagged(make_site: MakeSite) -> None:
    rows = history(
        run("2026-01-01", 100.0), run("2026-02-01", 100.5), run("2026-03-01", 99.5), run("2026-04-01", 125.0)
    )
    [finding] = findings(make_site, rows)
    assert departing_dates(finding) == ["2026-04-01"]
    assert finding.change == pytest.approx(0.25)
    assert finding.direction == "better"


def test_middle_outlier_is_flagged(make_site: MakeSite) -> None:
    rows = history(
        run("2026-01-01", 100.0),
        run("2026-02-01", 101.0),
        run("2026-03-01", 60.0),
        run("2026-04-01", 99.0),
        run("2026-05-01", 100.0),
    )
    [finding] = findings(make_site, rows)
    assert departing_dates(finding) == ["2026-03-01"]
    assert len(finding.reference.runs) == 4
    assert finding.change == pytest.approx(60.0 / 100.0 - 1)
    # One run departing from those before and after it, against them.
    assert finding.departs == "between"
    assert finding.summary() == (
        "One run departs from those before and after it: 60 tok/s on 2026-03-01, against 99–101 tok/s on "
        "4 dates from 2026-01-01 to 2026-05-01 (−40.0 %)."
    )


def test_ttft_rise_is_flagged_as_worse(make_site: MakeSite) -> None:
    # Decode stays put while time to first token rises by half.
    rows = history(
        run("2026-01-01", 200.0, metric="ttft_ms", decode_tok_s=50.0),
        run("2026-02-01", 202.0, metric="ttft_ms", decode_tok_s=50.2),
        run("2026-03-01", 198.0, metric="ttft_ms", decode_tok_s=49.9),
        run("2026-04-01", 300.0, metric="ttft_ms", decode_tok_s=50.1),
    )
    [finding] = findings(make_site, rows)
    assert finding.metric == "ttft_ms"
    assert finding.lower_is_better
    assert finding.change == pytest.approx(0.5)
    assert finding.direction == "worse"
    assert finding.summary().startswith("A loss since 1.0.0 on 2026-04-01: the later run read 300 ms")


def test_itl_fall_is_better(make_site: MakeSite) -> None:
    rows = history(run("2026-01-01", 20.0, metric="itl_ms"), run("2026-02-01", 12.0, metric="itl_ms"))
    [finding] = findings(make_site, rows)
    assert finding.metric == "itl_ms"
    assert finding.direction == "better"
    # Two runs: the later one departs (the earlier is the reference on a tie), a gain since it.
    assert finding.departs == "later" and finding.summary().startswith("A gain since 1.0.0 on 2026-02-01")


def test_change_at_one_concurrency_only(make_site: MakeSite) -> None:
    rows = history(
        run("2026-01-01", 100.0),
        run("2026-01-01", 40.0, concurrency=8),
        run("2026-02-01", 100.4),
        run("2026-02-01", 40.5, concurrency=8),
        run("2026-03-01", 99.8),
        run("2026-03-01", 30.0, concurrency=8),
    )
    [finding] = findings(make_site, rows)
    assert finding.setting == {
        "hardware": "test-gpu",
        "prompt_tokens": 2048,
        "context_tokens": 0,
        "output_tokens": None,
        "concurrency": 8,
        "request_rate": None,
    }
    assert departing_dates(finding) == ["2026-03-01"]


def test_each_metric_of_a_row_is_compared_on_its_own(make_site: MakeSite) -> None:
    rows = history(
        run("2026-01-01", 5000.0, metric="prefill_tok_s", decode_tok_s=100.0),
        run("2026-02-01", 3000.0, metric="prefill_tok_s", decode_tok_s=60.0),
    )
    assert sorted(f.metric for f in findings(make_site, rows)) == ["decode_tok_s", "prefill_tok_s"]


# ------------------------------------------------------------------------------ runs and normalised flags


def test_normalised_flags_make_one_run_of_trials(make_site: MakeSite) -> None:
    rows = history(
        run("2026-01-01", 100.0, flags="--max-model-len=4096 --kv-cache-dtype fp8"),
        run("2026-01-01", 100.2, flags="--kv-cache-dtype fp8 --max_model_len 4096"),
        run("2026-02-01", 80.0),
    )
    [finding] = findings(make_site, rows)
    assert [sorted(r.trials) for r, _ in finding.runs] == [[100.0, 100.2], [80.0]]


def test_engine_build_separates_runs_on_one_day(make_site: MakeSite) -> None:
    rows = history(
        run("2026-01-01", 100.0, engine_build="sha256:" + "a" * 64),
        run("2026-01-01", 70.0, engine_build="sha256:" + "b" * 64),
    )
    [finding] = findings(make_site, rows)
    assert len(finding.runs) == 2
    assert fields_of(finding.explanation.explained_by) == ["engine_build"]


# ------------------------------------------------------------------------------------- explanations


def _explained(make_site: MakeSite, before: dict[str, object], after: dict[str, object]) -> list[str]:
    rows = history(
        run("2026-01-01", 100.0, **before),
        run("2026-02-01", 101.0, **before),
        run("2026-03-01", 80.0, **after),
        run("2026-04-01", 80.5, **after),
    )
    [finding] = findings(make_site, rows)
    assert departing_dates(finding) in (["2026-01-01", "2026-02-01"], ["2026-03-01", "2026-04-01"])
    return fields_of(finding.explanation.explained_by)


def test_explained_by_engine_version(make_site: MakeSite) -> None:
    assert _explained(make_site, {}, {"engine_version": "1.1.0"}) == ["engine_version"]


def test_explained_by_flag_by_name(make_site: MakeSite) -> None:
    assert _explained(make_site, {}, {"flags": RECIPE_FLAGS + " --max-num-seqs 8"}) == ["--max-num-seqs"]


def test_explained_by_env_key(make_site: MakeSite) -> None:
    assert _explained(make_site, {}, {"env": "EXAMPLE_ENV=2"}) == ["env:EXAMPLE_ENV"]


def test_explained_by_node(make_site: MakeSite) -> None:
    assert _explained(make_site, {}, {"node": "node-b"}) == ["node"]


def test_explained_by_driver_and_harness(make_site: MakeSite) -> None:
    assert _explained(make_site, {"driver": "580.65"}, {"driver": "580.95"}) == ["driver"]
    assert _explained(make_site, {"harness": "bench-a"}, {"harness": "bench-b"}) == ["harness"]


def test_unrecorded_value_is_not_an_explanation(make_site: MakeSite) -> None:
    # The earlier runs do not record their driver: it cannot be offered as the cause.
    rows = history(
        run("2026-01-01", 100.0),
        run("2026-02-01", 101.0),
        run("2026-03-01", 80.0, driver="580.95"),
    )
    [finding] = findings(make_site, rows)
    assert finding.explanation.explained_by == ()
    assert "driver" in finding.explanation.unrecorded


def test_nothing_differs_is_unexplained_with_advice(make_site: MakeSite) -> None:
    rows = history(run("2026-01-01", 100.0), run("2026-02-01", 101.0), run("2026-03-01", 70.0))
    [finding] = findings(make_site, rows)
    data = finding.as_json()
    assert data["explained_by"] == []
    assert data["ruled_out"] == []
    assert data["explanation"].startswith("Unexplained by the recorded metadata")
    assert any("engine_build" in a and "driver" in a for a in data["advice"])


def test_a_control_run_rules_a_flag_out(make_site: MakeSite) -> None:
    # The shape of the seed's case: the old figure at a short context, the new one at the full
    # context, and a control at the short context that agrees with the new one.
    rows = history(
        run("2026-07-06", 76.8, flags="--max-model-len 10240"),
        run("2026-07-27", 42.6, flags="--max-model-len 262144"),
        run("2026-07-27", 42.5, flags="--max-model-len 10240", harness="curl"),
    )
    [finding] = findings(make_site, rows)
    assert departing_dates(finding) == ["2026-07-06"]
    assert finding.explanation.explained_by == ()
    [ruled] = finding.explanation.ruled_out
    assert ruled.field == "--max-model-len"
    assert ruled.control.value == 42.5
    assert ruled.shared == "10240"


def test_without_a_control_the_flag_is_the_explanation(make_site: MakeSite) -> None:
    rows = history(
        run("2026-07-06", 76.8, flags="--max-model-len 10240"),
        run("2026-07-27", 42.6, flags="--max-model-len 262144"),
    )
    [finding] = findings(make_site, rows)
    assert [d.as_json() for d in finding.explanation.explained_by] == [
        {
            "field": "--max-model-len",
            "values": ["10240", "262144"],
            "departing": ["262144"],
            "reference": ["10240"],
        }
    ]


# --------------------------------------------------------------------------------------- the contract


def test_json_contract(make_site: MakeSite) -> None:
    rows = history(run("2026-01-01", 100.0, 100.4), run("2026-02-01", 99.8), run("2026-03-01", 70.0))
    [finding] = findings(make_site, rows)
    data = json.loads(json.dumps(finding.as_json()))
    assert data["kind"] == "non_reproducing"
    assert data["recipe"] == "tiny"
    assert data["metric"] == "decode_tok_s"
    assert set(data["setting"]) == {
        "hardware",
        "prompt_tokens",
        "context_tokens",
        "output_tokens",
        "concurrency",
        "request_rate",
    }
    assert data["group"] == finding.group and data["group"].startswith("tiny-2026-03-01-")
    assert data["annotation"] is None
    assert [(r["date"], r["value"], r["trials"]) for r in data["runs"]] == [
        ("2026-01-01", 100.2, [100.0, 100.4]),
        ("2026-02-01", 99.8, [99.8]),
        ("2026-03-01", 70.0, [70.0]),
    ]
    for item in data["runs"]:
        assert {"date", "node", "engine_version", "value", "trials"} <= set(item)
    assert math.isclose(data["change"], round(70.0 / 100.0 - 1, 4))
    assert data["path"] == "data/rows/tiny/synthetic.csv"
    assert data["line"] == 5  # the departing run's row (header = line 1)


def test_shipped_site_flags_the_nvfp4_decode_case() -> None:
    report = check_site(load_config(REPO))
    assert report.errors == []
    assert report.exit_code == 0  # findings alone never fail check
    matches = [
        f
        for f in report.findings
        if f["recipe"] == "qwen3.6-35b-a3b-nvidia-nvfp4"
        and f["metric"] == "decode_tok_s"
        and f["setting"]["prompt_tokens"] == 2048
        and f["setting"]["concurrency"] == 1
        and f["setting"]["context_tokens"] == 0
    ]
    [finding] = matches
    runs = sorted((r["date"], r["value"], r["departs"]) for r in finding["runs"])
    assert runs == [("2026-07-06", 76.8, True), ("2026-07-27", 42.5, False), ("2026-07-27", 42.6, False)]
    assert [r["field"] for r in finding["ruled_out"]] == ["--max-model-len"]
    assert finding["ruled_out"][0]["control"]["value"] == 42.5
    assert finding["explained_by"] == []
    assert "Unexplained by the recorded metadata" in finding["explanation"]
    # Told in time order: the earlier 76.8 did not reproduce; the change is the later runs' against it.
    assert finding["departs"] == "earlier"
    assert finding["change"] == pytest.approx(42.55 / 76.8 - 1, abs=1e-4) and finding["direction"] == "worse"
    assert finding["summary"] == (
        "76.8 tok/s on 2026-07-06 did not reproduce: both later runs, on 2026-07-27, read 42.5–42.6 tok/s "
        "(−44.6 %)."
    )
    assert finding["earlier"]["dates"] == ["2026-07-06"] and finding["later"]["dates"] == ["2026-07-27"]
    assert finding["annotation"] is None


def test_duckdb_prefilter_loses_no_finding(make_site: MakeSite) -> None:
    """Random histories (seeded) across many settings: the pre-filtered and the exhaustive paths agree."""
    import random

    from builder.analysis.findings import find_non_reproduction
    from tests.rowsite import load

    rnd = random.Random(20260727)
    rows = []
    for prompt in range(100, 160):
        level = rnd.uniform(20, 200)
        trials = rnd.choice([1, 1, 2, 3, 5])
        spread = rnd.choice([0.002, 0.01, 0.03, 0.08])
        for day in range(1, rnd.randint(2, 8)):
            shift = rnd.choice([1.0, 1.0, 1.0, 1.0, 0.93, 0.8, 1.25])
            values = [round(level * shift * rnd.gauss(1, spread), 2) for _ in range(trials)]
            output = rnd.choice([None, None, 256, 512]) if prompt % 7 == 0 else None
            rows += run(f"2026-03-{day:02d}", *values, prompt_tokens=prompt, output_tokens=output)
    loaded = load(make_site, rows)
    assert loaded.recon is not None
    fast = [f.as_json() for f in loaded.recon.findings]
    slow = [f.as_json() for f in find_non_reproduction(loaded.site, exhaustive=True)]
    assert fast == slow
    assert 10 < len(fast) < 60  # the histories do hold findings, and not everywhere


def test_two_departures_on_one_date_get_distinct_ids(make_site: MakeSite) -> None:
    rows = history(
        run("2026-01-01", 100.0),
        run("2026-02-01", 100.5),
        run("2026-03-01", 99.5),
        run("2026-04-01", 60.0, flags=RECIPE_FLAGS + " --enforce-eager"),
        run("2026-04-01", 150.0, flags=RECIPE_FLAGS + " --max-num-seqs 64"),
    )
    found = findings(make_site, rows)
    assert sorted(f.departing.value for f in found) == [60.0, 150.0]
    assert len({f.id for f in found}) == 2
    assert [fields_of(f.explanation.explained_by) for f in found] == [["--enforce-eager"], ["--max-num-seqs"]]


# ------------------------------------------------------------------------------ a repeatable order


def _permuted(combos: Combinations, order: list[int]) -> Combinations:
    """The same combinations listed in ``order`` (DuckDB groups rows in no fixed order)."""
    place = np.empty(len(order), dtype=np.int32)
    place[np.asarray(order)] = np.arange(len(order), dtype=np.int32)
    lists = {name: [getattr(combos, name)[i] for i in order] for name in _COMBINATION}
    return Combinations(**lists, of_row_id=place[combos.of_row_id])


def test_runs_of_one_date_and_version_keep_one_order_whatever_order_rows_are_grouped_in(
    make_site: MakeSite,
) -> None:
    # Two runs on one day with one version, told apart by the engine build alone: which is the
    # reference and which departs may not hang on the order DuckDB happens to group the rows in.
    rows = history(
        run("2026-01-01", 100.0, 100.4),
        run("2026-02-01", 50.0, 50.2, engine_build="abc123"),
        run("2026-02-01", 50.1, 50.3),
        run("2026-03-01", 100.2, 99.8),
    )
    site = load(make_site, rows).site
    combos = combinations(site)
    forward = [f.as_json() for f in find_non_reproduction(site, combos)]
    backward = [
        f.as_json()
        for f in find_non_reproduction(site, _permuted(combos, list(reversed(range(len(combos))))))
    ]
    assert forward and forward == backward

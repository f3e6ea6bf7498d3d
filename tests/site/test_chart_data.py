"""Recipe chart values from rows: which runs the curves take, the history's runs, findings' rings.

Every row here is made up for the test.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from pathlib import Path
from typing import Any

from bs4 import BeautifulSoup

from builder.analysis.reconcile import DIFFERS, MATCHES, NOT_RECORDED, Difference, RowStatus
from builder.config import load_config
from builder.engine.incremental import build
from builder.engine.pipeline import load_and_reconcile
from builder.site.chart_data import RESULTS_ANCHOR, annotate, concurrency_chart, prompt_chart, recipe_charts
from tests.chartpage import StubFinding, StubRun, chart_values
from tests.conftest import MakeSite
from tests.rowsite import history, run, site_files

ON = RowStatus(MATCHES)
OFF = RowStatus(DIFFERS, (Difference("--max-model-len", "1024", "4096"),))
UNRECORDED = RowStatus(NOT_RECORDED, unrecorded=("env",))
NODE_HW = {"node-a": "gpu-x", "node-b": "gpu-x", "node-c": "gpu-y"}


def row(
    row_id: int, date: str, node: str, prompt: int | None, concurrency: int, decode: float | None, **more: Any
) -> dict[str, Any]:
    return {
        "row_id": row_id,
        "date": dt.date.fromisoformat(date),
        "node": node,
        "engine_version": "1.0.0",
        "prompt_tokens": prompt,
        "context_tokens": 0,
        "concurrency": concurrency,
        "decode_tok_s": decode,
        "aggregate_tok_s": more.get("aggregate"),
        "prefill_tok_s": None,
        "ttft_ms": None,
        "itl_ms": None,
    }


def test_curves_take_the_latest_run_across_the_nodes_of_one_hardware() -> None:
    # node-a and node-b are the same hardware: one setting, whose latest run (node-a, 02-01) wins
    # even though node-b's older rows come later in the list.
    rows = [
        row(1, "2026-02-01", "node-a", 512, 1, 50.0),
        row(2, "2026-02-01", "node-a", 2048, 1, 45.0),
        row(3, "2026-01-01", "node-b", 512, 1, 30.0),
        row(4, "2026-01-01", "node-b", 2048, 1, 28.0),
    ]
    statuses = dict.fromkeys(range(1, 5), ON)
    chart = prompt_chart(annotate(rows, statuses.__getitem__, NODE_HW))
    assert chart is not None
    assert [(v["prompt"], v["decode"], v["node"]) for v in chart.values] == [
        (512, 50.0, "node-a"),
        (2048, 45.0, "node-a"),
    ]


def test_curves_prefer_matching_rows_and_never_take_off_recipe_ones() -> None:
    rows = [
        row(1, "2026-03-01", "node-a", 512, 1, 99.0),  # newest, but off-recipe
        row(2, "2026-02-01", "node-a", 512, 1, 50.0),
        row(3, "2026-03-01", "node-a", 2048, 1, 44.0),  # leaves env unrecorded: no matching row here
        row(4, "2026-03-01", "node-a", 8192, 1, 70.0),  # only off-recipe rows: no point
    ]
    statuses = {1: OFF, 2: ON, 3: UNRECORDED, 4: OFF}
    chart = prompt_chart(annotate(rows, statuses.__getitem__, NODE_HW))
    assert chart is not None
    assert [(v["prompt"], v["decode"], v["status"]) for v in chart.values] == [
        (512, 50.0, "matches recipe"),
        (2048, 44.0, "not recorded"),
    ]
    assert "leave env unrecorded" in chart.caption


def test_a_run_with_trials_is_drawn_from_all_of_them() -> None:
    rows = [
        row(1, "2026-02-01", "node-a", 512, 1, 50.0, aggregate=50.0),
        row(2, "2026-02-01", "node-a", 512, 1, 52.0, aggregate=52.0),
        row(3, "2026-02-01", "node-a", 512, 8, 30.0, aggregate=240.0),
    ]
    statuses = dict.fromkeys(range(1, 4), ON)
    chart = concurrency_chart(annotate(rows, statuses.__getitem__, NODE_HW))
    assert chart is not None
    aggregate = [(v["concurrency"], v["value"]) for v in chart.values if v["measure"] == "Aggregate"]
    assert aggregate == [(1, 50.0), (1, 52.0), (8, 240.0)]  # every trial; the line goes through their median


def test_recipe_charts_history_links_to_the_results_table() -> None:
    rows = [
        row(1, "2026-01-01", "node-a", 512, 1, 50.0),
        row(2, "2026-02-01", "node-a", 512, 1, 51.0),
        row(3, "2026-02-01", "node-c", 512, 1, 40.0),  # other hardware: its own setting
    ]
    statuses = dict.fromkeys(range(1, 4), ON)
    charts = recipe_charts(rows, statuses.__getitem__, NODE_HW, [])
    assert [c.id for c in charts] == ["chart-history-decode_tok_s"]  # one prompt length: no curve
    history = charts[0]
    assert history.rows_link == RESULTS_ANCHOR and history.columns == ()
    assert [(v["date"], v["node"], v["value"]) for v in history.values] == [
        ("2026-01-01", "node-a", 50.0),
        ("2026-02-01", "node-a", 51.0),
        ("2026-02-01", "node-c", 40.0),
    ]
    # a finding rings the runs it compares, on its own metric's history only
    finding = StubFinding(
        "decode_tok_s",
        {
            "hardware": "gpu-x",
            "prompt_tokens": 512,
            "context_tokens": 0,
            "concurrency": 1,
            "output_tokens": None,
        },
        [StubRun(dt.date(2026, 1, 1), "node-a", "1.0.0", 50.0)],
        "decode_tok_s does not reproduce",
    )
    other_metric = dataclasses.replace(finding, metric="ttft_ms")
    charts = recipe_charts(rows, statuses.__getitem__, NODE_HW, [finding, other_metric])
    rings = [v for v in charts[0].values if v["layer"] == "finding"]
    assert rings == [
        {
            "layer": "finding",
            "date": "2026-01-01",
            "setting": "512-token prompt · concurrency 1",
            "value": 50.0,
            "status": "finding",
            "note": "decode_tok_s does not reproduce",
            "node": "node-a",
            "engine_version": "1.0.0",
        }
    ]
    assert "trials" not in rings[0]  # absent fields stay absent in the embedded values


def test_a_recipe_page_rings_the_runs_its_finding_compares(make_site: MakeSite, tmp_path: Path) -> None:
    rows = history(
        run("2026-01-01", 100.0),
        run("2026-02-01", 101.0),
        run("2026-03-01", 70.0, flags="--max-model-len 8192 --kv-cache-dtype fp8"),
    )
    out = tmp_path / "out"
    root = make_site(site_files(rows))
    build(load_config(root, out))
    soup = BeautifulSoup((out / "recipes/tiny/index.html").read_text(encoding="utf-8"), "html.parser")
    history_values = chart_values(soup)["chart-history-decode_tok_s"]
    rings = [v for v in history_values if v["layer"] == "finding"]
    loaded = load_and_reconcile(load_config(root))
    assert loaded.recon is not None
    [finding] = [f for f in loaded.recon.findings_for("tiny") if f.metric == "decode_tok_s"]
    assert [(v["date"], v["value"]) for v in rings] == [
        (r.date.isoformat(), r.value) for r, _ in finding.runs
    ]
    assert {v["note"] for v in rings} == {finding.summary()}

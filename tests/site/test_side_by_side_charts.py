"""Side-by-side charts (builder/side_by_side_charts.py): a chart per quantity two builds share a setting for."""

from __future__ import annotations

import datetime as dt

from builder.analysis.reconcile import DIFFERS, MATCHES
from builder.site.charts import ARMS, BUILDS
from builder.site.comparisons import Build, Line
from builder.site.figures import Cell, Setting
from builder.site.side_by_side_charts import side_by_side_charts


def _build(slug: str, label: str, hardware: str = "spark") -> Build:
    return Build(slug, f"Model {label}", label, f"org/{slug}", hardware, "vllm", "0.24.0")


def _cell(recipe: str, metric: str, value: float, *, status: str = MATCHES, why: str = "") -> Cell:
    return Cell(recipe, metric, value, 1, dt.date(2026, 7, 6), "node-1", "0.24.0", status, why, (0,))


def _line(metric: str, setting: Setting, *cells: Cell) -> Line:
    return Line(metric, setting, {cell.recipe: cell for cell in cells})


SINGLE = Setting("spark", 512, 0, 1)
EIGHT = Setting("spark", 512, 0, 8)


def test_a_chart_per_quantity_two_builds_share() -> None:
    builds = [_build("a", "NVFP4"), _build("b", "FP8")]
    lines = [
        _line("decode_tok_s", SINGLE, _cell("b", "decode_tok_s", 97.5), _cell("a", "decode_tok_s", 42.6)),
        # Measured by one build only at its setting: nothing to compare, no chart.
        _line("aggregate_tok_s", EIGHT, _cell("a", "aggregate_tok_s", 322.0)),
    ]
    charts = side_by_side_charts(BUILDS, lines, builds)
    assert [chart.id for chart in charts] == ["chart-builds-decode_tok_s"]
    (chart,) = charts
    assert chart.kind == BUILDS
    assert chart.quantity == "decode_tok_s"
    assert chart.title == "Decode side by side"
    # In build order, whatever the order of the line's cells; one hardware, so no hardware named.
    assert [(v["build"], v["order"], v["value"]) for v in chart.values] == [
        ("NVFP4", 0, 42.6),
        ("FP8", 1, 97.5),
    ]
    assert {v["setting"] for v in chart.values} == {"512-token prompt · concurrency 1"}
    assert chart.values[0]["date"] == "2026-07-06"
    assert chart.rows_link == ""


def test_an_off_recipe_figure_says_why() -> None:
    builds = [_build("a", "NVFP4"), _build("b", "FP8")]
    line = _line(
        "decode_tok_s",
        SINGLE,
        _cell("a", "decode_tok_s", 42.6),
        _cell("b", "decode_tok_s", 97.5, status=DIFFERS, why="differs: engine_version 0.23.0"),
    )
    (chart,) = side_by_side_charts(BUILDS, [line], builds)
    assert [v["why"] for v in chart.values] == ["", "differs: engine_version 0.23.0"]


def test_hardware_is_named_only_when_the_builds_span_several() -> None:
    builds = [_build("a", "NVFP4", "spark"), _build("b", "FP8", "rtx")]
    line = _line("decode_tok_s", SINGLE, _cell("a", "decode_tok_s", 42.6), _cell("b", "decode_tok_s", 97.5))
    names = {"spark": "DGX Spark", "rtx": "RTX PRO 6000"}
    (chart,) = side_by_side_charts(BUILDS, [line], builds, names.__getitem__)
    assert {v["setting"] for v in chart.values} == {"512-token prompt · concurrency 1 · DGX Spark"}
    (alone,) = side_by_side_charts(
        BUILDS, [line], builds[:1] + [_build("b", "FP8", "spark")], names.__getitem__
    )
    assert {v["setting"] for v in alone.values} == {"512-token prompt · concurrency 1"}


def test_a_page_with_charts_per_hardware_keys_them_and_links_its_table() -> None:
    builds = [_build("a", "NVFP4"), _build("b", "FP8")]
    line = _line("ttft_ms", SINGLE, _cell("a", "ttft_ms", 120.0), _cell("b", "ttft_ms", 95.0))
    (chart,) = side_by_side_charts(
        BUILDS, [line], builds, key="spark", where="DGX Spark", rows_link="#t-spark"
    )
    assert chart.id == "chart-builds-spark-ttft_ms"
    assert chart.title.endswith(" side by side on DGX Spark")
    assert chart.rows_link == "#t-spark"
    assert "smaller is better" in chart.caption


def test_case_study_arms() -> None:
    builds = [_build("a", "baseline (control)"), _build("b", "quantized (treatment)")]
    line = _line("decode_tok_s", SINGLE, _cell("a", "decode_tok_s", 40.0), _cell("b", "decode_tok_s", 60.0))
    (chart,) = side_by_side_charts(ARMS, [line], builds)
    assert chart.id == "chart-arms-decode_tok_s"
    assert [v["arm"] for v in chart.values] == ["baseline (control)", "quantized (treatment)"]
    assert "each arm" in chart.caption

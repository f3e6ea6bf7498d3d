"""Two real same-day regressions (tests/sites/real-regressions, origins in its README) read as losses
of the newer version: one finding group each, the reported spread deciding which settings are flagged."""

from __future__ import annotations

from typing import Any

import pytest

from builder.config import load_config
from builder.review.check import check_site
from tests.conftest import SITES


@pytest.fixture(scope="module")
def findings() -> list[dict[str, Any]]:
    report = check_site(load_config(SITES / "real-regressions"))
    assert report.errors == []
    return report.findings


def _by_recipe(findings: list[dict[str, Any]], recipe: str) -> list[dict[str, Any]]:
    return [f for f in findings if f["recipe"] == recipe]


def test_spark_vllm_docker_112_reads_as_one_loss_of_the_new_wheel(findings: list[dict[str, Any]]) -> None:
    mine = _by_recipe(findings, "spark-vllm-prefill")
    assert len({f["group"] for f in mine}) == 1
    for finding in mine:
        assert finding["direction"] == "worse" and finding["change"] < 0
        departing = {r["engine_version"] for r in finding["runs"] if r["departs"]}
        reference = {r["engine_version"] for r in finding["runs"] if not r["departs"]}
        assert (departing, reference) == ({"0.17.2rc1.dev7"}, {"0.17.1.rc1"})
        assert finding["noise"] == "reported spread"
    flagged = {(f["setting"]["prompt_tokens"], f["setting"]["output_tokens"]): f["change"] for f in mine}
    # 1479.18 ± 1.11 → 1376.45 ± 1.84 (−6.9 %) and 1477.67 ± 2.23 → 1406.56 ± 12.36 (−4.8 %): flagged.
    assert flagged[(1024, 64)] == pytest.approx(1376.45 / 1479.18 - 1, abs=1e-4)
    assert flagged[(1024, 128)] == pytest.approx(1406.56 / 1477.67 - 1, abs=1e-4)
    # 314.32 ± 150.60 → 256.11 ± 115.97 (−18.5 %) is within its spread; so is 1801.74 ± 5.07 → 1742.88 ± 23.16.
    assert (128, 32) not in flagged and (2048, 64) not in flagged
    assert len(mine) == 12


def test_vllm_18619_open_loop_runs_read_as_a_loss_of_0_8_5(findings: list[dict[str, Any]]) -> None:
    [finding] = _by_recipe(findings, "qwen2.5-vl-3b")
    assert finding["setting"]["request_rate"] == 200 and finding["setting"]["concurrency"] is None
    assert finding["direction"] == "worse"
    assert finding["later"]["engine_versions"] == ["0.8.5"] and finding["earlier"]["engine_versions"] == [
        "0.8.4"
    ]
    assert [len(r["trials"]) for r in finding["runs"]] == [7, 7]
    assert finding["change"] == pytest.approx(57.80 / 62.79 - 1, abs=1e-4)  # the medians the issue prints
    assert "200 req/s" in finding["detail"]
    assert finding["departs"] == "later" and finding["summary"].startswith("A loss since 0.8.5 on ")

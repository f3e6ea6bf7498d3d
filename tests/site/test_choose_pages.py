"""The /choose/ pages of the shipped site, parsed: the chooser, the hardware page, the JSON index."""

from __future__ import annotations

import json

import pytest
from bs4 import BeautifulSoup

from builder.config import load_config
from builder.engine.pipeline import load_and_reconcile
from builder.site.choose import Query, choose
from builder.site.choose_pages import PAGE_TOP
from builder.site.context import ContentSummary
from builder.site.render import make_context, page_jobs
from tests.conftest import REPO

NVFP4 = "qwen3.6-35b-a3b-nvidia-nvfp4"
FAST = "qwen3.6-35b-a3b-unsloth-nvfp4-fast"


@pytest.fixture(scope="module")
def pages() -> dict[str, bytes]:
    loaded = load_and_reconcile(load_config(REPO))
    assert loaded.recon is not None
    ctx = make_context(loaded.site, loaded.recon)
    jobs = page_jobs(ctx, ContentSummary("", (), 0, {}, ""))
    return {path: job() for path, job in jobs if path.startswith(("choose/", "hardware/dgx-spark/"))}


def test_the_jobs_are_the_chooser_and_per_hardware_a_page_and_an_index(pages: dict[str, bytes]) -> None:
    assert sorted(p for p in pages if p.startswith("choose/")) == [
        "choose/dgx-spark/index.html",
        "choose/dgx-spark/rankings.json",
        "choose/index.html",
    ]


def test_chooser_page_without_script_links_each_hardware(pages: dict[str, bytes]) -> None:
    soup = BeautifulSoup(pages["choose/index.html"], "html.parser")
    chooser = soup.find(id="chooser")
    assert chooser is not None and chooser.has_attr("hidden")  # shown by the script only
    assert [a["href"] for a in soup.select("main ul.choose-hw a")] == ["../choose/dgx-spark/"]
    (script,) = soup.find_all("script")
    assert script["src"].startswith("../static/choose.") and script.has_attr("defer")
    assert not script.get_text()  # no inline script
    options = [o["value"] for o in soup.select("#choose-hw option")]
    assert options == ["dgx-spark"]


def test_hardware_page_ranks_the_recipes_measured_at_each_setting(pages: dict[str, bytes]) -> None:
    soup = BeautifulSoup(pages["choose/dgx-spark/index.html"], "html.parser")
    sections = soup.select("section.choose-setting")
    headings = [s.h2.get_text() for s in sections if s.h2]
    assert headings[:4] == [
        "512-token prompt, context 0, concurrency 1",
        "2,048-token prompt, 256 output tokens, context 0, concurrency 1",  # the control run: another setting
        "2,048-token prompt, context 0, concurrency 1",
        "8,192-token prompt, context 0, concurrency 1",
    ]
    toc = [(a["href"], a.get_text()) for a in soup.select("nav.toc a")]
    assert toc == [(f"#{s.h2['id']}", s.h2.get_text()) for s in sections if s.h2]
    at_2048 = sections[2]
    assert [h.get_text() for h in at_2048.find_all("h3")] == [
        "Decode tok/s per stream, higher is better",
        "Prefill tok/s, higher is better",
        "ITL ms, lower is better",
    ]
    decode, _, itl = at_2048.find_all("table")
    rows = [[td.get_text() for td in tr.find_all("td")] for tr in decode.select("tbody tr")]
    assert rows == [
        ["1", "Qwen3.6 35B-A3B — Unsloth NVFP4-Fast command not recorded", "106.5", "2026-07-27", "not recorded",
         "0", f"data/rows/{FAST}/2026-07-27-spark-01.csv:2"],
        ["2", "Qwen3.6 35B-A3B — NVIDIA NVFP4 contested", "42.6", "2026-07-27", "matches", "1",
         f"data/rows/{NVFP4}/2026-07-27-spark-01.csv:3"],
    ]  # fmt: skip
    answer = decode.find_previous("p", class_="choose-answer")
    assert (
        " ".join(answer.get_text().split())
        == "Use this: Qwen3.6 35B-A3B — NVIDIA NVFP4, 42.6 tok/s per stream contested"
    )
    assert (
        answer.find_next("pre")
        .get_text()
        .endswith("vllm serve nvidia/Qwen3.6-35B-A3B-NVFP4 \\\n  --max-model-len 262144")
    )
    assert decode.select("tbody tr a")[0]["href"] == f"../../recipes/{FAST}/"
    assert [tr.find_all("td")[2].get_text() for tr in itl.select("tbody tr")] == ["9", "23.5"]
    assert all(len(t.select("tbody tr")) <= PAGE_TOP for t in soup.find_all("table"))
    hardware = BeautifulSoup(pages["hardware/dgx-spark/index.html"], "html.parser")
    assert hardware.select_one("main a[href='../../choose/dgx-spark/']") is not None


def test_json_index_holds_the_rankings_rank_makes(pages: dict[str, bytes]) -> None:
    index = json.loads(pages["choose/dgx-spark/rankings.json"])
    assert set(index) == {
        "hardware", "name", "metrics", "recipes", "settings", "setting_loads", "setting_values", "loads", "commands",
        "figures",
        "rankings", "answers",
    }  # fmt: skip
    assert [m[0] for m in index["metrics"]] == [
        "decode_tok_s", "aggregate_tok_s", "prefill_tok_s", "ttft_ms", "itl_ms",
    ]  # fmt: skip
    at = str(index["settings"].index("2,048-token prompt, context 0, concurrency 1"))
    ranked = index["rankings"][at]["decode_tok_s"]
    recipes = [index["recipes"][index["figures"][f][0]][0] for f, _ in ranked]
    loaded = load_and_reconcile(load_config(REPO))
    assert loaded.recon is not None
    expected = choose(loaded.site, loaded.recon, Query("dgx-spark", prompt_tokens=2048)).results
    assert recipes == [c.figure.recipe for c in expected]
    assert [bool(exact) for _, exact in ranked] == [c.exact for c in expected]
    first = index["figures"][ranked[1][0]]
    assert first[2:7] == [42.6, "2026-07-27", "matches", f"data/rows/{NVFP4}/2026-07-27-spark-01.csv:3", 1]
    assert index["commands"][first[7]] == expected[1].figure.command and first[8] == 1  # runnable, contested
    assert index["figures"][ranked[0][0]][7:] == [-1, 0]  # command not recorded, not contested
    assert index["answers"][at]["decode_tok_s"] == ranked[1][0]
    at_32 = str(next(i for i, s in enumerate(index["settings"]) if s.endswith("concurrency 32")))
    assert index["rankings"][at_32]["decode_tok_s"] == [] and "decode_tok_s" not in index["answers"].get(
        at_32, {}
    )
    assert index["loads"]["decode_tok_s"] == ["concurrency 1", "concurrency 8"]
    assert index["setting_loads"][int(at_32)] == "concurrency 32"

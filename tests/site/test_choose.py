"""The chooser's ranking (builder.site.choose), on the shipped site and on a small synthetic site."""

from __future__ import annotations

import textwrap

import pytest

from builder.analysis.reconcile import Reconciliation
from builder.config import load_config
from builder.data.load import Site
from builder.engine.pipeline import load_and_reconcile
from builder.errors import UsageError
from builder.site.choose import Query, Setting, choose, hardware_figures, rankings
from tests.conftest import REPO

HEADER = "date,recipe,node,engine_version,prompt_tokens,concurrency,request_rate,decode_tok_s,ttft_ms,flags,source\n"


def _recipe(title: str, hardware: str = "test-gpu") -> str:
    return f"""\
        ---
        title: {title}
        model: example/tiny
        checkpoint: example/tiny-fp8
        hardware: {hardware}
        engine: vllm
        engine_version: "1.0.0"
        flags: "--a 1"
        ---
        SYNTHETIC test recipe; no figure here was measured.
        """


def _rows(recipe: str, *lines: str, node: str = "node-a") -> str:
    return HEADER + "".join(f"{line.format(r=recipe, n=node)},synthetic\n" for line in lines)


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory: pytest.TempPathFactory) -> tuple[Site, Reconciliation]:
    """SYNTHETIC: four recipes on test-gpu, one on other-gpu; every figure made up for the test."""
    root = tmp_path_factory.mktemp("choose") / "site"
    files = {
        "data/nodes.yaml": "node-a:\n  hardware: test-gpu\nnode-b:\n  hardware: other-gpu\n",
        "data/hardware.yaml": "test-gpu:\n  name: Test GPU\nother-gpu:\n  name: Other GPU\n",
        "content/recipes/fast.md": _recipe("Fast build"),
        "content/recipes/slow.md": _recipe("Slow build"),
        "content/recipes/near.md": _recipe("Measured elsewhere"),
        "content/recipes/differ.md": _recipe("Only differing rows"),
        "content/recipes/away.md": _recipe("Other hardware", "other-gpu"),
        # fast: a matching run, and a faster row that differs (flags): the matching one is used.
        "data/rows/fast/2026-01-02-node-a.csv": _rows(
            "fast",
            "2026-01-02,{r},{n},1.0.0,2048,1,,100,50,--a 1",
            "2026-01-02,{r},{n},1.0.0,2048,1,,102,52,--a 1",
            "2026-01-03,{r},{n},1.0.0,2048,1,,500,5,--a 2",
            "2026-01-02,{r},{n},1.0.0,2048,8,,60,90,--a 1",
            "2026-01-02,{r},{n},1.0.0,2048,1,4,90,70,--a 1",
        ),
        # slow: two runs far apart (a finding); the latest run gives the figure.
        "data/rows/slow/2026-01-01-node-a.csv": _rows("slow", "2026-01-01,{r},{n},1.0.0,2048,1,,80,10,--a 1"),
        "data/rows/slow/2026-01-02-node-a.csv": _rows("slow", "2026-01-02,{r},{n},1.0.0,2048,1,,40,20,--a 1"),
        "data/rows/near/2026-01-02-node-a.csv": _rows(
            "near",
            "2026-01-02,{r},{n},1.0.0,512,1,,300,4,--a 1",
            "2026-01-02,{r},{n},1.0.0,8192,1,,200,40,--a 1",
        ),
        "data/rows/differ/2026-01-02-node-a.csv": _rows(
            "differ", "2026-01-02,{r},{n},1.0.0,2048,1,,70,30,--a 9"
        ),
        "data/rows/away/2026-01-02-node-b.csv": _rows(
            "away", "2026-01-02,{r},{n},1.0.0,2048,1,,999,1,--a 1", node="node-b"
        ),
    }
    root.mkdir(parents=True)
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    loaded = load_and_reconcile(load_config(root))
    assert loaded.recon is not None, list(loaded.problems)
    return loaded.site, loaded.recon


def _ranked(site: Site, recon: Reconciliation, **asked: object) -> list[tuple[str, float, bool]]:
    query = Query("test-gpu", **asked)  # type: ignore[arg-type]
    return [(c.figure.recipe, c.figure.value, c.exact) for c in choose(site, recon, query)]


def test_best_first_exact_before_nearest_and_only_that_hardware(
    synthetic: tuple[Site, Reconciliation],
) -> None:
    site, recon = synthetic
    assert _ranked(site, recon, prompt_tokens=2048) == [
        ("fast", 101, True),  # median of the matching run, not the differing 500
        ("differ", 70, True),
        ("slow", 40, True),  # the latest run, not the earlier 80
        ("near", 300, False),  # nearest setting, after every exact one however fast
    ]


def test_latencies_rank_lower_first(synthetic: tuple[Site, Reconciliation]) -> None:
    site, recon = synthetic
    ranked = _ranked(site, recon, metric="ttft_ms", prompt_tokens=2048)
    assert [r[:2] for r in ranked] == [("slow", 20), ("differ", 30), ("fast", 51), ("near", 4)]


def test_nearest_setting_is_the_nearest_by_ratio(synthetic: tuple[Site, Reconciliation]) -> None:
    site, recon = synthetic
    results = {c.figure.recipe: c for c in choose(site, recon, Query("test-gpu", prompt_tokens=1024))}
    assert results["near"].figure.setting.prompt_tokens == 512  # 1024→512 is nearer than 1024→8192
    assert not results["near"].exact
    results = {c.figure.recipe: c for c in choose(site, recon, Query("test-gpu", prompt_tokens=5000))}
    assert results["near"].figure.setting.prompt_tokens == 8192
    # Concurrency 8 asked: fast has it; the others' nearest is concurrency 1.
    ranked = _ranked(site, recon, prompt_tokens=2048, concurrency=8)
    assert ranked[0] == ("fast", 60, True) and all(not exact for _, _, exact in ranked[1:])


def test_open_loop_rows_answer_only_a_request_rate(synthetic: tuple[Site, Reconciliation]) -> None:
    site, recon = synthetic
    assert _ranked(site, recon, concurrency=None, request_rate=4.0) == [("fast", 90, True)]
    assert _ranked(site, recon, concurrency=None, request_rate=2.0) == [("fast", 90, False)]
    assert all(value != 90 for _, value, _ in _ranked(site, recon, prompt_tokens=2048))


def test_status_findings_and_row_location(synthetic: tuple[Site, Reconciliation]) -> None:
    site, recon = synthetic
    results = {
        c.figure.recipe: c.as_json() for c in choose(site, recon, Query("test-gpu", prompt_tokens=2048))
    }
    assert results["fast"]["status"] == "matches"
    assert results["differ"]["status"] == "differs"
    assert (
        results["fast"]["row"] == "data/rows/fast/2026-01-02-node-a.csv:2"
    )  # 100 and 102: nearest the median, first
    assert results["slow"]["row"] == "data/rows/slow/2026-01-02-node-a.csv:2"
    assert results["slow"]["date"] == "2026-01-02"
    (finding,) = results["slow"]["findings"]
    assert finding["id"].startswith("slow-decode_tok_s-test-gpu-p2048")
    assert [f["id"] for f in results["fast"]["findings"]] == [
        "fast-decode_tok_s-test-gpu-p2048-x0-c1-2026-01-03"
    ]
    assert results["near"]["findings"] == []
    ttft = {c.figure.recipe: c for c in choose(site, recon, Query("test-gpu", "ttft_ms", prompt_tokens=2048))}
    assert ttft["slow"].findings and all(
        "-ttft_ms-" in f.id for f in ttft["slow"].findings
    )  # that metric only
    assert set(results["fast"]) == {
        "recipe", "title", "metric", "value", "setting", "exact", "date", "status", "findings", "row",
    }  # fmt: skip
    assert results["fast"]["setting"] == {
        "prompt_tokens": 2048, "output_tokens": None, "context_tokens": 0, "concurrency": 1, "request_rate": None,
    }  # fmt: skip


def test_unknown_hardware_and_metric_are_usage_errors(synthetic: tuple[Site, Reconciliation]) -> None:
    site, recon = synthetic
    with pytest.raises(UsageError, match="unknown hardware 'nope'; known: other-gpu, test-gpu"):
        choose(site, recon, Query("nope"))
    with pytest.raises(UsageError, match="unknown metric"):
        choose(site, recon, Query("test-gpu", "weights_gib"))


def test_page_rankings_rank_at_each_measured_setting(synthetic: tuple[Site, Reconciliation]) -> None:
    site, recon = synthetic
    figures = hardware_figures(site, recon, "test-gpu")
    settings = figures.settings()
    assert [(s.prompt_tokens, s.concurrency, s.request_rate) for s in settings] == [
        (512, 1, None), (2048, 1, None), (8192, 1, None), (2048, 8, None), (2048, 1, 4.0),
    ]  # fmt: skip
    by = {(s, m): ranked for s, m, ranked in rankings(figures)}
    at_2048 = by[(Setting(2048, None, 0, 1, None), "decode_tok_s")]
    assert at_2048 == choose(site, recon, Query("test-gpu", prompt_tokens=2048))  # one ranking function
    open_loop = by[(Setting(2048, None, 0, 1, 4.0), "decode_tok_s")]
    assert [(c.figure.recipe, c.figure.value, c.exact) for c in open_loop] == [("fast", 90, True)]
    at_512 = by[(Setting(512, None, 0, 1, None), "ttft_ms")]
    assert [(c.figure.recipe, c.exact) for c in at_512] == [
        ("near", True), ("slow", False), ("differ", False), ("fast", False),
    ]  # fmt: skip


def test_shipped_site_ranking() -> None:
    loaded = load_and_reconcile(load_config(REPO))
    assert loaded.recon is not None
    results = choose(loaded.site, loaded.recon, Query("dgx-spark", prompt_tokens=2048))
    top = [(c.figure.recipe, c.figure.value, c.exact, c.figure.status) for c in results[:2]]
    assert top == [
        ("qwen3.6-35b-a3b-unsloth-nvfp4-fast", 106.5, True, "not_recorded"),
        ("qwen3.6-35b-a3b-nvidia-nvfp4", 42.6, True, "matches"),  # the matching 2026-07-27 run, not 76.8
    ]
    nvfp4 = results[1]
    assert nvfp4.figure.row == "data/rows/qwen3.6-35b-a3b-nvidia-nvfp4/2026-07-27-spark-01.csv:3"
    assert [f.id for f in nvfp4.findings] == [
        "qwen3.6-35b-a3b-nvidia-nvfp4-decode_tok_s-dgx-spark-p2048-x0-c1-2026-07-06"
    ]
    assert all(not c.exact for c in results[2:])  # their rows do not record the prompt length
    itl = choose(loaded.site, loaded.recon, Query("dgx-spark", "itl_ms", prompt_tokens=2048))
    assert [(c.figure.recipe, c.figure.value) for c in itl] == [
        ("qwen3.6-35b-a3b-unsloth-nvfp4-fast", 9),
        ("qwen3.6-35b-a3b-nvidia-nvfp4", 23.5),
    ]

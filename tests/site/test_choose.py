"""The chooser's ranking (builder.site.choose), on the shipped site and on a small synthetic site."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from builder.analysis.reconcile import Reconciliation
from builder.config import load_config
from builder.data.load import Site
from builder.engine.pipeline import load_and_reconcile
from builder.errors import UsageError
from builder.site.choose import Query, Ranking, Setting, choose, describe, hardware_figures, rankings
from tests.conftest import REPO

HEADER = "date,recipe,node,engine_version,prompt_tokens,concurrency,request_rate,decode_tok_s,ttft_ms,flags,source\n"


def _recipe(title: str, checkpoint: str, hardware: str = "test-gpu", flags: str = "--a 1") -> str:
    return f"""\
        ---
        title: {title}
        model: example/tiny
        checkpoint: {checkpoint}
        hardware: {hardware}
        engine: vllm
        engine_version: "1.0.0"
        flags: "{flags}"
        ---
        SYNTHETIC test recipe; no figure here was measured.
        """


def _rows(recipe: str, *lines: str, node: str = "node-a") -> str:
    return HEADER + "".join(f"{line.format(r=recipe, n=node)},synthetic\n" for line in lines)


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory: pytest.TempPathFactory) -> tuple[Site, Reconciliation]:
    """SYNTHETIC: seven recipes on test-gpu, one on other-gpu; every figure made up for the test."""
    root = tmp_path_factory.mktemp("choose") / "site"
    files = {
        "data/nodes.yaml": "node-a:\n  hardware: test-gpu\nnode-b:\n  hardware: other-gpu\n",
        "data/hardware.yaml": "test-gpu:\n  name: Test GPU\nother-gpu:\n  name: Other GPU\n",
        "content/recipes/fast.md": _recipe("Fast build", "example/fast"),
        "content/recipes/slow.md": _recipe("Slow build", "example/slow"),
        "content/recipes/near.md": _recipe("Measured elsewhere", "example/shared"),
        "content/recipes/twin.md": _recipe("Same weights, other claim", "example/shared"),
        "content/recipes/differ.md": _recipe("Only differing rows", "example/differ"),
        "content/recipes/norepo.md": _recipe("No repository id", "A tiny build (repository id not given)"),
        "content/recipes/noflags.md": _recipe("No flags recorded", "example/noflags", flags=""),
        "content/recipes/away.md": _recipe("Other hardware", "example/away", "other-gpu"),
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
        # near: never at 2,048; a faster figure at concurrency 32 that no concurrency-8 query may use.
        "data/rows/near/2026-01-02-node-a.csv": _rows(
            "near",
            "2026-01-02,{r},{n},1.0.0,512,1,,300,4,--a 1",
            "2026-01-02,{r},{n},1.0.0,8192,1,,200,40,--a 1",
            "2026-01-02,{r},{n},1.0.0,2048,32,,400,60,--a 1",
        ),
        # twin: the same checkpoint as near, a third of its single-stream figure (sources disagree).
        "data/rows/twin/2026-01-02-node-a.csv": _rows("twin", "2026-01-02,{r},{n},1.0.0,512,1,,100,8,--a 1"),
        "data/rows/differ/2026-01-02-node-a.csv": _rows(
            "differ", "2026-01-02,{r},{n},1.0.0,2048,1,,70,30,--a 9"
        ),
        # The two fastest at 2,048 cannot be run as recorded: no repository id; no flags anywhere.
        "data/rows/norepo/2026-01-02-node-a.csv": _rows(
            "norepo", "2026-01-02,{r},{n},1.0.0,2048,1,,150,3,--a 1"
        ),
        "data/rows/noflags/2026-01-02-node-a.csv": _rows(
            "noflags", "2026-01-02,{r},{n},1.0.0,2048,1,,120,6,"
        ),
        "data/rows/away/2026-01-02-node-b.csv": _rows(
            "away", "2026-01-02,{r},{n},1.0.0,2048,1,,999,1,--a 1", node="node-b"
        ),
    }
    return _loaded(root, files)


def _loaded(root: Path, files: dict[str, str]) -> tuple[Site, Reconciliation]:
    """The site of ``files`` (path → text, dedented) written under ``root``, loaded and reconciled."""
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    loaded = load_and_reconcile(load_config(root))
    assert loaded.recon is not None, list(loaded.problems)
    return loaded.site, loaded.recon


def _ranked(site: Site, recon: Reconciliation, **asked: object) -> list[tuple[str, float, bool]]:
    query = Query("test-gpu", **asked)  # type: ignore[arg-type]
    return [(c.figure.recipe, c.figure.value, c.exact) for c in choose(site, recon, query).results]


def _marks(ranking: Ranking, name: str) -> dict[str, bool]:
    """Recipe → the result's ``runnable`` or ``contested``, in ranking order."""
    return {c.figure.recipe: getattr(c, name) for c in ranking.results}


def _sorted_within_sections(ranking: Ranking, lower: bool) -> bool:
    lists = [ranking.exact, *(choices for _, choices in ranking.sections())]
    values = [[c.figure.value for c in choices] for choices in lists]
    return all(v == sorted(v, reverse=not lower) for v in values)


def test_exact_first_best_first_then_a_sorted_section_per_other_setting(
    synthetic: tuple[Site, Reconciliation],
) -> None:
    site, recon = synthetic
    ranking = choose(site, recon, Query("test-gpu", prompt_tokens=2048))
    assert [(c.figure.recipe, c.figure.value, c.exact) for c in ranking.results] == [
        ("norepo", 150, True),
        ("noflags", 120, True),
        ("fast", 101, True),  # median of the matching run, not the differing 500
        ("differ", 70, True),
        ("slow", 40, True),  # the latest run, not the earlier 80
        ("near", 300, False),  # another prompt length: after every exact one however fast
        ("twin", 100, False),
    ]
    ((setting, section),) = ranking.sections()
    assert setting == Setting(512, None, 0, 1, None) and [c.figure.recipe for c in section] == [
        "near",
        "twin",
    ]
    assert _sorted_within_sections(ranking, lower=False)
    text = describe(site, ranking)
    assert "Measured at another setting: 512-token prompt, context 0, concurrency 1:" in text.splitlines()


def test_latencies_rank_lower_first_in_every_list(synthetic: tuple[Site, Reconciliation]) -> None:
    site, recon = synthetic
    ranking = choose(site, recon, Query("test-gpu", "ttft_ms", prompt_tokens=2048))
    assert [(c.figure.recipe, c.figure.value) for c in ranking.results] == [
        ("norepo", 3), ("noflags", 6), ("slow", 20), ("differ", 30), ("fast", 51), ("near", 4), ("twin", 8),
    ]  # fmt: skip
    assert _sorted_within_sections(ranking, lower=True)


def test_never_across_concurrency(synthetic: tuple[Site, Reconciliation]) -> None:
    site, recon = synthetic
    # Concurrency 8: only fast was measured there; near's faster concurrency-32 figure and every
    # single-stream figure stay out.
    ranking = choose(site, recon, Query("test-gpu", prompt_tokens=2048, concurrency=8))
    assert [(c.figure.recipe, c.figure.value, c.exact) for c in ranking.results] == [("fast", 60, True)]
    assert choose(site, recon, Query("test-gpu", concurrency=8)).results == ranking.results  # prompt free
    assert _ranked(site, recon, concurrency=32) == [("near", 400, True)]
    for ranking in (choose(site, recon, Query("test-gpu", prompt_tokens=p, concurrency=c)) for p in (512, 2048) for c in (1, 8, 32)):  # fmt: skip
        assert {c.figure.setting.concurrency for c in ranking.results} <= {ranking.query.concurrency}


def test_nothing_at_the_asked_load_says_so_and_lists_the_loads(
    synthetic: tuple[Site, Reconciliation],
) -> None:
    site, recon = synthetic
    ranking = choose(site, recon, Query("test-gpu", prompt_tokens=2048, concurrency=16))
    assert ranking.results == [] and ranking.answer is None and ranking.setting is None
    assert ranking.loads == [(1, None), (8, None), (32, None), (1, 4.0)]
    document = ranking.as_json()
    assert document["answer"] is None and document["results"] == []
    assert document["loads"][:3] == [{"concurrency": c, "request_rate": None} for c in (1, 8, 32)]
    lines = describe(site, ranking).splitlines()
    assert lines[0] == "Use this: nothing measured decode at concurrency 16 on Test GPU"
    assert lines[-1] == "  loads measured: concurrency 1, concurrency 8, concurrency 32, 4 requests/s (cap 1)"


def test_the_answer_is_the_fastest_result_runnable_as_recorded(
    synthetic: tuple[Site, Reconciliation],
) -> None:
    site, recon = synthetic
    ranking = choose(site, recon, Query("test-gpu", prompt_tokens=2048))
    assert _marks(ranking, "runnable") == {
        "norepo": False, "noflags": False, "fast": True, "differ": True, "slow": True, "near": True, "twin": True,
    }  # fmt: skip
    assert ranking.answer is not None and ranking.answer.figure.recipe == "fast"
    assert (
        ranking.answer.figure.command
        == "# vllm 1.0.0, build not recorded\nvllm serve example/fast \\\n  --a 1"
    )
    differ = next(c for c in ranking.results if c.figure.recipe == "differ")
    assert differ.figure.command is not None and "--a 9" in differ.figure.command  # as that run served
    document = ranking.as_json()
    assert document["answer"] == document["results"][2]
    assert [r["runnable"] for r in document["results"]][:2] == [False, False]
    assert document["results"][0]["command"] is None
    lines = describe(site, ranking).splitlines()
    assert lines[0] == "Use this: Fast build (fast), 101 tok/s per stream, contested"
    assert lines[1:3] == ["  # vllm 1.0.0, build not recorded", "  vllm serve example/fast \\"]
    assert any(line.endswith("No repository id (norepo)  [command not recorded]") for line in lines)


def test_contested_by_an_open_finding_or_disagreeing_sources(synthetic: tuple[Site, Reconciliation]) -> None:
    site, recon = synthetic
    ranking = choose(site, recon, Query("test-gpu", prompt_tokens=2048))
    contested = _marks(ranking, "contested")
    # slow and fast have an open finding at 2,048; near and twin serve one checkpoint and disagree.
    assert contested == {
        "norepo": False, "noflags": False, "fast": True, "differ": False, "slow": True, "near": True, "twin": True,
    }  # fmt: skip
    assert [r["contested"] for r in ranking.as_json()["results"]] == list(contested.values())
    # A finding elsewhere does not contest a figure at another setting (fast at concurrency 8).
    (at_8,) = choose(site, recon, Query("test-gpu", prompt_tokens=2048, concurrency=8)).results
    assert not at_8.contested and at_8.findings  # still listed
    twin_text = describe(site, ranking)
    assert "sources about the same checkpoint disagree (see the model's comparison page)" in twin_text


def test_disputed_claims_are_the_comparison_pages_on_whatever_hardware(tmp_path: Path) -> None:
    """SYNTHETIC. The chooser marks a claim as the model's comparison page and the recipe cards do:
    the claims of all the model's recipes, wherever measured. ``here`` and ``there`` agree (100 and
    100 tok/s, on two hardware) though ``there``'s older row on test-gpu reads 30; ``lone`` on
    test-gpu disagrees with ``far``, measured on other-gpu only."""
    from builder.site.comparisons import disputes_of
    from builder.site.views import rows_by_recipe

    tiny = _recipe("Here", "example/same").replace("model: example/tiny", "model: example/agree")
    files = {
        "data/nodes.yaml": "node-a:\n  hardware: test-gpu\nnode-b:\n  hardware: other-gpu\n",
        "data/hardware.yaml": "test-gpu:\n  name: Test GPU\nother-gpu:\n  name: Other GPU\n",
        "content/recipes/here.md": tiny,
        "content/recipes/there.md": tiny.replace("Here", "There").replace("test-gpu", "other-gpu"),
        "content/recipes/lone.md": _recipe("Lone", "example/apart"),
        "content/recipes/far.md": _recipe("Far", "example/apart", "other-gpu"),
        "data/rows/here/2026-01-03-node-a.csv": _rows("here", "2026-01-03,{r},{n},1.0.0,2048,1,,100,9,--a 1"),
        "data/rows/there/2026-01-02-node-a.csv": _rows(
            "there", "2026-01-02,{r},{n},1.0.0,2048,1,,30,9,--a 1"
        ),
        "data/rows/there/2026-01-03-node-b.csv": _rows(
            "there", "2026-01-03,{r},{n},1.0.0,2048,1,,100,9,--a 1", node="node-b"
        ),
        "data/rows/lone/2026-01-03-node-a.csv": _rows("lone", "2026-01-03,{r},{n},1.0.0,2048,1,,100,9,--a 1"),
        "data/rows/far/2026-01-03-node-b.csv": _rows(
            "far", "2026-01-03,{r},{n},1.0.0,2048,1,,20,9,--a 1", node="node-b"
        ),
    }
    site, recon = _loaded(tmp_path, files)
    rows = rows_by_recipe(site)
    assert disputes_of(site, rows, recon, "example/agree") == {}
    assert set(disputes_of(site, rows, recon, "example/tiny")) == {"lone", "far"}
    contested = _marks(choose(site, recon, Query("test-gpu", prompt_tokens=2048)), "contested")
    assert contested == {"here": False, "lone": True, "there": False}
    assert _marks(choose(site, recon, Query("other-gpu", prompt_tokens=2048)), "contested") == {
        "there": False, "far": True,
    }  # fmt: skip


def test_a_free_prompt_is_settled_to_the_most_measured(synthetic: tuple[Site, Reconciliation]) -> None:
    site, recon = synthetic
    ranking = choose(site, recon, Query("test-gpu"))
    assert ranking.setting == Setting(2048, None, 0, 1, None)
    assert [c.figure.recipe for c in ranking.exact] == ["norepo", "noflags", "fast", "differ", "slow"]


def test_open_loop_rows_answer_only_a_request_rate(synthetic: tuple[Site, Reconciliation]) -> None:
    site, recon = synthetic
    assert _ranked(site, recon, concurrency=None, request_rate=4.0) == [("fast", 90, True)]
    assert _ranked(site, recon, concurrency=None, request_rate=2.0) == []  # never another rate
    assert all(value != 90 for _, value, _ in _ranked(site, recon, prompt_tokens=2048))


def test_status_findings_and_row_location(synthetic: tuple[Site, Reconciliation]) -> None:
    site, recon = synthetic
    ranking = choose(site, recon, Query("test-gpu", prompt_tokens=2048))
    results = {c.figure.recipe: c.as_json() for c in ranking.results}
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
    ttft = {
        c.figure.recipe: c
        for c in choose(site, recon, Query("test-gpu", "ttft_ms", prompt_tokens=2048)).results
    }
    assert ttft["slow"].findings and all(
        "-ttft_ms-" in f.id for f in ttft["slow"].findings
    )  # that metric only
    assert set(results["fast"]) == {
        "recipe", "title", "metric", "value", "setting", "exact", "date", "status", "runnable", "command",
        "contested", "findings", "row",
    }  # fmt: skip
    assert results["fast"]["setting"] == {
        "prompt_tokens": 2048, "output_tokens": None, "context_tokens": 0, "concurrency": 1, "request_rate": None,
    }  # fmt: skip
    assert list(ranking.as_json()) == ["query", "setting", "answer", "results", "loads"]


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
        (512, 1, None), (2048, 1, None), (8192, 1, None), (2048, 8, None), (2048, 32, None), (2048, 1, 4.0),
    ]  # fmt: skip
    by = {(s, m): ranked for s, m, ranked in rankings(figures)}
    at_2048 = by[(Setting(2048, None, 0, 1, None), "decode_tok_s")]
    assert at_2048 == choose(site, recon, Query("test-gpu", prompt_tokens=2048))  # one ranking function
    open_loop = by[(Setting(2048, None, 0, 1, 4.0), "decode_tok_s")]
    assert [(c.figure.recipe, c.figure.value, c.exact) for c in open_loop.results] == [("fast", 90, True)]
    at_512 = by[(Setting(512, None, 0, 1, None), "ttft_ms")]
    assert [(c.figure.recipe, c.exact) for c in at_512.results] == [
        ("near", True), ("twin", True), ("norepo", False), ("noflags", False), ("slow", False), ("differ", False),
        ("fast", False),
    ]  # fmt: skip
    for ranking in by.values():
        assert _sorted_within_sections(ranking, lower=ranking.query.metric == "ttft_ms")
        assert {c.figure.setting.concurrency for c in ranking.results} <= {ranking.query.concurrency}


@pytest.fixture(scope="module")
def shipped() -> tuple[Site, Reconciliation]:
    loaded = load_and_reconcile(load_config(REPO))
    assert loaded.recon is not None
    return loaded.site, loaded.recon


def test_shipped_site_ranking(shipped: tuple[Site, Reconciliation]) -> None:
    site, recon = shipped
    ranking = choose(site, recon, Query("dgx-spark", prompt_tokens=2048))
    top = [
        (c.figure.recipe, c.figure.value, c.exact, c.figure.status, c.runnable) for c in ranking.results[:2]
    ]
    assert top == [
        (
            "qwen3.6-35b-a3b-unsloth-nvfp4-fast",
            106.5,
            True,
            "not_recorded",
            False,
        ),  # no repository id, no flags
        (
            "qwen3.6-35b-a3b-nvidia-nvfp4",
            42.6,
            True,
            "matches",
            True,
        ),  # the matching 2026-07-27 run, not 76.8
    ]
    nvfp4 = ranking.results[1]
    assert ranking.answer == nvfp4 and nvfp4.contested
    assert nvfp4.figure.row == "data/rows/qwen3.6-35b-a3b-nvidia-nvfp4/2026-07-27-spark-01.csv:3"
    assert [f.id for f in nvfp4.findings] == [
        "qwen3.6-35b-a3b-nvidia-nvfp4-decode_tok_s-dgx-spark-p2048-x0-c1-2026-07-06"
    ]
    assert all(not c.exact for c in ranking.results[2:])  # their rows do not record the prompt length
    assert _sorted_within_sections(ranking, lower=False)
    mtp3 = next(c for c in ranking.results if c.figure.recipe == "qwen3.6-35b-a3b-nvidia-nvfp4-mtp3")
    assert mtp3.contested and mtp3.disputed  # its comparison page: "Sources disagree"
    itl = choose(site, recon, Query("dgx-spark", "itl_ms", prompt_tokens=2048))
    assert [(c.figure.recipe, c.figure.value) for c in itl.results] == [
        ("qwen3.6-35b-a3b-unsloth-nvfp4-fast", 9),
        ("qwen3.6-35b-a3b-nvidia-nvfp4", 23.5),
    ]


def test_shipped_site_concurrency_8_never_borrows_concurrency_32(
    shipped: tuple[Site, Reconciliation],
) -> None:
    site, recon = shipped
    for metric in ("aggregate_tok_s", "decode_tok_s"):
        ranking = choose(site, recon, Query("dgx-spark", metric, concurrency=8))
        assert ranking.results and all(c.figure.setting.concurrency == 8 for c in ranking.results)
        assert ranking.answer is not None and ranking.answer.runnable
    ranking = choose(site, recon, Query("dgx-spark", "aggregate_tok_s", concurrency=8))
    assert 411.6 not in [c.figure.value for c in ranking.results]  # measured at concurrency 32

"""``python -m builder choose``: its JSON and text, and its exit codes."""

from __future__ import annotations

import json

import pytest

from builder.cli import main
from tests.conftest import REPO, SITES, MakeSite

NVFP4 = "qwen3.6-35b-a3b-nvidia-nvfp4"


def test_json_shape_on_the_shipped_site(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["choose", "--root", str(REPO), "--hardware", "dgx-spark", "--prompt-tokens", "2048"]
    assert main([*args, "--format", "json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert list(document) == ["query", "setting", "answer", "results", "loads"]
    assert document["query"] == {
        "hardware": "dgx-spark",
        "metric": "decode_tok_s",
        "prompt_tokens": 2048,
        "output_tokens": None,
        "context_tokens": 0,
        "concurrency": 1,
        "request_rate": None,
    }
    results = document["results"]
    assert [r["recipe"] for r in results][:2] == ["qwen3.6-35b-a3b-unsloth-nvfp4-fast", NVFP4]
    second = results[1]
    assert second == {
        "recipe": NVFP4,
        "title": "Qwen3.6 35B-A3B — NVIDIA NVFP4",
        "metric": "decode_tok_s",
        "value": 42.6,
        "setting": {
            "prompt_tokens": 2048,
            "output_tokens": None,
            "context_tokens": 0,
            "concurrency": 1,
            "request_rate": None,
        },
        "exact": True,
        "date": "2026-07-27",
        "status": "matches",
        "runnable": True,
        "command": "# vllm 0.24.0, build not recorded\nvllm serve nvidia/Qwen3.6-35B-A3B-NVFP4 \\\n  --max-model-len 262144",
        "contested": True,
        "findings": [
            {
                "id": f"{NVFP4}-decode_tok_s-dgx-spark-p2048-x0-c1-2026-07-06",
                "summary": second["findings"][0]["summary"],
            }
        ],
        "row": f"data/rows/{NVFP4}/2026-07-27-spark-01.csv:3",
    }
    assert second["findings"][0]["summary"].startswith("76.8 tok/s on 2026-07-06 did not reproduce")
    assert [r["exact"] for r in results] == [True, True, False, False]
    assert [r["runnable"] for r in results][:2] == [False, True]
    assert document["answer"] == second  # the fastest runnable result, not the faster #1


def test_latency_ranking_and_open_loop_query(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["choose", "--root", str(REPO), "--hardware", "dgx-spark", "--format", "json"]
    assert main([*args, "--metric", "itl_ms", "--prompt-tokens", "2048"]) == 0
    values = [r["value"] for r in json.loads(capsys.readouterr().out)["results"]]
    assert values == [9, 23.5]
    assert main([*args, "--request-rate", "inf"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["query"]["request_rate"] == "inf" and document["query"]["concurrency"] is None
    assert document["results"] == [] and document["answer"] is None  # the shipped rows are all closed-loop
    assert document["loads"] == [{"concurrency": c, "request_rate": None} for c in (1, 8)]  # decode's loads


def test_text_output(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["choose", "--root", str(REPO), "--hardware", "dgx-spark", "--prompt-tokens", "2048"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[:4] == [
        "Use this: Qwen3.6 35B-A3B — NVIDIA NVFP4 (qwen3.6-35b-a3b-nvidia-nvfp4), 42.6 tok/s per stream, contested",
        "  # vllm 0.24.0, build not recorded",
        "  vllm serve nvidia/Qwen3.6-35B-A3B-NVFP4 \\",
        "    --max-model-len 262144",
    ]
    assert lines[4] == (
        "Decode (tok/s per stream, higher is better) on NVIDIA DGX Spark, 2,048-token prompt, "
        "output length not recorded, context 0, concurrency 1:"
    )
    assert lines[5] == (
        "  1. 106.5 tok/s per stream  Qwen3.6 35B-A3B — Unsloth NVFP4-Fast (qwen3.6-35b-a3b-unsloth-nvfp4-fast)"
        "  [command not recorded]"
    )
    assert lines[7].endswith("(qwen3.6-35b-a3b-nvidia-nvfp4)  [CONTESTED]")
    assert lines[8] == f"     2026-07-27; matches; row data/rows/{NVFP4}/2026-07-27-spark-01.csv:3"
    assert lines[9].startswith("     open finding: 76.8 tok/s on 2026-07-06 did not reproduce")
    assert any(line.startswith("Measured at another setting: prompt not recorded") for line in lines)


def test_nothing_at_the_asked_concurrency(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["choose", "--root", str(REPO), "--hardware", "dgx-spark", "--concurrency", "16"]
    assert main(args) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "Use this: nothing measured decode at concurrency 16 on NVIDIA DGX Spark"
    assert lines[-1] == "  loads measured: concurrency 1, concurrency 8"


def test_unknown_hardware_exits_2_with_the_known_ones(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["choose", "--root", str(SITES / "minimal"), "--hardware", "h100"]) == 2
    assert capsys.readouterr().err == "error: unknown hardware 'h100'; known: test-gpu\n"


@pytest.mark.parametrize(
    "extra",
    [
        ["--concurrency", "2", "--request-rate", "3"],
        ["--metric", "weights_gib"],
        ["--concurrency", "0"],
        ["--request-rate", "nan"],
        ["--format", "yaml"],
    ],
)
def test_usage_errors_exit_2(extra: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["choose", "--root", str(SITES / "minimal"), "--hardware", "test-gpu", *extra])
    assert exc.value.code == 2
    capsys.readouterr()


def test_invalid_site_exits_1_with_the_problems(
    make_site: MakeSite, capsys: pytest.CaptureFixture[str]
) -> None:
    root = make_site(
        {"data/rows/tiny/bad.csv": "date,recipe,node,engine_version,prompt_tokens,concurrency\nx\n"}
    )
    assert main(["choose", "--root", str(root), "--hardware", "test-gpu"]) == 1
    assert "data/rows/tiny/bad.csv:" in capsys.readouterr().err

"""``import`` without ``--from``: each reader claims its own output, and only its own.

Inline texts are SYNTHETIC (typed for the test, in each tool's layout); fixtures are described in
tests/fixtures/import/README.md.
"""

from __future__ import annotations

import csv
import io
import json
import re
import sys
from pathlib import Path

import pytest
import yaml

from builder.cli import main
from builder.errors import Problems
from builder.importers import FORMATS, IMPORTERS, detect
from tests.conftest import MakeSite
from tests.importers.test_edge_cases import SUMMARY

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "import"

# a fixture's name starts with the tool that wrote it (longest prefix first: llama-benchy before llama-bench)
PREFIXES: tuple[tuple[str, str], ...] = (
    ("llama-benchy", "llama-benchy"),
    ("llama-bench", "llama-bench"),
    ("vllm", "vllm-bench"),
    ("sglang", "sglang"),
    ("guidellm", "guidellm"),
    ("aiperf", "aiperf"),
    ("genai-perf", "aiperf"),
)
NOT_BENCHMARKS = ("not-a-benchmark",)


def _detect(text: str | bytes, name: str = "paste") -> tuple[str | None, list[str]]:
    problems = Problems()
    data = text.encode() if isinstance(text, str) else text
    found = detect(name, data, problems)
    return found, [p.format() for p in problems.errors]


def _expected(path: Path) -> str | None:
    name = path.name
    if name.startswith(NOT_BENCHMARKS):
        return None
    for prefix, fmt in PREFIXES:
        if name.startswith(prefix):
            return fmt
    raise AssertionError(f"{path}: name a fixture after its tool ({', '.join(p for p, _ in PREFIXES)}…)")


FIXTURE_FILES = sorted(p for p in FIXTURES.rglob("*") if p.is_file() and p.name != "README.md")


@pytest.mark.parametrize("path", FIXTURE_FILES, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_every_fixture_is_claimed_by_its_reader_alone(path: Path) -> None:
    expected = _expected(path)
    found, errors = _detect(path.read_bytes(), path.name)
    if expected is None:
        assert found is None and errors and "not output the importer knows" in errors[0]
    else:
        assert (found, errors) == (expected, [])


def test_fixtures_cover_every_reader() -> None:
    assert {_expected(p) for p in FIXTURE_FILES} - {None} <= set(FORMATS)


_SGLANG_RESULT = {
    "backend": "sglang",
    "completed": 200,
    "total_input_tokens": 204800,
    "total_output_tokens": 25600,
    "total_output_tokens_retokenized": 25590,
    "output_throughput": 1000.5,
    "median_e2e_latency_ms": 900.25,
    "median_ttft_ms": 80.5,
}
_VLLM_RESULT = {
    "date": "20260103-140107",
    "model_id": "m",
    "completed": 64,
    "total_input_tokens": 131109,
    "total_output_tokens": 16384,
    "output_throughput": 50.5,
    "median_e2el_ms": 1000.0,
}
_GUIDELLM = {
    "metadata": {"guidellm_version": "0.8.1"},
    "benchmarks": [{"metrics": {"time_to_first_token_ms": {"successful": {"median": 50.0}}}}],
}
_AIPERF = {"time_to_first_token": {"unit": "ms", "p50": 50.5}, "input_config": {"concurrency": 1}}
_LLAMA_BENCH_TEST = {"build_commit": "8cf427ff", "n_prompt": 512, "n_gen": 0, "avg_ts": 4918.36}

SYNTHETIC: dict[str, tuple[str, str]] = {
    "vllm-bench JSON": (json.dumps(_VLLM_RESULT), "vllm-bench"),
    "vllm-bench sweep (a list of results)": (json.dumps([_VLLM_RESULT, _VLLM_RESULT]), "vllm-bench"),
    "vllm-bench appended results": (json.dumps(_VLLM_RESULT) + "\n" + json.dumps(_VLLM_RESULT), "vllm-bench"),
    "vllm-bench summary under its command": ("$ vllm bench serve --model m\n" + SUMMARY, "vllm-bench"),
    "vllm-bench summary quoted in an issue": (
        "".join(f"> {line}\n" for line in SUMMARY.splitlines()),
        "vllm-bench",
    ),
    "sglang JSON Lines": (json.dumps(_SGLANG_RESULT) + "\n" + json.dumps(_SGLANG_RESULT), "sglang"),
    "sglang JSON Lines of 2024": (json.dumps({"total_input": 100, "median_ttft": 5.0}), "sglang"),
    "sglang summary with its Backend line": (
        SUMMARY.replace("Successful", "Backend:                                 sglang\nSuccessful"),
        "sglang",
    ),
    "sglang summary under its command": (
        "python -m sglang.bench_serving --backend sglang\n" + SUMMARY,
        "sglang",
    ),
    "guidellm JSON": (json.dumps(_GUIDELLM), "guidellm"),
    "guidellm YAML": (yaml.safe_dump(_GUIDELLM), "guidellm"),
    "guidellm CSV": (
        "Run Info,Run Info,Benchmark\nRun ID,Run Index,Type\n,,\nabc,0,generative\n",
        "guidellm",
    ),
    "aiperf JSON": (json.dumps(_AIPERF), "aiperf"),
    "aiperf CSV": ("Metric,avg,min,max,p99,p50\nTime To First Token (ms),1.0,1.0,1.0,1.0,1.0\n", "aiperf"),
    "llama-benchy CSV": ("model,test_name,t_s_mean,t_s_std\nm,pp2048,2001.5,12.25\n", "llama-benchy"),
    "llama-bench JSONL with stderr lines": (
        "ggml_cuda_init: found 1 CUDA devices\n"
        + json.dumps(_LLAMA_BENCH_TEST)
        + "\nllama_perf: done\n"
        + json.dumps({**_LLAMA_BENCH_TEST, "n_prompt": 0, "n_gen": 128}),
        "llama-bench",
    ),
    "llama-bench table with a progress line": (
        "| model | size | params | backend | ngl | test | t/s |\n| --- | ---: | ---: | --- | --: | ---: | ---: |\n"
        "llama-bench: benchmark 1/2: starting\n| m | 1 GiB | 1 B | CUDA | 99 | pp512 | 4918.36 ± 132.23 |\n",
        "llama-bench",
    ),
}


@pytest.mark.parametrize("case", list(SYNTHETIC))
def test_each_form_of_each_tool_is_claimed_by_its_reader_alone(case: str) -> None:
    text, fmt = SYNTHETIC[case]
    assert _detect(text) == (fmt, [])


def test_two_claims_are_an_error_naming_both() -> None:
    table = SYNTHETIC["llama-bench table with a progress line"][0]
    found, errors = _detect(SUMMARY + "\n" + table, "both.md")
    assert found is None
    assert errors == [
        "both.md: ambiguous: read as vllm-bench (a printed vllm bench serve summary) and llama-bench "
        "(a llama-bench markdown table); pass --from vllm-bench or --from llama-bench"
    ]


@pytest.mark.parametrize(
    "text",
    ["date,recipe\n2026-01-01,tiny\n", '{"benchmarks": []}', "just some words\n", "\ufeff[1, 2]"],
)
def test_unknown_text_is_refused_listing_every_format(text: str) -> None:
    found, (error,) = _detect(text, "x.txt")
    assert found is None
    assert error.startswith("x.txt: not output the importer knows: ")
    for importer in IMPORTERS:
        assert f"{importer.name} ({importer.reads})" in error
    assert error.endswith("pass --from FORMAT to hear what its reader misses")


def test_empty_text_is_refused_as_empty() -> None:
    assert _detect(" \n\t\n", "-") == (None, ["-: empty: nothing to import"])


# --- the command -----------------------------------------------------------------------------------

META = ["--recipe", "tiny", "--node", "node-a", "--engine-version", "1.0.0", "--out", "-"]


def _import(root: Path, *args: str) -> int:
    return main(["import", "--root", str(root), *args])


def test_import_without_from_writes_what_import_with_from_writes(
    make_site: MakeSite, capsys: pytest.CaptureFixture[str]
) -> None:
    root = make_site()
    files = [str(FIXTURES / f"vllm-c{c}.json") for c in (1, 8)]
    assert _import(root, "--from", "vllm-bench", *files, *META) == 0
    told = capsys.readouterr().out
    assert _import(root, *files, *META) == 0
    assert capsys.readouterr().out == told and told.count("\n") == 3


def test_import_dash_reads_a_paste_from_standard_input(
    make_site: MakeSite, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = make_site()
    paste = (FIXTURES / "vllm-printed-pr25135.md").read_bytes()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(paste)))
    assert _import(root, "-", *META, "--date", "2026-01-05", "--request-rate", "inf") == 0
    out, err = capsys.readouterr()
    (row,) = csv.DictReader(io.StringIO(out))
    assert (row["concurrency"], row["aggregate_tok_s"], row["date"]) == ("64", "793.27", "2026-01-05")
    assert err == ""


def test_import_of_an_unknown_paste_says_which_formats_it_knows(
    make_site: MakeSite, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = make_site()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"hello\n")))
    assert _import(root, "-", *META) == 1
    err = capsys.readouterr().err
    assert err.startswith("<stdin>: not output the importer knows: vllm-bench (")
    assert "nothing was written" in err


# --- one registry ----------------------------------------------------------------------------------


def test_the_docs_describe_every_reader_in_the_registry() -> None:
    contributing = (REPO / "CONTRIBUTING.md").read_text(encoding="utf-8")
    documented = re.findall(r"^\*\*`--from ([a-z-]+)`\*\*", contributing, re.MULTILINE)
    assert sorted(documented) == sorted(FORMATS)


def test_reproduce_names_the_tools_of_the_registry() -> None:
    from builder.site.reproduce import IMPORT_FORMATS

    assert IMPORT_FORMATS == {tool: importer.name for importer in IMPORTERS for tool in importer.tools}

"""The cases of issue 33's field tests: each imports right or is refused for its true reason.

Inputs are the verbatim public outputs of tests/fixtures/import (origins in its README) where one was
found; the rest are SYNTHETIC (typed for the test after the tool's source, never measured) and say so.
"""

from __future__ import annotations

import json
from pathlib import Path

from builder.errors import Problems
from builder.importers import Measurement, llama_bench, load_cells, sglang, vllm_bench

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "import"


def _one(reader, name: str, text: str | bytes) -> tuple[list[Measurement], Problems]:  # type: ignore[no-untyped-def]
    problems = Problems()
    data = text.encode() if isinstance(text, str) else text
    return reader(name, data, problems), problems


# --- llama-bench ---------------------------------------------------------------------------------


def test_llama_bench_setting_columns_become_the_rows_flags() -> None:
    items, problems = _one(llama_bench.read, "t.md", (FIXTURES / "llama-bench-sm-pr19378.md").read_bytes())
    assert not problems.errors and not problems.warnings
    assert [(i.cells["prompt_tokens"], i.cells["prefill_tok_s"]) for i in items] == [
        ("512", "91.98"),
        ("2048", "83.61"),
    ]
    assert {i.meta["flags"] for i in items} == {"-ngl 99 -sm tensor -fa 1"}


# SYNTHETIC: two tests that differ only in split mode (the table layout of llama-bench -sm layer,row)
SPLIT_MODES = """| model | size | params | backend | ngl | sm | fa | test | t/s |
| --- | ---: | ---: | --- | --: | ---: | -: | ---: | ---: |
| llama 8B Q4_0 | 4.33 GiB | 8.03 B | CUDA | 99 | layer | 1 | tg128 | 35.40 ± 0.10 |
| llama 8B Q4_0 | 4.33 GiB | 8.03 B | CUDA | 99 | row | 1 | tg128 | 11.70 ± 0.05 |
"""


def test_llama_bench_runs_differing_in_split_mode_are_not_one_setting() -> None:
    items, problems = _one(llama_bench.read, "t.md", SPLIT_MODES)
    assert not problems.errors
    assert [(i.cells["decode_tok_s"], i.meta["flags"]) for i in items] == [
        ("35.40", "-ngl 99 -sm layer -fa 1"),
        ("11.70", "-ngl 99 -sm row -fa 1"),
    ]


def test_llama_bench_json_settings_become_flags_and_bools_are_0_or_1() -> None:
    # SYNTHETIC: the keys llama-bench -o json writes, trimmed to a few settings
    entry = {
        "build_commit": "8cf427ff",
        "build_number": 5163,
        "gpu_info": "NVIDIA GeForce RTX 4080",
        "model_type": "qwen2 7B Q4_K - Medium",
        "n_batch": 2048,
        "split_mode": "row",
        "flash_attn": True,
        "tensor_buft_overrides": "exps=CPU",
        "n_prompt": 0,
        "n_gen": 128,
        "n_depth": 0,
        "avg_ts": 35.4,
        "stddev_ts": 0.1,
    }
    (item,), problems = _one(llama_bench.read, "b.json", json.dumps([entry]))
    assert not problems.errors
    assert item.meta["flags"] == "-b 2048 -sm row -fa 1 -ot exps=CPU"


def test_llama_bench_progress_lines_inside_the_table_are_skipped() -> None:
    # SYNTHETIC: --progress writes "llama-bench: benchmark i/n: ..." to stderr, between the table's rows
    table = """| model | size | params | backend | ngl | test | t/s |
| --- | ---: | ---: | --- | --: | ---: | ---: |
llama-bench: benchmark 1/2: starting
llama-bench: benchmark 1/2: warmup prompt run
llama-bench: benchmark 1/2: prompt run 1/5
| qwen2 7B Q4_K - Medium | 4.36 GiB | 7.62 B | CUDA | 99 | pp512 | 7340.20 ± 23.45 |
llama-bench: benchmark 2/2: starting
llama-bench: benchmark 2/2: generation run 1/5
| qwen2 7B Q4_K - Medium | 4.36 GiB | 7.62 B | CUDA | 99 | tg128 | 120.60 ± 0.59 |
"""
    (item,), problems = _one(llama_bench.read, "t.md", table)
    assert not problems.errors
    assert (item.cells["prefill_tok_s"], item.cells["decode_tok_s"]) == ("7340.20", "120.60")
    assert item.cells["source"] == "llama-bench table in t.md, line 6 and line 9"


def test_llama_bench_jsonl_with_stderr_lines_mixed_in() -> None:
    # SYNTHETIC: the README's two results as -o jsonl, with the device lines llama-bench logs around them
    raw = json.loads((FIXTURES / "llama-bench.json").read_text())
    lines = [
        "ggml_cuda_init: found 1 CUDA devices:",
        "  Device 0: NVIDIA GeForce RTX 4080, compute capability 8.9, VMM: yes",
        json.dumps(raw[0]),
        "llama-bench: benchmark 2/2: starting",
        json.dumps(raw[1]),
    ]
    (item,), problems = _one(llama_bench.read, "b.jsonl", "\n".join(lines) + "\n")
    assert not problems.errors
    assert (item.cells["prefill_tok_s"], item.cells["decode_tok_s"]) == ("7100.002165", "118.881588")
    assert item.cells["source"] == "llama-bench JSON in b.jsonl, line 3 and line 5"


def test_llama_bench_build_line_in_backticks() -> None:
    # SYNTHETIC: the README's table pasted with its build line as inline code
    text = (FIXTURES / "llama-bench-readme.md").read_text() + "\n`build: 8cf427ff (5163)`\n"
    items, problems = _one(llama_bench.read, "t.md", text)
    assert not problems.errors
    assert {(i.meta["engine_version"], i.meta["engine_build"]) for i in items} == {("b5163", "8cf427ff")}
    assert {i.cells["harness"] for i in items} == {"llama-bench b5163"}


# --- printed vLLM and SGLang summaries -----------------------------------------------------------

SUMMARY = """============ Serving Benchmark Result ============
Successful requests:                     20
Failed requests:                         0
Benchmark duration (s):                  10.00
Total input tokens:                      2560
Total generated tokens:                  1280
Output token throughput (tok/s):         128.00
---------------Time to First Token----------------
Mean TTFT (ms):                          63.00
Median TTFT (ms):                        62.80
P99 TTFT (ms):                           64.00
-----Time per Output Token (excl. 1st token)------
Mean TPOT (ms):                          25.10
Median TPOT (ms):                        25.00
P99 TPOT (ms):                           25.40
==================================================
"""


def test_warning_lines_are_not_the_command_line() -> None:
    # SYNTHETIC: the command, then log lines that name the benchmark module, then the summary
    text = (
        "$ vllm bench serve --model m --dataset-name random --max-concurrency 4 --num-prompts 20\n"
        "WARNING: vllm.benchmarks.serve: bench serve is running without a tokenizer cache\n"
        "/usr/lib/python3/site-packages/sglang/bench_serving.py:12: FutureWarning: `torch.x` is deprecated\n"
        "FutureWarning: bench_serving uses a deprecated API\n"
        "INFO 05-01 10:00:00 [serve.py:1] Starting bench serve\n" + SUMMARY
    )
    for reader in (vllm_bench.read, sglang.read):
        (item,), problems = _one(reader, "s.txt", text)
        assert not problems.errors
        assert load_cells(item.load) == {"concurrency": "4"}
        notes = item.cells["notes"]
        assert "command: $ vllm bench serve --model m" in notes
        assert "WARNING" not in notes and "FutureWarning" not in notes and "INFO" not in notes


def test_command_without_rate_or_cap_runs_at_vllms_defaults() -> None:
    # SYNTHETIC: the command shows neither --request-rate nor --max-concurrency: vLLM ran at rate inf, no cap
    text = "vllm bench serve \\\n  --model m \\\n  --num-prompts 20\n\n" + SUMMARY
    (item,), problems = _one(vllm_bench.read, "s.txt", text)
    assert not problems.errors and item.unknown == ()
    assert item.load == {"request_rate": "inf", "concurrency": "none"}
    assert "request rate inf (from the default of the command line on line 1)" in item.cells["notes"]
    # without a command line nothing shows the defaults applied: the load stays for an option to give
    (bare,), _ = _one(vllm_bench.read, "s.txt", SUMMARY)
    assert bare.unknown == ("request_rate", "concurrency")


def _trimmed(command: str) -> str:
    kept = [line for line in SUMMARY.splitlines() if not line.startswith("Total ")]
    return command + "\n" + "\n".join(kept) + "\n"


def test_summary_without_token_totals_takes_the_lengths_the_command_shows() -> None:
    # SYNTHETIC: a summary trimmed of its 'Total input/generated tokens' lines, below its command
    text = _trimmed(
        "vllm bench serve --model m --dataset-name random --random-input-len 128 --random-output-len 64 "
        "--ignore-eos --max-concurrency 4"
    )
    (item,), problems = _one(vllm_bench.read, "s.txt", text)
    assert not problems.errors and not problems.warnings
    assert (item.cells["prompt_tokens"], item.cells["output_tokens"]) == ("128", "64")
    assert "prompt_tokens is the command line's --random-input-len 128" in item.cells["notes"]


def test_summary_without_token_totals_or_command_says_what_to_add() -> None:
    (item,), problems = _one(vllm_bench.read, "s.txt", _trimmed("(pasted from a README)"))
    assert not problems.errors
    assert item.cells["prompt_tokens"] == "unknown" and "output_tokens" not in item.cells
    (warning,) = problems.warnings
    assert "add those two lines from the run's log" in warning.message
    assert "paste the whole summary" not in warning.message
    # a random dataset whose lengths vary (--random-range-ratio) gives no fixed prompt length
    (varied,), _ = _one(
        vllm_bench.read,
        "s.txt",
        _trimmed("vllm bench serve --dataset-name random --random-input-len 128 --random-range-ratio 0.5"),
    )
    assert varied.cells["prompt_tokens"] == "unknown"


def test_notes_never_print_none() -> None:
    # SYNTHETIC: a summary with a mean TPOT but no median
    text = "$ vllm bench serve --model m --max-concurrency 4\n" + SUMMARY.replace(
        "Median TPOT (ms):                        25.00\n", ""
    )
    (item,), problems = _one(vllm_bench.read, "s.txt", text)
    assert not problems.errors
    assert "None" not in item.cells["notes"]
    assert "TPOT (mean 25.10, p99 25.40)" in item.cells["notes"]


# --- failed requests -----------------------------------------------------------------------------


def _result(**changes: object) -> str:
    obj = json.loads((FIXTURES / "vllm-c1.json").read_text())
    obj.update(changes)
    return json.dumps(obj)


def test_failed_requests_are_recorded_in_the_row() -> None:
    (item,), problems = _one(vllm_bench.read, "r.json", _result(completed=10, failed=10))
    assert not problems.errors
    assert (item.cells["requests"], item.cells["failed_requests"]) == ("20", "10")
    assert "10 of 20 requests failed" in item.cells["notes"]
    printed = SUMMARY.replace(
        "Successful requests:                     20", "Successful requests: 19"
    ).replace("Failed requests:                         0", "Failed requests: 1")
    (row,), _ = _one(vllm_bench.read, "s.txt", "$ vllm bench serve --max-concurrency 4\n" + printed)
    assert (row.cells["requests"], row.cells["failed_requests"]) == ("20", "1")


def test_a_run_where_every_request_failed_is_refused_saying_so() -> None:
    items, problems = _one(vllm_bench.read, "r.json", _result(completed=0, failed=20))
    assert items == []
    assert [p.message for p in problems.errors] == [
        "all 20 requests failed: no request succeeded, so there is nothing to import"
    ]


# --- vLLM sweep ----------------------------------------------------------------------------------


def test_vllm_sweep_summary_is_a_list_of_runs() -> None:
    # SYNTHETIC: vllm bench sweep serve's summary.json: each --save-result with run_number and the parameters
    runs = [
        {**json.loads((FIXTURES / f"vllm-c{c}.json").read_text()), "run_number": 0, "max_concurrency": c}
        for c in (1, 8)
    ]
    items, problems = _one(vllm_bench.read, "summary.json", json.dumps(runs))
    assert not problems.errors
    assert [load_cells(i.load) for i in items] == [{"concurrency": "1"}, {"concurrency": "8"}]
    assert [i.origin for i in items] == ["summary.json [0]", "summary.json [1]"]
    assert items[1].cells["source"] == "vllm bench serve result summary.json, [1]"
    broken, problems = _one(vllm_bench.read, "summary.json", json.dumps([runs[0], {"completed": 1}]))
    assert len(broken) == 1
    assert problems.errors[0].message.startswith(
        "not a 'vllm bench serve --save-result' file: [1]: missing keys"
    )


# --- SGLang JSON Lines of 2024 ---------------------------------------------------------------------


def test_sglang_jsonl_of_2024() -> None:
    # SYNTHETIC: the keys bench_serving's --output-file wrote in 2024 (total_input, median_ttft, ...)
    line = {
        "backend": "sglang",
        "dataset_name": "random",
        "request_rate": 4.0,
        "completed": 20,
        "total_input": 2560,
        "total_output": 1280,
        "total_output_retokenized": 1280,
        "mean_e2e_latency": 1650.5,
        "median_e2e_latency": 1640.25,
        "median_ttft": 62.8,
        "median_itl": 25.0,
        "output_token_throughput": 128.0,
        "sharegpt_output_len": None,
        "random_input_len": 128,
        "random_output_len": 64,
        "random_range_ratio": 0.0,
        "duration": 10.0,
    }
    (item,), problems = _one(sglang.read, "old.jsonl", json.dumps(line) + "\n")
    assert not problems.errors
    assert (item.cells["prompt_tokens"], item.cells["output_tokens"]) == ("128", "64")
    assert (item.cells["ttft_ms"], item.cells["itl_ms"], item.cells["e2el_ms"]) == ("62.8", "25.0", "1640.25")
    assert item.cells["aggregate_tok_s"] == "128.0"
    assert item.load == {"request_rate": "4.0"} and item.unknown == ("concurrency",)
    assert "None" not in item.cells["notes"]


def test_vllms_own_printed_output_with_its_warning_lines() -> None:
    # vllm bench serve 0.34.0's standard output, run against the stand-in (tests/fixtures/harness): two
    # 'WARNING: ... vllm bench serve ...' lines above the summary are no command line
    path = FIXTURES.parent / "harness" / "vllm-0.34.0" / "c2.txt"
    (item,), problems = _one(vllm_bench.read, path.name, path.read_bytes())
    assert not problems.errors
    assert "WARNING" not in item.cells["notes"] and "command:" not in item.cells["notes"]
    assert load_cells(item.load) == {"concurrency": "2"}
    assert (item.cells["requests"], item.cells["failed_requests"]) == ("6", "0")


def test_sglang_random_lengths_are_fixed_only_at_range_ratio_1() -> None:
    # SYNTHETIC: SGLang's random prompts vary in length unless --random-range-ratio 1
    base = "python -m sglang.bench_serving --dataset-name random --random-input-len 128 --max-concurrency 4"
    (varied,), _ = _one(sglang.read, "s.txt", _trimmed(base))
    assert varied.cells["prompt_tokens"] == "unknown"
    (fixed,), problems = _one(sglang.read, "s.txt", _trimmed(base + " --random-range-ratio 1"))
    assert fixed.cells["prompt_tokens"] == "128"
    (warning,) = problems.warnings  # the output length is still unknown, the row still compares
    assert "output length is not known:" in warning.message and "no part" not in warning.message

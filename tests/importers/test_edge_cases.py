"""Readers on SYNTHETIC inputs: edge cases, and the forms no verbatim public output was found for.

Every number below is typed for the test, never measured; the layouts follow each tool's source.
"""

from __future__ import annotations

import json

from builder.errors import Problems
from builder.importers import (
    Measurement,
    aiperf,
    guidellm,
    llama_bench,
    llama_benchy,
    load_cells,
    sglang,
    vllm_bench,
)

SUMMARY = """============ Serving Benchmark Result ============
Successful requests:                     100
Maximum request concurrency:             4
Benchmark duration (s):                  10.00
Total input tokens:                      51200
Total generated tokens:                  12800
Output token throughput (tok/s):         1280.00
---------------Time to First Token----------------
Median TTFT (ms):                        50.00
P99 TTFT (ms):                           90.00
-----Time per Output Token (excl. 1st token)------
Median TPOT (ms):                        20.00
---------------Inter-token Latency----------------
Median ITL (ms):                         19.00
----------------End-to-end Latency----------------
Median E2EL (ms):                        2600.00
P99 E2EL (ms):                           3100.00
==================================================
"""


def _one(reader, name: str, text: str | bytes) -> tuple[list[Measurement], Problems]:  # type: ignore[no-untyped-def]
    problems = Problems()
    data = text.encode() if isinstance(text, str) else text
    return reader(name, data, problems), problems


# --- printed summaries ---------------------------------------------------------------------------


def test_printed_cap_inside_the_summary_and_rate_from_the_command_line() -> None:
    text = "$ vllm bench serve --model m --request-rate 1.5 --burstiness 0.5 --max-concurrency 25\n" + SUMMARY
    (item,), problems = _one(vllm_bench.read, "s.txt", text)
    assert not problems.errors
    assert item.load == {
        "request_rate": "1.5",
        "concurrency": "4",
        "burstiness": "0.5",
    }  # the printed cap wins
    assert load_cells(item.load) == {"concurrency": "4", "request_rate": "1.5", "burstiness": "0.5"}
    assert (item.cells["prompt_tokens"], item.cells["e2el_ms"], item.cells["e2el_p99_ms"]) == (
        "512",
        "2600.00",
        "3100.00",
    )
    assert item.cells["decode_tok_s"] == repr(1000 / 20.0)


def test_printed_settings_from_a_namespace_line() -> None:
    text = "Namespace(backend='vllm', max_concurrency=None, model='m', request_rate=inf, burstiness=1.0)\n"
    text += SUMMARY.replace("Maximum request concurrency:             4\n", "")
    (item,), _ = _one(vllm_bench.read, "s.txt", text)
    assert item.load == {"request_rate": "inf", "concurrency": "none", "burstiness": "1.0"}
    assert item.model == "m"


def test_sglang_prints_an_unset_cap_as_not_set() -> None:
    text = SUMMARY.replace(
        "Maximum request concurrency:             4", "Max request concurrency:                 not set"
    )
    text = text.replace(
        "Successful requests:", "Traffic request rate:                    inf\nSuccessful requests:", 1
    )
    (item,), problems = _one(sglang.read, "s.txt", text)
    assert not problems.errors
    assert item.load == {"request_rate": "inf", "concurrency": "none"}


def test_printed_summary_alone_leaves_the_load_to_options() -> None:
    (item,), _ = _one(
        vllm_bench.read, "s.txt", SUMMARY.replace("Maximum request concurrency:             4\n", "")
    )
    assert item.unknown == ("request_rate", "concurrency")


def test_printed_summary_cut_short_is_located() -> None:
    text = "intro\n" + SUMMARY.split("Output token")[0]
    items, problems = _one(sglang.read, "s.txt", text)
    assert items == []
    assert [p.format() for p in problems.errors] == [
        "s.txt:2: the summary lacks 'Output token throughput (tok/s)': paste the whole summary, down to its "
        "closing line of '='"
    ]


def test_quoted_summary_in_an_issue() -> None:
    text = "".join(f"> {line}\n" for line in ("Traffic request rate: 10.0", *SUMMARY.splitlines()))
    (item,), problems = _one(vllm_bench.read, "issue.md", text)
    assert not problems.errors
    assert item.load["request_rate"] == "10.0" and item.cells["ttft_ms"] == "50.00"


def test_no_summary_and_no_json_is_refused() -> None:
    items, problems = _one(vllm_bench.read, "x.txt", "nothing here\n")
    assert items == []
    assert problems.errors[0].message.startswith(
        "not vllm bench serve output: expected the JSON of --save-result"
    )


# --- sglang JSON Lines -----------------------------------------------------------------------------

_SGLANG_LINE = {
    "backend": "sglang",
    "dataset_name": "random",
    "max_concurrency": None,
    "completed": 200,
    "total_input_tokens": 204800,
    "total_output_tokens": 25600,
    "output_throughput": 1000.5,
    "median_e2e_latency_ms": 900.25,
    "p99_e2e_latency_ms": 1500.75,
    "median_ttft_ms": 80.5,
    "p99_ttft_ms": 200.5,
    "median_tpot_ms": 6.25,
    "median_itl_ms": 6.0,
    "p99_itl_ms": 12.0,
    "concurrency": 7.9,
}


def test_sglang_jsonl_one_row_per_line_and_infinity() -> None:
    first = json.dumps({**_SGLANG_LINE, "request_rate": 4.0})
    # Python's json writes an unbounded rate as Infinity, as sglang does
    second = json.dumps({**_SGLANG_LINE, "request_rate": float("inf"), "max_concurrency": 16})
    items, problems = _one(sglang.read, "r.jsonl", f"{first}\n\n{second}\n")
    assert not problems.errors
    assert [load_cells(i.load) for i in items] == [{"request_rate": "4.0"}, {"concurrency": "16"}]
    assert [i.origin for i in items] == ["r.jsonl:1", "r.jsonl:3"]
    cells = items[0].cells
    assert (cells["prompt_tokens"], cells["output_tokens"], cells["e2el_ms"], cells["e2el_p99_ms"]) == (
        "1024",
        "128",
        "900.25",
        "1500.75",
    )
    assert cells["decode_tok_s"] == repr(1000 / 6.25)
    assert "measured concurrency 7.9" in cells["notes"]  # not the cap


def test_sglang_jsonl_infinity_only_as_a_rate() -> None:
    line = json.dumps({**_SGLANG_LINE, "request_rate": 1.0, "median_ttft_ms": float("inf")})
    items, problems = _one(sglang.read, "r.jsonl", line)
    assert items == []
    assert [p.format() for p in problems.errors] == [
        "r.jsonl:1: line 1 'median_ttft_ms' must be a finite number, not inf"
    ]


# --- guidellm ------------------------------------------------------------------------------------


def _distribution(median: float, p99: float, mean: float) -> dict[str, object]:
    return {"successful": {"mean": mean, "median": median, "percentiles": {"p50": median, "p99": p99}}}


_GUIDELLM = {
    "metadata": {"version": 2, "guidellm_version": "0.4.0"},
    "benchmarks": [
        {
            "type_": "generative_benchmark",
            "config": {"strategy": {"type_": strategy, **extra}},
            "start_time": 1767225600.0,
            "metrics": {
                "prompt_token_count": _distribution(256, 256, 256.4),
                "output_token_count": _distribution(128, 128, 127.6),
                "time_to_first_token_ms": _distribution(45.5, 80.25, 50.0),
                "inter_token_latency_ms": _distribution(8.0, 11.5, 8.2),
                "request_latency": _distribution(1.0625, 1.3, 1.1),
                "output_tokens_per_second": _distribution(900.0, 950.0, 910.5),
            },
        }
        for strategy, extra in (
            ("synchronous", {}),
            ("throughput", {"max_concurrency": None}),
            ("poisson", {"rate": 2.5}),
        )
    ],
}


def test_guidellm_report_one_row_per_benchmark() -> None:
    items, problems = _one(guidellm.read, "report.json", json.dumps(_GUIDELLM))
    assert not problems.errors
    assert [load_cells(i.load) for i in items] == [
        {"concurrency": "1"},
        {"request_rate": "inf"},
        {"request_rate": "2.5", "burstiness": "1"},
    ]
    cells = items[0].cells
    assert (cells["prompt_tokens"], cells["output_tokens"]) == ("256", "128")
    assert (cells["ttft_ms"], cells["ttft_p99_ms"], cells["itl_ms"], cells["itl_p99_ms"]) == (
        "45.5",
        "80.25",
        "8.0",
        "11.5",
    )
    # seconds to ms, exactly
    assert (cells["e2el_ms"], cells["e2el_p99_ms"]) == ("1062.5", "1300")
    assert cells["aggregate_tok_s"] == "910.5" and cells["decode_tok_s"] == repr(1000 / 8.0)
    assert cells["harness"] == "guidellm 0.4.0"
    assert items[0].meta == {"date": "2026-01-01", "time": "00:00"}


def test_guidellm_yaml_report() -> None:
    import yaml

    items, problems = _one(guidellm.read, "report.yaml", yaml.safe_dump(_GUIDELLM))
    assert not problems.errors and len(items) == 3


def test_guidellm_unknown_strategy_is_named() -> None:
    report = json.loads(json.dumps(_GUIDELLM))
    report["benchmarks"][0]["config"]["strategy"] = {"type_": "replay"}
    items, problems = _one(guidellm.read, "report.json", json.dumps(report))
    assert len(items) == 2
    assert problems.errors[0].message.startswith(
        "benchmarks[0]: strategy type 'replay' is not one the importer knows"
    )


# --- AIPerf / GenAI-Perf JSON ----------------------------------------------------------------------


def test_aiperf_json_with_its_load_and_start_time() -> None:
    export = {
        "aiperf_version": "0.2.0",
        "time_to_first_token": {"unit": "ms", "avg": 60.0, "p50": 55.5, "p99": 120.25},
        "inter_token_latency": {"unit": "ms", "avg": 10.5, "p50": 10.0, "p99": 14.0},
        "request_latency": {"unit": "ms", "avg": 1400.0, "p50": 1350.5, "p99": 1800.0},
        "output_token_throughput": {"unit": "tokens/sec", "avg": 640.5},
        "input_sequence_length": {"unit": "tokens", "avg": 511.6},
        "output_sequence_length": {"unit": "tokens", "avg": 128.0},
        "input_config": {
            "endpoint": {"model_names": ["org/model"]},
            "loadgen": {"concurrency": 8, "request_rate": None},
        },
        "start_time": "2026-01-02T03:04:05",
    }
    (item,), problems = _one(aiperf.read, "profile_export_aiperf.json", json.dumps(export))
    assert not problems.errors
    assert item.load == {"concurrency": "8"} and item.unknown == ()
    assert (item.cells["ttft_ms"], item.cells["e2el_p99_ms"], item.cells["prompt_tokens"]) == (
        "55.5",
        "1800.0",
        "512",
    )
    assert item.cells["harness"] == "aiperf 0.2.0" and item.model == "org/model"
    assert item.meta == {"date": "2026-01-02", "time": "03:04"}


def test_guidellm_benchmark_without_its_strategy_leaves_the_load_to_options() -> None:
    report = json.loads(json.dumps(_GUIDELLM))
    del report["benchmarks"][0]["config"]
    items, problems = _one(guidellm.read, "report.json", json.dumps(report))
    assert not problems.errors
    assert (items[0].load, items[0].unknown) == ({}, ("load",))


def test_aiperf_json_latency_in_other_units_is_refused() -> None:
    export = {"time_to_first_token": {"unit": "s", "p50": 0.05}}
    items, problems = _one(aiperf.read, "e.json", json.dumps(export))
    assert items == [] and problems.errors[0].message == "'time_to_first_token.unit' is 's'; only ms is read"


# --- llama-benchy CSV ------------------------------------------------------------------------------


def test_llama_benchy_csv_as_its_table() -> None:
    head = (
        "model,test_name,t_s_mean,t_s_std,t_s_req_mean,t_s_req_std,peak_ts_mean,peak_ts_std,peak_ts_req_mean,"
        "peak_ts_req_std,ttfr_mean,ttfr_std,est_ppt_mean,est_ppt_std,e2e_ttft_mean,e2e_ttft_std"
    )
    rows = [
        "m,pp2048,2001.5,12.25,2001.5,12.25,,,,,1000.5,5.5,990.5,5.5,1020.75,6.5",
        "m,tg32,50.125,0.5,50.125,0.5,52.0,0.25,52.0,0.25,,,,,,",
    ]
    items, problems = _one(llama_benchy.read, "b.csv", "\n".join([head, *rows]) + "\n")
    assert not problems.errors
    (item,) = items
    cells = item.cells
    assert (cells["prefill_tok_s"], cells["prefill_tok_s_sd"], cells["ttft_ms"], cells["ttft_ms_sd"]) == (
        "2001.5",
        "12.25",
        "1020.75",
        "6.5",
    )
    assert (cells["decode_tok_s"], cells["decode_tok_s_sd"], cells["output_tokens"]) == (
        "50.125",
        "0.5",
        "32",
    )
    assert "aggregate_tok_s" not in cells  # one stream: as the table prints it
    assert cells["harness"] == "llama-benchy" and item.meta == {}  # the CSV has no version and no date
    assert cells["source"] == "llama-benchy CSV in b.csv, line 2, line 3"


def test_llama_benchy_table_repetitions_from_its_command_line() -> None:
    table = (
        "$ llama-benchy --base-url http://x/v1 --model m --runs 5\n\n"
        "| model | test | t/s | peak t/s | ttfr (ms) | est_ppt (ms) | e2e_ttft (ms) |\n"
        "|:--|--:|--:|--:|--:|--:|--:|\n"
        "| m | pp512 | 900.5 ± 9.5 | | 1 | 1 | 150.5 ± 2.5 |\n"
        "| m | tg32 | 60.5 ± 1.5 | | | | |\n"
    )
    (item,), _ = _one(llama_benchy.read, "t.md", table)
    assert item.cells["repetitions"] == "5"


# --- llama-bench -----------------------------------------------------------------------------------


def test_llama_bench_combined_test_is_skipped_with_a_warning() -> None:
    table = (
        "| model | size | params | backend | ngl | test | t/s |\n"
        "| --- | ---: | ---: | --- | --: | ---: | ---: |\n"
        "| m | 1 GiB | 1 B | CUDA | 99 | pp 512 | 4918.36 ± 132.23 |\n"
        "| m | 1 GiB | 1 B | CUDA | 99 | tg 128 | 165.76 ± 1.50 |\n"
        "| m | 1 GiB | 1 B | CUDA | 99 | pp512+tg128 | 600.22 ± 3.39 |\n"
        "\nbuild: 8cf427ff (5163)\n"
    )
    items, problems = _one(llama_bench.read, "b.md", "$ ./llama-bench -r 3\n\n" + table)
    assert not problems.errors
    assert [p.format() for p in problems.warnings] == [
        "b.md:7: pp512+tg128 is a combined test; no row column holds it, skipped"
    ]
    (item,) = items
    assert (item.cells["prefill_tok_s"], item.cells["decode_tok_s"], item.cells["repetitions"]) == (
        "4918.36",
        "165.76",
        "3",
    )
    assert item.meta == {"engine_version": "b5163", "engine_build": "8cf427ff", "flags": "-ngl 99"}
    assert item.cells["harness"] == "llama-bench b5163"


def test_aiperf_export_without_input_length_keeps_the_prompt_unknown() -> None:
    export = {"time_to_first_token": {"unit": "ms", "p50": 50.5}, "input_config": {"concurrency": 1}}
    (item,), problems = _one(aiperf.read, "e.json", json.dumps(export))
    assert not problems.errors
    assert item.cells["prompt_tokens"] == "unknown" and "prompt length is unknown" in item.cells["notes"]

"""Every reader on verbatim public output (origins in tests/fixtures/import/README.md), values checked by hand."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest

from builder.errors import Problems
from builder.importers import Measurement, aiperf, llama_bench, llama_benchy, load_cells, sglang, vllm_bench

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "import"


def _read(reader, name: str) -> list[Measurement]:  # type: ignore[no-untyped-def]
    problems = Problems()
    items: list[Measurement] = reader(name, (FIXTURES / name).read_bytes(), problems)
    assert problems.errors == [] and problems.warnings == []
    return items


def _pick(item: Measurement, *fields: str) -> tuple[str | None, ...]:
    return tuple(item.cells.get(f) for f in fields)


# --- vllm bench serve, printed ------------------------------------------------------------------


def test_vllm_printed_summary_with_its_command_line_above() -> None:
    (item,) = _read(vllm_bench.read, "vllm-printed-dennislee22.md")
    # 10239 input and 10240 generated tokens over 10 requests
    assert _pick(item, "prompt_tokens", "output_tokens") == ("1024", "1024")
    assert _pick(
        item, "aggregate_tok_s", "ttft_ms", "ttft_p99_ms", "tpot_ms", "tpot_p99_ms", "itl_ms", "itl_p99_ms"
    ) == (
        "218.04",
        "2244.91",
        "3346.14",
        "43.65",
        "45.56",
        "42.39",
        "51.04",
    )
    assert float(item.cells["decode_tok_s"]) == 1000 / 43.65
    # the command has no --request-rate and no --max-concurrency: vLLM's defaults, an open-loop run at inf
    assert item.load == {"request_rate": "inf", "concurrency": "none"}
    assert load_cells(item.load) == {"request_rate": "inf"}
    assert item.unknown == ()
    assert item.model == "Qwen2-7B-Instruct"
    assert item.meta == {}  # a printed summary has no date
    assert item.cells["harness"] == "vllm bench serve"
    assert item.origin.endswith("vllm-printed-dennislee22.md:9")
    assert "--random-input-len 1024" in item.cells["notes"]


def test_vllm_printed_log_kept_as_comments_one_row_per_summary() -> None:
    items = _read(vllm_bench.read, "vllm-printed-commented.sh")
    assert len(items) == 2
    # 'Traffic request rate: inf' and 'Maximum request concurrency: 32' above each: closed loop at 32
    assert [load_cells(i.load) for i in items] == [{"concurrency": "32"}, {"concurrency": "32"}]
    assert [
        _pick(i, "prompt_tokens", "output_tokens", "aggregate_tok_s", "ttft_ms", "tpot_ms") for i in items
    ] == [
        ("2048", "2048", "434.40", "7099.88", "70.23"),
        ("2048", "2048", "329.86", "6272.98", "93.99"),
    ]
    assert "max concurrency 32 (from line 3)" in items[0].cells["notes"]


# --- sglang bench_serving, printed ---------------------------------------------------------------


def test_sglang_printed_summaries_one_row_per_request_rate() -> None:
    items = _read(sglang.read, "sglang-dlora-results.md")
    assert [i.load for i in items] == [{"request_rate": r} for r in ("2.0", "4.0", "8.0")]
    # this SGLang prints no concurrency cap: an option must say whether there was one
    assert {i.unknown for i in items} == {("concurrency",)}
    first = items[0]
    # 342460 input and 218257 generated tokens over 996 requests
    assert _pick(first, "prompt_tokens", "output_tokens") == ("344", "219")
    assert _pick(first, "aggregate_tok_s", "ttft_ms", "ttft_p99_ms", "e2el_ms", "itl_ms", "tpot_p99_ms") == (
        "825.94",
        "606.88",
        "15089.74",
        "606.86",
        "0.00",
        "28.33",
    )
    # the median TPOT is printed as -0.00: not a measurement, so no tpot_ms and no decode
    assert "tpot_ms" not in first.cells and "decode_tok_s" not in first.cells
    assert "median_tpot_ms is -0.00, not recorded" in first.cells["notes"]
    assert items[2].cells["aggregate_tok_s"] == "832.68"
    assert first.cells["harness"] == "sglang bench_serving"
    assert load_cells({**first.load, "concurrency": "none"}) == {"request_rate": "2.0"}


# --- GenAI-Perf CSV ------------------------------------------------------------------------------


def test_genai_perf_csv_export() -> None:
    (item,) = _read(aiperf.read, "genai-perf-cloudai.csv")
    assert _pick(item, "ttft_ms", "ttft_p99_ms", "itl_ms", "itl_p99_ms", "e2el_ms", "e2el_p99_ms") == (
        "640.07",
        "3457.97",
        "30.13",
        "35.23",
        "5690.23",
        "9436.13",
    )
    # "3,000.05" and "174.45" average sequence lengths; thousands separators are not decimal commas
    assert _pick(item, "prompt_tokens", "output_tokens", "aggregate_tok_s") == ("3000", "174", "261.25")
    assert float(item.cells["decode_tok_s"]) == 1000 / 30.13
    assert item.cells["harness"] == "genai-perf"
    assert item.unknown == ("load",) and item.meta == {}


# --- llama.cpp llama-bench -----------------------------------------------------------------------


def test_llama_bench_json_pairs_pp_and_tg() -> None:
    (item,) = _read(llama_bench.read, "llama-bench.json")
    raw = json.loads((FIXTURES / "llama-bench.json").read_text())
    assert _pick(item, "prompt_tokens", "output_tokens", "context_tokens") == ("512", "128", "0")
    assert _pick(item, "prefill_tok_s", "prefill_tok_s_sd", "decode_tok_s", "decode_tok_s_sd") == (
        "7100.002165",
        "140.34152",
        "118.881588",
        "1.041811",
    )
    # llama-bench's standard deviation is the sample one, as the row's _sd columns hold
    assert statistics.stdev(raw[0]["samples_ts"]) == pytest.approx(140.34152, abs=0.01)
    assert item.cells["repetitions"] == "5"
    assert item.meta == {
        "date": "2025-04-24",
        "time": "11:58",
        "engine_version": "b5163",
        "engine_build": "8cf427ff",
        # every setting the JSON records, as llama-bench's options: a run with other settings is another run
        "flags": "-b 2048 -ub 512 -t 8 -C 0x0 --cpu-strict 0 --poll 50 -ctk f16 -ctv f16 -ngl -1 -ncmoe 0 "
        "-sm layer -mg 0 -nkvo 0 -fa -1 -dev auto -ts 0.00 -ot none -mmp 1 -dio 0 -embd 0 -nopo 0 "
        "--no-host 0 --repack 1 --fit-target 0 --fit-min-ctx 0",
    }
    assert item.cells["harness"] == "llama-bench b5163"
    assert item.load == {"concurrency": "1"}


def test_llama_bench_jsonl_reads_like_json() -> None:
    # the README's two JSON objects, one per line as -o jsonl prints them (derived from the real output)
    raw = json.loads((FIXTURES / "llama-bench.json").read_text())
    problems = Problems()
    data = "".join(json.dumps(entry) + "\n" for entry in raw).encode()
    (item,) = llama_bench.read("bench.jsonl", data, problems)
    assert not problems.errors
    assert _pick(item, "prefill_tok_s", "decode_tok_s", "repetitions") == ("7100.002165", "118.881588", "5")
    assert item.cells["source"] == "llama-bench JSON in bench.jsonl, line 1 and line 2"


def test_llama_bench_markdown_with_depths() -> None:
    items = _read(llama_bench.read, "llama-bench-readme.md")
    assert [
        _pick(
            i,
            "prompt_tokens",
            "output_tokens",
            "context_tokens",
            "prefill_tok_s",
            "prefill_tok_s_sd",
            "decode_tok_s",
            "decode_tok_s_sd",
        )
        for i in items
    ] == [
        ("512", "128", "0", "7340.20", "23.45", "120.60", "0.59"),
        ("512", "128", "512", "6425.91", "18.88", "116.71", "0.60"),
    ]
    assert all("repetitions" not in i.cells for i in items)  # the command line shows no -r
    assert items[0].cells["harness"] == "llama-bench"  # the excerpt has no 'build:' line
    assert [i.meta for i in items] == [{"flags": "-ngl -1"}] * 2  # the table's ngl column


# --- llama-benchy --------------------------------------------------------------------------------


def test_llama_benchy_json_trial_rows() -> None:
    items = _read(llama_benchy.read, "llama-benchy-0.2.2-sample.json")
    raw = json.loads((FIXTURES / "llama-benchy-0.2.2-sample.json").read_text())
    assert len(items) == 2 + 2  # two entries, two repetitions each
    assert [i.cells["prefill_tok_s"] for i in items[:2]] == ["986.0233386029112", "988.1741643321216"]
    assert [i.cells["decode_tok_s"] for i in items[:2]] == ["50.00830782969089", "49.94739413736796"]
    assert [i.cells["ttft_ms"] for i in items[:2]] == [
        repr(v) for v in raw["benchmarks"][0]["e2e_ttft"]["values"]
    ]
    # at concurrency 2 the per-request lists hold 2 values per repetition: each repetition's mean
    c2 = raw["benchmarks"][1]
    assert len(c2["tg_req_throughput"]["values"]) == 4 and len(c2["tg_throughput"]["values"]) == 2
    assert items[2].cells["decode_tok_s"] == repr(statistics.fmean(c2["tg_req_throughput"]["values"][:2]))
    assert items[3].cells["aggregate_tok_s"] == repr(c2["tg_throughput"]["values"][1])
    assert [i.load for i in items] == [{"concurrency": "1"}] * 2 + [{"concurrency": "2"}] * 2
    assert {i.cells["harness"] for i in items} == {"llama-benchy 0.2.2.dev7+gcd427054e"}
    assert items[0].meta == {"date": "2026-02-07", "time": "19:09"}


def test_llama_benchy_readme_table_with_spread_and_printed_date() -> None:
    items = _read(llama_benchy.read, "llama-benchy-0.2.2-readme.md")
    assert [i.cells["context_tokens"] for i in items] == ["0", "4096", "8192", "16384", "32768"]
    assert _pick(
        items[0],
        "prefill_tok_s",
        "prefill_tok_s_sd",
        "ttft_ms",
        "ttft_ms_sd",
        "decode_tok_s",
        "decode_tok_s_sd",
    ) == (
        "8521.08",
        "69.61",
        "340.65",
        "3.49",
        "73.18",
        "0.45",
    )
    assert _pick(items[4], "prefill_tok_s", "prefill_tok_s_sd", "decode_tok_s") == (
        "6896.57",
        "4.62",
        "65.80",
    )
    # 'llama-benchy (0.2.2.dev1+...)' printed under the table: written as <tool> <version>
    assert items[0].cells["harness"] == "llama-benchy 0.2.2.dev1+g52d2b0d55.d20260206"
    assert items[0].meta == {"date": "2026-02-06", "time": "15:52"}
    assert items[0].model == "openai/gpt-oss-120b"


def test_llama_benchy_concurrency_table_from_an_issue() -> None:
    c1, c2 = _read(llama_benchy.read, "llama-benchy-concurrency-issue231.md")
    assert (c1.load, c2.load) == ({"concurrency": "1"}, {"concurrency": "2"})
    assert _pick(
        c1, "prompt_tokens", "output_tokens", "prefill_tok_s", "decode_tok_s", "aggregate_tok_s", "ttft_ms"
    ) == (
        "2048",
        "32",
        "2824.27",
        "12.52",
        "12.52",
        "731.91",
    )
    # at c2: prefill is the pp line's total, decode the tg line's per-request t/s, aggregate its total
    assert _pick(
        c2,
        "prefill_tok_s",
        "prefill_tok_s_sd",
        "decode_tok_s",
        "decode_tok_s_sd",
        "aggregate_tok_s",
        "aggregate_tok_s_sd",
    ) == (
        "2737.59",
        "52.46",
        "11.70",
        "1.24",
        "21.19",
        "2.86",
    )
    assert (c2.cells["ttft_ms"], c2.cells["ttft_ms_sd"]) == ("1244.39", "361.79")
    assert c2.model == "nvidia/Gemma-4-31B-IT-NVFP4" and c2.meta == {}  # the excerpt shows no date


def test_vllm_printed_summary_with_the_cap_inside_it_and_e2el() -> None:
    (item,) = _read(vllm_bench.read, "vllm-printed-pr25135.md")
    assert item.load == {"concurrency": "64"}
    # the cap is printed, the rate is not: inf (closed loop at 64) or a finite rate under the cap?
    assert item.unknown == ("request_rate",)
    # 326905 input and 327680 generated tokens over 320 requests
    assert _pick(item, "prompt_tokens", "output_tokens", "aggregate_tok_s") == ("1022", "1024", "793.27")
    assert _pick(item, "ttft_ms", "tpot_ms", "itl_ms", "e2el_ms", "e2el_p99_ms") == (
        "5150.59",
        "76.05",
        "66.27",
        "82994.12",
        "89413.31",
    )


def test_vllm_printed_summary_of_a_newer_version_without_its_load() -> None:
    (item,) = _read(vllm_bench.read, "vllm-printed-tpu-inference-pr1006.md")
    # 'Failed requests' and 'Peak ...' lines are new in this version; nothing says the rate or the cap
    assert item.unknown == ("request_rate", "concurrency") and item.load == {}
    # 1199000 input and 123107 generated tokens over 1000 requests
    assert _pick(
        item, "prompt_tokens", "output_tokens", "aggregate_tok_s", "ttft_ms", "tpot_ms", "itl_p99_ms"
    ) == (
        "1199",
        "123",
        "1415.14",
        "42532.26",
        "50.98",
        "79.05",
    )

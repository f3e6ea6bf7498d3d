"""The benchmark readers on realistic (synthetic) fixtures in each tool's format."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from builder.errors import Problems
from builder.importers import Measurement, llama_benchy, load_cells, read_files, vllm_bench
from builder.importers.benchy_table import read_table

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "import"


def _read(reader, name: str) -> tuple[list[Measurement], Problems]:  # type: ignore[no-untyped-def]
    problems = Problems()
    return reader(name, (FIXTURES / name).read_bytes(), problems), problems


# --- vllm bench serve ---------------------------------------------------------------------------


@pytest.mark.parametrize("conc", [1, 8, 32])
def test_vllm_mapping_follows_the_formulas(conc: int) -> None:
    raw = json.loads((FIXTURES / f"vllm-c{conc}.json").read_text())
    items, problems = _read(vllm_bench.read, f"vllm-c{conc}.json")
    assert not problems.errors
    (item,) = items
    cells = item.cells
    assert cells["prompt_tokens"] == str(round(raw["total_input_tokens"] / raw["completed"]))
    assert cells["output_tokens"] == str(round(raw["total_output_tokens"] / raw["completed"]))
    assert item.load["concurrency"] == str(conc)
    assert load_cells(item.load) == {"concurrency": str(conc)}  # inf under a cap: closed loop
    assert cells["aggregate_tok_s"] == repr(raw["output_throughput"])
    assert float(cells["decode_tok_s"]) == 1000 / raw["median_tpot_ms"]  # exact: repr round-trips
    assert cells["ttft_ms"] == repr(raw["median_ttft_ms"])
    assert cells["itl_ms"] == repr(raw["median_itl_ms"])
    for stat, name in (
        ("p99", "ttft_p99_ms"),
        ("p99", "itl_p99_ms"),
        ("median", "tpot_ms"),
        ("median", "e2el_ms"),
    ):
        metric = name.removesuffix("_ms").removesuffix("_p99")
        assert cells[name] == repr(raw[f"{stat}_{metric}_ms"])
    assert cells["harness"] == "vllm bench serve"
    assert item.meta == {
        "date": "2026-01-03",
        "time": f"{raw['date'][9:11]}:{raw['date'][11:13]}",
        "node": "node-a",
        "engine_version": "1.0.0",
        "flags": "--max-model-len 4096 --kv-cache-dtype fp8",
    }
    assert item.model == "example/tiny-fp8"
    # the spread the row cannot hold is kept in notes
    assert f"mean {raw['mean_ttft_ms']} ± {raw['std_ttft_ms']} sd" in cells["notes"]
    assert f"p99 {raw['p99_tpot_ms']}" in cells["notes"]


def test_vllm_prompt_tokens_rounds_the_mean_length() -> None:
    # 2048 * 64 + 37 input tokens over 64 requests = 2048.58 → 2049
    items, _ = _read(vllm_bench.read, "vllm-c1.json")
    assert items[0].cells["prompt_tokens"] == "2049"


def test_vllm_without_metadata_reads_only_the_date() -> None:
    items, problems = _read(vllm_bench.read, "vllm-no-metadata.json")
    assert not problems.errors
    assert items[0].meta == {"date": "2026-01-03", "time": "15:00"}


def test_vllm_uncapped_run_is_open_loop_without_a_concurrency() -> None:
    items, problems = _read(vllm_bench.read, "vllm-uncapped.json")
    assert not problems.errors
    assert items[0].load == {"request_rate": "inf", "concurrency": "none", "burstiness": "1.0"}
    # never a guess such as the number of prompts; burstiness shapes no arrivals when all come at once
    assert load_cells(items[0].load) == {"request_rate": "inf"}


def test_load_cells_of_open_and_closed_loop_runs() -> None:
    assert load_cells({"request_rate": "1.5", "concurrency": "25", "burstiness": "1.0"}) == {
        "request_rate": "1.5",
        "concurrency": "25",
        "burstiness": "1.0",
    }
    assert load_cells({"request_rate": "10.0", "concurrency": "none", "burstiness": "1.0"}) == {
        "request_rate": "10.0",
        "burstiness": "1.0",
    }
    assert load_cells({"request_rate": "inf", "concurrency": "8"}) == {"concurrency": "8"}
    assert load_cells({"concurrency": "1"}) == {"concurrency": "1"}


def _vllm(**changes: object) -> bytes:
    raw = json.loads((FIXTURES / "vllm-c8.json").read_text())
    raw.update(changes)
    return json.dumps(raw).encode()


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        (
            {"date": "2026-01-03"},
            "'date' must look like YYYYMMDD-HHMMSS (as vllm writes it), not '2026-01-03'",
        ),
        ({"date": "20260230-101010"}, "'date' '20260230-101010' is not a real date and time"),
        ({"request_rate": 0}, "'request_rate' must be a positive number or inf, not 0"),
        ({"max_concurrency": "8"}, "'max_concurrency' must be a number, not \"8\""),
        ({"completed": 0}, "'completed' is 0: no request finished, so there is nothing to import"),
        ({"output_throughput": "fast"}, "'output_throughput' must be a number, not \"fast\""),
        (
            {"engine_version": 24},
            "metadata 'engine_version' must be a string (vllm bench serve --metadata "
            "engine_version=VALUE), not 24",
        ),
    ],
)
def test_vllm_bad_values(changes: dict[str, object], message: str) -> None:
    problems = Problems()
    assert vllm_bench.read("x.json", _vllm(**changes), problems) == []
    assert [p.message for p in problems.errors] == [message]


def test_vllm_refuses_nan() -> None:
    problems = Problems()
    data = _vllm().replace(b'"median_ttft_ms": 140.9', b'"median_ttft_ms": NaN')
    assert vllm_bench.read("x.json", data, problems) == []
    assert problems.errors[0].message.startswith(
        "not a 'vllm bench serve --save-result' file: not valid JSON"
    )


def test_vllm_appended_results_one_row_per_line() -> None:
    lines = [json.loads((FIXTURES / f"vllm-c{c}.json").read_text()) for c in (1, 8)]
    problems = Problems()
    data = "".join(json.dumps(obj) + "\n" for obj in lines).encode()
    items = vllm_bench.read("all.json", data, problems)
    assert not problems.errors
    assert [(i.origin, i.load["concurrency"]) for i in items] == [("all.json:1", "1"), ("all.json:2", "8")]
    assert items[1].cells["source"] == "vllm bench serve result all.json, line 2"


def test_vllm_infinity_is_read_as_a_rate_only() -> None:
    problems = Problems()
    (item,) = vllm_bench.read(
        "x.json", _vllm().replace(b'"request_rate": "inf"', b'"request_rate": Infinity'), problems
    )
    assert item.load["request_rate"] == "inf"
    data = _vllm().replace(b'"median_ttft_ms": 140.9', b'"median_ttft_ms": Infinity')
    assert vllm_bench.read("x.json", data, problems) == []
    assert problems.errors[0].message == "'median_ttft_ms' must be a finite number, not inf"


def test_vllm_zero_tpot_leaves_decode_unmeasured() -> None:
    problems = Problems()
    (item,) = vllm_bench.read("x.json", _vllm(median_tpot_ms=0.0), problems)
    assert "decode_tok_s" not in item.cells
    assert "decode is not measured" in item.cells["notes"]


def test_vllm_wrong_format_names_the_file_and_the_right_option() -> None:
    items, problems = _read(vllm_bench.read, "llama-benchy.json")
    assert items == []
    assert [p.format() for p in problems.errors] == [
        "llama-benchy.json: not a 'vllm bench serve --save-result' file: missing keys date, completed, "
        "total_input_tokens, total_output_tokens, output_throughput; this looks like a llama-benchy or guidellm "
        "report: use --from llama-benchy or --from guidellm"
    ]


# --- llama-benchy JSON --------------------------------------------------------------------------


def test_benchy_json_gives_one_trial_row_per_repetition() -> None:
    raw = json.loads((FIXTURES / "llama-benchy.json").read_text())
    items, problems = _read(llama_benchy.read, "llama-benchy.json")
    assert not problems.errors
    kept = [b for b in raw["benchmarks"] if not b["is_context_prefill_phase"]]
    assert len(raw["benchmarks"]) == 10 and len(kept) == 6 and len(items) == 6 * 3
    settings = [(i.load["concurrency"], i.cells["context_tokens"]) for i in items[::3]]
    assert settings == [("1", "0"), ("1", "4096"), ("1", "8192"), ("2", "0"), ("2", "4096"), ("2", "8192")]
    for n, item in enumerate(items):
        entry, run = kept[n // 3], n % 3
        cells = item.cells
        assert cells["prompt_tokens"] == str(entry["prompt_size"])
        assert cells["output_tokens"] == str(entry["response_size"])
        assert cells["prefill_tok_s"] == repr(entry["pp_throughput"]["values"][run])
        assert cells["decode_tok_s"] == repr(entry["tg_req_throughput"]["values"][run])
        assert cells["aggregate_tok_s"] == repr(entry["tg_throughput"]["values"][run])
        assert cells["ttft_ms"] == repr(entry["e2e_ttft"]["values"][run])
        assert "repetitions" not in cells and not any(k.endswith("_sd") for k in cells)
        assert cells["harness"] == "llama-benchy 0.3.2"
        assert f"repetition {run + 1} of 3" in cells["notes"]
        assert f"± {entry['tg_req_throughput']['std']} tok/s per request" in cells["notes"]
        assert item.meta == {"date": "2026-01-04", "time": "17:11"}


def test_benchy_json_older_report_without_per_request_decode() -> None:
    raw = json.loads((FIXTURES / "llama-benchy.json").read_text())
    for entry in raw["benchmarks"]:
        entry.pop("tg_req_throughput")
    problems = Problems()
    items = llama_benchy.read("old.json", json.dumps(raw).encode(), problems)
    assert items[0].cells["decode_tok_s"] == items[0].cells["aggregate_tok_s"]
    assert "decode is tg_throughput (one stream)" in items[0].cells["notes"]
    assert all("decode_tok_s" not in i.cells for i in items if i.load["concurrency"] == "2")


def test_benchy_json_timestamp_forms() -> None:
    raw = json.loads((FIXTURES / "llama-benchy.json").read_text())
    for stamp, day in (("2026-01-04T23:59:59Z", "2026-01-04"), ("2026-01-04T00:30:00+09:00", "2026-01-04")):
        raw["timestamp"] = stamp
        problems = Problems()
        items = llama_benchy.read("r.json", json.dumps(raw).encode(), problems)
        assert items[0].meta["date"] == day
    raw["timestamp"] = "yesterday"
    problems = Problems()
    assert llama_benchy.read("r.json", json.dumps(raw).encode(), problems) == []
    assert problems.errors[0].message == "'timestamp' 'yesterday' is not an ISO date and time"


def test_benchy_json_entry_without_sizes_is_located() -> None:
    raw = json.loads((FIXTURES / "llama-benchy.json").read_text())
    del raw["benchmarks"][2]["prompt_size"]
    problems = Problems()
    items = llama_benchy.read("r.json", json.dumps(raw).encode(), problems)
    assert len(items) == 5 * 3  # the other entries, one trial row per repetition
    assert [p.message for p in problems.errors] == [
        "benchmarks[2]: 'prompt_size' must be a whole number, not None"
    ]


def test_benchy_wrong_format_vllm_json() -> None:
    items, problems = _read(llama_benchy.read, "vllm-c1.json")
    assert items == []
    assert [p.format() for p in problems.errors] == [
        "vllm-c1.json: not a llama-benchy JSON report: no 'benchmarks' list; this looks like a vllm bench "
        "serve result: use --from vllm-bench"
    ]


def test_benchy_wrong_format_csv() -> None:
    items, problems = _read(llama_benchy.read, "not-a-benchmark.csv")
    assert items == []
    assert [p.format() for p in problems.errors] == [
        "not-a-benchmark.csv: no llama-benchy results found: expected its JSON report, its markdown table "
        "(| model | test | t/s | ... | e2e_ttft (ms) |) or its CSV (model,test_name,t_s_mean,...)"
    ]


# --- llama-benchy markdown table ---------------------------------------------------------------


def test_table_pasted_in_a_readme() -> None:
    items, problems = _read(read_table, "llama-benchy-readme.md")
    assert not problems.errors
    rows = [
        {
            k: i.cells.get(k)
            for k in (
                "prompt_tokens",
                "output_tokens",
                "context_tokens",
                "prefill_tok_s",
                "decode_tok_s",
                "ttft_ms",
                "aggregate_tok_s",
            )
        }
        for i in items
    ]
    assert rows == [
        {
            "prompt_tokens": "2048",
            "output_tokens": "32",
            "context_tokens": "0",
            "prefill_tok_s": "2019.02",
            "decode_tok_s": "52.94",
            "ttft_ms": "1115.41",
            "aggregate_tok_s": None,
        },
        {
            "prompt_tokens": "2048",
            "output_tokens": "32",
            "context_tokens": "4096",
            "prefill_tok_s": "1994.49",
            "decode_tok_s": "46.69",
            "ttft_ms": "3198.97",
            "aggregate_tok_s": None,
        },
        {
            "prompt_tokens": "2048",
            "output_tokens": "32",
            "context_tokens": "8192",
            "prefill_tok_s": "1751.68",
            "decode_tok_s": "40.40",
            "ttft_ms": "5971.27",
            "aggregate_tok_s": None,
        },
    ]
    assert [i.origin for i in items] == [f"llama-benchy-readme.md:{n}" for n in (13, 17, 19)]
    assert all(i.load == {"concurrency": "1"} for i in items)
    first = items[0].cells
    assert first["harness"] == "llama-benchy build: 75bc129"
    # mean ± sd: the sd in the metric's _sd column, as printed
    assert (first["prefill_tok_s_sd"], first["decode_tok_s_sd"], first["ttft_ms_sd"]) == (
        "34.98",
        "1.01",
        "18.70",
    )
    assert "repetitions" not in first  # the text shows no --runs
    assert "prefill 2019.02 ± 34.98 tok/s" in first["notes"]
    assert "prefill_tok_s_sd" not in items[2].cells  # a cell without a spread
    assert items[2].cells["decode_tok_s_sd"] == "1.19"
    # the date (and time) printed under the table
    assert all(i.meta == {"date": "2026-01-05", "time": "09:30"} for i in items)
    assert items[0].model == "example/tiny-fp8"


def test_table_concurrency_layout() -> None:
    items, problems = _read(read_table, "llama-benchy-concurrency.md")
    assert not problems.errors
    c4 = items[1].cells
    assert (
        items[1].load["concurrency"],
        c4["prefill_tok_s"],
        c4["decode_tok_s"],
        c4["aggregate_tok_s"],
        c4["ttft_ms"],
    ) == ("4", "3480.50", "42.90", "171.60", "2410.33")
    assert items[0].cells["output_tokens"] == "128"


def _table(*lines: str) -> bytes:
    head = [
        "Some text first.",
        "",
        "| model | test | t/s | peak t/s | ttfr (ms) | est_ppt (ms) | e2e_ttft (ms) |",
        "|:--|--:|--:|--:|--:|--:|--:|",
    ]
    return "\n".join([*head, *lines, "", "and text after"]).encode()


def test_table_pairs_repeated_pp_tg_in_order() -> None:
    data = _table(
        "| m | pp128 | 900 ± 9 | | 1 | 1 | 150 ± 2 |",
        "| m | tg32 | 60 ± 1 | | | | |",
        "| m | pp128 | 905 ± 8 | | 1 | 1 | 151 ± 2 |",
        "| m | tg64 | 59 ± 1 | | | | |",
        "| m | pp256 @ d1024 | 880 ± 7 | | 1 | 1 | 300 ± 3 |",
    )
    problems = Problems()
    items = read_table("t.md", data, problems)
    assert not problems.errors
    got = [
        (
            i.cells["prompt_tokens"],
            i.cells.get("output_tokens"),
            i.cells["context_tokens"],
            i.cells.get("decode_tok_s"),
        )
        for i in items
    ]
    assert got == [("128", "32", "0", "60"), ("128", "64", "0", "59"), ("256", None, "1024", None)]


def test_table_bad_cells_are_located() -> None:
    data = _table(
        "| m | pp128 | 9,00 ± 9 | | 1 | 1 | 150 ± 2 |",
        "| m | warmup | 1 | | | | |",
        "| m | tg32 | 60 ± 1 | |",
    )
    problems = Problems()
    assert read_table("t.md", data, problems) == []
    assert [p.format() for p in problems.errors] == [
        "t.md:5: '9,00 ± 9' is not 'mean ± sd'",
        "t.md:6: test 'warmup' is not pp<N> or tg<M> (optionally '@ d<depth>')",
        "t.md:7: expected 7 cells (as in the header), found 4",
    ]


def test_table_tg_without_pp_keeps_prompt_unknown() -> None:
    problems = Problems()
    (item,) = read_table("t.md", _table("| m | tg32 @ d512 | 60 ± 1 | | | | |"), problems)
    assert item.cells["prompt_tokens"] == "unknown"
    assert "prompt length is unknown" in item.cells["notes"]


def test_read_files_reports_missing_files(tmp_path: Path) -> None:
    problems = Problems()
    assert read_files("vllm-bench", [tmp_path / "nope.json", tmp_path], problems) == []
    assert [p.message for p in problems.errors] == ["no such file", "is a folder, not a file"]

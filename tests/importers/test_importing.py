"""``python -m builder import`` end to end: metadata, validation by the check path, output paths."""

from __future__ import annotations

import csv
import io
import json
import shutil
from pathlib import Path

import pytest

from builder.cli import main
from builder.config import load_config
from builder.importers.importing import ImportOptions, build_csv, free_rel, prepare_import
from builder.review.check import check_site
from tests.conftest import MakeSite

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "import"
META = ["--recipe", "tiny", "--node", "node-a", "--engine-version", "1.0.0"]


def _run(root: Path, *args: str) -> int:
    return main(["import", "--root", str(root), *args])


def _fixture(name: str) -> str:
    return str(FIXTURES / name)


def test_vllm_three_concurrencies_into_the_conventional_file(
    make_site: MakeSite, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = make_site()
    monkeypatch.chdir(root)
    files = [_fixture(f"vllm-c{c}.json") for c in (1, 8, 32)]
    assert _run(root, "--from", "vllm-bench", *files, "--recipe", "tiny", "--contributor", "tester") == 0
    out, err = capsys.readouterr()
    assert out == "data/rows/tiny/2026-01-03-node-a.csv\n"
    assert err == ""
    with (root / "data/rows/tiny/2026-01-03-node-a.csv").open(encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert [r["concurrency"] for r in rows] == ["1", "8", "32"]
    assert {r["contributor"] for r in rows} == {"tester"}
    assert {r["flags"] for r in rows} == {"--max-model-len 4096 --kv-cache-dtype fp8"}  # from --metadata
    raw = json.loads((FIXTURES / "vllm-c8.json").read_text())
    assert rows[1]["decode_tok_s"] == repr(1000 / raw["median_tpot_ms"])
    # the written file passes check, and the DuckDB rows hold exactly the imported values
    loaded = check_site(load_config(root))
    assert loaded.errors == [] and loaded.stats["rows"] == 2 + 3


def test_out_dash_prints_csv_header_first_and_writes_nothing(
    make_site: MakeSite, capsys: pytest.CaptureFixture[str]
) -> None:
    root = make_site()
    before = sorted(p.relative_to(root) for p in root.rglob("*"))
    code = _run(
        root,
        "--from",
        "llama-benchy",
        _fixture("llama-benchy-readme.md"),
        *META,
        "--date",
        "2026-01-05",
        "--out",
        "-",
    )
    assert code == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == (
        "date,time,recipe,node,engine_version,prompt_tokens,concurrency,decode_tok_s,prefill_tok_s,ttft_ms,"
        "decode_tok_s_sd,prefill_tok_s_sd,ttft_ms_sd,output_tokens,context_tokens,harness,source,notes"
    )
    rows = list(csv.DictReader(io.StringIO(out)))
    assert [(r["context_tokens"], r["decode_tok_s"]) for r in rows] == [
        ("0", "52.94"),
        ("4096", "46.69"),
        ("8192", "40.40"),
    ]
    assert {r["date"] for r in rows} == {"2026-01-05"}
    assert sorted(p.relative_to(root) for p in root.rglob("*")) == before


def test_never_overwrites_picks_a_free_name(
    make_site: MakeSite, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = make_site()
    monkeypatch.chdir(root)
    args = ["--from", "llama-benchy", _fixture("llama-benchy.json"), *META]
    assert _run(root, *args) == 0
    first = capsys.readouterr().out.strip()
    assert first == "data/rows/tiny/2026-01-04-node-a.csv"
    # a different run on the same day and node: the conventional name is taken
    assert _run(root, *args, "--flags", "--max-model-len 4096 --kv-cache-dtype fp8") == 0
    assert capsys.readouterr().out.strip() == "data/rows/tiny/2026-01-04-node-a-2.csv"
    assert _run(root, *args, "--flags", "--max-model-len 8192") == 0
    assert capsys.readouterr().out.strip() == "data/rows/tiny/2026-01-04-node-a-3.csv"


def test_free_rel(tmp_path: Path) -> None:
    (tmp_path / "data/rows/r").mkdir(parents=True)
    (tmp_path / "data/rows/r/2026-01-01-n.csv").write_text("x")
    (tmp_path / "data/rows/r/2026-01-01-n-2.csv").write_text("x")
    assert free_rel(tmp_path, "data/rows/r/2026-01-01-n.csv", set()) == "data/rows/r/2026-01-01-n-3.csv"
    assert free_rel(tmp_path, "data/rows/r/2026-01-02-n.csv", set()) == "data/rows/r/2026-01-02-n.csv"


def test_same_rows_twice_is_refused(make_site: MakeSite, capsys: pytest.CaptureFixture[str]) -> None:
    root = make_site()
    args = ["--from", "vllm-bench", _fixture("vllm-c1.json"), "--recipe", "tiny"]
    assert _run(root, *args) == 0
    capsys.readouterr()
    assert _run(root, *args) == 1
    err = capsys.readouterr().err
    assert err.splitlines() == [
        f"data/rows/tiny/2026-01-03-node-a-2.csv:2: identical to data/rows/tiny/2026-01-03-node-a.csv:2: "
        f"already imported? (from {_fixture('vllm-c1.json')})",
        "import failed: 1 error; nothing was written",
    ]
    assert not (root / "data/rows/tiny/2026-01-03-node-a-2.csv").exists()


def test_missing_metadata_names_each_field_and_its_option(
    make_site: MakeSite, capsys: pytest.CaptureFixture[str]
) -> None:
    root = make_site()
    code = _run(root, "--from", "vllm-bench", _fixture("vllm-no-metadata.json"), _fixture("vllm-c1.json"))
    assert code == 1
    assert capsys.readouterr().err.splitlines() == [
        "missing required metadata; nothing was written:",
        "  missing recipe: pass --recipe SLUG",
        "  missing node: pass --node NODE (or benchmark with --metadata node=NODE); not recorded in "
        f"{_fixture('vllm-no-metadata.json')}",
        "  missing engine_version: pass --engine-version V (or benchmark with --metadata engine_version=V); "
        f"not recorded in {_fixture('vllm-no-metadata.json')}",
    ]
    assert not (root / "data/rows/tiny").joinpath("2026-01-03-node-a.csv").exists()


def test_table_takes_the_date_printed_under_it(
    make_site: MakeSite, capsys: pytest.CaptureFixture[str]
) -> None:
    root = make_site()
    assert _run(root, "--from", "llama-benchy", _fixture("llama-benchy-readme.md"), *META, "--out", "-") == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert {(r["date"], r["time"]) for r in rows} == {("2026-01-05", "09:30")}
    # another --date wins, and the printed time of day then belongs to no run
    assert (
        _run(
            root,
            "--from",
            "llama-benchy",
            _fixture("llama-benchy-readme.md"),
            *META,
            "--date",
            "2026-01-06",
            "--out",
            "-",
        )
        == 0
    )
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert {r["date"] for r in rows} == {"2026-01-06"} and "time" not in rows[0]


def test_printed_summary_needs_a_date(make_site: MakeSite, capsys: pytest.CaptureFixture[str]) -> None:
    root = make_site()
    assert _run(root, "--from", "vllm-bench", _fixture("vllm-printed-dennislee22.md"), *META) == 1
    assert capsys.readouterr().err.splitlines() == [
        "missing required metadata; nothing was written:",
        f"  missing date: pass --date YYYY-MM-DD; not recorded in {_fixture('vllm-printed-dennislee22.md')}",
    ]


def test_options_win_over_file_metadata(make_site: MakeSite, capsys: pytest.CaptureFixture[str]) -> None:
    root = make_site({"data/nodes.yaml": "node-a:\n  hardware: test-gpu\nnode-b:\n  hardware: test-gpu\n"})
    code = _run(
        root,
        "--from",
        "vllm-bench",
        _fixture("vllm-c1.json"),
        "--recipe",
        "tiny",
        "--node",
        "node-b",
        "--engine-version",
        "1.0.1",
        "--date",
        "2026-01-09",
        "--engine-build",
        "sha256:abc",
        "--env",
        "EXAMPLE_ENV=1",
        "--out",
        "-",
    )
    assert code == 0
    (row,) = csv.DictReader(io.StringIO(capsys.readouterr().out))
    assert (row["node"], row["engine_version"], row["date"], row["engine_build"], row["env"]) == (
        "node-b",
        "1.0.1",
        "2026-01-09",
        "sha256:abc",
        "EXAMPLE_ENV=1",
    )


def test_rows_go_through_the_check_validator(make_site: MakeSite, capsys: pytest.CaptureFixture[str]) -> None:
    root = make_site()
    files = [_fixture("vllm-c1.json"), _fixture("vllm-c8.json")]
    assert _run(root, "--from", "vllm-bench", *files, "--recipe", "nope") == 1
    rel = "data/rows/nope/2026-01-03-node-a.csv"
    assert capsys.readouterr().err.splitlines() == [
        f"{rel}:2: unknown recipe 'nope' (no content/recipes/nope.md) (from {files[0]})",
        f"{rel}:3: unknown recipe 'nope' (no content/recipes/nope.md) (from {files[1]})",
        "import failed: 2 errors; nothing was written",
    ]
    assert not (root / "data/rows/nope").exists()
    # the flags/env checks of load apply too
    assert _run(root, "--from", "vllm-bench", *files, "--recipe", "tiny", "--env", "not an env") == 1
    rel = "data/rows/tiny/2026-01-03-node-a.csv"
    assert capsys.readouterr().err.splitlines() == [
        f"{rel}:2: env: {_env_error()} (from {files[0]})",
        f"{rel}:3: env: {_env_error()} (from {files[1]})",
        "import failed: 2 errors; nothing was written",
    ]


def _env_error() -> str:
    from builder.content.flags import FlagSyntaxError, parse_env

    try:
        parse_env("not an env")
    except FlagSyntaxError as exc:
        return str(exc)
    raise AssertionError("parse_env accepted 'not an env'")


def test_wrong_format_is_a_clear_error(make_site: MakeSite, capsys: pytest.CaptureFixture[str]) -> None:
    root = make_site()
    assert _run(root, "--from", "vllm-bench", _fixture("not-a-benchmark.csv"), *META) == 1
    assert capsys.readouterr().err.splitlines() == [
        f"{_fixture('not-a-benchmark.csv')}: not vllm bench serve output: expected the JSON of --save-result "
        "or the printed summary (============ Serving Benchmark Result ============)",
        "import failed: 1 error; nothing was written",
    ]


def test_files_of_different_nodes_are_refused(make_site: MakeSite, tmp_path: Path) -> None:
    root = make_site({"data/nodes.yaml": "node-a:\n  hardware: test-gpu\nnode-b:\n  hardware: test-gpu\n"})
    other = tmp_path / "other.json"
    raw = json.loads((FIXTURES / "vllm-c8.json").read_text())
    raw["node"] = "node-b"
    other.write_text(json.dumps(raw))
    result = prepare_import(
        load_config(root), ImportOptions("vllm-bench", (FIXTURES / "vllm-c1.json", other), recipe="tiny")
    )
    assert [p.message for p in result.problems.errors] == [
        "the files name different nodes (node-a, node-b): one row file holds one run; import them separately "
        "or pass --node"
    ]


def test_explicit_out_is_never_overwritten(make_site: MakeSite, capsys: pytest.CaptureFixture[str]) -> None:
    root = make_site()
    target = root / "data/rows/tiny/2026-01-02-node-a.csv"
    before = target.read_bytes()
    assert _run(root, "--from", "vllm-bench", _fixture("vllm-c1.json"), *META, "--out", str(target)) == 1
    assert capsys.readouterr().err.splitlines()[0] == (
        "data/rows/tiny/2026-01-02-node-a.csv: already exists; import never overwrites a file (choose another --out)"
    )
    assert target.read_bytes() == before


def test_model_mismatch_warns(make_site: MakeSite, tmp_path: Path) -> None:
    root = make_site()
    other = tmp_path / "m.json"
    raw = json.loads((FIXTURES / "vllm-c8.json").read_text())
    raw["model_id"] = "someone/else"
    other.write_text(json.dumps(raw))
    result = prepare_import(load_config(root), ImportOptions("vllm-bench", (other,), recipe="tiny", out="-"))
    assert result.ok
    assert [p.message for p in result.problems.warnings] == [
        "the benchmark names model 'someone/else', not the recipe's checkpoint 'example/tiny-fp8': is --recipe right?"
    ]


def test_build_csv_lines_follow_quoted_newlines() -> None:
    data, lines = build_csv([{**_required(), "notes": "a\nb"}, _required()])
    assert lines == [2, 4]
    assert data.decode().count("\n") == 4  # header, a record over two lines, a record


def _required() -> dict[str, str]:
    return {
        "date": "2026-01-01",
        "recipe": "r",
        "node": "n",
        "engine_version": "1",
        "prompt_tokens": "1",
        "concurrency": "1",
        "decode_tok_s": "1.5",
    }


def test_bad_date_option_is_a_usage_error(make_site: MakeSite) -> None:
    root = make_site()
    with pytest.raises(SystemExit) as exc:
        _run(root, "--from", "vllm-bench", _fixture("vllm-c1.json"), "--date", "05/01/2026")
    assert exc.value.code == 2


def test_importing_into_a_copy_of_the_shipped_site(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The real site: the importer sees its recipes and nodes (nothing is written: --out -)."""
    repo = Path(__file__).resolve().parents[2]
    root = tmp_path / "site"
    shutil.copytree(repo / "content", root / "content")
    shutil.copytree(repo / "data", root / "data")
    code = _run(
        root,
        "--from",
        "llama-benchy",
        _fixture("llama-benchy.json"),
        "--recipe",
        "qwen3.6-35b-a3b-nvidia-nvfp4",
        "--node",
        "spark-01",
        "--engine-version",
        "0.24.0",
        "--out",
        "-",
    )
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "is --recipe right?" in captured.err  # the fixture's model is not that recipe's checkpoint
    assert len(captured.out.splitlines()) == 1 + 6 * 3  # one trial row per repetition


def test_open_loop_run_imports_with_its_rate_and_no_concurrency(
    make_site: MakeSite, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = make_site()
    monkeypatch.chdir(root)
    assert _run(root, "--from", "vllm-bench", _fixture("vllm-uncapped.json"), *META) == 0
    out = capsys.readouterr().out.strip()
    with (root / out).open(encoding="utf-8") as handle:
        (row,) = list(csv.DictReader(handle))
    # max_concurrency null: an open-loop run at inf, never a concurrency guessed from the prompt count
    assert (row["request_rate"], row.get("concurrency"), row.get("burstiness")) == ("inf", None, None)
    assert row["time"] == "15:15"


def test_printed_summaries_without_a_cap_name_the_option(
    make_site: MakeSite, capsys: pytest.CaptureFixture[str]
) -> None:
    root = make_site()
    fixture = _fixture("sglang-dlora-results.md")
    assert _run(root, "--from", "sglang", fixture, *META) == 1
    assert capsys.readouterr().err.splitlines() == [
        "missing required metadata; nothing was written:",
        f"  missing date: pass --date YYYY-MM-DD; not recorded in {fixture}",
        "  missing concurrency: pass --concurrency N|none (the run's --max-concurrency, none when it had no "
        "cap; or paste the command line or the 'Maximum request concurrency' line printed above the summary); "
        f"not recorded in {fixture}",
    ]
    # given, the three request rates become three open-loop rows
    assert (
        _run(
            root,
            "--from",
            "sglang",
            fixture,
            *META,
            "--concurrency",
            "none",
            "--date",
            "2025-06-01",
            "--out",
            "-",
        )
        == 0
    )
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert [(r["request_rate"], r.get("concurrency")) for r in rows] == [
        ("2.0", None),
        ("4.0", None),
        ("8.0", None),
    ]
    assert {r["harness"] for r in rows} == {"sglang bench_serving"}


def test_export_without_its_load_names_both_options(
    make_site: MakeSite, capsys: pytest.CaptureFixture[str]
) -> None:
    root = make_site()
    fixture = _fixture("genai-perf-cloudai.csv")
    assert _run(root, "--from", "aiperf", fixture, *META, "--date", "2025-06-01") == 1
    err = capsys.readouterr().err.splitlines()
    assert err[1:] == [
        "  missing load: pass --concurrency N (a closed-loop run) or --request-rate R|inf (an open-loop one); "
        f"not recorded in {fixture}"
    ]
    # a closed-loop run at 4: no request rate
    assert (
        _run(
            root,
            "--from",
            "aiperf",
            fixture,
            *META,
            "--date",
            "2025-06-01",
            "--concurrency",
            "4",
            "--out",
            "-",
        )
        == 0
    )
    (row,) = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert (row["concurrency"], row.get("request_rate")) == ("4", None)
    assert (row["ttft_ms"], row["e2el_p99_ms"]) == ("640.07", "9436.13")


@pytest.mark.parametrize(
    ("option", "value"), [("--request-rate", "0"), ("--request-rate", "fast"), ("--concurrency", "0")]
)
def test_bad_load_options_are_usage_errors(make_site: MakeSite, option: str, value: str) -> None:
    root = make_site()
    with pytest.raises(SystemExit) as exc:
        _run(root, "--from", "aiperf", _fixture("genai-perf-cloudai.csv"), option, value)
    assert exc.value.code == 2


def test_missing_fields_name_the_file_whatever_the_origin(
    make_site: MakeSite, capsys: pytest.CaptureFixture[str]
) -> None:
    root = make_site()
    fixture = _fixture("llama-bench.json")  # origins like 'llama-bench.json [0]'
    assert _run(root, "--from", "llama-bench", fixture, "--recipe", "tiny") == 1
    assert capsys.readouterr().err.splitlines()[1:] == [
        f"  missing node: pass --node NODE; not recorded in {fixture}"
    ]

"""The commands that reproduce a row or a run: the row's own serve settings, its setting, safe quoting."""

from __future__ import annotations

import datetime as dt
import shlex
from typing import Any

import pytest

from builder.content.models import ROW_FIELDS, RecipeMeta
from builder.site import reproduce as reproduce_module
from builder.site.reproduce import Reproduction, reproduce, reproduce_run

META = RecipeMeta.model_validate(
    {
        "title": "Tiny",
        "model": "example/tiny",
        "checkpoint": "example/tiny-fp8",
        "hardware": "hw",
        "engine": "vllm",
        "engine_version": "1.0.0",
        "flags": "--max-model-len 4096 --kv-cache-dtype fp8",
        "env": {"VLLM_USE_X": "1"},
    }
)
HOSTILE = "x'; rm -rf ~; echo '$(id)`id`\n# injected"


def _row(**cells: Any) -> dict[str, Any]:
    row: dict[str, Any] = dict.fromkeys(ROW_FIELDS)
    row.update(
        date=dt.date(2026, 1, 2),
        recipe="tiny",
        node="node-a",
        engine_version="1.0.0",
        prompt_tokens=2048,
        concurrency=1,
        decode_tok_s=50.0,
    )
    row.update(cells)
    return row


def _words(command: str) -> list[str]:
    """The shell words of a command, comments dropped, as a POSIX shell would split them."""
    return shlex.split(command.replace("\\\n", " "), comments=True)


def _option(words: list[str], name: str) -> str | None:
    return words[words.index(name) + 1] if name in words else None


def test_the_serve_command_has_the_rows_own_flags_and_env_not_the_recipes() -> None:
    rep = reproduce(META, "tiny", _row(flags="--max-model-len 10240", env="VLLM_USE_X=0 OTHER='a b'"))
    words = _words(rep.serve)
    assert words[:3] == ["OTHER=a b", "VLLM_USE_X=0", "vllm"]
    assert words[3:] == ["serve", "example/tiny-fp8", "--max-model-len", "10240"]
    assert "# vllm 1.0.0, build not recorded" in rep.serve
    assert not any("serve flags" in note or "environment" in note for note in rep.notes)


def test_unrecorded_flags_and_env_fall_back_to_the_recipes_and_say_so() -> None:
    rep = reproduce(META, "tiny", _row())
    words = _words(rep.serve)
    assert words == [
        "VLLM_USE_X=1",
        "vllm",
        "serve",
        "example/tiny-fp8",
        "--max-model-len",
        "4096",
        "--kv-cache-dtype",
        "fp8",
    ]
    assert "The row does not record its serve flags: the serve command has the recipe's." in rep.notes
    assert "The row does not record its environment: the serve command has the recipe's." in rep.notes


def test_vllm_bench_serve_at_the_rows_setting_with_metadata() -> None:
    rep = reproduce(
        META,
        "tiny",
        _row(harness="vllm bench serve", output_tokens=256, concurrency=8, engine_build="sha256:ab"),
    )
    assert rep.tool == "vllm bench serve"
    words = _words(rep.harness)
    assert words[:3] == ["vllm", "bench", "serve"]
    assert _option(words, "--dataset-name") == "random"
    assert _option(words, "--random-input-len") == "2048"
    assert _option(words, "--random-output-len") == "256"
    assert _option(words, "--max-concurrency") == "8"
    assert "--request-rate" not in words and "--save-result" in words
    metadata = words[words.index("--metadata") + 1 :]
    assert metadata == ["node=node-a", "engine_version=1.0.0", "engine_build=sha256:ab"]
    out = _option(words, "--result-filename")
    imp = _words(rep.import_line)
    assert imp[:6] == ["python", "-m", "builder", "import", "--from", "vllm-bench"]
    assert imp[6] == out
    assert _option(imp, "--recipe") == "tiny" and _option(imp, "--node") == "node-a"


def test_an_open_loop_row_gets_its_request_rate() -> None:
    rep = reproduce(META, "tiny", _row(harness="vllm bench serve", request_rate=2.5, burstiness=1.0))
    words = _words(rep.harness)
    assert _option(words, "--request-rate") == "2.5"
    assert _option(words, "--burstiness") == "1"
    assert _option(words, "--max-concurrency") == "1"  # the run's cap
    infinite = _words(reproduce(META, "tiny", _row(request_rate=float("inf"))).harness)
    assert _option(infinite, "--request-rate") == "inf"


def test_llama_benchy_at_the_rows_setting() -> None:
    rep = reproduce(
        META,
        "tiny",
        _row(
            harness="llama-benchy 0.3.2", output_tokens=32, context_tokens=4096, concurrency=2, repetitions=3
        ),
    )
    words = _words(rep.harness)
    assert words[0] == "llama-benchy"
    for option, value in (("--pp", "2048"), ("--tg", "32"), ("--depth", "4096"), ("--concurrency", "2")):
        assert _option(words, option) == value
    assert _option(words, "--runs") == "3" and _option(words, "--format") == "json"
    imp = _words(rep.import_line)
    assert _option(imp, "--from") == "llama-benchy" and imp[6] == _option(words, "--save-result")
    assert _option(imp, "--engine-version") == "1.0.0"  # the report cannot carry it


@pytest.mark.parametrize(
    ("engine", "program", "bench"),
    [
        ("vllm", ["vllm", "serve"], ["vllm", "bench", "serve"]),
        ("sglang", ["python", "-m", "sglang.launch_server"], ["python", "-m", "sglang.bench_serving"]),
        ("llama.cpp", ["llama-server", "-hf"], ["llama-bench"]),
    ],
)
def test_without_a_harness_the_engines_own_benchmark(
    engine: str, program: list[str], bench: list[str]
) -> None:
    rep = reproduce(META, "tiny", _row(engine=engine, output_tokens=128))
    assert _words(rep.serve)[1 : 1 + len(program)] == program
    assert _words(rep.harness)[: len(bench)] == bench
    assert any("does not record its benchmark tool" in note for note in rep.notes)


def test_what_the_row_does_not_record_is_left_out_and_said() -> None:
    rep = reproduce(
        META, "tiny", _row(prompt_tokens=None, engine_version="unknown", harness="vllm bench serve")
    )
    words = _words(rep.harness)
    assert "--random-input-len" not in words and "--random-output-len" not in words
    assert not any(w.startswith("engine_version=") for w in words)
    assert any("prompt length" in note for note in rep.notes)
    assert any("output length" in note for note in rep.notes)
    assert any("engine version" in note for note in rep.notes)
    assert "--engine-version" not in _words(rep.import_line)


def test_sglang_bench_serving_and_its_import_line_dates_the_run() -> None:
    rep = reproduce(META, "tiny", _row(engine="sglang", output_tokens=128, concurrency=16))
    assert rep.tool == "sglang bench_serving"
    words = _words(rep.harness)
    assert words[:3] == ["python", "-m", "sglang.bench_serving"] and "--port" not in words  # its default
    assert _option(words, "--max-concurrency") == "16" and _option(words, "--random-output-len") == "128"
    imp = _words(rep.import_line)
    assert _option(imp, "--from") == "sglang" and imp[6] == _option(words, "--output-file")
    # its JSON Lines record no date: the shell gives the day of the import
    assert _option(imp, "--date") == "$(date -u +%F)"
    assert '--date "$(date -u +%F)"' in rep.import_line


@pytest.mark.parametrize(
    ("cells", "profile"),
    [
        ({"concurrency": 4}, ["--rate-type", "concurrent", "--rate", "4"]),
        (
            {"concurrency": None, "request_rate": 2.5, "burstiness": 1.0},
            ["--rate-type", "poisson", "--rate", "2.5"],
        ),
        ({"concurrency": None, "request_rate": 2.5}, ["--rate-type", "constant", "--rate", "2.5"]),
        ({"concurrency": None, "request_rate": float("inf")}, ["--rate-type", "throughput"]),
        ({"concurrency": 8, "request_rate": float("inf")}, ["--rate-type", "concurrent", "--rate", "8"]),
    ],
)
def test_guidellm_at_the_rows_setting(cells: dict[str, Any], profile: list[str]) -> None:
    rep = reproduce(META, "tiny", _row(harness="guidellm 0.4.0", output_tokens=128, **cells))
    assert rep.tool == "guidellm"
    words = _words(rep.harness)
    assert words[:4] == ["guidellm", "benchmark", "--target", "http://127.0.0.1:8000"]
    start = words.index("--rate-type")
    assert words[start : start + len(profile)] == profile
    assert _option(words, "--data") == "prompt_tokens=2048,output_tokens=128"
    imp = _words(rep.import_line)
    assert _option(imp, "--from") == "guidellm" and imp[6] == _option(words, "--output-path")


def test_guidellm_before_0_7_says_it_cannot_cap_a_rate() -> None:
    rep = reproduce(META, "tiny", _row(harness="guidellm 0.6.1", request_rate=2.5, concurrency=4))
    assert "--rate-type constant --rate 2.5" in rep.harness
    assert (
        "guidellm cannot cap the concurrency of a run at a rate: the command sets the rate only." in rep.notes
    )


@pytest.mark.parametrize(
    ("cells", "profile"),
    [
        ({"concurrency": 4}, "kind=concurrent,streams=4"),
        ({"concurrency": None, "request_rate": 2.5, "burstiness": 1.0}, "kind=poisson,rate=2.5"),
        ({"concurrency": 4, "request_rate": 2.5}, "kind=constant,rate=2.5,max_concurrency=4"),
        ({"concurrency": None, "request_rate": float("inf")}, "kind=throughput"),
        ({"concurrency": 8, "request_rate": float("inf")}, "kind=concurrent,streams=8"),
    ],
)
@pytest.mark.parametrize("harness", ["guidellm 0.7.0", "guidellm 0.8.1", "guidellm"])
def test_guidellm_from_0_7_runs_with_guidellm_run(harness: str, cells: dict[str, Any], profile: str) -> None:
    # GuideLLM 0.7 dropped `guidellm benchmark`; a row that names no version gets today's CLI
    rep = reproduce(META, "tiny", _row(harness=harness, output_tokens=128, **cells))
    words = _words(rep.harness)
    assert words[:2] == ["guidellm", "run"] and "benchmark" not in words
    assert (
        _option(words, "--backend") == "kind=openai_http,target=http://127.0.0.1:8000,model=example/tiny-fp8"
    )
    assert _option(words, "--profile") == profile
    assert _option(words, "--data") == "kind=synthetic_text,prompt_tokens=2048,output_tokens=128"
    assert _option(words, "--constraint") == "kind=max_duration,seconds=60"
    out = _option(words, "--output")
    assert out.startswith("kind=json,path=")
    assert _words(rep.import_line)[6] == out.removeprefix("kind=json,path=")
    assert not any("cannot cap" in note for note in rep.notes)


@pytest.mark.parametrize(
    ("cells", "prompts"),
    [
        ({"concurrency": 1}, "10"),
        ({"concurrency": 16}, "160"),
        ({"concurrency": 256}, "500"),
        ({"concurrency": None, "request_rate": 2.5}, "150"),
        ({"concurrency": None, "request_rate": 0.05}, "10"),
        ({"concurrency": None, "request_rate": float("inf")}, "100"),
    ],
)
@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_serving_benchmarks_send_a_few_prompts_not_the_default_thousand(
    engine: str, cells: dict[str, Any], prompts: str
) -> None:
    rep = reproduce(META, "tiny", _row(engine=engine, output_tokens=128, **cells))
    assert _option(_words(rep.harness), "--num-prompts") == prompts


@pytest.mark.parametrize("harness", ["aiperf 0.1.1", "genai-perf"])
def test_aiperf_at_the_rows_setting_for_aiperf_and_genai_perf_rows(harness: str) -> None:
    meta = META.model_copy(update={"served_model": "tiny"})
    rep = reproduce(meta, "tiny", _row(harness=harness, output_tokens=64, concurrency=2, request_rate=1.5))
    assert rep.tool == "aiperf"
    words = _words(rep.harness)
    assert words[:2] == ["aiperf", "profile"]
    for option, value in (
        ("--model", "tiny"),
        ("--tokenizer", "example/tiny-fp8"),
        ("--synthetic-input-tokens-mean", "2048"),
        ("--output-tokens-mean", "64"),
        ("--concurrency", "2"),
        ("--request-rate", "1.5"),
        ("--artifact-dir", "tiny-p2048-o64-c2-r1.5"),
    ):
        assert _option(words, option) == value, option
    imp = _words(rep.import_line)
    assert _option(imp, "--from") == "aiperf"
    assert imp[6] == "tiny-p2048-o64-c2-r1.5/profile_export_aiperf.json"
    assert "--date" not in imp and "--concurrency" not in imp  # the JSON export records both
    said = "The row was measured with genai-perf: the command runs its successor AIPerf."
    assert (said in rep.notes) == (harness == "genai-perf")


def test_the_tools_the_importers_name_are_known() -> None:
    known = reproduce_module._known_tool
    assert known("guidellm 0.4.0") == "guidellm" and known("aiperf 0.1.1") == "aiperf"
    assert known("genai-perf") == "aiperf" and known("llama-bench b5000") == "llama-bench"
    assert (
        known("llama-benchy 0.3.2") == "llama-benchy"
        and known("sglang bench_serving") == "sglang bench_serving"
    )


def test_a_harness_the_site_has_no_command_for_falls_back_to_the_engines_own() -> None:
    rep = reproduce(META, "tiny", _row(harness="curl (manual timing)"))
    assert rep.tool == "vllm bench serve" and rep.harness.startswith("vllm bench serve")
    assert (
        "The row was measured with curl (manual timing), for which the site has no command: "
        "the commands use vllm bench serve, vllm's own benchmark." in rep.notes
    )


@pytest.mark.parametrize(
    "cells",
    [
        {"flags": f"--served-model-name {shlex.quote(HOSTILE)}", "env": f"X={shlex.quote(HOSTILE)}"},
        {"engine_version": HOSTILE, "engine_build": HOSTILE, "harness": f"llama-benchy {HOSTILE}"},
        {"node": HOSTILE, "engine": HOSTILE, "flags": "--a 'unclosed"},
        {"harness": HOSTILE, "env": "NOT A=B"},
    ],
)
def test_no_cell_becomes_a_command(cells: dict[str, Any]) -> None:
    """Every data value stays one shell word (or inside a one-line comment): the script splits into
    exactly the commands the builder wrote, whatever the cells hold."""
    rep = reproduce(META, "tiny", _row(**cells))
    script = rep.text()
    for line in script.splitlines():
        if line.startswith("#"):
            continue
        # a command line is a continuation of the one above, or starts a command the builder writes
        assert line.startswith(("  ", "vllm ", "llama", "python -m ", "VLLM_USE_X=", "X=", "'")), line
    for command in (rep.serve, rep.harness, rep.import_line):
        lexer = shlex.shlex(command.replace("\\\n", " "), posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        lexer.commenters = "#"
        tokens = list(lexer)
        assert not {";", "&&", "||", "|", "&", "$(", "`"} & set(tokens), tokens


def test_text_is_the_three_commands_with_notes_as_comments() -> None:
    rep = Reproduction("serve", "bench", "import", ("a note\nwith a newline",), "tool")
    assert rep.text() == (
        "# a note\\nwith a newline\n# 1. serve\nserve\n# 2. benchmark\nbench\n"
        "# 3. import the result as a row file\nimport\n"
    )


def test_sglang_has_no_burstiness_option_and_says_so() -> None:
    # SGLang's bench_serving (0.5.23's help, tests/fixtures/harness/cli) sends Poisson arrivals only
    poisson = reproduce(META, "tiny", _row(engine="sglang", request_rate=2.5, burstiness=1.0))
    assert "--burstiness" not in poisson.harness and not any("burstiness" in n for n in poisson.notes)
    bursty = reproduce(META, "tiny", _row(engine="sglang", request_rate=2.5, burstiness=0.5))
    assert "--burstiness" not in bursty.harness
    assert (
        "sglang bench_serving sends Poisson arrivals (burstiness 1): it cannot set the row's burstiness 0.5."
        in bursty.notes
    )
    assert "--burstiness 0.5" in reproduce(META, "tiny", _row(request_rate=2.5, burstiness=0.5)).harness


def _commands(script: str) -> list[str]:
    """The commands of a script, comments dropped, each with its continuation lines (for scripts
    whose words hold no line break)."""
    commands: list[str] = []
    going = False
    for line in script.splitlines():
        if line.startswith("#") and not going:
            continue
        commands[-1:] = [commands[-1] + "\n" + line] if going else [*commands[-1:], line]
        going = line.endswith("\\")
    return commands


SWEEP = [  # a run: three settings, two trials of the first, the last 1,024 tokens deep
    _row(prompt_tokens=512, concurrency=1, decode_tok_s=50.0),
    _row(prompt_tokens=512, concurrency=1, decode_tok_s=50.4),
    _row(prompt_tokens=512, concurrency=4, decode_tok_s=40.0),
    _row(prompt_tokens=512, concurrency=4, context_tokens=1024, decode_tok_s=38.0),
]


def test_a_run_has_its_serve_command_once_and_a_benchmark_per_setting() -> None:
    run = reproduce_run(META, "tiny", SWEEP, [2, 3, 4, 5])
    reps = [reproduce(META, "tiny", row) for row in SWEEP]
    [serving] = run.servings
    assert serving.serve == reps[0].serve and serving.lines == (2, 3, 4, 5)
    # the trials share one command; each command is the one its rows' own reproduction gives
    assert [(b.command, b.lines) for b in serving.benchmarks] == [
        (reps[0].harness, (2, 3)),
        (reps[2].harness, (4,)),
        (reps[3].harness, (5,)),
    ]
    script = run.text()
    assert script.count(reps[0].serve) == 1
    assert _commands(script) == [
        reps[0].serve.split("\n", 1)[1],
        *(b.command for b in serving.benchmarks),
        *serving.imports,
    ]
    assert "# lines 2-3\n" + reps[0].harness in script and "# line 5\n" + reps[3].harness in script


def test_a_runs_import_line_is_a_rows_with_every_output() -> None:
    run = reproduce_run(META, "tiny", SWEEP, [2, 3, 4, 5])
    [line] = run.servings[0].imports
    reps = [reproduce(META, "tiny", row) for row in SWEEP]
    outs = list(dict.fromkeys(_words(rep.import_line)[6] for rep in reps))
    assert len(outs) == 3  # one a setting
    own = _words(reps[0].import_line)
    assert _words(line) == [*own[:6], *outs, *own[7:]]
    # a run of one row: the row's own import line
    assert reproduce_run(META, "tiny", SWEEP[:1], [2]).servings[0].imports == (reps[0].import_line,)


def test_a_runs_notes_are_said_once_with_the_lines_they_concern() -> None:
    run = reproduce_run(META, "tiny", SWEEP, [2, 3, 4, 5])
    notes = dict(run.servings[0].notes)
    reps = [reproduce(META, "tiny", row) for row in SWEEP]
    assert set(notes) == {note for rep in reps for note in rep.notes}
    assert notes["The row does not record its serve flags: the serve command has the recipe's."] == ()
    [deep] = [note for note in reps[3].notes if "tokens deep" in note]
    assert notes[deep] == (5,)
    script = run.text()
    assert script.count(deep) == 1 and f"# line 5: {deep}\n" in script


def test_rows_of_one_file_with_two_servers_get_a_serve_command_each() -> None:
    rows = [*SWEEP[:2], _row(flags="--max-model-len 10240", prompt_tokens=512, concurrency=1)]
    run = reproduce_run(META, "tiny", rows, [2, 3, 4])
    assert [s.serve for s in run.servings] == [
        reproduce(META, "tiny", row).serve for row in (rows[0], rows[2])
    ]
    assert [s.lines for s in run.servings] == [(2, 3), (4,)]
    script = run.text()
    assert "# the rows on lines 2-3:" in script and "# the rows on line 4:" in script

"""Every command the site prints, pasted into a shell, runs exactly the arguments it was built from.

The two cases of issue 32 (a pull request that passes ``check --strict`` and makes readers who paste
the recipe page's commands run its shell code) on a built site, and a property test over hostile
values in every field that reaches a command, each printed command run through ``bash`` with stub
programs that record what they receive (:mod:`tests.bashstub`).
"""

from __future__ import annotations

import json
import shlex
import shutil
import textwrap
from pathlib import Path
from typing import Any

import pytest
from bs4 import BeautifulSoup
from hypothesis import HealthCheck, Phase, assume, given, settings
from hypothesis import strategies as st

from builder.config import load_config
from builder.content.flags import flag_map, is_hub_id, parse_flags, serve_command, serve_program, split_args
from builder.content.models import ROW_FIELDS, SLUG_PATTERN, RecipeMeta
from builder.engine.incremental import build
from builder.site import reproduce as rep
from builder.site.views import api_example
from tests.bashstub import TODAY, Call, run_bash
from tests.conftest import SITES

HOSTILE_MODEL = "'$(touch pwned)'"
HOSTILE_FLAGS = "--chat-template='$(touch pwned)' --trust-remote-code;touch"
HONEST_FLAGS = """--speculative-config='{"method": "mtp"}'"""


def _recipe(served_model: str, flags: str) -> str:
    # YAML double-quoted scalars: json.dumps writes one for any text
    return textwrap.dedent(
        f"""\
        ---
        title: Tiny model on a test GPU
        model: example/tiny
        checkpoint: example/tiny-fp8
        served_model: {json.dumps(served_model)}
        hardware: test-gpu
        engine: vllm
        engine_version: "1.0.0"
        flags: {json.dumps(flags)}
        env:
          EXAMPLE_ENV: "1"
        verified: 2026-01-02
        contributors: ["test-author"]
        summary: A synthetic recipe used by the test-suite.
        ---
        Synthetic test recipe; no figure here is real.
        """
    )


@pytest.fixture(scope="module")
def hostile_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The minimal site with the issue's hostile served model and flags, built."""
    root = tmp_path_factory.mktemp("hostile") / "root"
    shutil.copytree(SITES / "minimal", root)
    (root / "content/recipes/tiny.md").write_text(_recipe(HOSTILE_MODEL, HOSTILE_FLAGS), encoding="utf-8")
    out = root.parent / "out"
    build(load_config(root, out), cache=False)  # raises on any error
    return out


def _codes(page: Path) -> list[str]:
    soup = BeautifulSoup(page.read_text(encoding="utf-8"), "html.parser")
    return [code.get_text() for code in soup.select("pre.code code")]


def test_the_pages_api_example_sends_the_served_model_as_data(hostile_site: Path, tmp_path: Path) -> None:
    [api] = [c for c in _codes(hostile_site / "recipes/tiny/index.html") if c.startswith("curl")]
    calls, stderr = run_bash(api, tmp_path)
    assert stderr == ""
    [call] = calls
    assert call.argv[:6] == [
        "curl",
        "-s",
        "http://127.0.0.1:8000/v1/chat/completions",
        "-H",
        "Content-Type: application/json",
        "-d",
    ]
    assert json.loads(call.argv[6])["model"] == HOSTILE_MODEL
    assert len(call.argv) == 7


@pytest.mark.parametrize("where", ["page", "api"])
def test_the_serve_command_passes_each_flag_as_one_argument(
    hostile_site: Path, tmp_path: Path, where: str
) -> None:
    if where == "page":
        [command] = [c for c in _codes(hostile_site / "recipes/tiny/index.html") if "vllm serve" in c]
    else:
        command = json.loads((hostile_site / "api/recipes/tiny.json").read_text(encoding="utf-8"))[
            "serve_command"
        ]
    calls, stderr = run_bash(command, tmp_path, env_names=("EXAMPLE_ENV",))
    assert stderr == ""
    assert calls == [
        Call(
            [
                "vllm",
                "serve",
                "example/tiny-fp8",
                "--chat-template=$(touch pwned)",
                "--trust-remote-code;touch",
            ],
            {"EXAMPLE_ENV": "1"},
        )
    ]


def test_an_honest_json_flag_prints_and_round_trips(tmp_path: Path) -> None:
    args = split_args(HONEST_FLAGS)
    assert args == ('--speculative-config={"method": "mtp"}',)
    command = serve_command("org/model", args, {}, "vllm")
    assert command == """vllm serve org/model \\\n  '--speculative-config={"method": "mtp"}'"""
    calls, stderr = run_bash(command, tmp_path)
    assert stderr == ""
    assert calls == [Call(["vllm", "serve", "org/model", *args], {})]
    printed = shlex.join(calls[0].argv[3:])
    assert flag_map(printed) == flag_map(HONEST_FLAGS) == {"--speculative-config": '{"method":"mtp"}'}


# Fragments a hostile value is made of: quoting, substitution, separators, globs, newlines and
# names of stub programs (so a command that escaped would show in the log), with unicode around.
FRAGMENTS = st.sampled_from(
    [
        "'",
        '"',
        "\\",
        "$(touch pwned)",
        "`id`",
        "${PATH}",
        "$HOME",
        ";",
        "&&",
        "||",
        "|",
        "&",
        "\n",
        "\r",
        "\t",
        " ",
        "*",
        "?",
        "[a]",
        "{a,b}",
        "~",
        "#",
        "!",
        "<",
        ">",
        "=",
        "--",
        "-x",
        "rm -rf ~",
        "curl",
        "vllm",
        "é",
        "\u202e",
        "\u2028",
        "日本",
        "🙂",
    ]
)
HOSTILE = st.lists(
    st.one_of(
        FRAGMENTS, st.text(st.characters(exclude_characters="\x00", exclude_categories=("Cs",)), max_size=4)
    ),
    min_size=1,
    max_size=6,
).map("".join)
# The site writes commands for an engine it knows by its own program; an unknown one is run by name.
ENGINES = st.one_of(st.sampled_from(["vllm", "sglang", "llama.cpp"]), HOSTILE.filter(lambda e: "/" not in e))
# Prefixed: bash ignores some variables from its environment (PS4 as root), which the stubs are.
ENV_NAMES = st.from_regex(r"[A-Z0-9_]{0,6}", fullmatch=True).map(lambda name: "X_" + name)
TOOLS = st.sampled_from([None, *rep.IMPORT_FORMATS])
# No shrinking: each example runs bash a few times, and a failing one is reported as found.
FEW = settings(
    phases=(Phase.explicit, Phase.reuse, Phase.generate),
    max_examples=25,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)


def _flags_text(values: list[str]) -> str:
    return " ".join(f"--opt-{i} {shlex.quote(v)}" for i, v in enumerate(values))


def _argv(groups: rep.Groups) -> list[str]:
    """The arguments a command of ``groups`` means (``$(date -u +%F)`` is the date stub's output)."""
    return [TODAY if word == rep.TODAY else str(word) for group in groups for word in group]


def _expected(meta: RecipeMeta, slug: str, rows: list[dict[str, Any]]) -> tuple[list[list[str]], list[str]]:
    """The argument lists the reproduce commands of ``rows`` (one row, or the rows of one run) are
    printed from (the server's, a benchmark's per row, the import's for every output), and the files
    the commands themselves write (llama-bench's output, by redirection)."""
    notes: list[str] = []
    row = rows[0]
    engine = str(row.get("engine") or meta.engine)
    serve = [*serve_program(engine), meta.checkpoint, *split_args(row["flags"])]
    tool, *_ = rep.benchmark_commands(meta, slug, row)
    benchmarks, outs, written = [], [], []
    for each in rows:
        harness, out = rep._harness(meta, slug, each, tool, rep._setting(each), notes)
        harness_argv = _argv(harness)
        if ">" in harness_argv:
            written.append(harness_argv[-1])
            harness_argv = harness_argv[: harness_argv.index(">")]
        benchmarks.append(harness_argv)
        outs.append(out)
    import_line = rep._import_line(slug, row, tool, outs, notes)
    date = [["date", "-u", "+%F"]] if any(rep.TODAY in group for group in import_line) else []
    return [serve, *benchmarks, *date, _argv(import_line)], written


@FEW
@given(
    checkpoint=st.tuples(HOSTILE, HOSTILE).map("/".join),
    served_model=st.one_of(st.none(), HOSTILE),
    engine=ENGINES,
    flag_values=st.lists(HOSTILE, max_size=3),
    env=st.dictionaries(ENV_NAMES, HOSTILE, max_size=2),
    node=HOSTILE,
    version=HOSTILE,
    build=st.one_of(st.none(), HOSTILE),
    tool=TOOLS,
    slug=st.from_regex(SLUG_PATTERN, fullmatch=True).filter(lambda s: len(s) < 40),
)
def test_every_printed_command_runs_exactly_its_arguments(
    tmp_path_factory: pytest.TempPathFactory,
    checkpoint: str,
    served_model: str | None,
    engine: str,
    flag_values: list[str],
    env: dict[str, str],
    node: str,
    version: str,
    build: str | None,
    tool: str | None,
    slug: str,
) -> None:
    assume(engine.strip() and engine not in (".", ".."))
    assume(is_hub_id(checkpoint))  # else the commands say it is not recorded
    folder = tmp_path_factory.mktemp("bash")
    flags = _flags_text(flag_values)
    meta = RecipeMeta.model_validate(
        {
            "title": "t",
            "model": "m",
            "checkpoint": checkpoint,
            "served_model": served_model,
            "hardware": "hw",
            "engine": engine,
            "engine_version": "1",
            "flags": flags,
            "env": env,
        }
    )
    env_text = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
    row: dict[str, Any] = dict.fromkeys(ROW_FIELDS)
    row.update(
        recipe=slug,
        node=node,
        engine_version=version,
        engine_build=build,
        flags=flags,
        env=env_text,
        harness=tool,
        prompt_tokens=512,
        output_tokens=64,
        concurrency=2,
    )
    programs = (engine,)
    names = tuple(env)
    expected, written = _expected(meta, slug, [row])
    script = rep.reproduce(meta, slug, row).text()
    calls, stderr = run_bash(script, folder, programs=programs, env_names=names, writes=tuple(written))
    assert stderr == ""
    assert [c.argv for c in calls] == expected
    assert calls[0].env == env  # the server gets the environment, nothing else does
    assert all(c.env == {} for c in calls[1:])
    printed_flags = calls[0].argv[len(serve_program(engine)) + 1 :]
    assert parse_flags(shlex.join(printed_flags)) == parse_flags(flags)

    # a run's script (the recipe page's): one server, a benchmark per setting, one import of them all
    run = [row, {**row, "concurrency": 4}]
    expected, written = _expected(meta, slug, run)
    script = rep.reproduce_run(meta, slug, run, [2, 3]).text()
    calls, stderr = run_bash(script, folder, programs=programs, env_names=names, writes=tuple(written))
    assert stderr == ""
    assert [c.argv for c in calls] == expected
    assert calls[0].env == env and all(c.env == {} for c in calls[1:])

    # the recipe page's serve command and API example
    page = serve_command(checkpoint, split_args(flags), env, engine)
    calls, stderr = run_bash(page, folder, programs=programs, env_names=names)
    assert stderr == ""
    assert calls == [Call([*serve_program(engine), checkpoint, *split_args(flags)], env)]
    # the API example: the served model, else the checkpoint
    api = api_example(meta)
    assert api is not None
    calls, stderr = run_bash(api, folder)
    assert stderr == ""
    [call] = calls
    url = "http://127.0.0.1:8000/v1/chat/completions"
    assert call.argv[:-1] == ["curl", "-s", url, "-H", "Content-Type: application/json", "-d"]
    assert json.loads(call.argv[-1])["model"] == (served_model or checkpoint)

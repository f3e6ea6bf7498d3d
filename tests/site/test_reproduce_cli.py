"""Every option of a printed benchmark command is one the tool accepts.

The tools' help, as each prints it, is recorded in tests/fixtures/harness/cli/ by
bench/harness/run_harnesses.py (the pinned version it installs; llama-bench, a C++ program, from the usage
block of its README). Each command ``reproduce`` prints, for rows at every kind of load, is split into
words and each option checked against that help: an option the tool dropped or renamed fails here.
With the harness venvs at hand (``HARNESS_VENVS``, as the script makes them), GuideLLM's own click
parser parses the command too.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from pathlib import Path
from typing import Any

import pytest

from builder.site.reproduce import reproduce
from tests.site.test_reproduce import META, _row

CLI = Path(__file__).resolve().parents[1] / "fixtures" / "harness" / "cli"
OPTION = re.compile(r"(?<![\w-])(--?[A-Za-z][\w-]*)")

# tool as the importers write it in ``harness`` -> (its help file, the words that start its command)
TOOLS: dict[str, tuple[str, tuple[str, ...]]] = {
    "llama-benchy 0.4.0": ("llama-benchy-0.4.0.txt", ("llama-benchy",)),
    "guidellm 0.7.0": ("guidellm-0.7.0.txt", ("guidellm", "run")),
    "guidellm 0.8.1": ("guidellm-0.8.1.txt", ("guidellm", "run")),
    "aiperf 0.13.0": ("aiperf-0.13.0.txt", ("aiperf", "profile")),
    "llama-bench b7000": ("llama-bench-readme.txt", ("llama-bench",)),
    "vllm bench serve": ("vllm-0.34.0.txt", ("vllm", "bench", "serve")),
    "sglang bench_serving": ("sglang-0.5.23.txt", ("python", "-m", "sglang.bench_serving")),
}
LOADS: list[dict[str, Any]] = [
    {"concurrency": 1},
    {"concurrency": 16},
    {"concurrency": None, "request_rate": 2.5, "burstiness": 1.0},
    {"concurrency": None, "request_rate": 2.5, "burstiness": 0.5},
    {"concurrency": 8, "request_rate": 4.0},
    {"concurrency": None, "request_rate": float("inf")},
    {"concurrency": 8, "request_rate": float("inf")},
]
SERVED = [META, META.model_copy(update={"served_model": "tiny"})]


def _options(help_text: str) -> set[str]:
    return set(OPTION.findall(help_text))


def _command_words(command: str) -> list[str]:
    words = shlex.split(command.replace("\\\n", " "))
    return words[: words.index(">")] if ">" in words else words


def _flags(words: list[str], start: int) -> list[str]:
    return [
        word.split("=", 1)[0]
        for word in words[start:]
        if word.startswith("-") and not re.fullmatch(r"-?\d+(\.\d+)?", word)
    ]


def _commands(harness: str) -> list[str]:
    return [
        reproduce(meta, "tiny", _row(harness=harness, output_tokens=128, context_tokens=0, **load)).harness
        for meta in SERVED
        for load in LOADS
    ]


@pytest.mark.parametrize("harness", sorted(TOOLS))
def test_every_option_of_a_printed_command_is_one_the_tool_accepts(harness: str) -> None:
    name, start = TOOLS[harness]
    path = CLI / name
    if not path.exists():
        pytest.skip(f"no recorded help for {harness} (bench/harness/run_harnesses.py records it)")
    accepted = _options(path.read_text())
    for command in _commands(harness):
        words = _command_words(command)
        assert tuple(words[: len(start)]) == start, command
        unknown = [flag for flag in _flags(words, len(start)) if flag not in accepted]
        assert unknown == [], f"{harness}: {unknown} not in {name}\n{command}"


def test_the_check_fails_on_an_option_the_tool_does_not_have() -> None:
    accepted = _options((CLI / "guidellm-0.8.1.txt").read_text())
    old = reproduce(META, "tiny", _row(harness="guidellm 0.6.1", concurrency=4)).harness
    flags = _flags(_command_words(old), 2)
    assert "--rate-type" in flags and "--rate-type" not in accepted  # 0.6's CLI is not 0.8's
    assert "--profile" in accepted and "--backend" in accepted


VENVS = os.environ.get("HARNESS_VENVS")


@pytest.mark.parametrize("version", ["0.7.0", "0.8.1"])
def test_guidellm_parses_the_printed_commands(version: str) -> None:
    python = Path(VENVS or "-") / f"guidellm-{version}" / "bin" / "python"
    if not python.exists():
        pytest.skip(f"GuideLLM {version}'s venv is not at hand (HARNESS_VENVS)")
    program = (
        "import shlex, sys\n"
        "from guidellm.__main__ import cli\n"
        "for line in sys.stdin.read().split('\\0'):\n"
        "    words = shlex.split(line)\n"
        "    ctx = cli.make_context('guidellm', words[1:])\n"
        "    cli.get_command(ctx, words[1]).make_context(words[1], words[2:], parent=ctx)\n"
    )
    commands = [" ".join(shlex.quote(w) for w in _command_words(c)) for c in _commands(f"guidellm {version}")]
    done = subprocess.run(
        [str(python), "-c", program], input="\0".join(commands), capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]

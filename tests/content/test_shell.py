"""The one printer of shell commands: every word quoted, the program never read as syntax."""

from __future__ import annotations

import shlex

import pytest

from builder.content.shell import UnsafeCommand, Verbatim, shell_command


def test_each_group_is_a_line_and_each_word_is_quoted() -> None:
    command = shell_command([["vllm", "serve", "a b"], ["--x", "$(id)"]], {"B": "two words", "A": "1"})
    assert command == "A=1 \\\nB='two words' \\\nvllm serve 'a b' \\\n  --x '$(id)'"
    assert shlex.split(command.replace("\\\n", " ")) == [
        "A=1",
        "B=two words",
        "vllm",
        "serve",
        "a b",
        "--x",
        "$(id)",
    ]


@pytest.mark.parametrize("program", ["A=b", "PATH=/tmp", "if", "time", "function"])
def test_a_program_that_would_read_as_an_assignment_or_a_keyword_is_quoted(program: str) -> None:
    command = shell_command([[program, "serve"]])
    assert command.startswith("'") and shlex.split(command) == [program, "serve"]


def test_later_words_that_look_like_assignments_stay_readable() -> None:
    assert shell_command([["guidellm", "--data", "prompt_tokens=1"]]) == "guidellm --data prompt_tokens=1"


def test_verbatim_words_are_the_builders_own_shell_text() -> None:
    assert shell_command([["date", Verbatim(">"), "a b"]]) == "date > 'a b'"


@pytest.mark.parametrize("name", ["X;id", "1X", "A-B", "", "A B"])
def test_an_environment_name_the_shell_would_run_is_refused(name: str) -> None:
    with pytest.raises(UnsafeCommand, match="is not an environment variable name"):
        shell_command([["vllm"]], {name: "1"})

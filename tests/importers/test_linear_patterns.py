"""The importers' patterns over a file's text are linear in it (issue 32): a line of many mentions of
the program without its option, or a long line of blanks, no longer takes quadratic time."""

from __future__ import annotations

import time
from collections.abc import Callable

from builder.importers import benchy_table, llama_bench, option_on_command_line, printed

SMALL, LARGE = 25_000, 200_000


def _cost(scan: Callable[[str], object], text: str) -> float:
    best = float("inf")
    for _ in range(2):
        start = time.process_time()
        scan(text)
        best = min(best, time.process_time() - start)
    return max(best, 1e-4)


def _grows_linearly(scan: Callable[[str], object], unit: str) -> None:
    """``scan`` on ``unit`` repeated costs about as much more at 8× the size as plain text does."""
    plain = "x" * len(unit)
    small = _cost(scan, unit * (SMALL // len(unit))) / _cost(scan, plain * (SMALL // len(unit)))
    large = _cost(scan, unit * (LARGE // len(unit))) / _cost(scan, plain * (LARGE // len(unit)))
    assert large < 3 * small, (small, large)


def test_an_option_after_a_program_named_many_times_on_one_line() -> None:
    for program, option, unit in (
        (llama_bench._PROGRAM_RE, llama_bench._REPS_RE, "llama-bench "),
        (benchy_table._PROGRAM_RE, benchy_table._RUNS_RE, "llama-benchy "),
    ):
        _grows_linearly(lambda text, p=program, o=option: option_on_command_line(text, p, o), unit)


def test_the_option_is_found_after_the_program_on_its_line() -> None:
    text = "run: ./llama-bench -m x.gguf -p 512 -r 5\n-r 9 llama-benchy --runs 3"
    assert option_on_command_line(text, llama_bench._PROGRAM_RE, llama_bench._REPS_RE) == "5"
    assert option_on_command_line(text, benchy_table._PROGRAM_RE, benchy_table._RUNS_RE) == "3"
    assert option_on_command_line("-r 5 llama-bench", llama_bench._PROGRAM_RE, llama_bench._REPS_RE) is None


def test_a_long_line_of_blanks_is_read_in_linear_time() -> None:
    _grows_linearly(lambda text: printed._LINE_RE.match(text), " ")
    match = printed._LINE_RE.match("  Successful requests:   100  ")
    assert match is not None and (match["label"], match["value"]) == ("Successful requests", "100")

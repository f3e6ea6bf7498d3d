"""Problems print safely in every format, whatever input they quote."""

from __future__ import annotations

from builder.errors import MESSAGE_LIMIT, Problem


def test_a_problem_escapes_control_characters_and_surrogates_and_is_cut() -> None:
    problem = Problem("data/rows/x-\udcff.csv", 1, "unknown column 'A=1\x00B=2\nC=3\x1b[31m'")
    assert problem.path == "data/rows/x-\\udcff.csv"
    assert problem.message == "unknown column 'A=1\\x00B=2\\nC=3\\x1b[31m'"
    problem.format().encode("utf-8")  # printable: no lone surrogate left
    long = Problem("x", None, "y" * 10_000)
    assert len(long.message) == MESSAGE_LIMIT and long.message.endswith("…")
    assert Problem("x", 2, "tab\tstays").message == "tab\tstays"

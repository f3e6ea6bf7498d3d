"""The scans of a body for figures are linear in its size, whatever it holds (issue 32).

A body of many ``{{`` with no ``}}`` (and unmatched backticks, link targets and ``<http`` with no
close) was scanned in quadratic time: 800 KB took minutes. Timing on a shared machine is noisy, so
the test compares the hostile body with plain prose of the same size, at 100 KB and at 800 KB, in
CPU time of this process: linear scans keep the two ratios about equal, a quadratic one multiplies
the second by about eight.
"""

from __future__ import annotations

import time

from builder.content.figures import _without_code_spans, _without_hidden, plain_figures
from builder.content.markdown import Markdown

HOSTILE_UNIT = "{{ ` ](x <http://a "
PLAIN_UNIT = "The quick brown fox "
SMALL, LARGE = 100_000, 800_000


def _body(unit: str, size: int) -> str:
    # a figure at the start, so both bodies take the whole path (the markdown parse for ``{{``,
    # the line scans for a number with a unit)
    return "{{ decode_tok_s }} 42.6 tok/s " + unit * (size // len(unit))


def _scan(body: str) -> None:
    # the markdown parse with the figure rule, as Markdown.bindings runs it (a body this long is
    # refused at load, BODY_CHARS: the scan is linear all the same)
    Markdown()._md().parse(body)
    plain_figures(body)


def _cost(body: str) -> float:
    best = float("inf")
    for _ in range(2):
        start = time.process_time()
        _scan(body)
        best = min(best, time.process_time() - start)
    return best


def test_a_body_of_unclosed_openers_is_scanned_in_linear_time() -> None:
    small = _cost(_body(HOSTILE_UNIT, SMALL)) / _cost(_body(PLAIN_UNIT, SMALL))
    large = _cost(_body(HOSTILE_UNIT, LARGE)) / _cost(_body(PLAIN_UNIT, LARGE))
    # eight times the text: a quadratic scan makes ``large`` about 8 × ``small``
    assert large < 3 * small, (small, large)


def test_the_line_scans_keep_what_they_hid_before() -> None:
    line = "a `1 ms` b {{ x }} c [d](http://e/1 s) <https://f/2 s> https://g/3s 4 s `` `5 s` `` {{ 6 s"
    assert _without_hidden(_without_code_spans(line)) == "a   b   c [d      4 s   {{ 6 s"
    assert [f.text for f in plain_figures(line)] == ["4 s", "6 s"]


def test_a_code_span_closes_only_on_a_run_of_its_own_length() -> None:
    assert _without_code_spans("``a`b`` 1 s `c") == "  1 s `c"
    assert _without_code_spans("```` `` 2 s") == "```` `` 2 s"

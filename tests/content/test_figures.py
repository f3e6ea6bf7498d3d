"""The ``{{ ... }}`` figure syntax (parse, lines, rendering) and the plain-figure scanner."""

from __future__ import annotations

import datetime as dt
from html.parser import HTMLParser

import pytest

from builder.content.figures import BoundFigure, Side, parse_binding, plain_figures
from builder.content.markdown import Markdown, split_document

METRICS = frozenset({"decode_tok_s", "itl_ms", "weights_gib"})


def test_a_value_parses_its_metric_and_typed_selectors() -> None:
    found = parse_binding(" decode_tok_s prompt=2048 concurrency=1 date=2026-07-27 version=0.24.0 ", METRICS)
    assert found.error == ""
    assert found.kind == "value"
    assert found.sides == (
        Side(
            "decode_tok_s",
            (("concurrency", 1), ("date", dt.date(2026, 7, 27)), ("prompt", 2048), ("version", "0.24.0")),
        ),
    )


def test_unknown_means_not_recorded_and_request_rate_takes_inf() -> None:
    found = parse_binding("decode_tok_s prompt=unknown request_rate=inf", METRICS)
    assert found.sides[0].selectors == (("prompt", None), ("request_rate", float("inf")))


def test_a_ratio_second_side_inherits_the_first() -> None:
    found = parse_binding("ratio decode_tok_s recipe=a prompt=2048 / recipe=b", METRICS)
    assert found.kind == "ratio"
    assert found.sides == (
        Side("decode_tok_s", (("prompt", 2048), ("recipe", "a"))),
        Side("decode_tok_s", (("prompt", 2048), ("recipe", "b"))),
    )
    other = parse_binding("ratio decode_tok_s / itl_ms", METRICS)
    assert [side.metric for side in other.sides] == ["decode_tok_s", "itl_ms"]


@pytest.mark.parametrize(
    ("source", "error"),
    [
        ("", "empty figure: write {{ METRIC KEY=VALUE ... }}"),
        ("speed prompt=1", "unknown metric 'speed' (one of: decode_tok_s, itl_ms, weights_gib)"),
        (
            "decode_tok_s gpu=a",
            "unknown key 'gpu' (keys: recipe, prompt, output, context, concurrency, request_rate, date, node, version)",
        ),
        ("decode_tok_s prompt=2k", "prompt=2k: a whole number (or 'unknown')"),
        ("decode_tok_s date=27/07/2026", "date=27/07/2026: a date, YYYY-MM-DD"),
        ("decode_tok_s prompt=1 prompt=2", "'prompt' is given twice"),
        ("ratio decode_tok_s", "a ratio is {{ ratio METRIC KEY=VALUE ... / [METRIC] KEY=VALUE ... }}"),
        ("unbound", "'unbound' needs the figure's text: {{ unbound 22 GB }}"),
        ("prompt=2048", "a figure starts with its metric, e.g. {{ decode_tok_s prompt=2048 }}"),
    ],
)
def test_bad_bindings_say_why(source: str, error: str) -> None:
    assert parse_binding(source, METRICS).error == error


def test_unbound_keeps_its_text() -> None:
    found = parse_binding("unbound about 22 GB", METRICS)
    assert (found.kind, found.text, found.error) == ("unbound", "about 22 GB", "")


DOC = """---
title: x
---

It decodes at {{ decode_tok_s prompt=2048
concurrency=1 }}, `{{ not a figure }}` and \\{{ neither }}.

## Download: {{ unbound 22 GB }}

| a | b |
| --- | --- |
| {{ itl_ms }} | {{ unbound <b>1</b> }} |
"""


def test_bindings_carry_their_file_line_and_whether_in_a_heading() -> None:
    doc = split_document("content/recipes/x.md", DOC)
    found = [(b.source.split()[0], b.line, b.in_heading) for b in Markdown().bindings(doc)]
    assert found == [
        ("decode_tok_s", 5, False),
        ("unbound", 8, True),
        ("itl_ms", 12, False),
        ("unbound", 12, False),
    ]


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.links: list[tuple[dict[str, str | None], str]] = []
        self._open: dict[str, str | None] | None = None
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            self._open = dict(attrs)
        elif tag == "b":
            raise AssertionError("markup from a figure's text")

    def handle_data(self, data: str) -> None:
        self.text.append(data)
        if self._open is not None:
            self.links.append((self._open, data))
            self._open = None


def test_bound_figures_render_as_links_to_their_rows_escaped() -> None:
    doc = split_document("content/recipes/x.md", DOC)
    markdown = Markdown()
    shown = (
        BoundFigure("42.6 tok/s", "#row-a-3", "decode_tok_s of x"),
        BoundFigure("22 GB"),
        BoundFigure("23.5 ms", '../../recipes/y/#row-"b-2', "<itl>"),
        BoundFigure("<b>1</b>"),
    )
    markdown.bind({(doc.rel, doc.digest): shown})
    body = markdown.render(doc)
    parser = _Links()
    parser.feed(body.html)
    assert parser.links == [
        ({"class": "bound-figure", "href": "#row-a-3", "title": "decode_tok_s of x"}, "42.6 tok/s"),
        ({"class": "bound-figure", "href": '../../recipes/y/#row-"b-2', "title": "<itl>"}, "23.5 ms"),
    ]
    assert "{{ not a figure }}" in body.html and "{{ neither }}" in body.html
    assert "It decodes at 42.6 tok/s" in body.text
    assert body.headings[0].text == "Download: 22 GB" and body.headings[0].anchor == "download-22-gb"


def test_what_a_figure_shows_is_part_of_the_cache_key() -> None:
    doc = split_document("content/recipes/x.md", DOC)
    markdown = Markdown()
    markdown.bind({(doc.rel, doc.digest): (BoundFigure("1 ms"),) * 4})
    first = markdown.render(doc).html
    markdown.bind({(doc.rel, doc.digest): (BoundFigure("2 ms"),) * 4})
    assert markdown.render(doc).html != first
    assert "2 ms" in markdown.render(doc).html


def test_plain_figures_outside_code_link_targets_and_bindings() -> None:
    body = "\n".join(
        [
            "decodes at 42.6 tok/s, 2.5x faster, 5,600 t/s, 9 ms and 6.03 s; 21.88 GiB, 22 GB, 3×",
            "`3 ms` [4 s](https://example.org/5ms) https://example.org/6-ms {{ unbound 22 GB }}",
            "```",
            "7 ms",
            "```",
            "2026-07-06 shows 1 × DGX Spark, 0x10, 8 streams, k=3, 100K-token, sm_121",
        ]
    )
    found = [(f.line, f.text, f.value, f.decimals, f.unit) for f in plain_figures(body)]
    assert found == [
        (0, "42.6 tok/s", 42.6, 1, "tok/s"),
        (0, "2.5x", 2.5, 1, "×"),
        (0, "5,600 t/s", 5600.0, 0, "tok/s"),
        (0, "9 ms", 9.0, 0, "ms"),
        (0, "6.03 s", 6.03, 2, "s"),
        (0, "21.88 GiB", 21.88, 2, "GiB"),
        (0, "22 GB", 22.0, 0, "GB"),
        (0, "3×", 3.0, 0, "×"),
        (1, "4 s", 4.0, 0, "s"),  # a link's text is prose, its target is not
    ]

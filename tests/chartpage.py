"""Chart test helpers: a page's chart data block read as ``static/charts.js`` reads it, and a
stand-in finding."""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from typing import Any

from bs4 import BeautifulSoup, Tag


def chart_block(soup: BeautifulSoup) -> dict[str, Any]:
    """The page's one ``<script type="application/json" id="chart-data">``, parsed."""
    blocks = soup.select('script#chart-data[type="application/json"]')
    assert len(blocks) == 1, f"{len(blocks)} chart data blocks"
    block = blocks[0]
    assert isinstance(block, Tag)
    data: dict[str, Any] = json.loads(block.string or "")
    return data


def chart_rows(chart: dict[str, Any]) -> list[list[Any]]:
    """A chart's rows in its data block with every value itself, as ``static/charts.js`` reads them:
    a field with a list in ``strings`` gives a position in that list."""
    strings = chart.get("strings") or [None] * len(chart["fields"])
    assert len(strings) == len(chart["fields"])
    return [
        [v if table is None or v is None else table[v] for v, table in zip(row, strings, strict=True)]
        for row in chart["rows"]
    ]


def chart_values(soup: BeautifulSoup) -> dict[str, list[dict[str, Any]]]:
    """Chart id → its values as the spec receives them (objects, null fields left out)."""
    charts = chart_block(soup)["charts"]
    return {
        chart_id: [
            {k: v for k, v in zip(chart["fields"], row, strict=True) if v is not None}
            for row in chart_rows(chart)
        ]
        for chart_id, chart in charts.items()
    }


def chart_specs(soup: BeautifulSoup) -> dict[str, dict[str, Any]]:
    """Chart id → its spec with its values in ``data``, as the page's script hands it to vega-embed."""
    block = chart_block(soup)
    values = chart_values(soup)
    out = {}
    for chart_id, chart in block["charts"].items():
        spec = json.loads(json.dumps(block["specs"][chart["spec"]]))
        spec["data"] = {"values": values[chart_id]}
        out[chart_id] = spec
    return out


@dataclass
class StubRun:
    """A run as a finding's rings read it."""

    date: dt.date
    node: str
    engine_version: str
    value: float


@dataclass
class StubFinding:
    """Stands in for a :class:`builder.analysis.findings.Finding`: the history's rings read only these."""

    metric: str
    setting: dict[str, Any]
    run_list: list[StubRun]
    summary_text: str
    annotation: dict[str, Any] | None = None

    @property
    def runs(self) -> list[tuple[StubRun, bool]]:
        return [(run, True) for run in self.run_list]

    def summary(self) -> str:
        return self.summary_text

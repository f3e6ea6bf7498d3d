"""Table bodies built in Python: cells escaped as markupsafe escapes them, numbers as the ``num`` filter."""

from __future__ import annotations

from bs4 import BeautifulSoup

from builder.site.charts import PROMPT, Column, chart_from_rows, make_chart
from builder.site.tables import chart_rows

HOSTILE = "<b>\"x\"</b> & 'y'"


def _cells(html: str) -> list[list[tuple[str, bool]]]:
    soup = BeautifulSoup(f"<table><tbody>{html}</tbody></table>", "html.parser")
    return [
        [(td.get_text(), "n" in (td.get("class") or [])) for td in tr.find_all("td")]
        for tr in soup.select("tr")
    ]


def test_chart_rows_read_columns_by_field_and_escape_text() -> None:
    columns = (
        Column("node", "Node"),
        Column("value", "tok/s", True),
        Column("trials", "Rows", True),
        Column("missing", "Not a field"),
    )
    chart = chart_from_rows(
        PROMPT,
        "chart-prompt",
        "t",
        "c",
        columns,
        ("value", "node", "trials"),
        [[1234.5, HOSTILE, None], [2.0, "", 3]],
    )
    html = str(chart_rows(chart))
    assert "<b>" not in html
    assert _cells(html) == [
        [(HOSTILE, False), ("1,234.5", True), ("—", True), ("", False)],
        [("", False), ("2", True), ("3", True), ("", False)],
    ]


def test_make_chart_takes_values_as_objects() -> None:
    values = [{"node": "a", "value": 1.5}, {"node": "b", "value": 2.5, "why": "differs"}]
    chart = make_chart(PROMPT, "chart-prompt", "t", "c", (Column("why", "Why"),), values)
    assert chart.fields == ("node", "value", "why")
    assert chart.rows == [["a", 1.5, None], ["b", 2.5, "differs"]]
    assert chart.values == values  # absent fields stay absent
    assert _cells(str(chart_rows(chart))) == [[("", False)], [("differs", False)]]

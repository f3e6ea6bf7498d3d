"""The results table in a browser: rows one or two lines high on a desktop and a phone, and a row's
commands open without widening the table."""

from __future__ import annotations

from typing import Any

import pytest

from tests.browser.axe import VIEWPORTS
from tests.browser.test_site import RECIPE

ROW_LINES = """() => [...document.querySelectorAll('table.rows tbody tr')].map(tr => {
    const td = tr.querySelector('td');
    const style = getComputedStyle(td);
    const line = parseFloat(style.lineHeight);
    const padding = parseFloat(style.paddingTop) + parseFloat(style.paddingBottom);
    return (tr.getBoundingClientRect().height - padding - 1) / line;  // 1: the row's border
})"""


def test_rows_are_one_or_two_lines_high_on_a_desktop(device_page: Any, base_url: str) -> None:
    page = device_page(**VIEWPORTS["desktop"])
    page.goto(base_url + RECIPE)
    lines = page.evaluate(ROW_LINES)
    assert len(lines) == 5
    assert max(lines) <= 2.05, lines  # a badge may add a pixel or two to a line


@pytest.mark.parametrize("device", list(VIEWPORTS))
def test_a_rows_commands_open_below_it_without_widening_the_table(
    device_page: Any, base_url: str, device: str
) -> None:
    page = device_page(**VIEWPORTS[device])
    page.goto(base_url + RECIPE)
    scroller = "document.querySelector('table.rows').closest('.table-scroll')"
    width = page.evaluate(f"{scroller}.scrollWidth")
    row = page.locator("table.rows tbody tr").nth(4)
    row.locator("details.reproduce summary").click()
    commands = row.locator("details.reproduce pre.cmd")
    assert commands.count() == 3
    assert commands.nth(0).is_visible() and "vllm serve" in commands.nth(0).inner_text()
    assert page.evaluate(f"{scroller}.scrollWidth") == width
    # the body stays inside the table's box, and only one of a row's disclosures is open at a time
    body = row.locator("details.reproduce .row-more-body").bounding_box()
    box = page.locator("table.rows").bounding_box()
    assert body is not None and box is not None and body["x"] >= box["x"]
    row.locator("td.notes details:not(.reproduce) summary").click()
    assert row.locator("details.reproduce").get_attribute("open") is None


CELL_BOXES = """() => [...document.querySelectorAll('table.rows tbody tr')].map(tr => {
    const box = td => { const r = td.getBoundingClientRect(); return [r.left, r.right, r.top, td.textContent.trim()]; };
    const cells = tr.querySelectorAll('td');
    return {row: tr.getBoundingClientRect().top, date: box(cells[0]), decode: box(cells[6])};
})"""


def test_on_a_phone_each_row_shows_its_date_and_decode_first(device_page: Any, base_url: str) -> None:
    """On a 390-px phone a row is a block of labelled cells: its date and decode figure on its first
    line, inside the screen, with nothing to scroll sideways."""
    page = device_page(**VIEWPORTS["phone"])
    page.goto(base_url + RECIPE)
    rows = page.evaluate(CELL_BOXES)
    assert len(rows) == 5
    for row in rows:
        for left, right, top, _ in (row["date"], row["decode"]):
            assert 0 <= left and right <= 390 and top - row["row"] < 30  # on the row's first line
    assert [(r["date"][3], r["decode"][3]) for r in rows] == [
        ("2026-07-27", "42.9"), ("2026-07-27", "42.6"), ("2026-07-27", "42.5"), ("2026-07-27", "41.4"),
        ("2026-07-06", "76.8"),
    ]  # fmt: skip
    scroller = "document.querySelector('table.rows').closest('.table-scroll')"
    assert page.evaluate(f"{scroller}.scrollWidth <= {scroller}.clientWidth")
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    labels = page.evaluate(
        "[...document.querySelectorAll('table.rows tbody tr:first-child td')].slice(0, 7)"
        ".map(td => getComputedStyle(td, '::before').content)"
    )
    assert labels == [
        '"Date"',
        '"Node"',
        '"Engine"',
        '"Prompt"',
        '"Context"',
        '"Concurrency"',
        '"Decode tok/s"',
    ]

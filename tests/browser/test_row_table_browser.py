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


@pytest.mark.parametrize("device", list(VIEWPORTS))
def test_rows_are_one_or_two_lines_high(device_page: Any, base_url: str, device: str) -> None:
    page = device_page(**VIEWPORTS[device])
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

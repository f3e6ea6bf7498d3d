"""The results table in a browser: rows one or two lines high on a desktop and a phone, a row's notes
open without widening the table, and a row's link opens the commands of its run."""

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
def test_a_rows_notes_open_below_it_without_widening_the_table(
    device_page: Any, base_url: str, device: str
) -> None:
    page = device_page(**VIEWPORTS[device])
    page.goto(base_url + RECIPE)
    scroller = "document.querySelector('table.rows').closest('.table-scroll')"
    width = page.evaluate(f"{scroller}.scrollWidth")
    # the lowest row with notes of its own (what its run's rows share is with the run instead)
    with_notes = page.locator("table.rows tbody tr").filter(has=page.locator("td.notes details"))
    assert with_notes.count() >= 1
    row = with_notes.last
    row.locator("td.notes details summary").click()
    body = row.locator("td.notes details .row-more-body")
    assert body.is_visible()
    assert page.evaluate(f"{scroller}.scrollWidth") == width
    # the body stays inside the table's box
    box, table = body.bounding_box(), page.locator("table.rows").bounding_box()
    assert box is not None and table is not None and box["x"] >= table["x"]


@pytest.mark.parametrize("device", list(VIEWPORTS))
@pytest.mark.parametrize("script", [True, False])
def test_a_rows_reproduce_link_opens_the_commands_of_its_run(
    device_page: Any, base_url: str, device: str, script: bool
) -> None:
    page = device_page(**VIEWPORTS[device], java_script_enabled=script)
    page.goto(base_url + RECIPE)
    row = page.locator("table.rows tbody tr").nth(4)
    link = row.locator("td.notes a.run-link")
    target = link.get_attribute("href") or ""
    assert target.startswith("#run-")
    link.click()
    page.wait_for_url("**" + target)
    assert (
        page.evaluate("document.getElementById(location.hash.slice(1)).closest('details.run').open") is True
    )
    commands = page.locator(f"{target} pre.cmd")
    assert commands.is_visible() and "\nvllm serve " in commands.inner_text()
    box = commands.bounding_box()
    assert box is not None and box["y"] < VIEWPORTS[device]["viewport"]["height"]  # scrolled to
    # the commands wrap: nothing on the page scrolls sideways
    width = VIEWPORTS[device]["viewport"]["width"]
    assert page.evaluate("document.documentElement.scrollWidth") <= width


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

"""/choose/ in a real browser: the chooser with JavaScript, the hardware pages without, phone and desktop."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from builder.config import load_config
from builder.engine.pipeline import load_and_reconcile
from builder.site.choose import Query, choose
from tests.conftest import REPO

DESKTOP: dict[str, Any] = {"viewport": {"width": 1280, "height": 900}}
PHONE: dict[str, Any] = {"viewport": {"width": 390, "height": 844}, "is_mobile": True, "has_touch": True}
AT_2048 = "2,048-token prompt, context 0, concurrency 1"

Open = Callable[..., tuple[Any, list[str]]]


@pytest.fixture
def opened(browser: Any, base_url: str) -> Iterator[Open]:
    contexts: list[Any] = []

    def open_page(**options: Any) -> tuple[Any, list[str]]:
        context = browser.new_context(**options)
        contexts.append(context)
        problems: list[str] = []
        context.route(
            "**/*",
            lambda route: (
                route.continue_()
                if route.request.url.startswith(base_url)
                else (problems.append(route.request.url), route.abort())
            ),
        )
        page = context.new_page()
        page.on("console", lambda msg: problems.append(msg.text) if msg.type == "error" else None)
        page.on("pageerror", lambda exc: problems.append(str(exc)))
        return page, problems

    yield open_page
    for context in contexts:
        context.close()


def _table(page: Any) -> list[list[str]]:
    return page.evaluate(
        """() => [...document.querySelectorAll('#choose-results tr:not(.choose-section)')].map(
            tr => [...tr.querySelectorAll('td')].map(td => td.textContent))"""
    )


@pytest.mark.parametrize("device", ["desktop", "phone"])
def test_the_chooser_ranks_as_the_command_does(opened: Open, base_url: str, device: str) -> None:
    page, problems = opened(**(DESKTOP if device == "desktop" else PHONE))
    page.goto(base_url + "choose/")
    assert page.locator("#chooser").is_visible()
    page.select_option("#choose-hw", "dgx-spark")
    page.select_option("#choose-setting", label=AT_2048)
    page.select_option("#choose-metric", "decode_tok_s")
    page.wait_for_selector("#choose-results tr")
    rows = _table(page)
    loaded = load_and_reconcile(load_config(REPO))
    assert loaded.recon is not None
    ranking = choose(loaded.site, loaded.recon, Query("dgx-spark", prompt_tokens=2048))
    expected = ranking.results
    assert [row[1].split(" contested")[0].split(" command not recorded")[0] for row in rows] == [
        c.title for c in expected
    ]
    assert rows[0][:3] == ["1", "Qwen3.6 35B-A3B — Unsloth NVFP4-Fast command not recorded", "106.5"]
    assert rows[1][1:5] == ["Qwen3.6 35B-A3B — NVIDIA NVFP4 contested", "42.6", "2026-07-27", "matches"]
    assert rows[1][5] == "1"  # the open finding
    assert rows[1][6] == "data/rows/qwen3.6-35b-a3b-nvidia-nvfp4/2026-07-27-spark-01.csv:3"
    sections = page.locator("#choose-results tr.choose-section").all_inner_texts()
    assert sections == [f"Measured at another setting: {s.text()}" for s, _ in ranking.sections()]
    answer = page.locator("#choose-answer")
    assert (
        answer.locator("p")
        .inner_text()
        .startswith("Use this: Qwen3.6 35B-A3B — NVIDIA NVFP4 contested, 42.6")
    )
    assert answer.locator("pre").inner_text() == ranking.answer.figure.command  # type: ignore[union-attr]
    # A latency: lower first.
    page.select_option("#choose-metric", "itl_ms")
    assert [row[2] for row in _table(page)] == ["9", "23.5"]
    assert "lower is better" in page.locator("#choose-status").inner_text()
    # The picks are in the address: reopened, the page shows the same answer.
    assert "metric=itl_ms" in page.url and "hardware=dgx-spark" in page.url
    page.reload()
    page.wait_for_selector("#choose-results tr")
    assert page.locator("#choose-setting option:checked").inner_text() == AT_2048
    assert [row[2] for row in _table(page)] == ["9", "23.5"]
    link = page.locator("#choose-results a").first
    link.click()
    page.wait_for_load_state()
    assert page.url.endswith("recipes/qwen3.6-35b-a3b-unsloth-nvfp4-fast/")
    if device == "phone":
        page.go_back()
        page.wait_for_selector("#chooser:not([hidden])")
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
    assert problems == []


@pytest.mark.parametrize("device", ["desktop", "phone"])
def test_without_javascript_each_hardware_page_ranks_at_every_setting(
    opened: Open, base_url: str, device: str
) -> None:
    page, problems = opened(java_script_enabled=False, **(DESKTOP if device == "desktop" else PHONE))
    page.goto(base_url)
    page.click("main a[href='choose/']")
    page.wait_for_url(base_url + "choose/")  # and its load event: the page is there to read
    assert not page.locator("#chooser").is_visible()  # the form needs the script
    page.click("main a[href='../choose/dgx-spark/'], main a[href='dgx-spark/']")
    page.wait_for_url(base_url + "choose/dgx-spark/")
    headings = page.locator("main h2").all_inner_texts()
    assert headings[0] == "512-token prompt, context 0, concurrency 1"
    assert AT_2048 in headings
    section = page.locator("section.choose-setting", has=page.locator(f"h2:text-is('{AT_2048}')"))
    first = section.locator("table").first.locator("tbody tr")
    assert first.count() == 2
    assert [first.nth(0).locator("td").nth(i).text_content() for i in (1, 2)] == [
        "Qwen3.6 35B-A3B — Unsloth NVFP4-Fast command not recorded",
        "106.5",
    ]
    assert page.evaluate("document.documentElement.scrollWidth") <= (390 if device == "phone" else 1280)
    page.goto(base_url + "hardware/dgx-spark/")
    assert page.locator("main a[href='../../choose/dgx-spark/']").count() == 1
    assert problems == []


FIGURE_BESIDE_NAME = """() => [...document.querySelectorAll('.choose-table tbody tr:not(.choose-section)')]
    .filter(tr => tr.offsetParent !== null).map(tr => {
        const [, name, figure] = tr.querySelectorAll('td');
        const n = name.getBoundingClientRect(), f = figure.getBoundingClientRect();
        return {name: [n.left, n.right, n.top], figure: [f.left, f.right, f.top], text: figure.textContent};
    })"""


@pytest.mark.parametrize("path", ["choose/", "choose/dgx-spark/"])
def test_on_a_phone_the_figure_stays_beside_the_name(opened: Open, base_url: str, path: str) -> None:
    """On a 390-px phone no ranking scrolls sideways: each result's figure is on its name's line,
    inside the screen, right of the name."""
    page, problems = opened(**PHONE)
    page.goto(base_url + path + ("?hardware=dgx-spark&workload=" + AT_2048 if path == "choose/" else ""))
    if path == "choose/":
        page.wait_for_selector("#choose-results tr")
    results = page.evaluate(FIGURE_BESIDE_NAME)
    assert len(results) >= 4
    for r in results:
        assert r["figure"][1] <= 390 and r["figure"][0] >= r["name"][1] - 1, r
        assert abs(r["figure"][2] - r["name"][2]) < 8, r  # the same line
    assert page.evaluate(
        "[...document.querySelectorAll('.choose-table')].every(t => t.closest('.table-scroll').scrollWidth"
        " <= t.closest('.table-scroll').clientWidth)"
    )
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    assert problems == []


def test_the_top_navigation_leads_to_the_chooser(opened: Open, base_url: str) -> None:
    page, problems = opened(**PHONE)
    page.goto(base_url + "recipes/")
    page.locator("header nav[aria-label=Site] a", has_text="Choose").click()
    page.wait_for_url(base_url + "choose/")
    assert page.locator("header nav[aria-label=Site] a[aria-current=page]").inner_text() == "Choose"
    assert problems == []


@pytest.mark.parametrize("device", ["desktop", "phone"])
def test_recipe_cards_carry_the_headline_figure_and_open_findings(
    opened: Open, base_url: str, device: str
) -> None:
    page, problems = opened(**(DESKTOP if device == "desktop" else PHONE))
    page.goto(base_url + "recipes/")
    card = page.locator(".cards > li", has=page.locator("a", has_text="Qwen3.6 35B-A3B — NVIDIA NVFP4")).first
    figure = card.locator(".card-figure")
    assert figure.locator(".figure").inner_text() == "42.6"  # the headline's figure
    assert figure.locator(".badge.warn").inner_text() == "contested"
    assert figure.locator("a.badge.bad").inner_text() == "1 open finding"
    figure.locator("a.badge.bad").click()
    assert page.url.endswith("recipes/qwen3.6-35b-a3b-nvidia-nvfp4/#findings-h")
    assert problems == []

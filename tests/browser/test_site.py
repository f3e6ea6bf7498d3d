"""The shipped site in a real browser: every page kind, charts, search, no-JS tables, keyboard."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.browser.axe import LAYOUT_RULES, axe_violations, report

RECIPE = "recipes/qwen3.6-35b-a3b-nvidia-nvfp4/"
MARLIN_Q = "The MoE backend line says MARLIN, not FLASHINFER_CUTLASS. Did I misconfigure something?"

PAGE_KINDS = {
    "home": "",
    "recipes": "recipes/",
    "recipe": RECIPE,
    "recipe-with-many-flags": "recipes/qwen3.6-35b-a3b-nvidia-nvfp4-mtp3/",
    "case-study": "case-studies/which-nvfp4-build-to-download/",
    "case-studies": "case-studies/",
    "news": "news/",
    "post": "news/nvfp4-qwen3.6-35b-a3b-dgx-spark/",
    "comparison": "models/qwen-qwen3.6-35b-a3b/",
    "models": "models/",
    "troubleshooting": "troubleshooting/",
    "search": "search/?q=marlin",
    "hardware-index": "hardware/",
    "hardware": "hardware/dgx-spark/",
    "engines": "engines/",
    "engine": "engines/vllm/",
    "findings": "findings/",
    "api": "api/",
    "choose": "choose/",
    "choose-hardware": "choose/dgx-spark/",
    "not-found": "404.html",
}


@dataclass
class Visit:
    """What a page did while it loaded: console errors, uncaught exceptions, off-site requests."""

    errors: list[str] = field(default_factory=list)
    offsite: list[str] = field(default_factory=list)


def _open(browser: Any, base_url: str, **options: Any) -> tuple[Any, Any, Visit]:
    options.setdefault("viewport", {"width": 1280, "height": 900})
    context = browser.new_context(**options)
    visit = Visit()

    def guard(route: Any) -> None:
        # Nothing may leave the site: record and refuse any request that is not to our server.
        # (file: is the site itself when a test opens the built folder directly.)
        if route.request.url.startswith((base_url, "data:", "blob:", "file:")):
            route.continue_()
        else:
            visit.offsite.append(route.request.url)
            route.abort()

    context.route("**/*", guard)
    page = context.new_page()
    page.on("console", lambda msg: visit.errors.append(msg.text) if msg.type == "error" else None)
    page.on("pageerror", lambda exc: visit.errors.append(str(exc)))
    return context, page, visit


@pytest.fixture
def opened(browser: Any, base_url: str) -> Iterator[Any]:
    contexts: list[Any] = []

    def open_page(**options: Any) -> tuple[Any, Visit]:
        context, page, visit = _open(browser, base_url, **options)
        contexts.append(context)
        return page, visit

    yield open_page
    for context in contexts:
        context.close()


def _scroll_through(page: Any) -> None:
    """Bring each chart into view so that it draws (charts draw as they come near the viewport), then
    the end of the page, then back to the top; wait for the drawing, not for a fixed time."""
    page.evaluate(_SCROLL_TO_EACH_CHART)
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    # Each chart draws once it comes into view; an error hides it and is logged (visit.errors).
    try:
        page.wait_for_function(_CHARTS_SETTLED, timeout=10_000)
    except PlaywrightTimeout:
        pass  # the assertions on visit.errors say what went wrong
    if page.locator("script[src*='choose']").count():
        page.wait_for_load_state("networkidle")  # the chooser fetches its rankings
    page.evaluate("window.scrollTo(0, 0)")


# Two animation frames after each scroll: the intersection observers run in the frame's rendering steps.
_SCROLL_TO_EACH_CHART = """async () => {
    const frames = () => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)));
    for (const chart of document.querySelectorAll('figure.chart')) {
        chart.scrollIntoView({block: 'center'});
        await frames();
    }
    window.scrollTo(0, document.documentElement.scrollHeight);
    await frames();
}"""


_CHARTS_SETTLED = """() => Array.from(document.querySelectorAll('figure.chart')).every(
    (f) => f.classList.contains('chart-drawn') || !f.querySelector('.chart-view'))"""


# Every kind in the light scheme; the dark scheme (the same markup, other colours) on the pages that
# use the most of the style sheet.
DARK_KINDS = ("home", "recipe", "comparison", "findings", "choose")


@pytest.mark.parametrize(
    ("kind", "scheme"),
    [(kind, "light") for kind in PAGE_KINDS] + [(kind, "dark") for kind in DARK_KINDS],
)
def test_every_page_kind_loads_cleanly(
    opened: Any, base_url: str, screenshots: Path | None, kind: str, scheme: str
) -> None:
    page, visit = opened(color_scheme=scheme)
    response = page.goto(base_url + PAGE_KINDS[kind])
    assert response is not None and response.ok
    _scroll_through(page)
    assert visit.errors == [], visit.errors
    assert visit.offsite == [], visit.offsite
    assert page.locator("h1").count() == 1
    assert page.locator("main#main").count() == 1
    if screenshots is not None:
        page.screenshot(path=str(screenshots / f"{kind}-{scheme}.png"), full_page=True)
    if scheme == "light":  # axe-core on a desktop (the phone: the test below)
        violations = axe_violations(page)
        assert violations == [], report(violations)


@pytest.mark.parametrize("kind", list(PAGE_KINDS))
def test_every_page_kind_fits_a_phone(
    opened: Any, base_url: str, screenshots: Path | None, kind: str
) -> None:
    page, visit = opened(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    page.goto(base_url + PAGE_KINDS[kind])
    _scroll_through(page)
    if screenshots is not None:
        page.screenshot(path=str(screenshots / f"{kind}-phone.png"))
    # wide tables scroll inside their own box; nothing may push the page itself sideways
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    assert visit.errors == []
    violations = axe_violations(page, LAYOUT_RULES)  # every rule ran on the desktop visit above
    assert violations == [], report(violations)


FOUNDING_SUMMARY = "76.8 tok/s on 2026-07-06 did not reproduce: both later runs, on 2026-07-27, read 42.5–42.6 tok/s (−44.6 %)."


@pytest.mark.parametrize("where", [RECIPE, "findings/"])
def test_the_founding_finding_reads_in_time_order_first(opened: Any, base_url: str, where: str) -> None:
    # What a reader sees first of the finding is the sentence, in time order, by the runs' own figures.
    page, _ = opened()
    page.goto(base_url + where)
    finding = page.locator("article.finding, .banner.finding").first
    first = finding.locator(":scope > *").first
    assert first.inner_text().strip().replace("\xa0", " ") == FOUNDING_SUMMARY
    assert first.is_visible()
    text = finding.inner_text()
    assert "42.55" not in text and "better" not in text and "worse" not in text


def test_flags_and_values_are_not_broken_on_a_desktop(opened: Any, base_url: str) -> None:
    # A flag is copied whole: broken at its hyphens ("--kv-cache-" / "dtype") it reads as two.
    page, _ = opened()
    page.goto(base_url + "recipes/qwen3.6-35b-a3b-nvidia-nvfp4-mtp3/")
    lines = page.evaluate(
        """() => [...document.querySelectorAll('table.params tbody tr')].map(row => {
            const [flag, value] = row.querySelectorAll('code');
            return [flag.textContent, flag.getClientRects().length,
                    value.textContent, value.getClientRects().length];
        })"""
    )
    assert len(lines) >= 10
    assert [(flag, n) for flag, n, _, _ in lines if n != 1] == []
    # short values (a number, a word) stay on one line too; only long JSON may wrap
    assert [(value, n) for _, _, value, n in lines if len(value) <= 20 and n != 1] == []


def test_charts_draw_after_scrolling(opened: Any, base_url: str) -> None:
    page, visit = opened()
    page.goto(base_url + RECIPE)
    charts = page.locator("figure.chart")
    assert charts.count() >= 1
    for index in range(charts.count()):
        figure = charts.nth(index)
        figure.scroll_into_view_if_needed()
        figure.locator(".chart-view svg, .chart-view canvas").first.wait_for(state="attached", timeout=15_000)
    assert visit.errors == [] and visit.offsite == []


def test_search_finds_a_troubleshooting_question_and_opens_its_answer(opened: Any, base_url: str) -> None:
    page, visit = opened()
    page.goto(base_url)
    page.fill("#header-q", "MARLIN")
    page.press("#header-q", "Enter")
    page.wait_for_url("**/search/index.html?q=MARLIN")
    result = page.locator("#search-results a", has_text=MARLIN_Q)
    result.wait_for(timeout=15_000)
    href = result.get_attribute("href") or ""
    assert href.startswith(base_url + RECIPE + "#faq-")
    result.click()
    page.wait_for_url("**#faq-*")
    opened_answer = page.evaluate("document.getElementById(location.hash.slice(1)).closest('details').open")
    assert opened_answer is True
    assert visit.errors == [] and visit.offsite == []


def test_search_works_from_the_file_system(opened: Any, site_dir: Path) -> None:
    """file:// refuses fetch() and module imports; the page falls back to the records script."""
    page, visit = opened()
    page.goto((site_dir / "search/index.html").as_uri() + "?q=marlin")
    result = page.locator("#search-results a", has_text=MARLIN_Q)
    result.wait_for(timeout=15_000)
    assert (result.get_attribute("href") or "").startswith(
        (site_dir / RECIPE / "index.html").as_uri() + "#faq-"
    )
    result.click()
    page.wait_for_url("**#faq-*")
    assert page.evaluate("document.getElementById(location.hash.slice(1)).closest('details').open") is True
    assert visit.errors == []


def test_without_javascript_the_data_tables_are_there(opened: Any, base_url: str) -> None:
    page, _ = opened(java_script_enabled=False)
    page.goto(base_url + RECIPE)
    assert page.locator("table.rows tbody tr").count() >= 1
    assert page.locator("table.rows").is_visible()
    charts = page.locator("figure.chart")
    assert charts.count() >= 1
    for index in range(charts.count()):
        figure = charts.nth(index)
        if figure.locator("p.chart-rows a").count():
            # a history plots the recipe's rows: it links to the results table, which is there
            assert figure.locator("p.chart-rows a").get_attribute("href") == "#results-h"
            assert figure.locator("p.chart-rows").is_visible()
            continue
        table = figure.locator("table")
        assert table.locator("tbody tr").count() >= 1
        assert table.is_visible()
    assert page.locator(".chart-view svg, .chart-view canvas").count() == 0
    page.goto(base_url + "search/")
    assert page.locator("noscript").count() == 1


def test_a_link_to_an_answer_opens_it_without_javascript(opened: Any, base_url: str) -> None:
    page, _ = opened(java_script_enabled=False)
    page.goto(base_url + "troubleshooting/")
    link = page.locator("ul.faq-index a", has_text=MARLIN_Q)
    link.click()
    page.wait_for_url("**#faq-*")
    assert page.evaluate("document.getElementById(location.hash.slice(1)).closest('details').open") is True
    assert page.locator("details.faq-item[open] summary", has_text=MARLIN_Q).is_visible()


def test_keyboard_focus_reaches_the_faq_and_opens_it(opened: Any, base_url: str) -> None:
    page, _ = opened()
    page.goto(base_url + RECIPE)
    page.keyboard.press("Tab")
    first = page.evaluate("document.activeElement.textContent")
    assert first == "Skip to content"
    assert page.locator("a.skip").bounding_box()["x"] >= 0  # shown while focused
    for _ in range(400):
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.matches('section.faq summary')"):
            break
    else:
        pytest.fail("Tab never reached a FAQ question")
    outline = page.evaluate("getComputedStyle(document.activeElement).outlineWidth")
    assert float(outline.removesuffix("px")) >= 2, "focus must be visible"
    page.keyboard.press("Enter")
    assert page.evaluate("document.activeElement.parentElement.open") is True

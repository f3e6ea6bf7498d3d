"""axe-core over every page kind, on a desktop and on a phone: no serious or critical violation.

axe-core comes from the ``axe-playwright-python`` package (the test extras), which ships the npm
build of axe-core; it is injected into each page by Playwright and run over the whole document.
Besides the serious and critical rules, the landmark rules the site relies on must pass: one main
landmark, every landmark uniquely named, all content inside a landmark.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.browser.test_site import PAGE_KINDS, RECIPE

ALSO_REQUIRED = {"landmark-one-main", "landmark-unique", "region"}
"""Moderate rules that are failures here all the same."""
VIEWPORTS = {
    "desktop": {"viewport": {"width": 1280, "height": 900}},
    "phone": {"viewport": {"width": 390, "height": 844}, "is_mobile": True, "has_touch": True},
}


def _axe_script() -> str:
    from axe_playwright_python.base import AXE_SCRIPT

    return AXE_SCRIPT


def axe_violations(page: Any) -> list[dict[str, Any]]:
    """The violations axe-core finds on the page as it is now, serious, critical or required."""
    page.evaluate(_axe_script())
    result = page.evaluate("axe.run(document, {resultTypes: ['violations']})")
    return [
        v for v in result["violations"] if v["impact"] in ("serious", "critical") or v["id"] in ALSO_REQUIRED
    ]


def _report(violations: list[dict[str, Any]]) -> str:
    return "\n".join(
        f"{v['id']} ({v['impact']}): {v['help']} at {[n['target'] for n in v['nodes']][:5]}"
        for v in violations
    )


def test_the_vendored_axe_core_is_recent() -> None:
    script = _axe_script()
    version = script.split("axe v", 1)[1].split()[0]
    assert tuple(int(part) for part in version.split(".")[:2]) >= (4, 10), version


@pytest.mark.parametrize("kind", list(PAGE_KINDS))
@pytest.mark.parametrize("device", list(VIEWPORTS))
def test_no_serious_accessibility_violation(device_page: Any, base_url: str, kind: str, device: str) -> None:
    page = device_page(**VIEWPORTS[device])
    page.goto(base_url + PAGE_KINDS[kind])
    page.wait_for_load_state("networkidle")
    violations = axe_violations(page)
    assert violations == [], _report(violations)


@pytest.mark.parametrize("device", list(VIEWPORTS))
def test_open_row_disclosures_have_no_violation(device_page: Any, base_url: str, device: str) -> None:
    """What the results table shows once a reader opens a row's status, notes and commands."""
    page = device_page(**VIEWPORTS[device])
    page.goto(base_url + RECIPE)
    page.evaluate("document.querySelectorAll('table.rows details').forEach(d => { d.open = true; })")
    violations = axe_violations(page)
    assert violations == [], _report(violations)

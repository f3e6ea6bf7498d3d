"""axe-core in a page: the violations the site does not allow.

axe-core comes from the ``axe-playwright-python`` package (the test extras), which ships the npm
build of axe-core; it is injected into the page by Playwright and run over the whole document.
Besides the serious and critical rules, the landmark rules the site relies on must pass: one main
landmark, every landmark uniquely named, all content inside a landmark.
"""

from __future__ import annotations

from typing import Any

ALSO_REQUIRED = {"landmark-one-main", "landmark-unique", "region"}
"""Moderate rules that are failures here all the same."""
VIEWPORTS = {
    "desktop": {"viewport": {"width": 1280, "height": 900}},
    "phone": {"viewport": {"width": 390, "height": 844}, "is_mobile": True, "has_touch": True},
}


def axe_script() -> str:
    from axe_playwright_python.base import AXE_SCRIPT

    return AXE_SCRIPT


LAYOUT_RULES = (
    "color-contrast",
    "target-size",
    "scrollable-region-focusable",
    "link-in-text-block",
    "meta-viewport",
    "css-orientation-lock",
)
"""The rules whose outcome depends on the layout (what overlaps, overflows or is how big): a second
viewport of the same markup runs only these. No element of the site is shown at one width and hidden
at the other, so every other rule sees the same document at both."""


def axe_violations(page: Any, rules: tuple[str, ...] | None = None) -> list[dict[str, Any]]:
    """The violations axe-core finds on the page as it is now, serious, critical or required;
    ``rules``: only these rules (every rule when None)."""
    page.evaluate(axe_script())
    only = "" if rules is None else f", runOnly: {{type: 'rule', values: {list(rules)!r}}}"
    result = page.evaluate(f"axe.run(document, {{resultTypes: ['violations']{only}}})")
    return [
        v for v in result["violations"] if v["impact"] in ("serious", "critical") or v["id"] in ALSO_REQUIRED
    ]


def report(violations: list[dict[str, Any]]) -> str:
    return "\n".join(
        f"{v['id']} ({v['impact']}): {v['help']} at {[n['target'] for n in v['nodes']][:5]}"
        for v in violations
    )

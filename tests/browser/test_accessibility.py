"""axe-core (:mod:`tests.browser.axe`) on what the page-kind visits of ``test_site`` do not reach.

Every page kind is checked on a desktop and on a phone by ``test_site``'s visits themselves
(``test_every_page_kind_loads_cleanly`` with every rule, ``test_every_page_kind_fits_a_phone`` with
the rules that depend on the layout, :data:`~tests.browser.axe.LAYOUT_RULES`).
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.browser.axe import VIEWPORTS, axe_script, axe_violations, report
from tests.browser.test_site import RECIPE


def test_the_vendored_axe_core_is_recent() -> None:
    script = axe_script()
    version = script.split("axe v", 1)[1].split()[0]
    assert tuple(int(part) for part in version.split(".")[:2]) >= (4, 10), version


@pytest.mark.parametrize("device", list(VIEWPORTS))
def test_open_row_disclosures_have_no_violation(device_page: Any, base_url: str, device: str) -> None:
    """What the results table shows once a reader opens a row's status, notes and commands."""
    page = device_page(**VIEWPORTS[device])
    page.goto(base_url + RECIPE)
    page.evaluate("document.querySelectorAll('table.rows details').forEach(d => { d.open = true; })")
    violations = axe_violations(page)
    assert violations == [], report(violations)

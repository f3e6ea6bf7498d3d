"""The stylesheet's colours meet WCAG AA in the light and the dark theme."""

from __future__ import annotations

import re

import pytest

from tests.conftest import REPO

CSS = (REPO / "templates/static/site.css").read_text(encoding="utf-8")

TEXT_PAIRS = [  # (text colour, background) as used by the stylesheet: 4.5:1
    ("fg", "bg"),
    ("fg", "card"),
    ("fg", "code-bg"),
    ("fg", "warn-bg"),
    ("fg", "bad-bg"),
    ("muted", "bg"),
    ("muted", "card"),
    ("muted", "code-bg"),
    ("accent", "bg"),
    ("accent", "card"),
    ("accent", "code-bg"),
    ("accent-fg", "accent"),
    ("ok", "ok-bg"),
    ("warn", "warn-bg"),
    ("bad", "bad-bg"),
]
UI_PAIRS = [  # focus ring and control borders against what they sit on: 3:1 (WCAG 1.4.11)
    ("focus", "bg"),
    ("focus", "card"),
    ("muted", "bg"),
    ("accent", "bg"),
]


def _variables(block: str) -> dict[str, str]:
    return dict(re.findall(r"--([\w-]+):\s*(#[0-9a-fA-F]{6})\b", block))


def themes() -> dict[str, dict[str, str]]:
    first = CSS.index(":root")
    light = _variables(CSS[first : CSS.index("}", first)])
    media = CSS.index("prefers-color-scheme: dark")
    root = CSS.index(":root", media)
    dark = {**light, **_variables(CSS[root : CSS.index("}", root)])}
    return {"light": light, "dark": dark}


def luminance(colour: str) -> float:
    def channel(c: float) -> float:
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (int(colour[i : i + 2], 16) / 255 for i in (1, 3, 5))
    return 0.2126 * channel(r) + 0.7152 * channel(g) + 0.0722 * channel(b)


def contrast(a: str, b: str) -> float:
    hi, lo = sorted((luminance(a), luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def test_contrast_formula() -> None:
    assert contrast("#000000", "#ffffff") == pytest.approx(21.0)
    assert contrast("#777777", "#ffffff") == pytest.approx(4.48, abs=0.01)


def test_dark_theme_follows_the_system_and_redefines_every_colour() -> None:
    t = themes()
    assert set(t["dark"]) == set(t["light"])
    assert t["dark"]["bg"] != t["light"]["bg"]
    assert 'content="light dark"' in (REPO / "templates/base.html").read_text(encoding="utf-8")


@pytest.mark.parametrize("theme", ["light", "dark"])
@pytest.mark.parametrize(("fg", "bg"), TEXT_PAIRS)
def test_text_contrast_is_aa(theme: str, fg: str, bg: str) -> None:
    colours = themes()[theme]
    assert contrast(colours[fg], colours[bg]) >= 4.5, (theme, fg, bg)


@pytest.mark.parametrize("theme", ["light", "dark"])
@pytest.mark.parametrize(("fg", "bg"), UI_PAIRS)
def test_focus_and_control_contrast(theme: str, fg: str, bg: str) -> None:
    colours = themes()[theme]
    assert contrast(colours[fg], colours[bg]) >= 3.0, (theme, fg, bg)


def test_focus_is_visible_for_keyboard_users() -> None:
    assert re.search(r":focus-visible\s*\{[^}]*outline:\s*3px solid var\(--focus\)", CSS)

"""``python -m builder serve`` in a real browser (Playwright driving Debian's Chromium).

Edits a recipe and sees the open page change (scroll position kept); breaks a template and sees
the overlay with file, line and message while the last good page stays; fixes it and sees the
overlay go by itself; the same for a front-matter error.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import REPO, MakeSite, ctrl_c_works

pytestmark = [pytest.mark.browser, pytest.mark.serial]

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
TIMEOUT_MS = 30_000


@pytest.fixture
def site(make_site: MakeSite) -> Path:
    root = make_site()
    shutil.copytree(REPO / "templates", root / "templates")
    recipe = root / "content/recipes/tiny.md"
    text = recipe.read_text(encoding="utf-8")
    # A long body, so there is a scroll position to keep.
    filler = "\n\n".join(f"Synthetic filler paragraph {i} for the scroll test." for i in range(150))
    head, sep, tail = text.partition("## Troubleshooting")
    recipe.write_text(head + filler + "\n\n" + sep + tail, encoding="utf-8")
    return root


@pytest.fixture
def serve(site: Path) -> Iterator[str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "builder", "serve", "--root", str(site), "--port", "0"],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        preexec_fn=ctrl_c_works,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line.startswith("serving "):
        proc.kill()
        pytest.fail(f"serve did not start: {line}{proc.communicate()[1]}")
    try:
        yield line.split()[1]
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
        assert proc.returncode == 0


@pytest.fixture
def page(browser):  # type: ignore[no-untyped-def]
    # The package's one browser (tests/browser/conftest.py): a second sync_playwright() in the same
    # thread is refused while the first is open.
    context = browser.new_context()
    try:
        page = context.new_page()
        page.set_default_timeout(TIMEOUT_MS)
        yield page
    finally:
        context.close()


def replace_in(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text
    # The way many editors save: a temp file renamed over the original.
    temp = path.with_name(f".{path.name}.tmp1234")
    temp.write_text(text.replace(old, new, 1), encoding="utf-8")
    os.replace(temp, path)


def test_live_reload_overlay_and_recovery(site: Path, serve: str, page) -> None:  # type: ignore[no-untyped-def]
    page.goto(serve + "recipes/tiny/")
    h1 = page.locator("h1").first
    assert "Tiny model on a test GPU" in h1.inner_text()
    page.evaluate("window.scrollTo(0, 1500)")
    page.wait_for_function("window.scrollY >= 1400")
    # Charts coming into view are drawn and the browser keeps the content in place (scroll
    # anchoring): the position to keep is the one the page settles at.
    scrolled = page.evaluate(
        """() => new Promise((done) => {
            let last = window.scrollY;
            const check = () => setTimeout(() => {
                if (window.scrollY === last) done(last); else { last = window.scrollY; check(); }
            }, 500);
            check();
        })"""
    )

    # 1. Edit the recipe: the open page changes by itself, at the same scroll position.
    recipe = site / "content/recipes/tiny.md"
    replace_in(recipe, "title: Tiny model on a test GPU", "title: Edited from the browser test")
    page.wait_for_function(
        "document.querySelector('h1') && document.querySelector('h1').textContent.includes('Edited from the browser test')"
    )
    page.wait_for_function(f"Math.abs(window.scrollY - {scrolled}) < 5")

    # 2. Break a template: an overlay with file, line and message; the last good page stays.
    template = site / "templates/recipe.html"
    good = template.read_text(encoding="utf-8")
    broken_line = good.count("\n") + 2
    template.write_text(good + "\n{% if %}\n", encoding="utf-8")
    overlay = page.locator("#__livereload-overlay")
    overlay.wait_for(state="visible")
    where = overlay.locator(".livereload-where").first.inner_text()
    assert where == f"templates/recipe.html:{broken_line}"
    assert overlay.locator(".livereload-message").first.inner_text()
    assert "Edited from the browser test" in page.locator("h1").first.inner_text()

    # 3. Fix it: the overlay goes away by itself.
    template.write_text(good, encoding="utf-8")
    overlay.wait_for(state="detached")
    assert "Edited from the browser test" in page.locator("h1").first.inner_text()

    # 4. A front-matter error, then its fix with a new title: overlay, then the new page.
    replace_in(recipe, "engine: vllm\n", "engine: vllm\nengnie: typo\n")
    overlay.wait_for(state="visible")
    assert overlay.locator(".livereload-where").first.inner_text() == "content/recipes/tiny.md:7"
    assert "engnie" in overlay.locator(".livereload-message").first.inner_text()
    replace_in(recipe, "engnie: typo\n", "")
    replace_in(recipe, "title: Edited from the browser test", "title: Back to good")
    page.wait_for_function(
        "document.querySelector('h1') && document.querySelector('h1').textContent.includes('Back to good')"
    )
    assert page.locator("#__livereload-overlay").count() == 0

    # A page opened while the build is broken shows the overlay at once.
    template.write_text(good + "\n{% endblock %}{% endblock %}\n", encoding="utf-8")
    overlay.wait_for(state="visible")
    other = page.context.new_page()
    other.goto(serve)
    other.locator("#__livereload-overlay").wait_for(state="visible")
    assert other.locator(".livereload-where").first.inner_text().startswith("templates/recipe.html")

"""Browser fixtures: the shipped site built once, served on 127.0.0.1, driven by Debian's Chromium.

Playwright's own browser download does not work here, so the system Chromium is launched by path.
Every test in this folder is marked ``browser``; without /usr/bin/chromium they are skipped.
"""

from __future__ import annotations

import functools
import http.server
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-default-apps",
    "--no-first-run",
]
SCREENSHOTS = REPO / "screenshots"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/browser/" in item.nodeid.replace("\\", "/"):
            item.add_marker(pytest.mark.browser)


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        pass


@pytest.fixture(scope="session")
def site_dir(shipped_site: Path) -> Path:
    return shipped_site


@pytest.fixture(scope="session")
def base_url(site_dir: Path) -> Iterator[str]:
    """The built site over HTTP on a free loopback port, from a stdlib server thread."""
    handler = functools.partial(_QuietHandler, directory=str(site_dir))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


# Package scope: Playwright's sync API keeps an event loop running in the main thread while it is
# open, so it must be closed before the tests outside tests/browser/ run (asyncio.run would fail).
@pytest.fixture(scope="package")
def browser() -> Iterator[Any]:
    if not CHROMIUM.is_file():
        pytest.skip("Debian's Chromium is not installed (apt-get install -y chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        instance = playwright.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS
        )
        try:
            yield instance
        finally:
            instance.close()


@pytest.fixture(scope="session")
def screenshots() -> Path | None:
    """Where the page-kind tests save a picture of each page, for a person to look at; None (no
    pictures, which cost a quarter of the browser tests' time) unless ``SCREENSHOTS=1`` is set."""
    if os.environ.get("SCREENSHOTS") != "1":
        return None
    SCREENSHOTS.mkdir(exist_ok=True)
    return SCREENSHOTS


@pytest.fixture
def device_page(browser: Any) -> Iterator[Any]:
    """``device_page(**context_options)``: a new page in a fresh browser context (viewport, touch)."""
    contexts: list[Any] = []

    def open_page(**options: Any) -> Any:
        context = browser.new_context(**options)
        contexts.append(context)
        return context.new_page()

    yield open_page
    for context in contexts:
        context.close()

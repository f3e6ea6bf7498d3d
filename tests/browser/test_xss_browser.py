"""Script injection, proven in Chromium: no payload of the payload site runs on any page.

Every page is opened (and scrolled, so lazily drawn charts are drawn); a payload that ran would
open a dialog, set ``window.__xss`` or add ``#xss-injected``. Search is exercised with queries that
hit the payloads, since its results are built in the browser.
"""

from __future__ import annotations

import functools
import http.server
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from builder.config import load_config
from builder.engine.incremental import build
from tests.xss_site import write_xss_site

pytestmark = pytest.mark.browser


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        pass


@pytest.fixture(scope="module")
def xss_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    base = tmp_path_factory.mktemp("xss-browser")
    out = base / "site"
    build(load_config(write_xss_site(base / "root"), out), cache=False, workers=1)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(out)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/", out
    finally:
        server.shutdown()
        server.server_close()


def _visit(browser: Any, url: str, dialogs: list[str]) -> Any:
    page = browser.new_page()
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.goto(url, wait_until="load")
    page.evaluate("window.scrollTo(0, document.body.scrollHeight)")
    page.evaluate(_SETTLED)
    return page


# What a payload could be waiting for has happened: two animation frames have run (lazy work that
# the scroll started) and every image has loaded or failed (an onerror payload would have run).
_SETTLED = """async () => {
    await new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)));
    await Promise.all(Array.from(document.images, (img) => img.complete ? null : new Promise((done) => {
        img.addEventListener("load", done);
        img.addEventListener("error", done);
    })));
}"""


def test_no_payload_runs_on_any_page(browser: Any, xss_url: tuple[str, Path]) -> None:
    base, out = xss_url
    paths = sorted(p.relative_to(out).as_posix() for p in out.rglob("*.html"))
    assert len(paths) > 10
    dialogs: list[str] = []
    for rel in paths:
        page = _visit(browser, base + rel, dialogs)
        try:
            assert page.evaluate("typeof window.__xss") == "undefined", rel
            assert page.query_selector("#xss-injected") is None, rel
            assert page.evaluate("document.querySelectorAll('iframe, object, embed').length") == 0, rel
        finally:
            page.close()
    assert dialogs == []


def test_the_payload_text_is_shown_not_run(browser: Any, xss_url: tuple[str, Path]) -> None:
    base, _ = xss_url
    dialogs: list[str] = []
    page = _visit(browser, base + "recipes/tiny/", dialogs)
    try:
        title = page.inner_text("h1")
        assert "<script>window.__xss=1</script>" in title
        # Clicking the script-URL links does nothing either (markdown made them plain text or inert).
        for link in page.query_selector_all("main a")[:40]:
            href = (link.get_attribute("href") or "").replace(" ", "").lower()
            assert not href.startswith(("javascript:", "vbscript:", "data:"))
    finally:
        page.close()
    assert dialogs == []


@pytest.mark.parametrize("query", ["script", "onerror", "svg", "iframe"])
def test_search_results_show_payloads_as_text(browser: Any, xss_url: tuple[str, Path], query: str) -> None:
    base, _ = xss_url
    dialogs: list[str] = []
    page = _visit(browser, f"{base}search/?q={query}", dialogs)
    try:
        # The query hits the payloads: wait for the results (slow on a busy machine), then look.
        page.wait_for_function("document.querySelector('#search-results li') !== null", timeout=20000)
        page.evaluate(_SETTLED)
        assert page.evaluate("typeof window.__xss") == "undefined"
        assert page.query_selector("#xss-injected") is None
        assert page.query_selector("#search-results img, #search-results svg, #search-results script") is None
    finally:
        page.close()
    assert dialogs == []

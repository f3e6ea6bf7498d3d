"""A big site's search index comes in shards; the search page merges them and finds every page."""

from __future__ import annotations

import functools
import http.server
import sys
import threading
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from builder.config import load_config
from builder.engine.incremental import build
from builder.site.search import BUNDLE_DIR, SearchRecord, shard_prefixes
from tests.conftest import REPO

sys.path.insert(0, str(REPO / "bench"))
import generate  # noqa: E402

pytestmark = pytest.mark.browser
RECIPES = 300  # and a case study and a post: 302 pages, over the sharding threshold (256)


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        pass


@pytest.fixture(scope="module")
def sharded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    base = tmp_path_factory.mktemp("shards")
    root = base / "root"
    generate.write_site(root, RECIPES, 6, cases=1, posts=1)
    out = base / "site"
    build(load_config(root, out), cache=False)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(out)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/", out
    finally:
        server.shutdown()
        server.server_close()


def test_every_shard_is_searched(browser: Any, sharded: tuple[str, Path]) -> None:
    base, out = sharded
    assert sorted(p.name for p in (out / "pagefind-shards").iterdir())  # the site is sharded
    # One recipe per shard (from #100 on, so its number is rare), found by its title.
    wanted: dict[str, int] = {}
    pages = [SearchRecord(f"recipes/{generate.recipe_slug(i)}/", "", "Recipe", "") for i in range(RECIPES)]
    pages += [SearchRecord("case-studies/c/", "", "Case study", ""), SearchRecord("news/n/", "", "News", "")]
    for index, prefix in enumerate(shard_prefixes(pages)[100:RECIPES], start=100):
        wanted.setdefault(prefix, index)
    assert BUNDLE_DIR in wanted and len(wanted) > 1
    page = browser.new_page()
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type in ("error", "warning") else None)
    try:
        for prefix, index in sorted(wanted.items()):
            slug = generate.recipe_slug(index)
            quant = generate.QUANTS[index % len(generate.QUANTS)].upper()
            query = urllib.parse.quote(f"Synthetic model {index % 97} {quant} {index}")
            page.goto(f"{base}search/?q={query}", wait_until="load")
            page.wait_for_function("document.querySelector('#search-results li') !== null", timeout=15000)
            hrefs = [a.get_attribute("href") or "" for a in page.query_selector_all("#search-results li a")]
            assert any(f"recipes/{slug}/" in href for href in hrefs), (prefix, index, hrefs[:5])
    finally:
        page.close()
    assert errors == []

"""The home page, the paginated recipe list and the /choose/ pages at scale: a SYNTHETIC site of
1,000 recipes (bench/generate.py), only those pages rendered, each within the page budget."""

from __future__ import annotations

import gzip
import sys

import pytest
from bs4 import BeautifulSoup

from builder.config import load_config
from builder.engine.pipeline import load_and_reconcile
from builder.site import home
from builder.site.context import ContentSummary
from builder.site.render import make_context, page_jobs
from tests.conftest import REPO, synthetic_site

sys.path.insert(0, str(REPO / "bench"))
import bench_budget  # noqa: E402

RECIPES = 1000


def _gz(data: bytes) -> int:
    return len(gzip.compress(data, compresslevel=6, mtime=0))


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    monkeypatch = pytest.MonkeyPatch()
    try:
        root = synthetic_site(
            tmp_path_factory.mktemp("home") / "site", monkeypatch, recipes=RECIPES, rows=18, cases=0, posts=3
        )
        loaded = load_and_reconcile(load_config(root))
        assert loaded.recon is not None, loaded.problems.errors[:3]
        ctx = make_context(loaded.site, loaded.recon)
        wanted = ("index.html", "recipes/index.html", "recipes/page/", "choose/")
        # The bodies' summary feeds only the FAQ and search pages, not rendered here.
        summary = ContentSummary("", (), 0, {}, "")
        out = {path: job() for path, job in page_jobs(ctx, summary) if path.startswith(wanted)}
        out["static/site.css"] = ctx.assets.files[ctx.assets.urls["site.css"]]
        return out
    finally:
        monkeypatch.undo()


def test_every_such_page_stays_within_the_budget(pages: dict[str, bytes]) -> None:
    css = _gz(pages["static/site.css"])
    sizes = {path: _gz(data) + css for path, data in pages.items() if path.endswith(".html")}
    assert len([p for p in sizes if p.startswith("recipes/")]) == -(-RECIPES // home.PER_PAGE)
    assert len([p for p in sizes if p.startswith("choose/")]) == 6  # the chooser and five hardware
    over = {path: size for path, size in sizes.items() if size > bench_budget.BUDGET}
    assert over == {}


def test_home_page_counts_every_recipe_and_links_into_the_list(pages: dict[str, bytes]) -> None:
    soup = BeautifulSoup(pages["index.html"], "html.parser")
    assert not soup.select(".cards li")
    table = soup.select_one("table.model-table")
    assert table is not None
    counts = [int(a.get_text()) for a in table.select("tbody td a")]
    assert sum(counts) == RECIPES
    # Each count links to its group on the page of the list where the group starts.
    for link in table.select("tbody td a")[::37]:
        url, _, anchor = link["href"].partition("#")
        listing = BeautifulSoup(pages[url + "index.html"], "html.parser")
        assert listing.find(id=anchor) is not None, link["href"]
    assert len(soup.select("ul.recent")[0].find_all("li")) == home.RECENT_FILES
    assert soup.find("a", href="choose/") is not None


def test_recipe_list_pages_hold_every_recipe_once(pages: dict[str, bytes]) -> None:
    seen: list[str] = []
    for number in range(1, -(-RECIPES // home.PER_PAGE) + 1):
        soup = BeautifulSoup(pages[home.list_page_path(number)], "html.parser")
        seen += [a["href"] for a in soup.select(".cards li h4 a")]
        pager = soup.select_one("nav.pager")
        assert pager is not None
        current = pager.select_one("a[aria-current=page]")
        assert current is not None and current.get_text() == str(number)
    assert len(seen) == len(set(seen)) == RECIPES

"""Atom feed, sitemap, robots.txt, canonical and social meta: parsed, absolute, deterministic."""

from __future__ import annotations

import datetime as dt
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from bs4 import BeautifulSoup

from builder.config import load_config
from builder.engine.incremental import build
from builder.site.feeds import AtomEntry, atom_feed, fallback_date, robots_txt, sitemap
from tests.conftest import MakeSite

A = "{http://www.w3.org/2005/Atom}"
S = "{http://www.sitemaps.org/schemas/sitemap/0.9}"
BASE = "https://recipes.example.com/sub/"

POST = """\
    ---
    title: "Tiny <news> & more"
    date: 2026-02-03
    summary: A synthetic post.
    ---
    Read the [recipe](../../recipes/tiny/).
    """
OLDER = """\
    ---
    title: Older news
    date: 2026-01-05
    author: someone
    ---
    Older body.
    """


@pytest.fixture
def site_root(make_site: MakeSite) -> Path:
    return make_site(
        {
            "site.yaml": f"title: Test Recipes\nbase_url: {BASE}\n",
            "content/posts/tiny-news.md": POST,
            "content/posts/older.md": OLDER,
        }
    )


def _build(root: Path, out: Path) -> Path:
    build(load_config(root, out))
    return out


def test_news_feed_is_atom_newest_first_with_absolute_links(site_root: Path, tmp_path: Path) -> None:
    out = _build(site_root, tmp_path / "out")
    feed = ET.parse(out / "news/feed.xml").getroot()
    assert feed.tag == f"{A}feed"
    assert feed.findtext(f"{A}id") == BASE + "news/feed.xml"
    assert feed.findtext(f"{A}updated") == "2026-02-03T00:00:00Z"
    entries = feed.findall(f"{A}entry")
    assert [e.findtext(f"{A}title") for e in entries] == ["Tiny <news> & more", "Older news"]
    first = entries[0]
    assert first.findtext(f"{A}id") == BASE + "news/tiny-news/"
    link = first.find(f"{A}link")
    assert link is not None and link.get("href") == BASE + "news/tiny-news/"
    content = first.find(f"{A}content")
    assert content is not None and content.get("type") == "html"
    # relative links in the body resolve against the post's URL
    assert content.get("{http://www.w3.org/XML/1998/namespace}base") == BASE + "news/tiny-news/"
    body = BeautifulSoup(content.text or "", "html.parser")
    assert body.a is not None and body.a["href"] == "../../recipes/tiny/"
    assert entries[1].findtext(f"{A}author/{A}name") == "someone"
    # the feed is advertised on every page
    page = BeautifulSoup((out / "index.html").read_text(encoding="utf-8"), "html.parser")
    alt = page.find("link", rel="alternate", type="application/atom+xml")
    assert alt is not None and alt["href"] == "news/feed.xml"


def test_sitemap_lists_content_pages_with_content_dates(site_root: Path, tmp_path: Path) -> None:
    out = _build(site_root, tmp_path / "out")
    urlset = ET.parse(out / "sitemap.xml").getroot()
    entries = {u.findtext(f"{S}loc"): u.findtext(f"{S}lastmod") for u in urlset.findall(f"{S}url")}
    html_pages = {p.relative_to(out).as_posix() for p in out.rglob("*.html")}
    expected = {BASE + p.removesuffix("index.html") for p in html_pages} - {
        BASE + "404.html",
        BASE + "search/",
    }
    assert set(entries) == expected
    assert entries[BASE + "recipes/tiny/"] == "2026-01-02"  # verified and newest row
    assert entries[BASE + "news/tiny-news/"] == "2026-02-03"
    assert entries[BASE + "news/"] == "2026-02-03"
    assert entries[BASE] is None  # no content date, so no lastmod rather than the clock
    assert (out / "robots.txt").read_text() == f"User-agent: *\nDisallow:\n\nSitemap: {BASE}sitemap.xml\n"


def test_canonical_and_social_meta_use_base_url(site_root: Path, tmp_path: Path) -> None:
    out = _build(site_root, tmp_path / "out")
    soup = BeautifulSoup((out / "recipes/tiny/index.html").read_text(encoding="utf-8"), "html.parser")
    canonical = soup.find("link", rel="canonical")
    assert canonical is not None and canonical["href"] == BASE + "recipes/tiny/"
    meta = {m.get("property") or m.get("name"): m.get("content") for m in soup.find_all("meta")}
    assert meta["og:url"] == BASE + "recipes/tiny/"
    assert meta["og:type"] == "article"
    assert meta["og:site_name"] == "Test Recipes"
    assert meta["og:title"].startswith("Tiny model on a test GPU")
    assert meta["twitter:card"] == "summary"
    assert meta["og:description"] == meta["description"] == "A synthetic recipe used by the test-suite."


def test_404_and_search_are_noindex_and_404_links_from_the_base_path(site_root: Path, tmp_path: Path) -> None:
    out = _build(site_root, tmp_path / "out")
    nf = BeautifulSoup((out / "404.html").read_text(encoding="utf-8"), "html.parser")
    assert nf.find("meta", attrs={"name": "robots", "content": "noindex"}) is not None
    assert nf.find("link", rel="canonical") is None
    # served at any depth, so its links are absolute paths under the base URL's path
    stylesheet = nf.find("link", rel="stylesheet")
    assert stylesheet is not None and stylesheet["href"].startswith("/sub/static/site.")
    form = nf.find("form", role="search")
    assert form is not None and form["action"] == "/sub/search/index.html"
    search = BeautifulSoup((out / "search/index.html").read_text(encoding="utf-8"), "html.parser")
    assert search.find("meta", attrs={"name": "robots", "content": "noindex"}) is not None


def test_feeds_and_sitemap_are_identical_across_builds(site_root: Path, tmp_path: Path) -> None:
    a = _build(site_root, tmp_path / "a")
    b = _build(site_root, tmp_path / "b")
    for rel in ("news/feed.xml", "sitemap.xml", "robots.txt"):
        assert (a / rel).read_bytes() == (b / rel).read_bytes(), rel


def test_feed_without_posts_is_dated_from_source_date_epoch_not_the_clock(
    make_site: MakeSite, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = make_site()
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1767225600")  # 2026-01-01
    out = _build(root, tmp_path / "out")
    feed = ET.parse(out / "news/feed.xml").getroot()
    assert feed.findtext(f"{A}updated") == "2026-01-01T00:00:00Z"
    assert feed.findall(f"{A}entry") == []
    monkeypatch.delenv("SOURCE_DATE_EPOCH")
    assert fallback_date(load_config(root)) == dt.date(1970, 1, 1)


def test_atom_feed_escapes_text() -> None:
    entry = AtomEntry(
        id="https://h/x/", title="a < b & c", url="https://h/x/", updated=dt.date(2026, 1, 2), summary="]]>"
    )
    data = atom_feed(
        title="T & T",
        feed_url="https://h/f.xml",
        page_url="https://h/",
        author="me",
        entries=[entry],
        updated=dt.date(2026, 1, 2),
    )
    root = ET.fromstring(data)
    assert root.findtext(f"{A}title") == "T & T"
    assert root.findtext(f"{A}entry/{A}title") == "a < b & c"
    assert root.findtext(f"{A}entry/{A}summary") == "]]>"


def test_robots_points_at_the_sitemap() -> None:
    assert robots_txt("https://h/").decode().endswith("Sitemap: https://h/sitemap.xml\n")


def test_newest_dates_per_recipe_across_chunks() -> None:
    import pyarrow as pa

    from builder.site.feeds import newest_dates

    recipes = pa.chunked_array([["a", "b", "a"], ["b", "c"]])
    dates = pa.chunked_array(
        [
            pa.array([dt.date(2026, 7, 6), dt.date(1969, 12, 31), dt.date(2026, 7, 27)], pa.date32()),
            pa.array([dt.date(1969, 1, 1), dt.date(2026, 1, 1)], pa.date32()),
        ]
    )
    table = pa.table({"recipe": recipes, "date": dates})
    assert newest_dates(table) == {
        "a": dt.date(2026, 7, 27),
        "b": dt.date(1969, 12, 31),
        "c": dt.date(2026, 1, 1),
    }
    assert newest_dates(table.slice(0, 0)) == {}


def test_sitemap_escapes_text_and_writes_an_empty_urlset() -> None:
    empty = sitemap("https://h/", ["x.css"], {})
    assert ET.fromstring(empty).tag == f"{S}urlset" and len(ET.fromstring(empty)) == 0
    urlset = ET.fromstring(sitemap("https://h/a&b/", ["recipes/x/index.html"], {}))
    assert [loc.text for loc in urlset.iter(f"{S}loc")] == ["https://h/a&b/recipes/x/"]


def test_the_sitemap_is_kept_through_a_body_edit_and_made_again_for_a_new_page(
    site_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import textwrap

    from builder.engine.incremental import IncrementalBuilder
    from builder.site import toolkit

    out = tmp_path / "out"
    engine = IncrementalBuilder(load_config(site_root, out), workers=1)
    assert engine.build(None).ok
    dated: list[int] = []
    real = toolkit.content_dates
    monkeypatch.setattr(toolkit, "content_dates", lambda site: dated.append(1) or real(site))
    recipe = site_root / "content/recipes/tiny.md"
    recipe.write_text(recipe.read_text(encoding="utf-8") + "\nA synthetic edit.\n", encoding="utf-8")
    report = engine.build({recipe})
    assert report.ok and "recipes/tiny/index.html" in report.written
    assert dated == []
    post = site_root / "content/posts/newer.md"
    post.write_text(textwrap.dedent(OLDER).replace("2026-01-05", "2026-03-01"), encoding="utf-8")
    report = engine.build({post})
    assert report.ok and "sitemap.xml" in report.written and dated == [1]
    clean = _build(site_root, tmp_path / "clean")
    assert (out / "sitemap.xml").read_bytes() == (clean / "sitemap.xml").read_bytes()
    assert f"{BASE}news/newer/" in (out / "sitemap.xml").read_text(encoding="utf-8")

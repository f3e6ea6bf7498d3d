"""Script injection: payloads in every contributor-controlled field stay text.

Every output file of the payload site is parsed: no element, attribute, URL or script comes from
contributor text, and the payloads are still there as visible text (escaped, not dropped). The
in-browser proof (nothing runs, no dialog, no injected element) is tests/browser/test_xss_browser.py.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path

import pytest
from bs4 import BeautifulSoup, Tag

from builder.config import load_config
from builder.engine.incremental import build
from tests.xss_site import PAYLOADS, RUN, write_xss_site

URL_ATTRIBUTES = ("href", "src", "action", "formaction", "xlink:href", "poster", "data", "srcset")
BAD_SCHEMES = ("javascript:", "vbscript:", "data:")


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("xss")
    root = write_xss_site(base / "root")
    out = base / "site"
    build(load_config(root, out), cache=False, workers=1)
    return out


@pytest.fixture(scope="module")
def allowed_tags(shipped_site: Path) -> set[str]:
    """Every tag the templates write for the shipped site: the payload site may use no other."""
    tags: set[str] = set()
    for page in shipped_site.rglob("*.html"):
        tags |= {
            t.name for t in BeautifulSoup(page.read_text(encoding="utf-8"), "html.parser").find_all(True)
        }
    return tags


def pages(out: Path) -> Iterator[tuple[str, BeautifulSoup]]:
    for path in sorted(out.rglob("*.html")):
        yield path.relative_to(out).as_posix(), BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser")


def test_no_markup_from_contributors(built: Path, allowed_tags: set[str]) -> None:
    seen = 0
    for rel, soup in pages(built):
        seen += 1
        assert soup.find(id="xss-injected") is None, rel
        for tag in soup.find_all(True):
            assert isinstance(tag, Tag)
            assert tag.name in allowed_tags, f"{rel}: <{tag.name}> is not one of the templates' tags"
            for name, value in tag.attrs.items():
                assert not name.lower().startswith("on"), f"{rel}: <{tag.name} {name}=…>"
                text = " ".join(value) if isinstance(value, list) else str(value)
                if name.lower() in URL_ATTRIBUTES:
                    squashed = "".join(text.split()).lower()
                    assert not squashed.startswith(BAD_SCHEMES), f"{rel}: <{tag.name} {name}={text!r}>"
                assert (
                    RUN not in text
                    or name in ("content", "aria-label", "title", "alt", "data-pagefind-meta")
                    or (name.startswith("data-") and tag.name != "script")
                ), f"{rel}: payload in <{tag.name} {name}>"
    assert seen > 10


def test_scripts_are_ours_and_embedded_data_is_inert_json(built: Path) -> None:
    for rel, soup in pages(built):
        for script in soup.find_all("script"):
            kind = script.get("type")
            if kind in ("application/json", "application/ld+json"):
                json.loads(script.string or "")  # a breakout would leave broken JSON behind
                assert "</script" not in (script.string or "").lower()
                continue
            src = script.get("src")
            assert src and not src.lower().startswith(BAD_SCHEMES), f"{rel}: inline or foreign script"
            assert RUN not in src and "<" not in src, rel
            assert (script.string or "").strip() == "", f"{rel}: inline script body"


def test_payloads_survive_as_visible_text(built: Path) -> None:
    """Escaped, not stripped: a reader sees exactly what the contributor wrote."""
    recipe = BeautifulSoup((built / "recipes/tiny/index.html").read_text(encoding="utf-8"), "html.parser")
    assert recipe.h1 is not None and PAYLOADS[0] in recipe.h1.get_text()
    text = recipe.get_text()
    for payload in (PAYLOADS[0], PAYLOADS[1], PAYLOADS[4]):
        assert payload in text
    questions = [a.get_text() for a in recipe.select("details summary, .faq h3, .faq summary")]
    assert any("onerror" in q for q in questions), questions
    post = BeautifulSoup((built / "news/xss-post/index.html").read_text(encoding="utf-8"), "html.parser")
    assert PAYLOADS[0] in post.get_text()


def test_markdown_links_never_carry_script_urls(built: Path) -> None:
    for rel, soup in pages(built):
        for anchor in soup.find_all(["a", "img"]):
            for attribute in ("href", "src"):
                value = anchor.get(attribute)
                if value is None:
                    continue
                squashed = "".join(str(value).split()).lower()
                assert "javascript" not in squashed and not squashed.startswith(BAD_SCHEMES), (rel, value)


def test_feeds_and_data_files_are_well_formed_with_the_payloads_as_text(built: Path) -> None:
    for feed in list(built.rglob("*.xml")):
        root = ET.parse(feed).getroot()  # well-formed: no payload broke out of its element
        for element in root.iter():
            assert not element.tag.lower().endswith(("script", "img", "svg", "iframe")), feed
    api = json.loads((built / "api/recipes/tiny.json").read_text(encoding="utf-8"))
    assert api["meta"]["title"].startswith("tiny <script>")
    records = next(built.glob("search/records.*.js")).read_text(encoding="utf-8")
    assert "<" not in records.removeprefix("window.SEARCH_RECORDS=")
    json.loads(records[len("window.SEARCH_RECORDS=") : -2])


def test_the_row_file_name_is_text_everywhere(built: Path) -> None:
    name = 'x"y<img src=x onerror=window.__xss=1>.csv'
    rows = (built / "data/rows.csv").read_text(encoding="utf-8")
    assert name.replace('"', '""') in rows
    for rel, soup in pages(built):
        for tag in soup.find_all("img"):
            assert tag.get("src") != "x", rel

"""Search: the Pagefind bundle, the file-system fallback, and which pages carry script."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from bs4 import BeautifulSoup

from builder.config import load_config
from builder.site.search import (
    SearchRecord,
    fallback_script,
    is_indexed_page,
    stand_in_html,
    stand_ins,
)
from tests.conftest import REPO


@pytest.fixture(scope="module")
def shipped(shipped_site: Path) -> Path:
    return shipped_site


@pytest.mark.parametrize(
    ("path", "indexed"),
    [
        ("recipes/x/index.html", True),
        ("case-studies/x/index.html", True),
        ("news/x/index.html", True),
        ("recipes/index.html", False),
        ("news/index.html", False),
        ("troubleshooting/index.html", False),
        ("index.html", False),
        ("models/x/index.html", False),
    ],
)
def test_only_content_pages_are_indexed(path: str, indexed: bool) -> None:
    assert is_indexed_page(path) is indexed


def test_bundle_ships_engine_and_index_but_not_pagefinds_ui(shipped: Path) -> None:
    bundle = shipped / "pagefind"
    names = {p.relative_to(bundle).as_posix() for p in bundle.rglob("*") if p.is_file()}
    assert {"pagefind.js", "pagefind-entry.json", "wasm.en.pagefind"} <= names
    assert any(n.startswith("fragment/") for n in names) and any(n.startswith("index/") for n in names)
    assert not any("-ui" in n or "highlight" in n for n in names)
    entry = json.loads((bundle / "pagefind-entry.json").read_text())
    # one stand-in page per recipe, case study and post (questions are sections of their recipe's)
    pages = len(list((shipped / "recipes").glob("*/index.html")))
    pages += len(list((shipped / "case-studies").glob("*/index.html")))
    pages += len(list((shipped / "news").glob("*/index.html")))
    assert entry["languages"]["en"]["page_count"] == pages


def test_fallback_records_cover_every_question_and_are_loadable_as_a_script(shipped: Path) -> None:
    page = BeautifulSoup((shipped / "search/index.html").read_text(encoding="utf-8"), "html.parser")
    box = page.find(id="search")
    assert box is not None
    fallback = shipped / "search" / box["data-fallback"]
    assert box["data-bundle"] == "../pagefind/pagefind.js"
    text = fallback.read_text(encoding="utf-8")
    assert text.startswith("window.SEARCH_RECORDS=") and text.endswith(";\n")
    records = json.loads(text[len("window.SEARCH_RECORDS=") : -2])
    index = BeautifulSoup((shipped / "troubleshooting/index.html").read_text(), "html.parser")
    questions = [a.get_text(strip=True) for a in index.select(".faq-index a")]
    assert [r["t"] for r in records if r["k"] == "Troubleshooting"] == questions
    kinds = {r["k"] for r in records}
    assert kinds == {"Recipe", "Troubleshooting", "Case study", "News"}
    assert all(
        not r["u"].startswith("/") for r in records
    )  # relative to the site root, so any sub-path works


def test_fallback_script_cannot_be_closed_by_data() -> None:
    script = fallback_script([SearchRecord("recipes/x/", "</script><b>", "Recipe", "a & b")]).decode()
    assert "<" not in script.removeprefix("window.SEARCH_RECORDS=")
    assert json.loads(script[len("window.SEARCH_RECORDS=") : -2])[0]["t"] == "</script><b>"


def test_stand_in_page_escapes_names_its_target_and_heads_each_question_with_its_anchor() -> None:
    html = stand_in_html(
        [
            SearchRecord("recipes/x/", "X <i>", "Recipe", "About <script>x</script>"),
            SearchRecord("recipes/x/#faq-q", "Why <b>?", "Troubleshooting", "X <i>. Because & so"),
            SearchRecord("recipes/x/#faq-r", "And then?", "Troubleshooting", "Then"),
        ]
    )
    soup = BeautifulSoup(html, "html.parser")
    assert soup.h1 is not None and soup.h1.get_text() == "X <i>"
    assert soup.h1["data-pagefind-meta"] == "target:/recipes/x/"
    assert soup.main is not None and soup.main["data-pagefind-meta"] == "kind:Recipe"
    assert [(h.get("id"), h.get_text()) for h in soup.find_all("h2")] == [
        ("faq-q", "Why <b>?"),
        ("faq-r", "And then?"),
    ]
    assert [h.find_next("p").get_text() for h in soup.find_all("h2")] == ["Because & so", "Then"]
    assert soup.find(["b", "i", "script"]) is None


def test_a_question_of_another_page_is_refused() -> None:
    with pytest.raises(ValueError, match="recipes/y/#faq-q is not a section of recipes/x/"):
        stand_in_html(
            [
                SearchRecord("recipes/x/", "X", "Recipe", ""),
                SearchRecord("recipes/y/#faq-q", "Q", "Troubleshooting", ""),
            ]
        )


def test_stand_ins_are_one_page_per_site_page_with_its_questions() -> None:
    records = [
        SearchRecord("recipes/a/", "A", "Recipe", "a"),
        SearchRecord("recipes/b/", "B", "Recipe", "b"),
        SearchRecord("recipes/a/#faq-1", "A1", "Troubleshooting", "a1"),
        SearchRecord("recipes/b/#faq-1", "B1", "Troubleshooting", "b1"),
        SearchRecord("recipes/a/#faq-2", "A2", "Troubleshooting", "a2"),
        SearchRecord("news/n/", "N", "News", "n"),
    ]
    pages = {
        BeautifulSoup(page, "html.parser").h1["data-pagefind-meta"]: [  # type: ignore[index]
            h.get("id") for h in BeautifulSoup(page, "html.parser").find_all("h2")
        ]
        for page in stand_ins(records).values()
    }
    assert pages == {
        "target:/recipes/a/": ["faq-1", "faq-2"],
        "target:/recipes/b/": ["faq-1"],
        "target:/news/n/": [],
    }


def test_no_script_on_pages_without_charts_except_search(shipped: Path) -> None:
    """Budget rule: JavaScript only where a chart is drawn, search on the search page and the
    chooser on /choose/."""
    for page in shipped.rglob("*.html"):
        soup = BeautifulSoup(page.read_text(encoding="utf-8"), "html.parser")
        scripts = [
            s
            for s in soup.find_all("script")
            if s.get("type") not in ("application/json", "application/ld+json")
        ]
        rel = page.relative_to(shipped).as_posix()
        if rel == "search/index.html":
            assert len(scripts) == 1 and "static/search." in scripts[0]["src"]
        elif rel == "choose/index.html":
            assert len(scripts) == 1 and "static/choose." in scripts[0]["src"]
        elif not soup.select(".chart"):
            assert scripts == [], rel
    header = BeautifulSoup((shipped / "index.html").read_text(encoding="utf-8"), "html.parser").find(
        "form", role="search"
    )
    assert header is not None and header["action"] == "search/index.html" and header["method"] == "get"


def test_records_digest_tells_apart_fields_holding_nul() -> None:
    """Fields are joined by NUL unless one holds a NUL; then they are length-prefixed instead."""
    from builder.site.search import SearchRecord, records_digest

    def rec(*fields: str) -> SearchRecord:
        return SearchRecord(*fields)

    digests = {
        records_digest([rec("a", "b", "c", "d")]),
        records_digest([rec("a\0b", "c", "d", "")]),
        records_digest([rec("a", "b\0c", "d", "")]),
        records_digest([rec("a", "b", "c\0d", "")]),
        records_digest([rec("a", "b", "c", "d"), rec("", "", "", "")]),
        records_digest([]),
    }
    assert len(digests) == 6
    assert records_digest([rec("x", "y", "z", "w")]) == records_digest([rec("x", "y", "z", "w")])


def test_every_record_s_text_is_its_words_one_space_apart() -> None:
    """The fallback cuts records' text as it is: page_records collapses it (bodies come collapsed
    from the markdown cache), code blocks, line breaks and the troubleshooting answers included."""
    from builder.content.markdown import Markdown
    from builder.data.load import load_site
    from builder.errors import Problems
    from builder.site.search import page_records

    records = page_records(load_site(load_config(REPO), Problems()), Markdown())
    assert records and any("\n" in r.text or "  " in r.text for r in records) is False
    assert all(r.text == " ".join(r.text.split()) for r in records)
    assert {r.kind for r in records} >= {"Recipe", "Troubleshooting", "Case study", "News"}


def test_a_question_s_text_is_its_recipe_s_title_and_answer_collapsed() -> None:
    """Made from parts collapsed apart (the title per recipe, the answer with the body): the same
    text as collapsing "<title>. <answer>" whole, titles with odd whitespace and empty answers too."""
    import dataclasses

    from builder.content.markdown import Markdown
    from builder.data.load import load_site
    from builder.errors import Problems
    from builder.site.faq import faq_entries
    from builder.site.search import page_records

    site = load_site(load_config(REPO), Problems())
    markdown = Markdown()
    entries = faq_entries(site, markdown)
    assert entries
    odd_titles = [" Spaced  title ", "Tab\there.", "ends with dot.", "\n"]
    slugs = sorted({entry.recipe.slug for entry in entries})
    recipes = {
        slug: dataclasses.replace(
            site.recipes[slug],
            meta=site.recipes[slug].meta.model_copy(update={"title": odd_titles[n % len(odd_titles)]}),
        )
        for n, slug in enumerate(slugs)
    }
    odd = []
    for n, entry in enumerate(entries):
        recipe = recipes[entry.recipe.slug]
        answer = ["  two  spaces ", "", "line\nbreak", "x"][n % 4]
        item = dataclasses.replace(entry.item, answer_text=answer, answer_words=" ".join(answer.split()))
        odd.append(dataclasses.replace(entry, recipe=recipe, item=item))
    got = [r.text for r in page_records(site, markdown, odd) if r.kind == "Troubleshooting"]
    expected = [" ".join(f"{e.recipe.meta.title}. {e.item.answer_text}".split()) for e in odd]
    assert got == expected

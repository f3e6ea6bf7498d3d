"""The troubleshooting FAQ: accordion markup, FAQPage JSON-LD and the site-wide index."""

from __future__ import annotations

import json
import shutil
import textwrap
from pathlib import Path
from typing import Any

import pytest
from bs4 import BeautifulSoup

from builder.config import load_config
from builder.content.markdown import FaqItem
from builder.engine.incremental import IncrementalBuilder, build
from builder.site import faq
from builder.site.faq import INLINE_QUESTIONS, excerpt, faq_jsonld
from tests.conftest import SITES, MakeSite

HOSTILE_Q = "Why does </script><script>alert(1)</script> & <!-- show up?"

RECIPE = """\
    ---
    title: Tiny model, second build
    model: example/tiny
    checkpoint: example/tiny-int4
    hardware: test-gpu
    engine: vllm
    engine_version: "1.0.0"
    flags: "--max-model-len 4096"
    ---
    Synthetic recipe for the FAQ tests.

    ## Troubleshooting

    ### {q}

    Because the question
    spans two lines in its answer.

    ### It says `OOM` at start

    Lower `--max-model-len`.

    ## After the FAQ

    Not a question.
    """


def _soup(path: Path) -> BeautifulSoup:
    return BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser")


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The minimal site plus a recipe whose first question holds markup; built once for the module."""
    root = tmp_path_factory.mktemp("faq") / "root"
    shutil.copytree(SITES / "minimal", root)
    (root / "content/recipes/second.md").write_text(
        textwrap.dedent(RECIPE).format(q=HOSTILE_Q), encoding="utf-8"
    )
    out = root.parent / "out"
    build(load_config(root, out))
    return out


def test_each_question_is_a_details_with_an_anchor_and_a_plain_link(built: Path) -> None:
    soup = _soup(built / "recipes/second/index.html")
    items = soup.select("section.faq details.faq-item")
    assert [d.summary.get_text(strip=True) for d in items if d.summary] == [HOSTILE_Q, "It says OOM at start"]
    for details in items:
        answer = details.select_one(".faq-answer[id]")
        assert answer is not None, "the anchor sits inside <details> so a link to it opens the answer"
        assert answer["id"].startswith("faq-")
        link = answer.select_one(".faq-link a")
        assert link is not None and link["href"] == f"#{answer['id']}"
    # "## After the FAQ" ends the FAQ: it is a section of the body, not a question
    assert soup.find("h2", string="After the FAQ") is not None


def test_faq_jsonld_parses_and_a_script_tag_in_a_question_cannot_break_out(built: Path) -> None:
    soup = _soup(built / "recipes/second/index.html")
    ld = soup.find_all("script", type="application/ld+json")
    assert len(ld) == 1
    data = json.loads(ld[0].string)
    assert data["@type"] == "FAQPage"
    questions = data["mainEntity"]
    assert [q["name"] for q in questions] == [HOSTILE_Q, "It says OOM at start"]
    assert questions[0]["acceptedAnswer"]["text"] == "Because the question spans two lines in its answer."
    assert questions[0]["url"].startswith("https://example.org/recipes/second/#faq-")
    # the hostile question produced no element of its own anywhere on the page
    assert not soup.find_all("script", type=lambda t: t != "application/ld+json")


def test_troubleshooting_index_lists_every_question_linking_to_its_answer(built: Path) -> None:
    index = _soup(built / "troubleshooting/index.html")
    links = index.select("ul.faq-index a")
    texts = [a.get_text(strip=True) for a in links]
    assert texts == [HOSTILE_Q, "It says OOM at start", "Why is it slow?"]  # recipes by slug, then page order
    for link in links:
        page, _, anchor = link["href"].partition("#")
        assert page.startswith("../recipes/")
        target = _soup(built / "troubleshooting" / page / "index.html")
        assert target.find(id=anchor) is not None, link["href"]


def test_troubleshooting_index_groups_by_model_then_recipe(built: Path) -> None:
    index = _soup(built / "troubleshooting/index.html")
    assert [h.get_text(strip=True) for h in index.select("section.faq-group h2")] == ["example/tiny"]
    assert [h.get_text(strip=True) for h in index.select("section.faq-group h3")] == [
        "Tiny model, second build",
        "Tiny model on a test GPU",
    ]


def test_recipe_without_questions_has_no_faq_and_no_jsonld(make_site: MakeSite, tmp_path: Path) -> None:
    tiny = (SITES / "minimal/content/recipes/tiny.md").read_text(encoding="utf-8")
    root = make_site({"content/recipes/tiny.md": tiny.split("## Troubleshooting")[0]})
    out = tmp_path / "out"
    build(load_config(root, out))
    soup = _soup(out / "recipes/tiny/index.html")
    assert soup.select("section.faq") == []
    assert soup.find_all("script", type="application/ld+json") == []
    assert "No troubleshooting questions yet" in _soup(out / "troubleshooting/index.html").get_text()


def test_faq_jsonld_shape() -> None:
    item = FaqItem("Q?", "faq-q", "<p>A.</p>", "A.")
    assert faq_jsonld([item], "https://h/recipes/x/") == {
        "@context": "https://schema.org",
        "@type": "FAQPage",
        "url": "https://h/recipes/x/",
        "mainEntity": [
            {
                "@type": "Question",
                "name": "Q?",
                "url": "https://h/recipes/x/#faq-q",
                "acceptedAnswer": {"@type": "Answer", "text": "A."},
            }
        ],
    }


@pytest.mark.parametrize(
    ("text", "limit", "expected"),
    [
        ("short answer", 50, "short answer"),
        ("one two three four", 9, "one two…"),
        ("a,  b\n c", 50, "a, b c"),
        ("words, then more", 7, "words…"),
    ],
)
def test_excerpt_cuts_at_a_word(text: str, limit: int, expected: str) -> None:
    assert excerpt(text, limit) == expected


def test_many_questions_split_into_one_page_per_base_model(make_site: MakeSite, tmp_path: Path) -> None:
    """Past INLINE_QUESTIONS the index lists models; each model's page lists its questions."""
    many = "\n".join(
        f"### Synthetic question {n}?\n\nSynthetic answer {n}.\n" for n in range(INLINE_QUESTIONS)
    )
    files = {
        "content/recipes/second.md": textwrap.dedent(RECIPE)
        .format(q=HOSTILE_Q)
        .replace("model: example/tiny", "model: Example/Other Model"),
        "content/recipes/third.md": textwrap.dedent(RECIPE)
        .format(q="Third?")
        .replace("## After the FAQ", many + "\n## After the FAQ"),
    }
    root = make_site(files)
    out = tmp_path / "out"
    build(load_config(root, out))
    index = _soup(out / "troubleshooting/index.html")
    assert index.select("ul.faq-index") == []
    links = {a.get_text(strip=True): a["href"] for a in index.select("ul.faq-models a")}
    assert links == {
        "Example/Other Model": "../troubleshooting/example-other-model/",
        "example/tiny": "../troubleshooting/example-tiny/",
    }
    other = _soup(out / "troubleshooting/example-other-model/index.html")
    assert other.h1 is not None and other.h1.get_text() == "Troubleshooting: Example/Other Model"
    assert [a.get_text(strip=True) for a in other.select("ul.faq-index a")] == [
        HOSTILE_Q,
        "It says OOM at start",
    ]
    tiny = _soup(out / "troubleshooting/example-tiny/index.html")
    questions = tiny.select("ul.faq-index a")
    assert len(questions) == 1 + 2 + INLINE_QUESTIONS  # tiny's one, third's two and the many
    target = out / "troubleshooting/example-tiny" / questions[0]["href"].partition("#")[0] / "index.html"
    assert target.resolve().is_file()


def test_a_body_edit_re_renders_only_its_models_troubleshooting_page(
    make_site: MakeSite, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    many = "\n".join(
        f"### Synthetic question {n}?\n\nSynthetic answer {n}.\n" for n in range(INLINE_QUESTIONS)
    )
    root = make_site(
        {
            "content/recipes/second.md": textwrap.dedent(RECIPE)
            .format(q="Second?")
            .replace("model: example/tiny", "model: Example/Other Model"),
            "content/recipes/third.md": textwrap.dedent(RECIPE)
            .format(q="Third?")
            .replace("## After the FAQ", many + "\n## After the FAQ"),
        }
    )
    engine = IncrementalBuilder(load_config(root, tmp_path / "out"), workers=1)
    assert engine.build(None).ok
    second = root / "content/recipes/second.md"
    second.write_text(second.read_text().replace("Second?", "Second, reworded?"))
    rendered: list[str] = []
    real = faq.render_model_troubleshooting

    def spy(ctx: Any, model: str, slug: str) -> bytes:
        rendered.append(model)
        return real(ctx, model, slug)

    monkeypatch.setattr(faq, "render_model_troubleshooting", spy)
    report = engine.build({second})
    assert report.ok
    assert rendered == ["Example/Other Model"]
    assert "troubleshooting/example-other-model/index.html" in report.written


def test_an_edit_outside_the_questions_renders_no_troubleshooting_page(
    make_site: MakeSite, tmp_path: Path
) -> None:
    root = make_site({"content/recipes/second.md": textwrap.dedent(RECIPE).format(q="Second?")})
    out = tmp_path / "out"
    engine = IncrementalBuilder(load_config(root, out), workers=1)
    assert engine.build(None).ok
    search_page = (out / "search/index.html").read_bytes()
    second = root / "content/recipes/second.md"
    second.write_text(second.read_text().replace("Synthetic recipe for", "A synthetic recipe, edited, for"))
    report = engine.build({second})
    assert report.ok
    assert "recipes/second/index.html" in report.written
    assert not [p for p in report.written if p.startswith("troubleshooting/")]
    # The search records changed: the page names the new fallback file, which exists.
    assert "search/index.html" in report.written
    assert (out / "search/index.html").read_bytes() != search_page
    fallback = BeautifulSoup((out / "search/index.html").read_text(), "html.parser").select_one("#search")
    assert fallback is not None
    assert (out / "search" / str(fallback["data-fallback"])).resolve().is_file()

    second.write_text(second.read_text().replace("Lower `--max-model-len`.", "Lower it."))
    report = engine.build({second})
    assert report.ok
    assert "troubleshooting/index.html" in report.written
    page = _soup(out / "troubleshooting/index.html")
    assert "Lower it." in page.get_text()

    clean = tmp_path / "clean"
    build(load_config(root, clean), cache=False)
    for rel in ("troubleshooting/index.html", "search/index.html"):
        assert (out / rel).read_bytes() == (clean / rel).read_bytes(), rel

"""Names a pull request chooses must not collide with what the build writes: page slugs and ids
against the files beside the pages, row files against each other's element ids."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from bs4 import BeautifulSoup

from builder.config import load_config
from builder.content.models import RESERVED_SLUGS
from builder.engine.incremental import build
from builder.review.check import check_site
from tests.conftest import MakeSite

ROWS = (
    "date,recipe,node,engine_version,prompt_tokens,concurrency,decode_tok_s\n"
    "2026-01-03,tiny,node-a,1.0.0,512,1,40.5\n"
)
POST = "---\ntitle: A post\ndate: 2026-01-02\n---\nbody\n"
CASE = (
    "---\ntitle: C\nquestion: Q?\nverdict: V.\ndate: 2026-01-05\narms:\n"
    "  - label: A\n    role: baseline\n    recipe: tiny\n---\nbody\n"
)


def test_reserved_slugs_are_every_file_the_build_writes_beside_pages(
    make_site: MakeSite, tmp_path: Path
) -> None:
    """Derived from a build: in every folder that holds page folders, the files written beside
    them are reserved names, so no slug, id or model can take their place."""
    root = make_site({"content/posts/p.md": POST, "content/case-studies/c.md": CASE})
    recipe = (root / "content/recipes/tiny.md").read_text(encoding="utf-8")
    (root / "content/recipes/tiny2.md").write_text(recipe, encoding="utf-8")  # a comparison page
    out = tmp_path / "out"
    build(load_config(root, out))
    beside: set[str] = set()
    for folder in [p for p in out.rglob("*") if p.is_dir()]:
        pages = [d for d in folder.iterdir() if d.is_dir() and (d / "index.html").is_file()]
        if pages:
            beside |= {f.name for f in folder.iterdir() if f.is_file()}
    assert beside <= RESERVED_SLUGS
    assert {"index.html", "feed.xml"} <= beside


def test_slugs_and_ids_that_collide_with_an_output_file_are_refused(make_site: MakeSite) -> None:
    recipe = (make_site() / "content/recipes/tiny.md").read_text(encoding="utf-8")
    root = make_site(
        {
            "content/recipes/index.html.md": recipe,
            "content/posts/feed.xml.md": POST,
            "content/case-studies/index.html.md": CASE,
            "data/hardware.yaml": "test-gpu:\n  name: GPU\nindex.html:\n  name: Other\n",
        }
    )
    report = check_site(load_config(root))
    reserved = "is reserved: the site writes feed.xml and index.html beside the pages; choose another name"
    assert [p.format() for p in report.errors] == [
        f"content/case-studies/index.html.md: 'index.html' {reserved}",
        f"content/posts/feed.xml.md: 'feed.xml' {reserved}",
        f"content/recipes/index.html.md: 'index.html' {reserved}",
        f"data/hardware.yaml:3: 'index.html' {reserved}",
    ]


def test_a_model_named_like_an_output_file_gets_a_page_of_its_own(
    make_site: MakeSite, tmp_path: Path
) -> None:
    """``model: index.html`` passed check and failed the build with a staging path."""
    root = make_site()
    recipe = (
        (root / "content/recipes/tiny.md")
        .read_text(encoding="utf-8")
        .replace("example/tiny\n", "index.html\n")
    )
    (root / "content/recipes/tiny.md").write_text(recipe, encoding="utf-8")
    (root / "content/recipes/tiny2.md").write_text(recipe, encoding="utf-8")
    assert check_site(load_config(root)).errors == []
    out = tmp_path / "out"
    build(load_config(root, out))
    assert (out / "models/index.html").is_file()
    assert (out / "models/index.html-2/index.html").is_file()


def test_row_files_whose_names_slugify_alike_give_unique_element_ids(
    make_site: MakeSite, tmp_path: Path
) -> None:
    root = make_site(
        {
            "data/rows/tiny/2026-01-03-spark-01.csv": ROWS,
            "data/rows/tiny/2026-01-03-spark_01.csv": ROWS,
            "data/rows/tiny/2026-01-03-spark-01.jsonl": (
                '{"date": "2026-01-03", "recipe": "tiny", "node": "node-a", "engine_version": "1.0.0", '
                '"prompt_tokens": 512, "concurrency": 1, "decode_tok_s": 40.5}\n'
            ),
        }
    )
    out = tmp_path / "out"
    build(load_config(root, out))
    soup = BeautifulSoup((out / "recipes/tiny/index.html").read_bytes(), "html.parser")
    ids = Counter(str(tag["id"]) for tag in soup.find_all(id=True))
    assert [name for name, count in ids.items() if count > 1] == []
    assert sum(1 for name in ids if name.startswith("row-")) == 5

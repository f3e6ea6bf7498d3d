"""The preview's quick page (``IncrementalBuilder.quick``): one saved recipe or row file answered with
its page first — the kept site updated with the file, the page rendered as a build renders it — then
the full rebuild, which must agree with it byte for byte (else it rewrites the page)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from bs4 import BeautifulSoup

from builder.config import load_config
from builder.engine import pipeline
from builder.engine.pure import build_site
from builder.serve.devserver import RebuildResult
from builder.serve.preview import WARM, PreviewBuilder
from tests.conftest import REPO

SLUG = "qwen3.6-35b-a3b-nvidia-nvfp4"
PAGE = f"recipes/{SLUG}/index.html"
SYNTHETIC_ROW = (
    "2026-08-03,qwen3.6-35b-a3b-nvidia-nvfp4,spark-01,vllm,0.24.0,2048,1,0,,44.1,,,,,,"
    "--max-model-len 262144,,test fixture,SYNTHETIC row written by tests/engine/test_quick_pages.py\n"
)


@pytest.fixture
def root(shipped_copy: Path) -> Path:
    """A copy of the shipped site (its finding, annotations file and all)."""
    return shipped_copy


def _clean(root: Path, tmp_path: Path) -> dict[str, bytes]:
    """The site as :func:`builder.engine.pure.build_site` makes it."""
    return build_site(load_config(root, tmp_path / "clean"))


def _header(root: Path) -> str:
    return (root / "data/rows" / SLUG / "2026-07-27-spark-01.csv").read_text().splitlines()[0]


def test_recipe_edit_is_answered_with_its_page_then_the_full_rebuild(root: Path, tmp_path: Path) -> None:
    preview = PreviewBuilder(root, tmp_path / "serve")
    assert preview(None).ok
    recipe = root / "content/recipes" / f"{SLUG}.md"
    recipe.write_text(recipe.read_text() + "\nA paragraph the quick page must show.\n")

    quick = preview(frozenset({recipe}))
    assert quick.ok and quick.changed == {PAGE} and quick.followup == {recipe}
    page = BeautifulSoup((tmp_path / "serve" / PAGE).read_bytes(), "html.parser")
    assert "A paragraph the quick page must show." in page.get_text()
    # The findings banner and marked rows survive: the recipe's rows were reconciled alone.
    assert page.select("section.findings .banner") and len(page.select("table.rows tr.in-finding")) == 3

    full = preview(quick.followup)
    assert full.ok and full.followup == frozenset()
    assert PAGE not in (full.changed or ())  # the full build rendered the same bytes
    assert (tmp_path / "serve" / PAGE).read_bytes() == _clean(root, tmp_path)[PAGE]


def test_new_row_file_shows_on_its_recipe_page_first(root: Path, tmp_path: Path) -> None:
    preview = PreviewBuilder(root, tmp_path / "serve")
    assert preview(None).ok
    new = root / "data/rows" / SLUG / "2026-08-03-spark-01.csv"
    new.write_text(_header(root) + "\n" + SYNTHETIC_ROW)

    quick = preview(frozenset({new}))
    assert quick.ok and quick.changed == {PAGE}
    page = BeautifulSoup((tmp_path / "serve" / PAGE).read_bytes(), "html.parser")
    assert "2026-08-03" in {t.get_text() for t in page.select("table.rows time")}

    full = preview(quick.followup)
    assert full.ok and PAGE not in (full.changed or ())
    assert (tmp_path / "serve" / PAGE).read_bytes() == _clean(root, tmp_path)[PAGE]


def test_saves_answered_one_after_another_build_on_each_other(root: Path, tmp_path: Path) -> None:
    """A save answered while the full rebuild for an earlier one has not run (the preview cancels that
    rebuild for it): the page shows both saves, as the full build of both does."""
    preview = PreviewBuilder(root, tmp_path / "serve")
    assert preview(None).ok
    first = root / "data/rows" / SLUG / "2026-08-03-spark-01.csv"
    first.write_text(_header(root) + "\n" + SYNTHETIC_ROW)
    quick = preview(frozenset({first}))
    assert quick.changed == {PAGE}
    recipe = root / "content/recipes" / f"{SLUG}.md"
    recipe.write_text(recipe.read_text() + "\nA paragraph saved after the new run.\n")
    second = root / "data/rows" / SLUG / "2026-08-04-spark-01.csv"
    second.write_text(_header(root) + "\n" + SYNTHETIC_ROW.replace("2026-08-03", "2026-08-04"))
    # Two files differ from what the kept site holds: no page can be answered alone.
    assert preview(frozenset({recipe, second}) | quick.followup).followup == frozenset()
    third = root / "data/rows" / SLUG / "2026-08-05-spark-01.csv"
    third.write_text(_header(root) + "\n" + SYNTHETIC_ROW.replace("2026-08-03", "2026-08-05"))
    quick = preview(frozenset({third}))
    assert quick.changed == {PAGE}
    recipe.write_text(recipe.read_text() + "\nAnd one more.\n")
    again = preview(frozenset({recipe}) | quick.followup)  # the rebuild for the row file never ran
    assert again.changed == {PAGE} and again.followup == {recipe, third}
    page = BeautifulSoup((tmp_path / "serve" / PAGE).read_bytes(), "html.parser")
    assert {"2026-08-03", "2026-08-04", "2026-08-05"} <= {
        t.get_text() for t in page.select("table.rows time")
    }
    assert "And one more." in page.get_text()
    full = preview(again.followup)
    assert full.ok and PAGE not in (full.changed or ())
    assert (tmp_path / "serve" / PAGE).read_bytes() == _clean(root, tmp_path)[PAGE]


def test_a_row_file_moved_to_another_recipe_gets_no_quick_page(root: Path, tmp_path: Path) -> None:
    preview = PreviewBuilder(root, tmp_path / "serve")
    assert preview(None).ok
    path = root / "data/rows" / SLUG / "2026-07-27-spark-01.csv"
    other = "qwen3.6-35b-a3b-nvidia-nvfp4-mtp3"
    before = (tmp_path / "serve" / PAGE).read_bytes()
    path.write_text(path.read_text().replace(f",{SLUG},", f",{other},"))
    # Both recipes' pages change: no page first, the full rebuild (which here finds a case study
    # quoting a figure the moved rows no longer support).
    result = preview(frozenset({path}))
    assert result.followup == frozenset() and not result.ok
    assert (tmp_path / "serve" / PAGE).read_bytes() == before


def test_edited_row_file_replaces_its_old_rows(root: Path, tmp_path: Path) -> None:
    preview = PreviewBuilder(root, tmp_path / "serve")
    assert preview(None).ok
    path = root / "data/rows" / SLUG / "2026-07-27-spark-01.csv"
    path.write_text(path.read_text().replace(",42.9,", ",43.9,"))
    quick = preview(frozenset({path}))
    assert quick.changed == {PAGE}
    cells = BeautifulSoup((tmp_path / "serve" / PAGE).read_bytes(), "html.parser").select("table.rows td")
    texts = {td.get_text(strip=True) for td in cells}
    assert "43.9" in texts and "42.9" not in texts
    full = preview(quick.followup)
    assert full.ok and PAGE not in (full.changed or ())
    assert (tmp_path / "serve" / PAGE).read_bytes() == _clean(root, tmp_path)[PAGE]


def _figures(path: Path) -> list[str]:
    page = BeautifulSoup(path.read_bytes(), "html.parser")
    return [a.get_text() for a in page.select("a.bound-figure")]


def test_a_quick_page_shows_its_figures_from_the_saved_rows(root: Path, tmp_path: Path) -> None:
    """The recipe's prose quotes its 2026-07-06 row and another recipe's rows: a saved row file
    moves its own figure on the quick page, and the full build agrees byte for byte."""
    preview = PreviewBuilder(root, tmp_path / "serve")
    assert preview(None).ok
    assert "76.8 tok/s" in _figures(tmp_path / "serve" / PAGE)
    path = root / "data/rows" / SLUG / "2026-07-06-spark-01.csv"
    path.write_text(path.read_text().replace(",76.8,", ",77.8,"))
    quick = preview(frozenset({path}))
    assert quick.changed == {PAGE}
    shown = _figures(tmp_path / "serve" / PAGE)
    assert "77.8 tok/s" in shown and "76.8 tok/s" not in shown and "20.58 GiB" in shown
    full = preview(quick.followup)
    assert full.ok and PAGE not in (full.changed or ())
    assert (tmp_path / "serve" / PAGE).read_bytes() == _clean(root, tmp_path)[PAGE]


def test_a_quick_page_shows_a_figure_added_to_its_body(root: Path, tmp_path: Path) -> None:
    preview = PreviewBuilder(root, tmp_path / "serve")
    assert preview(None).ok
    recipe = root / "content/recipes" / f"{SLUG}.md"
    other = "qwen3.6-35b-a3b-fp8-mtp3"
    recipe.write_text(recipe.read_text() + f"\nSYNTHETIC: {{{{ aggregate_tok_s recipe={other} }}}}.\n")
    quick = preview(frozenset({recipe}))
    assert quick.ok and quick.changed == {PAGE}
    assert "411.6 tok/s" in _figures(tmp_path / "serve" / PAGE)
    full = preview(quick.followup)
    assert full.ok and PAGE not in (full.changed or ())
    # A figure no row supports: no quick page, the build's problem.
    recipe.write_text(recipe.read_text() + "\nSYNTHETIC: {{ decode_tok_s prompt=99 }}.\n")
    failed = preview(frozenset({recipe}))
    assert not failed.ok and failed.followup == frozenset()


@pytest.mark.parametrize(
    "bad",
    [
        "2026-08-03,qwen3.6-35b-a3b-nvidia-nvfp4,spark-01,vllm,0.24.0,2048,1,0,,fast,,,,,,,,x,y\n",
        "2026-08-03,no-such-recipe,spark-01,vllm,0.24.0,2048,1,0,,44.1,,,,,,,,x,y\n",
    ],
)
def test_a_bad_row_file_gets_no_quick_page_but_the_builds_problems(
    root: Path, tmp_path: Path, bad: str
) -> None:
    preview = PreviewBuilder(root, tmp_path / "serve")
    assert preview(None).ok
    before = (tmp_path / "serve" / PAGE).read_bytes()
    new = root / "data/rows" / SLUG / "2026-08-03-spark-01.csv"
    new.write_text(_header(root) + "\n" + bad)
    result = preview(frozenset({new}))
    assert result.followup == frozenset()
    assert [p.path for p in result.problems] == [new.relative_to(root).as_posix()]
    assert (tmp_path / "serve" / PAGE).read_bytes() == before


def test_no_quick_page_for_several_files_or_a_new_recipe(root: Path, tmp_path: Path) -> None:
    preview = PreviewBuilder(root, tmp_path / "serve")
    assert preview(None).ok
    recipe = root / "content/recipes" / f"{SLUG}.md"
    copy = root / "content/recipes/quick-copy.md"
    # Without its figures: they quote rows the copy, a new recipe, does not have.
    copy.write_text(re.sub(r"\{\{.*?\}\}", "a figure", recipe.read_text(), flags=re.S))
    result = preview(frozenset({copy}))
    assert result.ok and result.followup == frozenset()
    assert "recipes/quick-copy/index.html" in (result.changed or ())
    recipe.write_text(recipe.read_text() + "\nMore.\n")
    copy.write_text(copy.read_text() + "\nMore.\n")
    result = preview(frozenset({recipe, copy}))
    assert result.ok and result.followup == frozenset()


def test_after_a_no_op_start_up_the_site_is_loaded_next_for_quick_pages(root: Path, tmp_path: Path) -> None:
    earlier = PreviewBuilder(root, tmp_path / "serve")  # an earlier session built it
    assert earlier(None).ok
    earlier.close()  # and saved its record as it stopped
    preview = PreviewBuilder(root, tmp_path / "serve")
    start = preview(None)
    assert start.ok and start.changed == frozenset() and start.followup == {WARM}
    assert preview(start.followup) == RebuildResult()
    recipe = root / "content/recipes" / f"{SLUG}.md"
    recipe.write_text(recipe.read_text() + "\nWarm edit.\n")
    quick = preview(frozenset({recipe}))
    assert quick.changed == {PAGE} and quick.followup == {recipe}


def test_a_template_edit_reuses_the_loaded_site_and_matches_a_clean_build(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shutil.copytree(REPO / "templates", root / "templates")
    preview = PreviewBuilder(root, tmp_path / "serve")
    assert preview(None).ok
    template = root / "templates/recipe.html"
    template.write_text(template.read_text().replace("</article>", "<p>Template edit.</p></article>", 1))
    loads: list[object] = []
    real = pipeline.load_and_reconcile
    monkeypatch.setattr(pipeline, "load_and_reconcile", lambda *a, **k: loads.append(a) or real(*a, **k))
    result = preview(frozenset({template}))
    assert result.ok and PAGE in (result.changed or ())
    assert loads == []  # only a template changed: the last site and reconciliation were reused
    clean = _clean(root, tmp_path)
    for page in (PAGE, "index.html", "findings/index.html"):
        assert (tmp_path / "serve" / page).read_bytes() == clean[page], page
    # A content change after it loads again.
    loads.clear()
    recipe = root / "content/recipes" / f"{SLUG}.md"
    recipe.write_text(recipe.read_text() + "\nMore.\n")
    assert preview(preview(frozenset({recipe})).followup).ok
    assert len(loads) == 1


def test_a_change_seen_by_a_failed_build_is_not_forgotten(root: Path, tmp_path: Path) -> None:
    """Edit a recipe's title and break a template in one batch: the build fails; fixing the
    template alone must still bring the new title everywhere (the failed build's paths are
    rescanned, and the loaded site is not reused as if only a template had changed)."""
    shutil.copytree(REPO / "templates", root / "templates")
    preview = PreviewBuilder(root, tmp_path / "serve")
    assert preview(None).ok
    recipe = root / "content/recipes" / f"{SLUG}.md"
    text = recipe.read_text()
    title = text.split("title: ", 1)[1].split("\n", 1)[0]
    recipe.write_text(text.replace(f"title: {title}", "title: A title from the failed batch", 1))
    template = root / "templates/recipe.html"
    good = template.read_text()
    template.write_text(good + "\n{% if %}\n")
    assert not preview(frozenset({recipe, template})).ok
    template.write_text(good)
    # The recipe's page may come first (the failed build's paths are the engine's to answer for
    # too); the full rebuild follows.
    result = preview(frozenset({template}))
    while result.followup:
        result = preview(result.followup)
    assert result.ok
    for page in (PAGE, "index.html"):
        html = (tmp_path / "serve" / page).read_text()
        assert "A title from the failed batch" in html, page
    clean = _clean(root, tmp_path)
    assert (tmp_path / "serve" / "index.html").read_bytes() == clean["index.html"]


class _StandbyNow:
    """A standby that readies itself, then lets the rebuild run and commit (no fork)."""

    def build(self, run, changed, prepare):  # type: ignore[no-untyped-def]
        prepare()
        return run(lambda: True)


def test_a_standby_renders_the_last_quick_page_again_and_writes_nothing(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The standby forked for a rebuild renders the recipe of the last quick page while it waits
    (``IncrementalBuilder.rehearse``), so that answering the next save of it copies no memory."""
    from builder.engine import incremental

    rendered: list[str] = []
    alone = incremental._render_recipe_alone

    def counted(ctx, site, slug, con):  # type: ignore[no-untyped-def]
        rendered.append(slug)
        return alone(ctx, site, slug, con)

    monkeypatch.setattr(incremental, "_render_recipe_alone", counted)
    out = tmp_path / "serve"
    preview = PreviewBuilder(root, out, standby=_StandbyNow())
    assert preview(None).ok
    assert preview.engine is not None
    preview.engine.rehearse()
    assert rendered == []  # no quick page yet: nothing to rehearse

    new = root / "data/rows" / SLUG / "2026-08-03-spark-01.csv"
    new.write_text(_header(root) + "\n" + SYNTHETIC_ROW)
    quick = preview(frozenset({new}))
    assert quick.changed == {PAGE} and rendered == [SLUG]
    full = preview(quick.followup)  # through the standby, readied first
    assert full.ok and rendered == [SLUG, SLUG]

    before = {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in out.rglob("*") if p.is_file()}
    preview.engine.rehearse()
    assert rendered == [SLUG, SLUG, SLUG]
    assert {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in out.rglob("*") if p.is_file()} == before
    assert (out / PAGE).read_bytes() == _clean(root, tmp_path)[PAGE]

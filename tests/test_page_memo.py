"""Recipe pages' values kept across the preview's template-only rebuilds (builder.site.page_memo).

Reused only while the site's data is the very same: every page rendered from remembered values must
be the page a clean build gives, and a change of the rows, a front matter or the reconciliation
must show on the next template edit.
"""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

import pytest
from bs4 import BeautifulSoup

from builder.config import load_config
from builder.engine.incremental import IncrementalBuilder
from builder.serve.preview import PreviewBuilder
from builder.site import render
from builder.site.page_memo import PageEntry, PageMemo, _Current
from tests.conftest import REPO, synthetic_site, tree

sys.path.insert(0, str(REPO / "bench"))


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return synthetic_site(tmp_path / "root", monkeypatch, recipes=4, rows=12, cases=1, posts=1)


def assert_as_clean(site: Path, out: Path, clean: Path, step: str) -> None:
    shutil.rmtree(clean, ignore_errors=True)
    report = IncrementalBuilder(load_config(site, clean), persist=False, workers=1).build(None)
    assert report.ok, report.problems
    ours, theirs = tree(out), tree(clean)
    assert sorted(ours) == sorted(theirs), step
    differing = [k for k in ours if ours[k] != theirs[k]]
    assert not differing, f"{step}: {differing[:5]}"


class TemplateEditor:
    def __init__(self, site: Path) -> None:
        self.path = site / "templates" / "recipe.html"
        self.text = self.path.read_text(encoding="utf-8")
        self.count = 0

    def __call__(self) -> Path:
        self.count += 1
        marker = f"<!-- template edit {self.count} -->"
        self.path.write_text(self.text.replace("</article>", f"</article>{marker}", 1), encoding="utf-8")
        return self.path


def first_recipe(site: Path) -> Path:
    return sorted((site / "content" / "recipes").glob("*.md"))[0]


def page_of(out: Path, recipe: Path) -> BeautifulSoup:
    return BeautifulSoup((out / "recipes" / recipe.stem / "index.html").read_bytes(), "html.parser")


def test_a_template_edit_renders_recipe_pages_from_remembered_values(
    site: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "out"
    engine = IncrementalBuilder(load_config(site, out), workers=1, atomic=False, keep_context=True)
    assert engine.build(None).ok
    computed: list[str] = []
    real = render._recipe_values
    monkeypatch.setattr(
        render, "_recipe_values", lambda ctx, slug, rows: computed.append(slug) or real(ctx, slug, rows)
    )
    edit = TemplateEditor(site)
    for step in range(2):
        report = engine.build({edit()})
        assert report.ok and report.rendered == 4, report
        assert computed == [], step  # the start-up build's values, every one
        assert_as_clean(site, out, tmp_path / "clean", f"template edit {step}")
        computed.clear()  # the clean build's


def set_row_value(site: Path, recipe: Path, value: str) -> Path:
    """The first row of the recipe's first row file gets ``value`` as its decode tok/s."""
    path = sorted((site / "data" / "rows" / recipe.stem).glob("*.csv"))[0]
    lines = path.read_text(encoding="utf-8").splitlines()
    column = lines[0].split(",").index("decode_tok_s")
    cells = lines[1].split(",")
    cells[column] = value
    lines[1] = ",".join(cells)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def set_front(recipe: Path, key: str, value: str) -> Path:
    text = recipe.read_text(encoding="utf-8")
    recipe.write_text(re.sub(rf"^{key}: .*$", f"{key}: {value}", text, count=1, flags=re.M), encoding="utf-8")
    return recipe


@pytest.mark.parametrize("workers", [1, 2])
def test_values_never_outlive_a_change_of_the_data(site: Path, tmp_path: Path, workers: int) -> None:
    """Each data edit is followed by a template edit (which reuses the loaded site and the pages'
    values when it can): the page must show the edit. ``workers=2``: values made in forked workers."""
    out = tmp_path / "out"
    engine = IncrementalBuilder(load_config(site, out), workers=workers, atomic=False, keep_context=True)
    assert engine.build(None).ok
    edit = TemplateEditor(site)
    assert engine.build({edit()}).ok
    recipe = first_recipe(site)

    # A row's value: the results table and the charts are made from the rows.
    row_file = set_row_value(site, recipe, "987.625")
    assert engine.build({row_file}).ok
    assert engine.build({edit()}).ok
    table = page_of(out, recipe).select_one("table.rows")
    assert table is not None and "987.625" in table.get_text()
    assert_as_clean(site, out, tmp_path / "clean", "row edit, then template edit")

    # Front matter: the serve command and key parameters.
    set_front(recipe, "flags", "'--max-model-len 7168 --synthetic-flag 3'")
    assert engine.build({recipe}).ok
    assert engine.build({edit()}).ok
    command = page_of(out, recipe).select_one("pre.code code")
    assert command is not None and "--synthetic-flag 3" in command.get_text()
    assert_as_clean(site, out, tmp_path / "clean", "flags edit, then template edit")

    # Reconciliation: another engine version, so no row matches the recipe any more.
    set_front(recipe, "engine_version", "'9.9.9'")
    assert engine.build({recipe}).ok
    assert engine.build({edit()}).ok
    badges = {b.get_text() for b in page_of(out, recipe).select("table.rows .badge")}
    assert "matches recipe" not in badges and "differs" in badges
    assert_as_clean(site, out, tmp_path / "clean", "engine version edit, then template edit")


def test_a_quick_page_is_made_from_the_edited_recipe_not_from_remembered_values(
    site: Path, tmp_path: Path
) -> None:
    """The flag notes are not reconciled: the quick page reuses the reconciliation but must compute
    the key parameters again."""
    preview = PreviewBuilder(site, tmp_path / "serve")
    assert preview(None).ok
    edit = TemplateEditor(site)
    assert preview(frozenset({edit()})).ok  # the values are remembered now
    recipe = first_recipe(site)
    text = recipe.read_text(encoding="utf-8")
    recipe.write_text(text.replace("Synthetic note on the context window.", "A note of the quick page."))
    quick = preview(frozenset({recipe}))
    assert quick.ok and quick.followup == {recipe}
    params = page_of(tmp_path / "serve", recipe).select_one("table.params")
    assert params is not None and "A note of the quick page." in params.get_text()
    assert preview(quick.followup).ok
    assert preview(frozenset({edit()})).ok
    params = page_of(tmp_path / "serve", recipe).select_one("table.params")
    assert params is not None and "A note of the quick page." in params.get_text()


def test_helper_calls_are_remembered_only_for_the_pages_own_values() -> None:
    rows = [{"row_id": 1}]
    charts = [object(), object()]
    current = _Current(PageEntry({}), {"rows": rows, "charts": charts, "meta": object(), "title": "T"})
    assert current.key("row_table_rows", (rows, "vllm", 3, None)) == (
        "row_table_rows",
        ("v", "rows"),
        ("str", "vllm"),
        ("int", 3),
        ("NoneType", None),
    )
    assert current.key("chart_rows", (charts[1],)) == ("chart_rows", ("v", "charts", 1))
    assert current.key("row_table_rows", (rows[:1],)) is None  # made by the template
    assert current.key("chart_data", ([*charts],)) is None


def test_a_memo_made_for_other_data_is_emptied(site: Path, tmp_path: Path) -> None:
    from builder.engine.pipeline import load_and_reconcile

    config = load_config(site, tmp_path / "out")
    memo = PageMemo()
    first = load_and_reconcile(config)
    assert first.recon is not None
    ctx = render.make_context(first.site, first.recon, memo=memo)
    slug = first_recipe(site).stem
    render.render_recipe(ctx, slug)
    assert memo.get(f"recipes/{slug}/index.html") is not None and memo.serves(ctx)
    second = load_and_reconcile(config)  # the same files, loaded again: other objects
    assert second.recon is not None
    other = render.make_context(second.site, second.recon, memo=memo)
    assert memo.serves(other) and not memo.serves(ctx)
    assert memo.entries == {} and memo.get(f"recipes/{slug}/index.html") is None
    first.site.con.close()
    second.site.con.close()

"""Rows by recipe: queried recipe by recipe or all sorted at once, the same rows in the same order."""

from __future__ import annotations

import sys
from pathlib import Path

from builder.config import load_config
from builder.engine.pipeline import load_and_reconcile
from builder.site.views import ROW_COLUMNS, RowsByRecipe
from tests.conftest import REPO

sys.path.insert(0, str(REPO / "bench"))
import generate  # noqa: E402


def test_rows_by_recipe_one_by_one_equals_all_at_once(tmp_path: Path) -> None:
    root = tmp_path / "root"
    generate.write_site(root, recipes=5, rows=30, cases=0, posts=0)
    # Rows of one recipe in two files, one sorting before the others: order is by date, not file.
    generate.add_row_file(root, 2, "2026-02-01", rows=12, seed=4, rel="0-first.csv")
    generate.add_row_file(root, 2, "2025-12-01", rows=12, seed=5)
    # Prompt lengths and contexts not recorded: sorted last, as the query that used to sort them put them.
    unrecorded = root / "data" / "rows" / generate.recipe_slug(3) / "2026-03-01-x.csv"
    unrecorded.write_text(
        (root / "data" / "rows" / "0-first.csv")
        .read_text(encoding="utf-8")
        .replace(generate.recipe_slug(2), generate.recipe_slug(3)),
        encoding="utf-8",
    )
    lines = unrecorded.read_text(encoding="utf-8").splitlines()
    header = lines[0].split(",")
    blank = {header.index("prompt_tokens"): "unknown", header.index("context_tokens"): ""}
    cut = [",".join(blank.get(i, cell) for i, cell in enumerate(line.split(","))) for line in lines[1:4]]
    unrecorded.write_text("\n".join([lines[0], *cut, *lines[4:]]) + "\n", encoding="utf-8")
    loaded = load_and_reconcile(load_config(root))
    assert not loaded.problems.errors, loaded.problems.errors[:3]
    site = loaded.site
    slugs = sorted(site.recipes)
    query = site.con.sql(
        f"""SELECT {", ".join(ROW_COLUMNS)} FROM rows
        ORDER BY recipe, date DESC, prompt_tokens NULLS LAST, context_tokens, concurrency, row_id"""
    ).to_arrow_table()
    one_by_one = RowsByRecipe(site)
    all_at_once = RowsByRecipe(site)
    all_at_once.ONE_BY_ONE = 0
    assert list(one_by_one) == list(all_at_once) == slugs
    offset = 0
    for slug in slugs:
        count = len(all_at_once[slug])
        assert one_by_one.table(slug).equals(query.slice(offset, count)), slug
        offset += count
    assert offset == query.num_rows
    for slug in [*slugs, "no-such-recipe"]:
        assert one_by_one.table(slug).equals(all_at_once.table(slug)), slug
        assert one_by_one[slug] == all_at_once[slug], slug
    assert one_by_one._table is None and all_at_once._table is not None  # the two ways were taken
    dates = [row["date"] for row in one_by_one[generate.recipe_slug(2)]]
    assert dates == sorted(dates, reverse=True) and len(set(dates)) == 3
    rows = one_by_one[generate.recipe_slug(3)]
    newest = [row["prompt_tokens"] for row in rows if row["date"] == rows[0]["date"]]
    assert newest[-3:] == [None, None, None] and None not in newest[:-3]  # last of their date

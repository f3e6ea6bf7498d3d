"""Updating a loaded site with one saved file (the preview's quick pages) gives the site a whole load
of the edited tree gives: the same recipes in the same order, the same row files, the same rows with
the same ids, and the file's problems."""

from __future__ import annotations

from pathlib import Path

import pytest

from builder.config import load_config
from builder.data.load import Site, load_site, replace_recipe, with_row_file
from builder.errors import Problems

SLUG = "qwen3.6-35b-a3b-nvidia-nvfp4"
ROWS = f"data/rows/{SLUG}/2026-07-27-spark-01.csv"
ROW = (
    "{date},qwen3.6-35b-a3b-nvidia-nvfp4,spark-01,vllm,0.24.0,2048,1,0,,{tok_s},,,,,,"
    "--max-model-len 262144,,test fixture,SYNTHETIC row written by tests/data/test_load.py\n"
)


@pytest.fixture
def root(shipped_copy: Path) -> Path:
    return shipped_copy


def _load(root: Path) -> tuple[Site, Problems]:
    problems = Problems()
    site = load_site(load_config(root), problems)
    site.close_connection()
    return site, problems


def _same(updated: Site, loaded: Site) -> None:
    assert list(updated.recipes) == list(loaded.recipes)
    assert updated.recipes == loaded.recipes
    assert updated.recipe_files == loaded.recipe_files
    assert [f.source.rel for f in updated.row_files] == [f.source.rel for f in loaded.row_files]
    assert updated.rows.schema == loaded.rows.schema
    assert updated.rows.to_pylist() == loaded.rows.to_pylist()


def _errors(problems: Problems) -> list[str]:
    return sorted(p.format() for p in problems.errors)


def _save(root: Path, rel: str, text: str) -> bytes:
    (root / rel).parent.mkdir(parents=True, exist_ok=True)
    (root / rel).write_text(text, encoding="utf-8")
    return (root / rel).read_bytes()


def _header(root: Path) -> str:
    return (root / ROWS).read_text(encoding="utf-8").splitlines()[0] + "\n"


def test_an_edited_recipe_replaces_the_old_in_its_place(root: Path) -> None:
    site, problems = _load(root)
    assert not problems
    rel = f"content/recipes/{SLUG}.md"
    text = (root / rel).read_text(encoding="utf-8")
    data = _save(root, rel, text.replace("\ntitle: ", "\ntitle: SYNTHETIC retitled ", 1) + "\nMore.\n")
    found = Problems()
    updated = replace_recipe(site, rel, data, found)
    assert not found.errors and updated.recipes[SLUG].meta.title.startswith("SYNTHETIC retitled")
    _same(updated, _load(root)[0])
    assert site.recipes[SLUG].meta.title == _load_title(text)  # the site given is a value: unchanged


def _load_title(text: str) -> str:
    return text.split("\ntitle: ", 1)[1].split("\n", 1)[0].strip("'\"")


def test_a_new_recipe_takes_its_place_in_file_name_order(root: Path) -> None:
    site, _ = _load(root)
    rel = "content/recipes/qwen3.6-35b-a3b-g-synthetic.md"
    text = (root / f"content/recipes/{SLUG}.md").read_text(encoding="utf-8")
    data = _save(root, rel, text.split("\n---\n", 1)[0] + "\n---\nA SYNTHETIC recipe.\n")
    found = Problems()
    updated = replace_recipe(site, rel, data, found)
    assert not found.errors
    _same(updated, _load(root)[0])
    assert list(updated.recipes).index("qwen3.6-35b-a3b-g-synthetic") == 1


def test_a_recipe_that_does_not_load_is_left_out_with_the_loads_problems(root: Path) -> None:
    site, _ = _load(root)
    rel = f"content/recipes/{SLUG}.md"
    text = (root / rel).read_text(encoding="utf-8")
    data = _save(root, rel, text.replace("\nengine: vllm\n", "\nengine: vllm\nengnie: typo\n", 1))
    found = Problems()
    updated = replace_recipe(site, rel, data, found)
    loaded, problems = _load(root)
    assert SLUG not in updated.recipes and SLUG in updated.recipe_files
    assert list(updated.recipes) == list(loaded.recipes)
    assert _errors(found) and set(_errors(found)) <= set(_errors(problems))


def test_a_recipe_naming_unknown_hardware_is_an_error(root: Path) -> None:
    site, _ = _load(root)
    rel = f"content/recipes/{SLUG}.md"
    text = (root / rel).read_text(encoding="utf-8")
    hardware = site.recipes[SLUG].meta.hardware
    data = _save(root, rel, text.replace(f"\nhardware: {hardware}\n", "\nhardware: no-such-gpu\n", 1))
    found = Problems()
    replace_recipe(site, rel, data, found)
    assert _errors(found) == _errors(_load(root)[1]) and "no-such-gpu" in _errors(found)[0]


def test_a_new_row_file_moves_the_files_and_rows_after_it(root: Path) -> None:
    site, _ = _load(root)
    # Between the recipe's two files, so the later files' ids and every later row's id move.
    rel = f"data/rows/{SLUG}/2026-07-10-spark-01.csv"
    data = _save(root, rel, _header(root) + ROW.format(date="2026-07-10", tok_s="44.1"))
    found = Problems()
    updated = with_row_file(site, rel, data, found)
    assert not found and updated.rows.num_rows == site.rows.num_rows + 1
    loaded, _ = _load(root)
    _same(updated, loaded)
    assert [f.source.rel for f in loaded.row_files].index(rel) not in (0, len(loaded.row_files) - 1)


def test_an_edited_row_file_replaces_its_rows(root: Path) -> None:
    site, _ = _load(root)
    lines = (root / ROWS).read_text(encoding="utf-8").splitlines(keepends=True)
    data = _save(root, ROWS, "".join(lines[:3]).replace(",42.9,", ",43.9,"))
    found = Problems()
    updated = with_row_file(site, ROWS, data, found)
    assert not found and updated.rows.num_rows < site.rows.num_rows
    _same(updated, _load(root)[0])


@pytest.mark.parametrize(
    "row",
    [
        ROW.format(date="2026-08-03", tok_s="fast"),  # not a number: the row is left out
        ROW.format(date="2099-01-01", tok_s="44.1"),  # from the future: kept, with an error
        ROW.format(date="2026-08-03", tok_s="0"),  # a throughput of 0
    ],
)
def test_a_row_file_with_a_bad_row_gets_the_loads_problems(root: Path, row: str) -> None:
    site, _ = _load(root)
    rel = f"data/rows/{SLUG}/2026-08-03-spark-01.csv"
    good = ROW.format(date="2026-08-02", tok_s="44.2")
    data = _save(root, rel, _header(root) + good + row)
    found = Problems()
    updated = with_row_file(site, rel, data, found)
    loaded, problems = _load(root)
    assert _errors(found) and _errors(found) == _errors(problems)
    _same(updated, loaded)


def test_only_files_the_load_reads_are_row_files(root: Path) -> None:
    site, _ = _load(root)
    for rel in ("data/rows/x/notes.txt", "data/other/a.csv", "data/rows/.git/a.csv"):
        with pytest.raises(ValueError):
            with_row_file(site, rel, b"", Problems())
    with pytest.raises(ValueError):
        replace_recipe(site, "content/posts/a.md", b"", Problems())

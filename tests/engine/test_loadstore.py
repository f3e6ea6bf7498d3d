"""The load cache on disk (builder/engine/loadstore.py): what a save rewrites, and what a build
trusts of it."""

from __future__ import annotations

from pathlib import Path

import pytest

from builder.config import load_config
from builder.engine import loadstore
from builder.engine.build_state import state_dir
from builder.engine.incremental import IncrementalBuilder
from builder.engine.pure import build_site
from tests.conftest import MakeSite
from tests.engine.pure_build import published

TINY = (Path(__file__).parents[1] / "sites/minimal/content/recipes/tiny.md").read_text(encoding="utf-8")


@pytest.fixture
def root(make_site: MakeSite) -> Path:
    return make_site({f"content/recipes/tiny-{n}.md": TINY for n in range(2, 14)})


def _edit(root: Path, marker: str) -> Path:
    recipe = root / "content/recipes/tiny-2.md"
    with recipe.open("a", encoding="utf-8") as handle:
        handle.write(f"\n{marker}\n")
    return recipe


def _build_fresh(root: Path, out: Path) -> None:
    """A new engine, as a new ``build`` process is: it reads the record from disk."""
    report = IncrementalBuilder(load_config(root, out), workers=1).build(None)
    assert report.ok, report.problems


def test_a_row_file_build_writes_the_cache_again_and_the_next_build_reads_it(
    root: Path, tmp_path: Path
) -> None:
    """A row file changes the cache object (rows, findings keys, statuses): load.pickle is written
    again, and names the blobs beside it."""
    out = tmp_path / "out"
    _build_fresh(root, out)
    folder = state_dir(root, out)
    before = (folder / loadstore.BASE).stat().st_ino
    rows = next((root / "data/rows").rglob("*.csv"))
    lines = rows.read_text(encoding="utf-8").splitlines(keepends=True)
    rows.write_text("".join(lines + [lines[-1].replace("2026-01-02", "2026-01-03", 1)]), encoding="utf-8")
    _build_fresh(root, out)
    assert (folder / loadstore.BASE).stat().st_ino != before
    assert published(out) == build_site(load_config(root, out))
    _edit(root, "Another synthetic edit.")  # read back: load.pickle names the blobs beside it
    engine = IncrementalBuilder(load_config(root, out), workers=1)
    report = engine.build(None)
    assert report.ok and report.cache_note is None and report.reused > 0


def test_blobs_that_load_pickle_does_not_name_discard_the_cache(root: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    _build_fresh(root, out)
    folder = state_dir(root, out)
    (tmp_path / "keep").write_bytes((folder / loadstore.BLOBS).read_bytes())
    _edit(root, "A synthetic edit.")
    _build_fresh(root, out)
    for _ in range(6):  # enough edits for the delta to give way to a new blobs.pickle
        _edit(root, "x" * 4000)
        _build_fresh(root, out)
    assert (folder / loadstore.BLOBS).read_bytes() != (tmp_path / "keep").read_bytes()
    (folder / loadstore.BLOBS).write_bytes((tmp_path / "keep").read_bytes())  # an older one
    _edit(root, "The last edit.")
    report = IncrementalBuilder(load_config(root, out), workers=1).build(None)
    assert report.ok and report.cache_note is not None and "blobs.pickle" in report.cache_note
    assert published(out) == build_site(load_config(root, out))

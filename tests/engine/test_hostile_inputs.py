"""The incremental build and the loaders see the same files: a symbolic link the scan would have
skipped while the loaders followed it kept old rows behind a successful build."""

from __future__ import annotations

import shutil
from functools import partial
from pathlib import Path

import pytest

from builder.config import load_config
from builder.engine.incremental import IncrementalBuilder, build
from builder.engine.inputs import rescan_paths, scan_inputs
from builder.engine.pure import build_site
from builder.errors import BuildAborted
from builder.files import SYMLINK
from tests.conftest import MakeSite
from tests.engine.pure_build import published

ROW = (
    "date,recipe,node,engine_version,prompt_tokens,concurrency,decode_tok_s\n"
    "2026-01-03,tiny,node-a,1.0.0,4096,1,40.5\n"
)


@pytest.mark.parametrize("folder", ["data/rows/linked", "content/recipes/linked", "content/linked"])
def test_a_symlinked_folder_fails_the_incremental_build_as_a_clean_one(
    make_site: MakeSite, tmp_path: Path, folder: str
) -> None:
    root = make_site()
    out = tmp_path / "out"
    build(load_config(root, out))
    before = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "2026-01-03-node-a.csv").write_text(ROW, encoding="utf-8")
    (root / folder).symlink_to(outside, target_is_directory=True)
    for run in (build, partial(build, cache=False), build_site):
        with pytest.raises(BuildAborted) as caught:
            run(load_config(root, out))
        assert [p.format() for p in caught.value.problems] == [f"{folder}: {SYMLINK}"], run
    after = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert after == before
    (root / folder).unlink()
    shutil.copy(outside / "2026-01-03-node-a.csv", root / "data/rows/tiny")
    build(load_config(root, out))
    assert published(out) == build_site(load_config(root, out))


def test_the_scan_stands_a_refused_entry_in_for_its_change(make_site: MakeSite, tmp_path: Path) -> None:
    root = make_site()
    config = load_config(root)
    first = scan_inputs(config)
    target = tmp_path / "x.csv"
    target.write_text(ROW, encoding="utf-8")
    link = root / "data/rows/tiny/x.csv"
    link.symlink_to(target)
    second = scan_inputs(config, first)
    assert second.changed(first) == {"data/rows/tiny/x.csv"}
    assert "data/rows/tiny/x.csv" not in second.paths  # never read through the link
    # The preview's rescan of one path agrees with a full scan.
    rescanned = rescan_paths(config, first, {link})
    assert rescanned is not None and rescanned.digests == second.digests


def test_the_preview_builder_reports_a_fifo_without_blocking(make_site: MakeSite, tmp_path: Path) -> None:
    import os
    import threading

    root = make_site()
    out = tmp_path / "out"
    builder = IncrementalBuilder(load_config(root, out))
    builder.build()
    os.mkfifo(root / "content/recipes/x.md")
    reports: list[object] = []
    worker = threading.Thread(
        target=lambda: reports.append(builder.build({root / "content/recipes/x.md"})), daemon=True
    )
    worker.start()
    worker.join(60)
    assert reports, "the rebuild blocked on the FIFO"

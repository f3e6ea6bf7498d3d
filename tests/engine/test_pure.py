"""``build_site``, the plain pipeline, and ``build --no-cache``, which runs it and publishes."""

from __future__ import annotations

import re
from pathlib import Path

from builder.config import load_config
from builder.engine.build_state import state_dir
from builder.engine.pure import build_site
from tests.conftest import MakeSite, run_builder, tree
from tests.engine.pure_build import published


def test_build_no_cache_publishes_build_sites_files_and_keeps_no_record(
    make_site: MakeSite, tmp_path: Path
) -> None:
    root = make_site(base="prose")
    out = tmp_path / "out"
    files = build_site(load_config(root, out))
    assert not out.exists()  # nothing published before the step that publishes
    assert "index.html" in files and any(path.startswith("recipes/") for path in files)

    done = run_builder("build", "--root", str(root), "--out", str(out), "--no-cache", "--verbose")
    assert done.returncode == 0, done.stderr
    report, timings = done.stdout.splitlines()
    assert report == f"built {len(files)} files from {files.rows} rows into {out}"
    assert re.fullmatch(
        r"load \S+ reconcile \S+ render \S+ data \S+ api \S+ search \S+ write \S+ \| total \S+", timings
    )
    assert published(out) == files
    assert not state_dir(root, out).exists()


def test_a_failed_no_cache_build_leaves_the_previous_site(make_site: MakeSite, tmp_path: Path) -> None:
    root = make_site()
    out = tmp_path / "out"
    assert run_builder("build", "--root", str(root), "--out", str(out), "--no-cache").returncode == 0
    before = tree(out)
    row_file = sorted((root / "data" / "rows").rglob("*.csv"))[0]
    lines = row_file.read_text(encoding="utf-8").splitlines()
    row_file.write_text("\n".join([*lines, ",".join(["x"] * lines[0].count(","))]) + "\n", encoding="utf-8")

    failed = run_builder("build", "--root", str(root), "--out", str(out), "--no-cache")
    assert failed.returncode == 1
    rel = row_file.relative_to(root).as_posix()
    assert f"{rel}:{len(lines) + 1}:" in failed.stdout + failed.stderr
    assert tree(out) == before

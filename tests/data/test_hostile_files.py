"""A pull request's files that are not what they seem: links out of the root, FIFOs, devices,
unreadable files, folders named like pages. Each is an error naming its path; nothing is read
through a link, nothing blocks, and no message quotes more than a short excerpt of a file."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from builder.config import load_config
from builder.data.load import load_site
from builder.errors import Problems
from builder.files import SPECIAL, SYMLINK, UNREADABLE
from tests.conftest import MakeSite


def _load(root: Path) -> tuple[Problems, list[str]]:
    problems = Problems()
    result: list[object] = []

    def run() -> None:
        result.append(load_site(load_config(root), problems))

    loader = threading.Thread(target=run, daemon=True)
    loader.start()
    loader.join(60)
    assert result, "the load did not finish (blocked on a FIFO?)"
    return problems, sorted(p.format() for p in problems.errors)


def test_a_page_linked_from_outside_the_root_is_an_error_not_a_page(
    make_site: MakeSite, tmp_path: Path
) -> None:
    root = make_site()
    secret = tmp_path / "secret.md"
    secret.write_text((root / "content/recipes/tiny.md").read_text(encoding="utf-8"), encoding="utf-8")
    (root / "content/recipes/leak.md").symlink_to(secret)
    (root / "content/posts").mkdir()
    (root / "content/posts/zero.md").symlink_to("/dev/zero")
    problems, errors = _load(root)
    assert errors == [f"content/posts/zero.md: {SYMLINK}", f"content/recipes/leak.md: {SYMLINK}"]


def test_a_row_file_linked_to_the_environment_is_refused_and_never_quoted(
    make_site: MakeSite, tmp_path: Path
) -> None:
    """A row file linked to /proc/self/environ printed the whole CI environment in an "unknown
    column" message; a long header is quoted only as an excerpt."""
    root = make_site()
    environ = tmp_path / "environ"
    environ.write_bytes(b"GITHUB_TOKEN=ghp_secret\0HOME=/root\0" * 50)
    (root / "data/rows/tiny/env.csv").symlink_to(environ)
    (root / "data/rows/tiny/long.csv").write_bytes(b"date," + b"x" * 5000 + b"\n1\n")
    _, errors = _load(root)
    assert errors[0] == f"data/rows/tiny/env.csv: {SYMLINK}"
    assert not any("ghp_secret" in error for error in errors)
    long = [e for e in errors if e.startswith("data/rows/tiny/long.csv:1: unknown column")]
    assert long and len(long[0]) < 200


def test_fifos_loops_and_folders_named_like_files_are_errors(make_site: MakeSite) -> None:
    root = make_site()
    os.mkfifo(root / "content/recipes/x.md")
    os.mkfifo(root / "data/rows/tiny/x.csv")
    (root / "content/recipes/loop.md").symlink_to(root / "content/recipes/loop.md")
    (root / "content/recipes/dir.md").mkdir()
    (root / "data/rows/linked").symlink_to(root / "data/rows/tiny")
    _, errors = _load(root)
    assert errors == [
        "content/recipes/dir.md: a folder, not a file",
        f"content/recipes/loop.md: {SYMLINK}",
        f"content/recipes/x.md: {SPECIAL}",
        f"data/rows/linked: {SYMLINK}",
        f"data/rows/tiny/x.csv: {SPECIAL}",
    ]


def test_an_unreadable_file_is_an_error(make_site: MakeSite, monkeypatch: pytest.MonkeyPatch) -> None:
    root = make_site()
    row = str(root / "data/rows/tiny/2026-01-02-node-a.csv")
    page = str(root / "content/recipes/tiny.md")
    monkeypatch.setattr("builder.data.rows.readable", lambda path: path != row)
    monkeypatch.setattr("builder.data.load.readable", lambda path: path != page)
    _, errors = _load(root)
    assert f"data/rows/tiny/2026-01-02-node-a.csv: {UNREADABLE}" in errors
    assert f"content/recipes/tiny.md: {UNREADABLE}" in errors


def test_row_files_with_other_extensions_are_ignored_with_a_warning(make_site: MakeSite) -> None:
    root = make_site({"data/rows/tiny/run.tsv": "a\tb\n", "data/rows/README": "notes\n"})
    problems, errors = _load(root)
    assert errors == []
    assert [p.format() for p in problems.warnings] == [
        "data/rows/README: ignored: row files end in .csv, .jsonl or .parquet",
        "data/rows/tiny/run.tsv: ignored: row files end in .csv, .jsonl or .parquet",
    ]


def test_a_post_dated_after_the_build_day_gets_a_warning(
    make_site: MakeSite, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1767225600")  # 2026-01-01
    root = make_site(
        {
            "content/posts/later.md": "---\ntitle: Later\ndate: 2026-01-02\n---\nbody\n",
            "content/posts/today.md": "---\ntitle: Today\ndate: 2026-01-01\n---\nbody\n",
        }
    )
    problems, errors = _load(root)
    assert errors == []
    assert [p.format() for p in problems.warnings] == [
        "content/posts/later.md:3: dated in the future (2026-01-02, after the build's day 2026-01-01); "
        "it is published now all the same"
    ]

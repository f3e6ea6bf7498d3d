"""The preview's builds in a spawned process: same answers as in-process, survives the child dying."""

from __future__ import annotations

import os
import signal
from pathlib import Path

from builder.serve.preview_process import BuildProcess
from tests.conftest import MakeSite


def test_builds_answer_from_a_child_process(make_site: MakeSite, tmp_path: Path) -> None:
    root = make_site()
    process = BuildProcess(root, tmp_path / "serve", workers=2)
    try:
        first = process(None)
        assert first.ok and first.changed is not None and "recipes/tiny/index.html" in first.changed
        assert process.pid is not None and process.pid != os.getpid()
        recipe = root / "content/recipes/tiny.md"
        recipe.write_text(recipe.read_text() + "\nA sentence from the test.\n")
        quick = process(frozenset({recipe}))
        assert quick.changed == {"recipes/tiny/index.html"} and quick.followup == {recipe}
        assert "A sentence from the test." in (tmp_path / "serve/recipes/tiny/index.html").read_text()
        assert process(quick.followup).ok
    finally:
        process.close()
    assert process.pid is None


def test_a_dead_child_is_replaced_and_the_next_answer_says_so(make_site: MakeSite, tmp_path: Path) -> None:
    root = make_site()
    process = BuildProcess(root, tmp_path / "serve")
    try:
        assert process(None).ok
        dead = process.pid
        assert dead is not None
        os.kill(dead, signal.SIGKILL)
        result = process(frozenset({root / "content/recipes/tiny.md"}))
        assert result.ok and result.changed is None  # every open page reloads
        assert result.note == "the build process ended (exit code -9); started a new one"
        assert process.pid not in (None, dead)
        assert process(frozenset()).ok
    finally:
        process.close()

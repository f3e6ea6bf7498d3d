"""A stage started early in a forked child gives what running it in-process gives."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import pytest

from builder.content.markdown import Markdown
from builder.data.loadcache import LoadCache
from builder.engine.depindex import KEPT, DepIndex, StageMemo
from builder.engine.early_stages import EarlyStages
from builder.engine.inputs import Inputs


def memo(tmp_path: Path, previous: dict[bytes, tuple[str, ...]] | None = None) -> StageMemo:
    deps = DepIndex(Inputs(), LoadCache(), None)
    return StageMemo(previous or {}, lambda path: True, tmp_path, b"global", deps)


def test_files_memo_keys_and_markdown_come_back_from_the_child(tmp_path: Path) -> None:
    markdown = Markdown()
    stages_memo = memo(tmp_path)
    ran_in: list[int] = []

    def stage(files: Mapping[str, bytes]) -> dict[str, bytes]:
        assert not files  # it reads no page
        ran_in.append(1)
        html = markdown.render("Some *synthetic* text.").html
        return stages_memo(b"key", lambda: {"out/a.html": html.encode(), "out/b.txt": b"b"})

    early = EarlyStages([("search", stage)], markdown, stages_memo)
    assert "search" in early and "data" not in early
    files = early.files("search")
    assert files == {"out/a.html": b"<p>Some <em>synthetic</em> text.</p>\n", "out/b.txt": b"b"}
    assert list(files) == ["out/a.html", "out/b.txt"]
    assert ran_in == []  # computed in the child: nothing ran here
    assert list(stages_memo.current.values()) == [("out/a.html", "out/b.txt")]
    assert len(markdown.used) == 1 and set(markdown.cache) == markdown.used


def test_files_kept_from_the_previous_output_stay_kept(tmp_path: Path) -> None:
    first = memo(tmp_path)
    first(b"key", lambda: {"a.txt": b"a"})
    again = memo(tmp_path, first.current)
    early = EarlyStages(
        [("search", lambda files: again(b"key", lambda: {"a.txt": b"new"}))], Markdown(), again
    )
    files = early.files("search")
    assert files["a.txt"] is KEPT
    assert again.current == first.current


def test_a_stage_that_fails_raises_here(tmp_path: Path) -> None:
    def stage(files: Mapping[str, bytes]) -> dict[str, bytes]:
        raise ValueError("synthetic failure")

    early = EarlyStages([("search", stage)], Markdown(), memo(tmp_path))
    with pytest.raises(ValueError, match="synthetic failure"):
        early.files("search")


def test_cancel_stops_the_child(tmp_path: Path) -> None:
    def stage(files: Mapping[str, bytes]) -> dict[str, bytes]:
        import time

        time.sleep(30)
        return {}

    early = EarlyStages([("search", stage)], Markdown(), memo(tmp_path))
    pid = early._jobs["search"]._pid
    early.cancel()
    assert "search" not in early
    if pid:
        with pytest.raises(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)  # reaped: no child left behind

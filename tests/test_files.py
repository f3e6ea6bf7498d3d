"""builder.files: the one walk of the inputs and the read that never follows a link or blocks."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from builder.files import FOLDER, SPECIAL, SYMLINK, UNREADABLE, InputError, read_regular, walk


def test_the_walk_lists_regular_files_and_refuses_links_and_special_files(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("SECRET", encoding="utf-8")
    root = tmp_path / "root"
    (root / "sub").mkdir(parents=True)
    (root / "a.md").write_text("a", encoding="utf-8")
    (root / "sub" / "b.csv").write_text("b", encoding="utf-8")
    (root / "link.md").symlink_to(outside / "secret.md")
    (root / "linked-folder").symlink_to(outside)
    (root / "loop.md").symlink_to(root / "loop.md")
    os.mkfifo(root / "pipe.md")
    (root / ".cache").mkdir()
    (root / ".cache" / "x").write_text("x", encoding="utf-8")
    listing = walk(root, "content/")
    assert sorted(listing.files) == ["content/a.md", "content/sub/b.csv"]
    assert listing.refused == {
        "content/link.md": SYMLINK,
        "content/linked-folder": SYMLINK,
        "content/loop.md": SYMLINK,
        "content/pipe.md": SPECIAL,
    }
    assert listing.folders == ["content/sub/"]
    assert walk(tmp_path / "missing").files == {}


def test_read_regular_refuses_links_folders_and_fifos_without_blocking(tmp_path: Path) -> None:
    (tmp_path / "f").write_bytes(b"data")
    assert read_regular(tmp_path / "f") == b"data"
    (tmp_path / "zero").symlink_to("/dev/zero")
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "dir").mkdir()
    outcome: dict[str, str] = {}

    def read_all() -> None:
        for name in ("zero", "fifo", "dir"):
            try:
                read_regular(tmp_path / name)
            except InputError as exc:
                outcome[name] = exc.message

    reader = threading.Thread(target=read_all, daemon=True)
    reader.start()
    reader.join(10)
    assert outcome == {"zero": SYMLINK, "fifo": SPECIAL, "dir": FOLDER}
    with pytest.raises(FileNotFoundError):
        read_regular(tmp_path / "absent")


def test_read_regular_says_a_file_cannot_be_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "f").write_bytes(b"data")

    def denied(*_args: object) -> int:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(os, "open", denied)
    with pytest.raises(InputError) as caught:
        read_regular(tmp_path / "f")
    assert caught.value.message == UNREADABLE

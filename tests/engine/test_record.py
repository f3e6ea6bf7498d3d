"""The incremental record on disk (:mod:`builder.engine.record`): read once, written only where it
changed, discarded with a note when unreadable, never written when nothing is to persist."""

from __future__ import annotations

from pathlib import Path

import pytest

from builder.config import load_config
from builder.engine import loadstore
from builder.engine.build_state import ROWS_TABLE, state_dir
from builder.engine.incremental import IncrementalBuilder
from builder.engine.record import Record
from tests.conftest import MakeSite

TINY = (Path(__file__).parents[1] / "sites/minimal/content/recipes/tiny.md").read_text(encoding="utf-8")


@pytest.fixture
def built(make_site: MakeSite, tmp_path: Path) -> tuple[Path, Path]:
    root = make_site({f"content/recipes/tiny-{n}.md": TINY for n in range(2, 5)})
    out = tmp_path / "out"
    report = IncrementalBuilder(load_config(root, out), workers=1).build(None)
    assert report.ok, report.problems
    return root, out


def test_reads_what_the_build_wrote_once_per_process(built: tuple[Path, Path]) -> None:
    root, out = built
    record = Record(state_dir(root, out))
    restored = record.read()
    assert restored is not None
    memo = restored.cache.memo
    assert restored.state.files > 0 and list(memo.keys("page")) and list(memo.keys("markdown"))
    assert restored.cache.rows.typed is not None and restored.cache.rows.typed.num_rows == restored.state.rows
    assert record.read() is None  # a build process reads the record once
    assert record.note is None


def test_a_build_that_changes_no_input_writes_state_pickle_alone(built: tuple[Path, Path]) -> None:
    """A published page changed by hand is written again; the load cache is as it was."""
    root, out = built
    folder = state_dir(root, out)
    before = {name: (folder / name).stat().st_ino for name in (loadstore.BASE, loadstore.BLOBS, ROWS_TABLE)}
    state_before = (folder / "state.pickle").stat().st_ino
    (out / "404.html").write_bytes(b"changed by hand")
    report = IncrementalBuilder(load_config(root, out), workers=1).build(None)
    assert report.ok and report.written == ["404.html"]
    assert {name: (folder / name).stat().st_ino for name in before} == before
    assert (folder / "state.pickle").stat().st_ino != state_before  # replaced, not written into


@pytest.mark.parametrize("damaged", ["state.pickle", loadstore.BASE, ROWS_TABLE])
def test_a_damaged_file_discards_the_record_with_a_note(built: tuple[Path, Path], damaged: str) -> None:
    root, out = built
    folder = state_dir(root, out)
    path = folder / damaged
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    record = Record(folder)
    assert record.read() is None
    assert record.note is not None and record.note.startswith("build cache discarded (")
    assert not any((folder / name).exists() for name in ("state.pickle", loadstore.BASE, ROWS_TABLE))


def test_without_persist_nothing_is_read_or_written(built: tuple[Path, Path], tmp_path: Path) -> None:
    root, out = built
    folder = state_dir(root, out)
    restored = Record(folder).read()
    assert restored is not None
    assert Record(folder, persist=False).read() is None
    elsewhere = Record(tmp_path / "nowhere", persist=False)
    elsewhere.save(restored.state, restored.cache, restored.code)
    elsewhere.save_state(restored.state)
    assert elsewhere.spare is None
    assert not (tmp_path / "nowhere").exists()

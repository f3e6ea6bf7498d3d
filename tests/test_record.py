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

TINY = (Path(__file__).parent / "sites/minimal/content/recipes/tiny.md").read_text(encoding="utf-8")


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
    assert restored.state.files > 0 and restored.cache.pages and restored.markdown
    assert restored.cache.rows.typed is not None and restored.cache.rows.typed.num_rows == restored.state.rows
    assert record.read() is None  # a build process reads the record once
    assert record.note is None


def test_an_unchanged_save_writes_state_pickle_alone(built: tuple[Path, Path]) -> None:
    root, out = built
    folder = state_dir(root, out)
    record = Record(folder)
    restored = record.read()
    assert restored is not None
    before = {name: (folder / name).stat().st_ino for name in (loadstore.BASE, loadstore.BLOBS, ROWS_TABLE)}
    state_before = (folder / "state.pickle").stat().st_ino
    record.save(restored.state, restored.cache, restored.markdown, restored.code)
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
    elsewhere.save(restored.state, restored.cache, restored.markdown, restored.code)
    elsewhere.save_state(restored.state)
    assert elsewhere.spare is None
    assert not (tmp_path / "nowhere").exists()


def test_rows_begun_by_a_build_that_failed_are_not_kept(built: tuple[Path, Path], tmp_path: Path) -> None:
    root, out = built
    folder = state_dir(root, out)
    restored = Record(folder).read()
    assert restored is not None
    record = Record(tmp_path / "record")
    restored.cache.rows.typed = restored.cache.rows.typed.slice(1)  # a new rows table
    record.begin_rows(restored.cache)
    record.abandon_rows()
    assert list((tmp_path / "record").iterdir()) == []  # the folder was made for it, and is left empty


def test_rows_begun_beside_the_render_are_the_rows_the_save_commits(
    built: tuple[Path, Path], tmp_path: Path
) -> None:
    root, out = built
    restored = Record(state_dir(root, out)).read()
    assert restored is not None
    restored.cache.rows.typed = fewer = restored.cache.rows.typed.slice(1)
    record = Record(tmp_path / "record")
    record.begin_rows(restored.cache)
    record.save(restored.state, restored.cache, restored.markdown, restored.code)
    again = Record(tmp_path / "record").read()
    assert again is not None and again.cache.rows.typed.equals(fewer)
    assert sorted(p.name for p in (tmp_path / "record").iterdir()) == sorted(
        ["state.pickle", loadstore.BASE, loadstore.BLOBS, ROWS_TABLE]
    )


def test_a_save_after_prepare_pickles_only_bodies_it_has_not_seen(
    make_site: MakeSite, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``prepare`` sees a build's bodies before the search child's come back; the save after it must
    still reuse the blobs it read for those (not pickle every body again), and store a new one."""
    root = make_site({f"content/recipes/tiny-{n}.md": f"{TINY}\nRecipe {n}.\n" for n in range(2, 5)})
    out = tmp_path / "out"
    assert IncrementalBuilder(load_config(root, out), workers=1).build(None).ok
    folder = state_dir(root, out)
    record = Record(folder)
    restored = record.read()
    assert restored is not None and len(restored.markdown) >= 2
    keys = sorted(restored.markdown)
    record.prepare(restored.cache, {keys[0]: restored.markdown[keys[0]]})
    pickled: list[object] = []
    real_dumps = loadstore.pickle.dumps

    def dumps(value: object, protocol: int | None = None) -> bytes:
        pickled.append(value)
        return real_dumps(value, protocol)

    monkeypatch.setattr(loadstore.pickle, "dumps", dumps)
    new_body = restored.markdown[keys[0]]
    markdown = {**restored.markdown, "a-new-key": new_body}
    restored.cache.pages = dict(restored.cache.pages)
    record.save(restored.state, restored.cache, markdown, restored.code)
    assert [value for value in pickled if type(value) is type(new_body)] == [new_body]  # bodies pickled
    again = Record(folder).read()
    assert again is not None
    assert sorted(again.markdown) == sorted(markdown)

"""Which files a build writes, links or removes (:mod:`builder.engine.publish_plan`)."""

from __future__ import annotations

from pathlib import Path

from builder.engine.build_state import OutputRecord
from builder.engine.depindex import KEPT
from builder.engine.inputs import digest_bytes
from builder.engine.output import MARKER
from builder.engine.publish_plan import Fresh, Plan, apply, plan
from tests.conftest import tree

OUT = "/srv/site/"


def record(data: bytes, stat: tuple[int, int, int] = (7, 1, 2)) -> OutputRecord:
    return OutputRecord(b"print", digest_bytes(data), ("page.html",), stat, ("recipe:a",))


def test_same_bytes_are_linked_with_the_published_inode_and_new_bytes_written() -> None:
    previous = {"same.html": record(b"same", (11, 4, 5)), "new.html": record(b"old")}
    fresh = Fresh({"same.html": b"same", "new.html": b"new", "added.html": b"added"})
    fresh.fingerprints["new.html"] = b"fp"
    fresh.templates["new.html"] = ("recipe.html",)
    fresh.deps["new.html"] = ("recipe:b",)
    result = plan(fresh, {}, previous, set(), OUT)
    assert result.write == {"new.html": b"new", "added.html": b"added"}
    assert result.link == {"same.html": OUT + "same.html"}
    assert result.records["same.html"].stat == (11, 4, 5)
    new = result.records["new.html"]
    assert (new.fingerprint, new.digest, new.templates, new.stat, new.deps) == (
        b"fp",
        digest_bytes(b"new"),
        ("recipe.html",),
        (0, 0, 0),
        ("recipe:b",),
    )
    assert result.removed == []


def test_kept_pages_and_kept_stage_files_keep_their_records_and_the_rest_is_removed() -> None:
    kept_record, stage_record = record(b"kept"), record(b"feed", (3, 3, 3))
    previous = {
        "kept.html": kept_record,
        "feed.xml": stage_record,
        "gone.html": record(b"gone"),
        "b.html": record(b"b"),
    }
    result = plan(Fresh({"feed.xml": KEPT}), {"kept.html": kept_record}, previous, set(), OUT)  # type: ignore[dict-item]
    assert result.write == {}
    assert result.link == {"kept.html": OUT + "kept.html", "feed.xml": OUT + "feed.xml"}
    assert result.records == {"kept.html": kept_record, "feed.xml": stage_record}
    assert result.removed == ["b.html", "gone.html"]


def test_a_damaged_file_is_written_even_when_its_bytes_are_the_recorded_ones() -> None:
    previous = {"page.html": record(b"page")}
    result = plan(Fresh({"page.html": b"page"}), {}, previous, {"page.html"}, OUT)
    assert result.write == {"page.html": b"page"}
    assert result.link == {}
    assert result.records["page.html"].stat == (0, 0, 0)


def test_the_digest_a_render_worker_gave_is_used_as_given() -> None:
    fresh = Fresh({"page.html": b"page"}, digests={"page.html": b"from the worker"})
    assert plan(fresh, {}, {}, set(), OUT).records["page.html"].digest == b"from the worker"


def published(tmp_path: Path, files: dict[str, bytes]) -> tuple[Path, Path]:
    """(root, out): a published site holding ``files`` (and the marker) under ``root/public``."""
    root, out = tmp_path / "root", tmp_path / "root" / "public"
    out.mkdir(parents=True)
    for rel, data in {MARKER: b"", **files}.items():
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        (out / rel).write_bytes(data)
    return root, out


def publish_plan(
    tmp_path: Path, out: Path, fresh: dict[str, bytes], previous: dict[str, bytes], **how: bool
) -> Plan:
    """Plan ``fresh`` against ``previous`` (path → published bytes) and apply it to ``out``."""
    result = plan(Fresh(fresh), {}, {p: record(d) for p, d in previous.items()}, set(), f"{out}/")
    apply(result, out, out.parent, tree=None, trash=tmp_path / "trash", spare=None, **how)
    return result


def test_apply_in_place_writes_removes_and_records_inodes(tmp_path: Path) -> None:
    old = {"old/gone.html": b"gone", "kept.html": b"kept"}
    root, out = published(tmp_path, old)
    fresh = {"kept.html": b"kept", "new/page.html": b"new"}
    result = publish_plan(tmp_path, out, fresh, old, in_place=True, tree_changed=False)
    assert tree(out) == {MARKER: b"", "kept.html": b"kept", "new/page.html": b"new"}
    st = (out / "new" / "page.html").stat()
    assert result.records["new/page.html"].stat == (st.st_ino, st.st_size, st.st_mtime_ns)


def test_apply_publishes_nothing_when_nothing_changed(tmp_path: Path) -> None:
    root, out = published(tmp_path, {"page.html": b"page"})
    before = out.stat().st_ino
    publish_plan(
        tmp_path, out, {"page.html": b"page"}, {"page.html": b"page"}, in_place=False, tree_changed=False
    )
    assert out.stat().st_ino == before  # the folder was not swapped for a new tree


def test_apply_swaps_in_a_new_tree_when_the_published_one_was_tampered_with(tmp_path: Path) -> None:
    root, out = published(tmp_path, {"page.html": b"page", "stray.html": b"not ours"})
    publish_plan(
        tmp_path, out, {"page.html": b"page"}, {"page.html": b"page"}, in_place=False, tree_changed=True
    )
    assert tree(out) == {MARKER: (out / MARKER).read_bytes(), "page.html": b"page"}


def test_files_written_ahead_are_published_once_with_the_rest(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from builder.engine import output
    from builder.engine.output import Staging
    from builder.engine.publish_plan import WriteAhead

    old = {"same.html": b"same", "gone.html": b"gone"}
    root, out = published(tmp_path, old)
    previous = {p: record(d) for p, d in old.items()}
    made = Fresh({"same.html": b"same", "a/page.html": b"page", "b/data.json": b"data"})
    written: list[str] = []
    real = output._write_file

    def counted(path: str, data: bytes) -> None:
        written.append(path.rpartition("/")[0].rpartition("/")[2] + "/" + path.rpartition("/")[2])
        real(path, data)

    monkeypatch.setattr(output, "_write_file", counted)
    ahead = WriteAhead(made, previous, set(), f"{out}/", lambda: Staging(out, root))
    made.files["search/index.js"] = b"late"  # the child's stage, after the thread began
    begun = ahead.tree(made)
    assert begun is not None
    assert sorted(written) == ["a/page.html", "b/data.json"]  # same.html is linked, not written
    assert made.digests["b/data.json"] == digest_bytes(b"data")  # hashed once, by the thread
    result = plan(made, {}, previous, set(), f"{out}/")
    apply(result, out, root, in_place=False, tree_changed=False, tree=begun, trash=tmp_path / "t", spare=None)
    assert sorted(written) == ["a/page.html", "b/data.json", "search/index.js"]
    assert {k: v for k, v in tree(out).items() if k != MARKER} == {
        "same.html": b"same",
        "a/page.html": b"page",
        "b/data.json": b"data",
        "search/index.js": b"late",
    }
    assert result.removed == ["gone.html"]


def test_nothing_to_write_ahead_begins_no_tree(tmp_path: Path) -> None:
    from builder.engine.publish_plan import WriteAhead

    root, out = published(tmp_path, {"same.html": b"same"})
    begun: list[int] = []

    def begin() -> object:
        begun.append(1)
        raise AssertionError("no tree wanted")

    ahead = WriteAhead(Fresh({"same.html": b"same"}), {"same.html": record(b"same")}, set(), f"{out}/", begin)  # type: ignore[arg-type]
    assert ahead.tree(Fresh()) is None and begun == []


def test_a_failure_while_writing_ahead_still_publishes_every_file(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import errno

    from builder.engine import output
    from builder.engine.output import Staging
    from builder.engine.publish_plan import WriteAhead

    root, out = published(tmp_path, {})
    real = output._write_file
    failures = {"left": 1}

    def flaky(path: str, data: bytes) -> None:
        if failures["left"]:
            failures["left"] -= 1
            raise OSError(errno.EIO, "Input/output error", path)
        real(path, data)

    monkeypatch.setattr(output, "_write_file", flaky)
    made = Fresh({f"p{i}.html": b"page %d" % i for i in range(3)})
    ahead = WriteAhead(made, {}, set(), f"{out}/", lambda: Staging(out, root))
    begun = ahead.tree(made)
    assert begun is not None
    result = plan(made, {}, {}, set(), f"{out}/")
    apply(result, out, root, in_place=False, tree_changed=True, tree=begun, trash=tmp_path / "t", spare=None)
    assert {k: v for k, v in tree(out).items() if k != MARKER} == made.files

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
    apply(result, out, out.parent, trash=tmp_path / "trash", spare=None, **how)
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

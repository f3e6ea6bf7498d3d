"""The engine makes an output unit again only when something it read changed (``StageMemo``): what a
unit reads is recorded while it is made, never declared."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import cast

from builder.engine.depindex import KEPT, DepIndex, StageMemo
from builder.engine.memo import Memo
from builder.reads import Once, note
from builder.site.units import Batch, Files, Unit


class Digests:
    """A stand-in for the dependency index: fixed digests, None for a key it does not know."""

    def __init__(self, values: dict[str, bytes]) -> None:
        self.values = values

    def digest(self, dep: str) -> bytes | None:
        return self.values.get(dep)


DIGESTS = {"rows": b"r1", "posts": b"p1", "rows-of:a": b"a1", "rows-of:b": b"b1", "case-studies": b"c1"}


def build(
    memo: Memo,
    digests: dict[str, bytes] = DIGESTS,
    sitemap_digest: bytes = b"pages",
    usable: Callable[[str], bool] = lambda path: True,
    feed_reads: tuple[str, ...] = ("posts",),
) -> tuple[list[object], dict[str, bytes]]:
    """Make the units of one build; what was made, and every file."""
    calls: list[object] = []

    def sitemap() -> Files:
        calls.append("sitemap")
        note("rows")
        note("posts")
        return {"sitemap.xml": b"map"}

    def cases() -> str:
        note("case-studies")
        return "cases"

    def documents(names: set[str]) -> Iterator[tuple[str, Files]]:
        calls.append(sorted(names))
        shared = Once(cases)  # read by the first document and handed to the second
        for name in sorted(names):
            note(f"rows-of:{name}")
            yield name, {f"api/{name}.json": (name + shared()).encode()}

    def feed() -> Files:
        calls.append("feed")
        for key in feed_reads:
            note(key)
        return {"feed.xml": b"feed"}

    units: list[Unit | Batch] = [
        Unit("sitemap", sitemap_digest, sitemap),
        Batch({"a": b"", "b": b""}, documents),
        Unit("feed", b"", feed),
    ]
    files = StageMemo(memo, usable, b"global", cast(DepIndex, Digests(digests)))(units)
    return calls, files


def test_units_whose_recorded_reads_are_unchanged_are_kept_and_the_others_made() -> None:
    memo = Memo()
    calls, files = build(memo)
    assert calls == ["sitemap", ["a", "b"], "feed"]
    assert files == {
        "sitemap.xml": b"map",
        "api/a.json": b"acases",
        "api/b.json": b"bcases",
        "feed.xml": b"feed",
    }
    calls, files = build(memo)
    assert calls == []
    assert set(files.values()) == {KEPT}
    # One recipe's rows changed: of the batch, only its name is made.
    calls, files = build(memo, {**DIGESTS, "rows-of:b": b"b2"})
    assert calls == [["b"]] and files["api/a.json"] is KEPT and files["api/b.json"] == b"bcases"
    # A value made once for both documents hands its reads to each: a case-study edit remakes both.
    calls, _ = build(memo, {**DIGESTS, "rows-of:b": b"b2", "case-studies": b"c2"})
    assert calls == [["a", "b"]]
    # The unit's own digest is part of its key.
    calls, _ = build(memo, {**DIGESTS, "rows-of:b": b"b2", "case-studies": b"c2"}, sitemap_digest=b"other")
    assert calls == ["sitemap"]


def test_a_unit_that_starts_reading_something_follows_it() -> None:
    memo = Memo()
    build(memo)
    # The feed now reads the rows too (no declaration changes): it is kept while rows are unchanged…
    calls, _ = build(memo, feed_reads=("posts", "rows"))
    assert calls == []
    # …and, once made again, it is made whenever the rows change.
    calls, _ = build(memo, {**DIGESTS, "posts": b"p2"}, feed_reads=("posts", "rows"))
    assert "feed" in calls
    calls, _ = build(memo, {**DIGESTS, "posts": b"p2", "rows": b"r2"}, feed_reads=("posts", "rows"))
    assert calls == ["sitemap", "feed"]


def test_a_unit_is_made_when_a_read_is_unknown_or_its_files_are_not_usable() -> None:
    memo = Memo()
    build(memo)
    calls, files = build(memo, usable=lambda path: path != "api/a.json")
    assert calls == [["a"]] and files["api/a.json"] == b"acases"
    # "posts" unknown to the index: the sitemap and the feed are made on every build.
    unknown = {k: v for k, v in DIGESTS.items() if k != "posts"}
    for _ in range(2):
        calls, _ = build(memo, unknown)
        assert calls == ["sitemap", "feed"]


def test_global_inputs_are_part_of_every_key() -> None:
    memo = Memo()
    build(memo)
    files = StageMemo(memo, lambda path: True, b"new code", cast(DepIndex, Digests(DIGESTS)))(
        [Unit("sitemap", b"pages", lambda: {"sitemap.xml": b"made again"})]
    )
    assert files == {"sitemap.xml": b"made again"}

"""The engine makes an output unit again only when what it declares it reads changed (``StageMemo``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import cast

from builder.engine.depindex import KEPT, DepIndex, StageMemo
from builder.engine.memo import Memo
from builder.site.deps import Batch, Files, Unit


class Digests:
    """A stand-in for the dependency index: fixed digests, None for a dependency it does not know."""

    def __init__(self, values: dict[str, bytes]) -> None:
        self.values = values

    def digest(self, dep: str) -> bytes | None:
        return self.values.get(dep)


DIGESTS = {"rows": b"r1", "recipe:a": b"a1", "recipe:b": b"b1"}


def build(
    memo: Memo,
    digests: dict[str, bytes] = DIGESTS,
    sitemap_digest: bytes = b"pages",
    usable: Callable[[str], bool] = lambda path: True,
) -> tuple[list[object], dict[str, bytes]]:
    """Make the units of one build; what was made, and every file."""
    calls: list[object] = []

    def sitemap() -> Files:
        calls.append("sitemap")
        return {"sitemap.xml": b"map"}

    def documents(names: set[str]) -> dict[str, Files]:
        calls.append(sorted(names))
        return {name: {f"api/{name}.json": name.encode()} for name in names}

    def feed() -> Files:
        calls.append("feed")
        return {"feed.xml": b"feed"}

    units: list[Unit | Batch] = [
        Unit("sitemap", ("rows", "posts"), sitemap_digest, sitemap),
        Batch({"a": (("recipe:a",), b""), "b": (("recipe:b",), b"")}, documents),
        Unit("feed", None, b"", feed),
    ]
    files = StageMemo(memo, usable, b"global", cast(DepIndex, Digests(digests)))(units)
    return calls, files


def test_units_whose_reads_are_unchanged_are_kept_and_the_others_made() -> None:
    memo = Memo()
    digests = {**DIGESTS, "posts": b"p1"}
    calls, files = build(memo, digests)
    assert calls == ["sitemap", ["a", "b"], "feed"]
    assert files == {"sitemap.xml": b"map", "api/a.json": b"a", "api/b.json": b"b", "feed.xml": b"feed"}
    # Nothing changed: only the unit that declares no reads is made.
    calls, files = build(memo, digests)
    assert calls == ["feed"]
    assert files == {"sitemap.xml": KEPT, "api/a.json": KEPT, "api/b.json": KEPT, "feed.xml": b"feed"}
    # One recipe changed: of the batch, only its name is made.
    calls, files = build(memo, {**digests, "recipe:b": b"b2"})
    assert calls == [["b"], "feed"] and files["api/a.json"] is KEPT and files["api/b.json"] == b"b"
    # The unit's own digest is part of its key.
    calls, _ = build(memo, {**digests, "recipe:b": b"b2"}, sitemap_digest=b"other pages")
    assert calls == ["sitemap", "feed"]


def test_a_unit_is_made_when_a_read_is_unknown_or_its_files_are_not_usable() -> None:
    memo = Memo()
    digests = {**DIGESTS, "posts": b"p1"}
    build(memo, digests)
    calls, files = build(memo, digests, usable=lambda path: path != "api/a.json")
    assert calls == [["a"], "feed"] and files["api/a.json"] == b"a"
    # "posts" unknown: the sitemap has no key, and is made on every build.
    for _ in range(2):
        calls, _ = build(memo, DIGESTS)
        assert calls == ["sitemap", "feed"]


def test_global_inputs_are_part_of_every_key() -> None:
    memo = Memo()
    digests = {**DIGESTS, "posts": b"p1"}
    build(memo, digests)
    files = StageMemo(memo, lambda path: True, b"new code", cast(DepIndex, Digests(digests)))(
        [Unit("sitemap", ("rows", "posts"), b"pages", lambda: {"sitemap.xml": b"made again"})]
    )
    assert files == {"sitemap.xml": b"made again"}

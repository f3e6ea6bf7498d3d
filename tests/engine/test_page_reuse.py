"""Which pages a build renders again (:mod:`builder.engine.page_reuse`)."""

from __future__ import annotations

from typing import Any

import pytest

from builder.engine.build_state import OutputRecord
from builder.engine.page_reuse import Fingerprints, sort_jobs
from builder.errors import BuilderError

OUT = "/srv/site/"


class Digests:
    """Dependency digests as a DepIndex gives them: ``now`` this build, ``before`` the last one."""

    def __init__(self, now: dict[str, bytes | None], before: dict[str, bytes | None] | None = None) -> None:
        self.now, self.before = now, before or {}

    def digest(self, dep: str) -> bytes | None:
        return self.now.get(dep)

    def unchanged(self, dep: str) -> bool:
        return self.before.get(dep) is not None and self.now.get(dep) == self.before.get(dep)


def prints(
    now: dict[str, bytes | None],
    before: dict[str, bytes | None] | None = None,
    templates: dict[str, bytes] | None = None,
    changed: set[str] | None = None,
) -> Fingerprints:
    deps: Any = Digests(now, before)
    return Fingerprints(b"global", deps, templates or {"templates/page.html": b"t1"}, changed)


def page() -> bytes:
    return b"<p>page</p>"


def test_a_fingerprint_changes_with_each_dependency_template_and_path() -> None:
    base = prints({"front:a": b"1"}).of("a.html", ("front:a",), ("page.html",))
    assert base is not None
    assert prints({"front:a": b"2"}).of("a.html", ("front:a",), ("page.html",)) != base
    other_template = prints({"front:a": b"1"}, templates={"templates/page.html": b"t2"})
    assert other_template.of("a.html", ("front:a",), ("page.html",)) != base
    assert prints({"front:a": b"1"}).of("b.html", ("front:a",), ("page.html",)) != base
    assert prints({"front:a": b"1"}).of("a.html", ("front:a", "front:a"), ("page.html",)) == base


def test_a_dependency_without_a_digest_has_no_fingerprint() -> None:
    assert prints({}).of("a.html", ("unknown:thing",), ()) is None


def test_unchanged_needs_known_templates_the_same_reads_and_no_changed_template() -> None:
    old = OutputRecord(b"fp", b"d", ("page.html",), (1, 1, 1), ("front:a",))
    same = {"front:a": b"1"}
    assert prints(same, same, changed=set()).unchanged(old)
    assert not prints(same, same, changed=None).unchanged(old)  # changes not known
    assert not prints(same, same, changed={"templates/page.html"}).unchanged(old)
    assert not prints({"front:a": b"2"}, same, changed=set()).unchanged(old)
    read_more = OutputRecord(b"fp", b"d", ("page.html",), (1, 1, 1), ("front:a", "rows"))
    assert not prints(same, same, changed=set()).unchanged(read_more)  # rows: no earlier digest


def test_pages_sharing_reads_are_judged_alike_and_each_read_is_compared_once() -> None:
    compared: list[str] = []

    class Counting(Digests):
        def unchanged(self, dep: str) -> bool:
            compared.append(dep)
            return super().unchanged(dep)

    before = {"front:a": b"1", "front:b": b"1", "rows": b"1"}
    deps: Any = Counting({**before, "front:b": b"2"}, before)
    fp = Fingerprints(b"global", deps, {"templates/page.html": b"t1"}, set())

    def record(*reads: str) -> OutputRecord:
        return OutputRecord(b"fp", b"d", ("page.html",), (1, 1, 1), reads)

    verdicts = [
        fp.unchanged(record("front:a", "rows")),
        fp.unchanged(record("front:b", "rows")),  # front:b changed
        fp.unchanged(record("rows", "front:a")),
        fp.unchanged(record("front:b")),  # judged stale again, without comparing it again
    ]
    assert verdicts == [True, False, True, False]
    assert sorted(compared) == ["front:a", "front:b", "rows"]


def test_sort_keeps_intact_pages_whose_reads_kept_their_digests_and_renders_the_rest() -> None:
    fp = prints({"front:a": b"1"})
    fingerprint = fp.of("a.html", ("front:a",), ("page.html",))
    record = OutputRecord(fingerprint, b"d", ("page.html",), (5, 1, 1), ("front:a",))
    jobs = [
        ("a.html", page),  # kept
        ("b.html", page),  # no record: rendered
        ("c.html", page),  # a record without a fingerprint (it read something unknown): rendered
        ("d.html", page),  # damaged: rendered
    ]
    d_record = OutputRecord(
        fp.of("d.html", ("front:a",), ("page.html",)), b"d", ("page.html",), (6, 1, 1), ("front:a",)
    )
    unknown = OutputRecord(None, b"d", ("page.html",), (7, 1, 1), ("unknown:x",))
    previous = {"a.html": record, "c.html": unknown, "d.html": d_record}
    result = sort_jobs(jobs, previous, {"d.html"}, fp, OUT)
    assert result.kept == {"a.html": OUT + "a.html"}
    assert result.records == {"a.html": record}
    assert result.pending == [1, 2, 3]
    assert sort_jobs(jobs, previous, set(), fp, OUT).kept == {
        "a.html": OUT + "a.html",
        "d.html": OUT + "d.html",
    }
    changed = sort_jobs(jobs, previous, set(), prints({"front:a": b"2"}), OUT)
    assert changed.kept == {} and changed.pending == [0, 1, 2, 3]


def test_two_jobs_for_one_path_are_refused() -> None:
    with pytest.raises(BuilderError, match="two pages would be written to a.html"):
        sort_jobs([("a.html", page), ("a.html", page)], {}, set(), prints({}), OUT)

"""Derived values kept between builds under what making them read (:mod:`builder.engine.derived`)."""

from __future__ import annotations

from typing import Any

from builder.engine.derived import Derived, value_digest
from builder.engine.memo import Memo
from builder.reads import derived, deriving, note, recording


class Digests:
    """Digests of keys as :class:`~builder.engine.depindex.DepIndex` gives them."""

    def __init__(self, **now: bytes) -> None:
        self.now: dict[str, bytes | None] = {k.replace("_", "-"): v for k, v in now.items()}

    def digest(self, dep: str) -> bytes | None:
        return self.now.get(dep)


def store(memo: Memo, deps: Digests, makers: dict[str, Any] | None = None) -> Derived:
    d: Any = deps
    return Derived(memo, b"glob", d, makers or {})


def test_a_step_reads_the_name_and_the_value_is_made_from_its_own_reads() -> None:
    memo, deps = Memo(), Digests(rows_of=b"1")
    made: list[str] = []

    def make() -> int:
        note("rows-of")
        made.append("x")
        return 42

    values = store(memo, deps)
    with deriving(values), recording() as reads:
        assert derived("card:a", make) == 42
        assert derived("card:a", make) == 42  # once per build
    assert reads == {"card:a"} and made == ["x"]
    assert values.made["card:a"] == ((("rows-of", b"1"),), 42, value_digest(42))


def test_the_next_build_takes_the_value_while_its_reads_are_the_same_and_makes_it_again_else() -> None:
    memo, made = Memo(), []

    def make() -> str:
        note("rows-of")
        made.append("x")
        return "card"

    with deriving(store(memo, Digests(rows_of=b"1"))):
        derived("card:a", make)
    with deriving(store(memo, Digests(rows_of=b"1"))):
        assert derived("card:a", make) == "card"
    assert made == ["x"]
    later = store(memo, Digests(rows_of=b"2"))
    with deriving(later):
        assert derived("card:a", make) == "card"
    assert made == ["x", "x"]
    assert later.digest("card:a") == value_digest("card")  # same value, same digest: pages stay


def test_a_name_no_step_asked_for_is_digested_through_its_kinds_maker() -> None:
    memo = Memo()
    values = store(memo, Digests(), {"card": lambda slug: f"card of {slug}"})
    assert values.digest("card:b") == value_digest("card of b")
    assert values.value_digests()["card"]("b") == value_digest("card of b")
    assert values.digest("other:b") is None  # no maker: a page that read it renders again


def test_a_maker_that_fails_while_digesting_gives_no_digest() -> None:
    def fail(slug: str) -> None:
        raise KeyError(slug)

    assert store(Memo(), Digests(), {"card": fail}).digest("card:gone") is None


def test_a_value_that_read_an_unknown_key_is_not_kept() -> None:
    memo = Memo()

    def make() -> int:
        note("unknown:thing")
        return 1

    values = store(memo, Digests())
    with deriving(values):
        derived("card:a", make)
    assert values.made == {} and memo.get(("derived", b"glob", "card:a")) is None


def test_entries_made_in_a_worker_are_adopted() -> None:
    memo = Memo()
    parent = store(memo, Digests(rows_of=b"1"))
    worker = store(Memo(), Digests(rows_of=b"1"))
    with deriving(worker):
        derived("card:a", lambda: (note("rows-of"), 7)[1])
    parent.adopt(worker.made)
    assert parent.digest("card:a") == value_digest(7)
    assert memo.get(("derived", b"glob", "card:a")) == worker.made["card:a"]


def test_without_the_engine_derived_makes_the_value_and_the_caller_reads_its_reads() -> None:
    with recording() as reads:
        assert derived("card:a", lambda: (note("rows-of:a"), 3)[1]) == 3
    assert reads == {"rows-of:a"}

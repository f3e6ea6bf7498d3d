"""Markdown bodies: ``Markdown.prerender`` gives the same rendered bodies as rendering one by one."""

from __future__ import annotations

from typing import Any

import pytest

from builder.content.markdown import FORK_BODIES, Markdown
from builder.engine import forked


def _body(i: int) -> str:
    # Every tenth body repeats an earlier one: duplicates are rendered once.
    n = i - 10 if i % 10 == 9 else i
    return (
        f"# Recipe {n}\n\nRun it with `--flag {n}`.\n\n| a | b |\n| - | - |\n| {n} | <b>{n}</b> |\n\n"
        f"## Troubleshooting\n\n### Why is run {n} slow?\n\nBecause of *{n}*.\n\n"
        f"### Second question {n}\n\nAnswer.\n\n## After\n\nText {n}.\n"
    )


@pytest.fixture
def forks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the children ``prerender`` forks."""
    started: list[int] = []
    real = forked.Forked

    def spy(compute: Any) -> Any:
        started.append(1)
        return real(compute)

    monkeypatch.setattr(forked, "Forked", spy)
    return started


@pytest.mark.parametrize("count", [FORK_BODIES - 1, 3 * FORK_BODIES + 1])
def test_prerender_equals_rendering_one_by_one(count: int, forks: list[int]) -> None:
    bodies = [_body(i) for i in range(count)]
    pre = Markdown()
    pre.prerender(bodies, faq=True)
    assert len(forks) == (1 if len(set(bodies)) >= FORK_BODIES else 0)
    serial = Markdown()
    for body in bodies:
        assert pre.cache[pre._key(body, True)] == serial.render(body, faq=True)
    assert len(pre.cache) == len(set(bodies))
    assert pre.used == serial.used
    # Afterwards render() is a cache hit: the same object, nothing parsed again.
    assert pre.render(bodies[5], faq=True) is pre.cache[pre._key(bodies[5], True)]


def test_prerender_skips_cached_bodies_and_keeps_modes_apart(forks: list[int]) -> None:
    md = Markdown()
    bodies = [_body(i) for i in range(2 * FORK_BODIES)]
    first = md.render(bodies[0], faq=True)
    md.prerender(bodies[:10], faq=True)  # nine new: below the threshold, no child
    assert forks == []
    assert md.render(bodies[0], faq=True) is first
    md.prerender(bodies, faq=False)  # the other mode is another cache entry
    assert len(forks) == 1
    plain = md.render(bodies[0], faq=False)
    assert plain.faq == () and first.faq != ()
    assert "Why is run 0 slow?" in plain.html


def test_a_pickled_document_reads_its_front_matter_when_first_asked() -> None:
    import pickle

    from builder.content.markdown import split_document

    doc = split_document("content/recipes/x.md", "---\ntitle: A\nmodel: b/c\n---\nThe body.\n")
    restored = pickle.loads(pickle.dumps(doc))
    assert "front" not in vars(restored)  # still bytes
    assert restored.body == doc.body and restored.digest == doc.digest
    assert restored.line_of(("model",)) == 3
    assert "front" in vars(restored) and restored.front == doc.front
    assert restored == doc
    twice = pickle.loads(pickle.dumps(pickle.loads(pickle.dumps(doc))))  # bytes passed on unread
    assert twice == doc


def test_a_document_renders_under_the_key_its_body_has() -> None:
    import pickle

    from builder.content.markdown import markdown_key, split_document

    doc = pickle.loads(pickle.dumps(split_document("content/x.md", "---\ntitle: A\n---\n# Hi\n\ntext\n")))
    assert doc.body_keys == (markdown_key(doc.body, False), markdown_key(doc.body, True))
    markdown = Markdown()
    by_doc = markdown.render(doc, faq=True)
    assert markdown.render(doc.body, faq=True) is by_doc  # one cache entry for both
    assert markdown.cache == {doc.body_keys[True]: by_doc}


def _serial(bodies: list[str]) -> Markdown:
    serial = Markdown()
    for body in bodies:
        serial.render(body, faq=True)
    return serial


def test_a_child_started_early_takes_the_bodies_from_the_back() -> None:
    """The child renders while this process does other work; finishing renders only what is left."""
    import time

    bodies = [_body(i) for i in range(3 * FORK_BODIES)]
    md = Markdown()
    started = md.start_prerender(bodies, faq=True)
    deadline = time.monotonic() + 60
    while started._get(1) > 0 and time.monotonic() < deadline:  # the child has claimed them all
        time.sleep(0.01)
    here: list[str] = []
    real = md._render

    def counted(body: str, faq: bool) -> Any:
        here.append(body)
        return real(body, faq)

    md._render = counted  # type: ignore[method-assign]
    md.finish_prerender(started)
    assert here == []
    serial = _serial(bodies)
    assert md.cache == serial.cache and md.used == serial.used


def test_bodies_a_dying_child_claimed_are_rendered_here(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    parent = os.getpid()
    real = Markdown._render
    calls = {"n": 0}

    def dies_in_the_child(self: Markdown, body: str, faq: bool) -> Any:
        calls["n"] += 1
        if os.getpid() != parent and calls["n"] > 5:
            raise RuntimeError("the child fails after claiming six bodies")
        return real(self, body, faq)

    monkeypatch.setattr(Markdown, "_render", dies_in_the_child)
    bodies = [_body(i) for i in range(3 * FORK_BODIES)]
    md = Markdown()
    md.prerender(bodies, faq=True)
    assert md.cache == _serial(bodies).cache


def test_cancel_stops_the_child_and_reaps_it() -> None:
    import os

    md = Markdown()
    started = md.start_prerender([_body(i) for i in range(3 * FORK_BODIES)], faq=True)
    child = started._child
    assert child is not None
    pid = child._pid
    started.cancel()
    if pid:
        with pytest.raises(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)  # reaped: no child left behind
    started.cancel()  # twice is harmless

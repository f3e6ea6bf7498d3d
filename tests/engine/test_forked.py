"""A computation run in a forked child gives what running it here gives."""

from __future__ import annotations

import os

import pytest

from builder.engine.forked import Forked


def test_the_result_comes_from_the_child() -> None:
    parent = os.getpid()
    assert Forked(os.getpid).result() != parent
    assert Forked(lambda: {"a": [1, 2.5, None]}).result() == {"a": [1, 2.5, None]}


def test_a_failing_child_is_computed_again_here_and_raises_here() -> None:
    calls: list[int] = []

    def compute() -> int:
        calls.append(os.getpid())
        raise ValueError("bad input")

    with pytest.raises(ValueError, match="bad input"):
        Forked(compute).result()
    assert calls == [os.getpid()]  # the child's attempt is not seen here; this one is


def test_cancel_leaves_no_child() -> None:
    forked = Forked(lambda: sum(range(10)))
    pid = forked._pid
    assert pid > 0
    forked.cancel()
    # Its own child only: other tests' builds may leave theirs (the trash deleter) running a while.
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)

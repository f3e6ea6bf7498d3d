"""A computation run in a forked child gives what running it here gives; loading content that way
gives the same site and the same problems, in the same order."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import builder.data.load
from builder.config import load_config
from builder.data.loadcache import LoadCache
from builder.engine.forked import Forked, Notice
from builder.errors import Problems
from tests.conftest import SITES, SITES_INVALID


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


def test_a_notice_carries_a_value_the_child_sends_before_it_ends() -> None:
    notice: Notice[dict[str, int]] = Notice()

    def compute() -> int:
        notice.send({"pid": os.getpid()})
        return 7

    forked = Forked(compute)
    notice.forked()
    sent = notice.receive()
    assert sent is not None and sent["pid"] not in (0, os.getpid())
    assert forked.result() == 7


def test_a_notice_no_child_sent_is_none() -> None:
    here: Notice[int] = Notice()
    here.send(1)  # in the process that made it: nothing is sent
    here.forked()
    assert here.receive() is None

    failed: Notice[int] = Notice()

    def compute() -> int:
        raise ValueError("before sending")

    forked = Forked(compute)
    failed.forked()
    assert failed.receive() is None  # the child's end closed with it
    with pytest.raises(ValueError, match="before sending"):
        forked.result()


def test_a_closed_notice_gives_back_its_pipe() -> None:
    before = len(os.listdir("/proc/self/fd"))
    notice: Notice[int] = Notice()
    assert len(os.listdir("/proc/self/fd")) == before + 2
    notice.close()
    notice.close()  # once is enough
    assert len(os.listdir("/proc/self/fd")) == before
    assert notice.receive() is None


def test_a_result_taken_on_a_thread_is_the_result() -> None:
    forked = Forked(lambda: {"pid": os.getpid(), "values": list(range(100_000))})
    forked.prefetch()
    forked.prefetch()  # once is enough
    got = forked.result()
    assert got["pid"] != os.getpid()
    assert got["values"] == list(range(100_000))
    # Its own child reaped (other tests' builds may leave theirs, the trash deleter, running a while).
    with pytest.raises(ChildProcessError):
        os.waitpid(got["pid"], os.WNOHANG)


def test_a_failed_child_taken_on_a_thread_is_computed_here() -> None:
    calls: list[int] = []

    def compute() -> int:
        calls.append(os.getpid())
        if len(calls) == 1 and os.getpid() != parent:
            os._exit(3)  # the child dies without a result
        return 7

    parent = os.getpid()
    forked = Forked(compute)
    forked.prefetch()
    assert forked.result() == 7
    assert calls == [parent]


def test_cancel_after_prefetch_leaves_no_child() -> None:
    forked = Forked(lambda: sum(range(10)))
    pid = forked._pid
    assert pid > 0
    forked.prefetch()
    forked.cancel()
    with pytest.raises(ChildProcessError):  # its own child only, as above
        os.waitpid(pid, os.WNOHANG)


def snapshot(
    root: Path, *, fork: bool, cache: bool, monkeypatch: pytest.MonkeyPatch, ahead: bool = False
) -> tuple[object, ...]:
    monkeypatch.setattr(builder.data.load, "FORK_PAGES", 0 if fork else 10**9)
    problems = Problems()
    config = load_config(root)
    started = builder.data.load.start_content_load(config) if ahead else None
    assert (started is not None) == ahead
    site = builder.data.load.load_site(
        config, problems, cache=LoadCache() if cache else None, started=started
    )
    pages = {
        kind: {
            slug: (
                page.doc.rel,
                page.doc.front.value,
                page.doc.front.lines,
                [(d.message, d.line) for d in page.doc.front.duplicates],  # exceptions compare by identity
                page.doc.body,
                page.doc.body_line,
                page.doc.digest,
                page.meta.model_dump(),
            )
            for slug, page in getattr(site, kind).items()
        }
        for kind in ("recipes", "case_studies", "posts")
    }
    flags = {slug: recipe.flags for slug, recipe in site.recipes.items()}
    return pages, flags, site.rows.to_pylist(), problems.errors, problems.warnings


@pytest.mark.parametrize(
    "root",
    [SITES / "minimal", SITES_INVALID / "front_matter_duplicate", SITES_INVALID / "front_matter_errors"],
    ids=lambda p: p.name,
)
@pytest.mark.parametrize("cache", [False, True])
def test_content_loaded_in_a_child_equals_content_loaded_here(
    root: Path, cache: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    here = snapshot(root, fork=False, cache=cache, monkeypatch=monkeypatch)
    there = snapshot(root, fork=True, cache=cache, monkeypatch=monkeypatch)
    assert there == here
    assert here[3] or root.name == "minimal"  # the invalid sites do report their problems


@pytest.mark.parametrize(
    "root",
    [SITES / "minimal", SITES_INVALID / "front_matter_duplicate", SITES_INVALID / "front_matter_errors"],
    ids=lambda p: p.name,
)
def test_content_load_started_ahead_equals_content_loaded_here(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    here = snapshot(root, fork=False, cache=False, monkeypatch=monkeypatch)
    ahead = snapshot(root, fork=True, cache=False, monkeypatch=monkeypatch, ahead=True)
    assert ahead == here


def test_small_sites_start_no_content_load_ahead() -> None:
    assert builder.data.load.FORK_PAGES > 1
    assert builder.data.load.start_content_load(load_config(SITES / "minimal")) is None


def test_import_of_the_load_stage_leaves_the_row_stages_for_later() -> None:
    # check starts the content load between the two: only the light half is imported first.
    import subprocess
    import sys

    code = "import sys, builder.data.load; print(sorted({'duckdb', 'pyarrow', 'numpy'} & set(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=SITES.parent.parent
    )
    assert out.stdout.strip() == "[]"

"""The preview's builds in a spawned process: same answers as in-process, survives the child dying,
and a rebuild still running when a newer save arrives is cancelled for that save's page."""

from __future__ import annotations

import atexit
import functools
import os
import signal
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

from bs4 import BeautifulSoup

from builder.engine.build_state import state_dir
from builder.serve.preview import WARM, PreviewBuilder
from builder.serve.preview_process import BuildProcess, _gone
from tests.conftest import MakeSite, tree
from tests.engine.pure_build import differences, pure_build

PAGE = "recipes/tiny/index.html"
IDLE = 0.2
"""The build process's idle seconds before it saves the record (1 in ``serve``)."""
T = TypeVar("T")


class HeldPreview(PreviewBuilder):
    """The preview's builder, whose rebuilds stop after their first page while ``gate/hold`` exists
    (each says so with ``gate/held-<pid>``): a rebuild as long as a test wants."""

    def __init__(self, root: Path, out: Path | None = None, *, gate: Path, **options: Any) -> None:
        super().__init__(root, out, progress=self._hold, **options)
        self.gate = gate

    def _hold(self, stage: str, done: int, total: int) -> None:
        if stage == "render" and (self.gate / "hold").exists():
            (self.gate / f"held-{os.getpid()}").touch()
            while (self.gate / "hold").exists():
                time.sleep(0.01)


class SlowToExit(HeldPreview):
    """A held preview in a process whose way out waits (an exit handler, as libraries register)."""

    def __init__(self, root: Path, out: Path | None = None, **options: Any) -> None:
        super().__init__(root, out, **options)
        atexit.register(time.sleep, 30)


def _when(found: Callable[[], T], timeout: float = 60) -> T:
    """``found()`` once it is true (an event in another process), failing after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not (value := found()):
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)
    return value


def _saved(record: Path, earlier: dict[str, bytes]) -> dict[str, bytes] | None:
    """The record's files once a save other than ``earlier`` has ended (its state written last, no
    temporary file left), else None."""
    now = tree(record)
    done = "state.pickle" in now and not any(name.startswith(".") for name in now)
    return now if done and now.get("state.pickle") != earlier.get("state.pickle") else None


def test_builds_answer_from_a_child_process(make_site: MakeSite, tmp_path: Path) -> None:
    root = make_site()
    process = BuildProcess(root, tmp_path / "serve", workers=2)
    try:
        first = process(None)
        assert first.ok and first.changed is not None and "recipes/tiny/index.html" in first.changed
        assert process.pid is not None and process.pid != os.getpid()
        recipe = root / "content/recipes/tiny.md"
        recipe.write_text(recipe.read_text() + "\nA sentence from the test.\n")
        quick = process(frozenset({recipe}))
        assert quick.changed == {"recipes/tiny/index.html"} and quick.followup == {recipe}
        assert "A sentence from the test." in (tmp_path / "serve/recipes/tiny/index.html").read_text()
        assert process(quick.followup).ok
    finally:
        process.close()
    assert process.pid is None


def test_a_dead_child_is_replaced_and_the_next_answer_says_so(make_site: MakeSite, tmp_path: Path) -> None:
    root = make_site()
    process = BuildProcess(root, tmp_path / "serve")
    try:
        assert process(None).ok
        dead = process.pid
        assert dead is not None
        os.kill(dead, signal.SIGKILL)
        result = process(frozenset({root / "content/recipes/tiny.md"}))
        assert result.ok and result.changed is None  # every open page reloads
        assert result.note == "the build process ended (exit code -9); started a new one"
        assert process.pid not in (None, dead)
        assert process(frozenset()).ok
    finally:
        process.close()


def test_a_save_during_a_rebuild_is_answered_without_waiting_for_it(
    make_site: MakeSite, tmp_path: Path
) -> None:
    """A recipe is saved and its page answered; its full rebuild starts and is held in its render. A
    new row file is saved meanwhile: the rebuild is cancelled at once (still held: never waited for),
    having written nothing; the row file's page comes next, and the rebuild after it, for both saves,
    gives build_site's site."""
    root = make_site()
    out = tmp_path / "serve"
    gate = tmp_path / "gate"
    gate.mkdir()
    newer = threading.Event()
    process = BuildProcess(
        root,
        out,
        workers=1,
        interrupt=newer.is_set,
        make=functools.partial(HeldPreview, gate=gate),
        idle=IDLE,
    )
    try:
        assert process(None).ok
        _when(lambda: _saved(state_dir(root, out.resolve()), {}))  # its record, saved once idle
        recipe = root / "content/recipes/tiny.md"
        recipe.write_text(recipe.read_text() + "\nA sentence saved first.\n")
        quick = process(frozenset({recipe}))
        assert quick.changed == {PAGE} and quick.followup == {recipe}
        published, record = tree(out), tree(state_dir(root, out.resolve()))
        assert published and record
        (gate / "hold").touch()
        with ThreadPoolExecutor(1) as pool:
            rebuild = pool.submit(process, quick.followup)
            [held] = _when(lambda: list(gate.glob("held-*")))
            rows = root / "data/rows/tiny/2026-01-09-node-a.csv"
            header = (root / "data/rows/tiny/2026-01-02-node-a.csv").read_text().splitlines()[0]
            rows.write_text(
                f"{header}\n2026-01-09,tiny,node-a,1.0.0,512,1,51.5,"
                "--max-model-len 4096 --kv-cache-dtype fp8,EXAMPLE_ENV=1,synthetic test row\n"
            )
            newer.set()  # the server's next batch is ready
            cancelled = rebuild.result(timeout=60)
        newer.clear()
        assert (gate / "hold").exists()  # answered while the rebuild was still held
        assert cancelled.ok and cancelled.changed == frozenset() and cancelled.followup == {recipe}
        builder = int(held.name.removeprefix("held-"))
        _when(lambda: _gone(builder))  # ended, with its render workers
        assert process.pid not in (None, builder)
        assert tree(out) == published and tree(state_dir(root, out.resolve())) == record  # nothing written
        (gate / "hold").unlink()

        answer = process(frozenset({rows}) | cancelled.followup)
        assert answer.changed == {PAGE} and answer.followup == {rows, recipe}
        page = BeautifulSoup((out / PAGE).read_bytes(), "html.parser")
        assert "2026-01-09" in {t.get_text() for t in page.select("table.rows time")}
        assert "A sentence saved first." in page.get_text()
        assert process(answer.followup).ok
        problems, expected = pure_build(root, tmp_path / "pure")
        assert problems is None and differences(out, expected) == ""
        answering = process.pid
    finally:
        process.close()
    assert answering is not None and _when(lambda: _gone(answering), timeout=10)


def test_a_standby_that_took_over_ends_at_once_when_the_server_stops(
    make_site: MakeSite, tmp_path: Path
) -> None:
    """The standby that answered for a cancelled rebuild is a fork of the spawned child: stopping the
    server ends it without the exit handlers it inherited (they waited until it was killed, 5 s)."""
    root = make_site()
    gate = tmp_path / "gate"
    gate.mkdir()
    newer = threading.Event()
    process = BuildProcess(
        root,
        tmp_path / "serve",
        workers=1,
        interrupt=newer.is_set,
        make=functools.partial(SlowToExit, gate=gate),
    )
    try:
        assert process(None).ok
        recipe = root / "content/recipes/tiny.md"
        recipe.write_text(recipe.read_text() + "\nA sentence from the test.\n")
        quick = process(frozenset({recipe}))
        (gate / "hold").touch()
        with ThreadPoolExecutor(1) as pool:
            rebuild = pool.submit(process, quick.followup)  # the full rebuild, held
            _when(lambda: list(gate.glob("held-*")))
            newer.set()
            assert rebuild.result(timeout=60).note == "rebuild stopped for newer changes"
        (gate / "hold").unlink()
        standby = process.pid
    finally:
        started = time.monotonic()
        process.close()
    assert time.monotonic() - started < 2
    assert standby is not None and _gone(standby)


def test_the_record_is_saved_when_idle_and_on_close_not_after_each_rebuild(
    make_site: MakeSite, tmp_path: Path
) -> None:
    """A rebuild answers without saving the build record (at 1,000 recipes the save takes 0.1 s, which
    a save arriving then would wait for); the child saves it once no request came for a second
    (``IDLE``), and when it stops. A new build process then finds nothing to build."""
    root = make_site()
    out = tmp_path / "serve"
    record = state_dir(root, out.resolve())
    process = BuildProcess(root, out, workers=1)  # idle for a second before it saves
    try:
        assert process(None).ok
        saved = _when(lambda: _saved(record, {}))  # the start-up build's record, once idle
        recipe = root / "content/recipes/tiny.md"
        recipe.write_text(recipe.read_text() + "\nA sentence from the test.\n")
        quick = process(frozenset({recipe}))
        assert process(quick.followup).ok
        assert tree(record) == saved  # answered before the record's save
        saved = _when(lambda: _saved(record, saved))
        recipe.write_text(recipe.read_text() + "\nAnother sentence.\n")
        assert process(process(frozenset({recipe})).followup).ok
        assert tree(record) == saved
    finally:
        process.close()
    assert tree(record) != saved  # saved as the child stopped
    problems, expected = pure_build(root, tmp_path / "pure")
    assert problems is None and differences(out, expected) == ""
    again = PreviewBuilder(root, out)  # as a new build process starts
    assert WARM in again(None).followup  # a no-op start-up: the record is the output's
    again.close()

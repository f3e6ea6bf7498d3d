"""builder.serve.watch: what counts as a change, event → path translation, debounce, observer fallback."""

from __future__ import annotations

import errno
import os
import shutil
import threading
import time
from pathlib import Path

import pytest
from watchdog.events import (
    DirCreatedEvent,
    DirDeletedEvent,
    DirModifiedEvent,
    DirMovedEvent,
    FileClosedEvent,
    FileClosedNoWriteEvent,
    FileCreatedEvent,
    FileDeletedEvent,
    FileModifiedEvent,
    FileMovedEvent,
    FileOpenedEvent,
)
from watchdog.observers.polling import PollingObserver

from builder.serve.watch import (
    ChangeHandler,
    ChangeKind,
    PendingChanges,
    Watcher,
    WatchFilter,
    is_editor_temp,
)

TEMP_NAMES = [
    ".tiny.md.swp",
    ".tiny.md.swo",
    "tiny.md.swx",
    "tiny.md~",
    ".#tiny.md",
    "#tiny.md#",
    "4913",
    "tiny.md.tmp",
    ".tiny.md.x8k2j_3q",  # tempfile-style name an atomic writer renames over the target
    "recipe.html___jb_tmp___",
    "recipe.html___jb_old___",
    ".goutputstream-7XKQ2Z",
    ".~lock.rows.csv#",
    ".DS_Store",
    "rows.csv.bak",
    "rows.csv.orig",
]
REAL_NAMES = [
    "tiny.md",
    "base.html",
    "2026-01-02-node-a.csv",
    "rows.jsonl",
    "nodes.yaml",
    ".tiny.md",
    "swp.md",
    "site.css",
]


@pytest.mark.parametrize("name", TEMP_NAMES)
def test_editor_temp_files_are_recognised(name: str) -> None:
    assert is_editor_temp(name)


@pytest.mark.parametrize("name", REAL_NAMES)
def test_real_source_names_are_not_temp(name: str) -> None:
    assert not is_editor_temp(name)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    site = tmp_path / "site-root"
    for folder in ("content/recipes", "data/rows/tiny", "templates"):
        (site / folder).mkdir(parents=True)
    return site


def make_filter(root: Path, templates: Path | None = None) -> WatchFilter:
    return WatchFilter.for_site(root, templates or root / "templates", [root / ".cache", root / "site"])


@pytest.mark.parametrize(
    ("rel", "kind"),
    [
        ("content/recipes/tiny.md", ChangeKind.CONTENT),
        ("content/recipes", ChangeKind.CONTENT),
        ("data/rows/tiny/2026-01-02-node-a.csv", ChangeKind.DATA),
        ("data/nodes.yaml", ChangeKind.DATA),
        ("templates/recipe.html", ChangeKind.TEMPLATE),
        ("templates/static/site.css", ChangeKind.TEMPLATE),
        ("site.yaml", ChangeKind.CONFIG),
        ("site/index.html", None),
        (".cache/builder/serve-site/index.html", None),
        (".cache/builder/deps.json", None),
        ("README.md", None),
        ("pyproject.toml", None),
        ("content/recipes/.tiny.md.swp", None),
        ("content/recipes/tiny.md~", None),
        ("data/rows/tiny/4913", None),
        ("templates/.#recipe.html", None),
        ("content/.git/index", None),
        ("data/__pycache__/x.pyc", None),
        ("contentious/x.md", None),
    ],
)
def test_filter_kinds(root: Path, rel: str, kind: ChangeKind | None) -> None:
    assert make_filter(root).kind(root / rel) is kind


def test_filter_watches_external_templates_and_ignores_paths_outside(root: Path, tmp_path: Path) -> None:
    theme = tmp_path / "theme"
    theme.mkdir()
    wf = make_filter(root, theme)
    assert wf.kind(theme / "recipe.html") is ChangeKind.TEMPLATE
    assert wf.kind(theme / ".recipe.html.swp") is None
    assert wf.kind(tmp_path / "elsewhere.md") is None
    assert (theme, True) in wf.watched_dirs()
    assert (root, False) in wf.watched_dirs()
    assert (root / "site", True) not in wf.watched_dirs()


def handler_for(root: Path) -> tuple[ChangeHandler, PendingChanges]:
    pending = PendingChanges()
    return ChangeHandler(make_filter(root), pending), pending


def test_atomic_save_is_a_change_of_the_target(root: Path) -> None:
    handler, _ = handler_for(root)
    target = root / "content/recipes/tiny.md"
    for temp in (".tiny.md.x8k2j_3q", "tiny.md.tmp", ".goutputstream-7XKQ2Z", "tiny.md___jb_tmp___"):
        tmp = root / "content/recipes" / temp
        assert handler.paths_of(FileCreatedEvent(str(tmp))) == set()
        assert handler.paths_of(FileModifiedEvent(str(tmp))) == set()
        assert handler.paths_of(FileMovedEvent(str(tmp), str(target))) == {target}


def test_vim_backup_dance_reports_only_the_file(root: Path) -> None:
    """vim with backupcopy=no: rename the file to ``file~``, write a new file, delete the backup."""
    handler, _ = handler_for(root)
    target = root / "templates/recipe.html"
    backup = root / "templates/recipe.html~"
    events = [
        FileCreatedEvent(str(root / "templates/4913")),
        FileDeletedEvent(str(root / "templates/4913")),
        FileMovedEvent(str(target), str(backup)),
        FileCreatedEvent(str(target)),
        FileModifiedEvent(str(target)),
        FileClosedEvent(str(target)),
        FileDeletedEvent(str(backup)),
    ]
    found: set[Path] = set()
    for event in events:
        found |= handler.paths_of(event)
    assert found == {target}


def test_deletions_and_renames(root: Path) -> None:
    handler, _ = handler_for(root)
    old = root / "data/rows/tiny/a.csv"
    new = root / "data/rows/tiny/b.csv"
    assert handler.paths_of(FileDeletedEvent(str(old))) == {old}
    assert handler.paths_of(FileMovedEvent(str(old), str(new))) == {old, new}
    # Moved out of the site: its old place changed; moved in from elsewhere: its new place.
    outside = root.parent / "elsewhere.csv"
    assert handler.paths_of(FileMovedEvent(str(old), str(outside))) == {old}
    assert handler.paths_of(FileMovedEvent(str(outside), str(new))) == {new}


def test_new_files_in_new_folders_are_reported(root: Path) -> None:
    handler, _ = handler_for(root)
    folder = root / "data/rows/new-recipe/2026"
    folder.mkdir(parents=True)
    (folder / "2026-03-01-node-a.csv").write_text("date\n", encoding="utf-8")
    (folder / ".2026-03-01-node-a.csv.swp").write_text("", encoding="utf-8")
    top = root / "data/rows/new-recipe"
    assert handler.paths_of(DirCreatedEvent(str(top))) == {folder / "2026-03-01-node-a.csv"}
    # A folder moved in (e.g. unpacked elsewhere, then moved) reports its files and its old place.
    moved = root / "data/rows/moved"
    staging = root / "data/rows/.staging"
    os.rename(top, moved)
    assert handler.paths_of(DirMovedEvent(str(staging), str(moved))) == {
        staging,
        moved / "2026/2026-03-01-node-a.csv",
    }


def test_folder_events_that_mean_nothing_or_everything(root: Path) -> None:
    handler, _ = handler_for(root)
    recipes = root / "content/recipes"
    assert handler.paths_of(DirModifiedEvent(str(recipes))) == set()
    assert handler.paths_of(FileOpenedEvent(str(recipes / "tiny.md"))) == set()
    assert handler.paths_of(FileClosedNoWriteEvent(str(recipes / "tiny.md"))) == set()
    assert handler.paths_of(DirDeletedEvent(str(recipes))) == {recipes}
    assert handler.paths_of(FileModifiedEvent(str(root / ".cache/builder/serve-site/index.html"))) == set()


def test_handler_records_into_pending(root: Path) -> None:
    handler, pending = handler_for(root)
    target = root / "content/recipes/tiny.md"
    handler.dispatch(FileModifiedEvent(str(target)))
    handler.dispatch(FileModifiedEvent(str(root / "content/recipes/.tiny.md.swp")))
    assert pending.wait_batch(timeout=0) == {target}


# --- debounce ------------------------------------------------------------------------------------


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_burst_of_200_events_is_one_batch(root: Path) -> None:
    """A ``git checkout`` touching 200 files, from another thread, while the consumer waits: one batch.

    The clock is fake, so the burst stays inside the quiet window however the threads are scheduled.
    """
    clock = FakeClock()
    handler, _ = handler_for(root)
    pending = handler.pending = PendingChanges(quiet=0.05, max_delay=1.0, clock=clock)
    paths = [root / f"data/rows/r{i:03d}/2026-01-01-node-a.csv" for i in range(200)]
    batches: list[set[Path] | None] = []
    consumer = threading.Thread(target=lambda: batches.append(pending.wait_batch()))
    consumer.start()
    for path in paths:
        handler.dispatch(FileModifiedEvent(str(path)))
    clock.now += 0.06  # the checkout is over: quiet from now on
    consumer.join(10)
    assert batches == [set(paths)]
    assert pending.wait_batch(timeout=0) == set()


def test_a_steady_stream_still_yields_a_batch_after_max_delay() -> None:
    clock = FakeClock()
    pending = PendingChanges(quiet=3600, max_delay=1.0, clock=clock)
    pending.add([Path("/s/content/a.md")])
    clock.now += 0.5
    pending.add([Path("/s/content/b.md")])  # still inside the quiet window...
    clock.now += 0.6  # ...but the first change is now older than max_delay
    assert pending.wait_batch() == {Path("/s/content/a.md"), Path("/s/content/b.md")}


def test_quiet_window_has_passed() -> None:
    clock = FakeClock()
    pending = PendingChanges(quiet=0.05, max_delay=3600, clock=clock)
    pending.add([Path("/s/content/a.md")])
    clock.now += 0.06
    assert pending.wait_batch() == {Path("/s/content/a.md")}


def test_a_file_being_written_in_place_holds_the_batch_until_closed(root: Path) -> None:
    clock = FakeClock()
    handler, _ = handler_for(root)
    handler.track_writes = True
    pending = handler.pending = PendingChanges(quiet=0.01, max_delay=1.0, clock=clock)
    recipe = root / "content/recipes/tiny.md"
    handler.dispatch(FileModifiedEvent(str(recipe)))  # truncated: still open for writing
    clock.now += 0.5
    assert not pending.ready()
    assert pending.waiting()  # a rebuild running now is stale already
    handler.dispatch(FileModifiedEvent(str(recipe)))
    handler.dispatch(FileClosedEvent(str(recipe)))
    assert not pending.ready()  # closed, but the quiet window starts again
    clock.now += 0.02
    assert pending.ready()
    assert pending.wait_batch() == {recipe}
    assert not pending.waiting()


def test_a_writer_that_never_closes_waits_only_max_delay(root: Path) -> None:
    clock = FakeClock()
    handler, _ = handler_for(root)
    handler.track_writes = True
    pending = handler.pending = PendingChanges(quiet=0.01, max_delay=1.0, clock=clock)
    recipe = root / "content/recipes/tiny.md"
    handler.dispatch(FileModifiedEvent(str(recipe)))
    clock.now += 0.99
    assert not pending.ready()
    clock.now += 0.02
    assert pending.wait_batch() == {recipe}
    # A rename or a deletion also ends a write.
    handler.dispatch(FileModifiedEvent(str(recipe)))
    handler.dispatch(FileDeletedEvent(str(recipe)))
    clock.now += 0.02
    assert pending.wait_batch() == {recipe}


def test_without_close_events_modifications_are_not_held(root: Path) -> None:
    clock = FakeClock()
    handler, _ = handler_for(root)
    pending = handler.pending = PendingChanges(quiet=0.01, max_delay=1.0, clock=clock)
    recipe = root / "content/recipes/tiny.md"
    handler.dispatch(FileModifiedEvent(str(recipe)))  # polling: no close will ever come
    clock.now += 0.02
    assert pending.ready()


def test_wait_batch_timeout_and_close() -> None:
    pending = PendingChanges()
    assert pending.wait_batch(timeout=0) == set()
    pending.add([])  # nothing new: no wake-up, no batch
    assert pending.wait_batch(timeout=0) == set()
    done = threading.Event()
    result: list[object] = []

    def consumer() -> None:
        result.append(pending.wait_batch())
        done.set()

    thread = threading.Thread(target=consumer)
    thread.start()
    pending.close()
    assert done.wait(10)
    thread.join()
    assert result == [None]
    assert pending.closed


# --- the observer --------------------------------------------------------------------------------


def collect_until(pending: PendingChanges, wanted: set[Path], timeout: float = 10.0) -> set[Path]:
    """Accumulate batches until ``wanted`` was seen (events come from the OS, on its own thread)."""
    seen: set[Path] = set()
    while not wanted <= seen:
        batch = pending.wait_batch(timeout=timeout)
        assert batch, f"no change reported within {timeout}s; saw {sorted(seen)}"
        seen |= batch
    return seen


@pytest.fixture
def watching(root: Path):  # type: ignore[no-untyped-def]
    pending = PendingChanges(quiet=0.05)
    watcher = Watcher(make_filter(root), pending)
    watcher.start()
    yield watcher, pending
    watcher.stop()


def test_real_inotify_atomic_save_rename_delete_and_new_folder(root: Path, watching) -> None:  # type: ignore[no-untyped-def]
    watcher, pending = watching
    assert watcher.fallback is None
    recipe = root / "content/recipes/tiny.md"
    recipe.write_text("one\n", encoding="utf-8")
    assert collect_until(pending, {recipe}) == {recipe}

    # Atomic save: a temp file written then renamed over the target; and a swap file beside it.
    swap = root / "content/recipes/.tiny.md.swp"
    swap.write_text("swap", encoding="utf-8")
    temp = root / "content/recipes/.tiny.md.a1b2c3d4"
    temp.write_text("two\n", encoding="utf-8")
    os.replace(temp, recipe)
    assert collect_until(pending, {recipe}) == {recipe}

    renamed = root / "content/recipes/small.md"
    os.rename(recipe, renamed)
    assert collect_until(pending, {recipe, renamed}) == {recipe, renamed}

    renamed.unlink()
    assert collect_until(pending, {renamed}) == {renamed}

    new_file = root / "data/rows/brand-new/deeper/2026-03-01-node-a.csv"
    new_file.parent.mkdir(parents=True)
    new_file.write_text("date\n", encoding="utf-8")
    assert new_file in collect_until(pending, {new_file})

    # Nothing else was reported: not the swap file, not the output or the cache.
    (root / "site").mkdir()
    (root / "site/index.html").write_text("x", encoding="utf-8")
    site_yaml = root / "site.yaml"
    site_yaml.write_text("title: T\n", encoding="utf-8")
    assert collect_until(pending, {site_yaml}) == {site_yaml}


def test_real_inotify_slow_in_place_save_is_read_whole(root: Path, watching) -> None:  # type: ignore[no-untyped-def]
    watcher, pending = watching
    assert watcher.handler.track_writes
    recipe = root / "content/recipes/tiny.md"
    whole = "---\ntitle: whole\n---\n" + "body line\n" * 2000

    def slow_save() -> None:
        with recipe.open("w", encoding="utf-8") as out:  # truncates, like an in-place save
            out.write(whole[:100])
            out.flush()
            time.sleep(0.3)  # a slow writer (a loaded machine), far beyond the quiet window
            out.write(whole[100:])

    writer = threading.Thread(target=slow_save)
    writer.start()
    batch = pending.wait_batch(timeout=10)
    seen = recipe.read_text(encoding="utf-8")  # what a rebuild starting now would read
    writer.join()
    assert batch == {recipe}
    assert seen == whole


def test_source_folder_created_after_start_is_watched(tmp_path: Path) -> None:
    root = tmp_path / "bare"
    (root / "content").mkdir(parents=True)
    pending = PendingChanges(quiet=0.05)
    watcher = Watcher(make_filter(root), pending)
    watcher.start()
    try:
        base = root / "templates/base.html"
        base.parent.mkdir()
        base.write_text("<html></html>", encoding="utf-8")
        collect_until(pending, {base})
        # Now inside a watch of its own: later edits are seen too.
        base.write_text("<html><body></body></html>", encoding="utf-8")
        assert collect_until(pending, {base}) == {base}
    finally:
        watcher.stop()


class ExhaustedObserver(PollingObserver):
    """Fails the way the inotify observer does when ``fs.inotify.max_user_watches`` is reached."""

    def start(self) -> None:
        raise OSError(errno.ENOSPC, "inotify watch limit reached")


def test_source_folder_removed_and_created_again_is_watched_again(root: Path) -> None:
    pending = PendingChanges(quiet=0.05)
    watcher = Watcher(make_filter(root), pending)
    watcher.start()
    try:
        base = root / "templates/base.html"
        base.write_text("one", encoding="utf-8")
        collect_until(pending, {base})
        shutil.rmtree(root / "templates")
        collect_until(pending, {root / "templates"})
        base.parent.mkdir()
        base.write_text("two", encoding="utf-8")
        collect_until(pending, {base})
        base.write_text("three", encoding="utf-8")
        assert collect_until(pending, {base}) == {base}
        # Moved away: what happens in the old folder is no longer the site's.
        os.rename(root / "templates", root / "templates.old")
        collect_until(pending, {root / "templates"})
        (root / "templates.old/base.html").write_text("four", encoding="utf-8")
        (root / "content/recipes/tiny.md").write_text("x", encoding="utf-8")
        seen = collect_until(pending, {root / "content/recipes/tiny.md"})
        assert seen == {root / "content/recipes/tiny.md"}
    finally:
        watcher.stop()


def test_inotify_out_of_watches_falls_back_to_polling(root: Path) -> None:
    def exhausted() -> PollingObserver:
        return ExhaustedObserver()

    pending = PendingChanges(quiet=0.05)
    polled = []

    def polling() -> PollingObserver:
        observer = PollingObserver(timeout=0.1)
        polled.append(observer)
        return observer

    watcher = Watcher(make_filter(root), pending, observer_factory=exhausted, polling_factory=polling)
    watcher.start()
    try:
        assert watcher.fallback is not None
        assert "inotify watch limit reached" in watcher.fallback
        assert "fs.inotify.max_user_watches" in watcher.fallback
        assert watcher.observer is polled[0]
        recipe = root / "content/recipes/tiny.md"
        recipe.write_text("polled\n", encoding="utf-8")
        assert collect_until(pending, {recipe}) == {recipe}
    finally:
        watcher.stop()


def test_out_of_inotify_instances_also_falls_back(root: Path) -> None:
    def exhausted() -> PollingObserver:
        raise OSError(errno.EMFILE, "inotify instance limit reached")

    watcher = Watcher(make_filter(root), PendingChanges(), observer_factory=exhausted)
    watcher.start()
    try:
        assert watcher.fallback is not None and "max_user_instances" in watcher.fallback
        assert isinstance(watcher.observer, PollingObserver)
    finally:
        watcher.stop()


def test_other_observer_errors_are_not_swallowed(root: Path) -> None:
    def broken() -> PollingObserver:
        raise OSError(errno.EACCES, "permission denied")

    watcher = Watcher(make_filter(root), PendingChanges(), observer_factory=broken)
    with pytest.raises(OSError, match="permission denied"):
        watcher.start()

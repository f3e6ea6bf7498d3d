"""Watching a site's sources for the preview server: what counts as a change, and when to rebuild.

Three parts, after Lektor's ``WatchFilter`` and MkDocs' ``LiveReloadServer``:

- :class:`WatchFilter` decides whether a path is a source of the site (``content/``, ``data/``,
  ``templates/``, ``site.yaml``) and of which :class:`ChangeKind`; editor swap, backup and temporary
  files, version-control folders and the builder's own output and cache are not changes.
- :class:`PendingChanges` is where the watchdog thread records changed paths, under a condition
  variable; :meth:`PendingChanges.wait_batch` debounces a burst (a ``git checkout`` touching 200
  files) into one batch. The loop that consumes batches lives in :mod:`builder.serve.devserver`.
- :class:`Watcher` runs a watchdog observer over the watched folders and falls back to polling when
  inotify runs out of watches or instances.
"""

from __future__ import annotations

import contextlib
import enum
import errno
import os
import re
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer
from watchdog.observers.api import BaseObserver, ObservedWatch
from watchdog.observers.polling import PollingObserver

SOURCE_DIRS = ("content", "data", "templates")
CONFIG_FILES = ("site.yaml",)

# Names editors and tools write next to the file being edited. They never affect a build, and
# reacting to them would rebuild twice per save.
_TEMP_NAME = re.compile(
    r"""^(
        \.\#.*                      # emacs lock files
      | \#.*\#                      # emacs auto-save files
      | 4913                        # vim's probe that the folder is writable
      | \.?.*\.sw[a-px]             # vim swap files (.swp, .swo, ..., .swa) and its .swx probe
      | .*~                         # backup files (vim, emacs, gedit)
      | .*\.(tmp|temp|bak|orig|rej|part|crdownload|kate-swp)
      | .*___jb_(tmp|old|bak)___    # JetBrains safe-write
      | \.goutputstream-.*          # GIO/gedit atomic saves
      | \.~lock\..*\#               # LibreOffice locks
      | \.DS_Store | Thumbs\.db | desktop\.ini
    )$""",
    re.VERBOSE | re.IGNORECASE,
)
# Atomic writers (python-atomicwrites, editors, git) write "<name>.<random>" or ".<name>.<random>"
# and rename it over the target; the rename is what counts.
_TEMP_SUFFIX = re.compile(r"^\..+\.(?=[A-Za-z]*[0-9_])[A-Za-z0-9_]{6,}$")
_IGNORED_DIRS = frozenset(
    {".git", ".hg", ".svn", "__pycache__", ".cache", ".pytest_cache", "node_modules", ".idea", ".vscode"}
)


def is_editor_temp(name: str) -> bool:
    """True for the swap, backup, lock and temporary files editors and tools leave beside a file."""
    return bool(_TEMP_NAME.match(name) or _TEMP_SUFFIX.match(name))


class ChangeKind(enum.Enum):
    """What a changed source file is; the builder may reload configuration for ``CONFIG``."""

    CONTENT = "content"
    DATA = "data"
    TEMPLATE = "template"
    CONFIG = "config"


@dataclass(frozen=True)
class WatchFilter:
    """Which paths are sources of a site, and which kind.

    ``templates`` is the templates folder in use: the site's own ``templates/`` or the repository's,
    which is watched too, so editing the default theme also reloads the preview.
    """

    root: Path
    templates: Path | None = None
    ignored: tuple[Path, ...] = ()
    """Folders that are never sources even inside a watched one (output, cache)."""

    @classmethod
    def for_site(cls, root: Path, templates: Path | None, ignored: Iterable[Path] = ()) -> WatchFilter:
        root = root.resolve()
        return cls(root, templates.resolve() if templates else None, tuple(p.resolve() for p in ignored))

    def kind(self, path: str | Path) -> ChangeKind | None:
        """The kind of source ``path`` is, or ``None`` when a change to it is not a change to the site."""
        path = Path(os.path.abspath(path))
        if any(path == ign or ign in path.parents for ign in self.ignored):
            return None
        if self.templates is not None and (path == self.templates or self.templates in path.parents):
            rel = path.relative_to(self.templates).parts
            return ChangeKind.TEMPLATE if self._clean(rel) else None
        try:
            rel = path.relative_to(self.root).parts
        except ValueError:
            return None
        if len(rel) == 1 and rel[0] in CONFIG_FILES:
            return ChangeKind.CONFIG
        if not rel or rel[0] not in SOURCE_DIRS or not self._clean(rel[1:]):
            return None
        return {"content": ChangeKind.CONTENT, "data": ChangeKind.DATA, "templates": ChangeKind.TEMPLATE}[
            rel[0]
        ]

    def accepts(self, path: str | Path) -> bool:
        return self.kind(path) is not None

    @staticmethod
    def _clean(parts: Sequence[str]) -> bool:
        if any(part in _IGNORED_DIRS for part in parts[:-1]):
            return False
        return not parts or not (parts[-1] in _IGNORED_DIRS or is_editor_temp(parts[-1]))

    def watched_dirs(self) -> list[tuple[Path, bool]]:
        """(folder, recursive) pairs to observe: the root itself only for ``site.yaml`` and new folders."""
        dirs: list[tuple[Path, bool]] = [(self.root, False)]
        dirs += [(self.root / name, True) for name in SOURCE_DIRS if (self.root / name).is_dir()]
        if self.templates is not None and self.templates.is_dir() and self.root not in self.templates.parents:
            dirs.append((self.templates, True))
        return dirs


@dataclass
class PendingChanges:
    """Changed paths recorded by the watcher thread, consumed in debounced batches by one loop."""

    quiet: float = 0.005
    """A batch is taken once no new change arrived for this long (seconds): long enough for an
    editor's save or a checkout to write its files, short enough that a save shows at once."""
    max_delay: float = 1.0
    """…or once the first change of the batch is this old, so a steady stream still rebuilds."""
    clock: Callable[[], float] = time.monotonic
    _cond: threading.Condition = field(default_factory=threading.Condition, init=False, repr=False)
    _paths: set[Path] = field(default_factory=set, init=False, repr=False)
    _writing: set[Path] = field(default_factory=set, init=False, repr=False)
    _first: float = field(default=0.0, init=False, repr=False)
    _last: float = field(default=0.0, init=False, repr=False)
    _closed: bool = field(default=False, init=False, repr=False)

    def add(self, paths: Iterable[Path], *, writing: Iterable[Path] = (), done: Iterable[Path] = ()) -> None:
        """Record changed ``paths``; ``writing`` are files still open for writing (a batch waits for
        them, up to ``max_delay``, so a file saved in place is not read half-written), ``done`` are
        files closed, renamed or deleted since."""
        new = set(paths)
        with self._cond:
            self._writing |= set(writing)
            self._writing -= set(done)
            if not new:
                self._cond.notify_all()
                return
            now = self.clock()
            if not self._paths:
                self._first = now
            self._paths |= new
            self._last = now
            self._cond.notify_all()

    def ready(self) -> bool:
        """Whether the pending batch may be taken now (changes quiet, nothing half-written, or too old)."""
        with self._cond:
            return bool(self._paths) and self._remaining() <= 0

    def waiting(self) -> bool:
        """Whether any change is recorded, quiet yet or not: a rebuild running then is already stale."""
        with self._cond:
            return bool(self._paths)

    def _remaining(self) -> float:
        now = self.clock()
        overdue = self._first + self.max_delay - now
        if self._writing & self._paths:
            return overdue
        return min(self._last + self.quiet - now, overdue)

    def close(self) -> None:
        """Wake and end :meth:`wait_batch` for good (server shutdown)."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    @property
    def closed(self) -> bool:
        return self._closed

    def wait_batch(self, timeout: float | None = None) -> set[Path] | None:
        """Block until changes arrived and went quiet; return them, or ``None`` once closed.

        With ``timeout``, return an empty set when nothing arrived in that time.
        """
        with self._cond:
            if not self._cond.wait_for(lambda: self._paths or self._closed, timeout):
                return set()
            while not self._closed:
                remaining = self._remaining()
                if remaining <= 0:
                    break
                self._cond.wait(remaining)
            if self._closed:
                return None
            batch, self._paths = self._paths, set()
            self._writing -= batch  # whatever still writes will say so again
            return batch


def _walk_files(folder: Path) -> Iterator[Path]:
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = [d for d in dirnames if d not in _IGNORED_DIRS]
        for name in filenames:
            yield Path(dirpath, name)


def _fs(path: bytes | str) -> Path:
    return Path(os.fsdecode(path))


class ChangeHandler(FileSystemEventHandler):
    """Turns watchdog events into source paths in :class:`PendingChanges`; does nothing else.

    A move counts as a deletion of its source and a change of its destination, so an atomic save
    (temp file renamed over the target) is a change of the target. A folder that appears (created
    or moved in) reports the files inside it, since they may predate the watch on it; a folder that
    disappears is reported itself, meaning "whatever was under it". ``on_folder(path, present)`` hears
    of folders appearing and disappearing, so the watcher can follow ``content/``, ``data/`` and
    ``templates/`` being removed and created again.

    With ``track_writes`` (the observer reports closes, as inotify does), a modified file counts as
    being written until it is closed, so a file saved in place (truncated, then written) is not
    rebuilt from half its bytes.
    """

    track_writes = False

    def __init__(
        self,
        watch_filter: WatchFilter,
        pending: PendingChanges,
        on_folder: Callable[[Path, bool], None] | None = None,
    ) -> None:
        super().__init__()
        self.filter = watch_filter
        self.pending = pending
        self.on_folder = on_folder

    def paths_of(self, event: FileSystemEvent) -> set[Path]:
        kind = event.event_type
        if kind in ("opened", "closed_no_write"):
            return set()
        if kind == "modified" and event.is_directory:
            return set()  # a folder's mtime: its entries report themselves
        found: set[Path] = set()
        src = _fs(event.src_path)
        targets = [src]
        appeared: list[Path] = []
        if kind == "moved":
            dest = _fs(event.dest_path)
            if event.is_directory:
                appeared.append(dest)
            else:
                targets.append(dest)
        elif kind == "created" and event.is_directory:
            targets = []  # an empty folder changes nothing; its files report below
            appeared.append(src)
        if event.is_directory and kind in ("moved", "deleted") and self.on_folder is not None:
            self.on_folder(src, False)
        found.update(p for p in targets if self.filter.accepts(p))
        for folder in appeared:
            if self.on_folder is not None:
                self.on_folder(folder, True)
            found.update(p for p in _walk_files(folder) if self.filter.accepts(p))
        return found

    def on_any_event(self, event: FileSystemEvent) -> None:
        paths = self.paths_of(event)
        writing: set[Path] = set()
        done: set[Path] = set()
        if not event.is_directory:
            kind = event.event_type
            if kind == "modified" and self.track_writes:
                writing = paths
            elif kind in ("closed", "deleted", "moved"):
                done = {_fs(event.src_path)}
        self.pending.add(paths, writing=writing, done=done)


ObserverFactory = Callable[[], BaseObserver]


def _polling_observer() -> BaseObserver:
    return PollingObserver(timeout=0.5)


class Watcher:
    """A watchdog observer over a site's sources, feeding :class:`PendingChanges`.

    ``fallback`` says why polling is used instead of inotify (or is ``None``).
    """

    def __init__(
        self,
        watch_filter: WatchFilter,
        pending: PendingChanges,
        observer_factory: ObserverFactory = Observer,
        polling_factory: ObserverFactory = _polling_observer,
    ) -> None:
        self.filter = watch_filter
        self.pending = pending
        self.handler = ChangeHandler(watch_filter, pending, on_folder=self._on_folder)
        self._factories = (observer_factory, polling_factory)
        self._lock = threading.Lock()
        self._watched: dict[Path, ObservedWatch] = {}
        self.observer: BaseObserver | None = None
        self.fallback: str | None = None

    def start(self) -> None:
        try:
            self.observer = self._start(self._factories[0])
        except OSError as exc:
            if exc.errno not in (errno.ENOSPC, errno.EMFILE):
                raise
            limit = (
                "fs.inotify.max_user_watches"
                if exc.errno == errno.ENOSPC
                else "fs.inotify.max_user_instances"
            )
            self.fallback = (
                f"{exc.strerror or exc}; watching by polling instead (raise {limit} to avoid this)"
            )
            self.observer = self._start(self._factories[1])

    def _start(self, factory: ObserverFactory) -> BaseObserver:
        observer = factory()
        self._watched = {}
        try:
            for folder, recursive in self.filter.watched_dirs():
                watch = observer.schedule(self.handler, str(folder), recursive=recursive)
                if recursive:
                    self._watched[folder] = watch
            observer.start()
            self.handler.track_writes = _reports_closes(observer)
        except BaseException:
            _stop(observer)
            raise
        return observer

    def _on_folder(self, folder: Path, present: bool) -> None:
        """``content/``, ``data/`` or ``templates/`` created (again) or removed after start."""
        if folder.parent != self.filter.root or folder.name not in SOURCE_DIRS:
            return
        with self._lock:
            if self.observer is None:
                return
            watch = self._watched.pop(folder, None)
            if watch is not None:
                # The old watch follows the folder's inode (moved away) or is dead (deleted).
                with contextlib.suppress(KeyError, OSError):
                    self.observer.unschedule(watch)
            if present:
                self._watched[folder] = self.observer.schedule(self.handler, str(folder), recursive=True)

    def stop(self) -> None:
        if self.observer is not None:
            _stop(self.observer)
            self.observer = None


def _reports_closes(observer: BaseObserver) -> bool:
    try:
        from watchdog.observers.inotify import InotifyObserver
    except ImportError:  # not Linux
        return False
    return isinstance(observer, InotifyObserver)


def _stop(observer: BaseObserver) -> None:
    observer.stop()
    if observer.is_alive():
        observer.join(timeout=5)

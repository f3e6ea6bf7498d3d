"""The preview's builds in a process of their own, so that they may use every core and be cancelled.

Rendering a whole site (after a template edit, say) pays off on forked worker processes, but forking
a process that runs threads — the preview server's HTTP handlers and file watcher — can hand a child
a lock some other thread held at that instant, and the child waits forever. So the server does not
build: :class:`BuildProcess` is the ``rebuild(changed_paths)`` callable it is given, and forwards
each call to a *spawned* child (a fresh interpreter, no threads but its own) that keeps a
:class:`~builder.serve.preview.PreviewBuilder` and may fork render workers safely. A child that dies is
started again, and the call is answered with what happened.

A save that arrives during a full rebuild is answered with its page at once, not after the rebuild:

- Just before a full rebuild the child forks a *standby*, a copy of itself as it is then (the site
  loaded, every earlier quick page applied, nothing of this rebuild yet), which waits.
- While the server waits for the rebuild it asks whether newer changes wait (``interrupt``: the
  watcher holds a change); if so it sends :data:`_CANCEL`.
- One token decides who answers: the rebuild takes it just before it writes anything (output or
  record); the standby takes it when :data:`_CANCEL` arrives first. The rebuild that took it kills the
  standby and answers as before. The standby that took it kills the rebuild (its process group: render
  workers too) — which has written nothing, so every served file and the record are as they were — and
  answers "cancelled, rebuild these again" (``followup``). It is the build process from then on: the
  server's next call, the new save with the cancelled paths, gets the saved page first
  (:meth:`~builder.engine.incremental.IncrementalBuilder.quick`), and the rebuild after it covers both.
"""

from __future__ import annotations

import dataclasses
import gc
import multiprocessing
import os
import signal
import sys
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from builder.errors import Problem
from builder.serve.devserver import RebuildResult, internal_error

_STOP = "stop"
_CANCEL = "cancel"
"""Sent while a rebuild runs, when newer changes wait: a rebuild that has written nothing yet stops."""
_POLL = 0.002
"""Seconds between two looks at ``interrupt`` while the server waits for an answer."""
IDLE = 1.0
"""Seconds without a request after which the child saves the build record (see :mod:`builder.serve.preview`)."""
_TOKEN = b"!"

MakePreview = Callable[..., Any]
"""``make(root, out, workers=..., standby=...)``: the preview builder of the child (tests give their own)."""


def _can_fork() -> bool:
    return hasattr(os, "fork") and sys.platform.startswith("linux")


def _take(token: int) -> bool:
    """Take the token (True) unless the other process took it first."""
    try:
        return os.read(token, 1) == _TOKEN
    except BlockingIOError:
        return False


class Standby:
    """Runs each full rebuild beside a forked copy of this process that answers instead when the
    rebuild is cancelled (see the module's docstring). This process leads a process group of its own,
    so that a standby can end the rebuild with all its workers."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    def build(
        self,
        run: Callable[[Callable[[], bool]], RebuildResult],
        changed: frozenset[Path],
        prepare: Callable[[], object],
    ) -> RebuildResult:
        """``run(commit)``'s result in this process, or the cancelled result in the standby."""
        read, write = os.pipe()
        os.write(write, _TOKEN)
        os.close(write)
        os.set_blocking(read, False)
        builder = os.getpid()
        # The heap is shared with the standby until one of them ends: kept out of the collector's
        # passes, which write to every object they visit (each page written is copied: a third
        # more time for a rebuild at 1,000 recipes).
        gc.freeze()
        standby = os.fork()
        if standby == 0:
            return self._stand_by(builder, read, changed, prepare)
        taken = False

        def commit() -> bool:
            nonlocal taken
            if not taken:
                if not _take(read):
                    return False
                taken = True
                os.kill(standby, signal.SIGKILL)
                os.waitpid(standby, 0)
            return True

        try:
            result = run(commit)
        except Exception as exc:  # the preview must outlive any builder bug
            result = internal_error(exc)
        if not commit():
            os._exit(0)  # cancelled: the standby answers, and ends this process
        os.close(read)
        gc.unfreeze()
        return result

    def _stand_by(
        self, builder: int, token: int, changed: frozenset[Path], prepare: Callable[[], object]
    ) -> RebuildResult:
        os.setpgid(0, 0)  # a group of its own: the rebuild's group is ended without it
        try:
            prepare()
        except Exception:  # only an optimisation (a connection opened, the last page rendered ahead)
            pass
        while not self.conn.poll(0.1):
            if os.getppid() != builder:  # the rebuild died without answering: so do we
                os._exit(0)
        if not _take(token):
            while os.getppid() == builder:  # the rebuild answers: it ends this process
                time.sleep(0.1)
            os._exit(0)
        os.close(token)
        try:
            os.killpg(builder, signal.SIGKILL)
        except ProcessLookupError:
            pass
        gc.unfreeze()
        try:
            message = self.conn.recv()
        except EOFError:
            os._exit(0)
        if message != _CANCEL:  # the server stops
            os._exit(0)
        return RebuildResult(followup=changed, note="rebuild stopped for newer changes")


def _child(
    conn: Connection,
    root: Path,
    out: Path | None,
    workers: int | None,
    make: MakePreview | None = None,
    idle: float = IDLE,
) -> None:
    """The child's loop: build for each batch of paths received, send back the result (with the pid
    of the process answering). Not a daemon (those may not fork render workers); it ends when the
    server closes the pipe."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the server's to handle; it stops us
    from builder.serve.preview import PreviewBuilder

    spawned = os.getpid()

    standby = None
    if _can_fork():
        os.setpgid(0, 0)
        standby = Standby(conn)
    preview = (make or PreviewBuilder)(root, out, workers=workers, standby=standby)
    try:
        while True:
            try:
                if not conn.poll(idle):
                    preview.save_record()
            except Exception:  # only an optimisation: the next start-up builds more
                pass
            try:
                message = conn.recv()
            except EOFError:
                return
            if message == _STOP:
                return
            if message == _CANCEL:
                continue  # for a rebuild that ended before it arrived
            try:
                result = preview(message)
            except Exception as exc:  # the preview must outlive any builder bug
                result = internal_error(exc)
            conn.send((os.getpid(), result))
            try:
                if not conn.poll(0):  # nobody waits yet
                    preview.prepare()
            except Exception:  # only an optimisation
                pass
    finally:
        preview.close()
        if os.getpid() != spawned:
            # A standby that took over is a fork of the spawned child: returning would run that
            # process's way out (multiprocessing's joins of children not its own, exit handlers of
            # state copied at the fork), which can wait until the server kills it.
            os._exit(0)


class BuildProcess:
    """``rebuild(changed_paths)`` answered by a spawned child process (see the module's docstring).

    ``interrupt``: whether newer changes wait (the watcher holds one); a full rebuild running
    then is cancelled, its paths returned as the result's ``followup``. ``make``: what the child
    builds with (a :class:`~builder.serve.preview.PreviewBuilder` by default; picklable). ``idle``:
    seconds without a request after which the child saves the build record."""

    def __init__(
        self,
        root: Path,
        out: Path | None = None,
        *,
        workers: int | None = None,
        interrupt: Callable[[], bool] | None = None,
        make: MakePreview | None = None,
        idle: float = IDLE,
    ) -> None:
        self._args = (root, out, workers, make, idle)
        self._interrupt = interrupt
        self._mp = multiprocessing.get_context("spawn")
        self._process: Any = None
        self._pid: int | None = None
        """The process answering now: the child, or a standby of it that took over."""
        self._conn: Connection | None = None
        self._start()

    def _start(self) -> None:
        parent, child = self._mp.Pipe()
        self._process = self._mp.Process(target=_child, args=(child, *self._args), name="preview-builder")
        self._process.start()
        self._pid = self._process.pid
        child.close()
        self._conn = parent

    def __call__(self, changed: frozenset[Path] | None) -> RebuildResult:
        result = self._ask(changed)
        if result is not None:
            return result
        code = None
        if self._process is not None and self._pid == self._process.pid:
            self._process.join(5)  # reaped, so its exit code is known
            code = self._process.exitcode
        self._stop_child()
        self._start()
        # A new child starts from the build record; a start-up build catches up on every change.
        note = f"the build process ended (exit code {code}); started a new one"
        result = self._ask(None)
        if result is None:
            self._stop_child()
            self._start()
            return RebuildResult(problems=(Problem("<builder>", None, note + ", which ended too"),))
        return dataclasses.replace(result, note=note, changed=None)

    def _ask(self, message: frozenset[Path] | None) -> RebuildResult | None:
        """The child's answer, or ``None`` when it is gone."""
        assert self._conn is not None
        try:
            self._conn.send(message)
            if self._interrupt is not None and message is not None:
                while not self._conn.poll(_POLL):
                    if self._interrupt():
                        self._conn.send(_CANCEL)
                        break
            answer = self._conn.recv()
        except (EOFError, OSError):
            return None
        pid, result = answer if isinstance(answer, tuple) and len(answer) == 2 else (None, answer)
        if not isinstance(result, RebuildResult) or not isinstance(pid, int):
            return RebuildResult(
                problems=(Problem("<builder>", None, "the build process answered nonsense"),)
            )
        self._pid = pid
        if self._process is not None and pid != self._process.pid:
            self._process.is_alive()  # a standby took over and ended the child: reaped once ended
        return result

    @property
    def pid(self) -> int | None:
        return self._pid

    def _stop_child(self) -> None:
        if self._conn is not None:
            try:
                self._conn.send(_STOP)
            except OSError:
                pass
            self._conn.close()
            self._conn = None
        if self._process is not None:
            self._process.join(5)
            if self._process.is_alive():
                self._process.kill()
                self._process.join(5)
            if self._pid is not None and self._pid != self._process.pid:
                _end(self._pid)  # a standby that took over: not our child, so not joined
            self._process = None
        self._pid = None

    def close(self) -> None:
        self._stop_child()


def _end(pid: int, timeout: float = 5.0) -> None:
    """Wait for the process ``pid`` (not a child of ours) to end, up to ``timeout``; then kill it."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if _gone(pid):
            return
        time.sleep(0.02)
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rsplit(b")", 1)[1].split()[0] == b"Z"  # a zombie has ended
    except FileNotFoundError:
        return True
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        return False

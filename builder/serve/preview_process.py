"""The preview's builds in a process of their own, so that they may use every core.

Rendering a whole site (after a template edit, say) pays off on forked worker processes, but forking
a process that runs threads — the preview server's HTTP handlers and file watcher — can hand a child
a lock some other thread held at that instant, and the child waits forever. So the server does not
build: :class:`BuildProcess` is the ``rebuild(changed_paths)`` callable it is given, and forwards
each call to a *spawned* child (a fresh interpreter, no threads but its own) that keeps a
:class:`~builder.serve.preview.PreviewBuilder` and may fork render workers safely. A child that dies is
started again, and the call is answered with what happened.
"""

from __future__ import annotations

import dataclasses
import multiprocessing
import signal
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from builder.errors import Problem
from builder.serve.devserver import RebuildResult, internal_error

_STOP = "stop"


def _child(conn: Connection, root: Path, out: Path | None, workers: int | None) -> None:
    """The child's loop: build for each batch of paths received, send back the result. Not a
    daemon (those may not fork render workers); it ends when the server closes the pipe."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the server's to handle; it stops us
    from builder.serve.preview import PreviewBuilder

    preview = PreviewBuilder(root, out, workers=workers)
    try:
        while True:
            try:
                message = conn.recv()
            except EOFError:
                return
            if message == _STOP:
                return
            try:
                result = preview(message)
            except Exception as exc:  # the preview must outlive any builder bug
                result = internal_error(exc)
            conn.send(result)
    finally:
        preview.close()


class BuildProcess:
    """``rebuild(changed_paths)`` answered by a spawned child process (see the module's docstring)."""

    def __init__(self, root: Path, out: Path | None = None, *, workers: int | None = None) -> None:
        self._args = (root, out, workers)
        self._mp = multiprocessing.get_context("spawn")
        self._process: Any = None
        self._conn: Connection | None = None
        self._start()

    def _start(self) -> None:
        parent, child = self._mp.Pipe()
        self._process = self._mp.Process(target=_child, args=(child, *self._args), name="preview-builder")
        self._process.start()
        child.close()
        self._conn = parent

    def __call__(self, changed: frozenset[Path] | None) -> RebuildResult:
        result = self._ask(changed)
        if result is not None:
            return result
        code = None
        if self._process is not None:
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
            result = self._conn.recv()
        except (EOFError, OSError):
            return None
        if not isinstance(result, RebuildResult):
            return RebuildResult(
                problems=(Problem("<builder>", None, "the build process answered nonsense"),)
            )
        return result

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

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
            self._process = None

    def close(self) -> None:
        self._stop_child()

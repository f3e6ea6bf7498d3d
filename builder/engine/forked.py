"""Run a pure-Python computation in a forked child while the parent goes on with other work.

The GIL lets only one thread run Python at a time, so two Python-heavy stages of the load (parsing
front matter, reading thousands of row files) cannot overlap on threads; a forked child runs one
of them on the other core and sends its result back pickled. Where fork is unavailable or fails,
or the child dies or raises, the computation simply runs in the parent when its result is asked
for: the result is the same either way, only the time differs.
"""

from __future__ import annotations

import os
import pickle
import signal
import sys
import threading
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")

_FAILED = b"F"
_DONE = b"D"
_MISSING = object()
"""What taking the child's result gives when there is none to take (it failed, or sent garbage)."""


class Forked(Generic[T]):
    """``compute()`` started in a forked child; :meth:`result` waits for it (or computes it here).

    ``compute`` must not depend on threads, locks or connections of the parent (the child has
    only the calling thread) and must return something picklable. Call :meth:`result` or
    :meth:`cancel` exactly once.
    """

    def __init__(self, compute: Callable[[], T]) -> None:
        self._compute = compute
        self._pid = 0
        self._read = -1
        if not sys.platform.startswith("linux"):
            return
        try:
            read, write = os.pipe()
        except OSError:
            return
        try:
            pid = os.fork()
        except OSError:
            os.close(read)
            os.close(write)
            return
        if pid == 0:  # the child: compute, send, and leave without running the parent's cleanup
            os.close(read)
            status = 0
            try:
                payload = _DONE + pickle.dumps(compute(), protocol=pickle.HIGHEST_PROTOCOL)
            except BaseException:
                payload, status = _FAILED, 1
            try:
                with os.fdopen(write, "wb") as out:
                    out.write(payload)
            except BaseException:
                status = 1
            os._exit(status)
        os.close(write)
        self._pid, self._read = pid, read

    _fetcher: threading.Thread | None = None
    _fetched: object = _MISSING

    def prefetch(self) -> None:
        """Start taking the child's result (reading it, unpickling it) on a thread, for when this
        one is about to wait on work that releases the GIL (Arrow, DuckDB); :meth:`result` joins it."""
        if self._pid and self._fetcher is None:
            self._fetcher = threading.Thread(target=self._fetch, name="forked-result", daemon=True)
            self._fetcher.start()

    def _fetch(self) -> None:
        self._fetched = self._take()

    def _take(self) -> object:
        try:
            with os.fdopen(self._read, "rb") as pipe:
                payload = pipe.read()
        finally:
            self._reap()
        if payload[:1] == _DONE:
            try:
                return pickle.loads(payload[1:])
            except Exception:  # noqa: BLE001 - a bad payload is a failed child: compute here
                pass
        return _MISSING

    def _joined(self) -> object:
        assert self._fetcher is not None
        self._fetcher.join()
        self._fetcher = None
        fetched, self._fetched = self._fetched, _MISSING
        return fetched

    def result(self) -> T:
        """The child's result; computed here instead when there is no child or it failed."""
        if self._fetcher is not None:
            value = self._joined()
        elif self._pid:
            value = self._take()
        else:
            value = _MISSING
        if value is _MISSING:
            return self._compute()
        return value  # type: ignore[return-value]

    def cancel(self) -> None:
        """Stop the child (the parent failed before it needed the result)."""
        if self._fetcher is not None:
            self._joined()  # the thread reads until the child ends and reaps it
            return
        if not self._pid:
            return
        try:
            os.kill(self._pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        os.close(self._read)
        self._reap()

    def _reap(self) -> None:
        pid, self._pid = self._pid, 0
        try:
            os.waitpid(pid, 0)
        except ChildProcessError:
            pass


class Notice(Generic[T]):
    """One value a forked child sends before it finishes (:class:`Forked` returns only at the end).

    Made before the fork; the child calls :meth:`send`, the parent :meth:`forked` right after the
    fork and :meth:`receive` when it needs the value. ``receive`` gives None when no child sent it
    (none was forked, it failed, the payload is unreadable): the caller then works it out itself.
    :meth:`send` in the process that made the notice does nothing (a stage run here, not forked).
    """

    def __init__(self) -> None:
        self._owner = os.getpid()
        try:
            self._read, self._write = os.pipe()
        except OSError:
            self._read = self._write = -1

    def send(self, value: T) -> None:
        if os.getpid() == self._owner or self._write < 0:
            return
        try:
            with os.fdopen(self._write, "wb") as out:
                out.write(_DONE + pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))
        except BaseException:  # noqa: BLE001 - the parent reads a short payload and computes it
            pass
        self._write = -1

    def forked(self) -> None:
        """Close the parent's end for writing: the pipe ends when the children's ends do."""
        if self._write >= 0:
            os.close(self._write)
            self._write = -1

    def close(self) -> None:
        """Give up the value (the build failed before it needed it)."""
        for fd in (self._read, self._write):
            if fd >= 0:
                os.close(fd)
        self._read = self._write = -1

    def receive(self) -> T | None:
        """The value sent, waiting for it; None when there is none (call once, after :meth:`forked`)."""
        if self._read < 0:
            return None
        try:
            with os.fdopen(self._read, "rb") as pipe:
                payload = pipe.read()
        except OSError:
            return None
        finally:
            self._read = -1
        if payload[:1] != _DONE:
            return None
        try:
            return pickle.loads(payload[1:])  # type: ignore[no-any-return]
        except Exception:  # noqa: BLE001 - garbage: computed by the caller
            return None

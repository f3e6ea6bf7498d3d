"""Run a pure-Python computation in a forked child while the parent goes on with other work.

The GIL lets only one thread run Python at a time, so ``check`` computes a share of the findings in
forked children, which send their results back pickled. Where fork is unavailable or fails,
or the child dies or raises, the computation simply runs in the parent when its result is asked
for: the result is the same either way, only the time differs.
"""

from __future__ import annotations

import os
import pickle
import signal
import sys
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

    def result(self) -> T:
        """The child's result; computed here instead when there is no child or it failed."""
        value = self._take() if self._pid else _MISSING
        if value is _MISSING:
            return self._compute()
        return value  # type: ignore[return-value]

    def cancel(self) -> None:
        """Stop the child (the parent failed before it needed the result)."""
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

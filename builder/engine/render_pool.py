"""Rendering page jobs, in this process or in forked workers, recording the templates each loads."""

from __future__ import annotations

import gc
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from builder.engine.inputs import digest_bytes
from builder.errors import BuildAborted, BuilderError
from builder.reads import deriving, recording

if TYPE_CHECKING:
    from builder.engine.derived import Derived, Entry
    from builder.site.context import RenderContext

T = TypeVar("T")

Progress = Callable[[str, int, int], None]
"""``progress(stage, done, total)``, called from the building thread."""


class _TemplateRecorder:
    """Records which templates a page loads (extends, includes, imports, even missing ones)."""

    def __init__(self, env: Any) -> None:
        self.current: set[str] = set()
        original = env._load_template

        def load(name: Any, globals: Any) -> Any:
            self.current.add(str(name))
            return original(name, globals)

        env._load_template = load


@dataclass
class _Rendered:
    index: int
    data: bytes | None
    templates: tuple[str, ...]
    error: tuple[str, str | None, int | None, str] | None = None
    """(class name, path, line, message) of a BuilderError; class name "" for anything else."""
    digest: bytes = b""
    """:func:`builder.engine.inputs.digest_bytes` of ``data``, made by the worker (the parent would hash
    every page serially: 0.25-0.5 s at 1,000 recipe pages)."""
    reads: tuple[str, ...] = ()
    """What the page read, as :mod:`builder.engine.reading`'s views named it (sorted)."""


def _render_one(
    ctx: RenderContext, recorder: _TemplateRecorder, index: int, job: Callable[[], bytes]
) -> _Rendered:
    recorder.current = set()
    try:
        with recording() as reads:
            data = job()
    except BuilderError as exc:
        return _Rendered(index, None, (), (type(exc).__name__, exc.path, exc.line, exc.message))
    templates = tuple(sorted(recorder.current))
    return _Rendered(index, data, templates, digest=digest_bytes(data), reads=tuple(sorted(reads)))


# Handed to forked workers: a fork copies the parent's memory, so the render context (site, rows,
# templates) reaches them without pickling. Set only while a pool is alive.
_FORK: tuple[Any, Any, list[tuple[str, Callable[[], bytes]]], Derived | None] | None = None


def _worker_chunk(
    indices: list[int],
) -> tuple[list[_Rendered], dict[str, Any], set[str], dict[Any, Any], dict[str, Entry]]:
    """Render some jobs; also return the markdown this worker rendered or used, the chart spec
    templates and the derived values it made, for the parent's caches (the next build's workers
    inherit them)."""
    assert _FORK is not None
    ctx, recorder, jobs, derived = _FORK
    before = set(ctx.markdown.cache)
    specs = set(ctx.specs.by_kind)
    ctx.markdown.used = set()
    if derived is not None:
        derived.made.clear()  # this process's copy: what it held was the parent's
    with deriving(derived):
        results = [_render_one(ctx, recorder, i, jobs[i][1]) for i in indices]
    fresh = {k: v for k, v in ctx.markdown.cache.items() if k not in before}
    built = {k: v for k, v in ctx.specs.by_kind.items() if k not in specs}
    return results, fresh, ctx.markdown.used, built, dict(derived.made) if derived is not None else {}


_TASK: Callable[[Any], Any] | None = None
"""The function :func:`map_in_workers` hands to its forked workers (a fork copies it)."""


def _run_task(items: list[Any]) -> list[Any]:
    assert _TASK is not None
    return [_TASK(item) for item in items]


def map_in_workers(task: Callable[[Any], Any], items: list[Any], workers: int) -> list[Any]:
    """``[task(item) for item in items]``, in forked workers when there are cores and items enough
    (the results must be picklable; no thread or DuckDB connection of this process may be alive)."""
    global _TASK
    if workers <= 1 or len(items) < 64:
        return [task(item) for item in items]
    import concurrent.futures
    import multiprocessing

    _TASK = task
    gc.freeze()
    try:
        with concurrent.futures.ProcessPoolExecutor(
            max_workers=workers, mp_context=multiprocessing.get_context("fork")
        ) as pool:
            return [out for part in pool.map(_run_task, job_chunks(items, workers)) for out in part]
    finally:
        gc.unfreeze()
        _TASK = None


def job_chunks(pending: list[T], workers: int) -> list[list[T]]:
    """``pending`` in order, cut into chunks that shrink towards the end (guided scheduling).

    Workers take chunks as they finish one. With chunks of one size, the last chunk of heavy pages
    (32 model pages ≈ 0.3 s on a busy core) left one worker alone for 0.24 s of a cold build's
    render; chunks of a quarter of each worker's share of what is left, 4 to 32 jobs, end the
    workers within 0.05 s of each other.
    """
    chunks: list[list[T]] = []
    start, total = 0, len(pending)
    while start < total:
        size = max(4, min(32, (total - start) // (workers * 4)))
        chunks.append(pending[start : start + size])
        start += size
    return chunks


def worker_count(pending: int) -> int:
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:
        cores = os.cpu_count() or 1
    if pending < 48 or cores < 2 or sys.platform == "win32":
        return 1
    return min(cores, 8)


def render_jobs(
    ctx: RenderContext,
    jobs: list[tuple[str, Callable[[], bytes]]],
    pending: list[int],
    progress: Progress | None,
    workers: int | None,
    derived: Derived | None = None,
) -> list[_Rendered]:
    """Render ``jobs[i]`` for every ``i`` in ``pending``; in forked workers when it pays. With
    ``derived``, the pages' derived values (:func:`builder.reads.derived`) are taken from and kept in
    it, whichever process makes them."""
    global _FORK
    recorder = _TemplateRecorder(ctx.env)
    count = workers if workers is not None else worker_count(len(pending))
    total = len(pending)
    if count <= 1 or total < 2:
        out = []
        with deriving(derived):
            for done, index in enumerate(pending, start=1):
                out.append(_render_one(ctx, recorder, index, jobs[index][1]))
                if progress is not None:
                    progress("render", done, total)
        return out
    import concurrent.futures
    import multiprocessing

    chunks = job_chunks(pending, count)
    results: list[_Rendered] = []
    _FORK = (ctx, recorder, jobs, derived)
    # DuckDB is not fork-safe: a connection alive at fork time (its threads, its locks) deadlocks
    # the children's own. Close it and fork; each process opens its own when it first queries.
    ctx.site.close_connection()
    # The site's objects outlive the workers: kept out of their garbage collector's passes, which
    # would otherwise walk (and, writing to their headers, copy) every page of the inherited heap.
    gc.freeze()
    try:
        with concurrent.futures.ProcessPoolExecutor(
            max_workers=count, mp_context=multiprocessing.get_context("fork")
        ) as pool:
            for chunk_results, fresh, used, built, values in pool.map(_worker_chunk, chunks):
                results.extend(chunk_results)
                if derived is not None:
                    derived.adopt(values)
                ctx.markdown.cache.update(fresh)
                ctx.markdown.used.update(used)
                ctx.specs.by_kind.update(built)
                if progress is not None:
                    progress("render", len(results), total)
    finally:
        gc.unfreeze()
        _FORK = None
    return results


def raise_first(errors: list[_Rendered]) -> None:
    from builder import errors as errors_module

    first = min(errors, key=lambda r: r.index)
    assert first.error is not None
    name, path, line, message = first.error
    cls = getattr(errors_module, name, None)
    if isinstance(cls, type) and issubclass(cls, BuilderError) and cls is not BuildAborted:
        raise cls(message, path, line)

"""Output stages that read no page, started in a forked child before the pages are rendered.

Search (:func:`builder.engine.pipeline.page_independent_stages`) reads only the site and its markdown, yet
ran after every page, and its Python (the file-system fallback, ~0.15 s at 1,000 recipes) and
Pagefind's indexing (~0.3 s for a shard) added to every edit build. Started in a forked child
(:class:`builder.engine.forked.Forked`) as soon as the site's content pages are loaded (the rows load
meanwhile: search reads none), it runs on the other core while this process loads and renders;
the engine takes its files where the stage used to run. The child gets the
engine's :class:`~builder.engine.depindex.StageMemo` and markdown as they are at the fork and sends back
what the stage added to them, so the build records the same memo keys and keeps the same
rendered markdown as when the stage runs in-process. A child that fails is replaced by running the
stage here: the files are the same either way.
"""

from __future__ import annotations

import functools
import gc
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from builder.engine.depindex import KEPT, StageMemo
from builder.engine.forked import Forked, Notice

if TYPE_CHECKING:
    from builder.content.markdown import Markdown

Stage = Callable[[Mapping[str, bytes]], dict[str, bytes]]
Payload = tuple[list[tuple[str, bytes | None]], dict[bytes, tuple[str, ...]], dict[str, Any], set[str]]
"""Files in order (``None``: kept from the previous output), memo keys added, markdown rendered,
markdown used."""


def _run(stage: Stage, markdown: Markdown, memo: StageMemo) -> Payload:
    cached, used, current = set(markdown.cache), set(markdown.used), set(memo.current)
    files = stage({})  # reads no page
    return (
        [(path, None if data is KEPT else bytes(data)) for path, data in files.items()],
        {key: paths for key, paths in memo.current.items() if key not in current},
        {key: body for key, body in markdown.cache.items() if key not in cached},
        markdown.used - used,
    )


class EarlyStages:
    """``stages`` started now, each in a forked child; :meth:`files` takes one's output."""

    def __init__(
        self,
        stages: list[tuple[str, Stage]],
        markdown: Markdown,
        memo: StageMemo,
        notice: Notice[Any] | None = None,
    ) -> None:
        """``notice``: what a stage sends before it ends (closed here when the stages are cancelled)."""
        self._markdown = markdown
        self._memo = memo
        self._notice = notice
        self._jobs: dict[str, Forked[Payload]] = {}
        # The children only read the parent's heap: frozen, their collector does not walk (and
        # copy) it.
        gc.freeze()
        try:
            for name, stage in stages:
                self._jobs[name] = Forked(functools.partial(_run, stage, markdown, memo))
        finally:
            gc.unfreeze()
            if notice is not None:
                notice.forked()

    def __contains__(self, name: object) -> bool:
        return name in self._jobs

    def files(self, name: str) -> dict[str, bytes]:
        """The stage's files, as running it here would give them (memo and markdown updated)."""
        ordered, keys, rendered, used = self._jobs.pop(name).result()
        self._memo.current.update(keys)
        self._markdown.cache.update(rendered)
        self._markdown.used |= used
        return {path: KEPT if data is None else data for path, data in ordered}

    def cancel(self) -> None:
        """Stop the stages not taken (the build failed before it needed them)."""
        jobs, self._jobs = self._jobs, {}
        for job in jobs.values():
            job.cancel()
        if self._notice is not None:
            self._notice.close()

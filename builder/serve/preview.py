"""The build side of the preview: the ``rebuild(changed_paths)`` callable the server is given.

The preview builds into a folder of its own, ``<root>/.cache/builder/serve-site``, so ``site/`` (what
``build`` publishes) is never touched by ``serve``; the live-reload script is added by the server at
serve time and never written to disk. Every outcome becomes a :class:`RebuildResult`: a problem in
the content, the data, the templates or ``site.yaml`` is a result with problems, never an exception.

A save of one recipe or row file is answered first with that recipe's page alone
(:meth:`IncrementalBuilder.quick <builder.engine.incremental.IncrementalBuilder.quick>`); the result
asks for the full rebuild next (its ``followup``).

The build record (what the next start-up builds from) is saved when the preview is idle
(:meth:`PreviewBuilder.save_record`) and when it closes, not after each rebuild: at 1,000 recipes its
save takes about 0.1 s, which a save arriving as a rebuild ends would otherwise wait for.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from builder.config import load_config
from builder.engine.build_state import BuildReport
from builder.engine.incremental import Commit, IncrementalBuilder
from builder.engine.render_pool import Progress
from builder.errors import BuilderError
from builder.serve.devserver import RebuildResult

SERVE_DIR = Path(".cache") / "builder" / "serve-site"


WARM = Path("<load the site for quick pages>")
"""A follow-up "path" that asks the builder to load the site (no file is ever named so)."""


def serve_out_dir(root: Path) -> Path:
    """Where ``serve`` builds: beside the builder's cache, not ``site/``."""
    return root.resolve() / SERVE_DIR


class Standby(Protocol):
    """Runs a full rebuild so that it can be cancelled (see :mod:`builder.serve.preview_process`)."""

    def build(
        self,
        run: Callable[[Commit], RebuildResult],
        changed: frozenset[Path],
        prepare: Callable[[], object],
    ) -> RebuildResult:
        """``run(commit)``'s result, or a result for a rebuild cancelled before it wrote anything
        (``followup``: ``changed``); ``prepare`` readies the process that would answer instead."""
        ...


class PreviewBuilder:
    """Builds the site for the preview; call it with the changed source paths.

    One :class:`~builder.engine.incremental.IncrementalBuilder` is kept across rebuilds, so a change
    rebuilds only what depends on it; it reloads ``site.yaml`` on every build.
    """

    def __init__(
        self,
        root: Path,
        out: Path | None = None,
        *,
        workers: int | None = 1,
        standby: Standby | None = None,
        progress: Progress | None = None,
    ) -> None:
        self.root = root.resolve()
        self.out = out if out is not None else serve_out_dir(self.root)
        self.workers = workers
        """Render processes (``None``: one per core for big rebuilds). One by default: forking a
        process that runs threads (HTTP, watcher) can leave a child waiting forever on a lock
        another thread held at fork time; ``serve`` runs this in a process of its own
        (:mod:`builder.serve.preview_process`), where forking is safe."""
        self.standby = standby
        """How full rebuilds run so that a newer save can cancel them (None: they run to the end)."""
        self.progress = progress
        """Told of the render's progress (tests hold a rebuild with it)."""
        self.engine: IncrementalBuilder | None = None

    def __call__(self, changed: frozenset[Path] | None) -> RebuildResult:
        if self.engine is None:
            try:
                config = load_config(self.root, self.out)
            except BuilderError as exc:  # e.g. a broken site.yaml at start-up: retried on the next change
                return RebuildResult(problems=(exc.problem(),))
            # In place (no tree swap per save) and keeping the render context for quick pages.
            self.engine = IncrementalBuilder(
                config, workers=self.workers, atomic=False, keep_context=True, progress=self.progress
            )
        if changed is not None and WARM in changed:
            try:
                self.engine.warm()
            except Exception:  # only an optimisation: quick pages wait for the next full build
                pass
            changed = changed - {WARM}
            if not changed:
                return RebuildResult()
        if changed is not None:
            quick = self._quick(changed)
            if quick is not None:
                return quick
        engine = self.engine

        def run(commit: Commit | None) -> RebuildResult:
            paths = None if changed is None else set(changed)
            return self._result(engine.build(paths, commit=commit, save_record=False), changed)

        if self.standby is None or changed is None:
            return run(None)
        engine.close_connection()  # no DuckDB connection may cross a fork
        return self.standby.build(run, changed, self._stand_by)

    def _quick(self, changed: frozenset[Path]) -> RebuildResult | None:
        """The page of the one saved recipe or row file first, when the engine can give it alone."""
        assert self.engine is not None
        try:
            written = self.engine.quick(changed)
        except Exception:  # the full rebuild that follows reports whatever went wrong
            written = None
        if written is None:
            return None
        return RebuildResult(changed=frozenset(written), files=len(written), followup=changed)

    @staticmethod
    def _result(report: BuildReport, changed: frozenset[Path] | None) -> RebuildResult:
        if report.cancelled:
            assert changed is not None
            return RebuildResult(followup=changed)
        if report.problems:
            return RebuildResult(
                problems=tuple(report.problems), warnings=tuple(report.warnings), note=report.cache_note
            )
        return RebuildResult(
            warnings=tuple(report.warnings),
            changed=frozenset(report.written) | frozenset(report.removed),
            files=len(report.written),
            note=report.cache_note,
            # A no-op start-up loaded nothing: load the site next, while the author reads.
            followup=frozenset({WARM}) if report.noop and changed is None else frozenset(),
        )

    def prepare(self) -> None:
        """Open ahead what the next save's page needs (a DuckDB connection takes tens of ms), while
        nobody waits: after an answer (a full rebuild closes it, since it may fork)."""
        if self.engine is not None:
            self.engine.open_connection()

    def _stand_by(self) -> None:
        """Ready the standby (see :class:`Standby`) for the next save: the connection, and the last
        quick page rendered again while nobody waits (:meth:`IncrementalBuilder.rehearse`). The
        standby runs it as an optimisation: whatever it raises is dropped there."""
        self.prepare()
        if self.engine is not None:
            self.engine.rehearse()

    def save_record(self) -> None:
        """Save the record of the rebuilds since the last save (when nobody waits, and on close)."""
        if self.engine is not None:
            self.engine.save_record()

    def close(self) -> None:
        if self.engine is not None:
            self.engine.close()  # saves the record first
            self.engine = None

"""The build side of the preview: the ``rebuild(changed_paths)`` callable the server is given.

The preview builds into a folder of its own, ``<root>/.cache/builder/serve-site``, so ``site/`` (what
``build`` publishes) is never touched by ``serve``; the live-reload script is added by the server at
serve time and never written to disk. Every outcome becomes a :class:`RebuildResult`: a problem in
the content, the data, the templates or ``site.yaml`` is a result with problems, never an exception.
"""

from __future__ import annotations

from pathlib import Path

from builder.config import load_config
from builder.engine.incremental import IncrementalBuilder
from builder.errors import BuilderError
from builder.files import InputError, read_regular
from builder.serve.devserver import RebuildResult

SERVE_DIR = Path(".cache") / "builder" / "serve-site"


WARM = Path("<load the site for quick pages>")
"""A follow-up "path" that asks the builder to load the site (no file is ever named so)."""


def serve_out_dir(root: Path) -> Path:
    """Where ``serve`` builds: beside the builder's cache, not ``site/``."""
    return root.resolve() / SERVE_DIR


class PreviewBuilder:
    """Builds the site for the preview; call it with the changed source paths.

    One :class:`~builder.engine.incremental.IncrementalBuilder` is kept across rebuilds, so a change
    rebuilds only what depends on it; it reloads ``site.yaml`` on every build.
    """

    def __init__(self, root: Path, out: Path | None = None, *, workers: int | None = 1) -> None:
        self.root = root.resolve()
        self.out = out if out is not None else serve_out_dir(self.root)
        self.workers = workers
        """Render processes (``None``: one per core for big rebuilds). One by default: forking a
        process that runs threads (HTTP, watcher) can leave a child waiting forever on a lock
        another thread held at fork time; ``serve`` runs this in a process of its own
        (:mod:`builder.serve.preview_process`), where forking is safe."""
        self.engine: IncrementalBuilder | None = None
        self._quick_done: dict[Path, bytes] = {}
        """Saved files answered quickly (by content), whose full rebuild is the next call."""

    def __call__(self, changed: frozenset[Path] | None) -> RebuildResult:
        if self.engine is None:
            try:
                config = load_config(self.root, self.out)
            except BuilderError as exc:  # e.g. a broken site.yaml at start-up: retried on the next change
                return RebuildResult(problems=(exc.problem(),))
            # In place (no tree swap per save) and keeping the render context for quick pages.
            self.engine = IncrementalBuilder(config, workers=self.workers, atomic=False, keep_context=True)
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
        self._quick_done = {}
        report = self.engine.build(None if changed is None else set(changed))
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

    def _quick(self, changed: frozenset[Path]) -> RebuildResult | None:
        """The page of a single saved recipe or row file first, when the engine can give it alone."""
        assert self.engine is not None
        if len(changed) != 1:
            return None
        [path] = changed
        try:
            data = read_regular(path)  # never through a link, never blocked by a FIFO
        except (OSError, InputError):
            return None
        if self._quick_done.get(path) == data:
            return None  # answered already: this is the full rebuild's turn
        try:
            written = self.engine.quick(path, data)
        except Exception:  # the full rebuild that follows reports whatever went wrong
            written = None
        if written is None:
            return None
        self._quick_done = {path: data}
        return RebuildResult(changed=frozenset(written), files=len(written), followup=changed)

    def close(self) -> None:
        if self.engine is not None:
            self.engine.close()
            self.engine = None

from __future__ import annotations

import argparse
import sys
from typing import Any

EXIT_WITHOUT_TEARDOWN = True
"""A finished build leaves nothing to clean up (pools joined, files closed, children reaped)."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", metavar="DIR", help="output folder (default: <root>/site)")
    parser.add_argument("--verbose", action="store_true", help="print a one-line timing summary per stage")
    parser.add_argument(
        "--no-cache",
        action="store_true",
        help="build from scratch with the plain pipeline: read no build cache in <root>/.cache/builder and"
        " keep none (the same bytes as a cached build)",
    )
    parser.add_argument(
        "--jobs", type=int, metavar="N", help="render with N processes (default: one per core for big builds)"
    )


class _ProgressBar:
    """A rich progress bar on a terminal, shown only once a stage has enough work to wait for."""

    def __init__(self) -> None:
        self._progress: Any = None
        self._tasks: dict[str, Any] = {}

    def __call__(self, stage: str, done: int, total: int) -> None:
        if self._progress is None:
            if total < 200:
                return
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            self._progress = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                # On the terminal that was checked (standard error): standard output stays the
                # report alone, whether it goes to the terminal, a file or a pipe.
                console=Console(stderr=True),
                transient=True,
            )
            self._progress.start()
        if stage not in self._tasks:
            self._tasks[stage] = self._progress.add_task(stage, total=total)
        self._progress.update(self._tasks[stage], completed=done, total=total)

    def close(self) -> None:
        if self._progress is not None:
            self._progress.stop()


def _print(files: int, rows: int, out: str, warnings: list[Any], summary: str | None) -> None:
    from builder.commands.report import format_text

    if warnings:
        print(format_text((), warnings), file=sys.stderr)
    from builder.wording import counted

    print(f"built {counted(files, 'file')} from {counted(rows, 'row')} into {out}")
    if summary is not None:
        print(summary)


def run(args: argparse.Namespace) -> int:
    import gc

    # A build allocates millions of objects that live until the process ends (caches, rows, pages)
    # and makes next to no reference cycles: the cyclic collector would only walk them, and a
    # build's peak memory is the same without it.
    gc.disable()
    from builder.config import load_config
    from builder.engine.incremental import IncrementalBuilder

    config = load_config(args.root, args.out, verbose=args.verbose)
    if args.no_cache:
        return _build_without_cache(config, args.verbose)
    bar = _ProgressBar() if sys.stderr.isatty() else None
    try:
        report = IncrementalBuilder(config, persist=not args.no_cache, workers=args.jobs, progress=bar).run(
            None
        )
    finally:
        if bar is not None:
            bar.close()
    if report.cache_note and args.verbose:
        print(report.cache_note, file=sys.stderr)
    _print(
        report.files,
        report.rows,
        str(config.out),
        report.warnings,
        report.summary() if args.verbose else None,
    )
    return 0


def _build_without_cache(config: Any, verbose: bool) -> int:
    """The plain pipeline (:func:`builder.engine.pure.build_site`), then the new tree swapped in."""
    from builder.engine.pipeline import Timings
    from builder.engine.pure import build_site, publish_site

    timings = Timings()
    files = build_site(config, timings)
    timings.measure("write", lambda: publish_site(files, config.out, config.root, config.cache_dir / "trash"))
    _print(len(files), files.rows, str(config.out), files.warnings, timings.summary() if verbose else None)
    return 0

"""Incremental builds: rebuild only what a change affects, with the same bytes as a clean build.

The interface the dev server (and ``build``) codes against::

    engine = IncrementalBuilder(config)
    report = engine.build(changed_paths)   # None: "don't know what changed, look at everything"
    report.written, report.removed, report.problems, report.warnings

``build`` never raises for a problem in the site (content, data, templates, output folder): it
returns them in ``report.problems`` and leaves the previous output as it was.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path

from builder.config import SiteConfig, load_config
from builder.errors import BuildAborted, BuilderError, Problem
from builder.output import MARKER
from builder.pipeline import Timings


@dataclass
class BuildReport:
    """What one build did."""

    written: list[str] = field(default_factory=list)
    """Output files added or changed, relative to the output folder, ``/``-separated, sorted."""
    removed: list[str] = field(default_factory=list)
    """Output files that no longer exist, same form, sorted."""
    problems: list[Problem] = field(default_factory=list)
    """Errors that stopped the build; the previous output is untouched when there are any."""
    warnings: list[Problem] = field(default_factory=list)
    """Problems that did not stop it."""
    files: int = 0
    """Files in the published output."""
    rows: int = 0
    """Rows loaded."""
    rendered: int = 0
    """Pages rendered by this build (the others were reused)."""
    timings: Timings = field(default_factory=Timings)

    @property
    def ok(self) -> bool:
        return not self.problems


def _digests(out: Path) -> dict[str, bytes]:
    found: dict[str, bytes] = {}
    for dirpath, _dirs, files in os.walk(out):
        for name in files:
            path = Path(dirpath, name)
            rel = path.relative_to(out).as_posix()
            if rel != MARKER:
                found[rel] = hashlib.blake2b(path.read_bytes(), digest_size=16).digest()
    return found


class IncrementalBuilder:
    """Builds one site root into one output folder, again and again, reusing what did not change."""

    def __init__(self, config: SiteConfig) -> None:
        self.config = config
        self._previous: dict[str, bytes] | None = None

    def build(self, changed: set[Path] | frozenset[Path] | None = None) -> BuildReport:
        """Bring the output up to date; ``changed`` lists source paths known to have changed."""
        from builder.pipeline import build

        del changed  # first version: a full build, diffed against the previous output
        report = BuildReport()
        try:
            self.config = load_config(self.config.root, self.config.out, verbose=self.config.verbose)
        except BuilderError as exc:
            report.problems.append(exc.problem())
            return report
        if self._previous is None:
            self._previous = _digests(self.config.out) if self.config.out.is_dir() else {}
        try:
            result = build(self.config)
        except BuildAborted as exc:
            report.problems, report.warnings = list(exc.problems), list(exc.warnings)
            return report
        except BuilderError as exc:
            report.problems.append(exc.problem())
            return report
        after = _digests(self.config.out)
        before = self._previous
        report.written = sorted(k for k, v in after.items() if before.get(k) != v)
        report.removed = sorted(k for k in before if k not in after)
        report.warnings = list(result.warnings)
        report.files = result.files
        report.rows = result.rows
        report.rendered = result.files
        report.timings = result.timings
        self._previous = after
        return report

    def close(self) -> None:
        """Release worker processes and connections (none yet)."""

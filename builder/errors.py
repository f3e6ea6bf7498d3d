"""One error hierarchy for the whole builder.

Every problem carries the file it was found in and, where it has one, the line. Validation code
collects :class:`Problem` values into a :class:`Problems` list and raises :class:`BuildAborted`
once, after everything has been checked, so a contributor sees every mistake in one pass.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from builder.limits import ERRORS_PER_FILE

MESSAGE_LIMIT = 400
"""Longest message a problem keeps: a message quoting input it could not parse (a header line of
``/proc/self/environ``, a 3 MB cell) shows an excerpt of it, never all of it."""

_UNPRINTABLE = re.compile("[\x00-\x08\x0a-\x1f\x7f\ud800-\udfff]")


def printable(text: str) -> str:
    """``text`` with control characters and lone surrogates escaped (``\\x01``, ``\\udcff``), so it
    prints in any format and encodes as UTF-8 (a file name of invalid UTF-8 holds surrogates)."""
    if not _UNPRINTABLE.search(text):
        return text
    return _UNPRINTABLE.sub(lambda m: repr(m.group())[1:-1], text)


@functools.lru_cache(maxsize=4096)
def _printable_path(path: str) -> str:
    # a file with many problems names the same path each time
    return printable(path)


@dataclass(frozen=True)
class Problem:
    """A single error or warning, located at ``path:line``.

    Path and message are made printable, and the message is cut to :data:`MESSAGE_LIMIT`
    characters, whoever makes the problem."""

    path: str
    line: int | None
    message: str
    kind: str | None = None
    """What sort of warning it is (``not_compared``), when it has a kind readers act on."""

    def __post_init__(self) -> None:
        message = printable(self.message)
        if len(message) > MESSAGE_LIMIT:
            message = message[: MESSAGE_LIMIT - 1] + "…"
        object.__setattr__(self, "message", message)
        object.__setattr__(self, "path", _printable_path(self.path))

    def _key(self) -> tuple[str, bool, int, str, str]:
        # by path, then line (a problem of the whole file after those with a line), then message
        return (self.path, self.line is None, self.line or 0, self.message, self.kind or "")

    def __lt__(self, other: Problem) -> bool:
        return self._key() < other._key()

    def __gt__(self, other: Problem) -> bool:
        return self._key() > other._key()

    def format(self) -> str:
        where = self.path if self.line is None else f"{self.path}:{self.line}"
        return f"{where}: {self.message}"

    def as_dict(self) -> dict[str, object]:
        if self.kind:
            return {"kind": self.kind, "path": self.path, "line": self.line, "message": self.message}
        return {"path": self.path, "line": self.line, "message": self.message}


def capped(problems: Iterable[Problem]) -> list[Problem]:
    """``problems`` sorted, at most :data:`builder.limits.ERRORS_PER_FILE` of each file, the rest of
    a file counted in one last problem of its own ("and N more"): a file of 100,000 bad cells gives a
    report a reader can use, in every output format."""
    out: list[Problem] = []
    path, shown, hidden = None, 0, 0

    def flush() -> None:
        if hidden and path is not None:
            noun = "problem" if hidden == 1 else "problems"
            out.append(
                Problem(
                    path,
                    None,
                    f"and {hidden:,} more {noun} in this file (the first {ERRORS_PER_FILE} are listed)",
                )
            )

    for problem in sorted(problems, key=Problem._key):
        if problem.path != path:
            flush()
            path, shown, hidden = problem.path, 0, 0
        if shown < ERRORS_PER_FILE:
            out.append(problem)
            shown += 1
        else:
            hidden += 1
    flush()
    return out


class BuilderError(Exception):
    """Base class: something in the input or the environment stops the builder."""

    def __init__(self, message: str, path: str | Path | None = None, line: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.path = str(path) if path is not None else None
        self.line = line

    def problem(self) -> Problem:
        return Problem(self.path or "<site>", self.line, self.message)

    def __str__(self) -> str:
        return self.problem().format()


class ConfigError(BuilderError):
    """The site configuration or the command line points at something unusable."""


class DataError(BuilderError):
    """A benchmark row file, nodes.yaml or annotations.yaml is invalid."""


class ContentError(BuilderError):
    """A markdown file or its front matter is invalid."""


class TemplateError(BuilderError):
    """A jinja2 template failed to load or render."""


class UsageError(BuilderError):
    """A command asked for something the site does not have (an unknown hardware or metric): exit 2."""


class OutputError(BuilderError):
    """The output folder cannot be written or is not ours to replace."""


class SearchIndexError(BuilderError):
    """Pagefind could not index the rendered site."""


class ChartRuntimeError(BuilderError):
    """The chart runtime (vega, vega-lite, vega-embed) could not be bundled."""


class BuildAborted(BuilderError):
    """Raised once after validation when any error was collected."""

    def __init__(self, problems: Iterable[Problem], warnings: Iterable[Problem] = ()) -> None:
        self.problems = capped(problems)
        self.warnings = capped(warnings)
        count = len(self.problems)
        super().__init__(f"{count} error{'s' if count != 1 else ''}")


@dataclass
class Problems:
    """An accumulator of errors and warnings, passed explicitly through the load stage."""

    errors: list[Problem] = field(default_factory=list)
    warnings: list[Problem] = field(default_factory=list)

    def error(self, path: str | Path, line: int | None, message: str) -> None:
        self.errors.append(Problem(str(path), line, message))

    def warn(self, path: str | Path, line: int | None, message: str, kind: str | None = None) -> None:
        self.warnings.append(Problem(str(path), line, message, kind))

    def add(self, exc: BuilderError) -> None:
        self.errors.append(exc.problem())

    def __iter__(self) -> Iterator[Problem]:
        return iter(self.errors)

    def __bool__(self) -> bool:
        return bool(self.errors)

    def raise_if_any(self) -> None:
        if self.errors:
            raise BuildAborted(self.errors, self.warnings)

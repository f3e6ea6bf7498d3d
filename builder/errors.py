"""One error hierarchy for the whole builder.

Every problem carries the file it was found in and, where it has one, the line. Validation code
collects :class:`Problem` values into a :class:`Problems` list and raises :class:`BuildAborted`
once, after everything has been checked, so a contributor sees every mistake in one pass.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True, order=True)
class Problem:
    """A single error or warning, located at ``path:line``."""

    path: str
    line: int | None
    message: str
    kind: str = ""
    """What sort of problem, for machines, when it has a name (``prose_figure``); shown in JSON."""

    def format(self) -> str:
        where = self.path if self.line is None else f"{self.path}:{self.line}"
        return f"{where}: {self.message}"

    def as_dict(self) -> dict[str, object]:
        if self.kind:
            return {"kind": self.kind, "path": self.path, "line": self.line, "message": self.message}
        return {"path": self.path, "line": self.line, "message": self.message}


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


class OutputError(BuilderError):
    """The output folder cannot be written or is not ours to replace."""


class SearchIndexError(BuilderError):
    """Pagefind could not index the rendered site."""


class ChartRuntimeError(BuilderError):
    """The chart runtime (vega, vega-lite, vega-embed) could not be bundled."""


class BuildAborted(BuilderError):
    """Raised once after validation when any error was collected."""

    def __init__(self, problems: Iterable[Problem], warnings: Iterable[Problem] = ()) -> None:
        self.problems = sorted(problems)
        self.warnings = sorted(warnings)
        count = len(self.problems)
        super().__init__(f"{count} error{'s' if count != 1 else ''}")


@dataclass
class Problems:
    """An accumulator of errors and warnings, passed explicitly through the load stage."""

    errors: list[Problem] = field(default_factory=list)
    warnings: list[Problem] = field(default_factory=list)

    def error(self, path: str | Path, line: int | None, message: str) -> None:
        self.errors.append(Problem(str(path), line, message))

    def warn(self, path: str | Path, line: int | None, message: str) -> None:
        self.warnings.append(Problem(str(path), line, message))

    def add(self, exc: BuilderError) -> None:
        self.errors.append(exc.problem())

    def __iter__(self) -> Iterator[Problem]:
        return iter(self.errors)

    def __bool__(self) -> bool:
        return bool(self.errors)

    def raise_if_any(self) -> None:
        if self.errors:
            raise BuildAborted(self.errors, self.warnings)

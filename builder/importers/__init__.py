"""Readers of benchmark tool output, one module per tool.

A reader turns one file into :class:`Measurement` values: row cells as the exact text that goes into
the CSV (numbers never rounded beyond what the mapping says), plus whatever run metadata the file
itself records. Readers report defects into a :class:`~builder.errors.Problems` accumulator with the
file's name; they never print, and they know nothing about the site (the importing stage merges
options, validates and writes).
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from builder.errors import Problems

META_FIELDS: tuple[str, ...] = (
    "date",
    "time",
    "node",
    "engine_version",
    "engine_build",
    "flags",
    "env",
    "contributor",
)
"""Row fields that describe the run rather than one measurement; options override a file's values."""


@dataclass
class Measurement:
    """One future row, read from a benchmark file."""

    origin: str
    """Where it comes from, for messages: ``bench.json`` or ``README.md:14``."""
    cells: dict[str, str]
    """Row field to its CSV text (measurement fields: prompt_tokens, metrics, harness, notes...)."""
    meta: dict[str, str] = field(default_factory=dict)
    """Run metadata the file records (keys from :data:`META_FIELDS`)."""
    model: str | None = None
    """Model id the tool reports, to catch an import into the wrong recipe."""
    load: dict[str, str] = field(default_factory=dict)
    """The load the run put on the server, as the file gives it: ``request_rate`` (a number or ``inf``),
    ``concurrency`` (the cap, or ``none``) and ``burstiness``; :func:`load_cells` makes them row cells."""
    file: str = ""
    """The file it was read from, as given (set by :func:`read_files`)."""
    unknown: tuple[str, ...] = ()
    """Load settings the file does not show (``request_rate``, ``concurrency``, or ``load``: neither, and
    either one settles it): an option must supply them."""
    fmt: str = ""
    """The format it was read as (set by :func:`read_files`)."""


def load_cells(load: dict[str, str]) -> dict[str, str]:
    """Row cells of a run's load.

    ``concurrency`` is the cap (empty when ``none``). A rate of ``inf`` under a cap sends every request at
    once and keeps the cap busy: that is a closed-loop run at the cap, so it has no ``request_rate``.
    ``burstiness`` only shapes the arrivals of a finite rate.
    """
    rate, cap, burstiness = load.get("request_rate"), load.get("concurrency"), load.get("burstiness")
    capped = cap is not None and cap != "none"
    cells: dict[str, str] = {}
    if capped:
        assert cap is not None
        cells["concurrency"] = cap
    if rate is not None and not (rate == "inf" and capped):
        cells["request_rate"] = rate
        if burstiness is not None and rate != "inf":
            cells["burstiness"] = burstiness
    return cells


Reader = Callable[[str, bytes, Problems], list[Measurement]]
"""``read(display_name, data, problems)``: every measurement of one file."""


class NotANumber(ValueError):
    """A value that cannot become a row number (message ready for the contributor)."""


def number_text(value: Any, what: str) -> str:
    """The CSV text of a JSON number: ints as written, floats by ``repr`` (shortest exact form)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise NotANumber(f"{what} must be a number, not {json.dumps(value)}")
    if isinstance(value, float):
        if not math.isfinite(value):
            raise NotANumber(f"{what} must be a finite number, not {value}")
        return repr(value)
    return str(value)


def rate_text(value: Any, what: str) -> str:
    """The CSV text of a request rate: a positive number, or ``inf`` (JSON ``"inf"`` or ``Infinity``)."""
    if value == "inf" or (isinstance(value, float) and value == math.inf):
        return "inf"
    text = number_text(value, what)
    if float(text) <= 0:
        raise NotANumber(f"{what} must be a positive number or inf, not {text}")
    return text


class Infinity(float):
    """JSON's ``Infinity`` as a parser reads it: kept apart so that only a request rate may hold it."""


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number JSON allows")


def _infinity(name: str) -> Any:
    if name == "Infinity":
        return Infinity(math.inf)
    raise ValueError(f"{name} is not a number JSON allows")


def decode(display: str, data: bytes, problems: Problems, what: str) -> str | None:
    """The text of a UTF-8 file (a BOM is fine); ``None`` after reporting a problem."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        problems.error(
            display, None, f"not {what}: not valid UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start})"
        )
        return None


def parse_json(text: str, infinity: bool = False) -> Any:
    """``json.loads`` without NaN; ``Infinity`` only when ``infinity`` (tools that write a rate of inf so)."""
    return json.loads(text, parse_constant=_infinity if infinity else _reject_constant)


def load_json(display: str, data: bytes, problems: Problems, what: str, infinity: bool = False) -> Any | None:
    """Parse JSON strictly (no NaN; ``Infinity`` only when ``infinity``); ``None`` after reporting a problem.

    ``what`` names the expected format in messages (``a llama-benchy JSON report``).
    """
    text = decode(display, data, problems, what)
    if text is None:
        return None
    try:
        return parse_json(text, infinity)
    except ValueError as exc:
        line = getattr(exc, "lineno", None)
        problems.error(display, line, f"not {what}: not valid JSON ({exc})")
        return None


def load_json_lines(
    display: str, data: bytes, problems: Problems, what: str, infinity: bool = False
) -> list[tuple[int, Any]]:
    """Every non-empty line of a JSON Lines file as (line number, value); bad lines are reported."""
    text = decode(display, data, problems, what)
    if text is None:
        return []
    out = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            out.append((number, parse_json(line, infinity)))
        except ValueError as exc:
            problems.error(display, number, f"not {what}: line {number} is not valid JSON ({exc})")
    return out


def option_on_command_line(text: str, program: re.Pattern[str], option: re.Pattern[str]) -> str | None:
    """The ``value`` group of the first ``option`` after ``program`` on one line of ``text``, or None.

    Line by line, from the program's first mention: a pattern like ``program.*?option`` searched
    over the text starts again at every mention, quadratic on a line of many."""
    for line in text.split("\n"):
        found = program.search(line)
        if found is not None and (match := option.search(line, found.end())) is not None:
            return match["value"]
    return None


def harness(tool: str, version: str | None) -> str:
    """``<tool> <version>``, the one way every format writes the harness (the tool alone when no version)."""
    version = (version or "").strip()
    return f"{tool} {version}" if version else tool


@dataclass(frozen=True)
class Importer:
    """One reader in the registry: its ``--from`` name, its module, and what it reads."""

    name: str
    """The ``import --from`` format name."""
    module: str
    """Its module under :mod:`builder.importers`, which defines ``read`` and ``claims``."""
    tools: tuple[str, ...]
    """The tools whose output it reads, as a row's ``harness`` starts."""
    reads: str
    """What it reads, for help and messages."""

    def _module(self) -> Any:
        import importlib

        return importlib.import_module(f"builder.importers.{self.module}")

    def read(self, display: str, data: bytes, problems: Problems) -> list[Measurement]:
        read: Reader = self._module().read
        return read(display, data, problems)

    def claims(self, text: str) -> str | None:
        """What the text is when it is this reader's (``a printed summary``…), else ``None``."""
        claims: Callable[[str], str | None] = self._module().claims
        return claims(text)


IMPORTERS: tuple[Importer, ...] = (
    Importer(
        "vllm-bench",
        "vllm_bench",
        ("vllm bench serve",),
        "its --save-result JSON or printed summary",
    ),
    Importer("llama-benchy", "llama_benchy", ("llama-benchy",), "its JSON, CSV or table"),
    Importer(
        "sglang",
        "sglang",
        ("sglang bench_serving",),
        "its printed summary or JSON Lines",
    ),
    Importer("guidellm", "guidellm", ("guidellm",), "its JSON or YAML report"),
    Importer("aiperf", "aiperf", ("aiperf", "genai-perf"), "AIPerf or GenAI-Perf JSON or CSV export"),
    Importer("llama-bench", "llama_bench", ("llama-bench",), "its table, JSON or JSON Lines"),
)
"""Every reader, in the order help and docs list them: ``import``, its detection, the docs test and the
round-trip tests all read this one list."""

FORMATS: tuple[str, ...] = tuple(importer.name for importer in IMPORTERS)
_BY_NAME = {importer.name: importer for importer in IMPORTERS}


def reader_for(fmt: str) -> Reader:
    """The reader of a ``--from`` format name."""
    return _BY_NAME[fmt].read


def detect(display: str, data: bytes, problems: Problems) -> str | None:
    """The format of a file whose reader alone claims it; ``None`` after reporting why not."""
    text = data.decode("utf-8-sig", errors="replace")
    if not text.strip():
        problems.error(display, None, "empty: nothing to import")
        return None
    claims = [(importer.name, what) for importer in IMPORTERS if (what := importer.claims(text))]
    if len(claims) == 1:
        return claims[0][0]
    if not claims:
        known = "; ".join(f"{importer.name} ({importer.reads})" for importer in IMPORTERS)
        problems.error(
            display,
            None,
            f"not output the importer knows: {known}. If it is one of them, pass --from FORMAT to hear "
            "what its reader misses",
        )
        return None
    both = " and ".join(f"{name} ({what})" for name, what in claims)
    choices = " or ".join(f"--from {name}" for name, _ in claims)
    problems.error(display, None, f"ambiguous: read as {both}; pass {choices}")
    return None


@functools.lru_cache(maxsize=4)
def json_objects(text: str) -> tuple[dict[str, Any], ...]:
    """The JSON objects a text holds, for :func:`Importer.claims`: the whole text as one object or a list
    of objects, else every line that is one object (JSON Lines, perhaps between lines of a log)."""

    def objects(value: Any) -> list[dict[str, Any]]:
        if isinstance(value, dict):
            return [value]
        if isinstance(value, list):
            return [item for item in value if isinstance(item, dict)]
        return []

    def lenient(line: str) -> Any:
        return json.loads(line, parse_constant=float)

    if "{" not in text:
        return ()
    stripped = text.strip()
    try:
        return tuple(objects(lenient(stripped)))
    except ValueError:
        pass
    out: list[dict[str, Any]] = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("{") and line.endswith("}"):
            try:
                out.extend(objects(lenient(line)))
            except ValueError:
                continue
    return tuple(out)


_DELIMITER_CELL = re.compile(r"^:?-+:?$")


def table_cells(line: str) -> list[str]:
    """The cells of a markdown table line, stripped."""
    body = line.strip()
    body = body[1:] if body.startswith("|") else body
    body = body[:-1] if body.endswith("|") else body
    return [cell.strip() for cell in body.split("|")]


def table_headers(text: str) -> list[list[str]]:
    """The header (lower case) of every markdown table in a text: a ``|`` line above a ``|---|`` line."""
    lines = text.splitlines()
    return [
        [cell.lower() for cell in table_cells(line)]
        for line, below in zip(lines, lines[1:], strict=False)
        if line.lstrip().startswith("|")
        and below.lstrip().startswith("|")
        and all(_DELIMITER_CELL.match(cell) for cell in table_cells(below))
    ]


STDIN = "-"
"""The file name that stands for standard input (a paste)."""
STDIN_DISPLAY = "<stdin>"


def read_files(
    fmt: str | None, paths: list[Path], problems: Problems, pasted: bytes | None = None
) -> list[Measurement]:
    """Read every file in order; unreadable files are reported, not raised.

    ``fmt`` ``None``: each file's format is detected from its content (:func:`detect`). A path ``-`` is
    ``pasted``, the text read from standard input.
    """
    out: list[Measurement] = []
    for path in paths:
        if str(path) == STDIN:
            display, data = STDIN_DISPLAY, pasted or b""
        else:
            display = str(path)
            try:
                data = path.read_bytes()
            except FileNotFoundError:
                problems.error(display, None, "no such file")
                continue
            except IsADirectoryError:
                problems.error(display, None, "is a folder, not a file")
                continue
            except OSError as exc:
                problems.error(display, None, f"cannot read: {exc.strerror}")
                continue
        form = fmt or detect(display, data, problems)
        if form is None:
            continue
        for item in reader_for(form)(display, data, problems):
            item.file = display
            item.fmt = form
            out.append(item)
    return out

"""Readers of benchmark tool output, one module per tool.

A reader turns one file into :class:`Measurement` values: row cells as the exact text that goes into
the CSV (numbers never rounded beyond what the mapping says), plus whatever run metadata the file
itself records. Readers report defects into a :class:`~builder.errors.Problems` accumulator with the
file's name; they never print, and they know nothing about the site (the importing stage merges
options, validates and writes).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from builder.errors import Problems

META_FIELDS: tuple[str, ...] = (
    "date",
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
    hints: dict[str, str] = field(default_factory=dict)
    """Values the file shows but the format does not take as data (e.g. a printed date), for messages."""


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


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number JSON allows")


def load_json(display: str, data: bytes, problems: Problems, what: str) -> Any | None:
    """Parse JSON strictly (no NaN/Infinity); ``None`` after reporting a problem.

    ``what`` names the expected format in messages (``a llama-benchy JSON report``).
    """
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        problems.error(
            display, None, f"not {what}: not valid UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start})"
        )
        return None
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except ValueError as exc:
        line = getattr(exc, "lineno", None)
        problems.error(display, line, f"not {what}: not valid JSON ({exc})")
        return None


def reader_for(fmt: str) -> Reader:
    """The reader of a ``--from`` format name."""
    from builder.importers import llama_benchy, vllm_bench

    readers: dict[str, Reader] = {"vllm-bench": vllm_bench.read, "llama-benchy": llama_benchy.read}
    return readers[fmt]


FORMATS: tuple[str, ...] = ("vllm-bench", "llama-benchy")


def read_files(fmt: str, paths: list[Path], problems: Problems) -> list[Measurement]:
    """Read every file in order; unreadable files are reported, not raised."""
    read = reader_for(fmt)
    out: list[Measurement] = []
    for path in paths:
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
        out.extend(read(display, data, problems))
    return out

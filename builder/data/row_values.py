"""Checks of loaded rows that keep one row from taking the answer over, each an error at ``path:line``.

* A row dated after the build's day (``SOURCE_DATE_EPOCH``, else today, with one day of grace for
  time zones) would be the recipe's "latest run" until the calendar caught up: no real run could
  replace it.
* A throughput of 0 is a run that failed, not a figure: it would sit below every other run unseen
  by the comparisons (a zero has no ratio).
* Identifiers (engine version and build, flags, env, driver) are compared whole, so they are
  printable ASCII: ``0.24.0`` followed by an invisible U+FEFF would be a second version, a Cyrillic
  ``а`` in a flag a second serve command. The other text that is not prose (engine, harness) may
  not hold an invisible format character (Unicode category Cf); prose (notes, source, contributor)
  keeps all of Unicode.

Every distinct value is judged once; the rows holding a bad one are then looked up.
"""

from __future__ import annotations

import datetime as dt
import unicodedata
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc

from builder.content.models import METRICS, QUANTITIES
from builder.errors import Problems

if TYPE_CHECKING:
    import duckdb

    from builder.data.rows import ParsedFile

GRACE = dt.timedelta(days=1)
"""How far past the build's day a row may be dated: the day has begun somewhere already."""
THROUGHPUTS = tuple(m for m in METRICS if QUANTITIES[m].unit.startswith("tok/s"))
ASCII_IDENTIFIERS = ("engine_version", "engine_build", "flags", "env", "driver")
"""Row columns matched whole against other rows and the recipe: printable ASCII only."""
NOT_PROSE = ("engine", "harness")
"""Row text that is not prose but may be any script: no invisible format character."""


def _character(ch: str) -> str:
    """``U+0430 (CYRILLIC SMALL LETTER A)``; ``the invisible format character U+200B (ZERO WIDTH SPACE)``."""
    name = unicodedata.name(ch, "")
    text = f"U+{ord(ch):04X}" + (f" ({name})" if name else "")
    return f"the invisible format character {text}" if unicodedata.category(ch) == "Cf" else text


def identifier_problem(column: str, value: str) -> str | None:
    """What is wrong with ``value`` as the identifier ``column`` (printable ASCII), or None."""
    for at, ch in enumerate(value, start=1):
        if not " " <= ch <= "~":
            shown = value.encode("ascii", "backslashreplace").decode("ascii")
            return (
                f"{column} '{shown}' holds {_character(ch)} at character {at}: it is matched whole "
                "against other runs and the recipe, so it is printable ASCII; type it again"
            )
    return None


def format_character_problem(column: str, value: str) -> str | None:
    """What is wrong with ``value`` of the non-prose text ``column`` (a Cf character), or None."""
    for at, ch in enumerate(value, start=1):
        if unicodedata.category(ch) == "Cf":
            return f"{column} holds {_character(ch)} at character {at}; remove it"
    return None


def _rows_holding(
    con: duckdb.DuckDBPyConnection, column: str, values: Sequence[object]
) -> list[tuple[int, int, object]]:
    """(file_id, file_row, value) of every row whose ``column`` is one of ``values``, in row order."""
    hits: list[tuple[int, int, object]] = con.execute(
        f"SELECT file_id, file_row, {column} FROM rows WHERE list_contains($values, {column}) ORDER BY row_id",
        {"values": list(values)},
    ).fetchall()
    return hits


def check_row_values(
    rows: pa.Table,
    con: Callable[[], duckdb.DuckDBPyConnection],
    row_files: Sequence[ParsedFile],
    build_day: dt.date,
    problems: Problems,
) -> None:
    """Report the rows dated after ``build_day`` (with :data:`GRACE`), with a throughput of 0, or with
    an identifier that is not printable ASCII or a format character in text that is not prose."""

    def report(column: str, bad: dict[object, str]) -> None:
        if bad:
            for file_id, file_row, value in _rows_holding(con(), column, list(bad)):
                parsed = row_files[file_id]
                problems.error(parsed.source.rel, parsed.line_of(file_row), bad[value])

    latest = build_day + GRACE
    dates = rows.column("date")
    if len(dates) and dates.null_count < len(dates) and pc.max(dates).as_py() > latest:
        report(
            "date",
            {
                day: f"date {day.isoformat()} is after the build's day {build_day.isoformat()} (one day of "
                "grace for time zones): a row from the future would be the recipe's latest run until then; "
                "write the day the run was made (the build's day is SOURCE_DATE_EPOCH when set, else today)"
                for day in pc.unique(dates).to_pylist()
                if day is not None and day > latest
            },
        )
    for metric in THROUGHPUTS:
        if pc.any(pc.equal(rows.column(metric), 0)).as_py():
            report(
                metric,
                {
                    0.0: f"{metric} is 0: a run that failed has no throughput; leave {metric} empty and say "
                    "in notes what failed (the row keeps any figure the run did measure)"
                },
            )
    for columns, judge in ((ASCII_IDENTIFIERS, identifier_problem), (NOT_PROSE, format_character_problem)):
        for column in columns:
            values = pc.drop_null(pc.unique(rows.column(column))).to_pylist()
            found = {v: judge(column, v) for v in values if not (v.isascii() and v.isprintable())}
            report(column, {value: problem for value, problem in found.items() if problem is not None})

"""Property tests of the row parser (CSV, JSONL, Parquet) and the SQL validator behind it.

Whatever a row file holds, every row either reaches DuckDB with exactly the values written, or is
reported with its file and line: nothing raises, nothing vanishes, nothing is coerced, in bounded
time. And the pydantic ``Row`` model (the documented format) agrees with the SQL validator.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import math
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from builder.config import load_config
from builder.content.models import METRICS, ROW_SCHEMA, Row
from builder.data.load import load_site
from builder.errors import Problems
from tests.conftest import SITES, examples

ROWS_FILE = "data/rows/tiny/prop"
FIELDS = (
    "date",
    "recipe",
    "node",
    "engine_version",
    "prompt_tokens",
    "concurrency",
    "request_rate",
    "burstiness",
    "time",
    *METRICS,
    "decode_tok_s_sd",
    "repetitions",
    "context_tokens",
    "weights_gib",
    "flags",
    "notes",
)
PROPERTY = settings(max_examples=examples(12), suppress_health_check=[HealthCheck.too_slow])

# Cells that are valid for some field, and the ways real files get them wrong.
NASTY = [
    "",
    " ",
    "0",
    "-1",
    "1,5",
    "1.5",
    ".5",
    "5.",
    "1e3",
    "1E-3",
    "1e309",
    "NaN",
    "nan",
    "inf",
    "-inf",
    "Infinity",
    "+1",
    "01",
    "0x10",
    "１２",
    "1_000",
    "9999999999999999999999",
    "2026-02-30",
    "2026-2-3",
    "2026-01-02",
    "20260102",
    "unknown",
    "tiny",
    "node-a",
    "other",
    "true",
    "null",
    "None",
    '"',
    '""',
    "a,b",
    "line\nbreak",
    "tab\there",
    "</script><img src=x onerror=alert(1)>",
    "é",
    "\u2028",
    "  512",
    "512 ",
    "--max-model-len 4096",
    "'unclosed",
    "1.0.0",
]
VALID_LIKE = {
    "date": ["2026-01-02", "2025-12-31", "2024-02-29"],
    "recipe": ["tiny"],
    "node": ["node-a"],
    "engine_version": ["1.0.0", "unknown", "0.24.0rc1"],
    "prompt_tokens": ["512", "2048", "unknown", "1"],
    "concurrency": ["1", "8", "32", ""],
    "request_rate": ["", "", "inf", "INF", "10", "0.3", "0"],
    "burstiness": ["", "1", "0.5", "0"],
    "time": ["", "09:30", "23:59", "00:00", "24:00", "9:30"],
}


def cell(name: str) -> st.SearchStrategy[str]:
    column = ROW_SCHEMA[name]
    valid = VALID_LIKE.get(name, [])
    if column.kind == "number" and not valid:
        valid = ["", "42.5", "0", "1e2", "0.1", "123456789.123456789"]
    elif column.kind == "integer" and not column.words:
        valid = ["", "0", "7", "4096"]
    elif column.kind == "text" and not column.required:
        valid = ["", "--max-model-len 4096", "a note, with a comma"]
    return st.one_of(
        st.sampled_from(valid or [""]),
        st.sampled_from(NASTY),
        st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12),
    )


row_strategy = st.fixed_dictionaries({name: cell(name) for name in FIELDS})


def make_root() -> Path:
    root = Path(tempfile.mkdtemp(prefix="rows-prop-"))
    shutil.copytree(SITES / "minimal", root, dirs_exist_ok=True)
    for extra in (root / "data" / "rows").rglob("*.csv"):
        extra.unlink()
    return root


def load(root: Path) -> tuple[list[dict[str, Any]], Problems]:
    problems = Problems()
    site = load_site(load_config(root), problems)
    table = site.con.sql("SELECT * FROM rows ORDER BY row_id").to_arrow_table().to_pylist()
    site.con.close()
    return table, problems


def expected_value(name: str, text: str) -> Any:
    """What DuckDB must hold for a cell that loaded."""
    column = ROW_SCHEMA[name]
    if text == "":
        return column.empty
    if text in column.words:
        return None
    if column.kind == "date":
        return dt.date.fromisoformat(text)
    if column.kind == "integer":
        return int(text)
    if column.kind == "number":
        return float(text)
    return text


def check_exact(
    rows: list[dict[str, str]], lines: list[int], loaded: list[dict[str, Any]], problems: Problems, rel: str
) -> None:
    assert all(p.path == rel and p.line is not None for p in problems.errors), problems.errors
    bad_lines = {p.line for p in problems.errors}
    assert bad_lines <= set(lines), (bad_lines, lines)
    kept = [(row, line) for row, line in zip(rows, lines, strict=True) if line not in bad_lines]
    # Nothing silently dropped: every row either loaded or was reported.
    assert len(loaded) == len(kept)
    for (row, _line), got in zip(kept, loaded, strict=True):
        for name, text in row.items():
            want = expected_value(name, text)
            if isinstance(want, float):
                assert got[name] == want and not math.isnan(got[name]), (name, text, got[name])
            else:
                assert got[name] == want, (name, text, got[name])


@PROPERTY
@given(st.lists(row_strategy, min_size=1, max_size=8))
def test_csv_rows_load_exactly_or_are_reported_at_their_line(rows: list[dict[str, str]]) -> None:
    root = make_root()
    try:
        # CRLF endings: csv.writer quotes a field only for characters of its line terminator, and a
        # bare \r in an unquoted field really is a line break to any CSV reader.
        buffer = io.StringIO(newline="")
        csv.writer(buffer, lineterminator="\r\n").writerow(FIELDS)
        lines, line = [], 2
        for row in rows:
            record = io.StringIO(newline="")
            csv.writer(record, lineterminator="\r\n").writerow([row[name] for name in FIELDS])
            lines.append(line)
            buffer.write(record.getvalue())
            # Physical lines as a CSV reader counts them: \n, \r and \r\n all end one.
            line += len(io.StringIO(record.getvalue(), newline="").readlines())
        path = root / f"{ROWS_FILE}.csv"
        path.write_text(buffer.getvalue(), encoding="utf-8")
        loaded, problems = load(root)
        check_exact(rows, lines, loaded, problems, f"{ROWS_FILE}.csv")
    finally:
        shutil.rmtree(root)


json_value = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=10),
    st.sampled_from(NASTY),
    st.lists(st.integers(), max_size=2),
)


@PROPERTY
@given(
    st.lists(
        st.dictionaries(st.sampled_from([*FIELDS, "bogus"]), json_value, max_size=12), min_size=1, max_size=6
    )
)
def test_jsonl_rows_load_or_are_reported_and_agree_with_the_row_model(objects: list[dict[str, Any]]) -> None:
    root = make_root()
    try:
        for obj in objects:  # a usable base, so the interesting keys decide
            obj.setdefault("date", "2026-01-02")
            obj.setdefault("recipe", "tiny")
            obj.setdefault("node", "node-a")
            obj.setdefault("engine_version", "1.0.0")
            obj.setdefault("prompt_tokens", 512)
            obj.setdefault("concurrency", 1)
        text = "".join(json.dumps(obj) + "\n" for obj in objects)
        rel = f"{ROWS_FILE}.jsonl"
        (root / rel).write_text(text, encoding="utf-8")
        loaded, problems = load(root)
        assert all(p.path == rel and p.line is not None for p in problems.errors), problems.errors
        bad = {p.line for p in problems.errors}
        assert len(loaded) == len(objects) - len(bad)
        for number, obj in enumerate(objects, start=1):
            sql_ok = number not in bad
            try:
                Row.model_validate_json(json.dumps(obj))
                # The SQL also checks what a lone row cannot: references and at least one metric.
                model_ok = (
                    any(obj.get(m) is not None for m in METRICS)
                    and obj.get("recipe") == "tiny"
                    and obj.get("node") == "node-a"
                )
            except ValidationError:
                model_ok = False
            assert sql_ok == model_ok, (obj, [p for p in problems.errors if p.line == number])
    finally:
        shutil.rmtree(root)


@PROPERTY
@given(st.binary(max_size=400), st.sampled_from(["csv", "jsonl", "parquet"]))
def test_any_bytes_give_rows_or_located_problems_never_a_traceback(data: bytes, kind: str) -> None:
    root = make_root()
    try:
        rel = f"{ROWS_FILE}.{kind}"
        (root / rel).write_bytes(data)
        _loaded, problems = load(root)
        assert all(p.path == rel for p in problems.errors)
    finally:
        shutil.rmtree(root)


@PROPERTY
@given(st.lists(row_strategy, min_size=1, max_size=6))
def test_csv_that_parses_in_bulk_gives_what_file_by_file_gives(rows: list[dict[str, str]]) -> None:
    """Two files sharing a header go through the joined parse; a third, alone, file by file."""
    root = make_root()
    try:
        text = ",".join(FIELDS) + "\n"
        buffer = io.StringIO(newline="")
        csv.writer(buffer, lineterminator="\r\n").writerows([[r[n] for n in FIELDS] for r in rows])
        for name in ("a", "b"):
            (root / f"{ROWS_FILE}-{name}.csv").write_text(text + buffer.getvalue(), encoding="utf-8")
        together, problems_together = load(root)
        (root / f"{ROWS_FILE}-b.csv").unlink()
        alone, problems_alone = load(root)
        assert together[: len(alone)] == alone
        a_errors = sorted(p for p in problems_together.errors if p.path.endswith("-a.csv"))
        assert a_errors == sorted(problems_alone.errors)
    finally:
        shutil.rmtree(root)


@settings(max_examples=examples(12))
@given(
    st.lists(
        st.fixed_dictionaries(
            {
                # A throughput of 0 and a date after the build's day are refused (tests/data/test_row_values.py).
                "decode_tok_s": st.floats(min_value=0, max_value=1e12, allow_nan=False, exclude_min=True),
                "prompt_tokens": st.integers(min_value=1, max_value=2**40),
                "concurrency": st.integers(min_value=1, max_value=1024),
                "date": st.dates(min_value=dt.date(1990, 1, 1), max_value=dt.date(2026, 1, 1)),
            }
        ),
        min_size=1,
        max_size=20,
    )
)
def test_parquet_rows_load_exactly(rows: list[dict[str, Any]]) -> None:
    root = make_root()
    try:
        table = pa.table(
            {
                "date": pa.array([r["date"] for r in rows], pa.date32()),
                "recipe": ["tiny"] * len(rows),
                "node": ["node-a"] * len(rows),
                "engine_version": ["1.0.0"] * len(rows),
                "prompt_tokens": pa.array([r["prompt_tokens"] for r in rows], pa.int64()),
                "concurrency": pa.array([r["concurrency"] for r in rows], pa.int32()),
                "decode_tok_s": pa.array([r["decode_tok_s"] for r in rows], pa.float64()),
            }
        )
        pq.write_table(table, root / f"{ROWS_FILE}.parquet")
        loaded, problems = load(root)
        assert problems.errors == []
        assert [(r["date"], r["prompt_tokens"], r["concurrency"], r["decode_tok_s"]) for r in loaded] == [
            (r["date"], r["prompt_tokens"], r["concurrency"], r["decode_tok_s"]) for r in rows
        ]
    finally:
        shutil.rmtree(root)


_NAME = st.text(alphabet="ab-_.Z09", min_size=1, max_size=5)


@settings(max_examples=examples(15), deadline=None)
@given(
    st.lists(
        st.tuples(
            st.lists(_NAME, min_size=0, max_size=2),
            _NAME,
            st.sampled_from([".csv", ".CSV", ".jsonl", ".Parquet", ".txt", ""]),
        ),
        max_size=25,
    )
)
def test_row_files_are_found_by_suffix_in_path_order(entries: list[tuple[list[str], str, str]]) -> None:
    import os
    from pathlib import PurePosixPath

    from builder.data.rows import ROW_FILE_SUFFIXES, discover_row_files

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for folders, stem, suffix in entries:
            try:
                folder = root.joinpath("data", "rows", *folders)
                folder.mkdir(parents=True, exist_ok=True)
                (folder / (stem + suffix)).write_text("x", encoding="utf-8")
            except (FileExistsError, NotADirectoryError, IsADirectoryError):
                continue  # a name already taken by a folder or a file
        expected = []
        for folder, _dirs, files in os.walk(root / "data" / "rows"):
            for name in files:
                suffix = os.path.splitext(name)[1].lower()
                if suffix in ROW_FILE_SUFFIXES:
                    rel = Path(folder, name).relative_to(root).as_posix()
                    expected.append((PurePosixPath(rel).parts, rel, suffix[1:]))
        found = discover_row_files(root, Problems(), read=False)
        assert [(f.rel, f.kind) for f in found] == [(rel, kind) for _, rel, kind in sorted(expected)]

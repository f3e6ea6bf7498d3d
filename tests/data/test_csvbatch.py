"""CSV files parsed in batches: the rows, their lines and the problems are those of parsing each file
alone, across batch boundaries and with odd files among them, and plain files' bytes are not kept."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest

import builder.data.csvbatch
from builder.config import load_config
from builder.data.load import load_site
from builder.errors import Problems
from tests.conftest import MakeSite

HEADER = "date,recipe,node,engine_version,prompt_tokens,concurrency,decode_tok_s,notes"


def body(index: int, rows: int) -> str:
    """Rows of file ``index``: distinct values, so a row assigned to the wrong file or line shows."""
    return "".join(
        f"2026-01-{1 + index % 28:02d},tiny,node-a,1.0.0,{512 + row},{1 + index},{index}.{row}5,f{index}r{row}\n"
        for row in range(rows)
    )


def reference(root: Path) -> list[tuple[str, int, dict[str, str]]]:
    """(path, line, cells) of every record, read file by file with the csv module."""
    out = []
    for path in sorted((root / "data" / "rows").rglob("*.csv"), key=lambda p: p.relative_to(root).parts):
        try:
            text = path.read_bytes().decode("utf-8-sig")
        except UnicodeDecodeError:
            continue  # reported, and none of its rows loads
        reader = csv.reader(io.StringIO(text, newline=""))
        header = next(reader)
        line = reader.line_num
        for record in reader:
            if len(record) == len(header):
                out.append(
                    (path.relative_to(root).as_posix(), line + 1, dict(zip(header, record, strict=True)))
                )
            line = reader.line_num
    return out


def loaded(root: Path) -> tuple[list[tuple[str, int, dict[str, str]]], Problems, list[object]]:
    problems = Problems()
    site = load_site(load_config(root), problems)
    out = []
    for row in site.rows.to_pylist():
        item = site.row_files[row["file_id"]]
        cells = {"notes": row["notes"] or "", "decode_tok_s": repr(row["decode_tok_s"])}
        out.append((item.source.rel, item.line_of(row["file_row"]), cells))
    return out, problems, site.row_files


@pytest.fixture
def small_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    # A few files per batch, so a load crosses many batch boundaries.
    monkeypatch.setattr(builder.data.csvbatch, "BATCH_BYTES", 600)


def test_rows_lines_and_problems_match_parsing_each_file_alone(
    make_site: MakeSite, small_batches: None
) -> None:
    files: dict[str, str | bytes] = {"data/rows/tiny/2026-01-02-node-a.csv": None}  # type: ignore[dict-item]
    for index in range(30):
        files[f"data/rows/tiny/f{index:02d}.csv"] = HEADER + "\n" + body(index, 1 + index % 4)
    # Odd files among them: other columns, CRLF with a BOM, a lone carriage return, a quoted
    # multi-line cell, a ragged record and a bad value, each in the middle of the others.
    files["data/rows/tiny/f05b.csv"] = (
        "date,recipe,node,engine_version,prompt_tokens,concurrency,decode_tok_s\n"
        + ("2026-01-05,tiny,node-a,1.0.0,700,2,5.55\n")
    )
    files["data/rows/tiny/f10b.csv"] = ("\ufeff" + HEADER + "\n" + body(40, 3)).replace("\n", "\r\n").encode()
    files["data/rows/tiny/f15b.csv"] = (
        HEADER + "\n" + body(41, 2) + "2026-01-03,tiny,node-a,1.0.0,9,1,1.25,a\rb\n"
    ).encode()
    files["data/rows/tiny/f20b.csv"] = (
        HEADER + "\n" + body(42, 1) + '2026-01-03,tiny,node-a,1.0.0,9,1,2.5,"two\nlines"\n' + body(43, 2)
    )
    files["data/rows/tiny/f25b.csv"] = (
        HEADER + "\n" + body(44, 2) + "2026-01-03,tiny,node-a,1,5\n" + body(45, 1)
    )
    files["data/rows/tiny/f27b.csv"] = (
        HEADER + "\n" + body(46, 2) + "2026-01-03,tiny,node-a,1.0.0,9,1,fast,x\n"
    )
    root = make_site(files)

    rows, problems, row_files = loaded(root)
    expected = [
        (rel, line, {"notes": cells.get("notes", ""), "decode_tok_s": repr(float(cells["decode_tok_s"]))})
        for rel, line, cells in reference(root)
        if cells["decode_tok_s"] != "fast"
    ]
    assert rows == expected
    ragged = "a decimal comma or an unquoted comma splits a cell"
    assert [(p.path, p.line, p.message) for p in problems.errors] == [
        # A carriage return alone ends a line for any CSV reader: "b" is a record of its own.
        ("data/rows/tiny/f15b.csv", 5, f"expected 8 fields (as in the header), found 1; {ragged}"),
        ("data/rows/tiny/f25b.csv", 4, f"expected 8 fields (as in the header), found 5; {ragged}"),
        ("data/rows/tiny/f27b.csv", 4, "decode_tok_s must be a number, not 'fast'"),
    ]
    kept = {item.source.rel for item in row_files if item.source.data is not None}  # type: ignore[attr-defined]
    # Bytes stay only where lines cannot be told without them.
    assert kept == {"data/rows/tiny/f15b.csv", "data/rows/tiny/f20b.csv", "data/rows/tiny/f25b.csv"}


def test_a_file_bigger_than_a_batch_is_parsed_whole(make_site: MakeSite, small_batches: None) -> None:
    root = make_site(
        {
            "data/rows/tiny/2026-01-02-node-a.csv": HEADER + "\n" + body(1, 2),
            "data/rows/tiny/big.csv": HEADER + "\n" + body(2, 60),
            "data/rows/tiny/small.csv": HEADER + "\n" + body(3, 1),
        }
    )
    rows, problems, _ = loaded(root)
    assert not problems.errors
    assert [(rel, line) for rel, line, _ in rows] == [(rel, line) for rel, line, _ in reference(root)]
    assert len(rows) == 63


def test_one_bad_file_sends_only_its_batch_down_the_careful_path(
    make_site: MakeSite, small_batches: None
) -> None:
    files: dict[str, str | bytes] = {
        f"data/rows/tiny/f{i:02d}.csv": HEADER + "\n" + body(i, 3) for i in range(20)
    }
    files["data/rows/tiny/f10.csv"] = (
        HEADER + "\n" + body(10, 1)
    ).encode() + b"2026-01-03,tiny,node-a,1.0.0,9,1,1.5,caf\xe9\n"
    root = make_site(files)
    rows, problems, row_files = loaded(root)
    assert [(p.path, p.line) for p in problems.errors] == [("data/rows/tiny/f10.csv", 3)]
    assert "not valid UTF-8" in problems.errors[0].message
    assert [(rel, line) for rel, line, _ in rows] == [(rel, line) for rel, line, _ in reference(root)]
    assert {rel for rel, _, _ in rows} >= {f"data/rows/tiny/f{i:02d}.csv" for i in range(20) if i != 10}
    assert not any(item.source.data for item in row_files if item.source.rel != "data/rows/tiny/f10.csv")

"""Rows in DuckDB are exactly the rows in the files: nothing dropped, coerced or rounded."""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path

import pytest

from builder.config import load_config
from builder.content.models import ROW_SCHEMA
from builder.data.load import load_site
from builder.errors import Problems
from builder.review.check import check_site
from tests.conftest import REPO, SITES, MakeSite

HEADER = "date,recipe,node,engine_version,prompt_tokens,concurrency,decode_tok_s,prefill_tok_s,notes"


def _load(root: Path):  # type: ignore[no-untyped-def]
    problems = Problems()
    site = load_site(load_config(root), problems)
    return site, problems


def _expected_from_files(root: Path) -> list[dict[str, object]]:
    """Parse every row file independently with the csv/json modules (the reference reader)."""
    out: list[dict[str, object]] = []
    for path in sorted((root / "data" / "rows").rglob("*")):
        if path.suffix == ".csv":
            text = path.read_text(encoding="utf-8-sig")
            out.extend(csv.DictReader(io.StringIO(text, newline="")))
        elif path.suffix == ".jsonl":
            out.extend(
                json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()
            )
    return out


def _normalise_file_row(row: dict[str, object]) -> dict[str, object]:
    norm: dict[str, object] = {}
    for key, value in row.items():
        column = ROW_SCHEMA[key]
        if value in ("", None, *column.words):
            continue
        if column.kind == "integer":
            norm[key] = int(value)  # type: ignore[arg-type]
        elif column.kind == "number":
            norm[key] = float(value)  # type: ignore[arg-type]
        else:
            norm[key] = str(value)
    for column in ROW_SCHEMA.values():
        if column.empty is not None:
            norm.setdefault(column.name, column.empty)
    return norm


def _normalise_db_row(row: dict[str, object]) -> dict[str, object]:
    skip = {"row_id", "file_id", "file_row"}
    norm = {k: v for k, v in row.items() if k not in skip and v is not None}
    norm["date"] = norm["date"].isoformat()  # type: ignore[union-attr]
    return norm


def _assert_db_equals_files(root: Path) -> int:
    site, problems = _load(root)
    assert not problems.errors, [p.format() for p in problems.errors]
    db = sorted(
        (_normalise_db_row(r) for r in site.rows.to_pylist()), key=lambda r: json.dumps(r, sort_keys=True)
    )
    files = sorted(
        (_normalise_file_row(r) for r in _expected_from_files(root)),
        key=lambda r: json.dumps(r, sort_keys=True),
    )
    assert db == files
    return len(db)


@pytest.mark.parametrize("root", [SITES / "minimal", REPO], ids=["minimal", "shipped"])
def test_rows_in_duckdb_equal_rows_in_files(root: Path) -> None:
    assert _assert_db_equals_files(root) > 0


def test_bom_and_crlf_load(make_site: MakeSite) -> None:
    data = ("\ufeff" + HEADER + "\r\n2026-01-03,tiny,node-a,1.0.0,512,1,50.5,,crlf row\r\n").encode()
    root = make_site({"data/rows/tiny/bom.csv": data})
    assert _assert_db_equals_files(root) == 3


def test_single_row_file_is_not_lost(make_site: MakeSite) -> None:
    # DuckDB's sniffer can return no rows for tiny files; our reader must not.
    root = make_site({"data/rows/tiny/one.csv": HEADER + "\n2026-01-03,tiny,node-a,1.0.0,1,1,0.5,,\n"})
    site, _ = _load(root)
    assert site.rows.num_rows == 3


def test_late_float_in_integer_looking_column_is_kept_exactly(make_site: MakeSite) -> None:
    lines = [HEADER] + [f"2026-01-03,tiny,node-a,1.0.0,512,1,{i},{i}," for i in range(1, 3000)]
    lines.append("2026-01-03,tiny,node-a,1.0.0,512,1,42.123456789012345,5872.75,")
    root = make_site({"data/rows/tiny/many.csv": "\n".join(lines) + "\n"})
    site, problems = _load(root)
    assert not problems.errors
    values = site.con.execute(
        "SELECT decode_tok_s, prefill_tok_s FROM rows ORDER BY row_id DESC LIMIT 1"
    ).fetchone()
    assert values == (42.123456789012345, 5872.75)
    _assert_db_equals_files(root)


def test_25k_row_file_with_one_bad_value_near_its_end(make_site: MakeSite) -> None:
    lines = [HEADER] + [f"2026-01-03,tiny,node-a,1.0.0,{512 + i},1,{40 + i / 1000},," for i in range(25_000)]
    lines[24_990] = "2026-01-03,tiny,node-a,1.0.0,512,1,41.5x,,"
    root = make_site({"data/rows/tiny/big.csv": "\n".join(lines) + "\n"})
    report = check_site(load_config(root))
    assert [p.format() for p in report.errors] == [
        "data/rows/tiny/big.csv:24991: decode_tok_s must be a number, not '41.5x'"
    ]
    # every other row is loaded, none coerced
    assert report.stats["rows"] == 2 + 24_999


def test_quoted_cells_keep_commas_quotes_and_newlines(make_site: MakeSite) -> None:
    text = (
        "date,recipe,node,engine_version,prompt_tokens,concurrency,decode_tok_s,flags,notes\n"
        '2026-01-03,tiny,node-a,1.0.0,512,1,50.5,"--speculative-config \'{""method"":""mtp""}\'","a, b\nc"\n'
    )
    root = make_site({"data/rows/tiny/q.csv": text})
    site, problems = _load(root)
    assert not problems.errors
    row = site.con.execute("SELECT flags, notes FROM rows WHERE notes IS NOT NULL").fetchone()
    assert row == ('--speculative-config \'{"method":"mtp"}\'', "a, b\nc")


def test_jsonl_rows_load_exactly(make_site: MakeSite) -> None:
    objs = [
        {
            "date": "2026-01-03",
            "recipe": "tiny",
            "node": "node-a",
            "engine_version": "1.0.0",
            "prompt_tokens": 512,
            "concurrency": 4,
            "aggregate_tok_s": 322.05,
            "notes": "</script>",
        },
        {
            "date": "2026-01-04",
            "recipe": "tiny",
            "node": "node-a",
            "engine_version": "1.0.0",
            "prompt_tokens": "unknown",
            "concurrency": 1,
            "decode_tok_s": 1e-7,
            "ttft_ms": None,
        },
    ]
    root = make_site({"data/rows/tiny/r.jsonl": "\n".join(json.dumps(o) for o in objs) + "\n"})
    assert _assert_db_equals_files(root) == 4


def test_unknown_prompt_length_is_null_not_zero(make_site: MakeSite) -> None:
    root = make_site({"data/rows/tiny/u.csv": HEADER + "\n2026-01-03,tiny,node-a,1.0.0,unknown,1,50.5,,\n"})
    site, problems = _load(root)
    assert not problems.errors
    assert site.con.execute("SELECT count(*) FROM rows WHERE prompt_tokens IS NULL").fetchone() == (1,)


def test_metrics_are_never_rounded(make_site: MakeSite) -> None:
    values = ["0.1", "76.80", "1e3", "5872", "0.30000000000000004", ".5"]
    lines = [HEADER] + [f"2026-01-03,tiny,node-a,1.0.0,512,1,{v},," for v in values]
    root = make_site({"data/rows/tiny/f.csv": "\n".join(lines) + "\n"})
    site, problems = _load(root)
    assert not problems.errors
    got = [
        r[0]
        for r in site.con.execute(
            "SELECT decode_tok_s FROM rows WHERE file_id = 1 ORDER BY file_row"
        ).fetchall()
    ]
    assert got == [float(v) for v in values]
    assert all(math.isfinite(g) for g in got)


OPEN = (
    "date,time,recipe,node,engine_version,prompt_tokens,concurrency,request_rate,burstiness,aggregate_tok_s"
)


def test_open_loop_rows_load_with_their_rate_and_bad_ones_are_reported(make_site: MakeSite) -> None:
    text = (
        OPEN + "\n"
        "2026-01-03,09:30,tiny,node-a,1.0.0,512,,inf,1,900.5\n"  # line 2: unlimited rate, no cap
        "2026-01-03,,tiny,node-a,1.0.0,512,25,1.5,,300\n"  # capped at 25
        "2026-01-03,,tiny,node-a,1.0.0,512,,INF,,300\n"
        "2026-01-03,24:00,tiny,node-a,1.0.0,512,,0,0,300\n"  # line 5
        "2026-01-03,,tiny,node-a,1.0.0,512,,,,300\n"  # line 6: neither
        "2026-01-03,,tiny,node-a,1.0.0,512,1,Infinity,,300\n"  # line 7
    )
    root = make_site({"data/rows/tiny/open.csv": text})
    site, problems = _load(root)
    assert sorted(p.format() for p in problems.errors) == [
        "data/rows/tiny/open.csv:5: burstiness must be a number > 0, not '0'",
        "data/rows/tiny/open.csv:5: request_rate must be a number > 0 or inf, not '0'",
        "data/rows/tiny/open.csv:5: time must be HH:MM (00:00 to 23:59), not '24:00'",
        "data/rows/tiny/open.csv:6: missing value for concurrency (required unless request_rate gives an open-loop run)",
        "data/rows/tiny/open.csv:7: request_rate must be a number > 0 or inf, not 'Infinity'",
    ]
    got = site.con.execute(
        "SELECT time, concurrency, request_rate, burstiness FROM rows WHERE file_id = 1 ORDER BY file_row"
    ).fetchall()
    assert got == [("09:30", None, math.inf, 1.0), (None, 25, 1.5, None), (None, None, math.inf, None)]


def test_jsonl_takes_inf_as_a_rate(make_site: MakeSite) -> None:
    base = {"date": "2026-01-03", "recipe": "tiny", "node": "node-a", "engine_version": "1.0.0"}
    objs = [
        {**base, "prompt_tokens": 512, "request_rate": "inf", "ttft_ms": 50.0},
        {**base, "prompt_tokens": 512, "request_rate": "fast", "ttft_ms": 50.0},
    ]
    root = make_site({"data/rows/tiny/r.jsonl": "\n".join(json.dumps(o) for o in objs) + "\n"})
    site, problems = _load(root)
    assert [p.format() for p in problems.errors] == [
        'data/rows/tiny/r.jsonl:2: \'request_rate\' must be a number or "inf", not "fast"',
    ]
    assert site.con.execute("SELECT request_rate FROM rows WHERE file_id = 1").fetchall() == [(math.inf,)]


def test_a_spread_needs_its_metric(make_site: MakeSite) -> None:
    text = (
        "date,recipe,node,engine_version,prompt_tokens,concurrency,decode_tok_s,decode_tok_s_sd,ttft_ms,repetitions\n"
        "2026-01-03,tiny,node-a,1.0.0,512,1,50.5,1.25,,3\n"
        "2026-01-03,tiny,node-a,1.0.0,512,1,,1.25,80,3\n"
    )
    root = make_site({"data/rows/tiny/sd.csv": text})
    site, problems = _load(root)
    assert [p.format() for p in problems.errors] == [
        "data/rows/tiny/sd.csv:3: decode_tok_s_sd is given without decode_tok_s: "
        "a spread needs the mean it is the spread of"
    ]
    got = site.con.execute(
        "SELECT decode_tok_s, decode_tok_s_sd, repetitions FROM rows WHERE file_id = 1"
    ).fetchall()
    assert got == [(50.5, 1.25, 3)]

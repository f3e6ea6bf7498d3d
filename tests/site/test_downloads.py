"""Downloads and the JSON API: every row in every format, matching the rows and their statuses."""

from __future__ import annotations

import csv
import io
import json
import struct
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from builder.config import load_config
from builder.engine.incremental import build
from builder.engine.pipeline import Loaded, load_and_reconcile
from builder.site.downloads import (
    EXPORT_COLUMNS,
    _duckdb_checksum,
    duckdb_file,
    export_rows,
    pin_duckdb_identifier,
)
from tests.conftest import REPO, MakeSite


@pytest.fixture(scope="module")
def loaded() -> Loaded:
    result = load_and_reconcile(load_config(REPO))
    assert not result.problems and result.recon is not None
    return result


@pytest.fixture(scope="module")
def builds(shipped_site: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Two independent full builds: the shared one, and one of this module's own."""
    other = tmp_path_factory.mktemp("downloads") / "b"
    build(load_config(REPO, other), cache=False)
    return shipped_site, other


def _expected(loaded: Loaded) -> list[dict[str, Any]]:
    assert loaded.recon is not None
    return export_rows(loaded.site, loaded.recon).to_pylist()


def test_csv_holds_every_row_with_its_status(builds: tuple[Path, Path], loaded: Loaded) -> None:
    text = (builds[0] / "data/rows.csv").read_text(encoding="utf-8")
    records = list(csv.DictReader(io.StringIO(text)))
    expected = _expected(loaded)
    assert len(records) == loaded.site.rows.num_rows == len(expected)
    assert list(records[0]) == list(EXPORT_COLUMNS)
    assert loaded.recon is not None
    for got, want in zip(records, expected, strict=True):
        assert int(got["row_id"]) == want["row_id"]
        assert got["recipe"] == want["recipe"] and got["date"] == want["date"].isoformat()
        assert got["status"] == loaded.recon.status(want["row_id"]).status
        for metric in ("decode_tok_s", "prefill_tok_s", "aggregate_tok_s"):
            assert (float(got[metric]) if got[metric] else None) == want[metric]
        assert got["notes"] == (want["notes"] or "")
        # the source line points at the row in its file
        lines = (REPO / got["source_file"]).read_text(encoding="utf-8").splitlines()
        assert got["date"] in lines[int(got["source_line"]) - 1]


def test_parquet_equals_the_export_table(builds: tuple[Path, Path], loaded: Loaded) -> None:
    table = pq.read_table(builds[0] / "data/rows.parquet")
    assert table.column_names == list(EXPORT_COLUMNS)
    assert table.to_pylist() == _expected(loaded)


def test_duckdb_file_has_rows_recipes_and_nodes(builds: tuple[Path, Path], loaded: Loaded) -> None:
    con = duckdb.connect(str(builds[0] / "data/recipes.duckdb"), read_only=True)
    try:
        tables = {name for (name,) in con.execute("SHOW TABLES").fetchall()}
        assert {"rows", "recipes", "nodes"} <= tables
        got = con.sql("SELECT * FROM rows ORDER BY row_id").to_arrow_table().to_pylist()
        assert got == _expected(loaded)
        recipes = [r for (r,) in con.execute("SELECT slug FROM recipes ORDER BY slug").fetchall()]
        assert recipes == sorted(loaded.site.recipes)
        nodes = con.execute("SELECT id, hardware FROM nodes ORDER BY id").fetchall()
        assert nodes == sorted((k, n.hardware) for k, n in loaded.site.nodes.items())
    finally:
        con.close()


def test_recipe_documents_match_rows_statuses_and_findings(builds: tuple[Path, Path], loaded: Loaded) -> None:
    recon = loaded.recon
    assert recon is not None
    by_recipe: dict[str, list[dict[str, Any]]] = {}
    for row in _expected(loaded):
        by_recipe.setdefault(row["recipe"], []).append(row)
    index = json.loads((builds[0] / "api/index.json").read_text(encoding="utf-8"))
    assert [r["slug"] for r in index["recipes"]] == sorted(loaded.site.recipes)
    for entry in index["recipes"]:
        slug = entry["slug"]
        assert entry["api"] == f"https://example.org/api/recipes/{slug}.json"
        doc = json.loads((builds[0] / f"api/recipes/{slug}.json").read_text(encoding="utf-8"))
        assert doc["slug"] == slug and doc["meta"]["title"] == loaded.site.recipes[slug].meta.title
        rows = by_recipe.get(slug, [])
        assert entry["rows"] == len(doc["rows"]) == len(rows)
        for got, want in zip(doc["rows"], rows, strict=True):
            # Documents name rows by source, not by the build-wide row id (it shifts with other files).
            assert "row_id" not in got
            assert (got["source_file"], got["source_line"]) == (want["source_file"], want["source_line"])
            assert got["decode_tok_s"] == want["decode_tok_s"]
            assert got["date"] == want["date"].isoformat()
            status = recon.status(want["row_id"])
            assert got["status"]["status"] == status.status
            assert [d["field"] for d in got["status"]["differences"]] == [d.field for d in status.differences]
        assert doc["findings"] == [f.as_json() for f in recon.findings_for(slug)]
        assert entry["findings"] == len(doc["findings"])
        assert all(q["url"].startswith(f"https://example.org/recipes/{slug}/#faq-") for q in doc["faq"])


def test_whole_site_with_downloads_and_search_is_byte_identical_across_builds(
    builds: tuple[Path, Path],
) -> None:
    a, b = builds
    files = sorted(p.relative_to(a).as_posix() for p in a.rglob("*") if p.is_file())
    assert "data/recipes.duckdb" in files and "data/rows.parquet" in files
    different = [rel for rel in files if (a / rel).read_bytes() != (b / rel).read_bytes()]
    assert different == []


def test_duckdb_identifier_is_pinned_and_checksummed() -> None:
    table = pa.table({"x": [1, 2, 3]})
    one, two = duckdb_file({"t": table}), duckdb_file({"t": table})
    assert one == two
    (stored,) = struct.unpack_from("<Q", one, 0)
    assert stored == _duckdb_checksum(one[8:4096])


def test_pinning_leaves_unknown_or_corrupt_headers_alone() -> None:
    assert pin_duckdb_identifier(b"not a database") == b"not a database"
    fake = bytearray(8192)
    fake[8:12] = b"DUCK"  # magic right, checksum wrong: not a header we understand
    assert pin_duckdb_identifier(bytes(fake)) == bytes(fake)


def test_duckdb_file_is_reproducible_across_row_groups() -> None:
    """Several row groups (122,880 rows each): written in parallel their order would vary."""
    n = 250_000
    table = pa.table(
        {"i": pa.array(range(n), pa.int64()), "s": pa.array([f"row {i * 7919 % n}" for i in range(n)])}
    )
    assert duckdb_file({"rows": table}) == duckdb_file({"rows": table})


def test_an_unlimited_rate_round_trips_in_every_download(make_site: MakeSite, tmp_path: Path) -> None:
    rows = (
        "date,recipe,node,engine_version,prompt_tokens,concurrency,request_rate,aggregate_tok_s,ttft_p99_ms,"
        "aggregate_tok_s_sd,repetitions\n"
        "2026-01-03,tiny,node-a,1.0.0,512,,inf,900.5,88.25,3.5,3\n"
        "2026-01-03,tiny,node-a,1.0.0,512,25,1.5,300,,,\n"
    )
    root = make_site({"data/rows/tiny/open.csv": rows})
    out = tmp_path / "out"
    build(load_config(root, out), cache=False)
    records = [
        r for r in csv.DictReader(io.StringIO((out / "data/rows.csv").read_text())) if r["request_rate"]
    ]
    assert [(r["concurrency"], r["request_rate"], r["ttft_p99_ms"], r["repetitions"]) for r in records] == [
        ("", "inf", "88.25", "3"),
        ("25", "1.5", "", ""),
    ]
    parquet = pq.read_table(out / "data/rows.parquet").to_pylist()
    assert sorted(r["request_rate"] for r in parquet if r["request_rate"] is not None) == [1.5, float("inf")]
    con = duckdb.connect(str(out / "data/recipes.duckdb"), read_only=True)
    try:
        assert con.execute("SELECT count(*) FROM rows WHERE isinf(request_rate)").fetchall() == [(1,)]
    finally:
        con.close()
    doc = json.loads((out / "api/recipes/tiny.json").read_text(encoding="utf-8"))
    open_rows = [r for r in doc["rows"] if r["request_rate"] is not None]
    assert [(r["request_rate"], r["aggregate_tok_s_sd"]) for r in open_rows] == [("inf", 3.5), (1.5, None)]

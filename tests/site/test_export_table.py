"""The export table: every row's status and source line, taken in bulk, equal to asking row by row."""

from __future__ import annotations

from builder.analysis.reconcile import RowStatus
from builder.config import load_config
from builder.engine.pipeline import load_and_reconcile
from builder.site.export_table import export_table
from tests.conftest import MakeSite

HEADER = "date,recipe,node,engine_version,prompt_tokens,concurrency,decode_tok_s,flags,notes\n"
# A cell over two lines, a blank-free quoted cell, and rows after them: lines are not row + 2.
MULTILINE = (
    HEADER
    + '2026-01-03,tiny,node-a,1.0.0,512,1,11.5,,"two\nlines"\n'
    + '2026-01-03,tiny,node-a,1.0.0,512,2,12.5,"--a 1",x\n'
    + "2026-01-03,tiny,node-a,1.0.0,512,4,13.5,,y\n"
)


def test_statuses_and_lines_match_row_by_row_lookups(make_site: MakeSite) -> None:
    root = make_site({"data/rows/tiny/2026-01-03-multi.csv": MULTILINE})
    loaded = load_and_reconcile(load_config(root))
    assert not loaded.problems and loaded.recon is not None
    site, recon = loaded.site, loaded.recon
    export = export_table(site, recon, None)
    rows = site.rows.select(["row_id", "file_id", "file_row"]).to_pylist()
    table = export.table.to_pylist()
    assert [r["row_id"] for r in table] == sorted(r["row_id"] for r in rows)
    for got, row in zip(table, sorted(rows, key=lambda r: r["row_id"]), strict=True):
        parsed = site.row_files[row["file_id"]]
        assert got["source_file"] == parsed.source.rel
        assert got["source_line"] == parsed.line_of(row["file_row"])
        assert got["status"] == recon.status(row["row_id"]).status
    multi = [r["source_line"] for r in table if r["source_file"].endswith("multi.csv")]
    assert multi == [2, 4, 5]


def test_statuses_set_one_by_one_take_precedence(make_site: MakeSite) -> None:
    loaded = load_and_reconcile(load_config(make_site()))
    assert loaded.recon is not None
    recon = loaded.recon
    first = loaded.site.rows.column("row_id")[0].as_py()
    recon.statuses[first] = RowStatus("differs", (), ("flags",))
    export = export_table(loaded.site, recon, None)
    by_id = {r["row_id"]: r for r in export.table.to_pylist()}
    assert by_id[first]["status"] == "differs" and by_id[first]["unrecorded"] == "flags"
    assert export.kinds[int(export.codes[0])] is recon.statuses[first]
    assert all(by_id[i]["status"] == recon.status(i).status for i in by_id)


def test_a_subset_of_recipes(make_site: MakeSite) -> None:
    loaded = load_and_reconcile(load_config(make_site()))
    assert loaded.recon is not None
    full = export_table(loaded.site, loaded.recon, None)
    assert export_table(loaded.site, loaded.recon, ["tiny"]).table.equals(full.table)
    assert full.of(["tiny"]).table.equals(full.table)
    assert export_table(loaded.site, loaded.recon, ["nothing"]).table.num_rows == 0
    assert full.of(["nothing"]).table.num_rows == 0

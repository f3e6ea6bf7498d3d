"""The data behind the site, as files: every row as CSV, Parquet and a DuckDB database, and a
small static JSON API (``/api/index.json``, ``/api/recipes/<slug>.json``).

All of it is built from one Arrow table (:func:`export_rows`) so the formats cannot disagree, and
all of it is byte-deterministic for the same input:

* CSV and JSON are plain text written in row-id order with stable key order.
* Parquet is written by pyarrow with fixed options; it stores no timestamp.
* A DuckDB database file is written by one thread (with several, row groups land in the order
  they finish). It also carries a random 16-byte database identifier in its main header (used for
  encryption and to pair a write-ahead log with its database): we replace it with bytes derived
  from the file's content and recompute the header checksum, after checking that the header is
  the layout we know (:func:`pin_duckdb_identifier`). If a future DuckDB changes that layout the
  file is shipped as written, still valid but no longer byte-identical across builds. The file
  uses the storage format of the DuckDB that builds it (2.x here), so older DuckDB releases cannot
  open it; DuckDB's v1.0 compatibility format is not byte-reproducible for large tables even
  with one thread, so it is not used.
"""

from __future__ import annotations

import hashlib
import io
import json
import struct
import tempfile
from collections.abc import Collection, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from builder.analysis.reconcile import Reconciliation, RowStatus
from builder.content.markdown import Markdown
from builder.content.models import ROW_SCHEMA, Row
from builder.content.shell import shell_command
from builder.data.load import Site
from builder.site.arrowjson import json_array_pieces, json_values
from builder.site.context import PageJob, RenderContext
from builder.site.export_table import Export, export_table
from builder.site.export_table import export_rows as export_rows  # the table the downloads are made from
from builder.site.feeds import NEWS_FEED
from builder.site.units import Batch, Files, Unit
from builder.site.views import ROW_COLUMNS, case_studies_by_recipe, recipe_command

API_VERSION = 1
"""Bumped when a field of the JSON API changes meaning or disappears (additions keep it)."""
ROWS_CSV = "data/rows.csv"
ROWS_PARQUET = "data/rows.parquet"
DUCKDB_FILE = "data/recipes.duckdb"
API_INDEX = "api/index.json"
STATUS_COLUMNS = ("status", "differences", "unrecorded", "source_file", "source_line")
EXPORT_COLUMNS = (*ROW_COLUMNS, *STATUS_COLUMNS)


def recipe_api_path(slug: str) -> str:
    return f"api/recipes/{slug}.json"


def recipes_table(site: Site) -> pa.Table:
    """One row per recipe: its front matter as columns (``env`` as JSON text)."""
    records = []
    for slug in sorted(site.recipes):
        meta = site.recipes[slug].meta
        records.append(
            {
                "slug": slug,
                "title": meta.title,
                "model": meta.model,
                "checkpoint": meta.checkpoint,
                "hardware": meta.hardware,
                "engine": meta.engine,
                "engine_version": meta.engine_version,
                "flags": meta.flags,
                "env": json.dumps(meta.env, sort_keys=True),
                "verified": meta.verified,
                "summary": meta.summary,
                "contributors": list(meta.contributors),
                "tags": list(meta.tags),
                "url": f"{site.config.settings.base_url}recipes/{slug}/",
            }
        )
    schema = pa.schema(
        [
            ("slug", pa.string()),
            ("title", pa.string()),
            ("model", pa.string()),
            ("checkpoint", pa.string()),
            ("hardware", pa.string()),
            ("engine", pa.string()),
            ("engine_version", pa.string()),
            ("flags", pa.string()),
            ("env", pa.string()),
            ("verified", pa.date32()),
            ("summary", pa.string()),
            ("contributors", pa.list_(pa.string())),
            ("tags", pa.list_(pa.string())),
            ("url", pa.string()),
        ]
    )
    return pa.Table.from_pylist(records, schema=schema)


def nodes_table(site: Site) -> pa.Table:
    ids = sorted(site.nodes)
    return pa.table(
        {
            "id": pa.array(ids, pa.string()),
            "hardware": pa.array([site.nodes[i].hardware for i in ids], pa.string()),
            "hardware_name": pa.array([site.hardware_name(site.nodes[i].hardware) for i in ids], pa.string()),
            "description": pa.array([site.nodes[i].description for i in ids], pa.string()),
            "driver": pa.array([site.nodes[i].driver for i in ids], pa.string()),
        }
    )


def rows_csv(table: pa.Table) -> bytes:
    import pyarrow.csv as pacsv  # here, as Parquet below: a build that reuses the downloads needs neither

    sink = io.BytesIO()
    pacsv.write_csv(table, sink, pacsv.WriteOptions(include_header=True, quoting_style="needed"))
    return sink.getvalue()


def rows_parquet(table: pa.Table) -> bytes:
    import pyarrow.parquet as pq  # a slow import (pyarrow.fs with it): only when Parquet is written

    sink = io.BytesIO()
    pq.write_table(table, sink, compression="zstd", compression_level=9, write_statistics=True)
    return sink.getvalue()


_DUCKDB_MAGIC = b"DUCK"
_DUCKDB_HEADER = 4096
_DUCKDB_ID = slice(124, 140)
"""Main header: checksum (8), magic (4), version (8), flags (32), git desc (32), git hash (32),
encryption metadata (8), then the 16-byte database identifier."""


def _duckdb_checksum(buffer: bytes) -> int:
    """DuckDB's block checksum: 5381 xor the product of each little-endian 64-bit word."""
    result = 5381
    for (word,) in struct.iter_unpack("<Q", buffer):
        result ^= (word * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
    return result


def pin_duckdb_identifier(data: bytes) -> bytes:
    """Replace the random database identifier with one derived from the content.

    Returns ``data`` unchanged unless the main header is the layout described above and its
    stored checksum verifies, so an unknown format is never rewritten.
    """
    if len(data) < _DUCKDB_HEADER or data[8:12] != _DUCKDB_MAGIC:
        return data
    (stored,) = struct.unpack_from("<Q", data, 0)
    if _duckdb_checksum(data[8:_DUCKDB_HEADER]) != stored:
        return data
    identifier = hashlib.sha256(data[_DUCKDB_HEADER:]).digest()[:16]
    header = bytearray(data[:_DUCKDB_HEADER])
    header[_DUCKDB_ID] = identifier
    struct.pack_into("<Q", header, 0, _duckdb_checksum(bytes(header[8:])))
    return bytes(header) + data[_DUCKDB_HEADER:]


def duckdb_file(tables: dict[str, pa.Table]) -> bytes:
    """A DuckDB database holding ``tables``, as bytes (written in a scratch folder, then read)."""
    import duckdb  # here: a build that writes no DuckDB file need not load it

    with tempfile.TemporaryDirectory(prefix="llm-recipes-duckdb-") as scratch:
        # The catalog is named after the file, so the name is fixed: it is part of the bytes.
        path = Path(scratch) / "recipes.duckdb"
        # One thread: with several, row groups are written in whatever order they finish, and
        # the file's bytes change from build to build.
        con = duckdb.connect(str(path), config={"threads": 1})
        try:
            for name, table in tables.items():
                con.register("_export", table)
                con.execute(f'CREATE TABLE "{name}" AS SELECT * FROM _export')
                con.unregister("_export")
            con.execute("CHECKPOINT")
        finally:
            con.close()
        return pin_duckdb_identifier(path.read_bytes())


def _json(value: Any) -> bytes:
    # Compact: with ``indent`` the json module falls back from its C encoder to pure Python, which
    # is far slower on big documents.
    return (json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False) + "\n").encode()


def _status_json(status: RowStatus) -> dict[str, Any]:
    return {
        "status": status.status,
        "differences": [
            {"field": d.field, "row_value": d.row_value, "recipe_value": d.recipe_value}
            for d in status.differences
        ],
        "unrecorded": list(status.unrecorded),
    }


def _rows_json(export: Export) -> Iterator[tuple[str, list[memoryview]]]:
    """Each recipe's rows as the pieces of one JSON array (dates as ISO text), each row with its
    status object (see :func:`builder.site.arrowjson.json_array_pieces`).

    The row id is a position in the whole build: any earlier file shifts it, so a recipe's document
    would change with every other recipe's rows. Rows are named by source_file and source_line here
    (the CSV, Parquet and DuckDB exports keep row_id).
    """
    table, kinds, codes = export
    rows = table.select([*(c for c in ROW_COLUMNS if c != "row_id"), "source_file", "source_line"])
    rows = rows.set_column(
        rows.schema.get_field_index("date"), "date", pc.cast(rows.column("date"), pa.string())
    )
    # Statuses are shared by every row of one metadata combination: each is written once.
    statuses = pa.array([_json(_status_json(k))[:-1].decode() for k in kinds], pa.string())
    rows = rows.append_column("status", pc.take(statuses, pa.array(codes)))
    raw = {"status"}
    for column in ROW_SCHEMA.values():
        if column.infinite:  # JSON has no infinity: an unlimited rate is written "inf", as rows take it
            rows = rows.set_column(
                rows.schema.get_field_index(column.name),
                column.name,
                _infinite_json(rows.column(column.name)),
            )
            raw.add(column.name)
    return json_array_pieces(rows, table.column("recipe"), raw=raw)


def _infinite_json(column: pa.ChunkedArray) -> pa.Array:
    """JSON text of a number column that takes ``inf``: numbers as numbers, infinity as ``"inf"``."""
    values = column.combine_chunks()
    infinite = pc.fill_null(pc.is_inf(values), False)
    finite = pc.if_else(infinite, pa.scalar(None, values.type), values)
    return pc.if_else(infinite, '"inf"', json_values(finite))


def recipe_document(
    site: Site, recon: Reconciliation, slug: str, markdown: Markdown, cases: dict[str, list[tuple[Any, str]]]
) -> dict[str, Any]:
    """The JSON document of one recipe without its rows: metadata, FAQ, case studies, findings."""
    base = site.config.settings.base_url
    recipe = site.recipes[slug]
    meta = recipe.meta
    faq = markdown.render(recipe.doc, faq=True).faq
    return {
        "api_version": API_VERSION,
        "slug": slug,
        "url": f"{base}recipes/{slug}/",
        "meta": meta.model_dump(mode="json"),
        "hardware_name": site.hardware_name(meta.hardware),
        "serve_command": recipe_command(recipe),
        "faq": [
            {
                "question": q.question,
                "url": f"{base}recipes/{slug}/#{q.anchor}",
                "answer_text": q.answer_text,
            }
            for q in faq
        ],
        "case_studies": [
            {
                "slug": c.slug,
                "title": c.meta.title,
                "role": role,
                "verdict": c.meta.verdict,
                "url": f"{base}case-studies/{c.slug}/",
            }
            for c, role in cases.get(slug, [])
        ],
        "findings": [f.as_json() for f in recon.findings_for(slug)],
    }


def recipe_documents(
    site: Site, recon: Reconciliation, markdown: Markdown, only: Collection[str] | None = None
) -> dict[str, bytes]:
    """The JSON text of every recipe's document (in ``only``), ``rows`` (with status) last.

    The documents read those recipes and their rows (:meth:`Site.recipe_rows`), nothing of another
    recipe's rows. The rows are written from Arrow (:mod:`builder.site.arrowjson`), all the
    documents' at once, and spliced in: the text is what ``_json`` gives for the whole document,
    without a Python object per row.
    """
    slugs = sorted(site.recipes if only is None else only)
    export = export_table(site.recipe_rows(slugs), recon, None)
    cases = case_studies_by_recipe(site)
    # ``{...}\n`` → ``{...,"rows":[...]}\n``: rows is the last key. Each document is joined as soon
    # as its recipe's rows are written, so no other copy of the rows' text is kept.
    heads = {slug: _json(recipe_document(site, recon, slug, markdown, cases))[:-2] for slug in slugs}
    docs: dict[str, bytes] = {}
    for slug, pieces in _rows_json(export):
        docs[slug] = b"".join((heads[slug], b',"rows":[', *pieces, b"]}\n"))
    return {slug: docs[slug] if slug in docs else heads[slug] + b',"rows":[]}\n' for slug in slugs}


def api_index(site: Site, recon: Reconciliation) -> dict[str, Any]:
    base = site.config.settings.base_url
    # From the Arrow rows, not DuckDB: the output stages may run beside the render, which queries it.
    tally = pc.value_counts(site.rows.column("recipe")) if site.rows.num_rows else []
    counts = {item["values"].as_py(): item["counts"].as_py() for item in tally}
    findings = {slug: pair[0] for slug, pair in recon.finding_counts_by_recipe().items()}
    recipes = []
    for slug in sorted(site.recipes):
        meta = site.recipes[slug].meta
        recipes.append(
            {
                "slug": slug,
                "title": meta.title,
                "model": meta.model,
                "hardware": meta.hardware,
                "engine": meta.engine,
                "engine_version": meta.engine_version,
                "url": f"{base}recipes/{slug}/",
                "api": base + recipe_api_path(slug),
                "rows": counts.get(slug, 0),
                "findings": findings.get(slug, 0),
            }
        )
    return {
        "api_version": API_VERSION,
        "site": {"title": site.config.settings.title, "base_url": base},
        "downloads": {
            "rows_csv": base + ROWS_CSV,
            "rows_parquet": base + ROWS_PARQUET,
            "duckdb": base + DUCKDB_FILE,
        },
        "recipes": recipes,
    }


def download_units(site: Site, recon: Reconciliation, markdown: Markdown) -> list[Unit | Batch]:
    """The site-wide downloads and the API index, as one unit."""

    def site_wide() -> Files:
        table = export_table(site, recon, None).table
        database = duckdb_file({"rows": table, "recipes": recipes_table(site), "nodes": nodes_table(site)})
        return {
            ROWS_CSV: rows_csv(table),
            ROWS_PARQUET: rows_parquet(table),
            DUCKDB_FILE: database,
            API_INDEX: _json(api_index(site, recon)),
        }

    return [Unit("downloads", b"", site_wide)]


def document_units(site: Site, recon: Reconciliation, markdown: Markdown) -> list[Unit | Batch]:
    """Each recipe's API document, as units (made beside the other downloads, on a stage of their own).

    The documents are made in shards: one Arrow pass writes a shard's rows (a pass per document
    costs more than the documents), and a new row file makes its recipe's shard again, not every
    document. A recipe's shard is fixed by its slug; the slugs in a shard are its digest.
    """
    shards: dict[str, list[str]] = {}
    for slug in sorted(site.recipes):
        shards.setdefault(f"api:{document_shard(slug)}", []).append(slug)

    def documents(names: set[str]) -> Iterator[tuple[str, Files]]:
        for name in sorted(names):
            docs = recipe_documents(site, recon, markdown, shards[name])
            yield name, {recipe_api_path(slug): doc for slug, doc in docs.items()}

    digests = {name: "\0".join(slugs).encode() for name, slugs in shards.items()}
    return [Batch(digests, documents)]


DOCUMENT_SHARDS = 64
"""How many shards the API documents are made in (see :func:`download_units`)."""


def document_shard(slug: str) -> int:
    """The shard a recipe's API document is made in: from its slug alone, so that a recipe added or
    removed leaves every other recipe's shard as it was."""
    return int.from_bytes(hashlib.blake2b(slug.encode(), digest_size=2).digest(), "big") % DOCUMENT_SHARDS


# Columns the build adds, and row fields whose export differs from the row file's spelling.
EXPORT_DOCS: dict[str, tuple[str, str]] = {
    "row_id": (
        "integer",
        "Position of the row in this build (files in path order, then line order); not stable across builds.",
    ),
    "prompt_tokens": (
        "integer",
        "Prompt length in tokens; empty (null) where the source does not give it (`unknown` in the row file).",
    ),
    "context_tokens": (
        "integer",
        "Prefix depth already in context before the prompt; 0 where the row file leaves it empty.",
    ),
    "status": (
        "text",
        "matches, differs or not_recorded: the row against its recipe's engine, version, flags, env and hardware.",
    ),
    "differences": (
        "text",
        "Each recorded value that differs from the recipe, as `field: row value (recipe: value)`, joined by `; `.",
    ),
    "unrecorded": ("text", "Fields the row leaves unrecorded (flags, env, engine_version), joined by `, `."),
    "source_file": ("text", "Row file the row comes from, relative to the repository."),
    "source_line": ("integer", "Physical line of the row in that file (the header is line 1)."),
}


def column_docs() -> list[tuple[str, str, str]]:
    """(column, type, meaning) of every column of the row exports, from the row model's docstrings."""
    from builder.content.docstrings import field_docs

    docs = field_docs(Row)
    out = []
    for name in EXPORT_COLUMNS:
        if name in EXPORT_DOCS:
            kind, text = EXPORT_DOCS[name]
        else:
            kind = ROW_SCHEMA[name].kind
            text = docs.get(name, "").replace("``", "`")
        out.append((name, kind, text))
    return out


TOP_TEN_QUERY = (
    "SELECT recipe, prompt_tokens, concurrency, decode_tok_s\n"
    "  FROM rows WHERE status = 'matches' ORDER BY decode_tok_s DESC LIMIT 10"
)
"""The query the API page shows running on the DuckDB file."""


def render_api_page(ctx: RenderContext) -> bytes:
    import duckdb  # for its version only

    return ctx.page(
        "api.html",
        "api/index.html",
        columns=column_docs(),
        recipes=[ctx.site.recipes[s] for s in sorted(ctx.site.recipes)],
        row_count=ctx.site.rows.num_rows,
        paths={
            "csv": ROWS_CSV,
            "parquet": ROWS_PARQUET,
            "duckdb": DUCKDB_FILE,
            "index": API_INDEX,
            "feed": NEWS_FEED,
        },
        commands={
            "duckdb": shell_command([["duckdb", "recipes.duckdb", "-c", TOP_TEN_QUERY]]),
            "index": shell_command([["curl", "-s", ctx.site.config.settings.base_url + API_INDEX]]),
        },
        recipe_api_path=recipe_api_path,
        api_version=API_VERSION,
        duckdb_version=".".join(duckdb.__version__.split(".")[:2]),
    )


def api_page_jobs(ctx: RenderContext) -> list[PageJob]:
    return [("api/index.html", lambda: render_api_page(ctx))]

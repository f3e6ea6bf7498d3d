"""Small synthetic benchmark histories for the reconcile/findings tests.

Rows are written on top of tests/sites/minimal (recipe ``tiny``: vllm 1.0.0,
``--max-model-len 4096 --kv-cache-dtype fp8``, ``EXAMPLE_ENV=1``, hardware ``test-gpu``). Every
figure here is synthetic.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from builder.analysis.findings import Finding
from builder.config import load_config
from builder.content.models import ROW_FIELDS
from builder.engine.pipeline import Loaded, load_and_reconcile

RECIPE_FLAGS = "--max-model-len 4096 --kv-cache-dtype fp8"
RECIPE_ENV = "EXAMPLE_ENV=1"
NODES = """\
node-a:
  hardware: test-gpu
  description: synthetic test node
node-b:
  hardware: test-gpu
  description: second synthetic node of the same hardware
node-c:
  hardware: other-gpu
  description: synthetic node of other hardware
"""
COLUMNS = ROW_FIELDS


def run(date: str, *values: float, metric: str = "decode_tok_s", **fields: Any) -> list[dict[str, Any]]:
    """One run: a row per trial value of ``metric`` on ``date`` (other fields as keywords)."""
    base: dict[str, Any] = {
        "date": date,
        "recipe": "tiny",
        "node": "node-a",
        "engine_version": "1.0.0",
        "prompt_tokens": 2048,
        "concurrency": 1,
        "context_tokens": 0,
        "flags": RECIPE_FLAGS,
        "env": RECIPE_ENV,
        "source": "synthetic test row",
    }
    base.update(fields)
    return [{**base, metric: value} for value in values]


def history(*runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [row for r in runs for row in r]


def rows_csv(rows: Iterable[dict[str, Any]]) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: ("" if v is None else v) for k, v in row.items()})
    return out.getvalue()


def site_files(rows: Iterable[dict[str, Any]], **extra: str | None) -> dict[str, str | None]:
    files: dict[str, str | None] = {
        "data/rows/tiny/2026-01-02-node-a.csv": None,  # the minimal site's own rows stay out
        "data/nodes.yaml": NODES,
        "data/rows/tiny/synthetic.csv": rows_csv(rows),
    }
    files.update(extra)
    return files


def load(make_site: Callable[..., Path], rows: Iterable[dict[str, Any]], **extra: str | None) -> Loaded:
    loaded = load_and_reconcile(load_config(make_site(site_files(rows, **extra))))
    return loaded


def findings(
    make_site: Callable[..., Path], rows: Iterable[dict[str, Any]], **extra: str | None
) -> list[Finding]:
    loaded = load(make_site, rows, **extra)
    assert not loaded.problems.errors, [p.format() for p in loaded.problems.errors]
    assert loaded.recon is not None
    return loaded.recon.findings


def departing_dates(finding: Finding) -> list[str]:
    return sorted({run.date.isoformat() for run, departs in finding.runs if departs})


def fields_of(items: Iterable[Any]) -> list[str]:
    return [item.field for item in items]

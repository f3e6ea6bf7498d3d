"""Every row reconciled with its recipe's current metadata (builder.reconcile).

Recipe ``tiny`` of the minimal site: vllm 1.0.0, ``--max-model-len 4096 --kv-cache-dtype fp8``,
``EXAMPLE_ENV=1``, hardware ``test-gpu``. Rows are synthetic.
"""

from __future__ import annotations

from typing import Any

import pytest

from builder.reconcile import DIFFERS, MATCHES, NOT_RECORDED, RowStatus
from builder.views import headline, rows_by_recipe
from tests.conftest import MakeSite
from tests.rowsite import history, load, run


def _statuses(make_site: MakeSite, rows: list[dict[str, Any]]) -> list[RowStatus]:
    loaded = load(make_site, rows)
    assert not loaded.problems.errors
    assert loaded.recon is not None
    ids = [i for (i,) in loaded.site.con.execute("SELECT row_id FROM rows ORDER BY file_row").fetchall()]
    return [loaded.recon.status(i) for i in ids]


@pytest.mark.parametrize(
    "fields",
    [
        {},
        {"flags": "--kv-cache-dtype=fp8 --max_model_len=4096"},  # same flags, other spelling and order
        {"engine": "vLLM"},
        {"node": "node-b"},  # another node of the recipe's hardware
    ],
)
def test_matching_rows(make_site: MakeSite, fields: dict[str, Any]) -> None:
    [status] = _statuses(make_site, run("2026-01-01", 50.0, **fields))
    assert status == RowStatus(MATCHES)


@pytest.mark.parametrize(
    ("fields", "differences"),
    [
        ({"engine_version": "1.1.0"}, [("engine_version", "1.1.0", "1.0.0")]),
        ({"flags": "--max-model-len 8192 --kv-cache-dtype fp8"}, [("--max-model-len", "8192", "4096")]),
        (
            {"flags": "--max-model-len 4096 --kv-cache-dtype fp8 --enforce-eager"},
            [("--enforce-eager", "on", "(absent)")],
        ),
        ({"flags": "--max-model-len 4096"}, [("--kv-cache-dtype", "(absent)", "fp8")]),
        ({"env": "EXAMPLE_ENV=2"}, [("env:EXAMPLE_ENV", "2", "1")]),
        ({"env": "EXAMPLE_ENV=1 OTHER=x"}, [("env:OTHER", "x", "(unset)")]),
        ({"node": "node-c"}, [("hardware", "other-gpu", "test-gpu")]),
        ({"engine": "sglang"}, [("engine", "sglang", "vllm")]),
        (
            {"engine_version": "1.1.0", "flags": "--max-model-len 8192 --kv-cache-dtype fp8"},
            [("engine_version", "1.1.0", "1.0.0"), ("--max-model-len", "8192", "4096")],
        ),
    ],
)
def test_differing_rows_list_each_difference(
    make_site: MakeSite, fields: dict[str, Any], differences: list[tuple[str, str, str]]
) -> None:
    [status] = _statuses(make_site, run("2026-01-01", 50.0, **fields))
    assert status.status == DIFFERS
    assert [(d.field, d.row_value, d.recipe_value) for d in status.differences] == differences


@pytest.mark.parametrize(
    ("fields", "unrecorded"),
    [
        ({"flags": None}, ("flags",)),
        ({"env": None}, ("env",)),
        ({"engine_version": "unknown"}, ("engine_version",)),
        ({"flags": None, "env": None}, ("flags", "env")),
    ],
)
def test_rows_that_leave_metadata_unrecorded(
    make_site: MakeSite, fields: dict[str, Any], unrecorded: tuple[str, ...]
) -> None:
    [status] = _statuses(make_site, run("2026-01-01", 50.0, **fields))
    assert status.status == NOT_RECORDED
    assert status.unrecorded == unrecorded


def test_a_recorded_difference_wins_over_unrecorded_fields(make_site: MakeSite) -> None:
    [status] = _statuses(make_site, run("2026-01-01", 50.0, flags=None, engine_version="0.9.0"))
    assert status.status == DIFFERS
    assert status.unrecorded == ("flags",)


def test_headline_comes_only_from_matching_rows(make_site: MakeSite) -> None:
    rows = history(
        run("2026-01-01", 50.0),
        run("2026-03-01", 80.0, flags="--max-model-len 8192 --kv-cache-dtype fp8"),  # newer, off-recipe
    )
    loaded = load(make_site, rows)
    assert loaded.recon is not None
    recipe = loaded.site.recipes["tiny"]
    top = headline(recipe, rows_by_recipe(loaded.site)["tiny"], loaded.recon)
    assert top is not None
    assert top.date.isoformat() == "2026-01-01"
    assert [(label, value) for label, _, value, _ in top.figures] == [("Decode", 50.0)]

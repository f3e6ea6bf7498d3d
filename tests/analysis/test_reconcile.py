"""Every row reconciled with its recipe's current metadata (builder.analysis.reconcile).

Recipe ``tiny`` of the minimal site: vllm 1.0.0, ``--max-model-len 4096 --kv-cache-dtype fp8``,
``EXAMPLE_ENV=1``, hardware ``test-gpu``. Rows are synthetic.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest

from builder.analysis.findings import Finding
from builder.analysis.reconcile import (
    DIFFERS,
    MATCHES,
    NOT_RECORDED,
    RowStatus,
    reconcile_rows,
)
from builder.analysis.run_groups import combinations
from builder.config import load_config
from builder.engine.pipeline import load_with_annotations
from builder.errors import Problems
from builder.review.check import _recipe_shares, converted_findings
from builder.site.views import headline, rows_by_recipe
from tests.conftest import REPO, MakeSite
from tests.rowsite import history, load, run

sys.path.insert(0, str(REPO / "bench"))
import generate  # noqa: E402


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
    top = headline(recipe, rows_by_recipe(loaded.site)["tiny"], loaded.recon, loaded.site.node_hardware())
    assert top is not None
    assert top.date.isoformat() == "2026-01-01"
    assert [(label, value) for label, _, value, _ in top.figures] == [("Decode", 50.0)]


# ------------------------------------------------------------------- findings on several processes


def _generated_site(root: Path) -> Path:
    """A SYNTHETIC site (bench/generate.py): recipes r00007, r00057 and r00107 have a slower run."""
    generate.write_site(root, recipes=110, rows=108, cases=1, posts=1)
    slug = generate.recipe_slug
    annotations = [
        f"- recipe: {slug(7)}\n  status: acknowledged\n  reason: Synthetic, every finding of it.\n",
        f"- recipe: {slug(57)}\n  metric: decode_tok_s\n  status: acknowledged\n  reason: Synthetic.\n",
        # Selects the decode finding again (an error) and the aggregate one (attached).
        f"- recipe: {slug(57)}\n  status: acknowledged\n  reason: Synthetic, overlapping.\n",
        f"- recipe: {slug(1)}\n  status: acknowledged\n  reason: Synthetic, it has no finding.\n",
        f"- recipe: {slug(107)}\n  date: 2024-01-01\n  status: acknowledged\n  reason: No such run.\n",
    ]
    (root / "data" / "annotations.yaml").write_text("".join(annotations), encoding="utf-8")
    return root


def test_findings_split_between_processes_are_the_serial_findings(tmp_path: Path) -> None:
    site, problems, annotations = load_with_annotations(load_config(_generated_site(tmp_path / "site")))
    assert not problems
    serial_problems = Problems()
    expected = [f.as_json() for f in reconcile_rows(site, annotations, serial_problems).findings]
    assert {f["recipe"] for f in expected} == {generate.recipe_slug(i) for i in (7, 57, 107)}
    assert any(f["annotation"] for f in expected) and any(f["annotation"] is None for f in expected)
    assert len(serial_problems.errors) >= 3  # the overlap, the recipe without findings, the wrong date
    for parts in (1, 2, 3):
        split_problems = Problems()

        def tagged(finding: Finding) -> tuple[int, dict[str, Any]]:
            return os.getpid(), finding.as_json()

        got = converted_findings(site, annotations, split_problems, tagged, parts=parts)
        assert [data for _, data in got] == expected, parts
        assert split_problems.errors == serial_problems.errors, parts
        if parts > 1:
            # Computed apart for real: the first recipes' findings come from a forked child, the
            # others (r00057's, in another share) from another process.
            assert got[0][0] != os.getpid()
            assert len({pid for pid, _ in got}) == 2


def test_recipe_shares_are_consecutive_names_of_about_equal_rows(tmp_path: Path) -> None:
    root = tmp_path / "site"
    generate.write_site(root, recipes=30, rows=40, cases=1, posts=1)
    site, problems, _ = load_with_annotations(load_config(root))
    assert not problems
    combos = combinations(site)
    for parts in (1, 2, 3, 4):
        shares = _recipe_shares(site, combos, parts)
        assert len(shares) == parts
        names = [sorted(share) for share in shares]
        assert [name for share in names for name in share] == sorted(site.recipes)
        assert max(len(share) for share in shares) - min(len(share) for share in shares) <= 1
    assert len(_recipe_shares(site, combos, 40)) <= 30  # never an empty share

"""The workload setting is declared once, by the :class:`~builder.content.models.SettingColumn` marks on
the row model's fields: every module that keys, groups, sorts or compares by setting derives its columns
from them, no module spells them out on its own, and marking another field changes the setting
everywhere (findings included)."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from dataclasses import fields
from typing import Annotated, Any

import pytest
from pydantic import Field

from builder.analysis import candidates, findings
from builder.content import figures as syntax
from builder.content import models
from builder.content.models import (
    SETTING_COLUMNS,
    SETTING_KEYS,
    WORKLOAD,
    Row,
    SettingColumn,
    setting_columns,
)
from builder.review import diff as prdiff
from builder.site import choose, figure_grid, figures, prose
from tests.conftest import REPO, MakeSite
from tests.rowsite import history, run, site_files

BUILDER = REPO / "builder"


def test_the_setting_is_the_columns_the_row_model_marks_in_their_places_order() -> None:
    places = {c.name: c.setting.place for c in models.ROW_SCHEMA.values() if c.setting is not None}
    assert SETTING_COLUMNS == tuple(sorted(places, key=places.__getitem__))
    assert SETTING_COLUMNS == (
        "node",
        "prompt_tokens",
        "output_tokens",
        "context_tokens",
        "concurrency",
        "request_rate",
    )
    assert SETTING_KEYS == ("hardware", *SETTING_COLUMNS[1:])
    assert WORKLOAD == SETTING_KEYS[1:]
    schema = Row.model_json_schema()["properties"]
    assert sorted(name for name, field in schema.items() if field.get("x-setting")) == sorted(SETTING_COLUMNS)


def test_every_module_keys_its_setting_by_the_marked_columns() -> None:
    compared = tuple(key for key in SETTING_KEYS if key != candidates.LOOSE)
    # Findings: groups of runs, the keys of a finding's setting, its id and order.
    assert candidates.COMPARED == compared
    assert candidates._SETTING == ("recipe", *compared)
    assert set(candidates.TRIAL_COLUMNS) >= set(compared)
    assert sorted(findings.FINDING_SETTING) == sorted(SETTING_KEYS)
    assert findings.ORDERED == (*compared, candidates.LOOSE)
    assert set(findings._TAGS) == set(SETTING_KEYS)
    assert set(models.AnnotationSetting.model_fields) == set(SETTING_KEYS)
    # Figures: one per recipe, setting and metric; the pages' order of settings; their keys.
    assert {f.name for f in fields(figures.Setting)} == set(SETTING_KEYS)
    assert [name for name, _ in figures.PAGE_ORDER][0] == "hardware"
    assert sorted(name for name, _ in figures.PAGE_ORDER) == sorted(SETTING_KEYS)
    assert set(figure_grid.SCHEMA.names) >= set(WORKLOAD)
    assert set(figures.SHAPE) | {"output_tokens"} == set(WORKLOAD)
    # The chooser's dimensions, prose selectors and the pull-request summary.
    assert choose.DIMENSIONS == WORKLOAD
    assert tuple(f.name for f in fields(choose.Setting)) == WORKLOAD
    assert set(WORKLOAD) <= {f.name for f in fields(choose.Query)}
    assert set(WORKLOAD) <= set(syntax.SELECTORS.values())
    assert [syntax.SELECTORS[key] for key in prose._SETTING_KEYS[: len(WORKLOAD)]] == list(WORKLOAD)
    assert {models.ROW_FIELDS[i] for i in prdiff._MEASUREMENT} >= set(SETTING_COLUMNS)


def test_a_setting_derived_row_by_row_is_the_figures_setting() -> None:
    row = {"node": "n", "prompt_tokens": 512, "output_tokens": None, "context_tokens": None, "concurrency": 8}
    setting = figures.setting_of(row, {"n": "gpu"})
    assert setting == figures.Setting("gpu", 512, 0, 8, None, None)  # an empty context is 0
    assert figures.Setting.of(figures.setting_values(row, "gpu")) == setting
    assert setting.key("r", "decode_tok_s") == "r|decode_tok_s|gpu|512|-|0|8|-"


def _spelled_out(source: str, where: str) -> list[str]:
    """Literals in ``source`` (tuples, lists, sets, dict keys) naming three columns of the workload or
    more, as strings or as attributes and items of one value (``s.prompt_tokens``, ``r["concurrency"]``).
    The node and hardware are left out: rows, runs and charts name them for much else."""
    names = set(WORKLOAD)
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            items = list(node.elts)
        elif isinstance(node, ast.Dict) and not all(isinstance(v, ast.Constant) for v in node.values):
            items = [key for key in node.keys if key is not None]  # a name to name map is a vocabulary
        else:
            continue
        named = set()
        for item in items:
            if isinstance(item, ast.Constant) and isinstance(item.value, str):
                named.add(item.value)
            elif isinstance(item, ast.Attribute):
                named.add(item.attr)
            elif isinstance(item, ast.Subscript) and isinstance(item.slice, ast.Constant):
                named.add(str(item.slice.value))
        if len(named & names) >= 3:
            found.append(f"{where}:{node.lineno}: {sorted(named & names)}")
    return found


def test_no_module_spells_out_the_setting_on_its_own() -> None:
    # The row model declares it; importers write rows (every column by name), which is not a setting.
    spelled = [
        hit
        for path in sorted(BUILDER.rglob("*.py"))
        if path != BUILDER / "content" / "models.py" and "importers" not in path.relative_to(BUILDER).parts
        for hit in _spelled_out(path.read_text(encoding="utf-8"), str(path.relative_to(REPO)))
    ]
    assert spelled == [], "derive these from builder.content.models.SETTING_COLUMNS:\n" + "\n".join(spelled)


def test_the_scan_finds_a_setting_spelled_out() -> None:
    source = (
        'KEY = ("hardware", "prompt_tokens", "context_tokens", "concurrency")\n'
        "AT = (s.prompt_tokens, s.context_tokens, s.request_rate)\n"
        'ROW = {"prompt_tokens": p, "output_tokens": o, "context_tokens": 0}\n'
        'PAIR = ("prompt_tokens", "concurrency")\n'
        'NAMES = {"prompt": "prompt_tokens", "concurrency": "concurrency", "request_rate": "request_rate"}\n'
    )
    assert [hit.split(":")[1] for hit in _spelled_out(source, "x.py")] == ["1", "2", "3"]


def test_marking_a_field_adds_it_to_the_setting_and_unmarking_removes_it() -> None:
    class Marked(Row):
        burstiness: Annotated[Annotated[float, Field(gt=0)] | None, SettingColumn(6, "b")] = None

    class Unmarked(Row):
        output_tokens: models.PositiveInt | None = None

    assert setting_columns(Marked) == (*SETTING_COLUMNS, "burstiness")
    assert setting_columns(Unmarked) == tuple(c for c in SETTING_COLUMNS if c != "output_tokens")

    class Clash(Row):
        burstiness: Annotated[float | None, SettingColumn(2)] = None

    with pytest.raises(TypeError, match="share a place"):
        setting_columns(Clash)


_MARKED = """
import importlib.util, json, sys
from pathlib import Path

path = Path("builder/content/models.py")
source = path.read_text(encoding="utf-8")
field = "    burstiness: Annotated[float, Field(gt=0)] | None = None\\n"
assert source.count(field) == 1, "the burstiness field moved: update this test"
if sys.argv[2] == "marked":
    source = source.replace(
        field, '    burstiness: Annotated[Annotated[float, Field(gt=0)] | None, SettingColumn(6, "b")] = None\\n'
    )
spec = importlib.util.spec_from_loader("builder.content.models", loader=None, origin=str(path))
module = importlib.util.module_from_spec(spec)
module.__file__ = str(path)
sys.modules["builder.content.models"] = module
exec(compile(source, str(path), "exec"), module.__dict__)

from builder.analysis import candidates
from builder.analysis.comparable import not_compared
from builder.config import load_config
from builder.engine.pipeline import load_and_reconcile
from builder.site import choose, figures

loaded = load_and_reconcile(load_config(Path(sys.argv[1])))
print(json.dumps({
    "compared": candidates.COMPARED,
    "dimensions": choose.DIMENSIONS,
    "figure_key": figures.figure_key("r", "m", "gpu", 512, None, 0, 1, None, 2.0)
    if "burstiness" in module.SETTING_KEYS else None,
    "findings": [f.id for f in loaded.recon.findings],
    "not_compared": len(not_compared(loaded.site)),
}))
"""


def test_the_marks_drive_the_findings_end_to_end(make_site: MakeSite) -> None:
    # Two open-loop runs a recipe measured at one setting, 40 % apart, at two burstiness factors.
    rows = history(
        run("2026-01-01", 100.0, 100.5, concurrency=None, request_rate=4, burstiness=1.0),
        run("2026-02-01", 60.0, 60.3, concurrency=None, request_rate=4, burstiness=2.0),
    )
    root = make_site(site_files(rows))

    def outcome(mode: str) -> dict[str, Any]:
        done = subprocess.run(
            [sys.executable, "-c", _MARKED, str(root), mode],
            cwd=REPO,
            capture_output=True,
            text=True,
            check=True,
        )
        result: dict[str, Any] = json.loads(done.stdout)
        return result

    plain = outcome("plain")
    assert "burstiness" not in plain["compared"] and plain["not_compared"] == 0
    assert [i.split("-2026")[0] for i in plain["findings"]] == ["tiny-decode_tok_s-test-gpu-p2048-x0-r4"]
    # Marked as part of the setting: the two runs are at two settings, so no finding, and check warns
    # that no row can be compared; the chooser and figure keys have the new dimension too (the typed
    # Setting classes of figures and choose need a field for it: the test above names them).
    marked = outcome("marked")
    assert marked["compared"][-1] == "burstiness" and marked["dimensions"][-1] == "burstiness"
    assert marked["figure_key"] == "r|m|gpu|512|-|0|1|-|2"
    assert marked["findings"] == [] and marked["not_compared"] == 4

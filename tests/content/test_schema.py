"""The committed JSON Schemas match the models, and the shipped content validates against them."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from builder.cli import main
from builder.config import load_config
from builder.content import models, schema
from builder.content.markdown import split_document
from builder.data.load import load_site
from builder.errors import Problems

REPO = Path(__file__).resolve().parents[2]
COMMITTED = REPO / "schema"


def test_committed_schemas_are_current() -> None:
    """Fails when a model changes and `python -m builder schema` was not run (and committed)."""
    assert schema.stale(COMMITTED, schema.generate()) == []


def test_a_model_change_makes_the_committed_schema_stale(monkeypatch: pytest.MonkeyPatch) -> None:
    class Node(models.Node):
        """An entry of ``data/nodes.yaml`` with one field more."""

        rack: str = ""
        """Where the machine sits."""

    monkeypatch.setattr(models, "Node", Node)
    assert schema.stale(COMMITTED, schema.generate()) == ["nodes.schema.json"]


def test_schema_check_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "schema"
    assert main(["schema", "--out", str(out), "--check"]) == 1
    assert main(["schema", "--out", str(out)]) == 0
    assert main(["schema", "--out", str(out), "--check"]) == 0
    (out / "row.schema.json").write_text("{}\n")
    (out / "retired.schema.json").write_text("{}\n")
    capsys.readouterr()
    assert main(["schema", "--out", str(out), "--check"]) == 1
    assert capsys.readouterr().err.splitlines() == [
        f"{out / 'retired.schema.json'}: out of date; run: python -m builder schema",
        f"{out / 'row.schema.json'}: out of date; run: python -m builder schema",
    ]
    assert main(["schema", "--out", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == sorted(schema.generate())


def test_every_front_matter_kind_and_data_file_has_a_schema() -> None:
    names = set(schema.generate())
    assert {
        "row.schema.json",
        "recipe.schema.json",
        "case-study.schema.json",
        "post.schema.json",
        "nodes.schema.json",
        "hardware.schema.json",
        "annotations.schema.json",
    } <= names


def _load(name: str) -> dict[str, Any]:
    document: dict[str, Any] = json.loads((COMMITTED / name).read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(document)
    return document


def _jsonable(value: Any) -> Any:
    """YAML dates become the ISO strings an editor's JSON view sees."""
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    return value


@pytest.mark.parametrize(
    ("folder", "name"), [("recipes", "recipe"), ("case-studies", "case-study"), ("posts", "post")]
)
def test_shipped_front_matter_validates(folder: str, name: str) -> None:
    validator = jsonschema.Draft202012Validator(_load(f"{name}.schema.json"))
    pages = sorted((REPO / "content" / folder).glob("*.md"))
    assert pages
    for page in pages:
        doc = split_document(page.name, page.read_text(encoding="utf-8"))
        errors = [e.message for e in validator.iter_errors(_jsonable(doc.front.value))]
        assert errors == [], page.name


@pytest.mark.parametrize(
    ("file", "name"),
    [("nodes.yaml", "nodes"), ("hardware.yaml", "hardware"), ("annotations.yaml", "annotations")],
)
def test_shipped_data_files_validate(file: str, name: str) -> None:
    path = REPO / "data" / file
    if not path.exists():
        pytest.skip(f"data/{file} is not shipped")
    validator = jsonschema.Draft202012Validator(_load(f"{name}.schema.json"))
    value = _jsonable(yaml.safe_load(path.read_text(encoding="utf-8")))
    assert [e.message for e in validator.iter_errors(value)] == []


def test_shipped_rows_validate_and_typos_do_not() -> None:
    validator = jsonschema.Draft202012Validator(_load("row.schema.json"))
    site = load_site(load_config(REPO), Problems())
    rows = site.rows.drop_columns(["row_id", "file_id", "file_row"]).to_pylist()
    assert rows
    for row in rows:
        obj = {k: _jsonable(v) for k, v in row.items() if v is not None}
        obj.setdefault("prompt_tokens", "unknown")
        assert [e.message for e in validator.iter_errors(obj)] == [], obj
    bad = {**obj, "decode_toks": 1.0, "concurrency": 0, "time": "24:00", "request_rate": 0}
    errors = list(validator.iter_errors(bad))
    assert any("decode_toks" in e.message for e in errors)
    assert {e.path[0] for e in errors if e.path} == {"concurrency", "time", "request_rate"}


def test_annotations_schema_accepts_the_documented_example_and_refuses_a_bad_status() -> None:
    validator = jsonschema.Draft202012Validator(_load("annotations.schema.json"))
    example = [
        {
            "recipe": "qwen3.6-35b-a3b-nvidia-nvfp4",
            "metric": "decode_tok_s",
            "setting": {"prompt_tokens": 2048, "concurrency": 1},
            "date": "2026-07-06",
            "status": "acknowledged",
            "reason": "The venv was upgraded in place between the runs.",
            "by": "a-curator",
        }
    ]
    assert [e.message for e in validator.iter_errors(example)] == []
    bad = [{**example[0], "status": "fixed", "setting": {"prompt": 2048}}]
    errors = list(validator.iter_errors(bad))
    messages = [e.message for e in errors] + [c.message for e in errors for c in e.context or []]
    assert any("'fixed' is not one of" in m for m in messages)
    assert any("'prompt' was unexpected" in m for m in messages)

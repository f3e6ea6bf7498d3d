"""JSON Schema of every format contributors write, generated from the pydantic models.

``python -m builder schema`` writes them to ``schema/`` (committed, so editors can validate front
matter, rows and data files as you type); ``--check`` and a test fail when a model changed and the
committed copies were not regenerated. Descriptions are the models' field docstrings
(:mod:`builder.content.docstrings`). The table of row columns in CONTRIBUTING.md is made from the row
model too (:func:`row_columns_markdown`); a test keeps the committed one current.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, TypeAdapter

from builder.config import SiteSettings
from builder.content import models
from builder.content.docstrings import described, field_docs

DRAFT = "https://json-schema.org/draft/2020-12/schema"


@dataclass(frozen=True)
class SchemaFile:
    name: str
    """File name inside the schema folder."""
    title: str
    applies_to: str
    """Which files it describes, for the description."""
    build: Callable[[], dict[str, Any]]


def _model(model: type[BaseModel]) -> Callable[[], dict[str, Any]]:
    return lambda: model.model_json_schema(mode="validation")


def _mapping(model: type[BaseModel]) -> Callable[[], dict[str, Any]]:
    def build() -> dict[str, Any]:
        schema = TypeAdapter(dict[models.Slug, model]).json_schema(mode="validation")  # type: ignore[valid-type]
        schema["additionalProperties"] = False  # an id that is not a slug is an error, not ignored
        return schema

    return build


def _list(model: type[BaseModel]) -> Callable[[], dict[str, Any]]:
    return lambda: TypeAdapter(list[model]).json_schema(mode="validation")  # type: ignore[valid-type]


def _files() -> list[SchemaFile]:
    described()
    files = [
        SchemaFile(
            "row.schema.json",
            "Benchmark row",
            "one object of data/rows/**/*.jsonl; CSV files use the same keys as header names, with an "
            "empty cell for null",
            _model(models.Row),
        ),
        SchemaFile(
            "recipe.schema.json",
            "Recipe front matter",
            "content/recipes/<slug>.md",
            _model(models.RecipeMeta),
        ),
        SchemaFile(
            "case-study.schema.json",
            "Case study front matter",
            "content/case-studies/<slug>.md",
            _model(models.CaseStudyMeta),
        ),
        SchemaFile(
            "post.schema.json", "Post front matter", "content/posts/<slug>.md", _model(models.PostMeta)
        ),
        SchemaFile("nodes.schema.json", "Nodes", "data/nodes.yaml: node id to node", _mapping(models.Node)),
        SchemaFile(
            "hardware.schema.json",
            "Hardware",
            "data/hardware.yaml: hardware id to hardware",
            _mapping(models.Hardware),
        ),
        SchemaFile(
            "site.schema.json", "Site settings", "site.yaml at the site root (optional)", _model(SiteSettings)
        ),
    ]
    annotation = getattr(models, "Annotation", None)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        files.append(
            SchemaFile(
                "annotations.schema.json",
                "Annotations",
                "data/annotations.yaml: a list of curator's reasons attached to findings",
                _list(annotation),
            )
        )
    return files


def generate() -> dict[str, str]:
    """File name → schema text (stable: sorted keys, two-space indent, final newline)."""
    out: dict[str, str] = {}
    for item in _files():
        body = item.build()
        schema = {"$schema": DRAFT, "title": item.title, "$comment": f"Applies to {item.applies_to}.", **body}
        if "title" in body and body["title"] != item.title:
            schema["title"] = item.title
        out[item.name] = json.dumps(schema, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    return out


def stale(folder: Path, generated: dict[str, str]) -> list[str]:
    """Names in ``folder`` that are missing, differ from ``generated`` or are no longer generated."""
    names = []
    for name, text in generated.items():
        path = folder / name
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            names.append(name)
    if folder.is_dir():
        names += [p.name for p in folder.glob("*.schema.json") if p.name not in generated]
    return sorted(names)


def write(folder: Path, generated: dict[str, str]) -> list[str]:
    """Write the schemas that changed and remove retired ones; return the names touched."""
    changed = stale(folder, generated)
    folder.mkdir(parents=True, exist_ok=True)
    for name in changed:
        path = folder / name
        if name in generated:
            path.write_text(generated[name], encoding="utf-8", newline="\n")
        else:
            path.unlink()
    return changed


def row_columns_markdown() -> str:
    """The table of row columns under "Row format" in CONTRIBUTING.md: every column of
    :data:`~builder.content.models.ROW_SCHEMA` with its kind, whether it is required (or a metric, of
    which a row needs one), whether it is part of the setting (:class:`~builder.content.models.SettingColumn`)
    and its docstring."""
    docs = field_docs(models.Row)
    lines = ["| key | type | required | setting | meaning |", "| --- | --- | --- | --- | --- |"]
    for column in models.ROW_SCHEMA.values():
        need = "yes" if column.required else "metric" if isinstance(column.quantity, models.Measured) else ""
        if column.required_unless is not None:
            need = f"unless `{column.required_unless}`"
        setting = "" if column.setting is None else "yes"
        meaning = " ".join(docs[column.name].split()).replace("``", "`").replace("|", "\\|")
        cells = (f"`{column.name}`", column.kind, need, setting, meaning)
        lines.append("|" + "|".join(f" {cell} " if cell else " " for cell in cells) + "|")
    return "\n".join(lines) + "\n"

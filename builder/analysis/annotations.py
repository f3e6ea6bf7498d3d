"""``data/annotations.yaml``: a curator's reasons attached to findings of non-reproduction.

The file is a YAML list; each entry (see :class:`builder.content.models.Annotation`) names a recipe and,
optionally, the metric, setting and a run date that select its findings::

    - recipe: qwen3.6-35b-a3b-nvidia-nvfp4
      metric: decode_tok_s
      setting: {prompt_tokens: 2048, concurrency: 1}
      date: 2026-07-06
      status: upstream_issue
      reason: The venv was upgraded in place between the runs.
      link: https://github.com/vllm-project/vllm/issues/1

An entry that selects no finding is an error (it would hide nothing, silently), and so is an entry
that selects a finding another entry already explains.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from builder.analysis.findings import Finding
from builder.content.models import Annotation
from builder.data.load import recipe_reference_problem
from builder.errors import Problems
from builder.files import InputError, read_regular
from builder.limits import CONTENT_FILE_BYTES
from builder.yamlio import YamlDoc, YamlProblem, load_yaml

ANNOTATIONS_REL = "data/annotations.yaml"


@dataclass(frozen=True)
class LocatedAnnotation:
    """An annotation with where it was written."""

    entry: Annotation
    path: str
    line: int

    def as_json(self) -> dict[str, Any]:
        data = self.entry.model_dump(mode="json")
        if self.entry.setting is not None:
            data["setting"] = self.entry.setting.model_dump(exclude_none=True)
            if data["setting"].get("request_rate") == math.inf:  # JSON has no infinity
                data["setting"]["request_rate"] = "inf"
        data["path"] = self.path
        data["line"] = self.line
        return data

    def selects(self, finding: Finding) -> bool:
        entry = self.entry
        if entry.recipe != finding.recipe:
            return False
        if entry.metric is not None and entry.metric != finding.metric:
            return False
        if entry.setting is not None:
            for key, value in entry.setting.model_dump(exclude_none=True).items():
                if finding.setting.get(key) != value:
                    return False
        return entry.date is None or any(run.date == entry.date for run, _ in finding.runs)

    def describe(self) -> str:
        entry = self.entry
        parts = [f"recipe '{entry.recipe}'"]
        if entry.metric:
            parts.append(f"metric {entry.metric}")
        if entry.setting is not None:
            parts.extend(f"{k} {v}" for k, v in entry.setting.model_dump(exclude_none=True).items())
        if entry.date:
            parts.append(f"a run on {entry.date.isoformat()}")
        return ", ".join(parts)


def _message(err: Any) -> str:
    loc = ".".join(str(part) for part in err["loc"])
    kind = err["type"]
    if kind == "missing":
        return f"missing required key '{loc}'"
    if kind == "extra_forbidden":
        return f"unknown key '{loc}'"
    if kind == "value_error":
        text = str(err["msg"]).removeprefix("Value error, ")
        return f"'{loc}': {text}" if loc else text
    if kind == "string_pattern_mismatch" and loc == "link":
        return f"'link' must be an http(s) URL (got {err['input']!r:.80})"
    shown = err.get("input")
    text = repr(shown) if not isinstance(shown, dict | list) else type(shown).__name__
    return f"'{loc}': {err['msg']} (got {text[:80]})"


def _parse(
    doc: YamlDoc, rel: str, recipes: Collection[str], recipe_files: Collection[str], problems: Problems
) -> list[LocatedAnnotation]:
    if doc.value is None:
        return []
    if not isinstance(doc.value, list):
        problems.error(rel, 1, "must be a list of annotations (each item starting with '- recipe: ...')")
        return []
    out: list[LocatedAnnotation] = []
    for index, item in enumerate(doc.value):
        line = doc.line_of((index,))
        if not isinstance(item, dict):
            problems.error(rel, line, "an annotation must be a mapping (recipe, status, reason, ...)")
            continue
        try:
            entry = Annotation.model_validate(item)
        except ValidationError as exc:
            for err in exc.errors():
                problems.error(rel, doc.line_of((index, *err["loc"]), line), _message(err))
            continue
        if entry.recipe not in recipes:
            problems.error(
                rel,
                doc.line_of((index, "recipe"), line),
                recipe_reference_problem(entry.recipe, recipe_files),
            )
            continue
        out.append(LocatedAnnotation(entry, rel, line))
    return out


def load_annotations(
    root: Path, recipes: Collection[str], problems: Problems, recipe_files: Collection[str] = ()
) -> list[LocatedAnnotation]:
    """Read ``data/annotations.yaml`` (optional); every defect goes into ``problems``."""
    path = root / ANNOTATIONS_REL
    try:
        doc = load_yaml(read_regular(path, CONTENT_FILE_BYTES).decode("utf-8"))
    except FileNotFoundError:
        return []
    except InputError as exc:
        problems.error(ANNOTATIONS_REL, None, exc.message)
        return []
    except UnicodeDecodeError:
        problems.error(ANNOTATIONS_REL, None, "not valid UTF-8")
        return []
    except YamlProblem as exc:
        problems.error(ANNOTATIONS_REL, exc.line, exc.message)
        return []
    for dup in doc.duplicates:
        problems.error(ANNOTATIONS_REL, dup.line, dup.message)
    return _parse(doc, ANNOTATIONS_REL, recipes, recipe_files, problems)


def attach_annotations(
    findings: Sequence[Finding], annotations: Sequence[LocatedAnnotation], problems: Problems
) -> None:
    """Give each finding its annotation; an annotation selecting nothing, or a taken finding, is an error."""
    owner: dict[int, LocatedAnnotation] = {}
    for note in annotations:
        selected = [f for f in findings if note.selects(f)]
        if not selected:
            of_recipe = [f for f in findings if f.recipe == note.entry.recipe]
            hint = (
                "its findings: " + "; ".join(f"{f.metric} at {f.setting_text()}" for f in of_recipe)
                if of_recipe
                else "the recipe has no finding"
            )
            problems.error(
                note.path,
                note.line,
                f"annotation matches no finding ({note.describe()}); {hint}. Remove it or correct its selectors",
            )
            continue
        for finding in selected:
            taken = owner.get(id(finding))
            if taken is not None:
                problems.error(
                    note.path,
                    note.line,
                    f"annotation selects the finding {finding.id} already annotated on line {taken.line}",
                )
                continue
            owner[id(finding)] = note
            finding.annotation = note.as_json()

"""The GitHub workflows parse, run the commands the issue asks for, and those commands exist."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

import pytest
import yaml

from builder.cli import make_parser

WORKFLOWS = Path(__file__).resolve().parent.parent / ".github" / "workflows"


def _load(name: str) -> dict[Any, Any]:
    doc = yaml.safe_load((WORKFLOWS / name).read_text(encoding="utf-8"))
    assert isinstance(doc, dict)
    return doc


def _on(doc: dict[Any, Any]) -> Any:
    return doc.get("on", doc.get(True))  # YAML 1.1 reads a bare `on` key as true


def _steps(doc: dict[Any, Any]) -> list[dict[str, Any]]:
    return [step for job in doc["jobs"].values() for step in job.get("steps", [])]


def _runs(doc: dict[Any, Any]) -> list[str]:
    return [step["run"] for step in _steps(doc) if "run" in step]


def test_pull_request_workflow() -> None:
    doc = _load("pull-request.yml")
    assert "pull_request" in _on(doc)
    runs = _runs(doc)
    order = [
        "python -m pip install -c constraints.txt .",
        "python -m builder check --format github --strict",
        "python -m builder build",
    ]
    assert [r for r in runs if r in order] == order
    (diff,) = [r for r in runs if "builder diff" in r]
    assert '--base "$BASE_SHA"' in diff and '--out "$GITHUB_STEP_SUMMARY"' in diff
    checkout = next(s for s in _steps(doc) if s.get("uses", "").startswith("actions/checkout@"))
    assert checkout["with"]["fetch-depth"] == 0  # the base revision must be there for git archive
    assert doc["permissions"]["pull-requests"] == "write"


def test_pages_workflow() -> None:
    doc = _load("pages.yml")
    assert _on(doc)["push"]["branches"] == ["main"]
    assert doc["permissions"] == {"contents": "read", "pages": "write", "id-token": "write"}
    uses = [s["uses"].split("@")[0] for s in _steps(doc) if "uses" in s]
    assert "actions/upload-pages-artifact" in uses and "actions/deploy-pages" in uses
    upload = next(s for s in _steps(doc) if s.get("uses", "").startswith("actions/upload-pages-artifact"))
    assert "python -m builder build --out site" in _runs(doc)
    assert upload["with"]["path"] == "site"
    assert doc["jobs"]["deploy"]["needs"] == "build"
    assert doc["jobs"]["deploy"]["environment"]["name"] == "github-pages"


@pytest.mark.parametrize("name", ["pull-request.yml", "pages.yml"])
def test_every_builder_command_in_a_workflow_parses(name: str) -> None:
    parser = make_parser()
    commands = [r.split(">")[0] for r in _runs(_load(name)) if r.startswith("python -m builder ")]
    assert commands
    for command in commands:
        argv = [a.replace("$", "X") for a in shlex.split(command)[3:]]
        parser.parse_args(argv)  # exits 2 on an unknown command or option

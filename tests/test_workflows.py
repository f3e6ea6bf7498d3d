"""The GitHub workflows parse, run the commands the issue asks for, and those commands exist."""

from __future__ import annotations

import re
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
    comment = doc["jobs"]["comment"]
    assert comment["needs"] == "check" and "needs.check.outputs.summarised == 'success'" in comment["if"]
    assert "github.event.pull_request.head.repo.full_name == github.repository" in comment["if"]


def test_pages_workflow() -> None:
    doc = _load("pages.yml")
    assert _on(doc)["push"]["branches"] == ["main"]
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


NAMES = ["pull-request.yml", "pages.yml"]
LEAST = {
    "pull-request.yml": {"check": {"contents": "read"}, "comment": {"pull-requests": "write"}},
    "pages.yml": {
        "build": {"contents": "read", "pages": "read"},
        "deploy": {"pages": "write", "id-token": "write"},
    },
}
"""What each job may do: the workflow grants nothing, each job the least it needs."""


@pytest.mark.parametrize("name", NAMES)
def test_permissions_are_per_job_and_least(name: str) -> None:
    doc = _load(name)
    assert doc["permissions"] == {}
    assert {job: spec.get("permissions") for job, spec in doc["jobs"].items()} == LEAST[name]


@pytest.mark.parametrize("name", NAMES)
def test_a_job_that_runs_the_repositorys_code_cannot_write(name: str) -> None:
    for job, spec in _load(name)["jobs"].items():
        steps = spec.get("steps", [])
        runs_code = any(s.get("uses", "").startswith("actions/checkout@") for s in steps)
        if runs_code:
            assert "write" not in spec["permissions"].values(), job


@pytest.mark.parametrize("name", NAMES)
def test_checkout_leaves_no_token_in_the_git_config(name: str) -> None:
    checkouts = [s for s in _steps(_load(name)) if s.get("uses", "").startswith("actions/checkout@")]
    assert checkouts
    assert all(s["with"]["persist-credentials"] is False for s in checkouts)


USES = re.compile(r"^\s*(?:- )?uses: ([\w.-]+/[\w.-]+)@([0-9a-f]{40}) # (v\d+(?:\.\d+)*)$")


@pytest.mark.parametrize("name", NAMES)
def test_actions_are_pinned_by_commit_with_their_tag_in_a_comment(name: str) -> None:
    lines = [line for line in (WORKFLOWS / name).read_text(encoding="utf-8").splitlines() if "uses:" in line]
    assert lines
    for line in lines:
        assert USES.match(line), line
    pinned = [USES.match(line) for line in lines]
    assert len(pinned) == len([s for s in _steps(_load(name)) if "uses" in s])

"""The workflow that turns a benchmark issue into a pull request: untrusted text stays in files, each job
holds only the permissions it needs, and every action is pinned by commit."""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

import yaml

from builder.cli import make_parser

WORKFLOW = Path(__file__).resolve().parent.parent / ".github" / "workflows" / "contribute.yml"
DOC: dict[Any, Any] = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
JOBS: dict[str, Any] = DOC["jobs"]


def _steps() -> list[dict[str, Any]]:
    return [step for job in JOBS.values() for step in job.get("steps", [])]


def test_it_runs_on_the_forms_issues() -> None:
    on = DOC.get("on", DOC.get(True))  # YAML 1.1 reads a bare `on` key as true
    assert on == {"issues": {"types": ["opened", "edited", "reopened"]}}
    assert "contains(github.event.issue.labels.*.name, 'benchmark')" in JOBS["prepare"]["if"]


def test_each_job_holds_the_least_permissions() -> None:
    assert DOC["permissions"] == {}
    assert {name: job["permissions"] for name, job in JOBS.items()} == {
        "prepare": {"contents": "read"},
        "pull-request": {"contents": "write", "pull-requests": "write"},
        "comment": {"issues": "write"},
    }


def test_no_run_line_holds_an_expression() -> None:
    """Expressions are expanded into the script before it runs: event text there would be code."""
    runs = [step["run"] for step in _steps() if "run" in step]
    assert runs and [run for run in runs if "${{" in run] == []
    event_values = [
        value for step in _steps() for value in step.get("env", {}).values() if "github.event" in str(value)
    ]
    assert event_values and all(re.search(r"github\.event\.issue\.number }}$", v) for v in event_values)


def test_actions_are_pinned_by_commit_and_keep_no_credentials() -> None:
    uses = [step for step in _steps() if "uses" in step]
    assert uses
    for step in uses:
        assert re.fullmatch(r"[\w-]+/[\w-]+@[0-9a-f]{40}", step["uses"]), step["uses"]
        if step["uses"].startswith("actions/checkout@"):
            assert step["with"]["persist-credentials"] is False


def test_the_builder_reads_the_issue_only_from_the_event_file() -> None:
    (command,) = [
        line
        for step in JOBS["prepare"]["steps"]
        for line in step.get("run", "").splitlines()
        if "python -m builder contribute" in line
    ]
    words = shlex.split(command)
    assert words[words.index("--issue-event") + 1] == "$GITHUB_EVENT_PATH" and "--dry-run" in words
    make_parser().parse_args([w.replace("$", "X") for w in words[3:]])
    assert [job.get("needs") for job in JOBS.values()] == [None, "prepare", "prepare"]

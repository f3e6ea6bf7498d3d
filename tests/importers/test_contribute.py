"""``contribute --dry-run`` on recorded ``issues`` events: a branch with a valid row file, or a comment
naming the fields to fix. The events are described in tests/fixtures/contribute/README.md."""

from __future__ import annotations

import csv
import io
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from builder.cli import main
from builder.config import load_config
from builder.importers import FORMATS
from builder.importers.contribute import Contribution, Issue, publish, read_event
from builder.importers.issue_form import DETECT, FIELDS, parse_form
from builder.importers.issue_form import FieldError as FormError
from builder.review.check import check_site
from tests.conftest import SITES

REPO = Path(__file__).resolve().parents[2]
EVENTS = REPO / "tests" / "fixtures" / "contribute"
FORM = REPO / ".github" / "ISSUE_TEMPLATE" / "benchmark.yml"


def _git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True)
    return done.stdout.strip()


@pytest.fixture(scope="module")
def clone(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A git clone holding the minimal example site, committed on main."""
    root = tmp_path_factory.mktemp("clone") / "repo"
    shutil.copytree(SITES / "minimal", root)
    _git(root, "init", "--quiet", "-b", "main")
    _git(root, "add", "-A")
    _git(root, "-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "--quiet", "-m", "site")
    return root


def _run(clone: Path, event: Path, out: Path) -> tuple[int, str]:
    code = main(
        ["contribute", "--root", str(clone), "--issue-event", str(event), "--dry-run", "--out", str(out)]
    )
    return code, (out / "body.md").read_text(encoding="utf-8")


def _outside_code(markdown: str) -> str:
    """The markdown without its code blocks and spans: where a mention would notify."""
    text = re.sub(r"^(`{3,})[^\n]*\n.*?^\1$", "", markdown, flags=re.DOTALL | re.MULTILINE)
    return re.sub(r"(`+).*?\1", "", text)


def _live_mentions(markdown: str) -> list[str]:
    return re.findall(r"(?<![\w\u200b])@[A-Za-z0-9][\w/-]*", _outside_code(markdown))


def _fields_named(comment: str) -> set[str]:
    return set(re.findall(r"^\*\*(.+)\*\*$", comment, re.MULTILINE))


# fixture -> (rows, row file, a column every row holds, its value)
PULL_REQUESTS: dict[str, tuple[int, str, str, str]] = {
    "vllm-json": (1, "data/rows/tiny/2026-01-03-node-a.csv", "concurrency", "8"),
    "vllm-printed": (1, "data/rows/tiny/2026-01-05-node-a.csv", "request_rate", "inf"),
    "sglang-printed": (3, "data/rows/tiny/2026-01-05-node-a.csv", "concurrency", "256"),
    "sglang-jsonl": (2, "data/rows/tiny/2026-01-05-node-a.csv", "harness", "sglang bench_serving"),
    "guidellm-json": (1, "data/rows/tiny/2026-01-01-node-a.csv", "concurrency", "4"),
    "aiperf-json": (1, "data/rows/tiny/2026-01-02-node-a-2.csv", "concurrency", "8"),
    "aiperf-csv-with-command": (1, "data/rows/tiny/2026-01-05-node-a.csv", "concurrency", "8"),
    "llama-bench-table": (2, "data/rows/tiny/2026-01-05-node-a.csv", "concurrency", "1"),
    "llama-bench-json": (1, "data/rows/tiny/2025-04-24-node-a.csv", "engine_version", "b5163"),
    "llama-benchy-table": (3, "data/rows/tiny/2026-01-05-node-a.csv", "contributor", "octo-contributor"),
    "llama-benchy-json": (18, "data/rows/tiny/2026-01-04-node-a.csv", "contributor", "octo-contributor"),
    "new-node": (1, "data/rows/tiny/2026-01-03-node-b.csv", "node", "node-b"),
    "hostile-shell-accepted": (
        1,
        "data/rows/tiny/2026-01-05-node-a.csv",
        "engine_version",
        "1.0.0 $(touch pwned) `id`",
    ),
    "hostile-mentions": (
        1,
        "data/rows/tiny/2026-01-05-node-a.csv",
        "engine_version",
        "1.0.0 @octocat @github/security #1",
    ),
}


@pytest.mark.parametrize("name", list(PULL_REQUESTS))
def test_an_event_becomes_a_branch_with_its_row_file(
    name: str,
    clone: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)  # a command run by a shell would leave its file here
    rows, rel, column, value = PULL_REQUESTS[name]
    event = EVENTS / f"{name}.json"
    number = read_event(event).number
    before = _git(clone, "rev-parse", "HEAD")
    code, body = _run(clone, event, tmp_path / "out")
    assert code == 0 and capsys.readouterr().out == body
    out = tmp_path / "out"
    assert (out / "outcome").read_text() == "pull-request\n", body
    branch = f"contribute/issue-{number}"
    assert (out / "branch").read_text() == f"{branch}\n"
    assert _git(clone, "rev-parse", f"{branch}~1") == before  # one commit on the clone's HEAD
    assert _git(clone, "rev-parse", "HEAD") == before and _git(clone, "status", "--porcelain") == ""
    changed = _git(clone, "diff", "--name-only", before, branch).splitlines()
    assert changed == sorted([rel, *(["data/nodes.yaml"] if name == "new-node" else [])])
    table = list(csv.DictReader(io.StringIO(_git(clone, "show", f"{branch}:{rel}"))))
    assert len(table) == rows and {row[column] for row in table} == {value}
    assert {row["contributor"] for row in table} == {"octo-contributor"}
    author = _git(clone, "log", "-1", "--format=%an <%ae>", branch)
    assert author == "octo-contributor <1234567+octo-contributor@users.noreply.github.com>"
    assert f"Closes #{number}" in body and "## What this change does to the site" in body
    assert f"### Rows: +{rows} −0 in 1 recipe" in body
    assert _live_mentions(body) == [] and _live_mentions((out / "title").read_text()) == []
    bundle = out / "contribution.bundle"
    assert _git(clone, "bundle", "list-heads", str(bundle)).endswith(f"refs/heads/{branch}")
    assert not (tmp_path / "pwned").exists() and not (clone / "pwned").exists()


def test_the_branch_passes_check_on_its_own(clone: Path, tmp_path: Path) -> None:
    code, _ = _run(clone, EVENTS / "new-node.json", tmp_path / "out")
    assert code == 0
    tree = tmp_path / "tree"
    _git(clone, "worktree", "add", "--quiet", str(tree), "contribute/issue-112")
    try:
        report = check_site(load_config(tree))
    finally:
        _git(clone, "worktree", "remove", "--force", str(tree))
    assert report.errors == [] and report.stats["nodes"] == 2 and report.stats["rows"] == 2 + 1


# fixture -> the fields the comment names
COMMENTS: dict[str, set[str]] = {
    "missing-fields": {"Recipe", "Node", "Hardware"},
    "aiperf-csv-without-load": {"Command line"},
    "unknown-output": {"Benchmark output"},
    "wrong-hardware": {"Hardware"},
    "not-the-form": {"The issue"},
    "llama-bench-table-without-version": {"Engine version"},
    "hostile-shell": {"Node"},
    "hostile-traversal": {"Recipe", "Node"},
    "hostile-mentions-refused": {"Recipe"},
}


@pytest.mark.parametrize("name", list(COMMENTS))
def test_an_event_with_mistakes_becomes_a_comment_naming_the_fields(
    name: str, clone: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    event = EVENTS / f"{name}.json"
    branches = _git(clone, "branch", "--list")
    code, body = _run(clone, event, tmp_path / "out")
    assert code == 0
    assert (tmp_path / "out" / "outcome").read_text() == "comment\n"
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["body.md", "outcome"]
    assert _fields_named(body) == COMMENTS[name], body
    assert _git(clone, "branch", "--list") == branches  # no branch left behind
    assert _live_mentions(body) == []
    assert not (tmp_path / "pwned").exists() and not (clone / "pwned").exists()


def test_the_comment_says_what_to_fix_in_the_forms_words(clone: Path, tmp_path: Path) -> None:
    _, body = _run(clone, EVENTS / "aiperf-csv-without-load.json", tmp_path / "a")
    assert (
        "paste the benchmark's command line (with --concurrency N or --request-rate R) in Command line"
        in body
    )
    _, body = _run(clone, EVENTS / "unknown-output.json", tmp_path / "b")
    assert "choose it under Format" in body and "--from" not in body
    _, body = _run(clone, EVENTS / "hostile-traversal.json", tmp_path / "c")
    assert (
        "Recipe must be an id (lowercase letters, digits, '.', '-', '_'), not \"../../.github/workflows/x\""
        in body
    )


def test_a_body_larger_than_github_allows_is_refused_unread(clone: Path, tmp_path: Path) -> None:
    event = json.loads((EVENTS / "vllm-printed.json").read_text(encoding="utf-8"))
    event["issue"]["body"] += "\n" + "x" * 70_000
    path = tmp_path / "huge.json"
    path.write_text(json.dumps(event), encoding="utf-8")
    code, body = _run(clone, path, tmp_path / "out")
    assert code == 0 and _fields_named(body) == {"Benchmark output"}
    assert "more than the 65,536 GitHub allows" in body and len(body) < 1000


def test_an_edited_issue_replaces_its_branch(clone: Path, tmp_path: Path) -> None:
    event = json.loads((EVENTS / "vllm-json.json").read_text(encoding="utf-8"))
    event["issue"]["number"] = 900
    path = tmp_path / "e.json"
    path.write_text(json.dumps(event), encoding="utf-8")
    assert _run(clone, path, tmp_path / "one")[0] == 0
    first = _git(clone, "rev-parse", "contribute/issue-900")
    event["action"] = "edited"
    event["issue"]["body"] = event["issue"]["body"].replace(
        "### Engine build\n\n_No response_", "### Engine build\n\nabc123"
    )
    path.write_text(json.dumps(event), encoding="utf-8")
    assert _run(clone, path, tmp_path / "two")[0] == 0
    second = _git(clone, "rev-parse", "contribute/issue-900")
    assert second != first and _git(clone, "rev-parse", "contribute/issue-900~1") == _git(
        clone, "rev-parse", "HEAD"
    )
    assert "abc123" in _git(clone, "show", "contribute/issue-900:data/rows/tiny/2026-01-03-node-a.csv")


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ("not json", "not an event payload: not valid JSON"),
        ('{"action": "opened"}', "not an issues event: no 'issue' object"),
        (
            '{"issue": {"number": 1, "pull_request": {}, "user": {"login": "a", "id": 1}}}',
            "about a pull request",
        ),
        ('{"issue": {"number": "1; rm", "user": {"login": "a", "id": 1}, "body": ""}}', "issue number"),
        ('{"issue": {"number": 1, "user": {"login": "a b", "id": 1}, "body": ""}}', "not a GitHub login"),
    ],
)
def test_a_file_github_did_not_write_is_refused(
    payload: str, message: str, clone: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "event.json"
    path.write_text(payload, encoding="utf-8")
    assert main(["contribute", "--root", str(clone), "--issue-event", str(path), "--dry-run"]) == 1
    assert message in capsys.readouterr().err


# --- the form --------------------------------------------------------------------------------------


def test_the_issue_form_is_the_one_the_builder_reads() -> None:
    form = yaml.safe_load(FORM.read_text(encoding="utf-8"))
    fields = [item for item in form["body"] if item["type"] != "markdown"]
    assert [
        (f["id"], f["attributes"]["label"], f.get("validations", {}).get("required", False)) for f in fields
    ] == [(f.id, f.label, f.required) for f in FIELDS]
    (dropdown,) = [f for f in fields if f["type"] == "dropdown"]
    assert dropdown["attributes"]["options"] == [DETECT, *FORMATS]
    assert fields[-1]["id"] == "output" and fields[-1]["attributes"]["render"] == "text"
    assert form["labels"] == ["benchmark"]


def test_the_form_body_is_parsed_as_github_renders_it() -> None:
    body = (
        "### Recipe\n\ntiny\n\n### Node\n\nnode-a\n\n### Hardware\n\ntest-gpu\n\n### Date\n\n_No response_\n\n"
        "### Engine version\n\n1.0\n\n### Engine build\n\n_No response_\n\n### Format\n\ntell from the output\n\n"
        "### Command line\n\n```shell\nllama-bench -r 3\n```\n\n"
        "### Benchmark output\n\n```text\n### a heading of the output\n````\n| test | t/s |\n```"
    )
    values, errors = parse_form(body)
    assert errors == []
    assert values == {
        "recipe": "tiny",
        "node": "node-a",
        "hardware": "test-gpu",
        "date": None,
        "engine_version": "1.0",
        "engine_build": None,
        "format": DETECT,
        "command": "llama-bench -r 3",
        "output": "### a heading of the output\n````\n| test | t/s |",
    }
    assert parse_form(body.replace("### Node", "### Machine"))[1] == [
        FormError(
            "node",
            "the issue has no '### Node' heading: open it with the benchmark form, or keep the form's headings "
            "when editing it",
        )
    ]


# --- publishing ------------------------------------------------------------------------------------


def test_publish_pushes_and_opens_or_updates_the_pull_request(tmp_path: Path) -> None:
    issue = Issue(7, "octo", 1, "")
    result = Contribution(issue, title="Benchmark of tiny", body="b", branch="contribute/issue-7")
    calls: list[list[str]] = []

    def runner(command: list[str]) -> int:
        calls.append(command)
        return 1 if command[:3] == ["gh", "pr", "create"] else 0  # the pull request is open already

    body = tmp_path / "body.md"
    assert publish(result, body, runner) == calls
    assert calls == [
        ["git", "push", "--force", "origin", "contribute/issue-7:refs/heads/contribute/issue-7"],
        [
            "gh",
            "pr",
            "create",
            "--head",
            "contribute/issue-7",
            "--title",
            "Benchmark of tiny",
            "--body-file",
            str(body),
        ],
        ["gh", "pr", "edit", "contribute/issue-7", "--title", "Benchmark of tiny", "--body-file", str(body)],
    ]


def test_publish_comments_replacing_its_last_comment(tmp_path: Path) -> None:
    result = Contribution(Issue(7, "octo", 1, ""), errors=[FormError("node", "x")], body="c")
    calls: list[list[str]] = []
    publish(result, tmp_path / "c.md", lambda command: calls.append(command) or 0)
    assert calls == [["gh", "issue", "comment", "7", "--body-file", str(tmp_path / "c.md"), "--edit-last"]]


def test_a_failure_half_way_leaves_no_branch(clone: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import builder.importers.contribute as module

    def broken(*args: object) -> Path:
        raise OSError("disk full")

    monkeypatch.setattr(module, "write_import", broken)
    with pytest.raises(OSError, match="disk full"):
        module.contribute(clone, read_event(EVENTS / "vllm-printed.json"))
    assert "contribute/issue-102" not in _git(clone, "branch", "--list")
    assert _git(clone, "worktree", "list").count("\n") == 0  # the temporary worktree is gone

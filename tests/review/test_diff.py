"""``diff``: two git revisions of a small site, compared without touching the working tree."""

from __future__ import annotations

import hashlib
import re
import subprocess
from pathlib import Path

import pytest

from builder.cli import main
from builder.config import load_config
from builder.errors import ConfigError
from builder.review.diff import diff_revisions, md, render_markdown
from tests.conftest import MakeSite

FLAGS = "--max-model-len 4096 --kv-cache-dtype fp8"
HEADER = "date,recipe,node,engine_version,prompt_tokens,concurrency,decode_tok_s,flags,env,source\n"


def _row(date: str, prompt: int, decode: float, source: str = "synthetic test row") -> str:
    return f"{date},tiny,node-a,1.0.0,{prompt},1,{decode},{FLAGS},EXAMPLE_ENV=1,{source}\n"


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        [
            "git",
            "-c",
            "user.name=Test",
            "-c",
            "user.email=test@example.org",
            "-c",
            "commit.gpgsign=false",
            *args,
        ],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


def commit(repo: Path, message: str) -> str:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD").strip()


@pytest.fixture
def repo(make_site: MakeSite) -> Path:
    root = make_site()
    git(root, "init", "-q")
    commit(root, "base: the minimal site")
    return root


def _state(repo: Path) -> tuple[str, str, str, str]:
    """What diff must never change: status, index, worktrees, refs."""
    index = hashlib.sha256((repo / ".git" / "index").read_bytes()).hexdigest()
    return (
        git(repo, "status", "--porcelain", "--untracked-files=all"),
        index,
        git(repo, "worktree", "list", "--porcelain"),
        git(repo, "show-ref"),
    )


def test_rows_findings_and_headlines_of_a_pull_request(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = git(repo, "rev-parse", "HEAD").strip()
    # the PR: a re-run at 512 tokens that reads far lower (a finding), and one old row dropped
    (repo / "data/rows/tiny/2026-01-09-node-a.csv").write_text(
        HEADER + _row("2026-01-09", 512, 30.25) + _row("2026-01-09", 512, 30.5)
    )
    old = repo / "data/rows/tiny/2026-01-02-node-a.csv"
    old.write_text(HEADER + _row("2026-01-02", 512, 50.5))
    commit(repo, "PR: rows of 2026-01-09")
    before = _state(repo)
    assert main(["diff", "--root", str(repo), "--base", base]) == 0
    text = capsys.readouterr().out
    assert _state(repo) == before
    assert f"Compared with {md(base)} ({base[:12]}) → the working tree." in text
    assert "### Rows: +2 −1 in 1 recipe" in text
    assert "| tiny | 2 | 1 | 0 |" in text
    assert "| 2026-01-09 | node-a | 1.0.0 | 512 |  | 0 | 1 |  | 30.25 |" in text
    assert "<summary>1 row removed from tiny</summary>" in text
    assert "| 2026-01-02 | node-a | 1.0.0 | 2048 |  | 0 | 1 |  | 48.25 |" in text
    assert "### Findings: 1 opened, 0 closed" in text
    assert "- opened: **tiny**: A loss since 1.0.0 on 2026-01-09: the later run read 30.25–30.5 tok/s" in text
    assert "Decode at 512-token prompt" in text
    assert "### Headline figures changed: 1 recipe" in text
    assert (
        "| Tiny model on a test GPU | prompt 512, context 0, concurrency 1 | Decode (tok/s per stream) | "
        "50.5 (2026-01-02, node-a) | 30.375 (2026-01-09, node-a, 2 trials) |" in text
    )


def test_revision_to_revision_closes_the_finding(repo: Path) -> None:
    (repo / "data/rows/tiny/2026-01-09-node-a.csv").write_text(
        HEADER + _row("2026-01-09", 512, 30.25) + _row("2026-01-09", 512, 30.5)
    )
    with_finding = commit(repo, "slow rows")
    (repo / "data/rows/tiny/2026-01-09-node-a.csv").unlink()
    (repo / "data/rows/tiny/2026-01-10-node-a.csv").write_text(HEADER + _row("2026-01-10", 512, 50.0))
    fixed = commit(repo, "slow rows were a mistake")
    # the working tree holds an unrelated edit; --head compares the revision, not the tree
    (repo / "content/recipes/tiny.md").write_text(
        (repo / "content/recipes/tiny.md").read_text() + "\nMore.\n"
    )
    diff = diff_revisions(load_config(repo), with_finding, fixed)
    assert [f["recipe"] for f in diff.closed] == ["tiny"] and diff.opened == []
    assert [(r.recipe, len(r.added), len(r.removed)) for r in diff.rows] == [("tiny", 1, 2)]
    assert diff.pages_edited == []
    text = render_markdown(diff)
    assert "### Findings: 0 opened, 1 closed" in text
    # against the working tree the page edit shows
    assert diff_revisions(load_config(repo), fixed).pages_edited == ["content/recipes/tiny.md"]


def test_edited_rows_are_not_added_and_removed(repo: Path) -> None:
    base = git(repo, "rev-parse", "HEAD").strip()
    path = repo / "data/rows/tiny/2026-01-02-node-a.csv"
    path.write_text(path.read_text().replace("synthetic test row", "synthetic test row (with a note)"))
    diff = diff_revisions(load_config(repo), base)
    (change,) = diff.rows
    assert (len(change.added), len(change.removed), len(change.edited)) == (0, 0, 2)
    assert change.edited_fields() == ["source"]
    assert "| tiny | 0 | 0 | 2 (source) |" in render_markdown(diff)


def test_moving_a_file_changes_nothing(repo: Path) -> None:
    base = git(repo, "rev-parse", "HEAD").strip()
    (repo / "data/rows/tiny/2026-01-02-node-a.csv").rename(repo / "data/rows/tiny/renamed.csv")
    diff = diff_revisions(load_config(repo), base)
    assert diff.empty
    assert render_markdown(diff).endswith("No change to rows, findings, headline figures or pages.\n")


def test_errors_in_the_change_are_listed(repo: Path) -> None:
    base = git(repo, "rev-parse", "HEAD").strip()
    (repo / "data/rows/tiny/bad.csv").write_text(
        HEADER + _row("2026-01-09", 512, 30.25).replace("node-a", "node-z")
    )
    text = render_markdown(diff_revisions(load_config(repo), base))
    assert "**`check` fails: 1 error.**" in text
    assert "- `data/rows/tiny/bad.csv:2: unknown node 'node-z' (not in data/nodes.yaml)`" in text
    assert "Findings and headline figures are not compared" in text


def test_site_in_a_subfolder_and_a_base_without_it(tmp_path: Path, make_site: MakeSite) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "README").write_text("x\n")
    empty = commit(repo, "no site yet")
    site = make_site()
    site.rename(repo / "site-root")
    commit(repo, "add the site")
    diff = diff_revisions(load_config(repo / "site-root"), empty)
    assert not diff.base.exists
    assert [(r.recipe, len(r.added)) for r in diff.rows] == [("tiny", 2)]
    assert diff.pages_added == ["content/recipes/tiny.md"]
    assert "The base revision has no site at this path: everything is new." in render_markdown(diff)
    assert diff_revisions(load_config(repo / "site-root"), "HEAD").empty


def test_unknown_revision(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(ConfigError, match="'no-such-branch' is not a revision of the repository at"):
        diff_revisions(load_config(repo), "no-such-branch")
    assert main(["diff", "--root", str(repo), "--base", "--upload-pack=touch x"]) == 1
    assert "is not a revision" in capsys.readouterr().err
    assert not (repo / "x").exists()


def test_out_appends_to_a_summary_file(
    repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n")
    assert main(["diff", "--root", str(repo), "--base", "HEAD", "--out", str(summary)]) == 0
    printed = capsys.readouterr().out
    assert summary.read_text() == "earlier step\n" + printed


def test_markdown_escaping_keeps_contributor_text_inert() -> None:
    assert md("a|b <img src=x> [link](javascript:x) `code`\nnext") == (
        "a\\|b \\<img src=x\\> \\[link\\](javascript:x) \\`code\\` next"
    )


def _outside_code(text: str) -> str:
    return re.sub(r"`[^`]*`", "", text)


def test_mentions_and_references_are_put_in_code_spans() -> None:
    text = md("ping @octocat and @my-org/core-team: fixes #123, gh-7 and GH-8 (mail a@b.org)")
    assert text == (
        "ping `@octocat` and `@my-org/core-team`: fixes `#123`, `gh-7` and `GH-8` (mail a`@b`.org)"
    )
    assert not re.search(r"@\w|#\d|gh-\d", _outside_code(text), re.I)


def test_the_summary_notifies_nobody(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = git(repo, "rev-parse", "HEAD").strip()
    recipe = repo / "content/recipes/tiny.md"
    recipe.write_text(
        recipe.read_text().replace(
            "title: Tiny model on a test GPU", 'title: "Tiny @octocat/team fixes #12 GH-3"'
        )
    )
    (repo / "data/rows/tiny/2026-01-09-node-a.csv").write_text(
        HEADER + _row("2026-01-09", 512, 30.25) + _row("2026-01-09", 512, 30.5)
    )
    commit(repo, "PR: a title that pings")
    assert main(["diff", "--root", str(repo), "--base", base]) == 0
    text = capsys.readouterr().out
    assert "| Tiny `@octocat/team` fixes `#12` `GH-3` | prompt 512" in text
    assert not re.search(r"@\w|#\d|gh-\d", _outside_code(text), re.I)

"""The command-line contract: options, output formats and exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from builder.cli import main
from tests.conftest import SITES, MakeSite, run_builder


def test_check_clean_site_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "--root", str(SITES / "minimal")]) == 0
    assert "0 errors" in capsys.readouterr().out


def test_check_json_contract(make_site: MakeSite, capsys: pytest.CaptureFixture[str]) -> None:
    root = make_site(
        {
            "data/rows/tiny/bad.csv": "date,recipe,node,engine_version,prompt_tokens,concurrency,decode_tok_s\n2026-01-03,tiny,node-a,1.0.0,512,1,fast\n"
        }
    )
    assert main(["check", "--root", str(root), "--format", "json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert set(report) == {"stats", "errors", "warnings", "findings"}
    assert report["stats"]["rows"] == 2 and report["stats"]["recipes"] == 1
    assert report["errors"] == [
        {"path": "data/rows/tiny/bad.csv", "line": 2, "message": "decode_tok_s must be a number, not 'fast'"}
    ]
    assert isinstance(report["findings"], list)


def test_check_text_and_github_formats(make_site: MakeSite, capsys: pytest.CaptureFixture[str]) -> None:
    root = make_site(
        {
            "data/rows/tiny/bad.csv": "date,recipe,node,engine_version,prompt_tokens,concurrency,decode_tok_s\n2026-01-03,tiny,node-b,1.0.0,512,1,5\n"
        }
    )
    assert main(["check", "--root", str(root)]) == 1
    assert (
        "data/rows/tiny/bad.csv:2: unknown node 'node-b' (not in data/nodes.yaml)"
        in capsys.readouterr().out.splitlines()
    )
    assert main(["check", "--root", str(root), "--format", "github"]) == 1
    out = capsys.readouterr().out.splitlines()
    assert "::error file=data/rows/tiny/bad.csv,line=2::unknown node 'node-b' (not in data/nodes.yaml)" in out


def test_usage_errors_exit_2() -> None:
    assert run_builder("check", "--format", "yaml").returncode == 2
    assert run_builder("nonsense").returncode == 2
    assert run_builder().returncode == 2


def test_build_writes_site_and_reports(make_site: MakeSite, tmp_path: Path) -> None:
    # On a copy: a build keeps its record in <root>/.cache, which must not land in the fixtures.
    out = tmp_path / "out"
    result = run_builder("build", "--root", str(make_site()), "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert (out / "recipes" / "tiny" / "index.html").is_file()
    assert str(out) in result.stdout


def test_build_failure_exits_1_with_located_errors(make_site: MakeSite, tmp_path: Path) -> None:
    root = make_site({"content/recipes/tiny.md": "---\ntitle: x\n---\n"})
    result = run_builder("build", "--root", str(root), "--out", str(tmp_path / "out"))
    assert result.returncode == 1
    assert "content/recipes/tiny.md:1: missing required key 'model'" in result.stderr
    assert "build failed" in result.stderr
    assert not (tmp_path / "out").exists()


def test_bad_root_is_a_clear_error(tmp_path: Path) -> None:
    result = run_builder("check", "--root", str(tmp_path / "nowhere"))
    assert result.returncode == 1
    assert "is not a folder" in result.stderr


def test_build_refuses_foreign_output_folder(make_site: MakeSite, tmp_path: Path) -> None:
    out = tmp_path / "precious"
    out.mkdir()
    (out / "thesis.tex").write_text("do not delete")
    result = run_builder("build", "--root", str(make_site()), "--out", str(out))
    assert result.returncode == 1
    assert "refusing" in result.stderr
    assert (out / "thesis.tex").read_text() == "do not delete"


def test_check_process_keeps_its_exit_code_and_whole_output(make_site: MakeSite) -> None:
    # check ends its process without teardown: the code it returns and everything it printed stay.
    from tests.rowsite import history, site_files
    from tests.rowsite import run as trial_run

    rows = history(
        trial_run("2026-01-01", 100.0), trial_run("2026-02-01", 101.0), trial_run("2026-03-01", 70.0)
    )
    root = make_site(site_files(rows))
    assert run_builder("check", "--root", str(root)).returncode == 0
    strict = run_builder("check", "--root", str(root), "--strict")
    assert strict.returncode == 1
    assert strict.stdout.rstrip().endswith("(1 without annotation: failing under --strict)")
    broken = make_site({"data/rows/tiny/bad.csv": "date,recipe\n2026-01-03,tiny,extra\n"})
    failed = run_builder("check", "--root", str(broken))
    assert failed.returncode == 1
    assert failed.stdout.rstrip().splitlines()[-1].endswith("0 findings")
    assert "data/rows/tiny/bad.csv:1: missing required column" in failed.stdout

"""``check`` reports findings (json, text, github) and ``--strict`` fails on unannotated ones."""

from __future__ import annotations

import json

import pytest

from builder.cli import main
from tests.conftest import MakeSite
from tests.rowsite import history, run, site_files

ROWS = history(run("2026-01-01", 100.0), run("2026-02-01", 101.0), run("2026-03-01", 70.0))
ANNOTATION = "- recipe: tiny\n  status: acknowledged\n  reason: Known; a synthetic test annotation.\n"


@pytest.mark.parametrize(
    ("rows", "annotations", "strict", "code"),
    [
        (ROWS, None, False, 0),  # findings alone never fail check
        (ROWS, None, True, 1),  # --strict: an unannotated finding fails
        (ROWS, ANNOTATION, True, 0),  # ...an annotated one does not
        (run("2026-01-01", 100.0), None, True, 0),  # no finding at all
    ],
)
def test_exit_codes(
    make_site: MakeSite,
    capsys: pytest.CaptureFixture[str],
    rows: list[dict[str, object]],
    annotations: str | None,
    strict: bool,
    code: int,
) -> None:
    root = make_site(site_files(rows, **{"data/annotations.yaml": annotations}))
    argv = ["check", "--root", str(root), "--format", "json"] + (["--strict"] if strict else [])
    assert main(argv) == code
    report = json.loads(capsys.readouterr().out)
    assert report["errors"] == []
    assert len(report["findings"]) == (1 if rows is ROWS else 0)
    assert report["stats"]["findings_open"] == (1 if rows is ROWS and annotations is None else 0)


def test_errors_still_exit_1_without_strict(make_site: MakeSite, capsys: pytest.CaptureFixture[str]) -> None:
    root = make_site(
        site_files(
            ROWS,
            **{
                "data/annotations.yaml": "- recipe: tiny\n  metric: itl_ms\n  status: acknowledged\n  reason: x\n"
            },
        )
    )
    assert main(["check", "--root", str(root), "--format", "json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert [e["line"] for e in report["errors"]] == [1]
    assert len(report["findings"]) == 1  # still reported alongside the error


def test_json_findings_follow_the_contract(make_site: MakeSite, capsys: pytest.CaptureFixture[str]) -> None:
    root = make_site(site_files(ROWS, **{"data/annotations.yaml": ANNOTATION}))
    assert main(["check", "--root", str(root), "--format", "json"]) == 0
    [finding] = json.loads(capsys.readouterr().out)["findings"]
    assert {
        "kind",
        "recipe",
        "metric",
        "setting",
        "runs",
        "departs",
        "change",
        "direction",
        "summary",
        "detail",
        "explained_by",
        "ruled_out",
        "annotation",
    } <= set(finding)
    assert finding["kind"] == "non_reproducing"
    assert finding["annotation"]["reason"] == "Known; a synthetic test annotation."
    assert finding["annotation"]["line"] == 1


def test_text_lists_each_finding_at_its_row(make_site: MakeSite, capsys: pytest.CaptureFixture[str]) -> None:
    root = make_site(site_files(ROWS))
    assert main(["check", "--root", str(root)]) == 0
    lines = capsys.readouterr().out.splitlines()
    # The finding's sentence first, then its metric and setting, then its explanation.
    assert lines[0].startswith("data/rows/tiny/synthetic.csv:4: finding (tiny): A loss since 1.0.0 on ")
    assert lines[0].index("(−") < lines[0].index("Decode at 2,048-token prompt")
    assert "Unexplained by the recorded metadata." in lines[0]
    assert lines[-1].endswith("1 finding")


def test_github_annotations_point_at_the_departing_row(
    make_site: MakeSite, capsys: pytest.CaptureFixture[str]
) -> None:
    root = make_site(site_files(ROWS))
    assert main(["check", "--root", str(root), "--format", "github"]) == 0
    [line] = capsys.readouterr().out.splitlines()
    assert line.startswith(
        "::notice file=data/rows/tiny/synthetic.csv,line=4,title=non-reproducing decode_tok_s::"
    )


def test_rows_no_comparison_can_use_are_warned_about_in_every_format(
    make_site: MakeSite, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = history(
        run("2026-01-01", 100.0),  # line 2: compared with line 3
        run("2026-02-01", 101.0),
        run("2026-02-01", 50.0, prompt_tokens="unknown"),  # line 4
        run("2026-02-01", 60.0, metric="aggregate_tok_s", concurrency="", request_rate=10),  # line 5
    )
    root = make_site(site_files(rows))
    assert main(["check", "--root", str(root), "--format", "json"]) == 0
    warnings = json.loads(capsys.readouterr().out)["warnings"]
    assert [(w["kind"], w["path"], w["line"]) for w in warnings] == [
        ("not_compared", "data/rows/tiny/synthetic.csv", 4),
        ("not_compared", "data/rows/tiny/synthetic.csv", 5),
    ]
    assert "prompt length is unknown" in warnings[0]["message"]
    assert "no other run of recipe 'tiny' measured this setting" in warnings[1]["message"]
    assert "10 req/s" in warnings[1]["message"]
    assert main(["check", "--root", str(root)]) == 0
    text = capsys.readouterr().out
    assert "data/rows/tiny/synthetic.csv:4: not compared: the prompt length is unknown" in text
    assert main(["check", "--root", str(root), "--format", "github"]) == 0
    github = capsys.readouterr().out
    assert "::warning file=data/rows/tiny/synthetic.csv,line=5::not compared: no other run" in github


def test_a_drift_is_titled_as_one_on_github(make_site: MakeSite, capsys: pytest.CaptureFixture[str]) -> None:
    values = [100.0, 95.0, 90.25, 85.74, 81.45]  # each step -5 %, first to last -18.5 %
    rows = history(*(run(f"2026-0{i + 1}-01", v) for i, v in enumerate(values)))
    root = make_site(site_files(rows))
    assert main(["check", "--root", str(root), "--format", "github"]) == 0
    notices = [line for line in capsys.readouterr().out.splitlines() if line.startswith("::notice")]
    assert len(notices) == 1 and "title=drifting decode_tok_s::A steady loss over 5 runs" in notices[0]


def test_runs_told_apart_only_by_flag_order_are_one_run_for_the_not_compared_warning(
    make_site: MakeSite, capsys: pytest.CaptureFixture[str]
) -> None:
    """Runs are those findings compare: flags in another order are the same serve command, so two
    rows of one date differing only so are one run, alone at their setting (as findings see it)."""
    reordered = "--kv-cache-dtype fp8 --max-model-len 4096"  # the recipe's flags, in another order
    rows = history(
        run("2026-01-01", 100.0, concurrency=4),  # line 2
        run("2026-01-01", 101.0, concurrency=4, flags=reordered),  # line 3
        run("2026-01-01", 99.0),  # lines 4-5: compared with each other
        run("2026-02-01", 98.0),
    )
    root = make_site(site_files(rows))
    assert main(["check", "--root", str(root), "--format", "json"]) == 0
    warnings = json.loads(capsys.readouterr().out)["warnings"]
    assert [(w["kind"], w["line"]) for w in warnings] == [("not_compared", 2), ("not_compared", 3)]

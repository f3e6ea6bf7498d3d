"""``check_site`` (builder.review.check): the brief findings the text and GitHub formats print are the
full ``as_json`` findings cut down, so those formats print the same either way; a content load
started ahead (as ``check`` does on big sites) changes nothing printed."""

from __future__ import annotations

import pytest

from builder.commands.report import format_findings, format_github
from builder.config import load_config
from builder.review.check import check_site
from tests.conftest import MakeSite
from tests.rowsite import history, run, site_files

ROWS = history(
    run("2026-01-01", 100.0),
    run("2026-02-01", 101.0),
    run("2026-03-01", 70.0),
    run("2026-03-01", 100.5, metric="aggregate_tok_s"),
    run("2026-04-01", 130.0, metric="aggregate_tok_s"),
)
ANNOTATION = "- recipe: tiny\n  metric: decode_tok_s\n  status: acknowledged\n  reason: Synthetic, known.\n"


def test_brief_findings_are_the_full_ones_cut_down(make_site: MakeSite) -> None:
    root = make_site(site_files(ROWS, **{"data/annotations.yaml": ANNOTATION}))
    full = check_site(load_config(root))
    short = check_site(load_config(root), full=False)
    assert len(full.findings) == 2
    assert sorted(f["annotation"] is None for f in full.findings) == [False, True]
    assert short.findings == [{key: f[key] for key in short.findings[0]} for f in full.findings]
    assert set(short.findings[0]) == {
        "kind",
        "recipe",
        "metric",
        "summary",
        "detail",
        "explanation",
        "path",
        "line",
        "annotation",
    }
    assert format_findings(short.findings) == format_findings(full.findings)
    assert format_github([], [], short.findings) == format_github([], [], full.findings)
    assert short.stats == full.stats
    assert short.summary() == full.summary()


def test_the_summary_counts_in_words_singular_for_one() -> None:
    from builder.review.check import CheckReport

    report = CheckReport(
        stats={"rows": 100000, "recipes": 1, "case_studies": 2, "posts": 0}, errors=[], warnings=[]
    )
    assert (
        report.summary()
        == "100,000 rows, 1 recipe, 2 case studies, 0 posts: 0 errors, 0 warnings, 0 findings"
    )


def test_counted_words() -> None:
    from builder.wording import counted

    assert [counted(0, "row"), counted(1, "row"), counted(2, "case study", "case studies")] == [
        "0 rows",
        "1 row",
        "2 case studies",
    ]


@pytest.mark.parametrize("broken", [False, True])
def test_content_parsed_in_a_child_gives_the_same_report(
    make_site: MakeSite, monkeypatch: pytest.MonkeyPatch, broken: bool
) -> None:
    """A big site's content pages are parsed in a forked child while the rows load: the same
    stats, problems (in the same order) and findings as one process."""
    import builder.review.check

    extra = {"content/posts/bad.md": "---\ntitle: [unclosed\n---\nBody.\n"} if broken else {}
    root = make_site(site_files(ROWS, **extra))
    monkeypatch.setattr(builder.review.check, "FORK_PAGES", 10**9)
    alone = check_site(load_config(root)).as_json()
    monkeypatch.setattr(builder.review.check, "FORK_PAGES", 0)
    assert check_site(load_config(root)).as_json() == alone
    assert alone["errors" if broken else "findings"]


def test_check_warns_when_more_than_5_percent_of_a_runs_requests_failed(make_site: MakeSite) -> None:
    rows = history(
        run("2026-01-01", 100.0, requests=20, failed_requests=1),  # 5 %: no warning
        run("2026-02-01", 101.0, requests=20, failed_requests=2),  # 10 %
        run("2026-03-01", 99.0),  # not recorded
    )
    report = check_site(load_config(make_site(site_files(rows))))
    warned = [w for w in report.warnings if w.kind == "failed_requests"]
    assert [w.message for w in warned] == [
        "2 of 20 requests failed (10 %, more than 5 %): the metrics are of the requests that succeeded; "
        "check the run"
    ]
    assert warned[0].line == 3

"""Rows and front matter that could take the answer over (issue 31): a date after the build's day, a
throughput of 0, identifiers that are not what they look like. Each is an error at path:line in
``check`` (tests/sites_invalid/ holds the exact messages of the row cases). Every row is synthetic."""

from __future__ import annotations

from pathlib import Path

import pytest

from builder.config import load_config
from builder.review.check import check_site
from tests.conftest import MakeSite
from tests.rowsite import history, rows_csv, run

JAN_1 = "1767225600"
"""SOURCE_DATE_EPOCH of 2026-01-01 (the minimal site's rows are dated 2026-01-02)."""


def _errors(root: Path) -> list[str]:
    return [p.format() for p in check_site(load_config(root)).errors]


def test_a_row_may_be_dated_one_day_after_the_build_day_and_no_later(
    make_site: MakeSite, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", JAN_1)
    rows = history(run("2026-01-02", 50.0, node="node-a"), run("2026-01-03", 50.0, node="node-a"))
    root = make_site({"data/rows/tiny/late.csv": rows_csv(rows)})
    [error] = _errors(root)
    assert error.startswith(
        "data/rows/tiny/late.csv:3: date 2026-01-03 is after the build's day 2026-01-01 (one day of grace"
    )
    # Without SOURCE_DATE_EPOCH the build's day is today: the same rows are long past.
    monkeypatch.delenv("SOURCE_DATE_EPOCH")
    assert _errors(root) == []


def test_the_minimal_site_passes_on_its_own_day(make_site: MakeSite, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", JAN_1)
    assert _errors(make_site()) == []


def test_an_id_or_slug_ending_in_a_newline_is_refused(make_site: MakeSite) -> None:
    nodes = 'node-a:\n  hardware: test-gpu\n  description: synthetic\n"node-b\\n":\n  hardware: test-gpu\n'
    root = make_site(
        {"data/nodes.yaml": nodes, "content/posts/evil\n.md": "---\ntitle: E\ndate: 2026-01-01\n---\nx\n"}
    )
    # Messages show the newline escaped (Problem.format): one problem, one line.
    assert _errors(root) == [
        "content/posts/evil\\n.md: file name 'evil\\n' is not a valid slug (lowercase letters, digits, "
        "'.', '-', '_')",
        "data/nodes.yaml:4: id 'node-b\\n' must be lowercase letters, digits, '.', '-' or '_'",
    ]


def test_recipe_identifiers_are_printable_ascii_and_prose_keeps_unicode(make_site: MakeSite) -> None:
    recipe = (
        "---\ntitle: Tiny — ein Modell für Tests\nmodel: example/tiny\ncheckpoint: example/tiny-fp8\n"
        'hardware: test-gpu\nengine: vllm\nengine_version: "1.0.0\\uFEFF"\n'
        'flags: "--max-model-len 4096 --kv-cache-dtype fp8\\u0430"\nenv:\n  EXAMPLE_ENV: "1\\u200B"\n'
        "summary: Prose keeps Unicode — naïve, café\u200d.\n---\nBody, Unicode welcome: Übersicht.\n"
    )
    root = make_site({"content/recipes/tiny.md": recipe, "data/rows/tiny/2026-01-02-node-a.csv": None})
    assert _errors(root) == [
        "content/recipes/tiny.md:7: engine_version '1.0.0\\ufeff' holds the invisible format character U+FEFF "
        "(ZERO WIDTH NO-BREAK SPACE) at character 6: it is matched whole against other runs and the recipe, "
        "so it is printable ASCII; type it again",
        "content/recipes/tiny.md:8: flags '--max-model-len 4096 --kv-cache-dtype fp8\\u0430' holds U+0430 "
        "(CYRILLIC SMALL LETTER A) at character 42: it is matched whole against other runs and the recipe, "
        "so it is printable ASCII; type it again",
        "content/recipes/tiny.md:10: env EXAMPLE_ENV '1\\u200b' holds the invisible format character U+200B "
        "(ZERO WIDTH SPACE) at character 2: it is matched whole against other runs and the recipe, so it is "
        "printable ASCII; type it again",
    ]


def test_a_failed_run_recorded_as_zero_gives_no_finding_but_an_error(make_site: MakeSite) -> None:
    rows = history(run("2026-01-02", 70.5), run("2026-01-03", 0.0, notes="server crashed"))
    root = make_site(
        {"data/rows/tiny/zero.csv": rows_csv(rows), "data/rows/tiny/2026-01-02-node-a.csv": None}
    )
    report = check_site(load_config(root))
    assert [p.format() for p in report.errors] == [
        "data/rows/tiny/zero.csv:3: decode_tok_s is 0: a run that failed has no throughput; leave "
        "decode_tok_s empty and say in notes what failed (the row keeps any figure the run did measure)"
    ]
    assert report.exit_code == 1

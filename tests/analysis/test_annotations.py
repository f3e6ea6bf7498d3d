"""``data/annotations.yaml``: curators' reasons attached to findings (builder.analysis.annotations)."""

from __future__ import annotations

from pathlib import Path

import pytest

from builder.config import load_config
from builder.engine.incremental import build
from builder.errors import BuildAborted
from tests.conftest import MakeSite
from tests.rowsite import history, load, run, site_files

# One finding: decode_tok_s at 2,048 / context 0 / concurrency 1 on test-gpu, the 2026-03-01 run departs.
ROWS = history(run("2026-01-01", 100.0), run("2026-02-01", 101.0), run("2026-03-01", 70.0))


def _problems(make_site: MakeSite, annotations: str) -> list[str]:
    loaded = load(make_site, ROWS, **{"data/annotations.yaml": annotations})
    return [p.format() for p in loaded.problems.errors]


def test_annotation_attaches_to_its_finding(make_site: MakeSite) -> None:
    loaded = load(
        make_site,
        ROWS,
        **{
            "data/annotations.yaml": """\
            # curators' notes (synthetic)
            - recipe: tiny
              metric: decode_tok_s
              setting: {prompt_tokens: 2048, concurrency: 1, context_tokens: 0, hardware: test-gpu}
              date: 2026-03-01
              status: upstream_issue
              reason: A regression in the engine's scheduler.
              link: https://example.org/issues/1
              by: "@curator"
              annotated: 2026-03-05
            """
        },
    )
    assert loaded.problems.errors == []
    assert loaded.recon is not None
    [finding] = loaded.recon.findings
    assert finding.annotation == {
        "recipe": "tiny",
        "metric": "decode_tok_s",
        "setting": {"hardware": "test-gpu", "prompt_tokens": 2048, "context_tokens": 0, "concurrency": 1},
        "date": "2026-03-01",
        "status": "upstream_issue",
        "reason": "A regression in the engine's scheduler.",
        "link": "https://example.org/issues/1",
        "by": "@curator",
        "annotated": "2026-03-05",
        "path": "data/annotations.yaml",
        "line": 2,
    }
    assert not finding.is_open
    assert loaded.recon.open_findings == []


def test_a_recipe_wide_annotation_selects_all_its_findings(make_site: MakeSite) -> None:
    rows = ROWS + run("2026-01-01", 10.0, metric="ttft_ms") + run("2026-03-01", 20.0, metric="ttft_ms")
    loaded = load(
        make_site,
        rows,
        **{
            "data/annotations.yaml": "- recipe: tiny\n  status: distribution_change\n  reason: New weights.\n"
        },
    )
    assert loaded.problems.errors == []
    assert loaded.recon is not None
    assert sorted(f.metric for f in loaded.recon.findings) == ["decode_tok_s", "ttft_ms"]
    assert all(
        f.annotation and f.annotation["status"] == "distribution_change" for f in loaded.recon.findings
    )


@pytest.mark.parametrize(
    ("selectors", "described"),
    [
        ("metric: ttft_ms", "recipe 'tiny', metric ttft_ms"),
        ("setting: {concurrency: 8}", "recipe 'tiny', concurrency 8"),
        ("date: 2026-02-15", "recipe 'tiny', a run on 2026-02-15"),
    ],
)
def test_an_annotation_that_matches_no_finding_is_an_error(
    make_site: MakeSite, selectors: str, described: str
) -> None:
    text = f"- recipe: tiny\n  status: acknowledged\n  reason: Seen.\n\n- recipe: tiny\n  {selectors}\n  status: acknowledged\n  reason: Typo.\n"
    assert _problems(make_site, text) == [
        f"data/annotations.yaml:5: annotation matches no finding ({described}); its findings: decode_tok_s at "
        "2,048-token prompt, context 0, concurrency 1, on test-gpu. Remove it or correct its selectors"
    ]


def test_an_annotation_on_a_recipe_without_findings_is_an_error(make_site: MakeSite) -> None:
    loaded = load(
        make_site,
        run("2026-01-01", 100.0),
        **{
            "data/annotations.yaml": "- recipe: tiny\n  status: acknowledged\n  reason: Nothing to explain.\n"
        },
    )
    assert [p.format() for p in loaded.problems.errors] == [
        "data/annotations.yaml:1: annotation matches no finding (recipe 'tiny'); the recipe has no finding. "
        "Remove it or correct its selectors"
    ]


def test_two_annotations_for_one_finding_is_an_error(make_site: MakeSite) -> None:
    text = (
        "- recipe: tiny\n  status: acknowledged\n  reason: One.\n"
        "- recipe: tiny\n  metric: decode_tok_s\n  status: acknowledged\n  reason: Two.\n"
    )
    assert _problems(make_site, text) == [
        "data/annotations.yaml:4: annotation selects the finding "
        "tiny-decode_tok_s-test-gpu-p2048-x0-c1-2026-03-01 already annotated on line 1"
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "recipe: tiny\n",
            [
                "data/annotations.yaml:1: must be a list of annotations (each item starting with '- recipe: ...')"
            ],
        ),
        (
            "- just text\n",
            ["data/annotations.yaml:1: an annotation must be a mapping (recipe, status, reason, ...)"],
        ),
        (
            "- recipe: tiny\n  status: acknowledged\n  reason: x\n  colour: red\n",
            ["data/annotations.yaml:4: unknown key 'colour'"],
        ),
        (
            "- recipe: tiny\n  status: fixed\n  reason: x\n",
            [
                "data/annotations.yaml:2: 'status': Input should be 'acknowledged', 'distribution_change' or "
                "'upstream_issue' (got 'fixed')"
            ],
        ),
        (
            "- recipe: tiny\n  status: acknowledged\n",
            ["data/annotations.yaml:1: missing required key 'reason'"],
        ),
        (
            "- recipe: tiny\n  status: acknowledged\n  reason: x\n  link: javascript:alert(1)\n",
            ["data/annotations.yaml:4: 'link' must be an http(s) URL (got 'javascript:alert(1)')"],
        ),
        (
            "- recipe: tiny\n  status: upstream_issue\n  reason: x\n",
            ["data/annotations.yaml:1: an 'upstream_issue' annotation needs a 'link' to the issue"],
        ),
        (
            "- recipe: tiny\n  metric: speed\n  status: acknowledged\n  reason: x\n",
            [
                "data/annotations.yaml:2: 'metric': Input should be 'decode_tok_s', 'aggregate_tok_s', "
                "'prefill_tok_s', 'ttft_ms' or 'itl_ms' (got 'speed')"
            ],
        ),
        (
            "- recipe: nope\n  status: acknowledged\n  reason: x\n",
            ["data/annotations.yaml:1: unknown recipe 'nope' (no content/recipes/nope.md)"],
        ),
        (
            "- recipe: tiny\n  status: acknowledged\n  reason: x\n  reason: y\n",
            ["data/annotations.yaml:4: duplicate key 'reason' (first defined on line 3)"],
        ),
        ("- recipe: [tiny\n", ["data/annotations.yaml:2: invalid YAML: did not find expected ',' or ']'"]),
    ],
)
def test_invalid_annotations_are_located(make_site: MakeSite, text: str, expected: list[str]) -> None:
    assert _problems(make_site, text) == expected


def test_an_unmatched_annotation_aborts_the_build(make_site: MakeSite, tmp_path: Path) -> None:
    root = make_site(
        site_files(
            ROWS,
            **{
                "data/annotations.yaml": "- recipe: tiny\n  metric: itl_ms\n  status: acknowledged\n  reason: x\n"
            },
        )
    )
    with pytest.raises(BuildAborted) as info:
        build(load_config(root, tmp_path / "out"))
    assert [p.line for p in info.value.problems] == [1]
    assert not (tmp_path / "out").exists()

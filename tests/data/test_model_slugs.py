"""Slugs of a base model's pages (builder/model_slugs.py), and what listing them does not import."""

from __future__ import annotations

from pathlib import Path

import pytest

from builder.data.model_slugs import model_slug, model_slugs
from tests.conftest import edit_first_recipe, imported_by_build, synthetic_site


def test_model_slug_keeps_dots_and_lowercases() -> None:
    assert model_slug("Qwen/Qwen3.6-35B-A3B") == "qwen-qwen3.6-35b-a3b"
    assert model_slug("--//") == "model"


def test_models_sharing_a_slug_are_numbered_in_sorted_order() -> None:
    assert model_slugs(["a/b", "A/B", "c"]) == {"A/B": "a-b", "a/b": "a-b-2", "c": "c"}


def test_an_edit_build_does_not_import_the_comparisons(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # It renders no comparison page (and, without case studies, no side-by-side chart): the page
    # jobs list the comparison pages through model_slugs alone.
    root = synthetic_site(tmp_path / "site", monkeypatch, recipes=4, rows=6, cases=0, posts=1)
    imported_by_build(root, ())
    edit_first_recipe(root)
    printed, imported = imported_by_build(root, ("builder.site.comparisons", "builder.site.figure_grid"))
    assert "built" in printed
    assert imported == []

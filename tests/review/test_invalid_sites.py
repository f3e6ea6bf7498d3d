"""Each broken site under tests/sites_invalid/ is the minimal site plus the files in its folder;
``check`` must report exactly the lines of its expected.txt (path:line: message), in one pass, and
``build_site`` stop with them."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from builder.config import load_config
from builder.engine.incremental import build
from builder.engine.pure import build_site
from builder.errors import BuildAborted
from builder.review.check import check_site
from tests.conftest import SITES, SITES_INVALID

CASES = sorted(p.name for p in SITES_INVALID.iterdir() if p.is_dir())

BUILD_DAY = "1796256000"
"""SOURCE_DATE_EPOCH of 2026-12-03: a message that names the build's day reads the same on every day the
suite runs."""


@pytest.fixture(autouse=True)
def _fixed_build_day(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", BUILD_DAY)


def _overlay(case: str, tmp_path: Path) -> Path:
    root = tmp_path / "site"
    shutil.copytree(SITES / "minimal", root)
    for path in (SITES_INVALID / case).rglob("*"):
        if path.is_file() and path.name != "expected.txt":
            target = root / path.relative_to(SITES_INVALID / case)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)
    return root


@pytest.mark.parametrize("case", CASES)
def test_check_reports_exact_messages(case: str, tmp_path: Path) -> None:
    expected = (SITES_INVALID / case / "expected.txt").read_text(encoding="utf-8").splitlines()
    assert expected, f"{case} has no expected errors"
    report = check_site(load_config(_overlay(case, tmp_path)))
    assert [p.format() for p in report.errors] == expected
    assert report.exit_code == 1


@pytest.mark.parametrize("case", CASES)
def test_build_aborts_and_keeps_previous_site(case: str, tmp_path: Path) -> None:
    root = _overlay(case, tmp_path)
    out = tmp_path / "out"
    good = tmp_path / "good"
    shutil.copytree(SITES / "minimal", good)
    build(load_config(good, out))
    before = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    with pytest.raises(BuildAborted):
        build(load_config(root, out))
    after = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert after == before


@pytest.mark.parametrize("case", CASES)
def test_build_site_stops_with_every_problem_of_an_invalid_site(case: str, tmp_path: Path) -> None:
    expected = (SITES_INVALID / case / "expected.txt").read_text(encoding="utf-8").splitlines()
    out = tmp_path / "out"
    with pytest.raises(BuildAborted) as caught:
        build_site(load_config(_overlay(case, tmp_path), out))
    assert sorted(p.format() for p in caught.value.problems) == sorted(expected)
    assert not out.exists()

"""bench/bench_ab.py's variant syntax: a wrong parse would compare the wrong code or environment."""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))

import bench_ab  # noqa: E402


def test_a_plain_name_is_this_checkout_as_it_is() -> None:
    variant = bench_ab.parse_variant("base")
    assert (variant.name, variant.code, variant.env) == ("base", REPO, {})


def test_a_variant_names_its_checkout_and_environment(tmp_path: Path) -> None:
    variant = bench_ab.parse_variant(f"B={tmp_path}:MIMALLOC_PURGE_DELAY=-1,GLIBC_TUNABLES=a=1:b=2")
    assert variant.name == "B"
    assert variant.code == tmp_path.resolve()
    # a value may hold '=' (GLIBC_TUNABLES does); only the first ':' ends the code folder
    assert variant.env == {"MIMALLOC_PURGE_DELAY": "-1", "GLIBC_TUNABLES": "a=1:b=2"}


def test_every_kind_has_a_limit() -> None:
    assert set(bench_ab.LIMITS) == set(bench_ab.KINDS)


def test_the_guard_allows_a_build_kind_its_share_slower_and_not_more() -> None:
    # against the base: the cold build and check may be 10 % slower, the edit and add-row builds 15 %
    assert bench_ab.verdict("cold", 8.0, 9.9, 700) == "ok"
    assert bench_ab.verdict("cold", 8.0, 10.1, 700) == "MISS: +10.1 % > +10 %"
    assert bench_ab.verdict("edit", 1.0, 14.0, 700) == "ok"
    assert bench_ab.verdict("add-row", 1.0, 16.0, 700).startswith("MISS")
    assert bench_ab.verdict("check", 3.0, 11.0, 700).startswith("MISS")


def test_the_first_variant_is_judged_only_on_absolute_limits() -> None:
    assert bench_ab.verdict("cold", 100.0, None, 700) == "ok"
    assert bench_ab.verdict("serve-edit", 0.051, None, 0) == "MISS: 51 ms > 50 ms"


def test_the_guard_limits_peak_memory_to_one_gigabyte() -> None:
    assert bench_ab.verdict("add-row", 1.0, 0.0, 1024) == "ok"
    assert bench_ab.verdict("add-row", 1.0, 0.0, 1100) == "MISS: 1100 MiB > 1024 MiB"


def test_the_preview_is_judged_in_milliseconds() -> None:
    assert bench_ab.verdict("serve-edit", 0.040, 80.0, 0) == "ok"
    assert bench_ab.verdict("serve-row", 0.090, 500.0, 0) == "ok"
    assert bench_ab.verdict("serve-row", 0.101, -50.0, 0) == "MISS: 101 ms > 100 ms"


def test_the_paired_difference_is_the_median_of_each_rounds_ratio() -> None:
    first = bench_ab.Runs(seconds=[1.0, 2.0, 10.0])
    other = bench_ab.Runs(seconds=[1.1, 1.0, 10.0])
    # per round +10 %, -50 %, 0 %: not the difference of the medians (2.0 against 1.1)
    assert round(bench_ab.paired_pct(first, other), 6) == 0.0


def test_a_variant_runs_its_own_checkouts_builder(tmp_path: Path) -> None:
    (tmp_path / "builder").mkdir()
    (tmp_path / "builder" / "__init__.py").write_text("", encoding="utf-8")
    variant = bench_ab.parse_variant(f"other={tmp_path}")
    assert bench_ab.imported_builder(variant) == tmp_path.resolve() / "builder" / "__init__.py"

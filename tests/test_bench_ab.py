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

"""Pagefind's service mode: bundles in memory, each a function of its own pages, errors reported."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from builder.errors import SearchIndexError
from builder.site import pagefind_service
from builder.site.pagefind_service import IndexOptions, _Service, index_sets

OPTIONS = IndexOptions(root_selector="main", exclude_selectors=(".skip",), force_language="en")


def _page(title: str, text: str) -> bytes:
    return (
        f'<!doctype html><html lang="en"><head><title>{title}</title></head><body><main>'
        f'<h1>{title}</h1><p>{text}</p><p class="skip">hiddenword</p></main></body></html>'
    ).encode()


SETS = {
    "one": {f"records/a{n}.html": _page(f"Alpha {n}", f"apple banana {n}") for n in range(5)},
    "two": {f"records/b{n}.html": _page(f"Beta {n}", f"cherry date {n}") for n in range(3)},
    "three": {"records/c.html": _page("Gamma", "elderberry")},
}


def _pages_indexed(bundle: dict[str, bytes]) -> int:
    entry = json.loads(bundle["pagefind-entry.json"])
    return sum(language["page_count"] for language in entry["languages"].values())


def test_each_set_becomes_a_complete_bundle() -> None:
    bundles = index_sets(SETS, OPTIONS, processes=2)
    assert set(bundles) == set(SETS)
    for name, pages in SETS.items():
        bundle = bundles[name]
        assert {"pagefind.js", "pagefind-entry.json", "wasm.en.pagefind"} <= set(bundle)
        assert any(p.startswith("fragment/") for p in bundle) and any(p.startswith("index/") for p in bundle)
        assert _pages_indexed(bundle) == len(pages)


def test_a_bundle_depends_only_on_its_pages() -> None:
    """The same set gives the same bytes alone, among others, in one process or in two."""
    together = index_sets(SETS, OPTIONS, processes=1)
    spread = index_sets(SETS, OPTIONS, processes=2)
    alone = index_sets({"two": SETS["two"]}, OPTIONS)
    assert together == spread
    assert alone["two"] == together["two"]


def test_excluded_selectors_are_not_indexed() -> None:
    bundle = index_sets({"x": SETS["three"]}, OPTIONS)["x"]
    fragments = [data for path, data in bundle.items() if path.startswith("fragment/")]
    text = b"".join(gzip.decompress(f) for f in fragments)
    assert b"elderberry" in text and b"hiddenword" not in text


def test_a_refused_request_is_an_error() -> None:
    with _Service(pagefind_service.executable()) as service:
        with pytest.raises(SearchIndexError, match="Pagefind refused a request"):
            service.ask([{"type": "GetFiles", "index_id": 99}])


def test_a_binary_that_stops_is_an_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    fake = tmp_path / "pagefind"
    fake.write_text("#!/bin/sh\necho 'no service today' >&2\nexit 3\n")
    fake.chmod(0o755)
    monkeypatch.setattr(pagefind_service, "executable", lambda: fake)
    with pytest.raises(SearchIndexError, match="Pagefind stopped before answering: no service today"):
        index_sets({"x": SETS["three"]}, OPTIONS)


def test_a_missing_binary_is_an_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(pagefind_service, "executable", lambda: tmp_path / "nowhere")
    with pytest.raises(SearchIndexError, match="cannot run Pagefind"):
        index_sets({"x": SETS["three"]}, OPTIONS)


def test_only_kept_files_are_returned() -> None:
    bundle = index_sets({"x": SETS["one"]}, OPTIONS, keep=lambda path: path.startswith("fragment/"))["x"]
    assert len(bundle) == len(SETS["one"]) and all(p.startswith("fragment/") for p in bundle)


def test_the_binary_is_found_as_the_pagefind_package_finds_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from pagefind.service import get_executable

    monkeypatch.delenv("PAGEFIND_BINARY_PATH", raising=False)
    assert pagefind_service.executable() == get_executable()
    monkeypatch.setenv("PAGEFIND_BINARY_PATH", str(tmp_path / "mine"))
    assert pagefind_service.executable() == tmp_path / "mine"

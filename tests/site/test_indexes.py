"""Index pages by hardware, engine and version, and base model."""

from __future__ import annotations

from pathlib import Path

import pytest
from bs4 import BeautifulSoup

from builder.config import load_config
from builder.engine.incremental import build
from builder.site.indexes import _version_key
from tests.conftest import MakeSite

SECOND = """\
    ---
    title: Tiny, int4 build
    model: example/tiny
    checkpoint: example/tiny-int4
    hardware: test-gpu
    engine: vLLM
    engine_version: "1.10.0"
    flags: ""
    ---
    Synthetic.
    """
OTHER = """\
    ---
    title: Other model on another GPU
    model: example/other
    checkpoint: example/other
    hardware: big-gpu
    engine: sglang
    engine_version: "0.5"
    flags: ""
    ---
    Synthetic.
    """
# an old-version row of the tiny recipe: history on the 0.9.0 entry of the engine page
OLD_ROW = """\
    date,recipe,node,engine_version,prompt_tokens,concurrency,decode_tok_s,source
    2025-12-01,tiny,node-a,0.9.0,512,1,40,synthetic
    2025-12-02,tiny,node-b,0.9.0,512,1,41,synthetic
    """


def _soup(path: Path) -> BeautifulSoup:
    return BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser")


@pytest.fixture
def out(make_site: MakeSite, tmp_path: Path) -> Path:
    root = make_site(
        {
            "content/recipes/second.md": SECOND,
            "content/recipes/other.md": OTHER,
            "data/rows/tiny/2025-12-01-node-a.csv": OLD_ROW,
            "data/hardware.yaml": "test-gpu:\n  name: Test GPU\n  description: A synthetic card.\nbig-gpu:\n  name: Big GPU\n",
            "data/nodes.yaml": "node-a:\n  hardware: test-gpu\n  description: synthetic test node\n  driver: '580.1'\n"
            "node-b:\n  hardware: test-gpu\n",
        }
    )
    build(load_config(root, tmp_path / "out"))
    return tmp_path / "out"


def test_hardware_pages_list_recipes_and_nodes_with_row_counts(out: Path) -> None:
    index = _soup(out / "hardware/index.html")
    assert [a.get_text() for a in index.select(".cards h2 a")] == ["Big GPU", "Test GPU"]
    page = _soup(out / "hardware/test-gpu/index.html")
    assert page.h1 is not None and page.h1.get_text() == "Test GPU"
    assert [a["href"] for a in page.select(".cards h3 a")] == ["../../recipes/second/", "../../recipes/tiny/"]
    rows = [[td.get_text(" ", strip=True) for td in tr.find_all("td")] for tr in page.select("tbody tr")]
    assert [(r[0], r[2], r[3]) for r in rows] == [("node-a", "580.1", "3"), ("node-b", "not recorded", "1")]
    assert "2025-12-01 to 2026-01-02" in rows[0][4]
    assert _soup(out / "hardware/big-gpu/index.html").select("tbody tr") == []


def test_engine_page_lists_versions_newest_first_with_history_rows(out: Path) -> None:
    engines = _soup(out / "engines/index.html")
    # "vLLM" and "vllm" are one engine, named as most recipes spell it (a tie goes to the first)
    assert [a.get_text() for a in engines.select(".cards h2 a")] == ["sglang", "vLLM"]
    page = _soup(out / "engines/vllm/index.html")
    versions = [h.find("code").get_text() for h in page.select("section.version h2")]
    assert versions == ["1.10.0", "1.0.0", "0.9.0"]  # numeric order, not string order
    sections = {s.find("code").get_text(): s for s in page.select("section.version")}
    assert [a.get_text() for a in sections["1.10.0"].select("ul a")] == ["Tiny, int4 build"]
    assert "No rows measured" in sections["1.10.0"].get_text()
    old = sections["0.9.0"]
    assert "2 rows measured" in old.get_text(" ", strip=True)
    assert [a["href"] for a in old.select("ul a")] == ["../../recipes/tiny/#results-h"]


def test_models_index_links_comparisons_only_for_models_with_several_recipes(out: Path) -> None:
    page = _soup(out / "models/index.html")
    groups = {s.h2.get_text(): s for s in page.select("section.model-group") if s.h2}
    assert set(groups) == {"example/other", "example/tiny"}
    compare = groups["example/tiny"].select_one("a.button-link")
    assert compare is not None
    target = out / "models" / compare["href"] / "index.html"
    assert target.is_file(), "the link leads to the comparison page"
    assert groups["example/other"].select_one("a.button-link") is None


def test_version_order() -> None:
    versions = ["0.9.0", "unknown", "0.10.1", "0.10.0rc1", "1.0"]
    assert sorted(versions, key=_version_key, reverse=True)[:3] == ["1.0", "0.10.1", "0.10.0rc1"]
    assert sorted(versions, key=_version_key, reverse=True)[-1] == "unknown"


def test_the_home_page_counts_one_recipe_in_the_singular(make_site: MakeSite, tmp_path: Path) -> None:
    root = make_site()
    out = tmp_path / "out"
    build(load_config(root, out), workers=1)
    soup = BeautifulSoup((out / "index.html").read_text(encoding="utf-8"), "html.parser")
    counts = soup.select_one("header.page-head p.muted")
    assert counts is not None
    assert counts.get_text(" ", strip=True).startswith("1 recipe · ")
    assert "1 recipes" not in counts.get_text()

"""The results table, parsed: one-line rows, a short source, notes and the reproduce commands per row."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from bs4 import BeautifulSoup, Tag

from builder.config import load_config
from builder.data.load import load_site
from builder.engine.incremental import build
from builder.errors import Problems
from builder.site.reproduce import reproduce
from builder.site.tables import SOURCE_LABEL, source_label
from builder.site.views import row_anchors, rows_by_recipe
from tests.conftest import SITES

HOSTILE = "<img src=x onerror=alert(1)> & 'q' \"d\""
EXTRA_ROWS = (
    "date,recipe,node,engine_version,prompt_tokens,concurrency,decode_tok_s,flags,source,notes,harness\n"
    "2026-01-05,tiny,node-a,1.0.0,512,1,49.0,--max-model-len 2048,"
    "https://github.com/example/bench/issues/12#issuecomment-1,"
    f'"{HOSTILE.replace(chr(34), chr(34) * 2)}",llama-benchy 0.3.2\n'
    "2026-01-05,tiny,node-a,1.0.0,1024,1,48.0,,javascript:alert(1),,\n"
)


@pytest.fixture(scope="module")
def shipped(shipped_site: Path) -> Path:
    return shipped_site


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("rowtable-tiny") / "root"
    shutil.copytree(SITES / "minimal", root)
    (root / "data/rows/tiny/2026-01-05-node-a.csv").write_text(EXTRA_ROWS, encoding="utf-8")
    build(load_config(root, root.parent / "out"))
    return root


def _rows(page: Path) -> list[Tag]:
    soup = BeautifulSoup(page.read_text(encoding="utf-8"), "html.parser")
    return soup.select("table.rows tbody tr")


def _commands(tr: Tag) -> list[str]:
    details = tr.select_one("td.notes details.reproduce")
    assert details is not None and details.summary is not None
    assert details.summary.get_text(strip=True) == "Reproduce"
    return [pre.get_text() for pre in details.select("pre.cmd")]


def test_every_row_has_the_three_commands_of_its_own_row(tiny: Path) -> None:
    site = load_site(load_config(tiny), Problems())
    rows = rows_by_recipe(site)["tiny"]
    anchors = row_anchors(site, rows)
    trs = {tr["id"]: tr for tr in _rows(tiny.parent / "out/recipes/tiny/index.html")}
    assert len(trs) == len(rows) == 4
    for row in rows:
        rep = reproduce(site.recipes["tiny"].meta, "tiny", row)
        assert _commands(trs[anchors[row["row_id"]]]) == [rep.serve, rep.harness, rep.import_line]


def test_the_source_is_a_short_label_and_the_notes_are_behind_a_disclosure(tiny: Path) -> None:
    trs = _rows(tiny.parent / "out/recipes/tiny/index.html")
    by_date = {tr.time["datetime"]: tr for tr in trs if tr.time is not None and tr.select_one("td.source a")}
    linked = by_date["2026-01-05"]
    link = linked.select_one("td.source a")
    assert link is not None and link.get_text() == "github.com"
    assert link["href"] == "https://github.com/example/bench/issues/12#issuecomment-1"
    notes = linked.select_one("td.notes details:not(.reproduce)")
    assert notes is not None and notes.summary is not None and notes.summary.get_text() == "Notes"
    assert HOSTILE in notes.get_text()  # as text, not markup
    assert linked.find("img") is None
    # a scheme that is not http(s) never becomes a link
    cells = [tr.select_one("td.source") for tr in trs]
    assert all(a["href"].startswith("https://") for c in cells if c is not None for a in c.find_all("a"))
    assert any(c is not None and c.get_text() == "javascript:alert(1)" for c in cells)


def test_shipped_recipe_rows_keep_paragraphs_out_of_the_cells(shipped: Path) -> None:
    """The NVIDIA NVFP4 recipe's notes are paragraphs: no cell shows more than a short line of text
    outside a closed disclosure."""
    trs = _rows(shipped / "recipes/qwen3.6-35b-a3b-nvidia-nvfp4/index.html")
    assert len(trs) == 5
    for tr in trs:
        commands = _commands(tr)
        for td in tr.find_all("td"):
            for details in td.find_all("details"):
                assert not details.has_attr("open")
                details.extract()
            assert len(td.get_text(" ", strip=True)) <= SOURCE_LABEL + 2, td
        assert commands[0].splitlines()[1].startswith("vllm serve nvidia/Qwen3.6-35B-A3B-NVFP4")
        assert commands[1].startswith("vllm bench serve") and commands[2].startswith(
            "python -m builder import"
        )


@pytest.mark.parametrize(
    ("source", "label", "url"),
    [
        ("https://www.example.org/a/b?c=1.", "example.org", "https://www.example.org/a/b?c=1"),
        (
            "forum post (https://forums.example.com/t/366822)",
            "forums.example.com",
            "https://forums.example.com/t/366822",
        ),
        ('seed:001 recipe page "Qwen3.6 35B-A3B — NVIDIA NVFP4", overview', "seed:001 recipe page…", None),
        ("vllm bench serve result c1.json", "vllm bench serve result…", None),
        ("short", "short", None),
        ("x" * 40, "x" * (SOURCE_LABEL - 1) + "…", None),
    ],
)
def test_source_label(source: str, label: str, url: str | None) -> None:
    assert source_label(source) == (label, url)
    assert len(source_label(source)[0]) <= SOURCE_LABEL

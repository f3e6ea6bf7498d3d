"""Comparison pages: builds of one base model side by side, ratios from rows, same-checkpoint claims.

Every recipe and figure here is synthetic.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from bs4 import BeautifulSoup

from builder.config import load_config
from builder.data.model_slugs import comparison_slugs
from builder.engine.incremental import build
from builder.engine.pipeline import load_and_reconcile
from builder.site.comparisons import SHARED_SHOWN, comparison, short_labels
from builder.site.views import rows_by_recipe
from tests.chartpage import chart_values
from tests.conftest import MakeSite

TINY = """\
---
title: Tiny — reference build
model: example/tiny
checkpoint: example/tiny-fp8
hardware: test-gpu
engine: vllm
engine_version: "1.0.0"
flags: "--max-model-len 4096 --kv-cache-dtype fp8"
env:
  EXAMPLE_ENV: "1"
headline:
  prompt_tokens: 2048
sources: ["synthetic source A"]
summary: The reference build (synthetic).
---
Synthetic.
"""
FAST = """\
---
title: Tiny — fast build
model: example/tiny
checkpoint: example/tiny-fast
hardware: test-gpu
engine: vllm
engine_version: "1.0.0"
flags: "--max-model-len 4096"
---
Synthetic.
"""
SPEC = """\
---
title: Tiny — reference build with speculation
model: example/tiny
checkpoint: example/tiny-fp8
hardware: test-gpu
engine: vllm
engine_version: "1.0.0"
flags: "--max-model-len 4096 --kv-cache-dtype fp8 --speculative-config '{\\"method\\":\\"mtp\\",\\"num_speculative_tokens\\":3}'"
env:
  EXAMPLE_ENV: "1"
sources: ["synthetic source B"]
summary: Claims speculation works on the reference checkpoint (synthetic).
---
Synthetic.
"""
SOLO = """\
---
title: Solo model
model: example/solo
checkpoint: example/solo
hardware: test-gpu
engine: vllm
engine_version: "1.0.0"
flags: ""
---
Synthetic.
"""
HEADER = "date,recipe,node,engine_version,prompt_tokens,concurrency,decode_tok_s,itl_ms,weights_gib,flags,env,source\n"
REF_FLAGS = "--max-model-len 4096 --kv-cache-dtype fp8"
SPEC_FLAGS = REF_FLAGS + ' --speculative-config \'{""method"":""mtp"",""num_speculative_tokens"":3}\''
ROWS = {
    "data/rows/tiny/2026-01-02-node-a.csv": HEADER
    + f"2026-01-02,tiny,node-a,1.0.0,2048,1,40,23.5,10,{REF_FLAGS},EXAMPLE_ENV=1,synthetic\n"
    + f"2026-01-02,tiny,node-a,1.0.0,512,1,41,,10,{REF_FLAGS},EXAMPLE_ENV=1,synthetic\n"
    # later but off-recipe: the comparison must keep the matching 40
    + "2026-01-09,tiny,node-a,1.0.0,2048,1,90,,,--max-model-len 1024 --kv-cache-dtype fp8,EXAMPLE_ENV=1,synthetic\n",
    "data/rows/tiny-fast/2026-01-02-node-a.csv": HEADER
    + "2026-01-02,tiny-fast,node-a,1.0.0,2048,1,100,,8,--max-model-len 4096,,synthetic\n"
    + "2026-01-02,tiny-fast,node-a,1.0.0,2048,1,101,,8,--max-model-len 4096,,synthetic\n"
    + "2026-01-02,tiny-fast,node-a,1.0.0,2048,1,99,,8,--max-model-len 4096,,synthetic\n"
    + "2026-01-02,tiny-fast,node-a,1.0.0,8192,1,95,,,--max-model-len 4096,,synthetic\n"
    # ITL only from an off-recipe row
    + "2026-01-02,tiny-fast,node-a,1.0.0,2048,1,,9,,--max-model-len 2048,,synthetic\n",
    "data/rows/tiny-spec/2026-01-05-node-a.csv": HEADER
    + f'2026-01-05,tiny-spec,node-a,1.0.0,unknown,1,97,,,"{SPEC_FLAGS}",EXAMPLE_ENV=1,synthetic\n',
    "data/rows/solo/2026-01-02-node-a.csv": HEADER + "2026-01-02,solo,node-a,1.0.0,512,1,10,,,,,synthetic\n",
}


def _files() -> dict[str, str]:
    return {
        "content/recipes/tiny.md": TINY,
        "content/recipes/tiny-fast.md": FAST,
        "content/recipes/tiny-spec.md": SPEC,
        "content/recipes/solo.md": SOLO,
        **ROWS,
    }


@pytest.fixture
def root(make_site: MakeSite) -> Path:
    return make_site(_files())


def _comparison(root: Path):  # type: ignore[no-untyped-def]
    loaded = load_and_reconcile(load_config(root))
    assert not loaded.problems, [p.format() for p in loaded.problems]
    assert loaded.recon is not None
    slugs = comparison_slugs(loaded.site)
    return comparison(
        loaded.site, "example/tiny", slugs["example/tiny"], rows_by_recipe(loaded.site), loaded.recon
    )


def test_only_models_with_several_recipes_get_a_page(root: Path) -> None:
    loaded = load_and_reconcile(load_config(root))
    assert comparison_slugs(loaded.site) == {"example/tiny": "example-tiny"}


def test_ratio_is_computed_from_rows_at_the_matching_setting(root: Path) -> None:
    comp = _comparison(root)
    decode = next(line for line in comp.shared if line.quantity == "decode_tok_s")
    assert decode.setting is not None and (decode.setting.prompt_tokens, decode.setting.concurrency) == (
        2048,
        1,
    )
    assert set(decode.cells) == {"tiny", "tiny-fast"}
    ref, fast = decode.cells["tiny"], decode.cells["tiny-fast"]
    # the matching row (40), not the later off-recipe one (90)
    assert (ref.value, ref.status, ref.trials) == (40, "matches", 1)
    # median of the three trials
    assert (fast.value, fast.trials, fast.varied) == (100, 3, True)
    assert decode.ratio is not None
    assert (decode.ratio.better, decode.ratio.worse, decode.ratio.value) == ("tiny-fast", "tiny", 2.5)
    assert decode.ratio.context == "same node (node-a), same day (2026-01-02), same engine version (1.0.0)"


def test_smaller_is_better_and_off_recipe_figures(root: Path) -> None:
    comp = _comparison(root)
    itl = next(line for line in comp.shared if line.quantity == "itl_ms")
    assert itl.cells["tiny-fast"].status == "differs"
    assert "--max-model-len" in itl.cells["tiny-fast"].why
    assert itl.ratio is not None and itl.ratio.better == "tiny-fast"
    assert itl.ratio.value == pytest.approx(23.5 / 9)
    weights = next(line for line in comp.shared if line.quantity == "weights_gib")
    assert weights.setting is None
    assert weights.ratio is not None and (weights.ratio.better, weights.ratio.value) == ("tiny-fast", 1.25)


def test_figures_without_a_matching_setting_stand_alone(root: Path) -> None:
    comp = _comparison(root)
    shared_settings = {(line.quantity, line.setting) for line in comp.shared}
    assert all(len(line.cells) > 1 for line in comp.shared)
    alone = {
        (slug, line.quantity, line.setting.prompt_tokens if line.setting else None, cell.value)
        for line in comp.alone
        for slug, cell in line.cells.items()
    }
    assert ("tiny", "decode_tok_s", 512, 41) in alone
    assert ("tiny-fast", "decode_tok_s", 8192, 95) in alone
    # an unknown prompt length is never lined up with anything
    assert ("tiny-spec", "decode_tok_s", None, 97) in alone
    assert not any(s is not None and s.prompt_tokens is None for _, s in shared_settings)


def test_same_checkpoint_claims_disagree(root: Path) -> None:
    comp = _comparison(root)
    assert [g.checkpoint for g in comp.same_checkpoint] == ["example/tiny-fp8"]
    group = comp.same_checkpoint[0]
    figures = {c.build.slug: (c.figure.value if c.figure else None) for c in group.claims}
    assert figures == {"tiny": 40, "tiny-spec": 97}  # tiny's headline setting, tiny-spec's only row
    assert group.disagree and group.ratio is not None
    assert group.ratio.value == pytest.approx(97 / 40)
    assert group.ratio.context == "same node (node-a), same engine version (1.0.0)"
    assert [d.name for d in group.flag_differences] == ["--speculative-config"]
    assert group.flag_differences[0].values["tiny"] is None


def _soup(path: Path) -> BeautifulSoup:
    return BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser")


@pytest.fixture
def built(root: Path, tmp_path: Path) -> Path:
    out = tmp_path / "out"
    build(load_config(root, out))
    return out


def test_comparison_page(built: Path) -> None:
    page = built / "models/example-tiny/index.html"
    soup = _soup(page)
    assert not (built / "models/example-solo/index.html").exists()
    table = soup.select_one("table.compare")
    assert table is not None
    headers = [th.get_text(strip=True) for th in table.select("thead th")]
    # only builds with a shared figure are columns; titles lose their shared "Tiny — " part
    assert headers == ["Figure", "Setting", "reference build", "fast build", "Ratio"]
    rows = {tr.select_one("th").get_text(" ", strip=True): tr for tr in table.select("tbody tr")}  # type: ignore[union-attr]
    decode = rows["Decode tok/s per stream"]
    cells = [td.get_text(" ", strip=True) for td in decode.find_all("td")]
    assert cells[1].startswith("40") and cells[2].startswith("100 median of 3 rows")
    assert cells[3].startswith("fast build: 2.50× higher than reference build")
    itl = rows["ITL ms"]
    assert "off-recipe row" in itl.get_text(" ", strip=True)


def test_disagreeing_sources_section(built: Path) -> None:
    soup = _soup(built / "models/example-tiny/index.html")
    section = soup.select_one("section.claims")
    assert section is not None
    heading = section.find("h2")
    assert (
        heading is not None and heading.get_text(" ", strip=True) == "Sources disagree about example/tiny-fp8"
    )
    claims = section.select(".claim")
    assert [c.find("h3").get_text(strip=True) for c in claims] == [  # type: ignore[union-attr]
        "reference build",
        "reference build with speculation",
    ]
    assert "synthetic source A" in claims[0].get_text() and "synthetic source B" in claims[1].get_text()
    assert [c.select_one(".figure").get_text() for c in claims] == ["40", "97"]  # type: ignore[union-attr]
    assert f"{97 / 40:.2f}×" in section.get_text()
    flags = section.select_one("table.params")
    assert flags is not None and "--speculative-config" in flags.get_text()


def test_comparison_is_linked_and_charted(built: Path) -> None:
    recipe = _soup(built / "recipes/tiny/index.html")
    link = recipe.select_one(".compare-link a")
    assert link is not None and link["href"] == "../../models/example-tiny/"
    assert _soup(built / "recipes/solo/index.html").select_one(".compare-link") is None
    index = _soup(built / "index.html")
    assert [a["href"] for a in index.select(".model-table tbody th a")] == ["models/example-tiny/"]
    listing = _soup(built / "recipes/index.html")
    assert [a["href"] for a in listing.select(".compare-link a")] == ["../models/example-tiny/"]
    page = _soup(built / "models/example-tiny/index.html")
    decode = chart_values(page)["chart-builds-decode_tok_s"]
    assert [(v["build"], v["value"]) for v in decode] == [("reference build", 40), ("fast build", 100)]
    assert page.select("script[data-runtime]")
    # one table, the data of every chart
    assert [t["id"] for t in page.select("table.compare")] == ["compare"]
    assert {a["href"] for a in page.select("figure.chart .chart-rows a")} == {"#compare"}


def test_short_labels() -> None:
    assert short_labels(["M — a", "M — b"]) == ["a", "b"]
    assert short_labels(["M — a", "N — b"]) == ["M — a", "N — b"]
    assert short_labels(["M — a"]) == ["M — a"]


def test_shipped_comparison(shipped_site: Path) -> None:
    soup = _soup(shipped_site / "models/qwen-qwen3.6-35b-a3b/index.html")
    table = soup.select_one("table.compare")
    assert table is not None
    decode = next(
        tr
        for tr in table.select("tbody tr")
        if tr.select_one("th").get_text(" ", strip=True).startswith("Decode")  # type: ignore[union-attr]
    )
    text = decode.get_text(" ", strip=True)
    assert "42.6" in text and "106.5" in text
    assert "Unsloth NVFP4-Fast: 2.50× higher than NVIDIA NVFP4" in text
    assert "same node (spark-01), same day (2026-07-27), same engine version (0.24.0)" in text
    claims = soup.select_one("section.claims")
    assert claims is not None
    assert "nvidia/Qwen3.6-35B-A3B-NVFP4" in claims.find("h2").get_text()  # type: ignore[union-attr]
    figures = sorted(c.select_one(".figure").get_text() for c in claims.select(".claim"))  # type: ignore[union-attr]
    assert figures == ["42.6", "97.5"]


def _many_recipe(slug: str, hardware: str, headline: str = "") -> str:
    return (
        f"---\ntitle: Many — {slug}\nmodel: example/many\ncheckpoint: example/many-{slug}\n"
        f'hardware: {hardware}\nengine: vllm\nengine_version: "1.0.0"\nflags: ""\n{headline}---\nSynthetic.\n'
    )


def _many_rows(slug: str, node: str, settings: list[tuple[int, int]]) -> str:
    header = "date,recipe,node,engine_version,prompt_tokens,concurrency,decode_tok_s,aggregate_tok_s,source\n"
    return header + "".join(
        f"2026-01-02,{slug},{node},1.0.0,{p},{c},{50 + c},{(50 + c) * c},synthetic\n" for p, c in settings
    )


PROMPTS = (512, 1024, 2048, 4096)
LEVELS = (1, 2, 4, 8, 16)


@pytest.fixture
def many(make_site: MakeSite) -> Path:
    """Five builds: a and b share 20 settings on test-gpu (c joins them at one), d and e 20 on test-gpu-2."""
    grid = [(p, c) for p in PROMPTS for c in LEVELS]
    files = {
        "data/nodes.yaml": "node-a:\n  hardware: test-gpu\nnode-b:\n  hardware: test-gpu-2\n",
        "content/recipes/many-a.md": _many_recipe(
            "many-a", "test-gpu", "headline:\n  prompt_tokens: 2048\n  concurrency: 8\n"
        ),
        "content/recipes/many-b.md": _many_recipe("many-b", "test-gpu"),
        "content/recipes/many-c.md": _many_recipe("many-c", "test-gpu"),
        "content/recipes/many-d.md": _many_recipe("many-d", "test-gpu-2"),
        "content/recipes/many-e.md": _many_recipe("many-e", "test-gpu-2"),
        "data/rows/many/a.csv": _many_rows("many-a", "node-a", grid),
        "data/rows/many/b.csv": _many_rows("many-b", "node-a", grid),
        "data/rows/many/c.csv": _many_rows("many-c", "node-a", [(4096, 16)]),
        "data/rows/many/d.csv": _many_rows("many-d", "node-b", grid),
        "data/rows/many/e.csv": _many_rows("many-e", "node-b", grid),
    }
    return make_site(files)


def test_a_page_shows_a_bounded_set_of_settings(many: Path) -> None:
    loaded = load_and_reconcile(load_config(many))
    assert not loaded.problems, [p.format() for p in loaded.problems]
    assert loaded.recon is not None
    comp = comparison(loaded.site, "example/many", "example-many", rows_by_recipe(loaded.site), loaded.recon)
    assert comp.shared_total == 2 * 40 and len(comp.shared) == 2 * SHARED_SHOWN

    def shown(quantity: str) -> list[tuple[str, int, int, frozenset[str]]]:
        return [
            (
                line.setting.hardware,
                line.setting.prompt_tokens or 0,
                line.setting.concurrency,
                frozenset(line.cells),
            )
            for line in comp.shared
            if line.quantity == quantity and line.setting is not None
        ]

    ab, abc, de = (
        frozenset({"many-a", "many-b"}),
        frozenset({"many-a", "many-b", "many-c"}),
        frozenset({"many-d", "many-e"}),
    )
    # a's headline setting; c's only shared setting (so no build drops out); then single streams
    # up, taking turns between the two hardware, in the setting order
    assert sorted(shown("decode_tok_s")) == sorted(
        [("test-gpu", 2048, 8, ab), ("test-gpu", 4096, 16, abc)]
        + [("test-gpu", p, 1, ab) for p in PROMPTS]
        + [("test-gpu-2", p, 1, de) for p in PROMPTS]
        + [("test-gpu", 512, 2, ab), ("test-gpu-2", 512, 2, de)]
    )
    # aggregate throughput says most under load: from the highest concurrency down
    aggregate = shown("aggregate_tok_s")
    assert ("test-gpu", 2048, 8, ab) in aggregate and ("test-gpu", 4096, 16, abc) in aggregate
    assert all(c >= 8 for _, _, c, _ in aggregate)
    assert {hw for hw, _, _, _ in aggregate} == {"test-gpu", "test-gpu-2"}


def test_a_page_with_many_settings(many: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    build(load_config(many, out))
    soup = _soup(out / "models/example-many/index.html")
    section = soup.select_one("section[aria-labelledby=shared-h]")
    assert section is not None
    # builds on different hardware never share a setting: a table per hardware, its builds as columns
    assert [h.get_text(strip=True) for h in section.find_all("h3")] == ["On test-gpu", "On test-gpu-2"]
    tables = section.select("table.compare")
    assert [[th.get_text(strip=True) for th in t.select("thead th")] for t in tables] == [
        ["Figure", "Setting", "many-a", "many-b", "many-c", "Ratio"],
        ["Figure", "Setting", "many-d", "many-e", "Ratio"],
    ]
    assert sum(len(t.select("tbody tr")) for t in tables) == 2 * SHARED_SHOWN
    # the setting says no hardware: the table's heading does
    first = tables[1].select_one("tbody tr td")
    assert first is not None and first.get_text(strip=True) == "512-token prompt · concurrency 1"
    note = section.select_one("#shown-note")
    assert note is not None and "at 80 matching settings; the tables show 24" in note.get_text(
        " ", strip=True
    )
    # and a chart per hardware and figure, of that table's builds only
    charts = {str(f["id"]): f.find("h3").get_text(strip=True) for f in soup.select("figure.chart")}  # type: ignore[union-attr]
    assert charts == {
        "chart-builds-test-gpu-decode_tok_s": "Decode side by side on test-gpu",
        "chart-builds-test-gpu-aggregate_tok_s": "Aggregate side by side on test-gpu",
        "chart-builds-test-gpu-2-decode_tok_s": "Decode side by side on test-gpu-2",
        "chart-builds-test-gpu-2-aggregate_tok_s": "Aggregate side by side on test-gpu-2",
    }
    # whose data, for readers without JavaScript, is that table: linked, not repeated
    links = {str(f["id"]): f.select_one(".chart-rows a")["href"] for f in soup.select("figure.chart")}  # type: ignore[index]
    assert links == {
        "chart-builds-test-gpu-decode_tok_s": "#compare-test-gpu",
        "chart-builds-test-gpu-aggregate_tok_s": "#compare-test-gpu",
        "chart-builds-test-gpu-2-decode_tok_s": "#compare-test-gpu-2",
        "chart-builds-test-gpu-2-aggregate_tok_s": "#compare-test-gpu-2",
    }
    assert [t["id"] for t in tables] == ["compare-test-gpu", "compare-test-gpu-2"]
    assert soup.select("table.chart-table") == []

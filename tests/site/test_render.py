"""Rendered pages, checked by parsing the HTML."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from bs4 import BeautifulSoup

from builder.config import load_config
from builder.engine.incremental import build
from builder.site.formats import fmt_number
from tests.conftest import REPO, MakeSite


def _soup(path: Path) -> BeautifulSoup:
    return BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser")


@pytest.fixture(scope="module")
def shipped(shipped_site: Path) -> Path:
    return shipped_site


def test_shipped_site_has_every_page_kind(shipped: Path) -> None:
    for rel in (
        "index.html",
        "recipes/index.html",
        "recipes/qwen3.6-35b-a3b-nvidia-nvfp4/index.html",
        "recipes/qwen3.6-35b-a3b-unsloth-nvfp4-fast/index.html",
        "recipes/qwen3.6-35b-a3b-fp8-mtp3/index.html",
        "recipes/qwen3.6-35b-a3b-nvidia-nvfp4-mtp3/index.html",
        "case-studies/does-quantization-buy-speed/index.html",
        "case-studies/which-nvfp4-build-to-download/index.html",
        "news/index.html",
        "404.html",
    ):
        assert (shipped / rel).is_file(), rel
    posts = list((shipped / "news").glob("*/index.html"))
    assert posts


def test_nvidia_recipe_page(shipped: Path) -> None:
    soup = _soup(shipped / "recipes/qwen3.6-35b-a3b-nvidia-nvfp4/index.html")
    assert soup.h1 is not None and "NVIDIA NVFP4" in soup.h1.get_text()
    figures = [li.get_text(" ", strip=True) for li in soup.select("section.headline .figures li")]
    # headline computed from the 2026-07-27 matching row at the 2,048-token prompt
    assert any(f.startswith("42.6 ") and "Decode" in f for f in figures), figures
    assert any(f.startswith("5,872 ") and "Prefill" in f for f in figures), figures
    table = soup.select_one("table.rows")
    assert table is not None
    body_rows = table.select("tbody tr")
    assert len(body_rows) == 5
    dates = [tr.select_one("time").get_text() for tr in body_rows]  # type: ignore[union-attr]
    assert dates == sorted(dates, reverse=True)
    assert "2026-07-06" in dates
    july6 = next(tr for tr in body_rows if tr.select_one("time").get_text() == "2026-07-06")  # type: ignore[union-attr]
    assert "76.8" in [td.get_text(strip=True) for td in july6.find_all("td")]
    assert "differs" in july6.get("class", [""])[0]
    assert "--max-model-len" in july6.get_text()
    # serve command and curl example built from the metadata
    codes = [c.get_text() for c in soup.select("pre.code code")]
    assert any(c.startswith("vllm serve nvidia/Qwen3.6-35B-A3B-NVFP4") for c in codes)
    assert any('"model":"nvidia/Qwen3.6-35B-A3B-NVFP4"' in c for c in codes)
    # FAQ: one <details> per ### question with an anchor
    faq = soup.select("section.faq details")
    assert len(faq) == 7
    anchors = [
        el["id"] for d in faq for el in [d, *d.find_all(id=True)] if el.get("id", "").startswith("faq-")
    ]
    assert len(set(anchors)) == 7
    assert faq[0].summary is not None
    # case studies that used it
    assert soup.find("a", href="../../case-studies/does-quantization-buy-speed/") is not None


def test_case_study_links_arms(shipped: Path) -> None:
    soup = _soup(shipped / "case-studies/which-nvfp4-build-to-download/index.html")
    links = {a["href"] for a in soup.select("table a")}
    assert "../../recipes/qwen3.6-35b-a3b-nvidia-nvfp4/" in links
    assert "../../recipes/qwen3.6-35b-a3b-unsloth-nvfp4-fast/" in links


def test_index_leads_with_the_chooser_and_counts_recipes_by_model_and_hardware(shipped: Path) -> None:
    soup = _soup(shipped / "index.html")
    lead = soup.select_one("main section")
    assert lead is not None and lead.h2 is not None and "fastest" in lead.h2.get_text()
    assert [a["href"] for a in lead.find_all("a")] == ["choose/", "choose/dgx-spark/"]
    table = soup.select_one("table.model-table")
    assert table is not None
    assert [th.get_text() for th in table.select("thead th")] == ["Base model", "NVIDIA DGX Spark"]
    (row,) = table.select("tbody tr")
    assert row.th is not None and row.th.get_text() == "Qwen/Qwen3.6-35B-A3B"
    cell = row.select_one("td a")
    assert cell is not None and cell.get_text() == "4"
    assert cell["href"] == "recipes/#g-qwen-qwen3-6-35b-a3b--dgx-spark"
    listing = _soup(shipped / "recipes/index.html")
    group = listing.find(id="g-qwen-qwen3-6-35b-a3b--dgx-spark")
    assert group is not None and group.get_text() == "NVIDIA DGX Spark"
    assert len(listing.select(".cards li")) == 4
    assert not soup.select(".cards li")  # the home page lists no recipe cards
    recent = [li.get_text(" ", strip=True) for li in soup.select("ul.recent")[0].find_all("li")]
    assert recent[0].startswith("2026-07-27 : 4 rows of Qwen3.6 35B-A3B — NVIDIA NVFP4 on spark-01")
    opened = soup.select("ul.recent")[1].get_text(" ", strip=True)
    assert "76.8 tok/s on 2026-07-06 did not reproduce: both later runs" in opened
    assert "Decode at 2,048-token prompt" in opened
    assert soup.find("a", href="news/nvfp4-qwen3.6-35b-a3b-dgx-spark/") is not None


def test_every_internal_link_resolves(shipped: Path) -> None:
    for page in shipped.rglob("*.html"):
        if page.name == "404.html":
            continue
        for tag, attr in (("a", "href"), ("link", "href"), ("script", "src")):
            for el in _soup(page).find_all(tag):
                url = el.get(attr)
                if not url or url.startswith(("http:", "https:", "#", "mailto:")):
                    continue
                target = (page.parent / url.split("#")[0]).resolve()
                if url.endswith("/") or target.is_dir():
                    target = target / "index.html"
                assert target.is_file(), f"{page.relative_to(shipped)} links to missing {url}"


def test_markdown_raw_html_and_javascript_links_are_inert(make_site: MakeSite, tmp_path: Path) -> None:
    root = make_site(
        {
            "content/recipes/tiny.md": """\
                ---
                title: "<script>alert(1)</script>"
                model: example/tiny
                checkpoint: example/tiny-fp8
                hardware: test-gpu
                engine: vllm
                engine_version: "1.0.0"
                flags: "--max-model-len 4096 --kv-cache-dtype fp8"
                env:
                  EXAMPLE_ENV: "1"
                ---
                <img src=x onerror=alert(1)>

                [click](javascript:alert(1)) [enc](&#106;avascript:alert(1))

                ## Troubleshooting

                ### <b>bold</b> question?

                answer <script>alert(2)</script>
                """
        }
    )
    out = tmp_path / "out"
    build(load_config(root, out))
    soup = _soup(out / "recipes/tiny/index.html")
    executable = [
        s for s in soup.find_all("script") if s.get("type") not in ("application/json", "application/ld+json")
    ]
    assert all("alert" not in (s.string or "") for s in executable)
    assert soup.find("img") is None
    assert soup.find("b") is None
    assert all(not (a.get("href") or "").lower().startswith("javascript") for a in soup.find_all("a"))
    assert "<script>alert(1)</script>" in soup.h1.get_text()  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (42.6, "42.6"),
        (5872.0, "5,872"),
        (322.05, "322.05"),
        (308955, "308,955"),
        (0.30000000000000004, "0.30000000000000004"),
        (None, "—"),
        (999.5, "999.5"),
        (1000.5, "1,000.5"),
        (999, "999"),
        (1000, "1,000"),
        (1e-05, "1e-05"),
        (12.0, "12"),
    ],
)
def test_numbers_are_shown_as_recorded(value: float | int | None, shown: str) -> None:
    assert fmt_number(value) == shown


def test_headline_without_matching_rows_comes_from_the_least_unrecorded_run(shipped: Path) -> None:
    # The FP8 recipe records no engine version; its MTP-3 row records the recipe's flags, the
    # baseline row on the same day records none: only the MTP-3 row may lead, flagged as unchecked.
    soup = _soup(shipped / "recipes/qwen3.6-35b-a3b-fp8-mtp3/index.html")
    section = soup.select_one("section.headline")
    assert section is not None
    figures = [li.get_text(" ", strip=True) for li in section.select(".figures li")]
    assert figures and figures[0].startswith("63.9 ")
    notice = section.select_one(".notice")
    assert notice is not None and "engine_version" in notice.get_text()


def test_headline_from_matching_rows_has_no_caveat(shipped: Path) -> None:
    section = _soup(shipped / "recipes/qwen3.6-35b-a3b-nvidia-nvfp4/index.html").select_one(
        "section.headline"
    )
    assert section is not None and section.select_one(".notice") is None


def test_renderers_imported_before_the_workers_fork_only_when_their_pages_render() -> None:
    probe = (
        "import sys\nfrom builder.site.render import import_renderers\n"
        "import_renderers(['index.html', 'recipes/a/index.html'])\n"
        "before = 'builder.site.side_by_side_charts' in sys.modules\n"
        "import_renderers(['index.html', 'models/m/index.html'])\n"
        "print(before, 'builder.site.side_by_side_charts' in sys.modules, 'builder.site.comparison_tables' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert done.stdout.split() == ["False", "True", "True"], done.stderr

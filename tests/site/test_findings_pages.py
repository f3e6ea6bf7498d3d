"""Findings on the built site: recipe banner, marked rows, /findings/, its Atom feed, index count."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from bs4 import BeautifulSoup

from builder.config import load_config
from builder.engine.incremental import build
from builder.engine.pipeline import load_and_reconcile
from builder.site import findings_pages
from builder.site.findings_pages import FULL_PER_GROUP
from builder.site.render import make_context, render_recipe
from tests.conftest import REPO, MakeSite
from tests.rowsite import history, rows_csv, run, site_files

ATOM = "{http://www.w3.org/2005/Atom}"
ROWS = history(
    run("2026-01-01", 100.0),
    run("2026-02-01", 101.0),
    run("2026-03-01", 70.0, flags="--max-model-len 8192 --kv-cache-dtype fp8"),
)


def _build(
    make_site: MakeSite, tmp_path: Path, rows: list[dict[str, object]] = ROWS, **extra: str | None
) -> Path:
    out = tmp_path / "out"
    build(load_config(make_site(site_files(rows, **extra)), out))
    return out


def _soup(path: Path) -> BeautifulSoup:
    return BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser")


def test_recipe_page_banner_and_marked_rows(make_site: MakeSite, tmp_path: Path) -> None:
    page = _soup(_build(make_site, tmp_path) / "recipes/tiny/index.html")
    [banner] = page.select("section.findings .banner")
    text = banner.get_text(" ", strip=True)
    # The finding's sentence comes first, in time order, each side by its own figures.
    assert banner.select_one("h3").get_text(strip=True).replace("\xa0", " ") == (
        "A loss since 1.0.0 on 2026-03-01: the later run read 70 tok/s, against 100–101 tok/s in both "
        "earlier runs, on 2026-01-01 and 2026-02-01 (−30.3 %)."
    )
    assert "Decode at 2,048-token prompt" in text
    values = [s.get_text(" ", strip=True) for s in banner.select(".figure-pair")]
    assert values[0].startswith("earlier 100–101 ") and "2026-01-01, 2026-02-01" in values[0].replace(
        " ,", ","
    )
    assert values[1].startswith("later (departs) 70 ") and "2026-03-01" in values[1]
    assert "2,048-token prompt, context 0, concurrency 1" in text
    assert banner.select_one(".badge.bad").get_text(strip=True) == "−30.3 %"
    explained = [li.get_text(" ", strip=True) for li in banner.select(".finding-explanation li")]
    assert explained == ["--max-model-len : 4096 vs 8192"]
    # The three runs' rows are marked in the results table, and only those.
    marked = {tr["id"] for tr in page.select("table.rows tr.in-finding")}
    links = {a["href"].lstrip("#") for a in banner.select(".finding-runs a")}
    assert marked == links and len(marked) == 3
    # The off-recipe row is shown with its difference.
    off = [tr for tr in page.select("table.rows tbody tr") if tr.select_one("ul.diffs")]
    assert [li.get_text(" ", strip=True) for tr in off for li in tr.select("ul.diffs li")] == [
        "--max-model-len : 8192 (recipe: 4096)"
    ]


def test_no_banner_without_findings(make_site: MakeSite, tmp_path: Path) -> None:
    out = _build(make_site, tmp_path, run("2026-01-01", 100.0))
    assert _soup(out / "recipes/tiny/index.html").select("section.findings") == []
    assert "no open findings" in _soup(out / "index.html").select_one("header.page-head p.muted").get_text(
        " "
    )


def test_annotated_finding_shows_the_curators_reason(make_site: MakeSite, tmp_path: Path) -> None:
    note = (
        "- recipe: tiny\n  status: upstream_issue\n  reason: \"<script>alert('x')</script> Scheduler bug.\"\n"
        "  link: https://example.org/issues/7\n  by: '@curator'\n"
    )
    out = _build(make_site, tmp_path, **{"data/annotations.yaml": note})
    page = _soup(out / "recipes/tiny/index.html")
    assert page.select("section.findings .banner") == []  # no longer an open banner
    [box] = page.select("section.findings .notice.finding")
    annotation = box.select_one(".finding-annotation")
    assert annotation.select_one(".badge").get_text(strip=True) == "Known upstream issue"
    assert "<script>alert('x')</script> Scheduler bug." in annotation.get_text()
    assert not [s for s in page.select("script") if s.get_text().strip() == "alert('x')"]  # text, not code
    link = annotation.select_one("a")
    assert link["href"] == "https://example.org/issues/7" and "nofollow" in link["rel"]
    index = _soup(out / "index.html").select_one("header.page-head p.muted").get_text(" ", strip=True)
    assert "no open findings" in index and "(1 annotated)" in index


def test_findings_page_and_index_count(make_site: MakeSite, tmp_path: Path) -> None:
    out = _build(make_site, tmp_path)
    page = _soup(out / "findings/index.html")
    [item] = page.select("section[aria-labelledby=open-h] article.finding")
    assert item.select_one("h3").get_text(strip=True).startswith("A loss since 1.0.0 on 2026-03-01: ")
    link = item.select_one(".finding-setting a")
    assert link.get_text(strip=True) == "Tiny model on a test GPU"
    assert link["href"] == f"../recipes/tiny/#{item['id']}"
    feeds = [
        link["href"] for link in page.select("link[rel=alternate]") if "Findings" in link.get("title", "")
    ]
    assert feeds == ["../findings/feed.xml"]
    assert [a["href"] for a in page.select("nav a") if a.get_text() == "Findings"] == ["../findings/"]
    index = _soup(out / "index.html").select_one("header.page-head p.muted")
    assert "1 open finding of non-reproduction" in index.get_text(" ", strip=True)


def test_feed_is_atom_dated_from_the_rows(
    make_site: MakeSite, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = _build(make_site, tmp_path)
    data = (out / "findings/feed.xml").read_bytes()
    feed = ET.fromstring(data)
    assert feed.tag == f"{ATOM}feed"
    assert feed.findtext(f"{ATOM}updated") == "2026-03-01T00:00:00Z"
    [entry] = feed.findall(f"{ATOM}entry")
    assert entry.findtext(f"{ATOM}updated") == "2026-03-01T00:00:00Z"
    assert entry.findtext(f"{ATOM}id").startswith("https://example.org/findings/#finding-tiny-decode_tok_s-")
    assert entry.find(f"{ATOM}link").get("href").startswith("https://example.org/recipes/tiny/#finding-")
    summary = entry.findtext(f"{ATOM}summary")
    assert summary.startswith("A loss since 1.0.0 on 2026-03-01: the later run read 70 tok/s")
    assert "Differs between the runs: --max-model-len (4096 vs 8192)." in summary
    # No clock: another build at another "now" writes the same bytes.
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "2000000000")
    again = tmp_path / "again"
    build(load_config(out.parent / "site-root", again))
    assert (again / "findings/feed.xml").read_bytes() == data


def test_feed_without_findings_is_valid(make_site: MakeSite, tmp_path: Path) -> None:
    out = _build(make_site, tmp_path, run("2026-01-05", 100.0))
    feed = ET.fromstring((out / "findings/feed.xml").read_bytes())
    assert feed.findall(f"{ATOM}entry") == []
    assert feed.findtext(f"{ATOM}updated") == "2026-01-05T00:00:00Z"


def test_shipped_nvfp4_recipe_page_shows_the_banner() -> None:
    loaded = load_and_reconcile(load_config(REPO))
    assert loaded.recon is not None and not loaded.problems.errors
    html = render_recipe(make_context(loaded.site, loaded.recon), "qwen3.6-35b-a3b-nvidia-nvfp4")
    page = BeautifulSoup(html, "html.parser")
    banners = [
        b
        for b in page.select("section.findings .banner")
        if "Decode" in b.select_one(".finding-setting").get_text()
    ]
    [banner] = banners
    # Told in time order: the earlier figure did not reproduce, each side by its runs' own figures.
    assert banner.select_one("h3").get_text(strip=True).replace("\xa0", " ") == (
        "76.8 tok/s on 2026-07-06 did not reproduce: both later runs, on 2026-07-27, read 42.5–42.6 tok/s "
        "(−44.6 %)."
    )
    text = banner.get_text(" ", strip=True)
    assert "42.55" not in text  # no statistic of the runs stands in for their figures
    assert "better" not in text and "worse" not in text
    assert "Unexplained by the recorded metadata." in text
    [ruled] = banner.select(".finding-explanation li")
    assert ruled.select_one("code").get_text() == "--max-model-len"
    assert len(page.select("table.rows tr.in-finding")) == 3


def _slow_run_everywhere(concurrencies: int) -> list[dict[str, object]]:
    """A stable history at every concurrency, then one run that is 30 % slower at all of them."""
    rows: list[dict[str, object]] = []
    for c in range(1, concurrencies + 1):
        rows += history(
            run("2026-01-01", 100.0, concurrency=c),
            run("2026-02-01", 101.0, concurrency=c),
            run("2026-03-01", 70.0, concurrency=c, node="node-b"),
        )
    return rows


def test_findings_of_one_departing_run_are_grouped_on_the_recipe_page(
    make_site: MakeSite, tmp_path: Path
) -> None:
    out = _build(make_site, tmp_path, _slow_run_everywhere(5))
    page = _soup(out / "recipes/tiny/index.html")
    section = page.select_one("section.findings")
    [banner] = section.select(".banner.finding")  # one group: one finding
    assert FULL_PER_GROUP == 1
    [table] = banner.select("details.finding-settings")
    summary = table.select_one("summary").get_text(" ", strip=True)
    assert summary == "The same runs, the same explanation, at 5 settings and metrics"
    rows = table.select("table.findings-table tbody tr")
    assert len(rows) == 5
    cells = [td.get_text(" ", strip=True) for td in rows[0].select("td")]
    assert cells[1:] == ["100–101", "70 departs", "−30.3 % band ±8.3 %"]
    # Every finding keeps its anchor (the first is the banner's), and every run's rows stay marked.
    anchors = {banner["id"]} | {tr["id"] for tr in rows if tr.has_attr("id")}
    assert len(anchors) == 5 and all(a.startswith("finding-tiny-decode_tok_s-") for a in anchors)
    assert len(page.select("table.rows tr.in-finding")) == 15


def test_findings_page_shows_each_recipe_once_and_pages_past_the_limit(
    make_site: MakeSite, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = _build(make_site, tmp_path, _slow_run_everywhere(3))
    page = _soup(out / "findings/index.html")
    [item] = page.select("section[aria-labelledby=open-h] article.finding")
    # One group: one finding with its three settings, nothing more to link to.
    assert len(item.select("details.finding-settings tbody tr")) == 3
    assert item.select_one(".finding-more") is None
    assert "3 open in 1 recipe" in page.select_one("header.page-head p.muted").get_text(" ", strip=True)
    assert page.select("nav.pager") == []
    # With one recipe a page, a second recipe with findings goes to /findings/page/2/.
    monkeypatch.setattr(findings_pages, "RECIPES_PER_PAGE", 1)
    second = _slow_run_everywhere(1)
    for row in second:
        row["recipe"] = "tiny-two"
    root = out.parent / "site-root"
    recipe = (root / "content/recipes/tiny.md").read_text()
    (root / "content/recipes/tiny-two.md").write_text(recipe)
    (root / "data/rows/tiny/two.csv").write_text(rows_csv(second))
    again = tmp_path / "again"
    build(load_config(root, again))
    first, other = _soup(again / "findings/index.html"), _soup(again / "findings/page/2/index.html")
    assert [a.get_text() for a in first.select("article.finding .finding-setting a")] == [
        "Tiny model on a test GPU"
    ]
    assert len(other.select("article.finding")) == 1
    assert (
        other.select_one("article.finding .finding-setting a")["href"]
        == "../../../recipes/tiny-two/#" + (other.select_one("article.finding")["id"])
    )
    pager = [(a.get_text(), a["href"]) for a in other.select("nav.pager a")]
    assert pager == [("1", "../../../findings/")]
    assert first.select_one("nav.pager [aria-current=page]").get_text() == "1"


def test_feed_keeps_the_newest_findings_only(
    make_site: MakeSite, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(findings_pages, "FEED_ENTRIES", 2)
    out = _build(make_site, tmp_path, _slow_run_everywhere(3))
    entries = ET.fromstring((out / "findings/feed.xml").read_bytes()).findall(f"{ATOM}entry")
    assert len(entries) == 2


def test_two_regressions_of_one_recipe_are_two_findings(make_site: MakeSite, tmp_path: Path) -> None:
    rows = _slow_run_everywhere(2)
    # Another slow run, on another date: other departing runs, another group.
    rows += run("2026-04-01", 50.0, concurrency=1, node="node-b", engine_version="1.1.0")
    out = _build(make_site, tmp_path, rows)
    page = _soup(out / "recipes/tiny/index.html")
    banners = page.select("section.findings .banner.finding")
    assert len(banners) == 2 and len({b["data-group"] for b in banners}) == 2
    assert [len(b.select("details.finding-settings tbody tr")) for b in banners] == [2, 0]
    listing = _soup(out / "findings/index.html")
    [item] = listing.select("section[aria-labelledby=open-h] article.finding")
    assert (
        item.select_one(".finding-more a").get_text(strip=True) == "1 more open finding on this recipe's page"
    )


def test_groups_past_the_first_are_one_line_each_and_every_finding_keeps_its_anchor(
    make_site: MakeSite, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(findings_pages, "GROUPS_IN_FULL", 1)
    rows = _slow_run_everywhere(2)
    rows += run("2026-04-01", 50.0, concurrency=1, node="node-b", engine_version="1.1.0")
    rows += run("2026-04-01", 50.0, concurrency=2, node="node-b", engine_version="1.1.0")
    out = _build(make_site, tmp_path, rows)
    page = _soup(out / "recipes/tiny/index.html")
    section = page.select_one("section.findings")
    [banner] = section.select(".banner.finding")
    assert len(banner.select("details.finding-settings tbody tr")) == 2
    [line] = section.select(".finding-lines tbody tr")
    assert section.select_one(".finding-lines h3").get_text(strip=True) == "1 more finding on this recipe"
    assert line.select_one("th").get_text(" ", strip=True).replace("\xa0", " ") == (
        "A loss since 1.1.0 on 2026-04-01: the later run read 50 tok/s, against 100–101 tok/s in both "
        "earlier runs, on 2026-01-01 and 2026-02-01 (−50.2 %)."
    )
    assert line.select("td")[0].get_text(" ", strip=True).endswith("and 1 more")
    assert line.select("td")[1].get_text() == "engine_version, node"
    # Every finding (four: two settings in each group) can be linked to on the page.
    loaded = load_and_reconcile(load_config(tmp_path / "site-root"))
    assert loaded.recon is not None
    anchors = {f"finding-{f.id}" for f in loaded.recon.findings_for("tiny")}
    assert len(anchors) == 4 and anchors <= {tag["id"] for tag in section.select("[id]")}


def test_real_regressions_read_as_one_loss_each_on_their_pages(tmp_path: Path) -> None:
    import shutil

    from tests.conftest import SITES

    root = tmp_path / "real"
    shutil.copytree(SITES / "real-regressions", root)
    out = tmp_path / "out"
    build(load_config(root, out), cache=False)
    spark = _soup(out / "recipes/spark-vllm-prefill/index.html")
    [banner] = spark.select("section.findings .banner.finding")
    pairs = [" ".join(p.get_text(" ", strip=True).split()) for p in banner.select(".figure-pair")]
    assert pairs[0].startswith("earlier 420.05") and "0.17.1.rc1" in pairs[0]
    assert pairs[1].startswith("later (departs) 355.15") and "0.17.2rc1.dev7" in pairs[1]
    assert len(banner.select("details.finding-settings tbody tr")) == 12
    # The reported spread is shown with each figure.
    assert "1,479.18 ± 1.11" in " ".join(spark.select_one("table.rows").get_text(" ", strip=True).split())
    qwen = _soup(out / "recipes/qwen2.5-vl-3b/index.html")
    [banner] = qwen.select("section.findings .banner.finding")
    assert "200 req/s" in banner.select_one(".finding-setting").get_text(" ", strip=True)
    cells = [td.get_text(" ", strip=True) for td in qwen.select("table.rows tbody tr")[0].select("td")]
    assert "200 req/s" in cells

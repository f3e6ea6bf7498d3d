"""Charts: spec templates filled with data, safe embedding, data tables, and where the runtime loads.

Every figure in the synthetic sites here is made up for the test.
"""

from __future__ import annotations

import dataclasses
import json
import shlex
from pathlib import Path
from typing import Any

import pytest
from bs4 import BeautifulSoup, Tag

from builder.config import load_config
from builder.engine.incremental import build
from builder.site import chart_runtime
from builder.site.chart_runtime import cache_path, runtime_bundle
from builder.site.charts import (
    ARMS,
    BUILDS,
    CONCURRENCY,
    DATA_NAME,
    HISTORY,
    KINDS,
    PER_QUANTITY,
    PROMPT,
    QUANTITY_LABELS,
    SpecTemplates,
    escape_json,
    page_data,
    spec_template,
)
from tests.chartpage import StubFinding, StubRun, chart_block, chart_rows, chart_specs
from tests.conftest import MakeSite

HOSTILE = 'a</script><script>alert(1)</script> "quoted" & <!-- \u2028\u2029 </SCRIPT >'
HOSTILE_ASCII = HOSTILE.replace("\u2028\u2029 ", "")
"""The markup a flag can carry: flags are printable ASCII."""

SAMPLE_VALUES: dict[str, list[dict[str, Any]]] = {
    PROMPT: [
        {
            "concurrency": 1,
            "prompt": 512,
            "decode": 50.5,
            "date": "2026-01-02",
            "node": "n",
            "status": "matches recipe",
        }
    ],
    CONCURRENCY: [
        {
            "measure": "Aggregate",
            "concurrency": 8,
            "value": 300.0,
            "prompt": "512 tokens",
            "date": "2026-01-02",
            "node": "n",
            "status": "matches recipe",
        }
    ],
    HISTORY: [
        {
            "layer": "row",
            "date": "2026-01-02",
            "setting": "s",
            "value": 1.5,
            "status": "differs from recipe",
            "note": HOSTILE,
            "node": "n",
            "engine_version": "1",
        }
    ],
    ARMS: [
        {
            "setting": "s",
            "arm": HOSTILE,
            "order": 0,
            "value": 2.0,
            "trials": 1,
            "date": "2026-01-02",
            "node": "n",
            "why": "",
        }
    ],
    BUILDS: [
        {
            "setting": "s",
            "build": HOSTILE,
            "order": 0,
            "value": 2.0,
            "trials": 1,
            "date": "2026-01-02",
            "node": "n",
            "why": "",
        }
    ],
}


def _quantity(kind: str) -> str:
    return "decode_tok_s" if kind in PER_QUANTITY else ""


@pytest.mark.parametrize("kind", KINDS)
def test_template_fill_is_the_altair_spec_with_the_data(kind: str) -> None:
    from builder.site.charts import _define

    values = SAMPLE_VALUES[kind]
    filled = json.loads(spec_template(kind, _quantity(kind)).fill(values))
    expected = _define(kind, _quantity(kind)).to_dict()
    assert expected["data"] == {"name": DATA_NAME}
    assert filled["data"] == {"values": values}
    assert {k: v for k, v in filled.items() if k != "data"} == {
        k: v for k, v in expected.items() if k != "data"
    }


def test_every_template_is_a_valid_vega_lite_spec() -> None:
    """The build does not validate (a template is a function of the code alone); this does, for each
    kind and each quantity a chart can show, and the spec is what a validating Altair gives."""
    from builder.site.charts import _define

    for kind in KINDS:
        for quantity in sorted(QUANTITY_LABELS) if kind in PER_QUANTITY else [""]:
            checked = _define(kind, quantity).to_dict(validate=True)
            assert _define(kind, quantity).to_dict(validate=False) == checked, (kind, quantity)


@pytest.mark.parametrize("kind", KINDS)
def test_templates_hold_no_expression_and_no_counter_names(kind: str) -> None:
    text = spec_template(kind, _quantity(kind)).fill([])
    spec = json.loads(text)
    # Filters are field predicates, never expression strings; no auto-numbered params or views.
    assert '"expr"' not in text and '"calculate"' not in text
    assert "param_" not in text and "view_" not in text
    for layer in spec.get("layer", []):
        for step in layer.get("transform", []):
            if "filter" in step:
                assert isinstance(step["filter"], dict) and set(step["filter"]) == {"field", "equal"}


def test_template_is_built_once_per_kind_and_render() -> None:
    specs = SpecTemplates()
    assert specs.get(HISTORY, "itl_ms") is specs.get(HISTORY, "itl_ms")
    assert specs.get(HISTORY, "itl_ms") is not specs.get(HISTORY, "decode_tok_s")
    assert SpecTemplates().get(HISTORY, "itl_ms") is not specs.get(HISTORY, "itl_ms")  # nothing global
    with pytest.raises(ValueError):
        spec_template(HISTORY)
    with pytest.raises(ValueError):
        spec_template("pie")


def test_escape_json_keeps_the_value_and_hides_markup() -> None:
    text = escape_json(json.dumps({"note": HOSTILE}, ensure_ascii=False))
    for bad in ("<", ">", "&", "\u2028", "\u2029"):
        assert bad not in text
    assert json.loads(text) == {"note": HOSTILE}


def test_page_data_is_inert_json_with_each_value_intact() -> None:
    from builder.site.charts import Column, make_chart

    charts = [
        make_chart(
            HISTORY,
            f"chart-history-{q}",
            "t",
            "c",
            (Column("note", "Note"),),
            SAMPLE_VALUES[HISTORY],
            quantity=q,
        )
        for q in ("decode_tok_s", "ttft_ms")
    ]
    text = page_data(charts, SpecTemplates())
    for bad in ("<", ">", "&", "\u2028", "\u2029"):
        assert bad not in text
    block = json.loads(text)
    assert list(block["specs"]) == ["history/decode_tok_s", "history/ttft_ms"]
    assert block["specs"]["history/ttft_ms"] == json.loads(spec_template(HISTORY, "ttft_ms").bare)
    chart = block["charts"]["chart-history-ttft_ms"]
    assert chart["spec"] == "history/ttft_ms"
    assert [dict(zip(chart["fields"], row, strict=True)) for row in chart_rows(chart)] == SAMPLE_VALUES[
        HISTORY
    ]
    assert page_data(charts, SpecTemplates()) == text  # deterministic


def test_page_data_takes_numpy_scalars_as_numbers() -> None:
    import numpy as np

    from builder.site.charts import make_chart

    chart = make_chart(
        PROMPT, "chart-prompt", "t", "c", (), [{"concurrency": np.int64(8), "decode": np.float64(1.5)}]
    )
    assert json.loads(page_data([chart], SpecTemplates()))["charts"]["chart-prompt"]["rows"] == [[8, 1.5]]


def test_page_data_gives_a_repeated_text_once_per_chart() -> None:
    """A history chart's setting (and status, date, node) repeats from row to row: the block holds
    each distinct text once, the rows its position; numbers, nulls and texts that never repeat stay."""
    from builder.site.charts import make_chart

    setting = "8,192-token prompt · 256 output tokens · 1,024-token context · concurrency 32"
    values = [
        {"date": "2026-01-02", "setting": setting, "value": 1.5, "note": None, "node": "a"},
        {"date": "2026-01-09", "setting": setting, "value": 2.0, "note": "</script>", "node": "b"},
        {"date": "2026-01-02", "setting": "other", "value": None, "note": None, "node": "c"},
    ]
    chart = make_chart(HISTORY, "chart-h", "t", "c", (), values, quantity="decode_tok_s")
    text = page_data([chart], SpecTemplates())
    assert text.count("8,192-token prompt") == 1 and "</script>" not in text
    embedded = json.loads(text)["charts"]["chart-h"]
    fields = embedded["fields"]
    strings = dict(zip(fields, embedded["strings"], strict=True))
    assert strings["setting"] == [setting, "other"] and strings["date"] == ["2026-01-02", "2026-01-09"]
    assert strings["value"] is None and strings["note"] is None and strings["node"] is None
    assert [row[fields.index("setting")] for row in embedded["rows"]] == [0, 0, 1]
    assert [
        {k: v for k, v in zip(fields, row, strict=True) if k in values[0]} for row in chart_rows(embedded)
    ] == values


def test_runtime_bundle_is_read_from_the_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def boom() -> str:
        raise AssertionError("bundled although the cache holds the bundle")

    monkeypatch.setattr(chart_runtime, "_bundle", boom)
    shared = tmp_path / "shared"
    path = cache_path(shared)
    path.parent.mkdir(parents=True)
    path.write_bytes(b"/* cached */")
    site_cache = tmp_path / "site-cache"
    assert runtime_bundle(site_cache, shared) == b"/* cached */"
    # copied into the site's own cache, so the next build does not need the shared one
    assert cache_path(site_cache).read_bytes() == b"/* cached */"
    assert "vlc" in path.name and "altair" in path.name


def test_runtime_bundle_is_bundled_once_when_missing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []

    def fake() -> str:
        calls.append(1)
        return "/* bundled */"

    monkeypatch.setattr(chart_runtime, "_bundle", fake)
    assert runtime_bundle(tmp_path / "a", tmp_path / "b") == b"/* bundled */"
    assert runtime_bundle(tmp_path / "a", tmp_path / "b") == b"/* bundled */"
    assert calls == [1]


def test_installed_version_reads_the_dist_info_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from importlib import metadata

    # The installed packages agree with importlib.metadata, however the name is spelt.
    for name in ("altair", "vl-convert-python", "VL_Convert.Python", "markdown-it-py"):
        chart_runtime.installed_version.cache_clear()
        assert chart_runtime.installed_version(name) == metadata.version(name)
    # A wheel's folder is found by its normalised name, without asking importlib.metadata.
    (tmp_path / "fake_chart_lib-2.5.0rc1.dist-info").mkdir()
    (tmp_path / "fake_chart_lib_extra-9.9.dist-info").mkdir()
    (tmp_path / "Old.Style.Name-1.0.dist-info").mkdir()
    monkeypatch.syspath_prepend(str(tmp_path))

    def no_scan(name: str) -> str:
        raise AssertionError(f"importlib.metadata asked for {name}")

    monkeypatch.setattr(metadata, "version", no_scan)
    chart_runtime.installed_version.cache_clear()
    assert chart_runtime.installed_version("fake-chart.lib") == "2.5.0rc1"
    assert chart_runtime.installed_version("old-style-name") == "1.0"
    monkeypatch.undo()
    chart_runtime.installed_version.cache_clear()
    assert chart_runtime.installed_version("surely-not-installed-package") is None


def test_runtime_needs_both_chart_packages(monkeypatch: pytest.MonkeyPatch) -> None:
    from builder.errors import ChartRuntimeError

    real = chart_runtime.installed_version
    monkeypatch.setattr(
        chart_runtime, "installed_version", lambda name: None if name == "altair" else real(name)
    )
    with pytest.raises(ChartRuntimeError, match="charts need the altair package"):
        cache_path(Path("/nonexistent"))


# ------------------------------------------------------------------------------------------ sites

ROWS_HEADER = "date,recipe,node,engine_version,prompt_tokens,concurrency,decode_tok_s,aggregate_tok_s,flags,env,source,notes\n"
FLAGS = "--max-model-len 4096 --kv-cache-dtype fp8"


def _csv_field(text: str) -> str:
    return '"' + text.replace('"', '""') + '"'


def hostile_site(make_site: MakeSite) -> Path:
    """Synthetic rows over two dates and three prompt lengths, with markup in notes and flags."""
    lines = [
        f"2026-01-02,tiny,node-a,1.0.0,512,1,50.5,,{FLAGS},EXAMPLE_ENV=1,synthetic,{_csv_field(HOSTILE)}",
        f"2026-01-02,tiny,node-a,1.0.0,2048,1,48.25,,{FLAGS},EXAMPLE_ENV=1,synthetic,plain note",
        f"2026-01-09,tiny,node-a,1.0.0,2048,1,47.0,,{FLAGS},EXAMPLE_ENV=1,synthetic,{_csv_field(HOSTILE)}",
        f"2026-01-09,tiny,node-a,1.0.0,8192,1,45.0,,{FLAGS},EXAMPLE_ENV=1,synthetic,",
        f"2026-01-09,tiny,node-a,1.0.0,2048,8,30.0,240.0,{FLAGS},EXAMPLE_ENV=1,synthetic,",
        # off-recipe: a flag value carrying markup, so the history's "why" column carries it too
        f"2026-01-16,tiny,node-a,1.0.0,2048,1,60.0,,{_csv_field(FLAGS + ' --served-model-name ' + shlex.quote(HOSTILE_ASCII))},EXAMPLE_ENV=1,synthetic,",
    ]
    return make_site(
        {
            "data/rows/tiny/2026-01-02-node-a.csv": ROWS_HEADER + "\n".join(lines) + "\n",
        }
    )


def _build(root: Path, out: Path) -> Path:
    build(load_config(root, out))
    return out


def _soup(path: Path) -> BeautifulSoup:
    return BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser")


def _specs(soup: BeautifulSoup) -> dict[str, Any]:
    """Chart id → its spec with its values, as the page's script hands it to vega-embed."""
    return chart_specs(soup)


@pytest.fixture(scope="module")
def hostile_build(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import shutil

    from tests.conftest import SITES

    root = tmp_path_factory.mktemp("hostile") / "root"
    shutil.copytree(SITES / "minimal", root)

    def make(files: dict[str, str]) -> Path:
        for rel, text in files.items():
            path = root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        return root

    hostile_site(make)
    return _build(root, root.parent / "out")


def test_recipe_page_has_each_chart_kind_with_its_data(hostile_build: Path) -> None:
    soup = _soup(hostile_build / "recipes/tiny/index.html")
    figures = soup.select("figure.chart")
    ids = [f["id"] for f in figures]
    assert (
        ids
        == [
            "chart-prompt",
            "chart-concurrency",
            "chart-history-decode_tok_s",
            "chart-history-aggregate_tok_s",
        ][: len(ids)]
    )
    assert {"chart-prompt", "chart-concurrency", "chart-history-decode_tok_s"} <= set(ids)
    specs = _specs(soup)
    prompt = specs["chart-prompt"]["data"]["values"]
    # matching rows only, latest run per setting: 512 from 01-02, 2048 and 8192 from 01-09
    assert [(v["concurrency"], v["prompt"], v["decode"], v["date"]) for v in prompt] == [
        (1, 512, 50.5, "2026-01-02"),
        (1, 2048, 47.0, "2026-01-09"),
        (1, 8192, 45.0, "2026-01-09"),
        (8, 2048, 30.0, "2026-01-09"),
    ]
    history = specs["chart-history-decode_tok_s"]["data"]["values"]
    off = [v for v in history if v["status"] == "differs from recipe"]
    assert [v["value"] for v in off] == [60.0]
    assert HOSTILE_ASCII in off[0]["note"]  # the flag value travels as data, intact
    throughput = specs["chart-concurrency"]["data"]["values"]
    assert {(v["measure"], v["concurrency"]) for v in throughput} >= {("Aggregate", 8), ("Per stream", 1)}


def test_markup_in_notes_and_flags_cannot_break_out(hostile_build: Path) -> None:
    html = (hostile_build / "recipes/tiny/index.html").read_text(encoding="utf-8")
    soup = BeautifulSoup(html, "html.parser")
    scripts = soup.find_all("script")
    for script in scripts:
        assert isinstance(script, Tag)
        kind = script.get("type")
        if script.get("src"):
            assert kind is None
            continue
        # every inline script is data; none was opened by a row's text
        assert kind in ("application/json", "application/ld+json"), script
        json.loads(script.string or "")
        assert "alert(1)" not in (script.string or "") or "\\u003c/script\\u003e" in (script.string or "")
    assert "<script>alert(1)" not in html
    # the row table shows the note as text
    notes = [td.get_text() for td in soup.select("td.notes")]
    assert any(
        HOSTILE.replace("\u2028", "").replace("\u2029", "") in n.replace("\u2028", "").replace("\u2029", "")
        for n in notes
    )


def test_every_chart_has_its_data_without_javascript(hostile_build: Path) -> None:
    soup = _soup(hostile_build / "recipes/tiny/index.html")
    specs = _specs(soup)
    history = 0
    for figure in soup.select("figure.chart"):
        values = specs[str(figure["id"])]["data"]["values"]
        view = figure.select_one(".chart-view")
        assert view is not None and view.has_attr("hidden")  # nothing blank without JavaScript
        table = figure.select_one("details.chart-data table.chart-table")
        if str(figure["id"]).startswith("chart-history-"):
            # a history plots the recipe's own rows: it links to the results table instead
            history += 1
            assert table is None
            link = figure.select_one("p.chart-rows a")
            assert link is not None and link["href"] == "#results-h"
            assert soup.select_one("#results-h") is not None
            continue
        assert table is not None, figure["id"]
        body = table.select("tbody tr")
        assert len(body) == len(values)
        headers = [th.get_text(strip=True) for th in table.select("thead th")]
        assert headers and all(headers)
    assert history >= 1
    prompt = soup.select_one("#chart-prompt table")
    assert prompt is not None
    first = [td.get_text(strip=True) for td in prompt.select("tbody tr")[0].find_all("td")]
    assert first[:3] == ["1", "512", "50.5"]


def test_history_points_are_rows_of_the_results_table(hostile_build: Path) -> None:
    """Every point of a history is a run whose rows the results table lists (one trial each here)."""
    soup = _soup(hostile_build / "recipes/tiny/index.html")
    status_class = {"matches recipe": "status-matches", "differs from recipe": "status-differs"}
    listed = set()
    for tr in soup.select("table.rows tbody tr"):
        cells = [td.get_text(strip=True) for td in tr.find_all("td")]
        css = [c for c in tr["class"] if c.startswith("status-")][0]
        listed.add((cells[0], cells[1], cells[6], css))  # date, node, decode, status
    points = [v for v in _specs(soup)["chart-history-decode_tok_s"]["data"]["values"] if v["layer"] == "row"]
    assert len(points) == 6  # one per row: every run here has one trial
    for v in points:
        assert v["trials"] == 1
        assert (v["date"], v["node"], f"{v['value']:g}", status_class[v["status"]]) in listed, v


def test_off_recipe_reason_is_shown_as_text(hostile_build: Path) -> None:
    soup = _soup(hostile_build / "recipes/tiny/index.html")
    off = [
        tr
        for tr in soup.select("table.rows tbody tr.status-differs")
        if tr.find("time", datetime="2026-01-16")
    ]
    assert len(off) == 1
    diffs = off[0].select_one("ul.diffs")
    assert (
        diffs is not None and "--served-model-name" in diffs.get_text() and HOSTILE_ASCII in diffs.get_text()
    )
    note = [
        v
        for v in _specs(soup)["chart-history-decode_tok_s"]["data"]["values"]
        if v["status"] == "differs from recipe"
    ]
    assert len(note) == 1 and HOSTILE_ASCII in note[0]["note"]


def test_page_data_holds_each_spec_once(hostile_build: Path) -> None:
    block = chart_block(_soup(hostile_build / "recipes/tiny/index.html"))
    assert set(block["specs"]) == {chart["spec"] for chart in block["charts"].values()}
    assert all(spec["data"] == {"name": DATA_NAME} for spec in block["specs"].values())
    for chart in block["charts"].values():
        assert all(len(row) == len(chart["fields"]) for row in chart["rows"])


def test_output_is_deterministic(hostile_build: Path, tmp_path: Path) -> None:
    again = _build(hostile_build.parent / "root", tmp_path / "again")
    for rel in ("recipes/tiny/index.html", "index.html"):
        assert (again / rel).read_bytes() == (hostile_build / rel).read_bytes(), rel


def test_runtime_is_loaded_only_by_pages_with_charts(hostile_build: Path) -> None:
    runtime_files = list((hostile_build / "static").glob("vega-runtime.*.js"))
    loader_files = list((hostile_build / "static").glob("charts.*.js"))
    assert len(runtime_files) == 1 and len(loader_files) == 1
    with_charts = 0
    for page in hostile_build.rglob("*.html"):
        soup = _soup(page)
        srcs = [str(s["src"]) for s in soup.find_all("script") if isinstance(s, Tag) and s.get("src")]
        chart_js = [s for s in srcs if "/charts." in s or s.startswith("charts.") or "vega" in s]
        if soup.select("figure.chart"):
            with_charts += 1
            loaders = soup.select("script[data-runtime]")
            assert len(loaders) == 1, page
            runtime = (page.parent / str(loaders[0]["data-runtime"])).resolve()
            assert runtime == runtime_files[0].resolve()
            assert (page.parent / str(loaders[0]["src"])).resolve() == loader_files[0].resolve()
            assert loaders[0].has_attr("defer")
        else:
            assert chart_js == [], page
    assert with_charts >= 1


def test_runtime_has_a_content_hashed_name(hostile_build: Path) -> None:
    import hashlib

    for path in (hostile_build / "static").glob("*.js"):
        digest = path.name.split(".")[-2]
        assert hashlib.sha256(path.read_bytes()).hexdigest()[:10] == digest


def test_no_chart_without_enough_points(make_site: MakeSite, tmp_path: Path) -> None:
    # the minimal site: one date, two prompt lengths at concurrency 1 → a prompt chart, no history
    out = _build(make_site(), tmp_path / "out")
    soup = _soup(out / "recipes/tiny/index.html")
    assert [f["id"] for f in soup.select("figure.chart")] == ["chart-prompt"]
    one_row = make_site(
        {
            "data/rows/tiny/2026-01-02-node-a.csv": ROWS_HEADER
            + f"2026-01-02,tiny,node-a,1.0.0,512,1,50.5,,{FLAGS},EXAMPLE_ENV=1,synthetic,\n"
        }
    )
    out = _build(one_row, tmp_path / "out2")
    soup = _soup(out / "recipes/tiny/index.html")
    assert soup.select("figure.chart") == []
    assert soup.select("script[data-runtime]") == []


@pytest.fixture(scope="module")
def shipped(shipped_site: Path) -> Path:
    return shipped_site


def test_shipped_recipe_charts(shipped: Path) -> None:
    soup = _soup(shipped / "recipes/qwen3.6-35b-a3b-nvidia-nvfp4/index.html")
    specs = _specs(soup)
    prompt = specs["chart-prompt"]["data"]["values"]
    assert [(v["prompt"], v["decode"]) for v in prompt] == [(512, 42.9), (2048, 42.6), (8192, 41.4)]
    history = specs["chart-history-decode_tok_s"]["data"]["values"]
    rows = [v for v in history if v["layer"] == "row"]
    assert {(v["date"], v["value"], v["status"]) for v in rows} >= {
        ("2026-07-06", 76.8, "differs from recipe"),
        ("2026-07-27", 42.6, "matches recipe"),
        ("2026-07-27", 42.5, "differs from recipe"),
    }
    mtp = _specs(_soup(shipped / "recipes/qwen3.6-35b-a3b-nvidia-nvfp4-mtp3/index.html"))
    values = mtp["chart-concurrency"]["data"]["values"]
    assert sorted(v["value"] for v in values if v["measure"] == "Aggregate") == [290.0, 322.05]


def test_shipped_case_study_arms_side_by_side(shipped: Path) -> None:
    soup = _soup(shipped / "case-studies/which-nvfp4-build-to-download/index.html")
    specs = _specs(soup)
    decode = specs["chart-arms-decode_tok_s"]["data"]["values"]
    assert [(v["arm"].split(" (")[0], v["value"]) for v in decode] == [
        ("NVIDIA NVFP4", 42.6),
        ("Unsloth NVFP4-Fast", 106.5),
    ]
    # a study with one linked arm has nothing to put side by side
    other = _soup(shipped / "case-studies/does-quantization-buy-speed/index.html")
    assert other.select("figure.chart") == [] and other.select("script[data-runtime]") == []


def test_a_data_table_is_named_as_its_chart_is(shipped: Path) -> None:
    # The title as written: lower-cased, "ITL side by side" read "itl side by side".
    soup = _soup(shipped / "case-studies/which-nvfp4-build-to-download/index.html")
    names = [
        (
            figure.select_one("figcaption h3").get_text(),
            figure.select_one("details.chart-data summary").get_text(),
            figure.select_one("div.table-scroll")["aria-label"],
        )
        for figure in soup.select("figure.chart")
        if figure.select_one("details.chart-data")
    ]
    assert ("ITL side by side", "Data table: ITL side by side", "Data of the chart ITL side by side") in names
    assert all(summary == f"Data table: {title}" for title, summary, _ in names)


def test_history_points_are_runs_and_findings_are_ringed() -> None:
    import datetime as dt

    from builder.analysis.reconcile import DIFFERS, MATCHES, Difference, Reconciliation, RowStatus
    from builder.site.chart_data import annotate, history_chart

    recon = Reconciliation()
    on = RowStatus(MATCHES)
    off = RowStatus(DIFFERS, (Difference("--max-model-len", "1024", "4096"),))

    def row(row_id: int, date: str, value: float, status: RowStatus) -> dict[str, Any]:
        recon.statuses[row_id] = status
        return {
            "row_id": row_id,
            "date": dt.date.fromisoformat(date),
            "recipe": "r",
            "node": "node-a",
            "engine_version": "1.0.0",
            "prompt_tokens": 2048,
            "context_tokens": 0,
            "concurrency": 1,
            "decode_tok_s": value,
        }

    rows = [
        row(1, "2026-01-02", 50.0, on),
        row(2, "2026-01-02", 52.0, on),
        row(3, "2026-01-02", 51.0, on),
        row(4, "2026-01-02", 80.0, off),  # same day, off-recipe: its own point
        row(5, "2026-01-09", 40.0, on),
    ]
    finding = StubFinding(
        "decode_tok_s",
        {
            "hardware": "test-gpu",
            "prompt_tokens": 2048,
            "context_tokens": 0,
            "concurrency": 1,
            "output_tokens": None,
        },
        [StubRun(dt.date(2026, 1, 2), "node-a", "1.0.0", 51.0)],
        "decode_tok_s does not reproduce </script>",
    )
    chart = history_chart("decode_tok_s", annotate(rows, recon.status, {"node-a": "test-gpu"}), [finding])
    assert chart is not None
    points = [(v["layer"], v["date"], v["value"], v.get("trials"), v["status"]) for v in chart.values]
    assert points == [
        ("row", "2026-01-02", 51.0, 3, "matches recipe"),
        ("row", "2026-01-02", 80.0, 1, "differs from recipe"),
        ("row", "2026-01-09", 40.0, 1, "matches recipe"),
        ("finding", "2026-01-02", 51.0, None, "finding"),
    ]
    assert chart.values[-1]["note"] == "decode_tok_s does not reproduce </script>"
    assert chart.values[-1]["setting"] == chart.values[0]["setting"] == "2,048-token prompt · concurrency 1"
    data = page_data([chart], SpecTemplates())
    assert "</script>" not in data
    embedded = json.loads(data)["charts"][chart.id]
    assert embedded["spec"] == "history/decode_tok_s"
    assert [dict(zip(embedded["fields"], row, strict=True)) for row in chart_rows(embedded)] == [
        dict(zip(chart.fields, row, strict=True)) for row in chart.rows
    ]
    # an annotated finding says why beside what
    annotated = dataclasses.replace(
        finding, annotation={"status": "acknowledged", "reason": "driver regression"}
    )
    ringed = history_chart("decode_tok_s", annotate(rows, recon.status, {"node-a": "test-gpu"}), [annotated])
    assert ringed is not None and ringed.values[-1]["note"].endswith("(annotated: driver regression)")
    # one date and no finding: nothing to show over time
    assert history_chart("decode_tok_s", annotate(rows[:4], recon.status, {"node-a": "test-gpu"}), []) is None

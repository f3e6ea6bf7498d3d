"""The results table, parsed: one-line rows, a short source, notes, and a link to the commands of
each row's run, which are on the page once per run."""

from __future__ import annotations

import shlex
import shutil
import sys
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
from tests.conftest import REPO, SITES
from tests.rowsite import rows_csv, run

sys.path.insert(0, str(REPO / "bench"))
import generate  # noqa: E402

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


def _soup(page: Path) -> BeautifulSoup:
    return BeautifulSoup(page.read_text(encoding="utf-8"), "html.parser")


def _rows(page: Path) -> list[Tag]:
    return _soup(page).select("table.rows tbody tr")


def _run_of(soup: BeautifulSoup, tr: Tag) -> Tag:
    """The disclosure of the run ``tr`` links to, checked to be one: the link's target is an element
    of the page inside a ``details.run``."""
    [link] = tr.select("td.notes a.run-link")
    assert link.get_text() == "Reproduce"
    href = str(link["href"])
    assert href.startswith("#")
    target = soup.find(id=href[1:])
    assert isinstance(target, Tag), href
    details = target if target.name == "details" else target.find_parent("details")
    assert details is not None and "run" in details.get_attribute_list("class"), href
    return details


def _script(run: Tag) -> str:
    [pre] = run.select("pre.cmd")
    return pre.get_text()


def _imports(script: str) -> list[list[str]]:
    """The import lines of a run's script, as shell words (its words hold no line break here)."""
    commands: list[str] = []
    going = False
    for line in script.splitlines():
        if going:
            commands[-1] = commands[-1][:-1] + line  # the backslash ends the line, not a word
        elif line.startswith("#"):
            continue
        else:
            commands.append(line)
        going = line.endswith("\\")
    return [shlex.split(c) for c in commands if c.startswith("python -m builder import")]


def _covers(run_import: list[str], row_import: list[str]) -> bool:
    """``run_import`` is the row's import line with more outputs where the row's has its own."""
    head, out, tail = row_import[:6], row_import[6], row_import[7:]
    return run_import[:6] == head and out in run_import and run_import[len(run_import) - len(tail) :] == tail


def test_every_row_links_to_its_runs_commands_which_are_its_own(tiny: Path) -> None:
    site = load_site(load_config(tiny), Problems())
    rows = rows_by_recipe(site)["tiny"]
    anchors = row_anchors(site, rows)
    soup = _soup(tiny.parent / "out/recipes/tiny/index.html")
    trs = {tr["id"]: tr for tr in soup.select("table.rows tbody tr")}
    assert len(trs) == len(rows) == 4
    runs = {}
    for row in rows:
        rep = reproduce(site.recipes["tiny"].meta, "tiny", row)
        run = _run_of(soup, trs[anchors[row["row_id"]]])
        runs[id(run)] = run
        script = _script(run)
        assert rep.serve in script and rep.harness in script
        assert any(
            _covers(line, shlex.split(rep.import_line.replace("\\\n", " "))) for line in _imports(script)
        )
    # a disclosure per row file, each with the file's name
    assert len(runs) == 2
    assert sorted(
        str(run.summary.code.get_text()) for run in runs.values() if run.summary and run.summary.code
    ) == [
        "data/rows/tiny/2026-01-02-node-a.csv",
        "data/rows/tiny/2026-01-05-node-a.csv",
    ]


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


SHARED_SOURCE = "lab notebook <b>7</b>, pages 12 & 13"
"""A source all rows of a run give (its label in the table: the text up to the comma)."""


@pytest.fixture(scope="module")
def shared_notes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The minimal site plus a run of three rows with one source and harness; one row has a note."""
    root = tmp_path_factory.mktemp("rowtable-shared") / "root"
    shutil.copytree(SITES / "minimal", root)
    rows = [
        row
        for concurrency in (1, 2, 4)
        for row in run(
            "2026-02-01",
            50.0 - concurrency,
            concurrency=concurrency,
            source=SHARED_SOURCE,
            harness="vllm bench serve 0.11.0",
        )
    ]
    rows[1]["notes"] = "fan <i>noise</i> & a warm room"
    (root / "data/rows/tiny/2026-02-01-node-a.csv").write_text(rows_csv(rows), encoding="utf-8")
    build(load_config(root, root.parent / "out"))
    return root


def test_what_a_runs_rows_share_is_shown_once_with_the_run(shared_notes: Path) -> None:
    soup = _soup(shared_notes.parent / "out/recipes/tiny/index.html")
    trs = [tr for tr in soup.select("table.rows tbody tr") if tr.time and tr.time["datetime"] == "2026-02-01"]
    assert len(trs) == 3
    runs = {id(r): r for r in (_run_of(soup, tr) for tr in trs)}
    assert len(runs) == 1
    [shared] = runs.values()
    notes = shared.select_one(".run-body .run-notes")
    assert notes is not None
    # above the commands, as text (escaped), with the harness the rows share
    assert notes.find_next_sibling("pre") is not None
    assert f"Source: {SHARED_SOURCE}" in notes.get_text() and notes.find("b") is None
    assert "Harness: vllm bench serve 0.11.0" in notes.get_text()
    assert soup.get_text().count(SHARED_SOURCE) == 1
    assert soup.get_text().count("vllm bench serve 0.11.0") == 1
    for tr in trs:
        cell = tr.select_one("td.source")
        assert cell is not None and cell.get_text() == "lab notebook <b>7</b>"  # the short label stays
        assert SHARED_SOURCE not in tr.get_text() and "Harness" not in tr.get_text()
    # the other run (the minimal site's own rows) shows its own source with it
    other = [r for r in soup.select("details.run") if r is not shared]
    assert [r.select_one(".run-notes").get_text() for r in other] == ["Source: synthetic test row"]  # type: ignore[union-attr]


def test_a_row_keeps_what_differs_from_its_run_and_the_others_only_their_link(shared_notes: Path) -> None:
    soup = _soup(shared_notes.parent / "out/recipes/tiny/index.html")
    trs = [tr for tr in soup.select("table.rows tbody tr") if tr.time and tr.time["datetime"] == "2026-02-01"]
    with_notes = [tr for tr in trs if tr.select_one("td.notes details")]
    assert len(with_notes) == 1
    details = with_notes[0].select_one("td.notes details")
    assert details is not None and details.summary is not None and details.summary.get_text() == "Notes"
    assert details.get_text() == "Notesfan <i>noise</i> & a warm room" and details.find("i") is None
    assert soup.get_text().count("fan <i>noise</i> & a warm room") == 1  # not the run's: one row has it
    for tr in trs:
        [link] = tr.select("td.notes a.run-link")
        assert link.get_text() == "Reproduce"


def test_shipped_recipe_rows_keep_paragraphs_out_of_the_cells(shipped: Path) -> None:
    """The NVIDIA NVFP4 recipe's notes are paragraphs: no cell shows more than a short line of text
    outside a closed disclosure."""
    soup = _soup(shipped / "recipes/qwen3.6-35b-a3b-nvidia-nvfp4/index.html")
    trs = soup.select("table.rows tbody tr")
    assert len(trs) == 5
    for tr in trs:
        script = _script(_run_of(soup, tr))
        for td in tr.find_all("td"):
            for details in td.find_all("details"):
                assert not details.has_attr("open")
                details.extract()
            assert len(td.get_text(" ", strip=True)) <= SOURCE_LABEL + 2, td
        assert "\nvllm serve nvidia/Qwen3.6-35B-A3B-NVFP4" in script
        assert "\nvllm bench serve" in script and "\npython -m builder import" in script


PAGE_LIMIT = 160_000
"""A recipe page with 100 rows is at most this many bytes (issue 34's guard)."""


@pytest.fixture(scope="module")
def hundred(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The minimal site with 100 SYNTHETIC rows in two row files: two runs of one sweep (on two engine
    versions), ten settings (two prompt lengths, five concurrencies) with five trials each."""
    root = tmp_path_factory.mktemp("rowtable-hundred") / "root"
    shutil.copytree(SITES / "minimal", root)
    (root / "data/rows/tiny/2026-01-02-node-a.csv").unlink()
    for date, version in (("2026-02-01", "0.9.0"), ("2026-03-01", "1.0.0")):
        rows = [
            row
            for prompt in (512, 2048)
            for concurrency in (1, 2, 4, 8, 16)
            for row in run(
                date,
                *(round(60 / (1 + concurrency * 0.1) + trial * 0.05, 2) for trial in range(5)),
                prompt_tokens=prompt,
                concurrency=concurrency,
                output_tokens=256,
                harness="vllm bench serve 0.11.0",
                engine_version=version,
            )
        ]
        (root / f"data/rows/tiny/{date}-node-a.csv").write_text(rows_csv(rows), encoding="utf-8")
    build(load_config(root, root.parent / "out"))
    return root


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


def test_a_runs_serve_command_is_on_the_page_once_however_many_rows_it_has(hundred: Path) -> None:
    site = load_site(load_config(hundred), Problems())
    rows = rows_by_recipe(site)["tiny"]
    meta = site.recipes["tiny"].meta
    soup = _soup(hundred.parent / "out/recipes/tiny/index.html")
    trs = soup.select("table.rows tbody tr")
    assert len(trs) == len(rows) == 100
    # every row links to a disclosure of the page: one per row file
    runs = {id(run): run for run in (_run_of(soup, tr) for tr in trs)}
    assert len(runs) == len(soup.select("details.run")) == 2
    text = soup.get_text()
    for row in rows:
        rep = reproduce(meta, "tiny", row)
        assert text.count(rep.serve) == 1  # once for the run's 50 rows
        assert text.count(rep.harness) == 1  # once for the setting's five trials
    assert all(_script(run).count("\n# line") == 10 for run in runs.values())  # a command a setting


@pytest.fixture(scope="module")
def bench_shaped(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A recipe of 100 SYNTHETIC rows as ``bench/bench_page_size.py`` measures them (bench/generate.py):
    runs of 36 rows, one row file each, every row at its own setting, each run's notes alike."""
    root = tmp_path_factory.mktemp("rowtable-bench") / "root"
    generate.write_site(root, 1, 100, cases=0, posts=0)
    build(load_config(root, root.parent / "out"))
    return root


def soup_has_notes(trs: list[Tag]) -> bool:
    return any(tr.select_one("td.notes details") for tr in trs)


def test_a_recipe_page_with_100_rows_stays_within_the_size_limit(bench_shaped: Path) -> None:
    [page] = (bench_shaped.parent / "out/recipes").glob("*/index.html")
    trs = _rows(page)
    assert len(trs) == 100
    settings: dict[str, set[tuple[str, ...]]] = {}
    for tr in trs:
        [link] = tr.select("a.run-link")
        settings.setdefault(str(link["href"]), set()).add(tuple(td.get_text() for td in tr.select("td")[3:6]))
    assert sorted(len(s) for s in settings.values()) == [28, 36, 36]  # every row of a run its own setting
    assert not soup_has_notes(trs)  # the notes are the run's: no row has a disclosure of its own
    assert page.stat().st_size <= PAGE_LIMIT

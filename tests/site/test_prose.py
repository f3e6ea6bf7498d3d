"""Figures in prose: ``{{ ... }}`` bound to rows (rendered, linked, resolved by the documented rules)
and ``check``'s warning about plain figures no row supports, on tests/sites/prose and the shipped site."""

from __future__ import annotations

import json
import shutil
from html.parser import HTMLParser
from pathlib import Path, PurePosixPath

import pytest

from builder.cli import main
from builder.config import load_config
from builder.engine.incremental import build
from builder.errors import Problem
from builder.review.check import check_site
from tests.conftest import REPO, SITES, MakeSite


class _Page(HTMLParser):
    """The bound figures of a page (href, title, text) and every element id."""

    def __init__(self) -> None:
        super().__init__()
        self.figures: list[tuple[str, str, str]] = []
        self.ids: set[str] = set()
        self._open: dict[str, str | None] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if found.get("id"):
            self.ids.add(str(found["id"]))
        if tag == "a" and found.get("class") == "bound-figure":
            self._open = found

    def handle_data(self, data: str) -> None:
        if self._open is not None:
            self.figures.append((str(self._open["href"]), str(self._open.get("title")), data))
            self._open = None


def _page(out: Path, rel: str) -> _Page:
    page = _Page()
    page.feed((out / rel).read_text(encoding="utf-8"))
    return page


def _copy(name: str, tmp_path: Path) -> Path:
    root = tmp_path / name
    shutil.copytree(SITES / name, root)
    return root


def _prose(problems: list[Problem]) -> list[Problem]:
    """The prose_figure warnings (rows measured at one setting only also get not_compared ones)."""
    return [p for p in problems if p.kind == "prose_figure"]


def test_the_prose_site_checks_clean() -> None:
    report = check_site(load_config(SITES / "prose"))
    assert report.errors == [] and _prose(report.warnings) == []


def test_bound_figures_show_their_rows_and_link_to_them(tmp_path: Path) -> None:
    root = _copy("prose", tmp_path)
    out = tmp_path / "out"
    build(load_config(root, out), cache=False, workers=1)
    tiny = _page(out, "recipes/tiny/index.html")
    assert [(href, text) for href, _, text in tiny.figures] == [
        # the matching row of the newest date, not the older 0.9.0 row (61.5) that differs
        ("#row-2026-01-02-node-a-3", "48.25 tok/s"),
        ("#row-2025-12-01-node-a-2", "61.5 tok/s"),  # history, when named by what differs
        ("#row-2026-01-02-node-a-2", "1.0×"),  # 50.5 / 48.25, to one decimal
        ("../../recipes/small/#row-2026-01-02-node-a-2", "2.5×"),  # in the troubleshooting answer
    ]
    assert tiny.figures[0][1] == "48.25 tok/s: decode_tok_s of tiny, 2026-01-02 on node-a"
    case = _page(out, "case-studies/compare/index.html")
    assert [(href, text) for href, _, text in case.figures] == [
        ("../../recipes/small/#row-2026-01-02-node-a-2", "120.5 tok/s"),
        ("../../recipes/tiny/#row-2026-01-02-node-a-3", "48.25 tok/s"),
    ]
    for page_rel, page in (("recipes/tiny/index.html", tiny), ("case-studies/compare/index.html", case)):
        for href, _, _ in page.figures:
            target, _, anchor = href.partition("#")
            where = (PurePosixPath(page_rel).parent / target).as_posix() if target else page_rel
            target_rel = str(PurePosixPath(*_resolve(where))) + ("/index.html" if target else "")
            assert anchor in _page(out, target_rel).ids, (page_rel, href)
    faq = (out / "troubleshooting/index.html").read_text(encoding="utf-8")
    assert "2.5×" in faq and "{{" not in faq
    api = json.loads((out / "api/recipes/tiny.json").read_text(encoding="utf-8"))
    assert "2.5×" in json.dumps(api, ensure_ascii=False)


def _resolve(path: str) -> list[str]:
    parts: list[str] = []
    for part in path.split("/"):
        if part == "..":
            parts.pop()
        elif part and part != ".":
            parts.append(part)
    return parts


WRONG = "50.7 t/s"
WRONG_MESSAGE = (
    "content/recipes/tiny.md:20: '50.7 t/s': no row of small, tiny supports it within its printed "
    "precision (50.65–50.75); bind it to its row with {{ METRIC KEY=VALUE ... }}, or mark a figure "
    "that is not a row's {{ unbound ... }}"
)


def _planted(tmp_path: Path) -> Path:
    root = _copy("prose", tmp_path)
    recipe = root / "content/recipes/tiny.md"
    recipe.write_text(recipe.read_text(encoding="utf-8").replace("50.5 t/s", WRONG), encoding="utf-8")
    return root


def test_a_planted_wrong_figure_warns_at_its_line(tmp_path: Path) -> None:
    report = check_site(load_config(_planted(tmp_path)))
    assert report.errors == []
    assert [p.format() for p in _prose(report.warnings)] == [WRONG_MESSAGE]
    assert report.exit_code == 0
    strict = check_site(load_config(_planted(tmp_path / "strict")), strict=True)
    assert [p.format() for p in strict.errors] == [WRONG_MESSAGE] and strict.exit_code == 1


def test_the_warning_in_every_format(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = str(_planted(tmp_path))
    assert main(["check", "--root", root, "--format", "json"]) == 0
    warnings = json.loads(capsys.readouterr().out)["warnings"]
    path, line, message = WRONG_MESSAGE.split(":", 2)
    assert [w for w in warnings if w.get("kind") == "prose_figure"] == [
        {"kind": "prose_figure", "path": path, "line": int(line), "message": message[1:]}
    ]
    assert main(["check", "--root", root]) == 0
    assert f"{WRONG_MESSAGE} (warning)" in capsys.readouterr().out.splitlines()
    assert main(["check", "--root", root, "--format", "github"]) == 0
    assert "::warning file=content/recipes/tiny.md,line=20::'50.7 t/s'" in capsys.readouterr().out
    assert main(["check", "--root", root, "--strict", "--format", "json"]) == 1
    assert json.loads(capsys.readouterr().out)["errors"][0]["kind"] == "prose_figure"


def test_no_prose_figure_warning_on_the_shipped_site() -> None:
    report = check_site(load_config(REPO))
    assert report.errors == []
    assert [p for p in report.warnings if p.kind == "prose_figure"] == []


def test_a_wrong_figure_planted_in_the_shipped_site_warns(make_site: MakeSite) -> None:
    root = make_site(base=None)
    for folder in ("content", "data"):
        shutil.copytree(REPO / folder, root / folder)
    rel = "content/recipes/qwen3.6-35b-a3b-nvidia-nvfp4.md"
    lines = (root / rel).read_text(encoding="utf-8").split("\n")
    at = next(i for i, line in enumerate(lines) if "{{ decode_tok_s date=2026-07-06 }} decode." in line)
    lines[at] = lines[at].replace("{{ decode_tok_s date=2026-07-06 }}", "78.6 tok/s")
    (root / rel).write_text("\n".join(lines), encoding="utf-8")
    report = check_site(load_config(root))
    [warning] = _prose(report.warnings)
    assert (warning.path, warning.line) == (rel, at + 1)
    assert warning.message.startswith("'78.6 tok/s': no row of qwen3.6-35b-a3b-nvidia-nvfp4,")


def test_problems_carry_their_kind_only_when_named() -> None:
    assert Problem("a.md", 3, "m").as_dict() == {"path": "a.md", "line": 3, "message": "m"}
    assert Problem("a.md", 3, "m", "prose_figure").as_dict()["kind"] == "prose_figure"

"""``new``: the scaffold fails check only on its TODO lines, and passes once they are filled."""

from __future__ import annotations

import datetime as dt
import re
import shutil
from pathlib import Path

import pytest

from builder.cli import main
from builder.config import load_config
from builder.content.docstrings import field_docs
from builder.content.models import CaseStudyMeta, PostMeta, RecipeMeta
from builder.content.scaffold import scaffold
from builder.errors import ConfigError
from builder.review.check import check_site
from tests.conftest import MakeSite

REPO = Path(__file__).resolve().parents[2]
FILLS = {
    "title": '"A title"',
    "model": "example/tiny",
    "checkpoint": "example/tiny-fp8",
    "hardware": "test-gpu",
    "engine": "vllm",
    "engine_version": '"1.0.0"',
    "flags": '"--max-model-len 4096 --kv-cache-dtype fp8"',
    "question": "Does it work?",
    "verdict": "It does.",
    "date": "2026-01-02",
    "label": "An arm",
    "recipe": "tiny",
}
_TODO_LINE = re.compile(r"^([ \t]*(?:- )?)(\w+):[ \t]*# TODO.*$", re.MULTILINE)
MODELS = {"recipe": RecipeMeta, "case-study": CaseStudyMeta, "post": PostMeta}
PATHS = {
    "recipe": "content/recipes/fresh.md",
    "case-study": "content/case-studies/fresh.md",
    "post": "content/posts/fresh.md",
}


def _fill(text: str) -> str:
    return _TODO_LINE.sub(lambda m: f"{m[1]}{m[2]}: {FILLS[m[2]]}", text)


@pytest.mark.parametrize("kind", ["recipe", "case-study", "post"])
def test_scaffold_fails_only_on_todo_lines_then_passes(
    kind: str, make_site: MakeSite, capsys: pytest.CaptureFixture[str]
) -> None:
    root = make_site()
    assert main(["new", kind, "fresh", "--root", str(root)]) == 0
    out = capsys.readouterr().out.splitlines()
    path = root / PATHS[kind]
    assert Path(out[0]).resolve() == path
    lines = path.read_text(encoding="utf-8").split("\n")
    report = check_site(load_config(root))
    assert report.errors, "an unfilled scaffold must not pass check"
    for problem in report.errors:
        assert problem.path == PATHS[kind]
        assert problem.line is not None and "# TODO" in lines[problem.line - 1], problem.format()
    model = MODELS[kind]
    required = {name for name, info in model.model_fields.items() if info.is_required()}
    reported = {p.message.split("'")[1].split(".")[0] for p in report.errors}
    assert reported == required - ({"date"} if kind == "post" else set())
    path.write_text(_fill(path.read_text(encoding="utf-8")), encoding="utf-8")
    filled = check_site(load_config(root))
    assert filled.errors == []
    key = {"recipe": "recipes", "case-study": "case_studies", "post": "posts"}[kind]
    assert filled.stats[key] == (2 if kind == "recipe" else 1)


@pytest.mark.parametrize("kind", ["recipe", "case-study", "post"])
def test_every_field_is_explained(kind: str, make_site: MakeSite) -> None:
    root = make_site()
    text = scaffold(load_config(root), kind, "fresh", dt.date(2026, 1, 2)).text
    front = text.split("---")[1]
    docs = field_docs(MODELS[kind])
    for name in MODELS[kind].model_fields:
        assert re.search(rf"^(# )?{name}:", front, re.MULTILINE), name
        assert docs.get(name), f"{name} has no docstring"
        first_words = " ".join(docs[name].replace("``", "`").split()[:4])
        assert first_words in " ".join(line.lstrip("# ") for line in front.split("\n")), name


def test_post_is_dated_today(make_site: MakeSite) -> None:
    root = make_site()
    text = scaffold(load_config(root), "post", "fresh", dt.date(2026, 3, 4)).text
    assert "\ndate: 2026-03-04\n" in text


def test_hints_list_the_site_ids(tmp_path: Path) -> None:
    root = tmp_path / "site"
    shutil.copytree(REPO / "content", root / "content")
    shutil.copytree(REPO / "data", root / "data")
    config = load_config(root)
    recipe = scaffold(config, "recipe", "fresh", dt.date(2026, 1, 2)).text
    assert "hardware:  # TODO one of: dgx-spark\n" in recipe
    case = scaffold(config, "case-study", "fresh", dt.date(2026, 1, 2)).text
    slugs = ", ".join(sorted(p.stem for p in (REPO / "content/recipes").glob("*.md")))
    assert f"recipe:  # TODO a recipe slug (one of: {slugs}), or leave empty" in case


def test_refuses_to_overwrite(make_site: MakeSite, capsys: pytest.CaptureFixture[str]) -> None:
    root = make_site()
    before = (root / "content/recipes/tiny.md").read_bytes()
    assert main(["new", "recipe", "tiny", "--root", str(root)]) == 1
    assert (
        capsys.readouterr().err
        == "error: content/recipes/tiny.md: already exists; new never overwrites a file\n"
    )
    assert (root / "content/recipes/tiny.md").read_bytes() == before


@pytest.mark.parametrize(
    ("slug", "suggestion"),
    [("My Recipe", "my-recipe"), ("-dash", "dash"), ("a/b", "a-b"), ("Ünïcode", "unicode")],
)
def test_invalid_slugs(slug: str, suggestion: str, make_site: MakeSite) -> None:
    root = make_site()
    with pytest.raises(ConfigError) as exc:
        scaffold(load_config(root), "recipe", slug, dt.date(2026, 1, 2))
    assert exc.value.message == (
        f"'{slug}' is not a valid slug: lowercase letters, digits, '.', '-' or '_', starting with a letter or "
        f"digit, at most 120 characters (try '{suggestion}')"
    )
    assert not list((root / "content/recipes").glob("*/**"))

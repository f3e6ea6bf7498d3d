"""Shared fixtures: tiny sites written from dicts, and the committed example sites."""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterable
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
SITES = TESTS / "sites"
SITES_INVALID = TESTS / "sites_invalid"

MakeSite = Callable[..., Path]


@pytest.fixture(autouse=True, scope="session")
def _fixtures_stay_clean() -> object:
    """The committed example sites are read, never built in place: a build keeps its record in
    ``<root>/.cache``, which would then be copied into every site made from them."""
    yield
    left = sorted(
        str(p.relative_to(TESTS)) for folder in (SITES, SITES_INVALID) for p in folder.glob("*/.cache")
    )
    assert not left, f"a test built a committed example site in place: {left}"


@pytest.fixture
def make_site(tmp_path: Path) -> MakeSite:
    """Write a site from ``{relative path: text or bytes}``; ``base`` copies an example site first.

    Text is dedented, so tests can write files inline.
    """

    def make(files: dict[str, str | bytes] | None = None, base: str | None = "minimal") -> Path:
        root = tmp_path / "site-root"
        if root.exists():
            shutil.rmtree(root)
        if base:
            shutil.copytree(SITES / base, root)
        else:
            root.mkdir()
        for rel, content in (files or {}).items():
            path = root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            if content is None:
                path.unlink(missing_ok=True)
            elif isinstance(content, bytes):
                path.write_bytes(content)
            else:
                path.write_text(textwrap.dedent(content), encoding="utf-8")
        return root

    return make


def tree(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` by relative path, for byte-for-byte comparisons of outputs."""
    return {
        p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }


def synthetic_site(
    root: Path, monkeypatch: pytest.MonkeyPatch, *, recipes: int, rows: int, cases: int, posts: int
) -> Path:
    """A SYNTHETIC site (``bench/generate.py``) with the repository's templates, its build date fixed."""
    sys.path.insert(0, str(REPO / "bench"))
    import generate

    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1785110400")
    generate.write_site(root, recipes=recipes, rows=rows, cases=cases, posts=posts)
    shutil.copytree(REPO / "templates", root / "templates")
    return root


def run_builder(*args: str, cwd: Path = REPO, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """``python -m builder ARGS`` in a new process, its output captured as text."""
    return subprocess.run(
        [sys.executable, "-m", "builder", *args], cwd=cwd, capture_output=True, text=True, timeout=timeout
    )


def edit_first_recipe(root: Path) -> None:
    """Append a sentence to the body of the site's first recipe (by file name)."""
    recipe = sorted((root / "content" / "recipes").glob("*.md"))[0]
    recipe.write_text(recipe.read_text(encoding="utf-8") + "\nOne more sentence.\n", encoding="utf-8")


def imported_by_build(root: Path, modules: Iterable[str]) -> tuple[str, list[str]]:
    """Build ``root`` in a new process: what it printed, and which of ``modules`` it imported."""
    probe = (
        "import sys\nfrom builder.cli import main\n"
        "assert main(['build', '--root', sys.argv[1]]) == 0\n"
        "print('IMPORTED:' + ' '.join(sorted(set(sys.argv[2:]) & set(sys.modules))))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, str(root), *modules],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    printed, _, imported = done.stdout.rpartition("IMPORTED:")
    return printed, imported.split()

"""Shared fixtures: tiny sites written from dicts, and the committed example sites."""

from __future__ import annotations

import fcntl
import os
import shutil
import signal
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from builder.config import load_config
from builder.engine.incremental import build

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
SITES = TESTS / "sites"
SITES_INVALID = TESTS / "sites_invalid"

MakeSite = Callable[..., Path]

# Property tests: the `ci` profile (the default) draws each test's own budget of examples from a
# fixed seed, so a run is repeatable and its time known; `thorough` (HYPOTHESIS_PROFILE=thorough,
# before a release: CONTRIBUTING.md, "Tests") draws ten times as many, from a new seed each run.
# How fast examples are drawn says more about a busy CI machine than about the code: not checked in `ci`.
THOROUGH_FACTOR = 10
settings.register_profile(
    "ci", derandomize=True, deadline=None, print_blob=True, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile("thorough", derandomize=False, deadline=None, print_blob=True)
PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "ci")
settings.load_profile(PROFILE)


def examples(budget: int) -> int:
    """A property test's number of examples: ``budget`` in the ``ci`` profile, more in ``thorough``."""
    return budget * THOROUGH_FACTOR if PROFILE == "thorough" else budget


@contextmanager
def _run_wide_lock(name: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A folder shared by every worker of this test run (pytest-xdist), held under a lock.

    Without xdist the run's own temporary folder; with it, the folder above the workers' own, which
    belongs to this run alone (pytest makes a new one per run)."""
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    with (shared / f"{name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield shared / name


@pytest.fixture(scope="session")
def shipped_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The repository's own site, built once per test run (shared by the workers) without a cache.

    Tests read it and never write into it; a test that changes a site builds its own."""
    with _run_wide_lock("shipped-site", tmp_path_factory) as out:
        if not (out / "index.html").is_file():
            shutil.rmtree(out, ignore_errors=True)
            build(load_config(REPO, out), cache=False)
    return out


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's own hook reads the groups
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Under pytest-xdist (``--dist loadgroup``), tests that time a real port run one after another
    on one worker (``serial``), the browser tests share one worker and so one Chromium, and the
    tests of a module that share a module-scoped fixture (a built site, mostly) share a worker, so
    that it is built once."""
    for item in items:
        if "tests/browser/" in item.nodeid:
            item.add_marker(pytest.mark.xdist_group("browser"))
        elif item.get_closest_marker("serial"):
            item.add_marker(pytest.mark.xdist_group("serial"))
        elif isinstance(item, pytest.Function) and any(
            definition.scope == "module"
            for definitions in item._fixtureinfo.name2fixturedefs.values()
            for definition in definitions
        ):
            item.add_marker(pytest.mark.xdist_group(item.module.__name__))


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
def shipped_copy(tmp_path: Path) -> Path:
    """A writable copy of the shipped site (content, data and ``site.yaml`` when there is one)."""
    root = tmp_path / "site-root"
    root.mkdir()
    for name in ("content", "data"):
        shutil.copytree(REPO / name, root / name)
    if (REPO / "site.yaml").is_file():
        shutil.copy(REPO / "site.yaml", root / "site.yaml")
    return root


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


def ctrl_c_works() -> None:
    """``preexec_fn`` for a child a test interrupts with SIGINT: Ctrl-C's default disposition.

    A test run started in the background by a shell ignores SIGINT, and a child inherits that (Python
    then installs no KeyboardInterrupt handler), so the Ctrl-C a test sends would do nothing."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


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

"""Publishing: atomic, owned, and clear about what goes wrong.

A build that fails or is interrupted at any point leaves the previous site byte for byte; the
builder refuses folders it does not own and never deletes anything outside its output.
"""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from builder.config import load_config
from builder.engine import output
from builder.engine.incremental import build
from builder.engine.output import MARKER, STAGING_MARKER, check_output_dir, publish
from builder.errors import BuildAborted, OutputError
from tests.conftest import REPO, MakeSite, ctrl_c_works, tree


def siblings(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.parent.iterdir() if p.name != folder.name)


@pytest.fixture
def built(make_site: MakeSite, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1785110400")
    root = make_site()
    out = tmp_path / "public" / "site"
    build(load_config(root, out), workers=1)
    return root, out


# Ownership ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("target", [".", "content", "data/rows", "templates", ".git", ".."])
def test_refuses_the_root_its_parents_and_its_sources(make_site: MakeSite, target: str) -> None:
    root = make_site()
    (root / "templates").mkdir(exist_ok=True)
    with pytest.raises(OutputError, match="refusing"):
        check_output_dir((root / target).resolve(), root)


def test_refuses_a_folder_with_files_but_no_marker(make_site: MakeSite, tmp_path: Path) -> None:
    root = make_site()
    out = tmp_path / "public" / "mine"
    out.mkdir(parents=True)
    (out / "thesis.tex").write_text("precious", encoding="utf-8")
    with pytest.raises(OutputError, match="not empty and has no .llm-recipes-site marker") as exc:
        build(load_config(root, out))
    assert exc.value.path == str(out)
    assert tree(out) == {"thesis.tex": b"precious"}
    assert siblings(out) == []  # nothing staged beside it either


def test_refuses_an_output_path_that_is_a_file(make_site: MakeSite, tmp_path: Path) -> None:
    root = make_site()
    out = tmp_path / "site"
    out.write_text("a file", encoding="utf-8")
    with pytest.raises(OutputError, match="not a folder"):
        build(load_config(root, out))
    assert out.read_text(encoding="utf-8") == "a file"


def test_an_empty_folder_is_taken_and_its_neighbours_are_left_alone(
    make_site: MakeSite, tmp_path: Path
) -> None:
    root = make_site()
    public = tmp_path / "public"
    out = public / "site"
    out.mkdir(parents=True)
    neighbour = public / "notes.txt"
    neighbour.write_text("keep me", encoding="utf-8")
    (public / ".site.new-foreign").mkdir()  # looks like ours by name, but carries no marker
    build(load_config(root, out))
    build(load_config(root, out))
    assert (out / MARKER).is_file() and (out / "index.html").is_file()
    assert neighbour.read_text(encoding="utf-8") == "keep me"
    assert (public / ".site.new-foreign").is_dir()


# Atomicity ----------------------------------------------------------------------------------------


def test_a_failure_while_writing_leaves_the_previous_site(
    built: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    root, out = built
    before = tree(out)
    (root / "content" / "recipes" / "tiny.md").write_text(
        (root / "content" / "recipes" / "tiny.md").read_text(encoding="utf-8") + "\nChanged.\n",
        encoding="utf-8",
    )
    real = Path.write_bytes
    calls = {"n": 0}

    def failing(self: Path, data: bytes) -> int:
        calls["n"] += 1
        if calls["n"] > 3 and ".new-" in str(self):
            raise OSError(errno.EIO, "Input/output error", str(self))
        return real(self, data)

    monkeypatch.setattr(Path, "write_bytes", failing)
    with pytest.raises(OutputError, match="cannot write the site: Input/output error"):
        build(load_config(root, out), workers=1)
    monkeypatch.setattr(Path, "write_bytes", real)
    assert tree(out) == before
    assert siblings(out) == []


def test_a_full_disk_says_so(built: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    root, out = built
    before = tree(out)

    def full(target: Path, files: object, reuse: object, **how: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device", str(target / "index.html"))

    monkeypatch.setattr(output, "_write_tree", full)
    with pytest.raises(OutputError) as exc:
        publish({"index.html": b"x"}, out, root)
    assert exc.value.message == "cannot write the site: no space left on the device"
    assert tree(out) == before and siblings(out) == []


def test_an_unwritable_parent_is_a_clear_error(
    built: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    root, out = built

    def denied(*args: object, **kwargs: object) -> str:
        raise PermissionError(errno.EACCES, "Permission denied")

    monkeypatch.setattr(output.tempfile, "mkdtemp", denied)
    with pytest.raises(OutputError) as exc:
        publish({"index.html": b"x"}, out, root)
    assert exc.value.message == "cannot create a folder beside the output: Permission denied"
    assert exc.value.path == str(out.parent)


def test_an_error_in_the_site_leaves_the_previous_site(built: tuple[Path, Path]) -> None:
    root, out = built
    before = tree(out)
    rows = root / "data" / "rows" / "tiny" / "2026-01-02-node-a.csv"
    rows.write_text(
        rows.read_text(encoding="utf-8") + "2026-01-03,tiny,node-a,1.0.0,512,1,1,5\n", encoding="utf-8"
    )
    with pytest.raises(BuildAborted):
        build(load_config(root, out), workers=1)
    assert tree(out) == before and siblings(out) == []


INTERRUPTED = textwrap.dedent(
    """
    import os, signal, sys
    from builder.engine import output
    from builder.config import load_config
    from builder.engine.incremental import build

    stage = sys.argv[3]
    if stage == "write":
        real = output._write_tree
        def interrupted(target, files, reuse, **how):
            real(target, dict(list(files.items())[:3]), {})
            os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C halfway through writing
        output._write_tree = interrupted
    else:
        import builder.site.render as render
        real_jobs = render.page_jobs
        def jobs(ctx, summary=None):
            found = real_jobs(ctx, summary)
            def stop():
                os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C while rendering
                return b""
            return found[:2] + [(found[2][0], stop)] + found[3:]
        render.page_jobs = jobs
    try:
        build(load_config(sys.argv[1], sys.argv[2]), cache=False, workers=1)
    except KeyboardInterrupt:
        sys.exit(130)
    sys.exit(0)
    """
)


@pytest.mark.parametrize("stage", ["render", "write"])
def test_ctrl_c_midway_leaves_the_previous_site(built: tuple[Path, Path], tmp_path: Path, stage: str) -> None:
    root, out = built
    before = tree(out)
    recipe = root / "content" / "recipes" / "tiny.md"
    recipe.write_text(
        recipe.read_text(encoding="utf-8").replace("Tiny model", "Renamed model"), encoding="utf-8"
    )
    script = tmp_path / "interrupted.py"
    script.write_text(INTERRUPTED, encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, str(script), str(root), str(out), stage],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        preexec_fn=ctrl_c_works,
        timeout=120,
    )
    assert proc.returncode == 130, proc.stderr.decode()
    assert tree(out) == before
    assert siblings(out) == []


def test_a_killed_build_leaves_the_previous_site_and_its_litter_is_swept(
    built: tuple[Path, Path], tmp_path: Path
) -> None:
    """SIGKILL gives no chance to clean up: the old site is still whole, and the next build sweeps."""
    root, out = built
    before = tree(out)
    script = tmp_path / "killed.py"
    script.write_text(
        textwrap.dedent(
            """
            import os, signal, sys
            from builder.engine import output
            from builder.config import load_config
            from builder.engine.incremental import build
            real = output._write_tree
            def killed(target, files, reuse, **how):
                real(target, dict(list(files.items())[:3]), {})
                os.kill(os.getpid(), signal.SIGKILL)
            output._write_tree = killed
            build(load_config(sys.argv[1], sys.argv[2]), cache=False, workers=1)
            """
        ),
        encoding="utf-8",
    )
    proc = subprocess.run(
        [sys.executable, str(script), str(root), str(out)],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        timeout=120,
    )
    assert proc.returncode == -signal.SIGKILL
    assert tree(out) == before
    litter = [out.parent / name for name in siblings(out)]
    assert litter and all((p / STAGING_MARKER).is_file() for p in litter)
    build(load_config(root, out), workers=1)
    assert siblings(out) == []


# The spare tree: the replaced site begins the next build's tree -----------------------------------


def _publish_with_spare(files: dict[str, bytes], keep: list[str], out: Path, root: Path, spare: Path) -> None:
    """Publish ``files`` and link ``keep`` from the current site, as the engine does (with inodes)."""
    reuse = {rel: str(out / rel) for rel in keep}
    inodes = {rel: (out / rel).stat().st_ino for rel in keep}
    publish(files, out, root, reuse=reuse, spare=spare, inodes=inodes)


def test_a_spare_tree_is_brought_up_to_date_without_writing_into_the_published_site(tmp_path: Path) -> None:
    root, out, spare = tmp_path / "root", tmp_path / "site", tmp_path / "cache" / "spare"
    root.mkdir()
    _publish_with_spare({"x.html": b"1", "old/gone.html": b"g", "y.html": b"y1"}, [], out, root, spare)
    assert not spare.exists()  # nothing was replaced yet
    _publish_with_spare({"y.html": b"y2"}, ["x.html", "old/gone.html"], out, root, spare)
    assert tree(spare)["y.html"] == b"y1"  # the replaced site waits there
    x_inode = (out / "x.html").stat().st_ino
    # The spare's x.html is the published x.html (one inode): writing it must not touch the site.
    _publish_with_spare({"x.html": b"3", "new/page.html": b"n"}, ["y.html"], out, root, spare)
    assert tree(out) == {MARKER: output.MARKER_TEXT, "x.html": b"3", "y.html": b"y2", "new/page.html": b"n"}
    assert not (out / "old").exists()  # a file gone, and the folder it left empty
    assert tree(spare)["x.html"] == b"1" and (spare / "x.html").stat().st_ino == x_inode
    assert siblings(out) == ["cache", "root"]
    # A file kept twice is the same inode throughout: not linked again.
    y_inode = (out / "y.html").stat().st_ino
    _publish_with_spare({"z.html": b"z"}, ["x.html", "y.html", "new/page.html"], out, root, spare)
    assert (out / "y.html").stat().st_ino == y_inode
    assert tree(out) == {
        MARKER: output.MARKER_TEXT,
        "x.html": b"3",
        "y.html": b"y2",
        "new/page.html": b"n",
        "z.html": b"z",
    }


def test_a_spare_tree_that_does_not_fit_gives_way_to_a_fresh_one(tmp_path: Path) -> None:
    """A folder where a file now goes: the tree is begun again, the site is still right."""
    root, out, spare = tmp_path / "root", tmp_path / "site", tmp_path / "cache" / "spare"
    root.mkdir()
    _publish_with_spare({"a/index.html": b"1"}, [], out, root, spare)
    _publish_with_spare({"b.html": b"2"}, [], out, root, spare)  # the spare now holds a/
    _publish_with_spare({"a": b"a file now"}, [], out, root, spare)
    assert tree(out) == {MARKER: output.MARKER_TEXT, "a": b"a file now"}
    assert siblings(out) == ["cache", "root"]


def test_an_interrupt_while_a_spare_tree_is_brought_up_to_date_leaves_the_site(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C halfway through writing into the reused tree: the published site is byte for byte
    what it was (its files share inodes with that tree), and the next publish is whole."""
    root, out, spare = tmp_path / "root", tmp_path / "site", tmp_path / "cache" / "spare"
    root.mkdir()
    pages = {f"p{i}/index.html": f"v1 {i}".encode() for i in range(6)}
    _publish_with_spare(pages, [], out, root, spare)
    _publish_with_spare({"extra.html": b"x"}, sorted(pages), out, root, spare)
    before = tree(out)
    written: list[str] = []
    real = Path.write_bytes

    def interrupted(path: Path, data: bytes) -> int:
        if path.name == "index.html":
            if len(written) == 3:
                raise KeyboardInterrupt
            written.append(path.parent.name)
        return real(path, data)

    monkeypatch.setattr(Path, "write_bytes", interrupted)
    with pytest.raises(KeyboardInterrupt):
        _publish_with_spare(dict.fromkeys(pages, b"v2"), [], out, root, spare)
    monkeypatch.setattr(Path, "write_bytes", real)
    assert written == ["p0", "p1", "p2"]  # it was writing pages into the reused tree
    assert tree(out) == before
    assert siblings(out) == ["cache", "root"]
    _publish_with_spare(dict.fromkeys(pages, b"v2"), [], out, root, spare)
    assert tree(out) == {MARKER: output.MARKER_TEXT, **dict.fromkeys(pages, b"v2")}

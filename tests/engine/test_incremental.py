"""The incremental builder gives the bytes of the plain pipeline (``build_site``) after any series of edits.

A small SYNTHETIC site (bench/generate.py) gets a long, seeded series of random edits — rows
changed, added, deleted; recipes' bodies and front matter edited, recipes added and deleted; templates,
case studies, posts, nodes and hardware edited; errors introduced and fixed. After each edit one
long-lived builder rebuilds (told what changed, or not) and :func:`builder.engine.pure.build_site`
builds the site in memory: its files and the published tree must be identical byte for byte, or both
builds must fail with the same problems while the incremental output stays as it was.
"""

from __future__ import annotations

import os
import random
import re
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from builder.config import load_config
from builder.engine import incremental
from builder.engine.build_state import state_dir
from builder.engine.incremental import IncrementalBuilder, build
from tests.conftest import REPO, synthetic_site, tree
from tests.engine.pure_build import published, pure_build

sys.path.insert(0, str(REPO / "bench"))
import generate  # noqa: E402

SEED = 20260727
STEPS = 14


def engine_site(root: Path) -> Any:
    from builder.data.load import load_site
    from builder.errors import Problems

    return load_site(load_config(root), Problems())


def assert_same_tree(a: Path, b: Path, step: str) -> None:
    assert_same_files(tree(a), tree(b), step)


def assert_same_files(left: dict[str, bytes], right: dict[str, bytes], step: str) -> None:
    assert sorted(left) == sorted(right), f"{step}: file lists differ: {sorted(set(left) ^ set(right))[:10]}"
    differing = [k for k in left if left[k] != right[k]]
    assert not differing, f"{step}: {len(differing)} files differ, e.g. {differing[:5]}"


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return synthetic_site(tmp_path / "root", monkeypatch, recipes=6, rows=24, cases=2, posts=2)


class Editor:
    """Random edits to a generated site; every edit returns the paths it touched."""

    def __init__(self, root: Path, rnd: random.Random) -> None:
        self.root = root
        self.rnd = rnd
        self.counter = 0

    def _recipes(self) -> list[Path]:
        return sorted((self.root / "content" / "recipes").glob("*.md"))

    def _row_files(self) -> list[Path]:
        return sorted((self.root / "data" / "rows").rglob("*.csv"))

    def _sub(self, path: Path, pattern: str, repl: str, count: int = 1) -> set[Path]:
        text = path.read_text(encoding="utf-8")
        new = re.sub(pattern, repl, text, count=count, flags=re.M)
        path.write_text(new, encoding="utf-8")
        return {path}

    def change_row(self) -> set[Path]:
        path = self.rnd.choice(self._row_files())
        lines = path.read_text(encoding="utf-8").splitlines()
        if len(lines) < 2:
            return set()
        i = self.rnd.randrange(1, len(lines))
        cells = lines[i].split(",")
        cells[6] = f"{self.rnd.uniform(1, 200):.2f}"  # decode_tok_s
        lines[i] = ",".join(cells)
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        return {path}

    def add_rows(self) -> set[Path]:
        self.counter += 1
        index = self.rnd.randrange(len(self._recipes()) + 2)  # sometimes a recipe that does not exist
        slugs = {p.stem for p in self._recipes()}
        if generate.recipe_slug(index) not in slugs:
            index = 0 if generate.recipe_slug(0) in slugs else int(sorted(slugs)[0].rsplit("r", 1)[1])
        return {
            generate.add_row_file(
                self.root,
                index,
                # After every generated run, on or before the fixed build day (2026-07-27).
                f"2026-07-{1 + self.counter % 27:02d}",
                rows=self.rnd.randint(1, 12),
                seed=self.counter,
            )
        }

    def delete_rows(self) -> set[Path]:
        files = self._row_files()
        if len(files) < 3:
            return set()
        path = self.rnd.choice(files)
        path.unlink()
        return {path}

    def edit_body(self) -> set[Path]:
        path = self.rnd.choice(self._recipes())
        self.counter += 1
        choice = self.rnd.random()
        if choice < 0.4:
            with path.open("a", encoding="utf-8") as handle:
                handle.write(
                    f"\nSynthetic edit {self.counter}: a [link](https://example.org/{self.counter}).\n"
                )
            return {path}
        if choice < 0.7:
            return self._sub(
                path, r"^### Synthetic question 1:.*$", f"### Synthetic question 1: edited {self.counter}?"
            )
        return self._sub(path, r"^## Setup$", f"## Setup {self.counter}")

    def edit_front(self) -> set[Path]:
        path = self.rnd.choice(self._recipes())
        self.counter += 1
        field = self.rnd.choice(["title", "model", "summary", "engine_version", "flags", "verified"])
        if field == "title":
            return self._sub(path, r"^title: .*$", f"title: 'Synthetic recipe retitled {self.counter}'")
        if field == "model":
            return self._sub(
                path, r"^model: .*$", f"model: synth-org/synth-model-{self.rnd.randrange(3):02d}"
            )
        if field == "summary":
            return self._sub(path, r"^summary: .*$", f"summary: 'SYNTHETIC summary {self.counter}'")
        if field == "engine_version":
            return self._sub(
                path, r"^engine_version: .*$", f"engine_version: '0.{self.rnd.randrange(19, 23)}.0'"
            )
        if field == "flags":
            return self._sub(
                path, r"^flags: .*$", f"flags: '--max-model-len {1024 * self.rnd.randrange(1, 9)}'"
            )
        return self._sub(
            path, r"^verified: .*$", f"verified: 2026-0{self.rnd.randrange(1, 10)}-1{self.rnd.randrange(10)}"
        )

    def add_recipe(self) -> set[Path]:
        self.counter += 1
        index = 500 + self.counter
        rnd = random.Random(index)
        path = self.root / "content" / "recipes" / f"{generate.recipe_slug(index)}.md"
        path.write_text(generate.recipe_markdown(index, rnd), encoding="utf-8")
        touched = {path}
        if self.rnd.random() < 0.7:
            touched.add(generate.add_row_file(self.root, index, "2026-03-03", rows=6, seed=index))
        return touched

    def delete_recipe(self) -> set[Path]:
        recipes = self._recipes()
        if len(recipes) < 4:
            return set()
        path = self.rnd.choice(recipes)
        # Keep case studies valid: a recipe they use stays (errors are exercised by break_and_fix).
        used = "".join(
            p.read_text(encoding="utf-8") for p in (self.root / "content" / "case-studies").glob("*.md")
        )
        if path.stem in used:
            return set()
        path.unlink()
        touched = {path}
        rows_dir = self.root / "data" / "rows" / path.stem
        if rows_dir.is_dir():
            touched |= set(rows_dir.rglob("*"))
            touched.add(rows_dir)
            shutil.rmtree(rows_dir)
        return touched

    def edit_template(self) -> set[Path]:
        self.counter += 1
        templates = self.root / "templates"
        name = self.rnd.choice(
            ["recipe.html", "base.html", "index.html", "comparison.html", "partials/row_table.html"]
        )
        path = templates / name
        if not path.is_file():
            return set()
        text = path.read_text(encoding="utf-8")
        marker = f"<!-- synthetic template edit {self.counter} -->"
        if "{% endblock %}" in text and self.rnd.random() < 0.5:
            text = text.replace("{% endblock %}", marker + "{% endblock %}", 1)
        else:
            text += f"\n{{# {marker} #}}\n" if self.rnd.random() < 0.3 else f"\n{marker}\n"
        path.write_text(text, encoding="utf-8")
        return {path}

    def edit_other(self) -> set[Path]:
        self.counter += 1
        choice = self.rnd.choice(["case", "post", "nodes", "hardware", "newpost"])
        if choice == "case":
            path = self.rnd.choice(sorted((self.root / "content" / "case-studies").glob("*.md")))
            return self._sub(path, r"^verdict: .*$", f"verdict: 'SYNTHETIC verdict {self.counter}'")
        if choice == "post":
            path = self.rnd.choice(sorted((self.root / "content" / "posts").glob("*.md")))
            return self._sub(path, r"^title: .*$", f"title: Synthetic post retitled {self.counter}")
        if choice == "newpost":
            path = self.root / "content" / "posts" / f"synth-extra-{self.counter}.md"
            path.write_text(
                f"---\ntitle: Extra {self.counter}\ndate: 2026-02-0{1 + self.counter % 9}\n---\nSYNTHETIC.\n",
                encoding="utf-8",
            )
            return {path}
        if choice == "nodes":
            path = self.root / "data" / "nodes.yaml"
            return self._sub(path, r"description: .*$", f"description: 'SYNTHETIC node {self.counter}'")
        path = self.root / "data" / "hardware.yaml"
        return self._sub(path, r"name: .*$", f"name: 'Synthetic GPU renamed {self.counter}'")

    def break_and_fix(self) -> list[set[Path]]:
        """Two edits: a bad row value, then the file restored."""
        path = self.rnd.choice(self._row_files())
        original = path.read_text(encoding="utf-8")
        lines = original.splitlines()
        cells = lines[-1].split(",")
        cells[5] = "1,5"  # a decimal comma: a ragged row
        lines[-1] = ",".join(cells)
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        self._restore = (path, original)
        return [{path}]

    def restore(self) -> set[Path]:
        path, original = self._restore
        path.write_text(original, encoding="utf-8")
        return {path}


def assert_as_built(root: Path, out: Path, step: str) -> None:
    """The site published in ``out`` is ``build_site``'s, byte for byte."""
    problems, files = pure_build(root, out)
    assert problems is None, f"{step}: build_site failed: {problems[:3]}"
    assert_same_files(published(out), files, step)


@pytest.mark.parametrize(("atomic", "steps"), [(True, STEPS), (False, 6)])
def test_random_edits_match_clean_builds(site: Path, tmp_path: Path, atomic: bool, steps: int) -> None:
    """``atomic=False`` is the preview server's mode: the output is updated in place."""
    rnd = random.Random(SEED + int(atomic))
    editor = Editor(site, rnd)
    out = tmp_path / "out-incremental"
    # The preview's mode also keeps the render context, whose site, reconciliation and rows by recipe
    # a template-only edit reuses.
    engine = IncrementalBuilder(load_config(site, out), workers=1, atomic=atomic, keep_context=not atomic)
    first = engine.build(None)
    assert first.ok, first.problems
    assert_as_built(site, out, "initial build")

    edits = [
        editor.change_row,
        editor.change_row,
        editor.add_rows,
        editor.delete_rows,
        editor.edit_body,
        editor.edit_body,
        editor.edit_front,
        editor.edit_front,
        editor.add_recipe,
        editor.delete_recipe,
        editor.edit_template,
        editor.edit_other,
        editor.edit_other,
    ]
    rendered_counts = []
    for step in range(steps):
        if step % 9 == 4:
            touched = editor.break_and_fix()[0]
            name = "break"
        elif step % 9 == 5:
            touched = editor.restore()
            name = "restore"
        else:
            edit = rnd.choice(edits)
            touched = edit()
            name = edit.__name__
        label = f"step {step} ({name})"
        before = tree(out)
        # Alternate: tell the builder what changed (as the dev server does), or let it look.
        if step % 3 == 2:
            engine = IncrementalBuilder(
                load_config(site, out), workers=1, atomic=atomic, keep_context=not atomic
            )  # new process, disk cache
            report = engine.build(None)
        else:
            report = engine.build(touched if step % 2 else None)
        expected_problems, files = pure_build(site, out)
        if expected_problems is not None:
            assert not report.ok, (
                f"{label}: build_site failed ({expected_problems[:3]}) but incremental did not"
            )
            assert sorted(p.format() for p in report.problems) == sorted(expected_problems), label
            assert tree(out) == before, f"{label}: a failed build changed the output"
            continue
        assert report.ok, f"{label}: {report.problems[:3]}"
        assert_same_files(published(out), files, label)
        changed_files = {k for k, v in tree(out).items() if before.get(k) != v} | (
            set(before) - set(tree(out))
        )
        assert changed_files == set(report.written) | set(report.removed), label
        rendered_counts.append((name, report.rendered, report.reused))
    # Not a correctness check: the point of the engine is that pages are reused.
    bodies = [(rendered, reused) for name, rendered, reused in rendered_counts if name == "edit_body"]
    assert bodies and all(rendered < reused for rendered, reused in bodies), rendered_counts


def test_a_template_edit_in_the_preview_renders_only_the_pages_using_it(site: Path, tmp_path: Path) -> None:
    """A template-only rebuild reuses the loaded site; it must still know every front matter digest
    (else every page listing recipes is re-rendered) and keep every parse in the load cache."""
    engine = IncrementalBuilder(
        load_config(site, tmp_path / "out"), workers=1, atomic=False, keep_context=True
    )
    assert engine.build(None).ok
    recipes = len(list((site / "content" / "recipes").glob("*.md")))
    assert engine._cache is not None
    parsed = set(engine._cache.memo.keys("page"))
    template = site / "templates" / "recipe.html"
    text = template.read_text(encoding="utf-8")
    for i in range(2):
        template.write_text(text.replace("</article>", f"</article><!-- edit {i} -->"), encoding="utf-8")
        report = engine.build({template})
        assert report.ok, report.problems
        assert (report.rendered, len(report.written)) == (recipes, recipes), i
        assert set(engine._cache.memo.keys("page")) == parsed, i
    # Back to a real load (a recipe edited): that recipe is parsed again, the others come from the cache.
    recipe = sorted((site / "content" / "recipes").glob("*.md"))[0]
    recipe.write_text(recipe.read_text(encoding="utf-8") + "\nEdited.\n", encoding="utf-8")
    report = engine.build({recipe})
    assert report.ok and f"recipes/{recipe.stem}/index.html" in report.written
    assert len(set(engine._cache.memo.keys("page")) - parsed) == 1


def test_a_recipe_body_edit_opens_no_duckdb_connection(
    site: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The site's DuckDB connection opens on the first query; rebuilding an edited body needs none."""
    import duckdb

    out = tmp_path / "out"
    assert IncrementalBuilder(load_config(site, out), workers=1).build(None).ok
    opened: list[object] = []
    real = duckdb.connect
    monkeypatch.setattr(duckdb, "connect", lambda *a, **k: opened.append(a) or real(*a, **k))
    recipe = sorted((site / "content" / "recipes").glob("*.md"))[0]
    recipe.write_text(recipe.read_text(encoding="utf-8") + "\nEdited.\n", encoding="utf-8")
    # A new engine, as a new `build` process: from the record on disk.
    report = IncrementalBuilder(load_config(site, out), workers=1).build(None)
    assert report.ok and f"recipes/{recipe.stem}/index.html" in report.written
    assert opened == []
    # Adding rows still validates them with DuckDB.
    generate.add_row_file(site, 0, "2026-04-01", rows=6, seed=11)
    assert IncrementalBuilder(load_config(site, out), workers=1).build(None).ok
    assert opened != []


def test_an_edit_indexes_again_only_the_search_shard_of_its_page(
    site: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from builder.site import search

    monkeypatch.setattr(search, "SHARD_PAGES", 1)  # the small site gets several shards
    indexed: list[set[str]] = []
    real = search._pagefind_many

    def spy(shards: dict[str, dict[str, bytes]]) -> dict[str, dict[str, bytes]]:
        indexed.append(set(shards))
        return real(shards)

    monkeypatch.setattr(search, "_pagefind_many", spy)
    out = tmp_path / "out"
    assert IncrementalBuilder(load_config(site, out), workers=1).build(None).ok
    assert len(indexed) == 1 and len(indexed[0]) > 1
    indexed.clear()
    recipe = sorted((site / "content" / "recipes").glob("*.md"))[0]
    recipe.write_text(recipe.read_text(encoding="utf-8") + "\nEdited.\n", encoding="utf-8")
    report = IncrementalBuilder(load_config(site, out), workers=1).build(None)
    assert report.ok and len(indexed) == 1 and len(indexed[0]) == 1
    (shard,) = indexed[0]
    assert any(path.startswith(f"{shard}/") for path in report.written)
    # New rows change no search record: nothing is indexed again.
    indexed.clear()
    generate.add_row_file(site, 0, "2026-04-01", rows=6, seed=11)
    assert IncrementalBuilder(load_config(site, out), workers=1).build(None).ok
    assert indexed == []


def test_a_page_records_what_it_read(site: Path, tmp_path: Path) -> None:
    """Nothing declares what a page reads: its record holds the keys its reading views noted."""
    out = tmp_path / "out"
    engine = IncrementalBuilder(load_config(site, out), workers=1)
    assert engine.build(None).ok
    assert engine._state is not None
    outputs = engine._state.outputs
    slug = sorted((site / "content" / "recipes").glob("*.md"))[0].stem
    reads = set(outputs[f"recipes/{slug}/index.html"].deps)
    assert {f"front:{slug}", f"rows-of:{slug}", f"file:content/recipes/{slug}.md"} <= reads
    assert "rows" not in reads and "recipes" not in reads  # a recipe's page reads its own, not all
    assert "rows" in outputs["index.html"].deps  # the home page counts every row
    assert outputs["404.html"].deps == ()


def test_the_rows_view_gives_a_recipes_arrow_table_and_notes_the_read(site: Path) -> None:
    """Pages read the rows by recipe through a view; a figure grid takes a recipe's rows as its Arrow
    table from it (not one dict per row, which made list pages several times slower) and the read is
    noted as that recipe's rows."""
    from builder.engine.pipeline import load_and_reconcile
    from builder.engine.reading import reading_context
    from builder.reads import recording
    from builder.site.figure_grid import SCHEMA, rows_table
    from builder.site.render import make_context
    from builder.site.views import RowsByRecipe

    loaded = load_and_reconcile(load_config(site))
    assert loaded.recon is not None
    ctx = make_context(loaded.site, loaded.recon)
    assert isinstance(ctx.rows, RowsByRecipe)
    slug = sorted(ctx.rows)[0]
    view = reading_context(ctx).rows
    converted: list[str] = []
    real = RowsByRecipe.__getitem__
    try:
        RowsByRecipe.__getitem__ = lambda self, key: converted.append(key) or real(self, key)  # type: ignore[method-assign]
        with recording() as reads:
            table = rows_table(view, [slug])
    finally:
        RowsByRecipe.__getitem__ = real  # type: ignore[method-assign]
    assert converted == [] and reads == {f"rows-of:{slug}"}
    assert table.equals(ctx.rows.table(slug).select(SCHEMA.names))
    loaded.site.close_connection()


def test_a_page_that_starts_reading_an_input_follows_it(
    site: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A renderer that reads something new needs no declaration: the next edit of it re-renders the
    page, which a hand-kept list of inputs would have missed."""
    from builder.site import render

    recipes = sorted((site / "content" / "recipes").glob("*.md"))
    watched = recipes[0].stem
    real = render.render_post

    def render_post(ctx: Any, slug: str) -> bytes:
        title = ctx.site.recipes[watched].meta.title  # a post that quotes a recipe's title
        return real(ctx, slug).replace(b"</main>", f"<p>{title}</p></main>".encode())

    monkeypatch.setattr(render, "render_post", render_post)
    out = tmp_path / "out"
    config = load_config(site, out)
    assert IncrementalBuilder(config, workers=1).build(None).ok
    post = sorted((site / "content" / "posts").glob("*.md"))[0].stem
    text = recipes[0].read_text(encoding="utf-8")
    title = next(line for line in text.splitlines() if line.startswith("title:"))
    recipes[0].write_text(text.replace(title, "title: A retitled recipe"), encoding="utf-8")
    report = IncrementalBuilder(config, workers=1).build(None)
    assert report.ok and f"news/{post}/index.html" in report.written
    assert b"A retitled recipe" in (out / "news" / post / "index.html").read_bytes()
    # Another recipe's edit is nothing it read: the post is kept.
    other = recipes[1].read_text(encoding="utf-8")
    recipes[1].write_text(other + "\nEdited.\n", encoding="utf-8")
    report = IncrementalBuilder(config, workers=1).build(None)
    assert report.ok and f"news/{post}/index.html" not in report.written


def test_parallel_render_matches_serial(site: Path, tmp_path: Path) -> None:
    build(load_config(site, tmp_path / "serial"), cache=False, workers=1)
    build(load_config(site, tmp_path / "parallel"), cache=False, workers=2)
    assert_same_tree(tmp_path / "serial", tmp_path / "parallel", "parallel render")


def test_noop_build_does_nothing_and_touch_is_not_a_change(site: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    build(load_config(site, out), workers=1)
    marker_inode = (out / "index.html").stat().st_ino
    report = IncrementalBuilder(load_config(site, out), workers=1).build(None)
    assert report.noop and report.files > 0
    recipe = sorted((site / "content" / "recipes").glob("*.md"))[0]
    os.utime(recipe, ns=(recipe.stat().st_atime_ns, recipe.stat().st_mtime_ns + 5_000_000_000))
    # The stat changed but the bytes did not: the content hash decides.
    engine = IncrementalBuilder(load_config(site, out), workers=1)
    again = engine.build(None)
    assert again.ok and again.written == [] and again.removed == []
    assert (out / "index.html").stat().st_ino == marker_inode


def test_damaged_output_is_repaired(site: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    build(load_config(site, out), workers=1)
    page = next(out.glob("recipes/*/index.html"))
    good = page.read_bytes()
    page.write_bytes(b"edited by hand")
    (out / "stray.txt").write_text("not ours", encoding="utf-8")
    report = IncrementalBuilder(load_config(site, out), workers=1).build(None)
    assert report.ok and not report.noop
    assert page.read_bytes() == good
    assert not (out / "stray.txt").exists()


@pytest.mark.parametrize(
    ("victim", "damage"),
    [
        ("state.pickle", "truncate"),
        ("state.pickle", "flip"),
        ("load.pickle", "flip"),
        ("load.pickle", "garbage"),
        ("blobs.pickle", "flip"),
        ("rows.arrow", "flip"),
        ("rows.arrow", "empty"),
    ],
)
def test_a_corrupt_cache_is_detected_and_the_build_starts_clean(
    site: Path, tmp_path: Path, victim: str, damage: str
) -> None:
    """Also when the build goes on from the quick scan."""
    out = tmp_path / "out"
    build(load_config(site, out), workers=1)
    folder = state_dir(site, out.resolve())
    path = folder / victim
    data = path.read_bytes()
    if damage == "truncate":
        path.write_bytes(data[: len(data) // 2])
    elif damage == "flip":
        middle = len(data) // 2
        path.write_bytes(data[:middle] + bytes([data[middle] ^ 0xFF]) + data[middle + 1 :])
    elif damage == "garbage":
        path.write_bytes(b"\x80\x04not a cache at all" * 50)
    else:
        path.write_bytes(b"")
    recipe = sorted((site / "content" / "recipes").glob("*.md"))[0]
    recipe.write_text(
        recipe.read_text(encoding="utf-8") + "\nEdited after the cache broke.\n", encoding="utf-8"
    )
    engine = IncrementalBuilder(load_config(site, out), workers=1)
    report = engine.build(None)
    assert report.ok, report.problems
    assert report.cache_note is not None and "discarded" in report.cache_note
    assert report.reused == 0  # nothing trusted from the broken record
    assert_as_built(site, out, f"{victim} {damage}")
    # The next build trusts the fresh record again.
    again = IncrementalBuilder(load_config(site, out), workers=1).build(None)
    assert again.ok and again.noop and again.cache_note is None


def test_compiled_templates_are_kept_per_builder_and_follow_template_edits(
    site: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Jinja checks kept bytecode against the template's source, not against how the builder
    configures it: the folder is per builder, and another builder's goes."""
    out = tmp_path / "out"
    assert IncrementalBuilder(load_config(site, out), workers=1).build(None).ok
    folder = site / ".cache" / "builder" / "jinja"
    [first] = list(folder.iterdir())
    assert any(first.iterdir())
    template = site / "templates" / "recipe.html"
    template.write_text(
        template.read_text(encoding="utf-8").replace(
            "{% endblock %}", "<p>synthetic marker</p>{% endblock %}", 1
        ),
        encoding="utf-8",
    )
    assert IncrementalBuilder(load_config(site, out), workers=1).build(None).ok
    page = next(out.glob("recipes/*/index.html")).read_text(encoding="utf-8")
    assert "synthetic marker" in page
    real = incremental.environment_key
    monkeypatch.setattr(incremental, "environment_key", lambda *a: real(*a) + b"another builder")
    assert IncrementalBuilder(load_config(site, out), workers=1).build(None).ok
    [second] = list(folder.iterdir())
    assert second.name != first.name


def test_cli_builds_after_each_kind_of_edit_make_a_clean_builds_bytes(site: Path, tmp_path: Path) -> None:
    """``build`` in one process after another, as a user runs it, after edits of each kind and a
    published page changed by hand."""
    from builder.cli import main

    out = tmp_path / "out"
    assert main(["build", "--root", str(site), "--out", str(out)]) == 0

    def damage_a_page_and_edit() -> None:
        # A published page changed by hand (same inode): the walk of the output must see it.
        with (out / "404.html").open("ab") as page:
            page.write(b"<!-- changed by hand -->")
        editor.edit_body()

    editor = Editor(site, random.Random(SEED))
    for edit in (editor.edit_body, editor.add_rows, editor.edit_front, damage_a_page_and_edit):
        edit()
        assert main(["build", "--root", str(site), "--out", str(out)]) == 0
        assert_as_built(site, out, edit.__name__)


def test_kept_parses_and_bodies_go_when_the_builder_changes(
    site: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Parses and rendered bodies are kept pickled by content key; another builder (here: one
    that renders bodies differently) must not get the old bytes back, in this process or the next."""
    import dataclasses

    from builder.content.markdown import Markdown

    out = tmp_path / "out"
    assert IncrementalBuilder(load_config(site, out), workers=1).build(None).ok
    real_key, real_render = incremental.environment_key, Markdown._render
    monkeypatch.setattr(incremental, "environment_key", lambda *a: real_key(*a) + b"another builder")
    monkeypatch.setattr(
        Markdown,
        "_render",
        lambda self, body, faq, *figures: dataclasses.replace(
            real_render(self, body, faq, *figures), text="synthetic new text"
        ),
    )
    engine = IncrementalBuilder(load_config(site, out), workers=1)
    assert engine.build(None).ok
    recipe = sorted((site / "content" / "recipes").glob("*.md"))[0]
    recipe.write_text(recipe.read_text(encoding="utf-8") + "\nEdited.\n", encoding="utf-8")
    assert IncrementalBuilder(load_config(site, out), workers=1).build(None).ok  # from load.pickle
    assert_as_built(site, out, "after the builder changed")


def test_new_rows_are_kept_only_when_their_build_succeeds(site: Path, tmp_path: Path) -> None:
    """``rows.arrow`` for new rows is written when the build succeeds:
    a build that fails leaves neither its temporary file nor a changed ``rows.arrow``; the next
    build reads what the one that succeeded wrote."""
    out = tmp_path / "out"
    assert IncrementalBuilder(load_config(site, out), workers=1).build(None).ok
    folder = state_dir(site, out.resolve())
    before = (folder / "rows.arrow").read_bytes()
    generate.add_row_file(site, 1, "2026-07-04")
    template = site / "templates" / "recipe.html"
    good = template.read_text(encoding="utf-8")
    template.write_text(good.replace("{% endblock %}", "{{ 1 / 0 }}{% endblock %}", 1), encoding="utf-8")
    with pytest.raises(ZeroDivisionError):
        IncrementalBuilder(load_config(site, out), workers=1).build(None)
    assert sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp")) == []
    assert (folder / "rows.arrow").read_bytes() == before
    template.write_text(good, encoding="utf-8")
    assert IncrementalBuilder(load_config(site, out), workers=1).build(None).ok
    assert (folder / "rows.arrow").read_bytes() != before
    recipe = sorted((site / "content" / "recipes").glob("*.md"))[0]
    recipe.write_text(recipe.read_text(encoding="utf-8") + "\nEdited.\n", encoding="utf-8")
    again = IncrementalBuilder(load_config(site, out), workers=1).build(None)
    assert again.ok and again.cache_note is None and again.reused > 0
    assert_as_built(site, out, "after the rows were saved from the thread")


def test_an_edit_build_reads_only_the_changed_content_file(
    site: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Unchanged pages come from the load cache by the digests the input scan carried over: those
    digests and the cache's keys must be made by one function (see ``inputs.DIGEST_NAME``)."""
    from builder.engine.inputs import digest_bytes
    from builder.engine.loadcache import LoadCache

    out = tmp_path / "out"
    assert IncrementalBuilder(load_config(site, out), workers=1).build(None).ok
    recipe = sorted((site / "content" / "recipes").glob("*.md"))[0]
    recipe.write_text(recipe.read_text(encoding="utf-8") + "\nEdited.\n", encoding="utf-8")
    assert IncrementalBuilder(load_config(site, out), workers=1).build(None).ok
    recipe.write_text(recipe.read_text(encoding="utf-8") + "\nEdited again.\n", encoding="utf-8")
    parsed: list[str] = []
    real_page = LoadCache.page

    def page(self: LoadCache, rel: str, path: Path, parse: Any, problems: Any) -> Any:
        def counted(data: bytes, found: Any) -> Any:
            parsed.append(rel)
            return parse(data, found)

        return real_page(self, rel, path, counted, problems)

    monkeypatch.setattr(LoadCache, "page", page)
    engine = IncrementalBuilder(load_config(site, out), workers=1)
    assert engine.build(None).ok
    assert parsed == [recipe.relative_to(site).as_posix()]
    state = engine._state
    assert state is not None
    for rel, digest in state.inputs.digests.items():
        if rel.startswith("content/"):
            assert digest == digest_bytes((site / rel).read_bytes()), rel


def test_the_environment_names_the_digest_function(site: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from builder.engine import build_state

    config = load_config(site)
    before = build_state.environment_key(config, 0)
    monkeypatch.setattr(build_state, "DIGEST_NAME", "another digest")
    assert build_state.environment_key(config, 0) != before


def test_findings_pages_follow_the_findings_not_every_row(
    site: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """/findings/ and its feed depend on a digest of the findings (findings_memo.SiteFindings.digest),
    from the first build on: an edit elsewhere renders neither, nor does a row file that changes no
    finding; one that makes a finding renders both."""
    from builder.site import findings_pages

    generate.add_row_file(site, 0, "2026-07-01", rows=24, seed=9, factor=0.5)  # a finding to list
    out = tmp_path / "out"
    assert IncrementalBuilder(load_config(site, out), workers=1).build(None).ok
    assert "<entry>" in (out / "findings" / "feed.xml").read_text(encoding="utf-8")
    rendered: list[str] = []
    real = findings_pages.render_findings_feed

    def feed(ctx: Any) -> bytes:
        rendered.append("feed")
        return real(ctx)

    monkeypatch.setattr(findings_pages, "render_findings_feed", feed)
    post = sorted((site / "content" / "posts").glob("*.md"))[0]
    post.write_text(post.read_text(encoding="utf-8") + "\nA post edit.\n", encoding="utf-8")
    report = IncrementalBuilder(load_config(site, out), workers=1).build(None)
    assert report.ok and rendered == [] and "findings/index.html" not in report.written
    generate.add_row_file(site, 2, "2026-07-10", rows=24, seed=11)  # a run that agrees
    report = IncrementalBuilder(load_config(site, out), workers=1).build(None)
    assert report.ok and rendered == []
    before = (out / "findings" / "feed.xml").read_bytes()
    generate.add_row_file(site, 2, "2026-07-20", rows=24, seed=12, factor=0.5)  # a regression
    report = IncrementalBuilder(load_config(site, out), workers=1).build(None)
    assert report.ok and rendered == ["feed"]
    assert (out / "findings" / "feed.xml").read_bytes() != before
    assert "findings/index.html" in report.written
    assert_as_built(site, out, "after a row file made a finding")


def test_choose_pages_follow_the_rows_of_their_hardware_not_bodies(
    site: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A hardware's chooser pages read the rows measured on it: a new row file ranks again the
    recipes of its hardware only, and a body edit none."""
    from builder.site import choose_pages

    ranked: list[str] = []
    real = choose_pages.hardware_figures
    monkeypatch.setattr(
        choose_pages,
        "hardware_figures",
        lambda site, recon, hw, rows: ranked.append(hw) or real(site, recon, hw, rows),
    )
    out = tmp_path / "out"
    config = load_config(site, out)
    assert IncrementalBuilder(config, workers=1).build(None).ok
    hardware = str(generate._recipe_meta(0)["hardware"])
    assert hardware in ranked and len(set(ranked)) > 1

    ranked.clear()
    recipe = site / "content" / "recipes" / f"{generate.recipe_slug(0)}.md"
    recipe.write_text(recipe.read_text(encoding="utf-8") + "\nA body edit.\n", encoding="utf-8")
    assert IncrementalBuilder(config, workers=1).build(None).ok
    assert ranked == []

    generate.add_row_file(site, 0, "2026-05-02", rows=6, seed=5)
    assert IncrementalBuilder(config, workers=1).build(None).ok
    assert ranked == [hardware]
    assert_as_built(site, out, "new row file")


def test_hardware_pages_read_their_own_rows_and_the_cards_they_show(
    site: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A hardware page reads the rows measured on its nodes and its recipes' cards by name (derived
    values): a new row file that changes no other card renders the page of its hardware alone, and
    the cards are worked out again only for the recipe whose rows changed."""
    from builder.site import home, indexes

    pages: list[str] = []
    cards: list[str] = []
    real_page, real_card = indexes.render_hardware, home.Cards._card
    monkeypatch.setattr(indexes, "render_hardware", lambda ctx, e: pages.append(e.id) or real_page(ctx, e))
    monkeypatch.setattr(home.Cards, "_card", lambda self, slug: cards.append(slug) or real_card(self, slug))
    out = tmp_path / "out"
    config = load_config(site, out)
    assert IncrementalBuilder(config, workers=1).build(None).ok
    assert len(set(pages)) > 1
    engine = IncrementalBuilder(config, workers=1)
    assert engine.build(None).ok and engine._state is not None
    reads = engine._state.outputs[f"hardware/{pages[0]}/index.html"].deps
    assert f"rows-on:{pages[0]}" in reads and "rows" not in reads
    assert any(r.startswith("card:") for r in reads) and not any(r.startswith("rows-of:") for r in reads)

    pages.clear()
    cards.clear()
    slug = generate.recipe_slug(0)
    generate.add_row_file(site, 0, "2026-05-02", rows=6, seed=5)
    assert IncrementalBuilder(config, workers=1).build(None).ok
    assert pages == [str(generate._recipe_meta(0)["hardware"])]
    assert cards == [slug]
    assert_as_built(site, out, "new row file")


def test_every_card_reads_its_models_disputed_claims_even_when_another_card_asked_first(
    site: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A page works out many cards, several of one base model: each card's entry must name the
    model's disputed claims, or a change in them would leave the later cards stale. The pages render
    in forked workers, which hand their entries to the parent's memo."""
    first, second = (site / "content" / "recipes" / f"{generate.recipe_slug(i)}.md" for i in (0, 1))
    model = re.search(r"^model: (.+)$", first.read_text(encoding="utf-8"), re.M)
    assert model is not None
    text = second.read_text(encoding="utf-8")
    second.write_text(
        re.sub(r"^model: .+$", f"model: {model[1]}", text, count=1, flags=re.M), encoding="utf-8"
    )
    from builder.site import home

    in_parent: list[str] = []  # a forked worker's appends stay in the worker
    real_card = home.Cards._card
    monkeypatch.setattr(
        home.Cards, "_card", lambda self, slug: in_parent.append(slug) or real_card(self, slug)
    )
    engine = IncrementalBuilder(load_config(site, tmp_path / "out"), workers=2)
    assert engine.build(None).ok and engine._cache is not None
    assert in_parent == []  # the workers' cards were adopted, not made again for the fingerprints
    memo = engine._cache.memo
    models = {s: r.meta.model for s, r in engine_site(site).recipes.items()}
    cards = {
        key[2][len("card:") :]: memo.get(key) for key in memo.keys("derived") if key[2].startswith("card:")
    }
    assert len(cards) == len(models)
    by_model: dict[str, int] = {}
    for slug, (reads, _, _) in cards.items():
        assert f"disputes:{models[slug]}" in dict(reads), slug
        by_model[models[slug]] = by_model.get(models[slug], 0) + 1
    assert max(by_model.values()) > 1  # the case at stake: a model with several cards


def test_a_build_cancelled_before_it_writes_leaves_everything_and_the_next_build_redoes_it(
    site: Path, tmp_path: Path
) -> None:
    """The preview cancels a rebuild when a newer save arrives (builder.serve.preview_process): its
    ``commit`` says no just before the first write. The published files and the record stay as they
    were, and the next build, told only of its own change, rebuilds the cancelled one's too."""
    out = tmp_path / "serve"
    engine = IncrementalBuilder(load_config(site, out), atomic=False, keep_context=True)
    assert engine.build(None).ok
    published_before, record_before = tree(out), tree(state_dir(site, out.resolve()))
    editor = Editor(site, random.Random(SEED))
    touched = editor.edit_front() | editor.add_rows() | editor.edit_template()
    asked: list[str] = []
    report = engine.build(touched, commit=lambda: asked.append("asked") is None and False)
    assert report.cancelled and asked == ["asked"] and not report.written and not report.problems
    assert tree(out) == published_before
    assert tree(state_dir(site, out.resolve())) == record_before
    # Nothing changed since the last build: a no-op is cancelled before it writes too.
    assert engine.build(set(), commit=lambda: False).cancelled
    report = engine.build(editor.edit_body())
    assert report.ok and not report.cancelled
    problems, expected = pure_build(site, tmp_path / "pure")
    assert problems is None
    assert_same_files(published(out), expected, "after a cancelled build")


def test_a_build_told_not_to_save_its_record_leaves_it_until_save_record(site: Path, tmp_path: Path) -> None:
    """The preview builds with ``save_record=False`` and saves the record once idle: until then the
    record on disk is the last one saved. A process started from that older record still builds
    build_site's site; after ``save_record()``, a new process takes the record as up to date, also
    after a no-op build in between."""
    out = tmp_path / "serve"
    record = state_dir(site, out.resolve())
    engine = IncrementalBuilder(load_config(site, out), atomic=False, keep_context=True)
    assert engine.build(None).ok
    record_before = tree(record)
    editor = Editor(site, random.Random(SEED))
    report = engine.build(editor.edit_front() | editor.add_rows(), save_record=False)
    assert report.ok and report.written and "save" not in report.seconds
    assert engine.build(editor.edit_body(), save_record=False).ok
    assert tree(record) == record_before
    problems, expected = pure_build(site, tmp_path / "pure")
    assert problems is None
    assert_same_files(published(out), expected, "after builds not saved")

    # A new process from the older record finds the output newer than its record, and mends it.
    # (Run on copies: the first process's record and output are put back after.)
    for folder in (out, record):
        shutil.copytree(folder, tmp_path / "kept" / folder.name)
    restarted = IncrementalBuilder(load_config(site, out), atomic=False)
    assert restarted.build(None).ok
    assert_same_files(published(out), expected, "a new process from the older record")
    for folder in (out, record):
        shutil.rmtree(folder)
        shutil.copytree(tmp_path / "kept" / folder.name, folder)

    assert engine.build(set(), save_record=False).ok  # the copies put back are other files
    assert engine.build(set(), save_record=False).noop
    engine.save_record()
    assert tree(record) != record_before
    again = IncrementalBuilder(load_config(site, out), atomic=False).build(None)
    assert again.ok and again.noop


def test_output_stages_of_a_failed_build_are_not_taken_for_published(site: Path, tmp_path: Path) -> None:
    """New rows and a broken template in one batch: the output stages (downloads, API) run beside the
    render and make the new rows' files, but the build fails and publishes none of them. Once the
    template is fixed, the next build must make those files again, not link the stale published ones
    as if the failed build's were there."""
    out = tmp_path / "serve"
    engine = IncrementalBuilder(load_config(site, out), atomic=False, keep_context=True, workers=1)
    assert engine.build(None).ok
    template = site / "templates/recipe.html"
    good = template.read_text(encoding="utf-8")
    touched = Editor(site, random.Random(SEED)).add_rows()
    template.write_text(good + "\n{% if %}\n", encoding="utf-8")
    assert not engine.build(touched | {template}).ok
    template.write_text(good, encoding="utf-8")
    assert engine.build({template}).ok
    problems, expected = pure_build(site, tmp_path / "pure")
    assert problems is None
    assert_same_files(published(out), expected, "after a failed build")


def test_api_documents_are_made_again_for_their_own_recipes_rows_only(
    site: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The output units record what they read as pages do: a new row file for one recipe makes the
    API documents of that recipe's shard again (and the site-wide downloads), not the others'."""
    from builder.site import downloads

    out = tmp_path / "out"
    assert IncrementalBuilder(load_config(site, out), workers=1).build(None).ok
    made: list[str] = []
    real = downloads.recipe_documents

    def documents(*args: Any, **kwargs: Any) -> dict[str, bytes]:
        docs = real(*args, **kwargs)
        made.extend(docs)
        return docs

    monkeypatch.setattr(downloads, "recipe_documents", documents)
    generate.add_row_file(site, 1, "2026-07-10", rows=5, seed=21)
    assert IncrementalBuilder(load_config(site, out), workers=1).build(None).ok
    slug = generate.recipe_slug(1)
    recipes = [p.stem for p in (site / "content/recipes").glob("*.md")]
    shard = sorted(s for s in recipes if downloads.document_shard(s) == downloads.document_shard(slug))
    assert sorted(made) == shard and len(shard) < len(recipes)
    problems, expected = pure_build(site, tmp_path / "pure")
    assert problems is None
    assert_same_files(published(out), expected, "after a new row file")

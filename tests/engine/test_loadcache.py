"""The load cache gives back row files as a clean load gives them, down to how their lines are found."""

from __future__ import annotations

from pathlib import Path

import pytest

from builder.config import load_config
from builder.data.load import load_site
from builder.engine.loadcache import LoadCache
from builder.errors import Problems
from tests.conftest import MakeSite

HEADER = "date,recipe,node,engine_version,prompt_tokens,concurrency,decode_tok_s,flags,notes\n"
QUOTED = HEADER + '2026-01-02,tiny,node-a,0.1.0,512,1,10.5,"--a 1",plain "enough"\n'
MULTILINE = (
    HEADER
    + '2026-01-03,tiny,node-a,0.1.0,512,1,11.5,,"two\nlines"\n2026-01-03,tiny,node-a,0.1.0,512,2,12.5,,x\n'
)


def _plain_and_lines(root: Path, cache: LoadCache | None) -> dict[str, tuple[bool, list[int]]]:
    problems = Problems()
    site = load_site(load_config(root), problems, loader=cache)
    assert not problems.errors, problems.errors
    rows = site.rows.select(["file_id", "file_row"]).to_pylist()
    out: dict[str, tuple[bool, list[int]]] = {}
    for parsed_id, parsed in enumerate(site.row_files):
        lines = [parsed.line_of(r["file_row"]) for r in rows if r["file_id"] == parsed_id]
        out[parsed.source.rel] = (parsed.plain, lines)
    site.con.close()
    return out


def test_a_cached_row_file_keeps_its_plain_flag_and_lines(make_site: MakeSite) -> None:
    root = make_site(
        {"data/rows/tiny/2026-01-02-quoted.csv": QUOTED, "data/rows/tiny/2026-01-03-multi.csv": MULTILINE}
    )
    clean = _plain_and_lines(root, None)
    cache = LoadCache()
    first = _plain_and_lines(root, cache)
    again = _plain_and_lines(root, cache)  # every file from the cache
    assert first == clean and again == clean
    assert any(plain for plain, _ in clean.values())  # a quoted cell on one line is still plain
    assert clean["data/rows/tiny/2026-01-03-multi.csv"] == (False, [2, 4])


def test_with_the_scan_s_hashes_only_changed_content_files_are_read(
    make_site: MakeSite, monkeypatch: pytest.MonkeyPatch
) -> None:
    from builder.engine.inputs import scan_inputs

    tiny = (Path(__file__).parents[1] / "sites/minimal/content/recipes/tiny.md").read_text(encoding="utf-8")
    root = make_site({f"content/recipes/tiny-{n}.md": tiny for n in (2, 3)})
    config = load_config(root)
    cache = LoadCache()
    problems = Problems()
    first = load_site(config, problems, loader=cache)
    cache.memo.settled()  # as a save does
    assert len(first.recipes) == 3
    edited = first.recipes["tiny-2"]
    path = root / edited.doc.rel
    path.write_text(path.read_text(encoding="utf-8") + "\nAn edit.\n", encoding="utf-8")
    cache.scanned = dict(scan_inputs(config).digests)
    read: list[str] = []
    from builder.data import load

    real = load.read_regular

    def spy(path: str | Path, limit: int | None = None) -> bytes:
        if "content" in Path(path).parts:
            read.append(Path(path).relative_to(root).as_posix())
        return real(path, limit)

    monkeypatch.setattr(load, "read_regular", spy)
    again = load_site(config, Problems(), loader=cache)
    assert read == [edited.doc.rel]
    assert again.recipes[edited.slug].doc.body.endswith("An edit.\n")
    assert {slug: r.meta for slug, r in again.recipes.items()} == {
        slug: r.meta for slug, r in load_site(config, Problems()).recipes.items()
    }
    again.con.close()
    first.con.close()

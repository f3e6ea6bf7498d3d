"""The load cache gives back row files as a clean load gives them, down to how their lines are found."""

from __future__ import annotations

from pathlib import Path

from builder.config import load_config
from builder.errors import Problems
from builder.load import load_site
from builder.loadcache import LoadCache
from tests.conftest import MakeSite

HEADER = "date,recipe,node,engine_version,prompt_tokens,concurrency,decode_tok_s,flags,notes\n"
QUOTED = HEADER + '2026-01-02,tiny,node-a,0.1.0,512,1,10.5,"--a 1",plain "enough"\n'
MULTILINE = (
    HEADER
    + '2026-01-03,tiny,node-a,0.1.0,512,1,11.5,,"two\nlines"\n2026-01-03,tiny,node-a,0.1.0,512,2,12.5,,x\n'
)


def _plain_and_lines(root: Path, cache: LoadCache | None) -> dict[str, tuple[bool, list[int]]]:
    problems = Problems()
    site = load_site(load_config(root), problems, cache=cache)
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

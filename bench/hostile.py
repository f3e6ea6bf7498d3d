"""Generated hostile inputs: small files a pull request could hold to exhaust ``check`` (issue 32).

Each case writes a whole site (one synthetic recipe, one node, one honest row file) plus its hostile
file, made by code here rather than committed as binaries:

* ``parquet-bomb``: a Parquet row file of a few kilobytes whose ``notes`` column, one 1 MiB string
  repeated through dictionary encoding, decodes to 4 GiB (the metadata declares only the dictionary);
* ``parquet-zstd-bomb``: a Parquet row file whose pages hold 1 GiB of one repeated byte, zstd
  compressed to a few hundred kilobytes (the metadata declares the 1 GiB);
* ``row-groups``: a Parquet row file of 200,000 row groups of one row each (26 MB), and
  ``row-groups-100k``, 100,000 of them in a file under the byte limit (its metadata is read);
* ``brace-body``: a recipe whose body is 800 KB of ``{{`` with no ``}}``;
* ``wide-header``: a CSV row file whose header has 100,000 columns;
* ``long-title``: a recipe whose title is 2 MB.

For comparison, ``honest`` is the site alone. And two at the limits, which ``check`` reads whole: ``brace-body-at-limit`` (a body of 199,998
characters of ``{{``), ``rows-at-limit`` (a CSV row file of 100,000 valid rows) and
``bad-rows-at-limit`` (100,000 rows of three invalid cells each: the errors are found, then listed
:data:`builder.limits.ERRORS_PER_FILE` at most).

Every figure in these sites is synthetic. ``python bench/hostile.py OUT`` writes every case under
``OUT/<case>/``; ``bench/bench_hostile.py`` measures ``check`` on each.
"""

from __future__ import annotations

import argparse
import io
import sys
from collections.abc import Callable
from pathlib import Path

RECIPE = """\
---
title: {title}
model: example/tiny
checkpoint: example/tiny-fp8
hardware: test-gpu
engine: vllm
engine_version: "1.0.0"
flags: "--max-model-len 4096"
---
{body}
"""
NODES = "node-a:\n  hardware: test-gpu\n  description: synthetic node\n"
ROWS = (
    "date,recipe,node,engine_version,prompt_tokens,concurrency,decode_tok_s,source\n"
    "2026-01-02,tiny,node-a,1.0.0,2048,1,50.0,synthetic row; not a measurement\n"
)
ROW_COLUMNS = {
    "date": "2026-01-02",
    "recipe": "tiny",
    "node": "node-a",
    "engine_version": "1.0.0",
    "prompt_tokens": "2048",
    "concurrency": "1",
    "decode_tok_s": "50.0",
    "source": "synthetic row; not a measurement",
}


def base_site(root: Path, *, title: str = "Tiny synthetic recipe", body: str = "Synthetic.") -> Path:
    """A valid site of one recipe, one node and one row file."""
    (root / "content" / "recipes").mkdir(parents=True)
    (root / "data" / "rows" / "tiny").mkdir(parents=True)
    (root / "content" / "recipes" / "tiny.md").write_text(
        RECIPE.format(title=title, body=body), encoding="utf-8"
    )
    (root / "data" / "nodes.yaml").write_text(NODES, encoding="utf-8")
    (root / "data" / "rows" / "tiny" / "2026-01-02-node-a.csv").write_text(ROWS, encoding="utf-8")
    return root


def parquet_bomb(root: Path, rows: int = 4096, value_bytes: int = 1 << 20) -> Path:
    """``rows`` rows whose ``notes`` are one ``value_bytes`` string, stored once in a dictionary."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    base_site(root)
    columns = {name: pa.array([value] * rows) for name, value in ROW_COLUMNS.items()}
    columns["notes"] = pa.DictionaryArray.from_arrays(
        pa.array([0] * rows, pa.int32()), pa.array(["a" * value_bytes])
    )
    path = root / "data" / "rows" / "tiny" / "bomb.parquet"
    pq.write_table(pa.table(columns), path, compression="zstd", compression_level=19)
    return path


def parquet_zstd_bomb(root: Path, groups: int = 128, rows: int = 8, value_bytes: int = 1 << 20) -> Path:
    """``groups`` row groups of ``rows`` distinct ``value_bytes`` strings each, plain encoded, zstd
    compressed: written a row group at a time, so the generator never holds the whole."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    base_site(root)
    path = root / "data" / "rows" / "tiny" / "zstd-bomb.parquet"
    fields = {name: pa.array([value] * rows) for name, value in ROW_COLUMNS.items()}
    with pq.ParquetWriter(
        path,
        pa.schema([(name, pa.string()) for name in [*ROW_COLUMNS, "notes"]]),
        compression="zstd",
        use_dictionary=False,
        write_statistics=False,
    ) as writer:
        for group in range(groups):
            notes = pa.array([f"{group}-{row}-" + "a" * value_bytes for row in range(rows)])
            writer.write_table(pa.table({**fields, "notes": notes}))
    return path


def row_groups(root: Path, groups: int = 200_000) -> Path:
    """A Parquet row file of ``groups`` one-row row groups."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    base_site(root)
    path = root / "data" / "rows" / "tiny" / "groups.parquet"
    table = pa.table({"date": pa.array(["2026-01-02"] * groups)})
    pq.write_table(table, path, row_group_size=1, write_statistics=False, compression="none")
    return path


def brace_body(root: Path, size: int = 800_000) -> Path:
    """A recipe whose body is ``size`` bytes of ``{{ `` with no ``}}``."""
    base_site(root, body="{{ " * (size // 3))
    return root / "content" / "recipes" / "tiny.md"


def wide_header(root: Path, columns: int = 100_000) -> Path:
    """A CSV row file whose header has ``columns`` columns (and one row of as many cells)."""
    base_site(root)
    path = root / "data" / "rows" / "tiny" / "wide.csv"
    buffer = io.StringIO()
    buffer.write(",".join(f"column_{i}" for i in range(columns)) + "\n")
    buffer.write(",".join("1" for _ in range(columns)) + "\n")
    path.write_text(buffer.getvalue(), encoding="utf-8")
    return path


def rows_at_limit(root: Path, rows: int = 100_000) -> Path:
    """A CSV row file of ``rows`` valid rows (one run at one setting, so one comparison)."""
    base_site(root)
    path = root / "data" / "rows" / "tiny" / "many.csv"
    header = ",".join(ROW_COLUMNS)
    line = ",".join(ROW_COLUMNS.values())
    path.write_text(header + "\n" + "\n".join([line] * rows) + "\n", encoding="utf-8")
    return path


def bad_rows_at_limit(root: Path, rows: int = 100_000) -> Path:
    """A CSV row file of ``rows`` rows, each with three invalid cells: 300,000 errors found."""
    base_site(root)
    path = root / "data" / "rows" / "tiny" / "bad.csv"
    header = ",".join(ROW_COLUMNS)
    cells = {**ROW_COLUMNS, "prompt_tokens": "many", "concurrency": "-1", "decode_tok_s": "fast"}
    line = ",".join(cells.values())
    path.write_text(header + "\n" + "\n".join([line] * rows) + "\n", encoding="utf-8")
    return path


def long_title(root: Path, size: int = 2_000_000) -> Path:
    """A recipe whose title is ``size`` characters."""
    base_site(root, title="T" * size)
    return root / "content" / "recipes" / "tiny.md"


CASES: dict[str, Callable[[Path], Path]] = {
    "honest": lambda root: base_site(root) / "content" / "recipes" / "tiny.md",
    "parquet-bomb": parquet_bomb,
    "parquet-zstd-bomb": parquet_zstd_bomb,
    "row-groups": row_groups,
    "row-groups-100k": lambda root: row_groups(root, 100_000),
    "brace-body": brace_body,
    "wide-header": wide_header,
    "long-title": long_title,
    "brace-body-at-limit": lambda root: brace_body(root, 199_998),
    "rows-at-limit": rows_at_limit,
    "bad-rows-at-limit": bad_rows_at_limit,
}
"""Case name → the function that writes its site into an empty folder (returns the hostile file)."""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("out", type=Path, help="folder to write the cases into (must not exist)")
    parser.add_argument("--case", choices=sorted(CASES), action="append", help="only these cases")
    args = parser.parse_args(argv)
    for name in args.case or sorted(CASES):
        path = CASES[name](args.out / name)
        print(f"{name}: {path} ({path.stat().st_size:,} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

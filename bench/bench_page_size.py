"""Measure: the size of a recipe page with 100 rows, on a SYNTHETIC site (no figure was measured).

    python bench/bench_page_size.py [--recipes 20] [--rows 100] [--out bench/out/page-size]

Generates a site with ``bench/generate.py`` (``--recipes`` recipes of ``--rows`` rows each: runs of
36 rows, one row file per run, every row at its own setting), renders every recipe page as a build
does (``render.render_recipe``) and prints the median and largest page, raw and gzipped (level 6).
"KB" is 1,000 bytes, as ``bench_budget.py`` counts. Guard (issue 34): a recipe page with 100 rows is
at most 160 KB raw.
"""

from __future__ import annotations

import argparse
import gzip
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from generate import write_site  # noqa: E402

from builder.config import load_config  # noqa: E402
from builder.engine.pipeline import load_and_reconcile  # noqa: E402
from builder.site.render import make_context, render_recipe  # noqa: E402

LIMIT = 160_000
"""The guard: bytes of a recipe page with 100 rows."""


def page_sizes(root: Path) -> dict[str, bytes]:
    """Every recipe page of the site at ``root``, rendered: slug to bytes."""
    loaded = load_and_reconcile(load_config(root, Path("/nonexistent-bench-out")))
    loaded.problems.raise_if_any()
    assert loaded.recon is not None
    ctx = make_context(loaded.site, loaded.recon)
    return {slug: render_recipe(ctx, slug) for slug in sorted(loaded.site.recipes)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--recipes", type=int, default=20)
    parser.add_argument("--rows", type=int, default=100, help="rows per recipe")
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "out" / "page-size")
    args = parser.parse_args()
    write_site(args.out, args.recipes, args.rows, cases=0, posts=0)
    pages = page_sizes(args.out)
    raw = sorted(len(p) for p in pages.values())
    gz = sorted(len(gzip.compress(p, 6, mtime=0)) for p in pages.values())
    print(f"{len(pages)} recipe pages of {args.rows} rows each (SYNTHETIC)")
    print(f"raw  median {statistics.median(raw) / 1000:.1f} KB, largest {raw[-1] / 1000:.1f} KB")
    print(f"gzip median {statistics.median(gz) / 1000:.1f} KB, largest {gz[-1] / 1000:.1f} KB")
    verdict = "within" if raw[-1] <= LIMIT else "OVER"
    print(f"{verdict} the guard of {LIMIT / 1000:.0f} KB per page")
    return 0 if raw[-1] <= LIMIT else 1


if __name__ == "__main__":
    sys.exit(main())

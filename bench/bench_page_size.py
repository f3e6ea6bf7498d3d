"""Measure: the size of a recipe page with 100 rows, on a SYNTHETIC site (no figure was measured).

    python bench/bench_page_size.py [--recipes 20] [--rows 100] [--out bench/out/page-size]

Generates a site with ``bench/generate.py`` (``--recipes`` recipes of ``--rows`` rows each: runs of
36 rows, one row file per run, every row at its own setting), renders every recipe page as a build
does (``render.render_recipe``) and prints the median and largest page, raw and gzipped (level 6),
of the pages without findings and of those with findings apart, with the findings' share of the
largest: its findings section and the findings' marks in its charts' data. "KB" is 1,000 bytes, as
``bench_budget.py`` counts.

Guard (issue 34): a recipe page with 100 rows is at most 160 KB raw. It holds for the page a
recipe's rows make; what a recipe's findings add (three groups in full, a line for each other group,
their marks in the charts) is reported beside it, not held to it: a reader acts on the findings, so
they stay on the page.
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


def page_sizes(root: Path) -> tuple[dict[str, bytes], set[str]]:
    """Every recipe page of the site at ``root``, rendered (slug to bytes), and the recipes with findings."""
    loaded = load_and_reconcile(load_config(root, Path("/nonexistent-bench-out")))
    loaded.problems.raise_if_any()
    assert loaded.recon is not None
    ctx = make_context(loaded.site, loaded.recon)
    pages = {slug: render_recipe(ctx, slug) for slug in sorted(loaded.site.recipes)}
    return pages, {slug for slug in pages if loaded.recon.findings_for(slug)}


def findings_share(page: bytes) -> tuple[int, int]:
    """Bytes of a page's findings section, and of its charts' data that only findings bring (the
    history charts' finding layer and the notes only it names: the data minus the data without them)."""
    import json

    from bs4 import BeautifulSoup

    soup = BeautifulSoup(page, "html.parser")
    section = soup.select_one("section.findings")
    script = soup.select_one("script#chart-data")
    extra = 0
    if script is not None and script.string:
        data = json.loads(script.string)
        before = len(json.dumps(data, separators=(",", ":")))
        for chart in data["charts"].values():
            if "note" not in chart["fields"]:
                continue
            layer, note = chart["fields"].index("layer"), chart["fields"].index("note")
            chart["rows"] = [r for r in chart["rows"] if chart["strings"][layer][r[layer]] != "finding"]
            kept = sorted({r[note] for r in chart["rows"]})  # the notes rows still name
            renumber = {old: new for new, old in enumerate(kept)}
            chart["strings"][note] = [chart["strings"][note][i] for i in kept]
            for r in chart["rows"]:
                r[note] = renumber[r[note]]
        extra = before - len(json.dumps(data, separators=(",", ":")))
    return (len(str(section)) if section is not None else 0), extra


def _line(label: str, pages: list[bytes]) -> str:
    raw = sorted(len(p) for p in pages)
    gz = sorted(len(gzip.compress(p, 6, mtime=0)) for p in pages)
    return (
        f"{label}: {len(pages)} pages, raw median {statistics.median(raw) / 1000:.1f} KB, largest"
        f" {raw[-1] / 1000:.1f} KB; gzip median {statistics.median(gz) / 1000:.1f} KB, largest {gz[-1] / 1000:.1f} KB"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--recipes", type=int, default=20)
    parser.add_argument("--rows", type=int, default=100, help="rows per recipe")
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "out" / "page-size")
    args = parser.parse_args()
    write_site(args.out, args.recipes, args.rows, cases=0, posts=0)
    pages, with_findings = page_sizes(args.out)
    plain = [page for slug, page in pages.items() if slug not in with_findings]
    print(f"{len(pages)} recipe pages of {args.rows} rows each (SYNTHETIC)")
    if plain:
        print(_line("without findings", plain))
    if with_findings:
        print(_line("with findings", [pages[slug] for slug in with_findings]))
        largest = max(with_findings, key=lambda slug: len(pages[slug]))
        section, marks = findings_share(pages[largest])
        print(
            f"largest with findings: {len(pages[largest]) / 1000:.1f} KB, of which the findings section"
            f" {section / 1000:.1f} KB and their marks in the charts' data {marks / 1000:.1f} KB"
        )
    worst = max((len(p) for p in plain), default=0)
    verdict = "within" if worst <= LIMIT else "OVER"
    print(f"{verdict} the guard of {LIMIT / 1000:.0f} KB per page (pages without findings)")
    return 0 if worst <= LIMIT else 1


if __name__ == "__main__":
    sys.exit(main())

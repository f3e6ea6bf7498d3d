"""Page budget and the reader toolkit's build cost; exits 1 when a page breaks the budget.

    python bench/bench_budget.py                       # the shipped site, 5 builds
    python bench/bench_budget.py --synthetic 1000 --rows 100 --runs 3

Budget (issue 4): every page's HTML plus the site's CSS is at most 50 KB gzipped, and no page
carries JavaScript unless it draws a chart or is the search page or the chooser (``/choose/``). Sizes are gzip level 6 (what
common servers use); "KB" is 1,000 bytes. The cost figures are medians of in-process builds, per
stage as ``build --verbose`` reports them: ``data`` (feeds, sitemap, CSV, Parquet, DuckDB, JSON
API) and ``search`` (Pagefind over the rendered pages, plus the file-system fallback).
Synthetic sites come from ``bench/generate.py``: no figure in them was measured.
"""

from __future__ import annotations

import argparse
import gzip
import os
import shutil
import statistics
import sys
from html.parser import HTMLParser
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(REPO))

import generate  # noqa: E402

from builder.config import load_config  # noqa: E402
from builder.engine.incremental import build  # noqa: E402

BUDGET = 50_000
DATA_SCRIPT_TYPES = ("application/json", "application/ld+json")


def gz(data: bytes) -> int:
    return len(gzip.compress(data, compresslevel=6, mtime=0))


class _PageScan(HTMLParser):
    """What the budget needs from a page, without building a tree (pages reach megabytes)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=False)
        self.stylesheets: list[str] = []
        self.scripts = 0
        self.charts = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "link" and a.get("rel") == "stylesheet" and a.get("href"):
            self.stylesheets.append(a["href"] or "")
        elif tag == "script" and a.get("type") not in DATA_SCRIPT_TYPES:
            self.scripts += 1
        elif "chart" in (a.get("class") or "").split():
            self.charts = True


def page_report(out: Path) -> tuple[list[tuple[str, int, int]], list[str], dict[str, int]]:
    """(page, HTML gz, HTML+CSS gz) per page; pages breaking the script rule; script pages by kind."""
    css_cache: dict[str, int] = {}
    sizes: list[tuple[str, int, int]] = []
    script_offenders: list[str] = []
    script_pages = {"chart": 0, "search": 0, "choose": 0}
    for page in sorted(out.rglob("*.html")):
        rel = page.relative_to(out).as_posix()
        html = page.read_bytes()
        scan = _PageScan()
        scan.feed(html.decode("utf-8"))
        css = 0
        for href in scan.stylesheets:
            target = (out / href.lstrip("/")) if rel == "404.html" else (page.parent / href).resolve()
            key = str(target)
            if key not in css_cache:
                css_cache[key] = gz(target.read_bytes())
            css += css_cache[key]
        sizes.append((rel, gz(html), gz(html) + css))
        if scan.scripts:
            if scan.charts:
                script_pages["chart"] += 1
            elif rel == "search/index.html":
                script_pages["search"] += 1
            elif rel == "choose/index.html":
                script_pages["choose"] += 1
            else:
                script_offenders.append(rel)
    return sizes, script_offenders, script_pages


def timed_builds(root: Path, out: Path, runs: int) -> dict[str, list[float]]:
    stages: dict[str, list[float]] = {}
    for _ in range(runs):
        # cache=False: a full build every time (the incremental cache would make later runs no-ops)
        # workers=1: render in this process, so stage times are comparable across machines
        result = build(load_config(root, out), cache=False, workers=1)
        for name, secs in result.timings.stages.items():
            stages.setdefault(name, []).append(secs)
        stages.setdefault("total", []).append(sum(result.timings.stages.values()))
    return stages


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument(
        "--synthetic", type=int, metavar="RECIPES", help="benchmark a generated site of this many recipes"
    )
    parser.add_argument("--rows", type=int, default=100, help="rows per synthetic recipe")
    args = parser.parse_args(argv)

    out_base = HERE / "out"
    if args.synthetic:
        root = out_base / f"budget-site-{args.synthetic}x{args.rows}"
        stamp = root / "SYNTHETIC.txt"
        if not (
            stamp.is_file() and f"recipes={args.synthetic} rows_per_recipe={args.rows} " in stamp.read_text()
        ):
            print(f"generating {args.synthetic} recipes x {args.rows} rows (synthetic) ...", file=sys.stderr)
            generate.write_site(root, args.synthetic, args.rows)
        label = f"synthetic {args.synthetic} recipes x {args.rows} rows"
    else:
        root = REPO
        label = "shipped site"
    out = out_base / f"budget-out-{'shipped' if not args.synthetic else args.synthetic}"
    shutil.rmtree(out, ignore_errors=True)

    load = os.getloadavg()
    stages = timed_builds(root, out, args.runs)
    sizes, offenders, script_pages = page_report(out)

    print(
        f"{label}: {len(sizes)} pages, {args.runs} builds; load average before: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}"
    )
    print("build stages, median seconds (min-max):")
    for name, values in stages.items():
        print(f"  {name:10} {statistics.median(values):7.3f}  ({min(values):.3f}-{max(values):.3f})")
    totals = sorted(sizes, key=lambda s: s[2], reverse=True)
    html_only = [s[1] for s in sizes]
    print(
        f"page HTML gz: median {statistics.median(html_only) / 1000:.1f} KB, max {max(html_only) / 1000:.1f} KB"
    )
    print("largest pages, HTML + CSS gz:")
    for rel, html_gz, total in totals[:5]:
        print(f"  {total / 1000:6.1f} KB  ({html_gz / 1000:.1f} KB HTML)  {rel}")
    over = [s for s in sizes if s[2] > BUDGET]
    print(f"pages with script: {script_pages['chart']} with charts, {script_pages['search']} search page")
    download_sizes = {
        rel: (out / rel).stat().st_size
        for rel in ("data/rows.csv", "data/rows.parquet", "data/recipes.duckdb")
    }
    print("downloads: " + ", ".join(f"{rel} {size / 1000:.1f} KB" for rel, size in download_sizes.items()))
    bundle = out / "pagefind"
    index_bytes = sum(p.stat().st_size for p in bundle.rglob("*") if p.is_file())
    print(f"search bundle: {index_bytes / 1000:.1f} KB on disk in {sum(1 for _ in bundle.rglob('*'))} files")
    status = 0
    if over:
        status = 1
        shown = ", ".join(f"{r} {t / 1000:.1f} KB" for r, _, t in sorted(over, key=lambda o: -o[2])[:8])
        more = f" and {len(over) - 8} more" if len(over) > 8 else ""
        print(f"OVER BUDGET ({BUDGET / 1000:.0f} KB): {len(over)} pages: {shown}{more}")
    if offenders:
        status = 1
        print("SCRIPT ON A PAGE WITHOUT CHARTS: " + ", ".join(offenders))
    print("budget: " + ("ok" if status == 0 else "FAILED"))
    return status


if __name__ == "__main__":
    raise SystemExit(main())

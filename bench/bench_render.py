"""Benchmark: recipe page rendering and FAQ extraction on a SYNTHETIC site (no figure was measured).

    python bench/bench_render.py [--root bench/out/site-1000x100] [--pages 200] [--runs 5]

Loads the site once (as a build does), then times, with the process's CPU clock:

- ``page``: the whole recipe page job (``render.render_recipe``: rows to dicts, anchors, statuses,
  charts, findings banner, template) over ``--pages`` recipes spread over the site, each run with
  fresh rows (no row slice or chart value is reused between runs, as in a cold build) and templates
  compiled beforehand (once per process, as a worker does), with the recipe bodies' markdown already
  rendered (a cold build renders it once, in the parent, for the FAQ, before the workers fork);
- ``markdown``: rendering those bodies (parse + HTML + FAQ) with an empty cache;
- ``faq``: ``faq.faq_entries`` over every recipe once the bodies are rendered.

Prints the medians of ``--runs`` runs, per page, plus the median page size (raw and gzipped).
Target (issue 7): at most 4 ms of CPU per recipe page at 1,000 recipes x 100 rows.
"""

from __future__ import annotations

import argparse
import dataclasses
import gzip
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from builder.config import load_config  # noqa: E402
from builder.content.markdown import Markdown  # noqa: E402
from builder.engine.pipeline import load_and_reconcile  # noqa: E402
from builder.site.context import RenderContext  # noqa: E402
from builder.site.faq import faq_entries  # noqa: E402
from builder.site.render import make_context, render_recipe  # noqa: E402
from builder.site.views import rows_by_recipe  # noqa: E402

DEFAULT_ROOT = Path(__file__).resolve().parent / "out" / "site-1000x100"


def _cpu(fn: Callable[[], Any]) -> float:
    start = time.process_time()
    fn()
    return time.process_time() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=DEFAULT_ROOT, help="a generated SYNTHETIC site root")
    parser.add_argument("--pages", type=int, default=200, help="recipe pages per run")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    if not (args.root / "SYNTHETIC.txt").exists():
        print(f"{args.root}: not a generated synthetic site (python bench/generate.py ...)", file=sys.stderr)
        return 2

    config = load_config(args.root, Path("/nonexistent-bench-out"))
    loaded = load_and_reconcile(config)
    loaded.problems.raise_if_any()
    assert loaded.recon is not None
    site, recon = loaded.site, loaded.recon
    slugs = sorted(site.recipes)
    step = max(1, len(slugs) // args.pages)
    chosen = slugs[::step][: args.pages]
    n = len(chosen)

    # The markdown of every body, rendered once and shared by every run's context (as the parent
    # of a cold build does before it forks its workers).
    markdown = Markdown()
    md_times = []
    for _ in range(args.runs):
        fresh = Markdown()
        md_times.append(
            _cpu(lambda fresh=fresh: [fresh.render(site.recipes[s].doc.body, faq=True) for s in chosen])
        )
    for slug in slugs:
        markdown.render(site.recipes[slug].doc.body, faq=True)

    # Warm-up outside the timing: templates compiled and spec templates read once per process, as in
    # a build's workers.
    kept = Markdown()
    kept.cache.update(markdown.cache)
    warm = make_context(site, recon, kept)
    for slug in slugs[1::97]:
        render_recipe(warm, slug)

    page_times: list[float] = []
    sizes: list[bytes] = []
    for run in range(args.runs):
        # Fresh rows (converted to dicts again, as every page of a cold build does once); the same
        # compiled templates (a worker compiles them once).
        ctx: RenderContext = dataclasses.replace(warm, rows=rows_by_recipe(site))
        pages: list[bytes] = []
        page_times.append(
            _cpu(lambda ctx=ctx, pages=pages: pages.extend(render_recipe(ctx, s) for s in chosen))
        )
        if run == 0:
            sizes = pages
    faq_times = [_cpu(lambda: faq_entries(site, markdown)) for _ in range(args.runs)]

    raw = statistics.median(len(p) for p in sizes)
    gz = statistics.median(len(gzip.compress(p, 6, mtime=0)) for p in sizes)
    load = os.getloadavg()
    print(
        f"site {args.root} · {n} recipe pages per run · {args.runs} runs · load {load[0]:.1f} {load[1]:.1f}"
    )
    print(
        f"page      {statistics.median(page_times) / n * 1e3:7.2f} ms CPU per recipe page (median; target <= 4)"
    )
    print(f"  runs    {' '.join(f'{t / n * 1e3:.2f}' for t in page_times)}")
    print(
        f"markdown  {statistics.median(md_times) / n * 1e3:7.2f} ms CPU per body, empty cache (parse, HTML, FAQ)"
    )
    print(
        f"faq       {statistics.median(faq_times) * 1e3:7.2f} ms CPU for faq_entries over {len(slugs)} recipes (warm)"
    )
    print(f"size      {raw / 1024:7.1f} KB raw, {gz / 1024:.1f} KB gzipped (median page)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

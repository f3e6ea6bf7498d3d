"""Benchmark: render every comparison page (``/models/<slug>/``) of a site; CPU per page and size.

    python bench/bench_comparisons.py                                 # bench/out/site-1000x100
    python bench/bench_comparisons.py --root bench/out/site-1000x100 --repeat 5

The site is loaded and reconciled once (not timed), then every comparison page is rendered
``--repeat`` times in this process, as a render worker does: ``render_comparison`` (picking the
figures, the charts, the template). Reported: the median over pages of each page's median CPU time,
the slowest page, and the gzipped size of each page (HTML only and HTML + the site's CSS, gzip
level 6, "KB" = 1,000 bytes, as ``bench_budget.py`` counts). Targets (issue 7): <= 10 ms CPU per
page at 1,000 recipes x 100 rows, <= 50 KB gzipped with CSS. The default site is SYNTHETIC
(``bench/generate.py``): no figure in it was measured.
"""

from __future__ import annotations

import argparse
import gzip
import os
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))

from builder.config import load_config  # noqa: E402
from builder.engine.pipeline import load_and_reconcile  # noqa: E402
from builder.site.render import make_context, render_comparison  # noqa: E402

BUDGET = 50_000
TARGET_MS = 10.0


def gz(data: bytes) -> int:
    return len(gzip.compress(data, compresslevel=6, mtime=0))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=HERE / "out" / "site-1000x100")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    load_before = os.getloadavg()

    loaded = load_and_reconcile(load_config(args.root.resolve()))
    if loaded.problems or loaded.recon is None:
        raise SystemExit("the site has problems; run `python -m builder check` on it")
    ctx = make_context(loaded.site, loaded.recon)
    models = sorted(ctx.comparisons)
    if not models:
        raise SystemExit("the site has no comparison page")
    css = sum(gz(data) for path, data in ctx.assets.files.items() if path.endswith(".css"))

    render_comparison(ctx, models[0])  # warm: spec templates, jinja compilation
    cpu: dict[str, list[float]] = {m: [] for m in models}
    pages: dict[str, bytes] = {}
    for _ in range(args.repeat):
        for model in models:
            start = time.process_time()
            pages[model] = render_comparison(ctx, model)
            cpu[model].append(time.process_time() - start)

    per_page = {m: statistics.median(times) * 1000 for m, times in cpu.items()}
    sizes = {m: gz(page) for m, page in pages.items()}
    raw = {m: len(page) for m, page in pages.items()}
    slowest = max(per_page, key=lambda m: per_page[m])
    largest = max(sizes, key=lambda m: sizes[m])
    load = os.getloadavg()
    median_ms = statistics.median(per_page.values())
    print(
        f"{len(models)} comparison pages of {args.root.name}; medians of {args.repeat} renders per page; "
        f"load average before/after {load_before[0]:.2f}/{load[0]:.2f} on {os.cpu_count()} cores"
    )
    print(
        f"CPU per page: median {median_ms:.1f} ms, slowest {per_page[slowest]:.1f} ms ({ctx.comparisons[slowest]}), "
        f"all pages {sum(per_page.values()) / 1000:.2f} s"
    )
    print(
        f"size per page: median {statistics.median(raw.values()) / 1000:.1f} KB raw, "
        f"{statistics.median(sizes.values()) / 1000:.1f} KB gz; largest {sizes[largest] / 1000:.1f} KB gz "
        f"({raw[largest] / 1000:.1f} KB raw, {ctx.comparisons[largest]}); CSS {css / 1000:.1f} KB gz"
    )
    worst = sizes[largest] + css
    ok = median_ms <= TARGET_MS and worst <= BUDGET
    print(
        f"{'PASS' if ok else 'FAIL'}: {median_ms:.1f} ms CPU per page (target <= {TARGET_MS:.0f}), "
        f"largest page + CSS {worst / 1000:.1f} KB gz (budget <= {BUDGET / 1000:.0f})"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())

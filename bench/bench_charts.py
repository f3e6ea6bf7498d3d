"""Benchmark: the chart step at 3,000 charts, on SYNTHETIC rows generated here (none was measured).

    python bench/bench_charts.py [--charts 3000] [--repeat 7]

The chart step is what a build does per chart: pick the rows a chart shows (statuses, latest run per
setting) and build its data values. Timed over enough synthetic recipes to make ``--charts`` recipe
charts (prompt curve, throughput curve, two histories each) and, separately, as many side-by-side
charts (comparison pages). Also timed for comparison: each page's chart data block (its spec
templates and values as one escaped JSON text), rendering the chart partial (figure and data table
or link), and Altair building a chart from scratch per page (the cost the templates avoid).
Target: <= 1 ms per chart. Medians of ``--repeat`` runs; the templates are built once, before timing,
as a build does once per process.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from builder.analysis.reconcile import DIFFERS, MATCHES, Difference, Reconciliation, RowStatus  # noqa: E402
from builder.config import default_templates_dir  # noqa: E402
from builder.site.chart_data import recipe_charts  # noqa: E402
from builder.site.charts import BUILDS, KINDS, PER_QUANTITY, Chart, _define, page_data, spec_template  # noqa: E402
from builder.site.comparisons import Build, Line  # noqa: E402
from builder.site.figures import Cell, Setting  # noqa: E402
from builder.site.render import make_environment  # noqa: E402
from builder.site.side_by_side_charts import side_by_side_charts  # noqa: E402

PROMPTS = (512, 2048, 8192)
CONCURRENCY = (1, 8, 32)
DATES = tuple(dt.date(2026, 1, 1) + dt.timedelta(days=7 * i) for i in range(4))
TRIALS = 3
NODE_HW = {"synth-a": "synth-gpu", "synth-b": "synth-gpu"}
CHARTS_PER_RECIPE = 4  # prompt curve, throughput curve, decode history, aggregate history


def synthetic_recipes(n: int, rng: random.Random) -> tuple[dict[str, list[dict[str, Any]]], Reconciliation]:
    """``n`` recipes × 108 rows (3 prompts × 3 concurrencies × 4 dates × 3 trials); every 9th run off-recipe."""
    recon = Reconciliation()
    off = RowStatus(DIFFERS, (Difference("--max-model-len", "1024", "4096"),))
    on = RowStatus(MATCHES)
    rows: dict[str, list[dict[str, Any]]] = {}
    row_id = 0
    for r in range(n):
        slug = f"synthetic-{r:05d}"
        out = []
        for d_i, date in enumerate(DATES):
            for p in PROMPTS:
                for c in CONCURRENCY:
                    base = 120.0 / (1 + c / 16) * (1 - p / 65536)
                    run_off = (d_i + p + c + r) % 9 == 0
                    for _ in range(TRIALS):
                        decode = round(base * rng.uniform(0.97, 1.03), 2)
                        out.append(
                            {
                                "row_id": row_id,
                                "date": date,
                                "recipe": slug,
                                "node": "synth-a" if d_i % 2 == 0 else "synth-b",
                                "engine_version": "1.0.0",
                                "prompt_tokens": p,
                                "context_tokens": 0,
                                "concurrency": c,
                                "decode_tok_s": decode,
                                "aggregate_tok_s": round(decode * c * 0.95, 2),
                                "prefill_tok_s": None,
                                "ttft_ms": None,
                                "itl_ms": None,
                            }
                        )
                        recon.statuses[row_id] = off if run_off else on
                        row_id += 1
        rows[slug] = out
    return rows, recon


def synthetic_lines(n_charts: int, rng: random.Random) -> list[tuple[list[Line], list[Build]]]:
    """Comparison pages of 3 builds with 2 shared settings each: one decode chart per page."""
    pages = []
    for i in range(n_charts):
        builds = [
            Build(f"b{i}-{k}", f"Model — build {k}", f"build {k}", f"ck{k}", "synth-gpu", "vllm", "1.0.0")
            for k in range(3)
        ]
        lines = []
        for p in (512, 2048):
            cells = {
                b.slug: Cell(
                    b.slug,
                    "decode_tok_s",
                    round(rng.uniform(30, 120), 2),
                    3,
                    DATES[-1],
                    "synth-a",
                    "1.0.0",
                    MATCHES,
                    "",
                    (0, 1, 2),
                )
                for b in builds
            }
            lines.append(Line("decode_tok_s", Setting("synth-gpu", p, 0, 1), cells))
        pages.append((lines, builds))
    return pages


def median_time(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    """Median wall time of ``repeat`` runs (and the last result)."""
    wall, _, result = median_times(fn, repeat)
    return wall, result


def median_times(fn: Callable[[], Any], repeat: int) -> tuple[float, float, Any]:
    """Median wall and CPU (process) time of ``repeat`` runs. On a shared machine the wall time
    includes waiting for a core; the CPU time is what the step itself costs."""
    walls, cpus, result = [], [], None
    for _ in range(repeat):
        start, cpu = time.perf_counter(), time.process_time()
        result = fn()
        cpus.append(time.process_time() - cpu)
        walls.append(time.perf_counter() - start)
    return statistics.median(walls), statistics.median(cpus), result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--charts", type=int, default=3000)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    rng = random.Random(20260727)
    load_before = os.getloadavg()

    start = time.perf_counter()
    for kind in KINDS:  # once per process, as in a build
        for quantity in ("decode_tok_s", "aggregate_tok_s") if kind in PER_QUANTITY else ("",):
            spec_template(kind, quantity)
    templates_s = time.perf_counter() - start

    n_recipes = -(-args.charts // CHARTS_PER_RECIPE)
    rows, recon = synthetic_recipes(n_recipes, rng)

    def recipe_step() -> list[Chart]:
        charts: list[Chart] = []
        for slug in rows:
            charts += recipe_charts(rows[slug], recon.status, NODE_HW, [])
        return charts

    recipe_s, recipe_cpu, charts = median_times(recipe_step, args.repeat)
    assert len(charts) == n_recipes * CHARTS_PER_RECIPE, len(charts)

    pages = synthetic_lines(args.charts, rng)

    def compare_step() -> list[Chart]:
        out: list[Chart] = []
        for lines, builds in pages:
            out += side_by_side_charts(BUILDS, lines, builds)
        return out

    compare_s, compare_cpu, compared = median_times(compare_step, args.repeat)
    assert len(compared) == args.charts

    per_page = [charts[i : i + CHARTS_PER_RECIPE] for i in range(0, len(charts), CHARTS_PER_RECIPE)]
    fill_s, blocks = median_time(lambda: [page_data(page) for page in per_page], args.repeat)

    env = make_environment(default_templates_dir())
    partial = env.get_template("partials/chart.html")
    sample = charts[: min(len(charts), 600)]
    render_s, render_cpu, _ = median_times(lambda: [partial.render(chart=c) for c in sample], args.repeat)

    altair_n = 20
    altair_s, _ = median_time(
        lambda: [
            _define(k, "decode_tok_s" if k in PER_QUANTITY else "").to_dict()
            for k in KINDS
            for _ in range(altair_n // len(KINDS))
        ],
        3,
    )

    ms = 1000.0
    spec_bytes = statistics.median(len(block) for block in blocks) / CHARTS_PER_RECIPE
    load = os.getloadavg()
    print(
        f"SYNTHETIC data: {n_recipes} recipes x {len(DATES) * len(PROMPTS) * len(CONCURRENCY) * TRIALS} rows; "
        f"{args.charts} side-by-side charts; medians of {args.repeat} runs; "
        f"load average before/after {load_before[0]:.2f}/{load[0]:.2f} on {os.cpu_count()} cores"
    )
    print(f"templates built once (Altair, incl. import): {templates_s:.2f} s")
    print(
        f"recipe chart step:        {len(charts)} charts: wall {recipe_s / len(charts) * ms:.3f} ms/chart, "
        f"CPU {recipe_cpu / len(charts) * ms:.3f} ms/chart (page data {spec_bytes / 1024:.1f} KiB per chart)"
    )
    print(
        f"side-by-side chart step:  {len(compared)} charts: wall {compare_s / len(compared) * ms:.3f} ms/chart, "
        f"CPU {compare_cpu / len(compared) * ms:.3f} ms/chart"
    )
    print(f"  page data blocks (specs + values, JSON, wall): {fill_s / len(charts) * ms:.3f} ms/chart")
    print(
        f"chart partial render (figure + data table, jinja): wall {render_s / len(sample) * ms:.3f} ms/chart, "
        f"CPU {render_cpu / len(sample) * ms:.3f} ms/chart"
    )
    print(
        f"Altair from scratch, for comparison (wall): {altair_s / (altair_n // len(KINDS) * len(KINDS)) * ms:.1f} ms/chart"
    )
    worst_wall = max(recipe_s / len(charts), compare_s / len(compared)) * ms
    worst_cpu = max(recipe_cpu / len(charts), compare_cpu / len(compared)) * ms
    verdict = "PASS" if worst_cpu <= 1.0 else "FAIL"
    print(
        f"{verdict}: chart step {worst_cpu:.3f} ms/chart CPU ({worst_wall:.3f} ms wall) "
        f"(target <= 1 ms at {args.charts} charts)"
    )
    return 0 if verdict == "PASS" else 1


if __name__ == "__main__":
    raise SystemExit(main())

"""Benchmark the producers after the pages (``data``: downloads and API; ``search``: Pagefind).

    python bench/bench_outputs.py                       # bench/out/site-1000x100
    python bench/bench_outputs.py --site DIR --runs 5

Copies the site's ``content/`` and ``data/`` into a scratch folder (the shared benchmark site is
never edited), then times fresh ``python -m builder build --verbose`` processes: cold
(``--no-cache``), one recipe's body edited, one row file added. Prints the median of the ``data``
and ``search`` stage times (from ``--verbose``) and of the whole process, with the load average,
since the machine is shared.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))

import generate  # noqa: E402

STAGE = re.compile(r"(\w+) ([0-9.]+)s")


def build(root: Path, out: Path, *extra: str) -> tuple[float, dict[str, float]]:
    start = time.perf_counter()
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "builder",
            "build",
            "--root",
            str(root),
            "--out",
            str(out),
            "--verbose",
            *extra,
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"build failed ({proc.returncode}):\n{proc.stderr}{proc.stdout}")
    line = next(x for x in (proc.stdout + proc.stderr).splitlines() if "| total" in x)
    return elapsed, {name: float(secs) for name, secs in STAGE.findall(line.split("|")[0])}


def measure(
    runs: int, prepare: Callable[[int], None], root: Path, out: Path, *extra: str
) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {"process": [], "data": [], "search": []}
    for i in range(runs):
        prepare(i)
        elapsed, stages = build(root, out, *extra)
        times["process"].append(elapsed)
        for name in ("data", "search"):
            times[name].append(stages.get(name, 0.0))
    return times


def report(name: str, times: dict[str, list[float]]) -> None:
    parts = [f"{key} {statistics.median(values):6.2f}s" for key, values in times.items()]
    print(f"{name:<18} {'  '.join(parts)}   (load {os.getloadavg()[0]:.1f})", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--site", type=Path, default=HERE / "out" / "site-1000x100")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--cold-runs", type=int, default=3)
    args = parser.parse_args(argv)
    if not (args.site / "SYNTHETIC.txt").is_file():
        raise SystemExit(f"{args.site} is not a generated site (python bench/generate.py ...)")
    with tempfile.TemporaryDirectory(prefix="bench-outputs-") as scratch:
        root, out = Path(scratch) / "root", Path(scratch) / "site"
        for part in ("content", "data"):
            shutil.copytree(args.site / part, root / part)
        print(f"{args.site.name}: {len(list((root / 'content' / 'recipes').glob('*.md')))} recipes; medians")
        report("cold", measure(args.cold_runs, lambda i: None, root, out, "--no-cache"))
        build(root, out)  # the record the incremental builds start from
        recipes = sorted((root / "content" / "recipes").glob("*.md"))
        recipe = recipes[len(recipes) // 2]
        original = recipe.read_text(encoding="utf-8")

        def edit(i: int) -> None:
            recipe.write_text(original + f"\n\nSynthetic benchmark edit {i}.\n", encoding="utf-8")

        report("edit one recipe", measure(args.runs, edit, root, out))

        def add_rows(i: int) -> None:
            generate.add_row_file(root, 3 + i, f"2027-01-{1 + i:02d}")

        report("add one row file", measure(args.runs, add_rows, root, out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

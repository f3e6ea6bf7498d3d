"""Paired, interleaved A/B runs of the builder: is a change faster, and does it keep the speed guard?

    python bench/bench_ab.py --kind all --variant base=/work/base --variant new=. --rounds 10
    python bench/bench_ab.py --variant base --variant purge:MIMALLOC_PURGE_DELAY=-1 --kind edit

A variant is ``NAME``, ``NAME=CODE_DIR`` (a checkout of the builder to run: its ``python -m builder``),
and/or ``NAME:VAR=VALUE,...`` (environment for its processes); plain ``NAME`` is this checkout as it is.
Each variant builds its own copy of the SYNTHETIC site (``bench/out/ab-<name>/``): the builder's code
digest keys its caches, so two checkouts must not share one. The kinds:

- ``cold``: a build with the site's output and record removed;
- ``edit`` / ``add-row``: a build after an edit of the same recipe / a new row file;
- ``check``: ``check`` of the ``--recipes`` x ``--check-rows`` site (1M rows by default);
- ``serve-edit`` / ``serve-row``: ``serve`` running on the variant's copy, the time from saving an
  edited recipe / a new row file of it until the recipe page served shows the change; with ``--gap
  SECONDS``, each round saves twice, SECONDS apart (the second save arrives during the rebuild the
  first started), and times the second;
- ``all``: each of these in turn, then one table with the guard's verdicts (:data:`LIMITS`).

Every round makes the same change for every variant, the order alternating between rounds; this VM's
speed drifts by up to 1.7x within an hour, so only a paired difference (same round, seconds apart)
says anything. Printed per kind and variant: the median, the median paired difference against the
first variant, and for the builder processes their peak memory (``ru_maxrss``, the most of any round).
"""

from __future__ import annotations

import argparse
import datetime
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))

import generate  # noqa: E402
from bench_serve import Server, atomic_write, measure  # noqa: E402
from benchmark import GRAVEYARD, clean_outputs, ensure_site, run_builder, set_aside  # noqa: E402

BUILD_KINDS = ("cold", "edit", "add-row", "check")
SERVE_KINDS = ("serve-edit", "serve-row")
KINDS = BUILD_KINDS + SERVE_KINDS


@dataclass(frozen=True)
class Limit:
    """What the guard allows a kind (issue 34: against 310e2d2, 63fb2eb with issues 30–33's features,
    as the first variant; the preview's kinds with saves 0.5 s apart, ``--gap 0.5``)."""

    slower_pct: float | None = None
    """The most the median paired difference may be, in % of the first variant's time."""
    seconds: float | None = None
    """The most the median may be."""


LIMITS = {
    "cold": Limit(slower_pct=10),
    "edit": Limit(slower_pct=15),
    "add-row": Limit(slower_pct=15),
    "check": Limit(slower_pct=10),
    "serve-edit": Limit(seconds=0.050),
    "serve-row": Limit(seconds=0.100),
}
PEAK_MEMORY_MIB = 1024
"""The most any builder process may hold (its ``ru_maxrss``), in every kind."""


def describe(limit: Limit) -> str:
    parts = [] if limit.slower_pct is None else [f"{limit.slower_pct:+.0f} %"]
    return " ".join(parts + ([] if limit.seconds is None else [f"<= {limit.seconds * 1000:.0f} ms"]))


def verdict(kind: str, median: float, paired_pct: float | None, peak_mib: float) -> str:
    """Returns "ok", or "MISS" and what was over its limit; ``paired_pct`` is None for the first variant."""
    limit = LIMITS[kind]
    misses = []
    if limit.seconds is not None and median > limit.seconds:
        misses.append(f"{median * 1000:.0f} ms > {limit.seconds * 1000:.0f} ms")
    if limit.slower_pct is not None and paired_pct is not None and paired_pct > limit.slower_pct:
        misses.append(f"{paired_pct:+.1f} % > {limit.slower_pct:+.0f} %")
    if peak_mib > PEAK_MEMORY_MIB:
        misses.append(f"{peak_mib:.0f} MiB > {PEAK_MEMORY_MIB} MiB")
    return "MISS: " + ", ".join(misses) if misses else "ok"


@dataclass
class Variant:
    name: str
    code: Path
    env: dict[str, str]
    site: Path = Path()


def parse_variant(text: str) -> Variant:
    """``NAME[=CODE_DIR][:VAR=VALUE,...]``."""
    head, _, env_text = text.partition(":")
    name, _, code = head.partition("=")
    env = dict(item.split("=", 1) for item in env_text.split(",") if item)
    return Variant(name, Path(code).resolve() if code else REPO, env)


@dataclass
class Runs:
    """One kind's figures for one variant, a value per round."""

    seconds: list[float] = field(default_factory=list)
    peak_kib: int = 0


def environment(variant: Variant) -> dict[str, str]:
    """The variant's environment, with bytecode kept outside the checkouts: compiled once, as an
    installed package's is, rather than compiled from source by every process (this machine sets
    PYTHONDONTWRITEBYTECODE, and the two checkouts' code differs in size)."""
    cache = {"PYTHONDONTWRITEBYTECODE": "", "PYTHONPYCACHEPREFIX": str(HERE / "out" / "pycache")}
    return {**cache, **variant.env}


def imported_builder(variant: Variant) -> Path:
    """The ``builder/__init__.py`` a process started as the variant's are imports (``-c`` and ``-m``
    both put the working folder first on the module path)."""
    done = subprocess.run(
        [sys.executable, "-c", "import builder; print(builder.__file__)"],
        cwd=variant.code,
        env={**os.environ, **environment(variant)},
        capture_output=True,
        text=True,
        check=True,
    )
    return Path(done.stdout.strip())


def interleaved(variants: list[Variant], round_: int) -> list[Variant]:
    return variants if round_ % 2 == 0 else variants[::-1]


def prepare(variants: list[Variant], source: Path) -> None:
    """Each variant gets its own copy of ``source`` and its own complete record of it."""

    def outputs(folder: str, names: list[str]) -> set[str]:
        # the source's own output and record, at its top only: a copy starts with neither
        return {"site", ".cache"} & set(names) if Path(folder) == source else set()

    for variant in variants:
        builder_file = imported_builder(variant)
        if not builder_file.is_relative_to(variant.code):
            raise SystemExit(f"variant {variant.name} would run {builder_file}, not its {variant.code}")
        print(f"# {variant.name}: {builder_file}", flush=True)
        env = environment(variant)
        subprocess.run(
            [sys.executable, "-m", "compileall", "-q", str(variant.code / "builder")],
            env={**os.environ, **env},
            check=True,
        )
        variant.site = HERE / "out" / f"ab-{variant.name}"
        set_aside(variant.site, HERE / "out")
        shutil.copytree(source, variant.site, ignore=outputs)
        run_builder(["build", "--root", str(variant.site)], cwd=variant.code, env=env)


def build_rounds(kind: str, variants: list[Variant], rounds: int, check_site: Path) -> dict[str, Runs]:
    """A new builder process per variant and round, after the kind's change to the variant's copy."""
    runs = {variant.name: Runs() for variant in variants}
    recipes = sorted((variants[0].site / "content" / "recipes").glob("*.md"))
    edited = recipes[len(recipes) // 2].name
    for round_ in range(rounds):
        for variant in interleaved(variants, round_):
            args = ["build", "--root", str(variant.site)]
            if kind == "cold":
                clean_outputs(variant.site)
            elif kind == "edit":
                path = variant.site / "content" / "recipes" / edited
                path.write_text(
                    path.read_text(encoding="utf-8") + f"\nA/B edit {round_}.\n", encoding="utf-8"
                )
            elif kind == "add-row":
                slug = generate.recipe_slug(3 + round_)
                # After every generated run, and before the build's day: a later row is refused.
                generate.add_row_file(
                    variant.site, 3 + round_, "2026-08-01", rel=f"{slug}/2026-ab-{round_:03d}.csv"
                )
            elif kind == "check":
                args = ["check", "--root", str(check_site)]
            seconds, usage = run_builder(args, cwd=variant.code, env=environment(variant))
            runs[variant.name].seconds.append(seconds)
            runs[variant.name].peak_kib = max(runs[variant.name].peak_kib, usage.ru_maxrss)
    return runs


def serve_rounds(
    kind: str, variants: list[Variant], rounds: int, gap: float | None = None
) -> dict[str, Runs]:
    """One server per variant, on its copy; each round saves the same change in every copy, one
    variant at a time, and waits for that server's full rebuild to end before the next variant's.
    With ``gap``, a first save comes ``gap`` seconds before the timed one.

    ``serve-row`` adds each round's files to the next recipe: one recipe collecting every round's
    files would time a page growing by 36 rows a file (to 800 rows in ten rounds with ``gap``)."""
    runs = {variant.name: Runs() for variant in variants}
    recipes = sorted((variants[0].site / "content" / "recipes").glob("*.md"))
    servers: dict[str, Server] = {}
    try:
        for variant in variants:
            servers[variant.name] = Server(variant.site, cwd=variant.code, env=environment(variant))
            servers[variant.name].settle()
        # Round -1 is not timed: after a start-up that built nothing, serve drops the follow-up that
        # loads the site, so the first save is answered by a full rebuild instead of its page first.
        for round_ in range(-1, rounds):
            recipe = recipes[(len(recipes) // 2 + (round_ + 1 if kind == "serve-row" else 0)) % len(recipes)]
            index = int(recipe.stem.rsplit("-r", 1)[1])  # generate.recipe_slug(index) ends in -r<index>
            page = f"/recipes/{recipe.stem}/"
            for variant in interleaved(variants, round_):
                server = servers[variant.name]
                if gap is not None:
                    first = time.perf_counter()
                    _serve_save(kind, variant, recipe.name, index, 2 * round_, "first")[1]()
                    time.sleep(max(0.0, gap - (time.perf_counter() - first)))
                marker, save = _serve_save(kind, variant, recipe.name, index, 2 * round_ + 1, "timed")
                seconds = measure(server, page, save, marker.encode())
                if round_ >= 0:
                    runs[variant.name].seconds.append(seconds)
                server.settle()
    finally:
        for server in servers.values():
            server.stop()
    return runs


def _serve_save(
    kind: str, variant: Variant, recipe: str, index: int, number: int, which: str
) -> tuple[str, Callable[[], object]]:
    """The ``number``-th save of a serve kind (made when called) and the marker the page then shows."""
    if kind == "serve-edit":
        marker = f"A/B serve edit {number} ({which})."
        path = variant.site / "content" / "recipes" / recipe
        return marker, lambda: atomic_write(path, path.read_text(encoding="utf-8") + f"\n\n{marker}\n")
    # After every generated run, and before the build's day: a later row is refused.
    marker = (datetime.date(2026, 8, 1) + datetime.timedelta(days=number)).isoformat()
    return marker, partial(generate.add_row_file, variant.site, index, marker)


def paired_pct(first: Runs, other: Runs) -> float:
    """The median over rounds of ``other``'s time against ``first``'s in the same round, in %."""
    return statistics.median(100 * (b / a - 1) for a, b in zip(first.seconds, other.seconds, strict=True))


def report(results: dict[str, dict[str, Runs]]) -> None:
    print(f"{'kind':11} {'variant':10} {'median':>9} {'paired':>8} {'peak RSS':>9}  {'limit':16} verdict")
    for kind, by_variant in results.items():
        shown = describe(LIMITS[kind])
        first = next(iter(by_variant.values()))
        for name, runs in by_variant.items():
            median = statistics.median(runs.seconds)
            paired = None if runs is first else paired_pct(first, runs)
            peak_mib = runs.peak_kib / 1024
            print(
                f"{kind:11} {name:10} {median:8.3f}s {'' if paired is None else f'{paired:+.1f} %':>8}"
                f" {f'{peak_mib:.0f} MiB' if runs.peak_kib else '':>9}  {shown:16}"
                f" {verdict(kind, median, paired, peak_mib)}"
            )
    for kind, by_variant in results.items():
        for name, runs in by_variant.items():
            print(f"# {kind} {name} runs: {' '.join(f'{s:.3f}' for s in runs.seconds)}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--variant", action="append", type=parse_variant, required=True)
    parser.add_argument(
        "--kind", action="append", choices=(*KINDS, "all"), help="repeatable; default: add-row"
    )
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--recipes", type=int, default=1000)
    parser.add_argument("--rows", type=int, default=100, help="rows per recipe of the built site")
    parser.add_argument("--check-rows", type=int, default=1000, help="rows per recipe of the checked site")
    parser.add_argument(
        "--gap",
        type=float,
        default=None,
        metavar="SECONDS",
        help="serve kinds: a first save SECONDS before the timed one (during the rebuild it started)",
    )
    args = parser.parse_args(argv)
    variants: list[Variant] = args.variant
    if len({v.name for v in variants}) != len(variants):
        parser.error("variant names must differ")
    asked = args.kind or ["add-row"]
    kinds = KINDS if "all" in asked else tuple(dict.fromkeys(asked))
    out = HERE / "out"
    out.mkdir(exist_ok=True)
    shutil.rmtree(out / GRAVEYARD, ignore_errors=True)  # left by an interrupted run
    load_before = os.getloadavg()
    source = ensure_site(out / f"site-{args.recipes}x{args.rows}", args.recipes, args.rows)
    check_site = out / f"site-{args.recipes}x{args.check_rows}"
    if "check" in kinds:
        ensure_site(check_site, args.recipes, args.check_rows)
    results: dict[str, dict[str, Runs]] = {}
    try:
        started = time.perf_counter()
        prepare(variants, source)
        print(f"# copies built: {time.perf_counter() - started:.0f} s", file=sys.stderr, flush=True)
        for kind in kinds:
            started = time.perf_counter()
            if kind in SERVE_KINDS:
                results[kind] = serve_rounds(kind, variants, args.rounds, args.gap)
            else:
                results[kind] = build_rounds(kind, variants, args.rounds, check_site)
            print(f"# {kind}: {time.perf_counter() - started:.0f} s", file=sys.stderr, flush=True)
    finally:
        shutil.rmtree(out / GRAVEYARD, ignore_errors=True)
    print(
        f"# SYNTHETIC {args.recipes} recipes x {args.rows} rows (check: x {args.check_rows}),"
        f" {args.rounds} rounds{'' if args.gap is None else f', saves {args.gap} s apart'};"
        f" load average {load_before} before, {os.getloadavg()} after"
    )
    report(results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Paired, interleaved A/B runs of incremental builds: is a change faster, beyond this VM's drift?

    python bench/bench_ab.py --variant base --variant B=../other-checkout --rounds 12
    python bench/bench_ab.py --variant base --variant purge:MIMALLOC_PURGE_DELAY=-1 --kind edit

A variant is ``NAME``, ``NAME=CODE_DIR`` (a checkout of the builder to run: its ``python -m builder``),
and/or ``NAME:VAR=VALUE,...`` (environment for its builds); plain ``NAME`` is this checkout as it is.
Each variant builds its own copy of the SYNTHETIC site (``bench/out/ab-<name>/``): the builder's code
digest keys its caches, so two checkouts must not share one. Every round makes the same change in
every copy (a new row file, or an edit of the same recipe) and builds each copy in a new process, the
order alternating between rounds; this VM's speed drifts by up to 1.7x within an hour, so only a
paired difference (same round, seconds apart) says anything. Printed: per variant the median wall
time, minor page faults and kernel CPU of the build processes; per variant after the first the median
of its paired differences against the first.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))

import generate  # noqa: E402
from benchmark import ensure_site, run_builder  # noqa: E402


@dataclass
class Variant:
    name: str
    code: Path
    env: dict[str, str]
    site: Path = Path()
    seconds: list[float] = field(default_factory=list)
    faults: list[int] = field(default_factory=list)
    kernel: list[float] = field(default_factory=list)


def parse_variant(text: str) -> Variant:
    """``NAME[=CODE_DIR][:VAR=VALUE,...]``."""
    head, _, env_text = text.partition(":")
    name, _, code = head.partition("=")
    env = dict(item.split("=", 1) for item in env_text.split(",") if item)
    return Variant(name, Path(code).resolve() if code else REPO, env)


def build(variant: Variant) -> tuple[float, int, float]:
    """(seconds, minor page faults, kernel CPU seconds) of one build of the variant's site."""
    seconds, usage = run_builder(["build", "--root", str(variant.site)], cwd=variant.code, env=variant.env)
    return seconds, usage.ru_minflt, usage.ru_stime


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--variant", action="append", type=parse_variant, required=True)
    parser.add_argument("--kind", choices=("add-row", "edit"), default="add-row")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--recipes", type=int, default=1000)
    parser.add_argument("--rows", type=int, default=100)
    args = parser.parse_args(argv)
    variants: list[Variant] = args.variant
    if len({v.name for v in variants}) != len(variants):
        parser.error("variant names must differ")
    source = ensure_site(HERE / "out" / f"site-{args.recipes}x{args.rows}", args.recipes, args.rows)

    def outputs(folder: str, names: list[str]) -> set[str]:
        # the source's own output and record, at its top only: a copy starts with neither
        return {"site", ".cache"} & set(names) if Path(folder) == source else set()

    for variant in variants:
        variant.site = HERE / "out" / f"ab-{variant.name}"
        shutil.rmtree(variant.site, ignore_errors=True)
        shutil.copytree(source, variant.site, ignore=outputs)
        build(variant)  # cold: every variant starts from its own complete record
    recipes = sorted((source / "content" / "recipes").glob("*.md"))
    edited = recipes[len(recipes) // 2].name
    for round_ in range(args.rounds):
        order = variants if round_ % 2 == 0 else variants[::-1]
        for variant in order:
            if args.kind == "add-row":
                slug = generate.recipe_slug(3 + round_)
                generate.add_row_file(
                    variant.site, 3 + round_, "2027-02-01", rel=f"{slug}/2027-ab-{round_:03d}.csv"
                )
            else:
                path = variant.site / "content" / "recipes" / edited
                path.write_text(
                    path.read_text(encoding="utf-8") + f"\nA/B edit {round_}.\n", encoding="utf-8"
                )
            seconds, faults, kernel = build(variant)
            variant.seconds.append(seconds)
            variant.faults.append(faults)
            variant.kernel.append(kernel)
    print(f"# {args.kind}, {args.rounds} rounds, SYNTHETIC {args.recipes} recipes x {args.rows} rows")
    for variant in variants:
        runs = " ".join(f"{s:.3f}" for s in variant.seconds)
        print(
            f"{variant.name:12s} median {statistics.median(variant.seconds):.3f} s"
            f"  faults {int(statistics.median(variant.faults))}"
            f"  kernel {statistics.median(variant.kernel):.2f} s  runs {runs}"
        )
    first = variants[0]
    for variant in variants[1:]:
        paired = [b - a for a, b in zip(first.seconds, variant.seconds, strict=True)]
        print(f"{variant.name} - {first.name}: paired median {statistics.median(paired):+.3f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

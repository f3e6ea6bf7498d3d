"""``reproduce``: the serve, benchmark and import commands of one row (see :mod:`builder.site.reproduce`)."""

from __future__ import annotations

import argparse
import sys


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "row",
        metavar="PATH:LINE",
        help="a row: its file (data/rows/...) and the line it starts on, e.g. "
        "data/rows/my-recipe/2026-07-06-node.csv:2",
    )


def _location(text: str) -> tuple[str, int] | None:
    path, sep, line = text.rpartition(":")
    if not sep or not path or not line.isdigit() or int(line) < 1:
        return None
    return path, int(line)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from builder.config import load_config
    from builder.data.load import load_site
    from builder.errors import Problems
    from builder.site.reproduce import NoSuchRow, reproduce, row_at

    where = _location(args.row)
    if where is None:
        print(
            f"reproduce: '{args.row}' is not PATH:LINE (a row file and a line number from 1)", file=sys.stderr
        )
        return 2
    config = load_config(args.root)
    path = Path(where[0])
    if path.is_absolute() or path.exists():  # a path the user can see from here
        try:
            path = path.resolve().relative_to(config.root.resolve())
        except ValueError:
            print(f"reproduce: {where[0]}: not inside the site root {config.root}", file=sys.stderr)
            return 2
    problems = Problems()
    site = load_site(config, problems)
    try:
        row = row_at(site, path.as_posix(), where[1])
    except NoSuchRow as exc:
        print(f"reproduce: {exc}", file=sys.stderr)
        return 2
    recipe = site.recipes.get(row["recipe"])
    if recipe is None:
        print(
            f"reproduce: {args.row}: the row's recipe '{row['recipe']}' is not in content/recipes/",
            file=sys.stderr,
        )
        return 2
    sys.stdout.write(reproduce(recipe.meta, recipe.slug, row).text())
    return 0

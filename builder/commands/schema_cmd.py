"""``schema``: export the JSON Schema of rows, front matter and data files.

See :mod:`builder.content.schema`.
"""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--out", metavar="DIR", help="folder to write the schemas to (default: <root>/schema)"
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="write nothing; exit 1 if the schemas in the folder are out of date",
    )


def run(args: argparse.Namespace) -> int:
    import sys
    from pathlib import Path

    from builder.content import schema

    folder = Path(args.out) if args.out else Path(args.root) / "schema"
    generated = schema.generate()
    if args.check:
        stale = schema.stale(folder, generated)
        for name in stale:
            print(f"{folder / name}: out of date; run: python -m builder schema", file=sys.stderr)
        return 1 if stale else 0
    changed = schema.write(folder, generated)
    for name in changed:
        print(folder / name)
    print(f"{len(generated)} schemas in {folder}, {len(changed)} written")
    return 0

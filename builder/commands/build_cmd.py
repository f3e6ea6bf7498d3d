from __future__ import annotations

import argparse
import sys


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", metavar="DIR", help="output folder (default: <root>/site)")
    parser.add_argument("--verbose", action="store_true", help="print a one-line timing summary per stage")


def run(args: argparse.Namespace) -> int:
    from builder.commands.report import format_text
    from builder.config import load_config
    from builder.pipeline import build

    config = load_config(args.root, args.out, verbose=args.verbose)
    result = build(config)
    if result.warnings:
        print(format_text((), result.warnings), file=sys.stderr)
    print(f"built {result.files} files from {result.rows} rows into {config.out}")
    if args.verbose:
        print(result.timings.summary())
    return 0

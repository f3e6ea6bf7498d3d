"""``new``: write a commented starting file (see :mod:`builder.content.scaffold`)."""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("kind", choices=("recipe", "case-study", "post"), help="what to start")
    parser.add_argument(
        "slug", metavar="SLUG", help="file name and URL: lowercase letters, digits, '.', '-', '_'"
    )


def run(args: argparse.Namespace) -> int:
    from builder.config import load_config
    from builder.content.scaffold import scaffold, write_scaffold
    from builder.content.shell import shell_command
    from builder.data.load import today
    from builder.importers.importing import shown_path

    config = load_config(args.root)
    path = write_scaffold(config, scaffold(config, args.kind, args.slug, today(config)))
    print(shown_path(path))
    print("fill in the keys marked TODO, then run:", shell_command([["python", "-m", "builder", "check"]]))
    if args.kind == "recipe":
        add = ["python", "-m", "builder", "import", "--from", "vllm-bench", "FILE", "--recipe", args.slug]
        print("add its benchmark rows with:", shell_command([add]), "(or another --from format)")
    return 0

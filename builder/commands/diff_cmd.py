"""``diff``: markdown summary of what the working tree changes against a git revision."""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--base", required=True, metavar="REF", help="git revision to compare with (e.g. origin/main)"
    )
    parser.add_argument(
        "--head",
        metavar="REF",
        help="compare this revision instead of the working tree (default: the working tree)",
    )
    parser.add_argument(
        "--out", metavar="FILE", help="also write the markdown to FILE (e.g. $GITHUB_STEP_SUMMARY)"
    )


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from builder.config import load_config
    from builder.review.diff import diff_revisions, render_markdown

    text = render_markdown(diff_revisions(load_config(args.root), args.base, args.head))
    print(text, end="")
    if args.out:
        with Path(args.out).open("a", encoding="utf-8") as handle:
            handle.write(text)
    return 0

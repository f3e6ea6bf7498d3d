"""``contribute``: a benchmark issue → a branch and a pull request, or a comment (see
:mod:`builder.importers.contribute`)."""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--issue-event",
        required=True,
        metavar="FILE",
        help="GitHub's issues event payload (in a workflow: $GITHUB_EVENT_PATH); the issue's body is read only "
        "from it",
    )
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="do everything but push: make the branch and its commit in the local clone, print the pull "
        "request's description or the comment, and write the --out files; publish nothing",
    )
    parser.add_argument(
        "--out",
        metavar="DIR",
        help="write outcome (pull-request or comment), body.md, and for a pull request title, branch and "
        "contribution.bundle into DIR, for the workflow's gh steps",
    )


def run(args: argparse.Namespace) -> int:
    import subprocess
    import sys
    import tempfile
    from pathlib import Path

    from builder.importers.contribute import contribute, publish, read_event, write_outcome

    root = Path(args.root)
    result = contribute(root, read_event(Path(args.issue_event)))
    sys.stdout.write(result.body)
    with tempfile.TemporaryDirectory(prefix="builder-contribute-out-") as tmp:
        out = Path(args.out) if args.out else Path(tmp)
        write_outcome(result, root, out)
        if not args.dry_run:
            publish(
                result,
                out / "body.md",
                lambda command: subprocess.run(command, cwd=root, check=False).returncode,
            )
    return 0

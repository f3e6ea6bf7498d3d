"""Command line: parse arguments, call the core, map errors to exit codes. Nothing else.

Exit codes: 0 success, 1 errors in the input or the build, 2 usage errors (argparse's own).
Commands live in ``builder/commands/<name>.py`` and are imported only when used, so ``check`` does
not pay for the modules ``serve`` needs.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import MutableMapping, Sequence

COMMANDS: dict[str, str] = {
    "build": "Build the static site into --out (default <root>/site).",
    "check": "Validate content and data without rendering; report errors, warnings and findings.",
    "serve": "Build, serve on loopback and rebuild on every change, with live reload.",
    "import": "Turn benchmark tool output into a validated row file.",
    "contribute": "Turn a benchmark sent through the issue form into a branch with its row file, or a "
    "comment naming the fields to fix.",
    "reproduce": "Print the serve, benchmark and import commands that reproduce one row.",
    "new": "Write a commented starting file for a recipe, case study or post.",
    "schema": "Export the JSON Schema of rows and front matter.",
    "choose": "Rank the recipes on one hardware for a workload and metric, from their rows.",
    "diff": "Summarise what the working tree changes against a git revision, in markdown.",
}


def make_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m builder",
        description="Build and check the LLM-serving recipes site.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, help_text in COMMANDS.items():
        command = sub.add_parser(name, help=help_text, description=help_text)
        command.add_argument(
            "--root", default=".", metavar="DIR", help="site root holding content/ and data/ (default: .)"
        )
        module = _command_module(name)
        module.add_arguments(command)
    return parser


def _command_module(name: str):  # type: ignore[no-untyped-def]
    return importlib.import_module(f"builder.commands.{name.replace('-', '_')}_cmd")


def tune_process(environ: MutableMapping[str, str]) -> None:
    """Settings of a ``python -m builder`` process, each unless the user set it. Arrow's allocator
    (mimalloc) is kept from transparent huge pages: a short-lived process that fills its arena
    otherwise has the kernel zero and compact 2 MiB pages (``check``'s guard needs it). Pydantic
    does not look for plugins in every installed distribution: the builder uses none."""
    environ.setdefault("MIMALLOC_ALLOW_THP", "0")
    environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")


def main(argv: Sequence[str] | None = None, *, process: bool = False) -> int:
    """Run one command. ``process``: this is the whole process (``python -m builder``), so a
    command that says it may (``EXIT_WITHOUT_TEARDOWN``) ends it at once when it returns (its
    exit code is kept: ``check`` returns 1 for errors it has printed)."""
    from builder.errors import BuilderError

    if process:
        tune_process(os.environ)
    parser = make_parser()
    args = parser.parse_args(argv)
    module = _command_module(args.command)
    try:
        result: int = module.run(args)
        watched = sys.getprofile() is not None or sys.gettrace() is not None
        if process and not watched and getattr(module, "EXIT_WITHOUT_TEARDOWN", False):
            # Freeing a build's heap object by object is slow and serves nothing once the work is
            # done. Not under a profiler or tracer (pyinstrument, coverage): they report at exit.
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(result)
    except BuilderError as exc:
        from builder.commands.report import print_problems

        print_problems(exc)
        return 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    return result

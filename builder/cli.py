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
    "new": "Write a commented starting file for a recipe, case study or post.",
    "schema": "Export the JSON Schema of rows and front matter.",
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


def skip_pydantic_plugins(environ: MutableMapping[str, str]) -> None:
    """Tell pydantic not to look for plugins, unless the user said otherwise. It looks when the first
    model is defined, through every installed distribution's entry points (≈ 15–20 ms of each build
    here); the builder uses none. Set only when ``python -m builder`` is the whole process."""
    environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")


def no_huge_pages_for_arrow(environ: MutableMapping[str, str]) -> None:
    """Keep Arrow's allocator (mimalloc) from asking Linux for transparent huge pages, unless the
    user said otherwise: it reserves its arena with ``MADV_HUGEPAGE``, and a short-lived process
    that fills it then has the kernel zero (and, when memory is fragmented, compact) 2 MiB at a
    time. ``check`` of 1M rows spent 1.5 s in the kernel with them and 1.05 s without (medians of 7
    interleaved runs: 2.79 s → 2.42 s); cold and row-file builds were the same within noise.
    mimalloc reads it when pyarrow loads, so it is set before; other allocators ignore it. It is
    inherited by the processes a build starts. Set only when ``python -m builder`` is the whole
    process."""
    environ.setdefault("MIMALLOC_ALLOW_THP", "0")


def main(argv: Sequence[str] | None = None, *, process: bool = False) -> int:
    """Run one command. ``process``: this is the whole process (``python -m builder``), so a
    command that says it may (``EXIT_WITHOUT_TEARDOWN``) ends it at once when it returns (its
    exit code is kept: ``check`` returns 1 for errors it has printed)."""
    from builder.errors import BuilderError

    if process:
        skip_pydantic_plugins(os.environ)
        no_huge_pages_for_arrow(os.environ)
    parser = make_parser()
    args = parser.parse_args(argv)
    module = _command_module(args.command)
    try:
        result: int = module.run(args)
        watched = sys.getprofile() is not None or sys.gettrace() is not None
        if process and not watched and getattr(module, "EXIT_WITHOUT_TEARDOWN", False):
            # Freeing a build's heap object by object took ~0.2 s after its work was done. Not
            # under a profiler or tracer (pyinstrument, coverage): they report at exit.
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

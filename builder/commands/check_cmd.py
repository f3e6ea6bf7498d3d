from __future__ import annotations

import argparse
import json

EXIT_WITHOUT_TEARDOWN = True
"""The report is printed: ending the process at once skips freeing the loaded site object by
object (DuckDB, Arrow buffers, every Python object), which is slow for a big site."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--format",
        choices=("text", "json", "github"),
        default="text",
        help="text: one 'path:line: message' per problem; json: one object; github: workflow annotations",
    )
    parser.add_argument(
        "--strict",
        action="store_true",
        help="exit 1 also when a finding has no annotation (for pull requests)",
    )


def run(args: argparse.Namespace) -> int:
    from builder.commands.report import format_findings, format_github, format_text
    from builder.config import load_config
    from builder.errors import ConfigError
    from builder.review.check import CheckReport, check_site

    try:
        config = load_config(args.root)
    except ConfigError as exc:
        if args.format == "text":
            raise
        # Reported in the format asked for: CI parses --format json whatever went wrong.
        report = CheckReport.refused([exc.problem()])
    else:
        report = check_site(config, strict=args.strict, full=args.format == "json")
    if args.format == "json":
        _print(json.dumps(report.as_json(), indent=2, ensure_ascii=False, default=str))
    elif args.format == "github":
        text = format_github(report.errors, report.warnings, report.findings)
        if text:
            _print(text)
    else:
        text = format_text(report.errors, report.warnings)
        if text:
            _print(text)
        if report.findings:
            _print(format_findings(report.findings))
        print(report.summary())
    return report.exit_code


def _print(text: str) -> None:
    """Print ``text`` whatever it holds: a file name of invalid UTF-8 reaches a finding's path as
    lone surrogates, which would stop the report half-way."""
    print(text.encode("utf-8", "backslashreplace").decode("utf-8"))

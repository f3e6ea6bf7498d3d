"""``import``: benchmark tool output → a validated row file (see :mod:`builder.importers.importing`)."""

from __future__ import annotations

import argparse
import datetime as dt
import re
import sys

from builder.importers import FORMATS, IMPORTERS, STDIN


def _iso_date(text: str) -> str:
    try:
        dt.date.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a date YYYY-MM-DD") from None
    if len(text) != 10:
        raise argparse.ArgumentTypeError(f"'{text}' is not a date YYYY-MM-DD")
    return text


def _rate(text: str) -> str:
    if text == "inf" or (re.fullmatch(r"\d+(?:\.\d+)?", text) and float(text) > 0):
        return text
    raise argparse.ArgumentTypeError(f"'{text}' is not a positive number or inf")


def _cap(text: str) -> str:
    if text == "none" or (text.isdigit() and int(text) > 0):
        return text
    raise argparse.ArgumentTypeError(f"'{text}' is not a whole number >= 1 or none")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--from",
        dest="fmt",
        choices=FORMATS,
        help="the tool that wrote the files (default: told from each file's content): "
        + "; ".join(f"{importer.name}: {importer.reads}" for importer in IMPORTERS),
    )
    parser.add_argument(
        "files",
        nargs="+",
        metavar="FILE",
        help=f"benchmark output files, one run; '{STDIN}' reads a paste from standard input",
    )
    parser.add_argument("--recipe", metavar="SLUG", help="recipe the run followed (content/recipes/SLUG.md)")
    parser.add_argument("--node", metavar="NODE", help="node id from data/nodes.yaml (overrides the file's)")
    parser.add_argument(
        "--engine-version", metavar="V", help="engine version the server reported, e.g. 0.24.0"
    )
    parser.add_argument("--engine-build", metavar="B", help="image digest or wheel commit of the engine")
    parser.add_argument("--flags", metavar='"..."', help="serve flags of the run, exactly as typed")
    parser.add_argument("--env", metavar='"K=V ..."', help="environment of the server, as K=V K2=V2")
    parser.add_argument(
        "--date", type=_iso_date, metavar="YYYY-MM-DD", help="day of the run (overrides the file's)"
    )
    parser.add_argument("--contributor", metavar="NAME", help="who ran the benchmark")
    parser.add_argument(
        "--request-rate",
        type=_rate,
        metavar="R|inf",
        help="requests/s the run sent (inf: all at once), for output that does not show it",
    )
    parser.add_argument(
        "--concurrency",
        type=_cap,
        metavar="N|none",
        help="the run's concurrency cap (none: no cap), for output that does not show it",
    )
    parser.add_argument(
        "--out",
        metavar="PATH|-",
        help="file to create (never overwritten); '-' prints the CSV to standard output "
        "(default: data/rows/<recipe>/<date>-<node>.csv, or a free name beside it)",
    )


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from builder.commands.report import format_text
    from builder.config import load_config
    from builder.importers.importing import ImportOptions, prepare_import, shown_path, write_import

    config = load_config(args.root)
    options = ImportOptions(
        fmt=args.fmt,
        files=tuple(Path(f) for f in args.files),
        recipe=args.recipe,
        node=args.node,
        engine_version=args.engine_version,
        engine_build=args.engine_build,
        flags=args.flags,
        env=args.env,
        date=args.date,
        contributor=args.contributor,
        request_rate=args.request_rate,
        concurrency=args.concurrency,
        out=args.out,
        pasted=sys.stdin.buffer.read() if STDIN in args.files else None,
    )
    result = prepare_import(config, options)
    if result.missing:
        print("missing required metadata; nothing was written:", file=sys.stderr)
        for item in result.missing:
            print(f"  {item.describe()}", file=sys.stderr)
        return 1
    text = format_text(result.problems.errors, result.problems.warnings)
    if text:
        print(text, file=sys.stderr)
    if not result.ok:
        count = len(result.problems.errors)
        print(
            f"import failed: {count} error{'s' if count != 1 else ''}; nothing was written", file=sys.stderr
        )
        return 1
    if result.other_errors:
        print(
            f"note: the site has {result.other_errors} other errors; run 'python -m builder check'",
            file=sys.stderr,
        )
    if result.dest is None:
        sys.stdout.write(result.data.decode("utf-8"))
        return 0
    path = write_import(result)
    print(shown_path(path))
    return 0

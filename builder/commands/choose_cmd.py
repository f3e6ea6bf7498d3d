from __future__ import annotations

import argparse
import json
import math
import sys

METRICS = ("decode_tok_s", "prefill_tok_s", "aggregate_tok_s", "ttft_ms", "itl_ms")


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1: {text!r}")
    return value


def _non_negative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must not be negative: {text!r}")
    return value


def _rate(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if math.isnan(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive number or inf: {text!r}")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--hardware", required=True, metavar="HW", help="hardware id (data/hardware.yaml)")
    parser.add_argument(
        "--prompt-tokens", type=_positive_int, metavar="N", help="prompt length (default: any)"
    )
    parser.add_argument(
        "--output-tokens", type=_positive_int, metavar="N", help="output length (default: any)"
    )
    parser.add_argument(
        "--context-tokens", type=_non_negative_int, default=0, metavar="N", help="context depth (default: 0)"
    )
    load = parser.add_mutually_exclusive_group()
    load.add_argument(
        "--concurrency", type=_positive_int, metavar="N", help="concurrent requests (default: 1)"
    )
    load.add_argument(
        "--request-rate", type=_rate, metavar="R", help="requests/s of an open-loop run (or inf)"
    )
    parser.add_argument("--metric", choices=METRICS, default="decode_tok_s", help="what to rank by")
    parser.add_argument("--format", choices=("text", "json"), default="text", help="text or one JSON object")


def run(args: argparse.Namespace) -> int:
    from builder.commands.report import format_text
    from builder.config import load_config
    from builder.engine.pipeline import load_and_reconcile
    from builder.errors import UsageError
    from builder.site.choose import Query, choose, describe

    concurrency = args.concurrency
    if args.request_rate is None and concurrency is None:
        concurrency = 1  # closed loop, one stream: the headline's default
    query = Query(
        args.hardware,
        args.metric,
        args.prompt_tokens,
        args.output_tokens,
        args.context_tokens,
        concurrency,
        args.request_rate,
    )
    loaded = load_and_reconcile(load_config(args.root))
    if loaded.recon is None:
        print(format_text(loaded.problems.errors, loaded.problems.warnings), file=sys.stderr)
        return 1
    try:
        ranking = choose(loaded.site, loaded.recon, query)
    except UsageError as exc:
        print(f"error: {exc.message}", file=sys.stderr)
        return 2
    if args.format == "json":
        print(json.dumps(ranking.as_json(), indent=2, ensure_ascii=False))
    else:
        print(describe(loaded.site, ranking))
    return 0

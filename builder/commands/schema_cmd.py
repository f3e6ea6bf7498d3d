from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    del parser


def run(args: argparse.Namespace) -> int:
    from builder.errors import ConfigError

    raise ConfigError("'schema' is not available yet")

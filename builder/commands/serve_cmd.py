"""``serve``: build into ``<root>/.cache/builder/serve-site``, serve it, rebuild on change, reload pages."""

from __future__ import annotations

import argparse
import sys
import threading
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from builder.serve.devserver import RebuildResult


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--host", default="127.0.0.1", help="address to bind (default: 127.0.0.1, this machine only)"
    )
    parser.add_argument(
        "--port", type=int, default=8000, help="port to listen on; 0 picks a free one (default: 8000)"
    )
    parser.add_argument(
        "--jobs",
        type=int,
        default=None,
        metavar="N",
        help="render with N processes (default: one per core for big rebuilds)",
    )


def _say(text: str, stream: TextIO | None = None) -> None:
    stream = stream or sys.stderr
    stream.write(text + "\n")
    stream.flush()


def _is_loopback(host: str) -> bool:
    import ipaddress

    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def report(result: RebuildResult) -> None:
    """The terminal side of a rebuild: ``check``-style problems, or one line when it went well."""
    from builder.commands.report import format_text
    from builder.wording import counted

    if result.note:
        _say(f"note: {result.note}")
    if result.internal:
        _say(result.internal.rstrip())
    if result.problems or result.warnings:
        _say(format_text(result.problems, result.warnings))
    if result.problems:
        count = len(result.problems)
        _say(f"build failed: {counted(count, 'error')}; still serving the last good build")
    elif result.followup and result.changed:
        pages = ", ".join(sorted(result.changed))
        _say(f"{pages} in {result.seconds * 1000:.0f} ms; rebuilding the rest")
    elif result.followup:
        pass  # nothing written yet (a cancelled rebuild, a page that did not change): the rebuild follows
    else:
        changed = "all files" if result.changed is None else counted(len(result.changed), "file")
        _say(f"built in {result.seconds * 1000:.0f} ms ({changed} changed)")


def run(args: argparse.Namespace) -> int:
    import errno
    import signal

    from builder.config import load_config
    from builder.errors import ConfigError
    from builder.serve.devserver import LiveReloadServer
    from builder.serve.preview import serve_out_dir
    from builder.serve.preview_process import BuildProcess
    from builder.serve.watch import PendingChanges, Watcher, WatchFilter

    config = load_config(args.root)  # a wrong --root is a usage mistake: fail now, not in the overlay
    out = serve_out_dir(config.root)
    pending = PendingChanges()
    # Builds run in a process of their own, which may fork render workers (see preview_process).
    # A rebuild still running when a newer change arrives is cancelled for it: the cancel and the
    # change's quiet period overlap.
    preview = BuildProcess(config.root, out, workers=args.jobs, interrupt=pending.waiting)
    try:
        server = LiveReloadServer.create(
            args.host,
            args.port,
            out,
            preview,
            pending,
            on_result=report,
            on_error=lambda exc: _say(f"preview server: {type(exc).__name__}: {exc}"),
        )
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            raise ConfigError(f"port {args.port} is already in use on {args.host}; pass --port") from None
        raise ConfigError(f"cannot listen on {args.host}:{args.port}: {exc.strerror or exc}") from None
    watcher = Watcher(WatchFilter.for_site(config.root, config.templates, [out.parent, config.out]), pending)
    stop = threading.Event()
    try:
        watcher.start()  # before the first build, so an edit made during it is not lost
        if watcher.fallback:
            _say(f"watching: {watcher.fallback}")
        _say(f"building {config.root} into {out} ...")
        server.state.rebuild(None)
        server.start()
        if not _is_loopback(args.host):
            _say(f"note: listening on {args.host}: other machines on the network can read this preview")
        _say(f"serving {server.url}  (Ctrl-C to stop)", sys.stdout)
        signal.signal(signal.SIGTERM, lambda *_: stop.set())
        stop.wait()
    except KeyboardInterrupt:
        _say("stopping")
    finally:
        watcher.stop()
        server.stop()
        preview.close()
    return 0

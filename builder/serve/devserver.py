"""The preview server: serves a built site over HTTP, rebuilds on change, reloads open pages.

It knows nothing of building: it is given ``rebuild(changed_paths)``, a callable that never needs
to succeed (after MkDocs' ``LiveReloadServer``). One loop takes debounced batches of changed paths
from :class:`~builder.serve.watch.PendingChanges`, calls ``rebuild`` and bumps an *epoch*; every page the
server sends carries a small script (added here, at serve time, never written to disk) that
long-polls ``/__livereload/poll`` and reloads the page once a rebuild that changed it has finished,
or draws an overlay with the problems of a failed rebuild while the last good build stays served.

Security: the server answers only requests whose ``Host`` (or absolute-form target) names the
served host (DNS rebinding), and only with files inside its output folder once symlinks are resolved.
A client has :data:`HEADER_TIMEOUT` seconds to send a request's head (a connection idle that long
between requests is closed too), and at most :data:`MAX_CONNECTIONS` connections are served at once
(each holds a thread): slow or idle clients cannot pile up threads.
"""

from __future__ import annotations

import dataclasses
import html
import json
import math
import secrets
import socket
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from builder.errors import Problem
from builder.serve.urlmap import FALLBACK_404, HostCheck, content_type, inject, page_key, resolve, url_parts
from builder.serve.watch import PendingChanges

CLIENT_JS = Path(__file__).with_name("livereload.js")
LIVERELOAD_PREFIX = "/__livereload/"
POLL_TIMEOUT = 25.0
"""Seconds a long-poll waits for a rebuild before answering "nothing new" (under proxies' limits)."""
HEADER_TIMEOUT = 5.0
"""Seconds a connection may take to send a request line and headers, or stay idle between requests."""
MAX_CONNECTIONS = 64
"""Connections served at once; one more is answered 503 and closed (each open page holds one
long-poll, so a few browser tabs stay far below it)."""
_BUSY = (
    b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\n"
    b"Content-Length: 22\r\nConnection: close\r\nRetry-After: 1\r\n\r\ntoo many connections.\n"
)


@dataclass(frozen=True)
class RebuildResult:
    """What one rebuild did, as far as the server and the terminal need to know."""

    problems: tuple[Problem, ...] = ()
    """Errors that stopped the build; the previous output is still being served."""
    warnings: tuple[Problem, ...] = ()
    """Problems that did not stop it."""
    changed: frozenset[str] | None = frozenset()
    """Output files written or removed, relative and in ``/`` form; ``None`` means unknown: reload
    every page."""
    files: int = 0
    """Files written (for the terminal)."""
    seconds: float = 0.0
    """Wall time of the rebuild, filled in by the server."""
    internal: str | None = None
    """Traceback of an unexpected exception in the builder, for the terminal."""
    note: str | None = None
    """Something the author should know that is not a problem (e.g. why the build cache was dropped)."""
    followup: frozenset[Path] = frozenset()
    """Paths to rebuild for at once: this result was a quick first answer (one page), not the whole
    rebuild. The loop calls ``rebuild`` again with them (plus any change saved meanwhile)."""

    @property
    def ok(self) -> bool:
        return not self.problems


Rebuild = Callable[[frozenset[Path] | None], RebuildResult]
"""``rebuild(changed_paths)``; ``None`` means "build everything" (start-up)."""


def internal_error(exc: BaseException) -> RebuildResult:
    """An unexpected exception as a result: shown in the overlay, traceback for the terminal."""
    return RebuildResult(
        problems=(Problem("<builder>", None, f"internal error: {type(exc).__name__}: {exc}"),),
        internal="".join(traceback.format_exception(exc)),
    )


@dataclass(frozen=True)
class Snapshot:
    """The state a poll answers with."""

    epoch: int
    problems: tuple[Problem, ...]
    changed: frozenset[str] | None
    """Output paths changed after the epoch the poll asked about (``None``: unknown, reload)."""
    building: bool


class BuildState:
    """Epochs, the outcome of the last rebuild and a history of what each rebuild changed.

    Thread-safe: the rebuild loop writes, request threads read and wait.
    """

    def __init__(
        self, rebuild: Rebuild, on_result: Callable[[RebuildResult], None] | None = None, history: int = 512
    ) -> None:
        self._rebuild = rebuild
        self._on_result = on_result
        self._cond = threading.Condition()
        self._history: deque[tuple[int, frozenset[str] | None]] = deque(maxlen=history)
        self._closed = False
        self.epoch = 0
        self.problems: tuple[Problem, ...] = ()
        self.building = False
        self.followup: frozenset[Path] = frozenset()
        """What the last rebuild asked to be rebuilt for next (the loop starts with it)."""
        self.server_id = secrets.token_hex(8)
        """Changes when the server restarts, so open pages reload onto the new one."""

    def rebuild(self, paths: frozenset[Path] | None) -> RebuildResult:
        """Run one rebuild, whatever it raises, and publish its outcome as a new epoch."""
        with self._cond:
            self.building = True
        start = time.perf_counter()
        try:
            result = self._rebuild(paths)
        except Exception as exc:  # the preview must outlive any builder bug
            result = internal_error(exc)
        result = dataclasses.replace(result, seconds=time.perf_counter() - start)
        with self._cond:
            self.epoch += 1
            self._history.append((self.epoch, result.changed if result.ok else frozenset()))
            self.problems = result.problems
            self.building = False
            self.followup = result.followup
            self._cond.notify_all()
        if self._on_result is not None:
            try:
                self._on_result(result)
            except Exception:  # a failing reporter must not stop the loop either
                pass
        return result

    def run(self, pending: PendingChanges) -> None:
        """The rebuild loop: one rebuild per debounced batch, until ``pending`` is closed.

        A result with a ``followup`` is rebuilt for again without waiting for a new batch, the first
        one's too when it ran before the loop (the start-up build); a change that arrived meanwhile
        joins it once it is quiet."""
        followup = self.followup
        while True:
            if followup and not pending.waiting():
                batch: set[Path] | None = set() if not pending.closed else None
            else:
                batch = pending.wait_batch()
            if batch is None:
                return
            paths = frozenset(batch) | followup
            if paths:
                followup = self.rebuild(paths).followup

    def changed_since(self, since: int) -> frozenset[str] | None:
        with self._cond:
            return self._changed_since(since)

    def _changed_since(self, since: int) -> frozenset[str] | None:
        if since >= self.epoch:
            return frozenset()
        if since < 0 or not self._history or self._history[0][0] > since + 1:
            return None  # older than the history we keep
        out: set[str] = set()
        for epoch, changed in self._history:
            if epoch > since:
                if changed is None:
                    return None
                out |= changed
        return frozenset(out)

    def snapshot(self, since: int) -> Snapshot:
        with self._cond:
            return Snapshot(self.epoch, self.problems, self._changed_since(since), self.building)

    def wait(self, since: int, timeout: float) -> Snapshot:
        """Block until an epoch after ``since`` exists (or ``timeout``, or close); return the state."""
        with self._cond:
            self._cond.wait_for(lambda: self.epoch > since or self._closed, timeout)
            return Snapshot(self.epoch, self.problems, self._changed_since(since), self.building)

    def wait_idle(self, timeout: float) -> bool:
        with self._cond:
            return self._cond.wait_for(lambda: not self.building or self._closed, timeout)

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()


# --- HTTP ----------------------------------------------------------------------------------------


class PreviewHandler(BaseHTTPRequestHandler):
    server: PreviewServer
    server_version = "llm-recipes-preview"
    protocol_version = "HTTP/1.1"
    # Headers and body go out in two writes; with Nagle and the client's delayed ACK each answer
    # on a kept-alive connection would wait for the ACK timer.
    disable_nagle_algorithm = True

    def handle_one_request(self) -> None:
        # The request's head must arrive before the deadline; the reaper closes the connection if not.
        self.server.watch(self.connection, time.monotonic() + HEADER_TIMEOUT)
        try:
            super().handle_one_request()
        finally:
            self.server.unwatch(self.connection)

    def parse_request(self) -> bool:
        parsed = super().parse_request()
        self.server.unwatch(self.connection)  # the head is in: answering may take long (a long-poll)
        return parsed

    def do_GET(self) -> None:
        self._answer(head=False)

    def do_HEAD(self) -> None:
        self._answer(head=True)

    def log_message(self, format: str, *args: Any) -> None:
        """The core never prints; request logs are not worth a callback."""

    def _answer(self, head: bool) -> None:
        target = self.path
        hosts = self.headers.get_all("Host") or []
        if not target.startswith("/"):
            # Absolute form (RFC 9112 3.2.2): its authority names the host, whatever Host says.
            parts = urlsplit(target)
            if parts.scheme.lower() != "http" or not parts.netloc or "@" in parts.netloc:
                self._send(HTTPStatus.BAD_REQUEST, b"bad request target\n", "text/plain; charset=utf-8", head)
                return
            hosts = [parts.netloc]
            target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        refused = self.server.host_check.status(hosts)
        if refused is not None:
            self._send(
                refused,
                b"This server answers only to the host it was started on.\n",
                "text/plain; charset=utf-8",
                head,
            )
            return
        path, _, query = target.partition("?")
        if path.startswith(LIVERELOAD_PREFIX):
            self._livereload(path[len(LIVERELOAD_PREFIX) :], query, head)
            return
        self._serve(path, query, head)

    def _serve(self, path: str, query: str, head: bool) -> None:
        state = self.server.state
        epoch = state.epoch
        for attempt in range(2):
            found = resolve(self.server.out_dir, path)
            if found.redirect is not None:
                location = found.redirect + (f"?{query}" if query else "")
                self._send(
                    HTTPStatus.MOVED_PERMANENTLY,
                    b"",
                    "text/plain; charset=utf-8",
                    head,
                    {"Location": location},
                )
                return
            if found.file is not None:
                try:
                    body = found.file.read_bytes()
                except OSError:
                    body = None
                if body is not None:
                    self._send_page(HTTPStatus.OK, found.file, body, head, epoch)
                    return
            # A full rebuild swaps the output folder in with two renames: wait it out once.
            if attempt == 0 and state.building:
                state.wait_idle(timeout=30)
                epoch = state.epoch
                continue
            break
        not_found = self.server.out_dir / "404.html"
        try:
            body = not_found.read_bytes() if not_found.is_file() else FALLBACK_404
        except OSError:
            body = FALLBACK_404
        self._send_page(HTTPStatus.NOT_FOUND, not_found, body, head, epoch)

    def _send_page(self, status: int, file: Path, body: bytes, head: bool, epoch: int) -> None:
        kind = content_type(file)
        if kind.startswith("text/html"):
            body = inject(body, self.server.client_tag(epoch))
        self._send(status, body, kind, head)

    def _livereload(self, name: str, query: str, head: bool) -> None:
        if name == "client.js":
            self._send(HTTPStatus.OK, self.server.client_js, "text/javascript; charset=utf-8", head)
            return
        if name != "poll":
            self._send(HTTPStatus.NOT_FOUND, b"not found\n", "text/plain; charset=utf-8", head)
            return
        params = parse_qs(query)
        since = _int(params.get("since"), -1)
        timeout = min(
            max(_float(params.get("timeout"), self.server.poll_timeout), 0.0), self.server.poll_timeout
        )
        page = (params.get("path") or ["/"])[0]
        snap = self.server.state.wait(since, timeout)
        body = json.dumps(
            {
                "server": self.server.state.server_id,
                "epoch": snap.epoch,
                "reload": snap.epoch > since and self.server.affects(page, snap.changed),
                "building": snap.building,
                "problems": [p.as_dict() for p in snap.problems],
            }
        ).encode("utf-8")
        self._send(HTTPStatus.OK, body, "application/json", head)

    def _send(
        self, status: int, body: bytes, kind: str, head: bool, extra: dict[str, str] | None = None
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        for name, value in (extra or {}).items():
            self.send_header(name, value)
        self.end_headers()
        if not head:
            self.wfile.write(body)


def _int(values: list[str] | None, default: int) -> int:
    try:
        return int(values[0]) if values else default
    except ValueError:
        return default


def _float(values: list[str] | None, default: float) -> float:
    try:
        value = float(values[0]) if values else default
    except ValueError:
        return default
    return value if math.isfinite(value) else default


class PreviewServer(ThreadingHTTPServer):
    """Serves ``out_dir`` with live reload; see the module docstring."""

    daemon_threads = True  # long-polls must not hold up shutdown

    def __init__(
        self,
        address: tuple[str, int],
        out_dir: Path,
        state: BuildState,
        *,
        poll_timeout: float = POLL_TIMEOUT,
        on_error: Callable[[BaseException], None] | None = None,
    ) -> None:
        self.address_family = socket.AF_INET6 if ":" in address[0] else socket.AF_INET
        super().__init__(address, PreviewHandler)
        self.out_dir = out_dir
        self.state = state
        self.poll_timeout = poll_timeout
        self.on_error = on_error
        self.host_check = HostCheck.for_address(address[0], self.server_address[1])
        self.client_js = CLIENT_JS.read_bytes()
        self._slots = threading.BoundedSemaphore(MAX_CONNECTIONS)
        self._deadlines: dict[socket.socket, float] = {}
        self._deadlines_lock = threading.Lock()
        self._closing = threading.Event()
        threading.Thread(target=self._reap, name="preview-reaper", daemon=True).start()

    def process_request(self, request: Any, client_address: Any) -> None:
        """A thread per connection, at most :data:`MAX_CONNECTIONS` at once."""
        if not self._slots.acquire(blocking=False):
            try:
                request.sendall(_BUSY)
            except OSError:
                pass
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._slots.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            request.settimeout(HEADER_TIMEOUT)  # a single read waits no longer than the head may
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()

    def watch(self, connection: socket.socket, deadline: float) -> None:
        with self._deadlines_lock:
            self._deadlines[connection] = deadline

    def unwatch(self, connection: socket.socket) -> None:
        with self._deadlines_lock:
            self._deadlines.pop(connection, None)

    def _reap(self) -> None:
        """Shut the connections whose request head is late (one trickling a byte a second would
        pass any per-read timeout)."""
        while not self._closing.wait(0.25):
            now = time.monotonic()
            with self._deadlines_lock:
                late = [conn for conn, deadline in self._deadlines.items() if deadline <= now]
                for conn in late:
                    del self._deadlines[conn]
            for conn in late:
                try:
                    conn.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def server_close(self) -> None:
        self._closing.set()
        super().server_close()

    @property
    def port(self) -> int:
        return int(self.server_address[1])

    @property
    def url(self) -> str:
        host = str(self.server_address[0])
        if host in ("0.0.0.0", "::"):
            host = "127.0.0.1"
        if ":" in host:
            host = f"[{host}]"
        return f"http://{host}:{self.port}/"

    def client_tag(self, epoch: int) -> bytes:
        broken = ' data-broken="1"' if self.state.problems else ""
        server_id = html.escape(self.state.server_id)
        return (
            f'<script src="{LIVERELOAD_PREFIX}client.js" data-epoch="{epoch}" data-server="{server_id}"{broken} defer>'
            "</script>"
        ).encode()

    def affects(self, page: str, changed: frozenset[str] | None) -> bool:
        """Whether the page at URL path ``page`` was changed by the rebuilds in ``changed``."""
        if changed is None:
            return True
        if not changed:
            return False
        parts = url_parts(page.partition("?")[0])
        if parts is None:
            return False
        key = page_key(parts, page.endswith("/"))
        candidates = {key, f"{key}/index.html"}
        if not (self.out_dir / key).is_file() and not (self.out_dir / key / "index.html").is_file():
            candidates.add("404.html")  # the page shows the 404 page, or was just removed
        return not candidates.isdisjoint(changed)

    def handle_error(self, request: Any, client_address: Any) -> None:
        import sys

        exc = sys.exc_info()[1]
        if isinstance(exc, ConnectionError | TimeoutError) or exc is None:
            return  # the browser went away mid-answer: normal for long-polls
        if self.on_error is not None:
            self.on_error(exc)


# --- Putting it together -------------------------------------------------------------------------


@dataclass
class LiveReloadServer:
    """The HTTP server and the rebuild loop, each on its own thread."""

    server: PreviewServer
    state: BuildState
    pending: PendingChanges
    _threads: list[threading.Thread] = field(default_factory=list)

    @classmethod
    def create(
        cls,
        host: str,
        port: int,
        out_dir: Path,
        rebuild: Rebuild,
        pending: PendingChanges,
        *,
        on_result: Callable[[RebuildResult], None] | None = None,
        on_error: Callable[[BaseException], None] | None = None,
        poll_timeout: float = POLL_TIMEOUT,
    ) -> LiveReloadServer:
        """Bind the port now (so a port in use fails before any build); serve after :meth:`start`."""
        state = BuildState(rebuild, on_result)
        server = PreviewServer((host, port), out_dir, state, poll_timeout=poll_timeout, on_error=on_error)
        return cls(server, state, pending)

    @property
    def url(self) -> str:
        return self.server.url

    def start(self) -> None:
        for name, target in (("preview-http", self._serve), ("preview-rebuild", self._loop)):
            thread = threading.Thread(target=target, name=name, daemon=True)
            thread.start()
            self._threads.append(thread)

    def _serve(self) -> None:
        self.server.serve_forever(poll_interval=0.1)  # how soon stop() is noticed

    def _loop(self) -> None:
        self.state.run(self.pending)

    def stop(self) -> None:
        self.pending.close()
        self.state.close()
        if self._threads:
            self.server.shutdown()
        self.server.server_close()
        for thread in self._threads:
            thread.join(timeout=10)
        self._threads.clear()

    def __enter__(self) -> LiveReloadServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

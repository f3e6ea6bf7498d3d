"""builder.serve.devserver, builder.serve.urlmap, builder.serve.preview: the preview server without flakiness.

The rebuild loop is driven directly (events injected, threading.Event to wait on); requests go
through http.client to a server bound to port 0 in this process. The one test that starts
``python -m builder serve`` on a real port is marked ``serial``.
"""

from __future__ import annotations

import dataclasses
import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from bs4 import BeautifulSoup
from watchdog.events import FileModifiedEvent

from builder.errors import Problem
from builder.serve import devserver
from builder.serve.devserver import BuildState, LiveReloadServer, RebuildResult
from builder.serve.preview import PreviewBuilder, serve_out_dir
from builder.serve.urlmap import HostCheck, inject, resolve, url_parts
from builder.serve.watch import ChangeHandler, PendingChanges, WatchFilter
from tests.conftest import REPO, MakeSite, ctrl_c_works

# --- Host header ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "host", ["127.0.0.1:8000", "localhost:8000", "LOCALHOST:8000", "[::1]:8000", "localhost.:8000"]
)
def test_host_check_accepts_the_served_host(host: str) -> None:
    assert HostCheck.for_address("127.0.0.1", 8000).status([host]) is None


@pytest.mark.parametrize(
    ("values", "status"),
    [
        (["evil.example:8000"], 421),  # a DNS-rebinding page names its own domain
        (["127.0.0.1.evil.example:8000"], 421),
        (["127.0.0.1:9000"], 421),
        (["127.0.0.1"], 421),  # no port means 80
        (["192.168.1.20:8000"], 421),  # loopback-only server, another address
        ([], 400),
        ([""], 400),
        (["127.0.0.1:8000", "127.0.0.1:8000"], 400),
        (["127.0.0.1:80a"], 400),
        (["[::1"], 400),
    ],
)
def test_host_check_refuses_other_hosts(values: list[str], status: int) -> None:
    assert HostCheck.for_address("127.0.0.1", 8000).status(values) == status


def test_host_check_on_every_interface_accepts_addresses_not_names() -> None:
    check = HostCheck.for_address("0.0.0.0", 8000)
    assert check.status(["192.168.1.20:8000"]) is None
    assert check.status(["[fe80::1]:8000"]) is None
    assert check.status(["evil.example:8000"]) == 421


# --- paths ---------------------------------------------------------------------------------------


@pytest.fixture
def out(tmp_path: Path) -> Path:
    """A built output with a secret beside it and symlinks in and out of it."""
    out = tmp_path / "serve-site"
    (out / "recipes/tiny").mkdir(parents=True)
    (out / "static").mkdir()
    (out / "index.html").write_text("<html><body><h1>home</h1></body></html>", encoding="utf-8")
    (out / "recipes/tiny/index.html").write_text("<html><body>tiny</body></html>", encoding="utf-8")
    (out / "static/site.css").write_text("body{}", encoding="utf-8")
    (out / "404.html").write_text("<html><body><h1>missing</h1></body></html>", encoding="utf-8")
    (out / "caf\u00e9.txt").write_text("accent", encoding="utf-8")
    secret_dir = tmp_path / "private"
    secret_dir.mkdir()
    (secret_dir / "secret.txt").write_text("TOP-SECRET", encoding="utf-8")
    (tmp_path / "secret.txt").write_text("TOP-SECRET", encoding="utf-8")
    os.symlink(secret_dir / "secret.txt", out / "leak.txt")
    os.symlink(secret_dir, out / "leakdir")
    os.symlink(out / "static/site.css", out / "alias.css")
    return out


TRAVERSALS = [
    "/../secret.txt",
    "/recipes/../../secret.txt",
    "/%2e%2e/secret.txt",
    "/%2E%2E/secret.txt",
    "/.%2e/secret.txt",
    "/%2e%2e%2fsecret.txt",
    "/..%2fsecret.txt",
    "/recipes%2f..%2f..%2fsecret.txt",
    "/%2e%2e%5csecret.txt",
    "/..\\secret.txt",
    "/%c0%ae%c0%ae/secret.txt",  # overlong UTF-8 dots: not UTF-8 at all
    "/index.html%00.txt",
    "/leak.txt",
    "/leakdir/secret.txt",
    "/leakdir/",
    "/./index.html",
]


@pytest.mark.parametrize("path", TRAVERSALS)
def test_resolve_never_leaves_the_output(out: Path, path: str) -> None:
    assert resolve(out, path).file is None
    assert resolve(out, path).redirect is None


def test_resolve_maps_pages_folders_and_inside_symlinks(out: Path) -> None:
    assert resolve(out, "/").file == out / "index.html"
    assert resolve(out, "/recipes/tiny/").file == out / "recipes/tiny/index.html"
    assert resolve(out, "/recipes/tiny/").key == "recipes/tiny/index.html"
    assert resolve(out, "/recipes/tiny").redirect == "/recipes/tiny/"
    assert resolve(out, "/static/site.css").file == out / "static/site.css"
    assert resolve(out, "/alias.css").file == out / "static/site.css"
    assert resolve(out, "/caf%C3%A9.txt").file == out / "caf\u00e9.txt"
    assert resolve(out, "/static/site.css/").file is None
    missing = resolve(out, "/recipes/gone/")
    assert (missing.file, missing.key) == (None, "recipes/gone/index.html")
    assert url_parts("/a//b/") == ["a", "b"]


def test_inject_goes_before_the_last_body_end() -> None:
    tag = b"<script src=x></script>"
    assert inject(b"<p></body></BODY>", tag) == b"<p></body>" + tag + b"</BODY>"
    assert inject(b"<p>no body end", tag) == b"<p>no body end" + tag


# --- the build state and its loop ----------------------------------------------------------------


class ScriptedRebuild:
    """A rebuild whose outcomes the test decides; records the batches it was called with."""

    def __init__(self, *outcomes: RebuildResult | BaseException) -> None:
        self.outcomes = list(outcomes)
        self.calls: list[frozenset[Path] | None] = []
        self.called = threading.Event()
        self.release = threading.Event()
        self.release.set()

    def __call__(self, paths: frozenset[Path] | None) -> RebuildResult:
        self.calls.append(paths)
        self.called.set()
        self.release.wait()
        outcome = self.outcomes.pop(0) if self.outcomes else RebuildResult()
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome


PROBLEM = Problem("templates/recipe.html", 12, "unexpected end of template")


def test_rebuild_bumps_the_epoch_and_records_what_changed() -> None:
    rebuild = ScriptedRebuild(
        RebuildResult(changed=frozenset({"a/index.html"})),
        RebuildResult(problems=(PROBLEM,)),
        RebuildResult(changed=frozenset({"b/index.html"})),
    )
    state = BuildState(rebuild)
    assert state.rebuild(None).ok
    assert state.rebuild(frozenset()).problems == (PROBLEM,)
    assert state.problems == (PROBLEM,)
    assert state.rebuild(frozenset()).ok
    assert state.problems == ()
    assert state.epoch == 3
    assert state.changed_since(0) == {"a/index.html", "b/index.html"}
    assert state.changed_since(1) == {"b/index.html"}  # a failed rebuild changed nothing
    assert state.changed_since(3) == frozenset()
    assert state.changed_since(-1) is None


def test_unknown_changes_and_forgotten_history_mean_reload_everything() -> None:
    state = BuildState(ScriptedRebuild(RebuildResult(changed=None)), history=3)
    state.rebuild(None)
    assert state.changed_since(0) is None
    for _ in range(5):
        state.rebuild(frozenset())
    assert state.changed_since(1) is None  # older than the history kept
    assert state.changed_since(5) == frozenset()


@pytest.mark.parametrize("exc", [RuntimeError("boom"), KeyError("x"), RecursionError("deep")])
def test_an_unexpected_exception_becomes_a_problem_and_the_loop_goes_on(exc: Exception) -> None:
    reported: list[RebuildResult] = []
    state = BuildState(ScriptedRebuild(exc, RebuildResult()), on_result=reported.append)
    result = state.rebuild(frozenset({Path("/s/content/a.md")}))
    assert result.problems[0].path == "<builder>"
    assert type(exc).__name__ in result.problems[0].message
    assert result.internal is not None and "Traceback" in result.internal
    assert state.epoch == 1
    assert state.rebuild(frozenset()).ok  # the next good rebuild clears it
    assert [r.ok for r in reported] == [False, True]


def test_a_failing_reporter_does_not_stop_rebuilds() -> None:
    def reporter(result: RebuildResult) -> None:
        raise OSError("terminal closed")

    state = BuildState(ScriptedRebuild(), on_result=reporter)
    state.rebuild(None)
    assert state.epoch == 1


def test_the_loop_debounces_a_burst_during_a_rebuild_into_one_rebuild(tmp_path: Path) -> None:
    """200 events arrive while a rebuild runs: exactly one more rebuild, with all of them."""
    root = tmp_path / "site-root"
    (root / "data/rows").mkdir(parents=True)
    pending = PendingChanges(quiet=0.01)
    handler = ChangeHandler(WatchFilter.for_site(root, None), pending)
    rebuild = ScriptedRebuild()
    state = BuildState(rebuild)
    loop = threading.Thread(target=state.run, args=(pending,))
    loop.start()
    try:
        first = root / "data/rows/first.csv"
        rebuild.release.clear()
        handler.dispatch(FileModifiedEvent(str(first)))
        assert rebuild.called.wait(10)  # the loop is now inside rebuild #1, held there
        burst = [root / f"data/rows/r{i:03d}.csv" for i in range(200)]
        for path in burst:
            handler.dispatch(FileModifiedEvent(str(path)))
        done = threading.Event()
        state_waiter = threading.Thread(target=lambda: (state.wait(1, 10), done.set()))
        state_waiter.start()
        rebuild.release.set()
        assert done.wait(10)
        state_waiter.join()
        assert state.wait(1, 10).epoch == 2
    finally:
        pending.close()
        loop.join(10)
    assert not loop.is_alive()
    assert rebuild.calls == [frozenset({first}), frozenset(burst)]


@pytest.mark.parametrize("quiet_first", [True, False], ids=["quiet", "not-yet-quiet"])
def test_a_quick_answer_is_followed_at_once_by_the_full_rebuild(tmp_path: Path, quiet_first: bool) -> None:
    """A result with ``followup`` gets a second rebuild without any new event; a save made during
    the quick answer joins that second rebuild, also when it is not quiet yet as the answer returns
    (the preview has cancelled the rebuild for it already): it is waited for, not rebuilt after."""
    recipe, other = tmp_path / "content/recipes/a.md", tmp_path / "content/recipes/b.md"
    pending = PendingChanges(quiet=0.01 if quiet_first else 0.3)
    rebuild = ScriptedRebuild(
        RebuildResult(changed=frozenset({"recipes/a/index.html"}), followup=frozenset({recipe})),
        RebuildResult(changed=frozenset({"index.html"})),
    )
    state = BuildState(rebuild)
    loop = threading.Thread(target=state.run, args=(pending,))
    loop.start()
    try:
        rebuild.release.clear()
        pending.add([recipe])
        assert rebuild.called.wait(10)  # inside the quick answer
        rebuild.called.clear()
        pending.add([other])
        if quiet_first:
            assert _until(pending.ready)  # the save is due when the quick answer returns
        else:
            assert pending.waiting() and not pending.ready()
        rebuild.release.set()
        assert state.wait(1, 10).epoch == 2
        assert state.changed_since(0) == {"recipes/a/index.html", "index.html"}
    finally:
        pending.close()
        loop.join(10)
    assert not loop.is_alive()
    assert rebuild.calls == [frozenset({recipe}), frozenset({recipe, other})]


def test_the_start_up_builds_followup_is_rebuilt_for_when_the_loop_starts(tmp_path: Path) -> None:
    """The start-up build runs before the loop (``serve`` builds, then serves); what it asks to be
    rebuilt for next (a warm load for quick pages) is not lost."""
    warm = tmp_path / "<warm>"
    pending = PendingChanges(quiet=0.01)
    rebuild = ScriptedRebuild(RebuildResult(followup=frozenset({warm})), RebuildResult())
    state = BuildState(rebuild)
    state.rebuild(None)
    loop = threading.Thread(target=state.run, args=(pending,))
    loop.start()
    try:
        assert state.wait(1, 10).epoch == 2
    finally:
        pending.close()
        loop.join(10)
    assert rebuild.calls == [None, frozenset({warm})]


# --- HTTP, in process ----------------------------------------------------------------------------


@pytest.fixture
def live(out: Path) -> Iterator[tuple[LiveReloadServer, ScriptedRebuild]]:
    rebuild = ScriptedRebuild()
    server = LiveReloadServer.create("127.0.0.1", 0, out, rebuild, PendingChanges(), poll_timeout=5)
    server.state.rebuild(None)
    server.start()
    yield server, rebuild
    server.stop()


def request(
    server: LiveReloadServer, path: str, host: str | None = None, method: str = "GET"
) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", server.server.port, timeout=10)
    try:
        conn.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
        conn.putheader("Host", host if host is not None else f"127.0.0.1:{server.server.port}")
        conn.endheaders()
        response = conn.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        conn.close()


def test_http_serves_pages_with_the_reload_script_added(live) -> None:  # type: ignore[no-untyped-def]
    server, _ = live
    status, headers, body = request(server, "/recipes/tiny/")
    assert status == 200
    assert headers["Content-Type"] == "text/html; charset=utf-8"
    soup = BeautifulSoup(body, "html.parser")
    script = soup.select_one('script[src="/__livereload/client.js"]')
    assert script is not None and script.parent is soup.body
    assert script["data-epoch"] == "1"
    assert script["data-server"] == server.state.server_id
    assert not script.has_attr("data-broken")
    # Only in the answer: the file on disk is untouched.
    assert b"__livereload" not in (server.server.out_dir / "recipes/tiny/index.html").read_bytes()
    status, headers, body = request(server, "/static/site.css")
    assert (status, body) == (200, b"body{}")
    assert headers["Content-Type"] == "text/css; charset=utf-8"
    status, _, body = request(server, "/__livereload/client.js")
    assert status == 200 and b"__livereload/poll" in body
    status, headers, body = request(server, "/recipes/tiny", method="HEAD")
    assert (status, headers["Location"], body) == (301, "/recipes/tiny/", b"")


@pytest.mark.parametrize("path", TRAVERSALS)
def test_http_traversal_gets_404(live, path: str) -> None:  # type: ignore[no-untyped-def]
    server, _ = live
    status, _, body = request(server, path)
    assert status == 404
    assert b"TOP-SECRET" not in body
    assert BeautifulSoup(body, "html.parser").h1.get_text() == "missing"


@pytest.mark.parametrize("host", ["evil.example:{port}", "127.0.0.1:1", "localhost.evil.example:{port}"])
def test_http_wrong_host_is_refused(live, host: str) -> None:  # type: ignore[no-untyped-def]
    server, _ = live
    status, _, body = request(server, "/", host=host.format(port=server.server.port))
    assert status == 421
    assert b"home" not in body
    status, _, body = request(
        server, "/__livereload/poll?since=0&timeout=0", host=host.format(port=server.server.port)
    )
    assert status == 421


def test_http_absolute_form_target_is_refused_for_another_host(live) -> None:  # type: ignore[no-untyped-def]
    server, _ = live
    status, _, body = request(server, "http://evil.example/")
    assert status == 421 and b"home" not in body
    status, _, _ = request(server, f"ftp://127.0.0.1:{server.server.port}/")
    assert status == 400


def test_http_absolute_form_target_for_its_own_host_is_served(live) -> None:  # type: ignore[no-untyped-def]
    """RFC 9112 3.2.2: a server must accept the absolute form; its authority names the host."""
    server, _ = live
    port = server.server.port
    status, _, body = request(server, f"http://127.0.0.1:{port}/recipes/tiny/", host="evil.example")
    assert status == 200 and b"tiny" in body
    status, _, body = request(server, f"http://localhost:{port}/__livereload/poll?since=0&timeout=0")
    assert status == 200 and json.loads(body)["epoch"] == 1


def _until(condition: Callable[[], bool], timeout: float = 10) -> bool:
    """Poll ``condition`` until it holds (True) or ``timeout`` seconds pass (False)."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.005)
    return True


def _raw(server: LiveReloadServer) -> socket.socket:
    return socket.create_connection(("127.0.0.1", server.server.port), timeout=10)


def _closed_within(sock: socket.socket, seconds: float) -> bool:
    """Whether the server closes ``sock`` (or answers and closes) within ``seconds``."""
    sock.settimeout(seconds)
    try:
        while sock.recv(4096):
            pass
    except TimeoutError:
        return False
    except OSError:
        pass
    return True


def test_http_a_request_head_that_never_ends_is_closed(out: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A bare "GET /" without its blank line held a thread forever; a head trickled a byte at a
    time (which no per-read timeout ends) is cut at the deadline too."""
    monkeypatch.setattr(devserver, "HEADER_TIMEOUT", 0.6)
    with LiveReloadServer.create("127.0.0.1", 0, out, ScriptedRebuild(), PendingChanges()) as server:
        server.state.rebuild(None)
        server.start()
        bare = _raw(server)
        bare.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        trickle = _raw(server)
        started = time.monotonic()
        for byte in b"GET / HTTP/1.1\r\nX-Slow: aaaaaaaaaaaaaaaa":
            try:
                trickle.sendall(bytes([byte]))
            except OSError:
                break
            time.sleep(0.05)
        assert _closed_within(trickle, 3)
        assert time.monotonic() - started < 4
        assert _closed_within(bare, 3)
        idle = _raw(server)  # connected, never sends a thing
        assert _closed_within(idle, 3)
        # The server still answers.
        status, _, body = request(server, "/")
        assert status == 200 and b"home" in body
        for sock in (bare, trickle, idle):
            sock.close()


def test_http_connections_beyond_the_bound_are_refused_not_threaded(
    out: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """2,000 slow connections started 2,000 threads: now a bounded number is served at once."""
    monkeypatch.setattr(devserver, "MAX_CONNECTIONS", 4)
    with LiveReloadServer.create("127.0.0.1", 0, out, ScriptedRebuild(), PendingChanges()) as server:
        server.state.rebuild(None)
        server.start()
        before = threading.active_count()
        slow = [_raw(server) for _ in range(4)]
        for sock in slow:
            sock.sendall(b"GET / HTTP/1.1\r\n")
        assert _until(lambda: threading.active_count() >= before + 4)  # every slow one is being served
        extra = [_raw(server) for _ in range(20)]
        answers = []
        for sock in extra:
            sock.settimeout(5)
            answers.append(sock.recv(100))
        assert all(answer.startswith(b"HTTP/1.1 503 ") for answer in answers)
        assert threading.active_count() <= before + 4
        for sock in slow + extra:
            sock.close()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            status = None
            try:
                status, _, _ = request(server, "/")
            except (OSError, http.client.HTTPException):
                pass
            if status == 200:
                break
            time.sleep(0.1)
        assert status == 200


def poll(server: LiveReloadServer, since: int, path: str, timeout: float = 5) -> dict[str, object]:
    status, _, body = request(server, f"/__livereload/poll?since={since}&timeout={timeout}&path={path}")
    assert status == 200
    result: dict[str, object] = json.loads(body)
    return result


def test_poll_reloads_only_pages_a_rebuild_changed(live) -> None:  # type: ignore[no-untyped-def]
    server, rebuild = live
    rebuild.outcomes = [RebuildResult(changed=frozenset({"recipes/tiny/index.html"}))]
    assert poll(server, 1, "/", timeout=0)["reload"] is False  # nothing new yet
    waiting: dict[str, dict[str, object]] = {}
    started = threading.Event()

    def wait_on(name: str, path: str) -> None:
        started.set()
        waiting[name] = poll(server, 1, path)

    threads = [
        threading.Thread(target=wait_on, args=(n, p)) for n, p in (("tiny", "/recipes/tiny/"), ("home", "/"))
    ]
    for thread in threads:
        thread.start()
    server.pending.add([Path("/irrelevant")])
    for thread in threads:
        thread.join(10)
    assert waiting["tiny"]["reload"] is True
    assert waiting["home"]["reload"] is False
    assert waiting["home"]["epoch"] == 2


def test_errors_show_in_the_overlay_and_the_last_good_build_stays(live) -> None:  # type: ignore[no-untyped-def]
    server, rebuild = live
    rebuild.outcomes = [RebuildResult(problems=(PROBLEM,)), RebuildResult(changed=frozenset())]
    server.state.rebuild(frozenset())
    state = poll(server, 1, "/recipes/tiny/")
    assert state["problems"] == [
        {"path": "templates/recipe.html", "line": 12, "message": "unexpected end of template"}
    ]
    assert state["reload"] is False
    status, _, body = request(server, "/recipes/tiny/")
    assert status == 200 and b"tiny" in body
    script = BeautifulSoup(body, "html.parser").select_one("script[data-broken]")
    assert script is not None  # a page opened now draws the overlay at once
    server.state.rebuild(frozenset())
    state = poll(server, 2, "/recipes/tiny/")
    assert state["problems"] == [] and state["reload"] is False  # the overlay just goes away


def test_a_removed_or_missing_page_reloads_when_404_or_it_appears(live) -> None:  # type: ignore[no-untyped-def]
    server, rebuild = live
    rebuild.outcomes = [RebuildResult(changed=frozenset({"recipes/new/index.html"}))]
    status, _, body = request(server, "/recipes/new/")
    assert status == 404 and BeautifulSoup(body, "html.parser").select_one("script[data-epoch]") is not None
    server.state.rebuild(frozenset())
    assert poll(server, 1, "/recipes/new/")["reload"] is True
    assert poll(server, 1, "/recipes/tiny/")["reload"] is False


def test_server_restart_is_noticed_by_open_pages(live) -> None:  # type: ignore[no-untyped-def]
    server, _ = live
    assert poll(server, 1, "/", timeout=0)["server"] == server.state.server_id


@pytest.mark.parametrize("query", ["since=x&timeout=nan", "since=1&timeout=-inf", "timeout=inf&since=5", ""])
def test_poll_survives_odd_parameters(live, query: str) -> None:  # type: ignore[no-untyped-def]
    server, _ = live
    server.server.poll_timeout = 0.05
    status, _, body = request(server, f"/__livereload/poll?{query}")
    assert status == 200
    assert json.loads(body)["epoch"] == 1


def test_missing_output_serves_a_fallback_page_with_the_overlay_script(tmp_path: Path) -> None:
    rebuild = ScriptedRebuild(RebuildResult(problems=(PROBLEM,)))
    server = LiveReloadServer.create("127.0.0.1", 0, tmp_path / "never-built", rebuild, PendingChanges())
    server.state.rebuild(None)
    server.start()
    try:
        status, _, body = request(server, "/")
        assert status == 404
        script = BeautifulSoup(body, "html.parser").select_one("script[data-broken]")
        assert script is not None
    finally:
        server.stop()


# --- the preview builder on real sites -----------------------------------------------------------


@pytest.fixture
def themed_site(make_site: MakeSite) -> Path:
    """The minimal site with its own copy of the templates, so a test can break them."""
    root = make_site()
    shutil.copytree(REPO / "templates", root / "templates")
    return root


def test_preview_builds_into_its_own_folder_and_reports_changed_pages(themed_site: Path) -> None:
    builder = PreviewBuilder(themed_site)
    first = builder(None)
    assert first.ok and first.changed is not None and "recipes/tiny/index.html" in first.changed
    out = serve_out_dir(themed_site)
    assert out == themed_site / ".cache/builder/serve-site"
    assert (out / "recipes/tiny/index.html").is_file()
    assert not (themed_site / "site").exists()
    for page in out.rglob("*.html"):
        soup = BeautifulSoup(page.read_bytes(), "html.parser")
        assert soup.select_one('script[src*="__livereload"]') is None, page
    recipe = themed_site / "content/recipes/tiny.md"
    recipe.write_text(
        recipe.read_text(encoding="utf-8").replace("Tiny model on a test GPU", "Renamed tiny"),
        encoding="utf-8",
    )
    # The recipe's own page first (IncrementalBuilder.quick), then the full rebuild for the rest.
    second = builder(frozenset({recipe}))
    assert second.ok and second.changed == {"recipes/tiny/index.html"}
    assert second.followup == {recipe}
    third = builder(second.followup)
    assert third.ok and third.followup == frozenset()
    assert third.changed is not None and "index.html" in third.changed  # lists the new title
    assert "recipes/tiny/index.html" not in third.changed  # already right
    fourth = builder(frozenset({recipe}))
    assert fourth.changed == frozenset() and fourth.followup == frozenset()


def test_preview_turns_every_kind_of_error_into_problems(themed_site: Path) -> None:
    builder = PreviewBuilder(themed_site)
    assert builder(None).ok
    out = serve_out_dir(themed_site)
    good_page = (out / "recipes/tiny/index.html").read_bytes()

    template = themed_site / "templates/recipe.html"
    good_template = template.read_text(encoding="utf-8")
    template.write_text(good_template + "\n{% if %}\n", encoding="utf-8")
    result = builder(frozenset({template}))
    assert not result.ok
    (problem,) = result.problems
    assert problem.path == "templates/recipe.html"
    assert problem.line == good_template.count("\n") + 2
    assert (out / "recipes/tiny/index.html").read_bytes() == good_page  # the last good build stays
    template.write_text(good_template, encoding="utf-8")
    assert builder(frozenset({template})).ok

    recipe = themed_site / "content/recipes/tiny.md"
    good_recipe = recipe.read_text(encoding="utf-8")
    recipe.write_text(good_recipe.replace("engine: vllm\n", "engine: vllm\nengnie: typo\n"), encoding="utf-8")
    result = builder(frozenset({recipe}))
    assert [(p.path, p.line) for p in result.problems] == [("content/recipes/tiny.md", 7)]
    assert "engnie" in result.problems[0].message
    recipe.write_text(good_recipe, encoding="utf-8")

    rows = themed_site / "data/rows/tiny/2026-01-02-node-a.csv"
    good_rows = rows.read_text(encoding="utf-8")
    rows.write_text(good_rows.replace(",48.25,", ",fast,"), encoding="utf-8")
    result = builder(frozenset({rows}))
    assert [(p.path, p.line) for p in result.problems] == [("data/rows/tiny/2026-01-02-node-a.csv", 3)]
    rows.write_text(good_rows, encoding="utf-8")

    site_yaml = themed_site / "site.yaml"
    site_yaml.write_text("title: [unclosed\n", encoding="utf-8")
    result = builder(frozenset({site_yaml}))
    assert [p.path for p in result.problems] == ["site.yaml"]
    site_yaml.unlink()
    assert builder(frozenset({site_yaml})).ok


def test_preview_reports_a_saved_fifo_or_link_without_blocking(themed_site: Path, tmp_path: Path) -> None:
    """A FIFO named x.md hung the build (and the preview's quick page read it first)."""
    builder = PreviewBuilder(themed_site)
    assert builder(None).ok
    fifo = themed_site / "content/recipes/x.md"
    os.mkfifo(fifo)
    results: list[RebuildResult] = []
    worker = threading.Thread(target=lambda: results.append(builder(frozenset({fifo}))), daemon=True)
    worker.start()
    worker.join(60)
    assert results, "the preview blocked on the FIFO"
    assert sorted(p.format() for p in results[0].problems) == [
        "content/recipes/x.md: not a regular file (a pipe, socket or device): inputs must be regular files"
    ]
    results.clear()
    link = themed_site / "data/rows/tiny/leak.csv"
    (tmp_path / "rows.csv").write_text("x\n", encoding="utf-8")
    link.symlink_to(tmp_path / "rows.csv")
    worker = threading.Thread(target=lambda: results.append(builder(frozenset({link}))), daemon=True)
    worker.start()
    worker.join(60)
    assert sorted(p.format() for p in results[0].problems) == [
        "content/recipes/x.md: not a regular file (a pipe, socket or device): inputs must be regular files",
        "data/rows/tiny/leak.csv: a symbolic link: inputs must be regular files inside the site root",
    ]


# --- a real port, a real process -----------------------------------------------------------------


@pytest.mark.serial
def test_serve_command_prints_the_url_serves_rebuilds_and_stops_on_ctrl_c(themed_site: Path) -> None:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "builder", "serve", "--root", str(themed_site), "--port", "0"],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        preexec_fn=ctrl_c_works,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("serving http://127.0.0.1:"), line
        url = line.split()[1]
        port = int(url.rsplit(":", 1)[1].strip("/"))
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        conn.request("GET", "/recipes/tiny/")
        response = conn.getresponse()
        body = response.read()
        assert response.status == 200
        soup = BeautifulSoup(body, "html.parser")
        epoch = int(soup.select_one("script[data-epoch]")["data-epoch"])  # type: ignore[index]
        title = soup.h1.get_text(strip=True) if soup.h1 else ""
        assert "Tiny model" in title

        recipe = themed_site / "content/recipes/tiny.md"
        recipe.write_text(
            recipe.read_text(encoding="utf-8").replace("Tiny model on a test GPU", "Edited live"),
            encoding="utf-8",
        )
        # Wait (as the page script does) for a rebuild that changed the page; a slow machine may
        # need more than one poll.
        for _ in range(10):
            conn.request("GET", f"/__livereload/poll?since={epoch}&timeout=20&path=/recipes/tiny/")
            state = json.loads(conn.getresponse().read())
            assert state["problems"] == []
            if state["reload"]:
                break
            epoch = state["epoch"]
        assert state["reload"] is True, state
        conn.request("GET", "/recipes/tiny/")
        soup = BeautifulSoup(conn.getresponse().read(), "html.parser")
        assert soup.h1 is not None and "Edited live" in soup.h1.get_text()
        conn.close()
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            _, err = proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise
    assert proc.returncode == 0, err
    assert "stopping" in err
    assert not (themed_site / "site").exists()


def test_terminal_report_prints_the_check_text(capsys: pytest.CaptureFixture[str]) -> None:
    from builder.commands.serve_cmd import report

    report(RebuildResult(problems=(PROBLEM,), warnings=(Problem("content/notes.txt", None, "ignored"),)))
    err = capsys.readouterr().err.splitlines()
    assert err == [
        "templates/recipe.html:12: unexpected end of template",
        "content/notes.txt: ignored (warning)",
        "build failed: 1 error; still serving the last good build",
    ]
    report(RebuildResult(changed=frozenset({"index.html"}), seconds=0.0123))
    assert capsys.readouterr().err == "built in 12 ms (1 file changed)\n"
    quick = RebuildResult(changed=frozenset({"recipes/a/index.html"}), followup=frozenset({Path("a")}))
    report(dataclasses.replace(quick, seconds=0.02))
    assert capsys.readouterr().err == "recipes/a/index.html in 20 ms; rebuilding the rest\n"
    # A rebuild cancelled for newer changes says so once, and no "built" line.
    report(RebuildResult(followup=frozenset({Path("a")}), note="rebuild stopped for newer changes"))
    assert capsys.readouterr().err == "note: rebuild stopped for newer changes\n"

"""Benchmark ``python -m builder serve`` end to end on a generated SYNTHETIC site; print medians.

    python bench/bench_serve.py                     # 1,000 recipes x 100 rows, 5 runs
    python bench/bench_serve.py --recipes 200 --runs 3

What a user waits for, measured from outside: the server runs as its own process (real inotify
watcher, real HTTP); this script saves a file the way editors do (temp file renamed over it) and
stops the clock once the page, fetched again after the live-reload poll said so, shows the change.

- start-up: from spawning ``serve`` to its "serving" line, cold (no serve cache, once) and warm;
- edit one recipe: the recipe page served with the new text;
- add one row file: the recipe page served with the new run's date;
- template used by every recipe page: a recipe page served with the edited template, which the
  server answers only once the whole rebuild (every recipe page) has finished;
- the server's own share, with a rebuild that does nothing but copy the saved text into a page.

The site lives in ``bench/out/serve-<recipes>x<rows>/`` (git-ignored), separate from
``bench/benchmark.py``'s, so the two can run without undoing each other's edits. The server watches
the templates it uses, the repository's here: in a working tree others are editing, run the script
from a snapshot (``git archive HEAD | tar -x -C DIR; python DIR/bench/bench_serve.py --work bench/out``).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import platform
import re
import shutil
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from urllib.parse import quote

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(REPO))

import generate  # noqa: E402

TARGETS = {
    "start-up, cold cache": None,
    "start-up, warm cache": 2.0,
    "edit one recipe": 0.05,
    "add one row file": 0.1,
    "template used by every recipe": 4.0,
}
EPOCH = re.compile(rb'data-epoch="(\d+)"')


def ensure_site(path: Path, recipes: int, rows: int) -> Path:
    stamp = path / "SYNTHETIC.txt"
    wanted = f"recipes={recipes} rows_per_recipe={rows} seed=7 format=csv"
    if not (stamp.is_file() and wanted in stamp.read_text(encoding="utf-8")):
        print(f"generating {path.name}: {recipes} recipes x {rows} rows ...", file=sys.stderr)
        generate.write_site(path, recipes, rows)
    for extra in (path / "data" / "rows").rglob("2027-*.csv"):
        extra.unlink()  # runs added by an earlier benchmark
    shutil.rmtree(path / "templates", ignore_errors=True)
    return path


def atomic_write(path: Path, text: str) -> None:
    temp = path.with_name(f".{path.name}.bench1234")
    temp.write_text(text, encoding="utf-8")
    os.replace(temp, path)


class Server:
    """``python -m builder serve`` in a child process, run from ``cwd`` (a checkout of the builder);
    ``env`` is added to this environment."""

    def __init__(self, root: Path, *, cwd: Path = REPO, env: dict[str, str] | None = None) -> None:
        self.started = time.perf_counter()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "builder", "serve", "--root", str(root), "--port", "0"],
            cwd=cwd,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, **(env or {}), "PYTHONUNBUFFERED": "1"},
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        self.ready = time.perf_counter() - self.started
        if not line.startswith("serving "):
            self.proc.kill()
            raise SystemExit(f"serve did not start: {line}{self.proc.communicate()[1]}")
        self.port = int(line.split()[1].rstrip("/").rsplit(":", 1)[1])
        self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=600)

    def get(self, path: str) -> bytes:
        try:
            self.conn.request("GET", path)
            response = self.conn.getresponse()
        except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
            # The preview closes a connection left idle (while other variants take their turn).
            self.conn.close()
            self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=600)
            self.conn.request("GET", path)
            response = self.conn.getresponse()
        return response.read()

    def epoch(self, path: str) -> int:
        found = EPOCH.search(self.get(path))
        assert found, f"no live-reload script on {path}"
        return int(found.group(1))

    def until_served(self, path: str, since: int, marker: bytes) -> float:
        """Poll like the page script does; return when ``path`` shows ``marker`` (perf_counter)."""
        while True:
            self.conn.request("GET", f"/__livereload/poll?since={since}&timeout=25&path={quote(path)}")
            state = json.loads(self.conn.getresponse().read())
            if state["problems"]:
                raise SystemExit(f"the build failed: {state['problems']}")
            since = state["epoch"]
            if state["reload"]:
                body = self.get(path)
                if marker in body:
                    return time.perf_counter()

    def settle(self, quiet: float = 1.0) -> None:
        """Return once no rebuild has run or started for ``quiet`` seconds: a save's quick page is
        followed by the full rebuild, which would otherwise share the machine with the next figure."""
        since = -1
        while True:
            self.conn.request("GET", f"/__livereload/poll?since={since}&timeout={quiet}")
            state = json.loads(self.conn.getresponse().read())
            if state["epoch"] == since and not state["building"]:
                return
            since = state["epoch"]

    def stop(self) -> str:
        self.conn.close()
        self.proc.send_signal(signal.SIGINT)
        try:
            # A server stopped mid-rebuild may finish it first (a big site's takes a minute or more).
            _, err = self.proc.communicate(timeout=300)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            _, err = self.proc.communicate()
        return err


def measure(server: Server, path: str, change: Callable[[], object], marker: bytes) -> float:
    since = server.epoch(path)
    start = time.perf_counter()
    change()
    return server.until_served(path, since, marker) - start


def note(results: dict[str, list[float]], name: str, seconds: float) -> None:
    """Record a figure and show it at once: a long run that fails later still says something."""
    results[name].append(seconds)
    print(f"  {name}: {seconds:.3f}s", file=sys.stderr, flush=True)


def bench(root: Path, runs: int) -> dict[str, list[float]]:
    results: dict[str, list[float]] = {name: [] for name in TARGETS}
    cache = root / ".cache" / "builder"
    recipes = sorted((root / "content" / "recipes").glob("*.md"))
    recipe = recipes[len(recipes) // 3]
    page = f"/recipes/{recipe.stem}/"
    original = recipe.read_text(encoding="utf-8")
    shutil.rmtree(cache, ignore_errors=True)
    server = Server(root)  # a cold start is slow and says little more when repeated: once
    note(results, "start-up, cold cache", server.ready)
    server.stop()
    for i in range(runs):
        server = Server(root)
        note(results, "start-up, warm cache", server.ready)
        try:
            marker = f"Synthetic serve benchmark edit {i}."
            note(
                results,
                "edit one recipe",
                measure(
                    server,
                    page,
                    lambda m=marker: atomic_write(recipe, original + f"\n\n{m}\n"),
                    marker.encode(),
                ),
            )
            date = f"2027-03-{1 + i:02d}"
            index = int(recipe.stem.rsplit("-r", 1)[1])  # generate.recipe_slug(index) ends in -r<index>
            note(
                results,
                "add one row file",
                measure(
                    server, page, lambda d=date, n=index: generate.add_row_file(root, n, d), date.encode()
                ),
            )
        finally:
            atomic_write(recipe, original)
            for extra in (root / "data" / "rows").rglob("2027-*.csv"):
                extra.unlink()
            server.stop()

    # Templates: the site gets its own copy (the repository's stay untouched), then one is edited.
    site_templates = root / "templates"
    shutil.copytree(REPO / "templates", site_templates)
    template = site_templates / "recipe.html"
    text = template.read_text(encoding="utf-8")
    assert "{% block content %}" in text
    server = Server(root)
    try:
        for i in range(max(1, runs // 2)):
            marker = f"bench-template-edit-{i}"
            edited = text.replace("{% block content %}", f'{{% block content %}}<p class="{marker}"></p>', 1)
            note(
                results,
                "template used by every recipe",
                measure(server, page, lambda e=edited: atomic_write(template, e), marker.encode()),
            )
    finally:
        server.stop()
        shutil.rmtree(site_templates)
        recipe.write_text(original, encoding="utf-8")
    return results


def bench_overhead(runs: int) -> list[float]:
    """The server's own share: save → watcher → debounce → rebuild → poll → page fetched, with a
    rebuild that only copies the saved text into the page (no site build), all in this process."""
    import tempfile

    from builder.serve.devserver import LiveReloadServer, RebuildResult
    from builder.serve.watch import PendingChanges, Watcher, WatchFilter

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        source = root / "content" / "recipes" / "x.md"
        source.parent.mkdir(parents=True)
        source.write_text("start", encoding="utf-8")
        out = root / "out"
        page = out / "recipes" / "x" / "index.html"
        page.parent.mkdir(parents=True)

        def rebuild(changed: frozenset[Path] | None) -> RebuildResult:
            page.write_text(
                f"<html><body>{source.read_text(encoding='utf-8')}</body></html>", encoding="utf-8"
            )
            return RebuildResult(changed=frozenset({"recipes/x/index.html"}))

        pending = PendingChanges()
        live = LiveReloadServer.create("127.0.0.1", 0, out, rebuild, pending)
        watcher = Watcher(WatchFilter.for_site(root, None, [out]), pending)
        watcher.start()
        live.state.rebuild(None)
        live.start()
        client = Server.__new__(Server)
        client.conn = http.client.HTTPConnection("127.0.0.1", live.server.port, timeout=60)
        times = []
        try:
            for i in range(runs):
                marker = f"overhead-{i}"
                times.append(
                    measure(client, "/recipes/x/", lambda m=marker: atomic_write(source, m), marker.encode())
                )
        finally:
            client.conn.close()
            watcher.stop()
            live.stop()
    return times


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--recipes", type=int, default=1000)
    parser.add_argument("--rows", type=int, default=100, help="rows per recipe")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--work", type=Path, default=HERE / "out")
    parser.add_argument(
        "--overhead-only", action="store_true", help="measure only the server's own share (no site build)"
    )
    args = parser.parse_args(argv)
    load_before = os.getloadavg()
    overhead = bench_overhead(max(args.runs, 20))
    print(
        f"# server overhead (save -> page served, trivial rebuild): median {statistics.median(overhead) * 1000:.1f} ms, "
        f"max {max(overhead) * 1000:.1f} ms over {len(overhead)} saves"
    )
    if args.overhead_only:
        return 0
    root = ensure_site(args.work / f"serve-{args.recipes}x{args.rows}", args.recipes, args.rows)
    results = bench(root, args.runs)
    print(
        f"# {platform.python_version()} on {os.cpu_count()} cores; load before {load_before}, after {os.getloadavg()}"
    )
    print(f"# {args.recipes} recipes x {args.rows} rows; save -> page served with the change; medians")
    print(f"{'measurement':34} {'median':>9} {'target':>8}  runs")
    for name, times in results.items():
        median = statistics.median(times)
        target = TARGETS[name]
        verdict = "" if target is None else ("ok" if median <= target else "MISS")
        shown = f"{target:.2f}s" if target is not None else ""
        print(f"{name:34} {median:8.3f}s {shown:>8}  {' '.join(f'{t:.3f}' for t in times)} {verdict}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Incremental builds: rebuild only what a change affects, with the same bytes as a clean build.

The interface the dev server and ``build`` code against::

    engine = IncrementalBuilder(config)
    report = engine.build(changed_paths)   # None: "don't know what changed, look at everything"
    report.written, report.removed, report.problems, report.warnings

``build`` never raises for a problem in the site (content, data, templates, output folder): it
returns the problems and leaves the previous output as it was. :meth:`IncrementalBuilder.run` is
the same build raising them, as :func:`builder.pipeline.build` always has.

How a rebuild stays correct
    Every input is known by its content hash (:mod:`builder.inputs`). Loading reuses each
    unchanged file's parse and validated rows (:mod:`builder.loadcache`); reconciliation and the
    render context are recomputed. Each page job may declare what it reads (:mod:`builder.deps`);
    its *fingerprint* is a hash of those inputs, of the templates it loaded last time (recorded while
    it rendered) and of everything global (the builder's code and toolchain, ``site.yaml``,
    ``data/*.yaml``, static assets, the build date). A page whose fingerprint and published file are
    unchanged is not rendered: its file is hard-linked into the new output. A job that declares
    nothing is rendered every time. Producers that read the rendered pages (downloads, search) run
    on every build that renders. Publishing is atomic (:mod:`builder.output`).

Where the record lives
    ``<root>/.cache/builder/incremental/<hash of the output path>/``: ``state.pickle`` (input and
    output digests, small: read by every build) and ``load.pickle`` + ``rows.arrow`` (the load
    cache), each with a checksum. Anything unreadable is discarded and the build starts clean.
"""

from __future__ import annotations

import gc
import hashlib
import os
import pickle
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from builder.errors import BuildAborted, BuilderError, Problem
from builder.inputs import PACKAGE_DIR, Inputs, Sources, rescan_paths, scan_inputs

if TYPE_CHECKING:
    from builder.config import SiteConfig
    from builder.content import RenderedBody
    from builder.loadcache import LoadCache
    from builder.pipeline import Loaded
    from builder.render import RenderContext

FORMAT = 2
"""Bumped whenever what the cache files hold changes shape."""
MAGIC = b"llm-recipes-builder cache\n"
MARKER = ".llm-recipes-site"  # = builder.output.MARKER, not imported: the no-op path stays light

Progress = Callable[[str, int, int], None]
"""``progress(stage, done, total)``, called from the building thread."""


@dataclass
class BuildReport:
    """What one build did."""

    written: list[str] = field(default_factory=list)
    """Output files added or changed, relative to the output folder, ``/``-separated, sorted."""
    removed: list[str] = field(default_factory=list)
    """Output files that no longer exist, same form, sorted."""
    problems: list[Problem] = field(default_factory=list)
    """Errors that stopped the build; the previous output is untouched when there are any."""
    warnings: list[Problem] = field(default_factory=list)
    """Problems that did not stop it."""
    files: int = 0
    """Files in the published output."""
    rows: int = 0
    """Rows loaded."""
    rendered: int = 0
    """Pages rendered by this build (the others were reused)."""
    reused: int = 0
    """Pages whose previous file was kept."""
    noop: bool = False
    """Nothing changed: no stage beyond the input scan ran."""
    cache_note: str | None = None
    """Why the build cache was discarded, when it was (corrupt, from another version)."""
    seconds: dict[str, float] = field(default_factory=dict)
    """Wall time per stage."""

    @property
    def ok(self) -> bool:
        return not self.problems

    def summary(self) -> str:
        total = sum(self.seconds.values())
        parts = " ".join(f"{name} {secs:.2f}s" for name, secs in self.seconds.items())
        return f"{parts} | total {total:.2f}s"


# --------------------------------------------------------------------------------------------------
# Cache files: pickles with a checksum, written atomically.


class CacheCorrupt(Exception):
    """A cache file exists but cannot be trusted."""


def _write_cache(path: Path, obj: Any) -> None:
    payload = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    digest = hashlib.blake2b(payload, digest_size=32).digest()
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "wb") as handle:
        handle.write(MAGIC + FORMAT.to_bytes(4, "little") + digest + payload)
    os.replace(tmp, path)


def _read_cache(path: Path) -> Any:
    """The object stored at ``path``; None when there is none; :class:`CacheCorrupt` when unreadable."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise CacheCorrupt(f"cannot read {path.name}: {exc.strerror}") from None
    head = len(MAGIC) + 4 + 32
    if len(data) < head or not data.startswith(MAGIC):
        raise CacheCorrupt(f"{path.name} is not a cache file")
    if int.from_bytes(data[len(MAGIC) : len(MAGIC) + 4], "little") != FORMAT:
        raise CacheCorrupt(f"{path.name} is from another version of the builder")
    digest, payload = data[len(MAGIC) + 4 : head], data[head:]
    if hashlib.blake2b(payload, digest_size=32).digest() != digest:
        raise CacheCorrupt(f"{path.name} fails its checksum")
    try:
        return pickle.loads(payload)
    except Exception as exc:  # a checksum-valid file from a different code shape
        raise CacheCorrupt(f"{path.name} cannot be loaded: {type(exc).__name__}") from None


# --------------------------------------------------------------------------------------------------
# The record of the previous build.

OutStat = tuple[int, int, int]
"""(inode, size, mtime_ns) of a published file; a hard link keeps all three."""


@dataclass
class OutputRecord:
    fingerprint: bytes | None
    """Hash of what the file was made from; None when that is not known (rendered every time)."""
    digest: bytes
    """Hash of the file's bytes."""
    templates: tuple[str, ...]
    """Templates loaded while rendering it."""
    stat: OutStat


@dataclass
class State:
    inputs: Inputs
    environment: bytes
    """Toolchain, build date and everything else global that is not a file."""
    outputs: dict[str, OutputRecord]
    warnings: list[Problem]
    files: int
    rows: int
    out_dir: OutStat | None = None
    memo: dict[bytes, tuple[str, ...]] = field(default_factory=dict)
    """Keys of :class:`builder.deps.Reuse` → the output files they produced."""


def environment_key(config: Sources, source_date_epoch: int | None) -> bytes:
    """Global inputs that are not files: the interpreter, library versions, the build date."""
    import datetime as dt

    if source_date_epoch is not None:
        day = dt.datetime.fromtimestamp(source_date_epoch, tz=dt.UTC).date()
    else:
        day = dt.datetime.now(tz=dt.UTC).date()
    parts = [sys.version, f"epoch={source_date_epoch}", f"day={day.isoformat()}", str(config.templates)]
    wanted = (
        "duckdb",
        "pyarrow",
        "jinja2",
        "markdown_it_py",
        "mdit_py_plugins",
        "markupsafe",
        "altair",
        "vl_convert_python",
        "pydantic",
        "pydantic_core",
        "pagefind",
        "pyyaml",
        "numpy",
        "orjson",
    )
    # Installed versions, from the names of their dist-info folders (importing them would cost the
    # no-op build its budget). Only package folders count: the current directory is on sys.path too.
    for folder in sys.path:
        if not folder.endswith(("site-packages", "dist-packages")):
            continue
        try:
            names = os.listdir(folder)
        except OSError:
            continue
        parts.extend(
            name
            for name in sorted(names)
            if name.endswith(".dist-info") and name.lower().replace("-", "_").startswith(wanted)
        )
    return hashlib.blake2b("\n".join(parts).encode(), digest_size=16).digest()


def _source_date_epoch() -> int | None:
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    return int(epoch) if epoch and epoch.isdigit() else None


def _walk_output(out: Path) -> dict[str, OutStat]:
    found: dict[str, OutStat] = {}
    stack = [("", str(out))]
    while stack:
        prefix, path = stack.pop()
        try:
            entries = list(os.scandir(path))
        except OSError:
            continue
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                stack.append((f"{prefix}{entry.name}/", entry.path))
            else:
                try:
                    st = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                found[prefix + entry.name] = (st.st_ino, st.st_size, st.st_mtime_ns)
    found.pop(MARKER, None)
    return found


def _dir_stat(path: Path) -> OutStat | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_ino, st.st_dev, 0)


def state_dir(root: Path, out: Path) -> Path:
    key = hashlib.blake2b(str(out).encode(), digest_size=8).hexdigest()
    return root / ".cache" / "builder" / "incremental" / key


@dataclass(frozen=True)
class _QuickSources:
    root: Path
    templates: Path


def locate_templates(root: Path) -> Path:
    """The templates a site uses (the rule of :func:`builder.config.load_config`, without pydantic)."""
    own = root / "templates"
    if (own / "base.html").is_file():
        return own
    beside = PACKAGE_DIR.parent / "templates"
    return beside if (beside / "base.html").is_file() else PACKAGE_DIR / "_templates"


def quick_noop(root: str | Path, out: str | Path | None = None) -> BuildReport | None:
    """The report of a build with nothing to do, found without importing the heavy stages; else None.

    ``build`` calls this first, so a no-op build costs a scan of the inputs and of the output.
    """
    start = time.perf_counter()
    root_path = Path(root).resolve()
    out_path = Path(out).resolve() if out is not None else root_path / "site"
    sources = _QuickSources(root_path, locate_templates(root_path))
    try:
        state = _read_cache(state_dir(root_path, out_path) / "state.pickle")
    except CacheCorrupt:
        return None
    if not isinstance(state, State):
        return None
    if environment_key(sources, _source_date_epoch()) != state.environment:
        return None
    inputs = scan_inputs(sources, state.inputs)
    if inputs.digests != state.inputs.digests:
        return None
    if _output_changes(out_path, state) != (set(), set()):
        return None
    from builder.output import remove_leftovers  # light: os, shutil, tempfile

    remove_leftovers(out_path)
    if inputs.stats != state.inputs.stats:
        # Same content, new stat (touched, or rewritten identically): remember it for next time.
        state.inputs = inputs
        try:
            _write_cache(state_dir(root_path, out_path) / "state.pickle", state)
        except OSError:
            pass
    return BuildReport(
        warnings=list(state.warnings),
        files=state.files,
        rows=state.rows,
        noop=True,
        seconds={"scan": time.perf_counter() - start},
    )


def _output_changes(out: Path, state: State) -> tuple[set[str], set[str]]:
    """(damaged: recorded files missing or modified, extra: files nobody recorded)."""
    if _dir_stat(out) != state.out_dir or not (out / MARKER).is_file():
        return set(state.outputs) or {MARKER}, set()
    found = _walk_output(out)
    damaged = {rel for rel, rec in state.outputs.items() if found.get(rel) != rec.stat}
    extra = set(found) - set(state.outputs)
    return damaged, extra


# --------------------------------------------------------------------------------------------------
# Dependency digests.


def _h(*parts: bytes | str) -> bytes:
    hasher = hashlib.blake2b(digest_size=16)
    for part in parts:
        data = part.encode() if isinstance(part, str) else part
        hasher.update(len(data).to_bytes(8, "little"))
        hasher.update(data)
    return hasher.digest()


GLOBAL_PREFIXES = ("@builder/", "templates/static/")


def global_digest(inputs: Inputs, environment: bytes) -> bytes:
    parts: list[bytes | str] = [environment]
    for key in sorted(inputs.digests):
        if (
            key == "site.yaml"
            or key.startswith(GLOBAL_PREFIXES)
            or (key.startswith("data/") and not key.startswith("data/rows/"))
        ):
            parts += [key, inputs.digests[key]]
    return _h(*parts)


class DepIndex:
    """Digests of the dependency vocabulary of :mod:`builder.deps` for one build."""

    def __init__(self, inputs: Inputs, cache: LoadCache, site: Any) -> None:
        self.inputs = inputs
        self.site = site
        self.front: dict[str, bytes] = {}
        for (rel, _digest), entry in cache.pages.items():
            if (rel, _digest) in cache.used_pages:
                self.front[rel] = entry.front_digest
        self.rows_of: dict[str, list[bytes | str]] = {}
        for rel, row_entry in cache.rows.entries.items():
            for slug in row_entry.recipes:
                self.rows_of.setdefault(slug, []).extend([rel, row_entry.digest])
        self._memo: dict[str, bytes | None] = {}

    def _files(self, prefix: str) -> bytes:
        parts: list[bytes | str] = []
        for key in sorted(k for k in self.inputs.digests if k.startswith(prefix)):
            parts += [key, self.inputs.digests[key]]
        return _h(prefix, *parts)

    def digest(self, dep: str) -> bytes | None:
        """None for a dependency this index does not know: the job is then rendered every time."""
        if dep in self._memo:
            return self._memo[dep]
        value = self._digest(dep)
        self._memo[dep] = value
        return value

    def _digest(self, dep: str) -> bytes | None:
        kind, _, arg = dep.partition(":")
        if dep == "recipes":
            parts: list[bytes | str] = []
            for slug in sorted(self.site.recipes):
                rel = f"content/recipes/{slug}.md"
                parts += [slug, self.front.get(rel, b"?")]
            return _h("recipes", *parts)
        if dep == "models":
            pairs = [f"{slug}\0{self.site.recipes[slug].meta.model}" for slug in sorted(self.site.recipes)]
            return _h("models", *pairs)
        if dep == "recipe-files":
            return self._files("content/recipes/")
        if dep == "rows":
            return self._files("data/rows/")
        if dep == "case-studies":
            return self._files("content/case-studies/")
        if dep == "posts":
            return self._files("content/posts/")
        if kind == "file" and arg:
            return _h(dep, self.inputs.digests.get(arg, b"-"))
        if kind == "recipe" and arg:
            rel = f"content/recipes/{arg}.md"
            return _h(dep, self.inputs.digests.get(rel, b"-"), *self.rows_of.get(arg, []))
        if kind == "model-files" and arg:
            parts = []
            for slug in sorted(self.site.recipes):
                if self.site.recipes[slug].meta.model == arg:
                    rel = f"content/recipes/{slug}.md"
                    parts += [slug, self.inputs.digests.get(rel, b"-")]
            return _h(dep, *parts)
        if kind == "model" and arg:
            # Front matter and rows of the model's recipes, not their bodies: a comparison page
            # shows no prose, and a body edit should not re-render it.
            parts = []
            for slug in sorted(self.site.recipes):
                if self.site.recipes[slug].meta.model == arg:
                    parts += [
                        slug,
                        self.front.get(f"content/recipes/{slug}.md", b"?"),
                        *self.rows_of.get(slug, []),
                    ]
            return _h(dep, *parts)
        return None


# --------------------------------------------------------------------------------------------------
# Rendering page jobs, in this process or in forked workers.


class _TemplateRecorder:
    """Records which templates a page loads (extends, includes, imports, even missing ones)."""

    def __init__(self, env: Any) -> None:
        self.current: set[str] = set()
        original = env._load_template

        def load(name: Any, globals: Any) -> Any:
            self.current.add(str(name))
            return original(name, globals)

        env._load_template = load


@dataclass
class _Rendered:
    index: int
    data: bytes | None
    templates: tuple[str, ...]
    error: tuple[str, str | None, int | None, str] | None = None
    """(class name, path, line, message) of a BuilderError; class name "" for anything else."""


def _render_one(
    ctx: RenderContext, recorder: _TemplateRecorder, index: int, job: Callable[[], bytes]
) -> _Rendered:
    recorder.current = set()
    try:
        data = job()
    except BuilderError as exc:
        return _Rendered(index, None, (), (type(exc).__name__, exc.path, exc.line, exc.message))
    return _Rendered(index, data, tuple(sorted(recorder.current)))


# Handed to forked workers: a fork copies the parent's memory, so the render context (site, rows,
# templates) reaches them without pickling. Set only while a pool is alive.
_FORK: tuple[Any, Any, list[tuple[str, Callable[[], bytes]]]] | None = None


def _connect(site: Any) -> None:
    """A fresh DuckDB connection over the site's Arrow rows (``rows`` is all a render may query)."""
    import duckdb

    con = duckdb.connect()
    con.register("rows", site.rows)
    site.con = con


def _worker_init() -> None:
    assert _FORK is not None
    _connect(_FORK[0].site)


def _worker_chunk(indices: list[int]) -> tuple[list[_Rendered], dict[str, Any], set[str]]:
    """Render some jobs; also return the markdown this worker rendered or used, for the parent's cache."""
    assert _FORK is not None
    ctx, recorder, jobs = _FORK
    before = set(ctx.markdown.cache)
    ctx.markdown.used = set()
    results = [_render_one(ctx, recorder, i, jobs[i][1]) for i in indices]
    fresh = {k: v for k, v in ctx.markdown.cache.items() if k not in before}
    return results, fresh, ctx.markdown.used


def _worker_count(pending: int) -> int:
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:
        cores = os.cpu_count() or 1
    if pending < 48 or cores < 2 or sys.platform == "win32":
        return 1
    return min(cores, 8)


def render_jobs(
    ctx: RenderContext,
    jobs: list[tuple[str, Callable[[], bytes]]],
    pending: list[int],
    progress: Progress | None,
    workers: int | None,
) -> list[_Rendered]:
    """Render ``jobs[i]`` for every ``i`` in ``pending``; in forked workers when it pays."""
    global _FORK
    recorder = _TemplateRecorder(ctx.env)
    count = workers if workers is not None else _worker_count(len(pending))
    total = len(pending)
    if count <= 1 or total < 2:
        out = []
        for done, index in enumerate(pending, start=1):
            out.append(_render_one(ctx, recorder, index, jobs[index][1]))
            if progress is not None:
                progress("render", done, total)
        return out
    import concurrent.futures
    import multiprocessing

    # Interleaved chunks: neighbouring jobs cost alike, so each worker gets a fair share.
    size = max(4, min(32, total // (count * 8) or 1))
    chunks = [pending[i : i + size] for i in range(0, total, size)]
    results: list[_Rendered] = []
    _FORK = (ctx, recorder, jobs)
    # DuckDB is not fork-safe: a connection alive at fork time (its threads, its locks) deadlocks
    # the children's own. Close it, fork, and give every process a fresh one.
    ctx.site.con.close()
    # The site's objects outlive the workers: kept out of their garbage collector's passes, which
    # would otherwise walk (and, writing to their headers, copy) every page of the inherited heap.
    gc.freeze()
    try:
        with concurrent.futures.ProcessPoolExecutor(
            max_workers=count, mp_context=multiprocessing.get_context("fork"), initializer=_worker_init
        ) as pool:
            for chunk_results, fresh, used in pool.map(_worker_chunk, chunks):
                results.extend(chunk_results)
                ctx.markdown.cache.update(fresh)
                ctx.markdown.used.update(used)
                if progress is not None:
                    progress("render", len(results), total)
    finally:
        gc.unfreeze()
        _FORK = None
        _connect(ctx.site)
    return results


def _raise_first(errors: list[_Rendered]) -> None:
    from builder import errors as errors_module

    first = min(errors, key=lambda r: r.index)
    assert first.error is not None
    name, path, line, message = first.error
    cls = getattr(errors_module, name, None)
    if isinstance(cls, type) and issubclass(cls, BuilderError) and cls is not BuildAborted:
        raise cls(message, path, line)
    raise BuilderError(message, path, line)


# --------------------------------------------------------------------------------------------------


class _Kept(bytes):
    """Marks a file reused from the previous output: linked, never read unless a stage asks."""


KEPT = _Kept()


class StageMemo:
    """The engine's :class:`builder.deps.Reuse`: previous outputs by key, read back from the output."""

    def __init__(
        self,
        previous: dict[bytes, tuple[str, ...]],
        usable: Callable[[str], bool],
        out: Path,
        glob: bytes,
        deps_index: DepIndex,
    ) -> None:
        self.previous = previous
        self.usable = usable
        self.out = out
        self.glob = glob
        self.deps_index = deps_index
        self.current: dict[bytes, tuple[str, ...]] = {}

    def key(self, name: str, *deps: str) -> bytes | None:
        parts: list[bytes | str] = [name]
        for dep in deps:
            value = self.deps_index.digest(dep)
            if value is None:
                return None
            parts += [dep, value]
        return _h(*parts)

    def _earlier(self, key: bytes | None) -> tuple[bytes | None, dict[str, bytes] | None]:
        if key is None:
            return None, None
        full = _h(self.glob, key)
        paths = self.previous.get(full)
        if paths is None or not all(self.usable(p) for p in paths):
            return full, None
        # Not read: the files are linked from the previous output as they are (see KEPT).
        return full, dict.fromkeys(paths, KEPT)

    def __call__(self, key: bytes | None, compute: Callable[[], dict[str, bytes]]) -> dict[str, bytes]:
        full, files = self._earlier(key)
        if files is None:
            files = compute()
        if full is not None:
            self.current[full] = tuple(sorted(files))
        return files

    def many(
        self, keys: Mapping[str, bytes | None], compute: Callable[[set[str]], Mapping[str, dict[str, bytes]]]
    ) -> dict[str, dict[str, bytes]]:
        out: dict[str, dict[str, bytes]] = {}
        fulls: dict[str, bytes | None] = {}
        for name, key in keys.items():
            fulls[name], files = self._earlier(key)
            if files is not None:
                out[name] = files
        missing = set(keys) - set(out)
        if missing:
            computed = compute(missing)
            for name in missing:
                out[name] = dict(computed[name])
        for name, full in fulls.items():
            if full is not None:
                self.current[full] = tuple(sorted(out[name]))
        return out


class OutputFiles(Mapping[str, bytes]):
    """Every output file of this build: fresh bytes, or the previous file read when asked for."""

    def __init__(self, fresh: dict[str, bytes], kept: dict[str, Path], out: Path) -> None:
        self.fresh = fresh
        self.kept = kept
        self.out = out

    def __getitem__(self, key: str) -> bytes:
        data = self.fresh.get(key)
        if data is not None and data is not KEPT:
            return data
        return (self.kept[key] if data is None else self.out / key).read_bytes()

    def __iter__(self) -> Iterator[str]:
        return iter(sorted({*self.fresh, *self.kept}))

    def __len__(self) -> int:
        return len(self.fresh.keys() | self.kept.keys())

    def __contains__(self, key: object) -> bool:
        return key in self.fresh or key in self.kept


class IncrementalBuilder:
    """Builds one site root into one output folder, again and again, reusing what did not change.

    ``persist=False`` keeps nothing on disk (a clean build every time it is created); ``workers``
    fixes the number of render processes (default: one per core for big builds). ``atomic=False``
    (for the preview server) updates the output in place, file by file, instead of swapping in a
    new tree: no copy of thousands of unchanged files per save.
    """

    def __init__(
        self,
        config: SiteConfig,
        *,
        persist: bool = True,
        workers: int | None = None,
        progress: Progress | None = None,
        atomic: bool = True,
        keep_context: bool = False,
    ) -> None:
        self.config = config
        self.atomic = atomic
        self.keep_context = keep_context
        """Keep the last build's render context (the preview's quick pages render from it)."""
        self._context: RenderContext | None = None
        self._unsettled: set[Path] = set()
        """Changed paths of builds that failed, still to be rescanned."""
        self._quick_con: Any = None
        """The DuckDB connection quick pages reconcile on (opened on first use)."""
        self.persist = persist
        self.workers = workers
        self.progress = progress
        self._state: State | None = None
        self._cache: LoadCache | None = None
        self._markdown: dict[str, RenderedBody] | None = None
        self._loaded_from_disk = False
        self._cache_note: str | None = None
        # What load.pickle and rows.arrow hold now, so an unchanged load cache is not rewritten.
        self._saved_load: tuple[Any, ...] | None = None
        self._saved_typed: Any = None
        self._saved_rows_digest: bytes | None = None
        self._cache_code: bytes | None = None
        """Builder code and toolchain the load cache was made with."""

    # Public ---------------------------------------------------------------------------------------

    def build(self, changed: set[Path] | frozenset[Path] | None = None) -> BuildReport:
        """Bring the output up to date; ``changed`` lists source paths known to have changed.

        Problems come back in the report; nothing a site can contain makes this raise.
        """
        try:
            return self.run(changed)
        except BuildAborted as exc:
            return BuildReport(
                problems=list(exc.problems), warnings=list(exc.warnings), cache_note=self._cache_note
            )
        except BuilderError as exc:
            return BuildReport(problems=[exc.problem()], cache_note=self._cache_note)

    def quick(self, source: Path, data: bytes) -> list[str] | None:
        """Write at once the one recipe page that saving ``data`` in ``source`` changes
        (:mod:`builder.quickpage`).

        Returns the output paths written, or ``None`` when there is no quick answer; either way a
        :meth:`build` must follow. The page's record gets the new bytes' digest, so that build
        rewrites (and reports) it only if its own rendering differs.
        """
        from builder.inputs import digest_bytes
        from builder.output import update_in_place
        from builder.quickpage import quick_recipe_page

        state, ctx = self._state, self._context
        if state is None or ctx is None or self.atomic:
            return None
        try:
            rel = source.resolve().relative_to(self.config.root.resolve()).as_posix()
        except (OSError, ValueError):
            return None  # outside the root: a full build says what it is
        if state.inputs.digests.get(rel) == digest_bytes(data):
            return None  # saved unchanged: the build that follows finds nothing to do
        if self._quick_con is None:
            import duckdb

            # Opening a connection costs ~50 ms; quick pages share one, single-threaded (tiny data).
            self._quick_con = duckdb.connect()
            self._quick_con.execute("SET threads = 1")
        pages = quick_recipe_page(ctx, rel, data, self._quick_con)
        if not pages or any(path not in state.outputs for path in pages):
            return None
        pages = {p: data for p, data in pages.items() if state.outputs[p].digest != digest_bytes(data)}
        update_in_place(pages, (), self.config.out, self.config.root)
        for path, data in pages.items():
            st = os.stat(self.config.out / path)
            old = state.outputs[path]
            state.outputs[path] = OutputRecord(
                old.fingerprint, digest_bytes(data), old.templates, (st.st_ino, st.st_size, st.st_mtime_ns)
            )
        return sorted(pages)

    def warm(self) -> bool:
        """Load the site and its render context without building, for :meth:`quick` after a no-op
        start-up (which loads nothing). True when a context is ready."""
        if self._context is not None:
            return True
        if self._state is None or not self.keep_context:
            return False
        from builder.content import Markdown
        from builder.loadcache import LoadCache
        from builder.pipeline import load_and_reconcile
        from builder.render import make_context

        cache = self._cache if self._cache is not None else LoadCache()
        self._cache = cache
        loaded = load_and_reconcile(self.config, cache=cache)
        if loaded.problems.errors or loaded.recon is None:
            loaded.site.con.close()
            return False
        self._context = make_context(
            loaded.site, loaded.recon, Markdown(self._markdown if self._markdown is not None else {})
        )
        loaded.site.con.close()
        return True

    def close(self) -> None:
        """Forget the in-memory state (the on-disk record stays)."""
        if self._quick_con is not None:
            self._quick_con.close()
            self._quick_con = None
        self._context = None
        self._state = None
        self._cache = None
        self._markdown = None

    # The build ------------------------------------------------------------------------------------

    def run(self, changed: set[Path] | frozenset[Path] | None = None) -> BuildReport:
        """The build; raises :class:`BuildAborted` or another :class:`BuilderError` on problems.

        Paths given to a build that failed are rescanned by the next one too: the record of inputs
        is only updated by a build that succeeds."""
        if changed is not None:
            changed = set(changed) | self._unsettled
            self._unsettled = set(changed)
        report = self._run(changed)
        self._unsettled = set()
        return report

    def _run(self, changed: set[Path] | frozenset[Path] | None) -> BuildReport:
        from builder.config import load_config

        seconds: dict[str, float] = {}
        mark = time.perf_counter()

        def lap(name: str) -> None:
            nonlocal mark
            now = time.perf_counter()
            seconds[name] = seconds.get(name, 0.0) + now - mark
            mark = now

        self.config = config = load_config(self.config.root, self.config.out, verbose=self.config.verbose)
        self._load_state()
        state = self._state
        environment = environment_key(config, config.source_date_epoch)
        if state is not None and state.environment != environment:
            state = None  # another toolchain or day: nothing global can be trusted
        if state is not None and changed is not None:
            inputs = rescan_paths(config, state.inputs, set(changed)) or scan_inputs(config, state.inputs)
        else:
            inputs = scan_inputs(config, state.inputs if state is not None else None)
        damaged, extra = _output_changes(config.out, state) if state is not None else (set(), set())
        lap("scan")
        if state is not None and inputs.digests == state.inputs.digests and not damaged and not extra:
            from builder.output import remove_leftovers

            remove_leftovers(config.out)
            state.inputs = inputs
            self._save_state(state)
            return BuildReport(
                warnings=list(state.warnings), files=state.files, rows=state.rows, noop=True, seconds=seconds
            )
        return self._full(config, state, inputs, environment, damaged, extra, seconds, mark)

    def _full(
        self,
        config: SiteConfig,
        state: State | None,
        inputs: Inputs,
        environment: bytes,
        damaged: set[str],
        extra: set[str],
        seconds: dict[str, float],
        mark: float,
    ) -> BuildReport:
        from builder.loadcache import LoadCache
        from builder.pipeline import load_and_reconcile, output_stages

        def lap(name: str) -> None:
            nonlocal mark
            now = time.perf_counter()
            seconds[name] = seconds.get(name, 0.0) + now - mark
            mark = now

        # Parses and rendered markdown depend on the builder's code too: another version, a fresh cache.
        code = _h(
            environment,
            *(f"{k}\0".encode() + v for k, v in sorted(inputs.digests.items()) if k.startswith("@builder/")),
        )
        if self._cache_code != code:
            self._cache, self._markdown, self._cache_code = None, None, code
        cache = self._cache if self._cache is not None else LoadCache()
        self._cache = cache
        reused = self._reuse_loaded(config, state, inputs)
        loaded = reused or load_and_reconcile(config, cache=cache)
        lap("load")
        loaded.problems.raise_if_any()
        # The renderers are imported once the input is known to be valid (and timed as "prepare").
        from builder.content import Markdown
        from builder.deps import declared
        from builder.inputs import digest_bytes
        from builder.output import publish, remove_leftovers, update_in_place
        from builder.render import make_context, page_jobs

        assert loaded.recon is not None
        site = loaded.site
        markdown = Markdown(self._markdown if self._markdown is not None else {})
        ctx = make_context(
            site, loaded.recon, markdown, self._context.rows if reused and self._context else None
        )
        jobs = page_jobs(ctx)
        lap("prepare")

        previous = state.outputs if state is not None else {}
        glob = global_digest(inputs, environment)
        deps_index = DepIndex(inputs, cache, site)
        out = config.out

        def fingerprint(path: str, deps: tuple[str, ...], templates: tuple[str, ...]) -> bytes | None:
            parts: list[bytes | str] = [glob, path]
            for dep in sorted(set(deps)):
                value = deps_index.digest(dep)
                if value is None:
                    return None
                parts += [dep, value]
            for name in templates:
                parts += [name, inputs.digests.get(f"templates/{name}", b"-")]
            return _h(*parts)

        pending: list[int] = []
        kept: dict[str, Path] = {}
        records: dict[str, OutputRecord] = {}
        seen: set[str] = set()
        for index, (path, job) in enumerate(jobs):
            if path in seen:
                raise BuilderError(f"two pages would be written to {path}", "<builder>")
            seen.add(path)
            deps = declared(job)
            old = previous.get(path)
            if (
                deps is not None
                and old is not None
                and old.fingerprint is not None
                and path not in damaged
                and fingerprint(path, deps, old.templates) == old.fingerprint
            ):
                kept[path] = out / path
                records[path] = old
            else:
                pending.append(index)
        if self._quick_con is not None and (self.workers or _worker_count(len(pending))) > 1:
            # DuckDB is not fork-safe (see render_jobs): no connection of ours alive at fork time.
            self._quick_con.close()
            self._quick_con = None
        results = render_jobs(ctx, jobs, pending, self.progress, self.workers)
        failed = [r for r in results if r.error is not None]
        if failed:
            _raise_first(failed)
        fresh: dict[str, bytes] = dict(ctx.assets.files)
        fresh_prints: dict[str, bytes | None] = {}
        templates_of: dict[str, tuple[str, ...]] = {}
        for result in results:
            path, job = jobs[result.index]
            assert result.data is not None
            fresh[path] = result.data
            deps = declared(job)
            templates_of[path] = result.templates
            fresh_prints[path] = fingerprint(path, deps, result.templates) if deps is not None else None
        lap("render")

        files = OutputFiles(fresh, kept, out)
        memo = StageMemo(
            state.memo if state is not None else {},
            lambda p: p in previous and p not in damaged,
            out,
            glob,
            deps_index,
        )
        for name, stage in output_stages(site, ctx, memo):
            produced = stage(files)
            for path in produced:
                if path in fresh or path in kept:
                    raise BuilderError(f"two producers write {path}", "<builder>")
            fresh.update(produced)
            lap(name)

        # Publish: a fresh file whose bytes equal the kept one is linked, not written.
        write: dict[str, bytes] = {}
        link: dict[str, Path] = dict(kept)
        written: list[str] = []
        new_records: dict[str, OutputRecord] = dict(records)
        for path, data in fresh.items():
            old = previous.get(path)
            if data is KEPT:
                assert old is not None  # the memo only hands back files the previous build recorded
                link[path] = out / path
                new_records[path] = old
                continue
            digest = digest_bytes(data)
            if old is not None and old.digest == digest and path not in damaged:
                link[path] = out / path
                new_records[path] = OutputRecord(
                    fresh_prints.get(path), digest, templates_of.get(path, ()), old.stat
                )
            else:
                write[path] = data
                written.append(path)
                new_records[path] = OutputRecord(
                    fresh_prints.get(path), digest, templates_of.get(path, ()), (0, 0, 0)
                )
        removed = sorted(set(previous) - set(new_records))
        in_place = not self.atomic and state is not None and not damaged and not extra
        if in_place and (write or removed):
            update_in_place(write, removed, out, config.root)
            for path in write:
                st = os.stat(out / path)
                new_records[path].stat = (st.st_ino, st.st_size, st.st_mtime_ns)
        elif not in_place and (write or removed or damaged or extra or state is None):
            publish(write, out, config.root, reuse=link, trash=config.cache_dir / "trash")
            for path in write:
                st = os.stat(out / path)
                new_records[path].stat = (st.st_ino, st.st_size, st.st_mtime_ns)
        else:
            remove_leftovers(out)
        lap("write")

        rows = site.rows.num_rows
        warnings = sorted(loaded.problems.warnings)
        new_state = State(
            inputs, environment, new_records, warnings, len(new_records), rows, _dir_stat(out), memo.current
        )
        self._state = new_state
        markdown_cache = {k: v for k, v in markdown.cache.items() if k in markdown.used}
        self._markdown = markdown_cache
        cache.prune()
        self._save_all(new_state, cache, markdown_cache)
        lap("save")
        site.con.close()
        self._context = ctx if self.keep_context else None
        return BuildReport(
            written=sorted(written),
            removed=removed,
            warnings=warnings,
            files=len(new_records),
            rows=rows,
            rendered=len(results),
            reused=len(kept),
            cache_note=self._cache_note,
            seconds=seconds,
        )

    def _reuse_loaded(self, config: SiteConfig, state: State | None, inputs: Inputs) -> Loaded | None:
        """The last build's site and reconciliation when only templates changed since (a template
        edit in the preview re-renders pages, it does not reload 100,000 rows)."""
        old = self._context
        if old is None or state is None or old.site.config.root != config.root:
            return None
        changed = inputs.changed(state.inputs)
        if not changed or not all(key.startswith("templates/") for key in changed):
            return None
        import dataclasses

        import duckdb

        from builder.errors import Problems
        from builder.pipeline import Loaded

        con = duckdb.connect()
        con.register("rows", old.site.rows)
        site = dataclasses.replace(old.site, config=config, con=con)
        return Loaded(site, Problems(warnings=list(state.warnings)), old.recon)

    # Persistence ------------------------------------------------------------------------------------

    def _dir(self) -> Path:
        return state_dir(self.config.root, self.config.out)

    def _load_state(self) -> None:
        if self._loaded_from_disk or not self.persist:
            return
        self._loaded_from_disk = True
        folder = self._dir()
        try:
            state = _read_cache(folder / "state.pickle")
            load = _read_cache(folder / "load.pickle")
            if state is not None and not isinstance(state, State):
                raise CacheCorrupt("state.pickle holds something else")
            if state is None or load is None:
                return
            try:
                cache, markdown, rows_digest, code = load
            except (TypeError, ValueError):
                raise CacheCorrupt("load.pickle holds something else") from None
            from builder.loadcache import LoadCache

            if not isinstance(cache, LoadCache) or not isinstance(markdown, dict):
                raise CacheCorrupt("load.pickle holds something else")
            cache.rows.typed = self._read_rows(folder / "rows.arrow", rows_digest)
            self._saved_load = (
                id(cache.rows.typed),
                frozenset(cache.pages),
                frozenset(markdown),
                tuple(cache.rows.entries),
                code,
            )
            self._saved_typed, self._saved_rows_digest = cache.rows.typed, rows_digest
        except CacheCorrupt as exc:
            self._cache_note = f"build cache discarded ({exc}); built from scratch"
            self._discard(folder)
            return
        self._state, self._cache, self._markdown, self._cache_code = state, cache, markdown, code

    def _read_rows(self, path: Path, digest: bytes | None) -> Any:
        if digest is None:
            return None
        import pyarrow as pa

        try:
            data = path.read_bytes()
        except OSError:
            raise CacheCorrupt("rows.arrow is missing") from None
        if hashlib.blake2b(data, digest_size=32).digest() != digest:
            raise CacheCorrupt("rows.arrow fails its checksum")
        try:
            return pa.ipc.open_file(pa.py_buffer(data)).read_all()
        except pa.ArrowInvalid as exc:
            raise CacheCorrupt(f"rows.arrow cannot be read: {exc}") from None

    def _discard(self, folder: Path) -> None:
        for name in ("state.pickle", "load.pickle", "rows.arrow"):
            try:
                (folder / name).unlink()
            except OSError:
                pass

    def _save_state(self, state: State) -> None:
        if not self.persist:
            return
        try:
            folder = self._dir()
            folder.mkdir(parents=True, exist_ok=True)
            _write_cache(folder / "state.pickle", state)
        except OSError:
            pass  # a cache that cannot be written only costs speed

    def _save_all(self, state: State, cache: LoadCache, markdown: dict[str, Any]) -> None:
        """Write the record; the load cache only when it changed (it is most of the bytes)."""
        if not self.persist:
            return
        import pyarrow as pa

        folder = self._dir()
        try:
            folder.mkdir(parents=True, exist_ok=True)
            typed = cache.rows.typed
            signature = (
                id(typed),
                frozenset(cache.pages),
                frozenset(markdown),
                tuple(cache.rows.entries),
                self._cache_code,
            )
            if signature != self._saved_load:
                rows_digest = self._saved_rows_digest if typed is self._saved_typed else None
                if typed is not None and rows_digest is None:
                    sink = pa.BufferOutputStream()
                    with pa.ipc.new_file(sink, typed.schema) as writer:
                        writer.write_table(typed)
                    data = sink.getvalue().to_pybytes()
                    rows_digest = hashlib.blake2b(data, digest_size=32).digest()
                    tmp = folder / f".rows.arrow.{os.getpid()}.tmp"
                    tmp.write_bytes(data)
                    os.replace(tmp, folder / "rows.arrow")
                typed_saved, cache.rows.typed = cache.rows.typed, None
                try:
                    _write_cache(folder / "load.pickle", (cache, markdown, rows_digest, self._cache_code))
                finally:
                    cache.rows.typed = typed_saved
                self._saved_load, self._saved_typed, self._saved_rows_digest = signature, typed, rows_digest
            # state.pickle last: it vouches for the others.
            _write_cache(folder / "state.pickle", state)
        except OSError:
            self._saved_load = None
            self._discard(folder)

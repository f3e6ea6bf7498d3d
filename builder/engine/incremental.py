"""Incremental builds: rebuild only what a change affects, with the same bytes as a clean build.

The interface the dev server and ``build`` code against::

    engine = IncrementalBuilder(config)
    report = engine.build(changed_paths)   # None: "don't know what changed, look at everything"
    report.written, report.removed, report.problems, report.warnings

``build`` never raises for a problem in the site (content, data, templates, output folder): it
returns the problems and leaves the previous output as it was. :meth:`IncrementalBuilder.run` is
the same build raising them, as :func:`build` does. The preview also asks for the page of one saved
file first (:meth:`IncrementalBuilder.quick`), and may cancel a build before it writes anything
(``build(changed, commit=...)``), and saves the record when it is idle rather than after each build
(``build(changed, save_record=False)``, then :meth:`IncrementalBuilder.save_record`).

How a rebuild stays correct
    Every input is known by its content hash (:mod:`builder.engine.inputs`). What an earlier build
    computed is kept in one memo under content keys (:mod:`builder.engine.memo`): each file's parse,
    rendered bodies, each recipe's findings, row statuses, the files of output stages; the rows
    table keeps each unchanged row file's validated rows (:mod:`builder.engine.loadcache`). The
    render context is recomputed. Each page job and each output unit runs over reading views of the
    domain values (:mod:`builder.engine.reading`), which record the keys it reads; its record keeps
    them with their digests, the templates it loaded and everything global (the builder's code and
    toolchain, ``site.yaml``, ``data/*.yaml``, static assets, the build date). A page or unit whose
    keys' digests and published files are unchanged is not made again: its files are hard-linked
    into the new output. Publishing is atomic (:mod:`builder.engine.output`).

Where the record lives
    ``<root>/.cache/builder/incremental/<hash of the output path>/``: ``state.pickle`` (input and
    output digests, small: read by every build) and ``load.pickle`` + ``blobs.pickle`` (the memo) +
    ``rows.arrow`` (the load cache, :mod:`builder.engine.loadstore`), each with a checksum, read and written
    by :mod:`builder.engine.record`. Anything unreadable is discarded and the build starts clean.

Around it: the record and the no-op check (:mod:`builder.engine.build_state`), dependency digests and the
reuse of earlier outputs (:mod:`builder.engine.depindex`), rendering in worker processes
(:mod:`builder.engine.render_pool`).
"""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from builder.content.markdown import Markdown, RenderedBody
from builder.engine.build_state import (
    BuildReport,
    OutputRecord,
    State,
    dir_stat,
    environment_key,
    output_changes,
    state_dir,
)
from builder.engine.depindex import DepIndex, StageMemo, digest_parts, global_digest
from builder.engine.derived import Derived
from builder.engine.inputs import Inputs, rescan_paths, scan_inputs
from builder.engine.memo import Memo
from builder.engine.page_reuse import Fingerprints, sort_jobs
from builder.engine.pipeline import Timings
from builder.engine.publish_plan import Fresh, apply, plan
from builder.engine.record import Record
from builder.engine.render_pool import Progress, map_in_workers, raise_first, render_jobs, worker_count
from builder.errors import BuildAborted, BuilderError, Problem, Problems

if TYPE_CHECKING:
    from builder.config import SiteConfig
    from builder.data.load import Site
    from builder.engine.loadcache import LoadCache
    from builder.engine.pipeline import Loaded
    from builder.site.context import RenderContext


def _render_body(markdown: Markdown, item: tuple[str, str]) -> tuple[str, RenderedBody]:
    key, body = item
    return key, markdown.render_body(body, faq=True, key=key)


class _MemoBodies(Mapping[str, RenderedBody]):
    """The memo's rendered bodies, ``("markdown", key)``, as the mapping :class:`Markdown` looks in."""

    def __init__(self, memo: Memo) -> None:
        self._memo = memo

    def __getitem__(self, key: str) -> RenderedBody:
        found: RenderedBody | None = self._memo.get(("markdown", key))
        if found is None:
            raise KeyError(key)
        return found

    def __iter__(self) -> Iterator[str]:
        return (key[1] for key in self._memo.keys("markdown"))

    def __len__(self) -> int:
        return sum(1 for _ in self._memo.keys("markdown"))


def kept_markdown(memo: Memo) -> Markdown:
    """The build's markdown, knowing the bodies earlier builds rendered."""
    return Markdown(known=_MemoBodies(memo))


def keep_bodies(markdown: Markdown, memo: Memo) -> None:
    """Keep in the memo every body this build used (rendered here or by the render workers)."""
    for key in markdown.used:
        if not memo.use(("markdown", key)) and key in markdown.cache:
            memo.put(("markdown", key), markdown.cache[key])


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
        self._quick_site: Site | None = None
        """The last build's site with every file a quick page applied since (None: none)."""
        self._applied: dict[str, bytes] = {}
        """Files quick pages applied since the last build: path → digest of the bytes applied."""
        self._last_quick: str | None = None
        """The recipe of the last quick page (:meth:`rehearse` renders it again)."""
        self.persist = persist
        self.workers = workers
        self.progress = progress
        self._record = Record(state_dir(config.root, config.out), persist=persist)
        self._state: State | None = None
        self._cache: LoadCache | None = None
        self._cache_code: bytes | None = None
        """Builder code and toolchain the load cache was made with."""
        self._unsaved: Literal["state", "all"] | None = None
        """What of the in-memory record is newer than the one on disk: its inputs and outputs alone
        (after a no-op build), or the load cache too."""

    # Public ---------------------------------------------------------------------------------------

    def build(
        self,
        changed: set[Path] | frozenset[Path] | None = None,
        *,
        commit: Commit | None = None,
        save_record: bool = True,
    ) -> BuildReport:
        """Bring the output up to date; ``changed`` lists source paths known to have changed.

        Problems come back in the report; nothing a site can contain makes this raise. ``commit``
        is asked once, before the build writes anything (output or record): when it says no, the
        build stops there, as if it had not run (``report.cancelled``); the next build redoes it.

        With ``save_record=False`` the build's record is kept in memory only, until
        :meth:`save_record`: the preview saves it once nobody waits.
        """
        try:
            return self.run(changed, commit=commit, save_record=save_record)
        except BuildCancelled:
            return BuildReport(cancelled=True, cache_note=self._record.note)
        except BuildAborted as exc:
            return BuildReport(
                problems=list(exc.problems), warnings=list(exc.warnings), cache_note=self._record.note
            )
        except BuilderError as exc:
            return BuildReport(problems=[exc.problem()], cache_note=self._record.note)

    def quick(self, changed: Collection[Path]) -> list[str] | None:
        """Write at once the one recipe page that the saves in ``changed`` change, as a build renders
        it: the kept site (the last build's, with every save answered here since) updated with the saved
        recipe or row file (:func:`builder.data.load.replace_recipe`, :func:`~builder.data.load.with_row_file`),
        that recipe's rows reconciled (findings are per recipe) and its page rendered by
        :func:`builder.site.render.render_recipe`.

        Returns the output paths written, or ``None`` when there is no exact quick answer: not exactly
        one file, among ``changed`` and the paths of builds that did not finish, differs from what the
        kept site holds; or that file is not a recipe or row file, has a problem, adds or removes a
        recipe or page, or touches two recipes. Either way a :meth:`build` must follow; the page's
        record gets the new bytes' digest, so that build rewrites (and reports) it only if its own
        rendering differs.
        """
        from builder.data.load import replace_recipe, with_row_file
        from builder.engine.inputs import digest_bytes
        from builder.engine.output import update_in_place

        state, ctx = self._state, self._context
        if state is None or ctx is None or self.atomic:
            return None
        saved = self._saved_file({*changed, *self._unsettled}, state)
        if saved is None:
            return None
        rel, data = saved
        site = self._quick_site or ctx.site
        problems = Problems()
        con = self.open_connection()
        try:
            if rel.startswith("content/recipes/"):
                updated = replace_recipe(site, rel, data, problems)
                slugs = {os.path.splitext(rel.rsplit("/", 1)[1])[0]}
            else:
                updated = with_row_file(site, rel, data, problems, con)
                slugs = _recipes_of(site, rel) | _recipes_of(updated, rel)
        except ValueError:  # not a file the load reads as one
            return None
        if problems.errors or problems.warnings or len(slugs) != 1:
            return None
        [slug] = slugs
        path = f"recipes/{slug}/index.html"
        if slug not in site.recipes or slug not in updated.recipes or path not in state.outputs:
            return None  # a new or removed recipe changes other pages first
        try:
            html = _render_recipe_alone(ctx, updated, slug, con)
        finally:
            updated.close_connection()  # none may be left open (the preview forks)
        if html is None:
            return None
        self._quick_site = updated
        self._applied[rel] = digest_bytes(data)
        self._last_quick = slug
        if state.outputs[path].digest == digest_bytes(html):
            return []
        update_in_place({path: html}, (), self.config.out, self.config.root)
        st = os.stat(self.config.out / path)
        old = state.outputs[path]
        state.outputs[path] = OutputRecord(
            old.fingerprint,
            digest_bytes(html),
            old.templates,
            (st.st_ino, st.st_size, st.st_mtime_ns),
            old.deps,
        )
        return [path]

    def _saved_file(self, paths: set[Path], state: State) -> tuple[str, bytes] | None:
        """The one recipe or row file among ``paths`` whose bytes differ from what the kept site holds
        (the last build's inputs, or what a quick page applied since), with its bytes; None when
        there is not exactly one such file, or something else differs."""
        from builder.engine.inputs import digest_bytes
        from builder.files import InputError, read_regular
        from builder.limits import CONTENT_FILE_BYTES, ROW_FILE_BYTES

        root = self.config.root.resolve()
        differ: list[tuple[str, bytes]] = []
        for path in paths:
            try:
                rel = path.resolve().relative_to(root).as_posix()
            except (OSError, ValueError):
                return None  # outside the root: a full build says what it is
            rows = rel.startswith("data/rows/")
            try:
                data: bytes | None = read_regular(path, ROW_FILE_BYTES if rows else CONTENT_FILE_BYTES)
            except FileNotFoundError:
                data = None
            except (OSError, InputError):
                return None
            held = self._applied.get(rel, state.inputs.digests.get(rel))
            if data is None and held is None:
                if any(key.startswith(f"{rel}/") for key in state.inputs.digests):
                    return None  # a folder removed, with the inputs it held
                continue
            if data is None or digest_bytes(data) != held:
                if data is None or not (rows or (rel.startswith("content/recipes/") and rel.count("/") == 2)):
                    return None
                differ.append((rel, data))
        return differ[0] if len(differ) == 1 else None

    def open_connection(self) -> Any:
        """The DuckDB connection quick pages use (opened now if need be: it takes tens of ms)."""
        if self._quick_con is None:
            import duckdb

            # Quick pages share one, single-threaded (tiny data).
            self._quick_con = duckdb.connect()
            self._quick_con.execute("SET threads = 1")
        return self._quick_con

    def rehearse(self) -> None:
        """Render the last quick page's recipe again and drop it. A process forked to answer the next
        save (the preview's standby) calls it while it waits: its first render would otherwise copy
        every memory page it touches, shared with the process it was forked from, while the author
        waits (about 15 ms at 1,000 recipes); authors mostly save the same recipe again."""
        import dataclasses

        ctx, slug = self._context, self._last_quick
        if ctx is None or slug is None:
            return
        site = dataclasses.replace(self._quick_site or ctx.site, _con=None)
        if slug not in site.recipes:
            return
        try:
            _render_recipe_alone(ctx, site, slug, self.open_connection())
        finally:
            site.close_connection()

    def close_connection(self) -> None:
        """Close the quick pages' DuckDB connection (before a fork: DuckDB is not fork-safe)."""
        if self._quick_con is not None:
            self._quick_con.close()
            self._quick_con = None

    def warm(self) -> bool:
        """Load the site and its render context without building, for :meth:`quick` after a no-op
        start-up (which loads nothing). True when a context is ready."""
        if self._context is not None:
            return True
        if self._state is None or not self.keep_context:
            return False
        from builder.engine.loadcache import LoadCache
        from builder.engine.pipeline import load_and_reconcile
        from builder.site.render import make_context

        cache = self._cache if self._cache is not None else LoadCache()
        self._cache = cache
        loaded = load_and_reconcile(self.config, cache=cache)
        if loaded.problems.errors or loaded.recon is None:
            loaded.site.close_connection()
            return False
        try:
            self._context = make_context(loaded.site, loaded.recon, kept_markdown(cache.memo))
        except BuildAborted:  # a figure no row supports: the full build reports it
            return False
        finally:
            loaded.site.close_connection()
        self._quick_site, self._applied = None, {}
        return True

    def save_record(self) -> None:
        """Save the record of the builds since the last save, if any (see :meth:`build`)."""
        if self._unsaved is None or self._state is None:
            return
        if self._unsaved == "state":
            self._record.save_state(self._state)  # a no-op build: the load cache is as it was
        else:
            assert self._cache is not None
            self._record.save(self._state, self._cache, self._cache_code)
        self._unsaved = None

    def close(self) -> None:
        """Save the record of builds not saved yet (:meth:`save_record`), then forget the in-memory state."""
        self.save_record()
        self.close_connection()
        self._context = None
        self._quick_site, self._applied = None, {}
        self._state = None
        self._cache = None

    # The build ------------------------------------------------------------------------------------

    def run(
        self,
        changed: set[Path] | frozenset[Path] | None = None,
        *,
        commit: Commit | None = None,
        save_record: bool = True,
    ) -> BuildReport:
        """The build; raises :class:`BuildAborted` or another :class:`BuilderError` on problems, and
        :class:`BuildCancelled` when ``commit`` says no (see :meth:`build`).

        Paths given to a build that failed or was cancelled are rescanned by the next one too: the
        record of inputs is only updated by a build that succeeds."""
        if changed is not None:
            changed = set(changed) | self._unsettled
            self._unsettled = set(changed)
        cache = self._cache
        stages = cache.memo.entries("stage") if cache is not None else {}
        try:
            report = self._run(changed, commit or _always)
            if save_record:
                started = time.perf_counter()
                self.save_record()
                report.seconds["save"] = time.perf_counter() - started
        except BaseException:
            # The output stages' entries name files of the published site: those this build made
            # or made again were not published (it stopped before, or while, publishing), so they
            # are forgotten.
            if self._cache is not None:
                before = stages if self._cache is cache else {}
                for key, entry in self._cache.memo.entries("stage").items():
                    if before.get(key) is not entry:
                        self._cache.memo.drop(key)
            raise
        self._unsettled = set()
        return report

    def _run(self, changed: set[Path] | frozenset[Path] | None, commit: Commit) -> BuildReport:
        from builder.config import load_config

        seconds: dict[str, float] = {}
        mark = time.perf_counter()

        def lap(name: str) -> None:
            nonlocal mark
            now = time.perf_counter()
            seconds[name] = seconds.get(name, 0.0) + now - mark
            mark = now

        self.config = config = load_config(self.config.root, self.config.out, verbose=self.config.verbose)
        restored = self._record.read()
        if restored is not None:
            self._state, self._cache = restored.state, restored.cache
            self._cache_code = restored.code
        state = self._state
        environment = environment_key(config, config.source_date_epoch)
        if state is not None and state.environment != environment:
            state = None  # another toolchain or day: nothing global can be trusted
        if state is not None and changed is not None:
            inputs = rescan_paths(config, state.inputs, set(changed)) or scan_inputs(config, state.inputs)
        else:
            inputs = scan_inputs(config, state.inputs if state is not None else None)
        if state is None:
            damaged, extra = set[str](), set[str]()
        else:
            damaged, extra = output_changes(config.out, state)
        lap("scan")
        if state is not None and inputs.digests == state.inputs.digests and not damaged and not extra:
            from builder.engine.output import remove_leftovers

            if not commit():
                raise BuildCancelled
            remove_leftovers(config.out)
            state.inputs = inputs
            self._unsaved = self._unsaved or "state"
            self._quick_site, self._applied = None, {}  # the kept site is the inputs' again
            return BuildReport(
                warnings=list(state.warnings), files=state.files, rows=state.rows, noop=True, seconds=seconds
            )
        return self._full(config, state, inputs, environment, damaged, extra, seconds, mark, commit)

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
        commit: Commit,
    ) -> BuildReport:
        from builder.engine.loadcache import LoadCache
        from builder.engine.pipeline import Stage, load_and_reconcile, output_stages

        def lap(name: str) -> None:
            nonlocal mark
            now = time.perf_counter()
            seconds[name] = seconds.get(name, 0.0) + now - mark
            mark = now

        # Parses and rendered markdown depend on the builder's code too: another version, a fresh cache.
        code = digest_parts(
            environment,
            *(f"{k}\0".encode() + v for k, v in sorted(inputs.digests.items()) if k.startswith("@builder/")),
        )
        if self._cache_code != code:
            self._cache, self._cache_code = None, code
            self._record.forget_blobs()
        cache = self._cache if self._cache is not None else LoadCache()
        self._cache = cache
        changed = inputs.changed(state.inputs) if state is not None else None
        reused = self._reuse_loaded(config, state, inputs, changed, cache)
        if not reused:
            cache.scanned = {
                k: v for k, v in inputs.digests.items() if k.startswith(("data/rows/", "content/"))
            }
        loaded = reused or load_and_reconcile(config, cache=cache)
        lap("load")
        loaded.problems.raise_if_any()
        # The renderers are imported once the input is known to be valid (and timed as "prepare").
        from builder.engine.reading import reading_context, reading_summary, value_digests
        from builder.site.render import derived_makers, import_renderers, make_context, page_jobs

        assert loaded.recon is not None
        site = loaded.site
        previous = state.outputs if state is not None else {}
        glob = global_digest(inputs, environment)
        if state is None or state.glob != glob:
            changed = None  # the earlier digests are another build's: nothing can be carried over
        recon = loaded.recon
        values: dict[str, Callable[[str], bytes | None]] = {}  # filled once the context is made
        earlier_digests = state.dep_digests if state is not None else None

        # Every finding, by their digest: none is a value of its own.
        def findings() -> str | None:
            return "none" if recon.finding_counts()[0] == 0 else recon.findings_digest()

        deps_index = DepIndex(inputs, cache, site, earlier_digests, findings, values)
        memo = StageMemo(cache.memo, lambda p: p in previous and p not in damaged, glob, deps_index)
        changed_templates = None if changed is None else {k for k in changed if k.startswith("templates/")}
        prints = Fingerprints(glob, deps_index, inputs.digests, changed_templates)
        markdown = kept_markdown(cache.memo)
        out = config.out
        earlier = self._context if reused else None
        ctx = make_context(site, loaded.recon, markdown, earlier.rows if earlier else None)
        if self.persist:
            from builder.engine.template_cache import template_cache

            ctx.env.bytecode_cache = template_cache(config.cache_dir, code)
        # What pages need of every body (the FAQ's questions, the search records' names) and the
        # search stage's plan come from the same records: worked out once.
        from builder.site.content_summary import summarize
        from builder.site.faq import faq_entries
        from builder.site.search import SearchPlan, page_records

        # Every recipe body is needed before the pages (the FAQ counts questions): those no build
        # rendered yet (all of them, in a first build) render in forked workers.
        todo = list(
            markdown.missing((site.recipes[slug].doc for slug in sorted(site.recipes)), faq=True).items()
        )
        if todo:
            site.close_connection()  # DuckDB is not fork-safe
            task = functools.partial(_render_body, markdown)
            markdown.add(dict(map_in_workers(task, todo, self.workers or worker_count(len(todo)))))
        entries = faq_entries(site, markdown)
        search_plan = SearchPlan.of(page_records(site, markdown, entries))
        # Pages render from reading views of the context: each records what it reads.
        summary = summarize(site, markdown, search_plan, entries)
        values.update(value_digests(ctx, summary))
        reading = reading_context(ctx)
        derived = Derived(cache.memo, glob, deps_index, derived_makers(reading))
        values.update(derived.value_digests())
        jobs = page_jobs(reading, reading_summary(summary))
        lap("prepare")

        out_prefix = f"{os.fspath(out)}/"
        sorted_jobs = sort_jobs(jobs, previous, damaged, prints, out_prefix)
        kept, records, pending = sorted_jobs.kept, sorted_jobs.records, sorted_jobs.pending
        workers = self.workers or worker_count(len(pending))
        if self._quick_con is not None and workers > 1:
            # DuckDB is not fork-safe (see render_jobs): no connection of ours alive at fork time.
            self._quick_con.close()
            self._quick_con = None
        for key in list(cache.memo.keys("chart-spec")):
            spec = cache.memo.get(key)
            if spec is not None:
                ctx.specs.by_kind.setdefault((key[1], key[2]), spec)
        forks = workers > 1 and len(pending) > 1
        if forks:
            import_renderers(jobs[i][0] for i in pending)
        # The output stages read the paths of the pages, not the pages: when the pages render in this
        # process they run beside it, on threads (Pagefind is a process of its own, and Arrow and
        # DuckDB let go of the GIL while they write); render workers are forked first, as a child
        # must not inherit a thread inside Arrow or DuckDB.
        from concurrent.futures import ThreadPoolExecutor

        paths = sorted({*ctx.assets.files, *(path for path, _ in jobs)})
        producers = output_stages(reading.site, reading, search_plan)

        def make(stage: Stage) -> dict[str, bytes]:
            return memo(stage(paths))

        pool = ThreadPoolExecutor(max_workers=len(producers), thread_name_prefix="stage")
        running = [] if forks else [pool.submit(make, stage) for _, stage in producers]
        try:
            results = render_jobs(ctx, jobs, pending, self.progress, self.workers, derived)
            running = running or [pool.submit(make, stage) for _, stage in producers]
            for (kind, quantity), spec in ctx.specs.by_kind.items():
                if not cache.memo.use(("chart-spec", kind, quantity)):
                    cache.memo.put(("chart-spec", kind, quantity), spec)
            failed = [r for r in results if r.error is not None]
            if failed:
                raise_first(failed)
            made = Fresh(dict(ctx.assets.files))
            fresh = made.files
            for result in results:
                path = jobs[result.index][0]
                assert result.data is not None
                fresh[path] = result.data
                made.digests[path] = result.digest
                made.templates[path] = result.templates
                made.fingerprints[path] = prints.of(path, result.reads, result.templates)
                made.deps[path] = result.reads
            lap("render")
            produced_by_stages = [future.result() for future in running]
        finally:
            pool.shutdown(wait=True)
        in_place = not self.atomic and state is not None and not damaged and not extra
        for produced in produced_by_stages:
            for path in produced:
                if path in fresh or path in kept:
                    raise BuilderError(f"two producers write {path}", "<builder>")
            fresh.update(produced)
        lap("output")

        # Publish: a fresh file whose bytes equal the kept one is linked, not written.
        if not commit():
            site.close_connection()
            raise BuildCancelled
        published = plan(made, records, previous, damaged, out_prefix)
        new_records = published.records
        apply(
            published,
            out,
            config.root,
            in_place=in_place,
            tree_changed=bool(damaged or extra) or state is None,
            trash=config.cache_dir / "trash",
            spare=self._record.spare,
        )
        lap("write")

        rows = site.rows.num_rows
        warnings = sorted(loaded.problems.warnings)
        new_state = State(
            inputs,
            environment,
            new_records,
            warnings,
            len(new_records),
            rows,
            dir_stat(out),
            glob,
            deps_index.digests,
        )
        self._state = new_state
        keep_bodies(markdown, cache.memo)
        cache.settle()  # what the load left to store, stored before the next load replaces it
        self._unsaved = "all"
        site.close_connection()
        self._context = ctx if self.keep_context else None
        self._quick_site, self._applied = None, {}
        return BuildReport(
            written=sorted(published.write),
            removed=published.removed,
            warnings=warnings,
            files=len(new_records),
            rows=rows,
            rendered=len(results),
            reused=len(kept),
            cache_note=self._record.note,
            seconds=seconds,
        )

    def _reuse_loaded(
        self,
        config: SiteConfig,
        state: State | None,
        inputs: Inputs,
        changed: set[str] | None,
        cache: LoadCache,
    ) -> Loaded | None:
        """The last build's site and reconciliation when only templates changed since (a template
        edit in the preview re-renders pages, it does not reload 100,000 rows)."""
        old = self._context
        if old is None or state is None or changed is None or old.site.config.root != config.root:
            return None
        if not changed or not all(key.startswith("templates/") for key in changed):
            return None
        import dataclasses

        from builder.engine.pipeline import Loaded
        from builder.errors import Problems

        # What the last load and reconciliation kept is this build's too: used again, as a load
        # would use it (a build keeps only what it used).
        memo = cache.memo
        for key in list(memo.keys("page")):
            if inputs.digests.get(key[1]) == key[2]:
                memo.use(key)
        # The memo holds only what the last build used (Memo.settled): its findings and statuses.
        for key in [*memo.keys("findings"), *memo.keys("statuses")]:
            memo.use(key)
        site = dataclasses.replace(old.site, config=config, _con=None)  # its own connection, when queried
        return Loaded(site, Problems(warnings=list(state.warnings)), old.recon)


Commit = Callable[[], bool]
"""Asked before a build writes anything: may it? (See :meth:`IncrementalBuilder.build`.)"""


def _always() -> bool:
    return True


class BuildCancelled(Exception):
    """A build stopped before writing anything, because its ``commit`` said no."""


def _recipes_of(site: Site, rel: str) -> set[str]:
    """The recipes the rows of the row file ``rel`` name in ``site``."""
    import bisect

    import numpy as np
    import pyarrow.compute as pc

    from builder.data.rows import row_file_order

    files = site.row_files
    at = bisect.bisect_left([row_file_order(f.source.rel) for f in files], row_file_order(rel))
    if at == len(files) or files[at].source.rel != rel:
        return set()
    file_ids = site.rows.column("file_id").to_numpy()
    start, stop = np.searchsorted(file_ids, at, "left"), np.searchsorted(file_ids, at, "right")
    return set(pc.unique(site.rows.slice(int(start), int(stop - start)).column("recipe")).to_pylist())


def _render_recipe_alone(ctx: RenderContext, site: Site, slug: str, con: Any) -> bytes | None:
    """The page of ``slug`` as a build of ``site`` renders it, from ``ctx`` (an earlier build's
    context: its templates, markdown and assets) and that recipe's rows reconciled on their own; None
    when a build would stop on a problem instead (an annotation, a figure no row supports)."""
    import dataclasses

    import pyarrow.compute as pc

    from builder.analysis.annotations import load_annotations
    from builder.analysis.reconcile import reconcile_rows
    from builder.data.model_slugs import comparison_slugs
    from builder.site.prose import bind_figures
    from builder.site.render import render_recipe
    from builder.site.views import case_studies_by_recipe, rows_by_recipe

    problems = Problems()
    annotations = [
        note
        for note in load_annotations(site.config.root, site.recipes, problems, site.recipe_files)
        if note.entry.recipe == slug
    ]
    # Findings and statuses are per recipe: the recipe's rows alone (their ids kept) give its own.
    mine = dataclasses.replace(
        site, rows=site.rows.filter(pc.equal(site.rows.column("recipe"), slug)), _con=con
    )
    con.register("rows", mine.rows)
    try:
        recon = reconcile_rows(mine, annotations, problems)
    finally:
        con.unregister("rows")
    if problems.errors:
        return None
    rows = _RowsOf(site, rows_by_recipe(mine))
    doc = site.recipes[slug].doc
    if "{{" in doc.body:
        figures, failed = bind_figures(site, rows, ctx.markdown, pages=[(doc, slug, slug)])
        if failed:
            return None
        ctx.markdown.bind({**ctx.markdown.bound, **figures})
    # What the context derives from the site, derived again where its input changed.
    earlier = ctx.site
    same_models = site.recipes is earlier.recipes or [r.meta.model for r in site.recipes.values()] == [
        r.meta.model for r in earlier.recipes.values()
    ]
    quick = dataclasses.replace(
        ctx,
        site=site,
        recon=recon,
        rows=rows,
        cases_by_recipe=(
            ctx.cases_by_recipe if site.case_studies is earlier.case_studies else case_studies_by_recipe(site)
        ),
        comparisons=ctx.comparisons if same_models else comparison_slugs(site),
        node_hw=ctx.node_hw if site.nodes is earlier.nodes else site.node_hardware(),
    )
    return render_recipe(quick, slug)


class _RowsOf(Mapping[str, list[dict[str, Any]]]):
    """A site's rows by recipe (:func:`builder.site.views.rows_by_recipe`), one recipe's given
    already: the others are grouped only if something asks for them (a figure quoting them)."""

    def __init__(self, site: Site, given: Mapping[str, list[dict[str, Any]]]) -> None:
        self._site = site
        self._given = given
        self._all: Mapping[str, list[dict[str, Any]]] | None = None

    def _every(self) -> Mapping[str, list[dict[str, Any]]]:
        if self._all is None:
            from builder.site.views import rows_by_recipe

            self._all = rows_by_recipe(self._site)
        return self._all

    def __getitem__(self, slug: str) -> list[dict[str, Any]]:
        return self._given[slug] if slug in self._given else self._every()[slug]

    def __contains__(self, slug: object) -> bool:
        return slug in self._given or slug in self._every()

    def __iter__(self) -> Iterator[str]:
        return iter(self._every())

    def __len__(self) -> int:
        return len(self._every())


@dataclass
class BuildResult:
    files: int
    rows: int
    warnings: list[Problem]
    timings: Timings


def build(config: SiteConfig, *, cache: bool = True, workers: int | None = None) -> BuildResult:
    """Build the site into ``config.out``; raise :class:`BuildAborted` leaving the old site untouched.

    The build is incremental (:class:`IncrementalBuilder`): with ``cache`` it reuses and keeps its
    record in ``<root>/.cache/builder/``; the output is the same bytes either way.
    """
    report = IncrementalBuilder(config, persist=cache, workers=workers).run(None)
    timings = Timings(dict(report.seconds))
    return BuildResult(report.files, report.rows, report.warnings, timings)

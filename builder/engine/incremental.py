"""Incremental builds: rebuild only what a change affects, with the same bytes as a clean build.

The interface the dev server and ``build`` code against::

    engine = IncrementalBuilder(config)
    report = engine.build(changed_paths)   # None: "don't know what changed, look at everything"
    report.written, report.removed, report.problems, report.warnings

``build`` never raises for a problem in the site (content, data, templates, output folder): it
returns the problems and leaves the previous output as it was. :meth:`IncrementalBuilder.run` is
the same build raising them, as :func:`builder.engine.pipeline.build` always has.

How a rebuild stays correct
    Every input is known by its content hash (:mod:`builder.engine.inputs`). Loading reuses each
    unchanged file's parse and validated rows (:mod:`builder.data.loadcache`); reconciliation and the
    render context are recomputed. Each page job may declare what it reads (:mod:`builder.site.deps`);
    its *fingerprint* is a hash of those inputs, of the templates it loaded last time (recorded while
    it rendered) and of everything global (the builder's code and toolchain, ``site.yaml``,
    ``data/*.yaml``, static assets, the build date). A page whose fingerprint and published file are
    unchanged is not rendered: its file is hard-linked into the new output. A job that declares
    nothing is rendered every time. Producers that read the rendered pages (downloads, search) run
    on every build that renders. Publishing is atomic (:mod:`builder.engine.output`).

Where the record lives
    ``<root>/.cache/builder/incremental/<hash of the output path>/``: ``state.pickle`` (input and
    output digests, small: read by every build) and ``load.pickle`` + ``blobs.pickle`` +
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
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from builder.engine.build_state import (
    BuildReport,
    OutputRecord,
    OutputWalk,
    QuickScan,
    State,
    dir_stat,
    environment_key,
    output_changes,
    state_dir,
)
from builder.engine.depindex import (
    OutputFiles,
    digest_parts,
)
from builder.engine.inputs import Inputs, rescan_paths, scan_inputs
from builder.engine.page_reuse import Fingerprints, sort_jobs
from builder.engine.publish_plan import Fresh, WriteAhead, apply, plan
from builder.engine.record import Record
from builder.engine.render_pool import Progress, raise_first, render_jobs, worker_count
from builder.engine.stage_setup import StageSetup, begin_stages, fork_search, stage_setup
from builder.errors import BuildAborted, BuilderError

if TYPE_CHECKING:
    from builder.analysis.reconcile import Reconciliation
    from builder.config import SiteConfig
    from builder.content.markdown import Markdown, Prerendering, RenderedBody
    from builder.data.load import Site
    from builder.data.loadcache import LoadCache
    from builder.engine.early_stages import EarlyStages
    from builder.engine.output import Linker, Staging
    from builder.engine.pipeline import Loaded
    from builder.site.context import RenderContext
    from builder.site.deps import Reuse
    from builder.site.downloads import SiteWideAhead


SUMMARY_CHILD_RECIPES = 200
"""From this many recipes, a build without a search child works out the content summary in a
forked child of its own (≈ 0.15 s of Python at 1,000 recipes, beside the render context's)."""

FEW_CHANGES = 4
"""A rebuild whose changed inputs are at most this many row files and content pages is expected to
render few pages, in this process: it begins ``rows.arrow`` and the site-wide downloads on threads
as soon as the rows' statuses are known (see ``_begin_downloads``)."""


def few_changes(changed: set[str] | None, output_changed: bool, workers: int | None) -> bool:
    """Whether a rebuild is expected to render few pages, in this process (see :data:`FEW_CHANGES`):
    a guess (a wrong one costs time, not correctness: threads begun early are waited for before a
    fork)."""
    if changed is None or output_changed:
        return False
    if workers == 1:
        return True  # renders in this process whatever it renders
    return 0 < len(changed) <= FEW_CHANGES and all(k.startswith(("data/rows/", "content/")) for k in changed)


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
        self._record = Record(state_dir(config.root, config.out), persist=persist)
        self._state: State | None = None
        self._cache: LoadCache | None = None
        self._markdown: dict[str, RenderedBody] | None = None
        self._cache_code: bytes | None = None
        """Builder code and toolchain the load cache was made with."""
        self._early: EarlyStages | None = None
        """Stages started in a child by the build under way."""
        self._linker: Linker | None = None
        """The output tree the build under way has begun."""
        self._prerendering: Prerendering | None = None
        """A first build's recipe bodies, being rendered while it reconciles."""
        self._write_ahead: WriteAhead | None = None
        """The files the build under way writes into its tree while its last stages finish."""
        self._ahead: SiteWideAhead | None = None
        """The site-wide downloads of the build under way, begun before its render."""

    # Public ---------------------------------------------------------------------------------------

    def build(self, changed: set[Path] | frozenset[Path] | None = None) -> BuildReport:
        """Bring the output up to date; ``changed`` lists source paths known to have changed.

        Problems come back in the report; nothing a site can contain makes this raise.
        """
        try:
            return self.run(changed)
        except BuildAborted as exc:
            return BuildReport(
                problems=list(exc.problems), warnings=list(exc.warnings), cache_note=self._record.note
            )
        except BuilderError as exc:
            return BuildReport(problems=[exc.problem()], cache_note=self._record.note)

    def quick(self, source: Path, data: bytes) -> list[str] | None:
        """Write at once the one recipe page that saving ``data`` in ``source`` changes
        (:mod:`builder.engine.quickpage`).

        Returns the output paths written, or ``None`` when there is no quick answer; either way a
        :meth:`build` must follow. The page's record gets the new bytes' digest, so that build
        rewrites (and reports) it only if its own rendering differs.
        """
        from builder.engine.inputs import digest_bytes
        from builder.engine.output import update_in_place
        from builder.engine.quickpage import quick_recipe_page

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
                old.fingerprint,
                digest_bytes(data),
                old.templates,
                (st.st_ino, st.st_size, st.st_mtime_ns),
                old.deps,
            )
        return sorted(pages)

    def warm(self) -> bool:
        """Load the site and its render context without building, for :meth:`quick` after a no-op
        start-up (which loads nothing). True when a context is ready."""
        if self._context is not None:
            return True
        if self._state is None or not self.keep_context:
            return False
        from builder.content.markdown import Markdown
        from builder.data.loadcache import LoadCache
        from builder.engine.pipeline import load_and_reconcile
        from builder.site.render import make_context

        cache = self._cache if self._cache is not None else LoadCache()
        self._cache = cache
        loaded = load_and_reconcile(self.config, cache=cache)
        if loaded.problems.errors or loaded.recon is None:
            loaded.site.close_connection()
            return False
        self._context = make_context(
            loaded.site, loaded.recon, Markdown(self._markdown if self._markdown is not None else {})
        )
        loaded.site.close_connection()
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

    def run(
        self, changed: set[Path] | frozenset[Path] | None = None, *, scan: QuickScan | None = None
    ) -> BuildReport:
        """The build; raises :class:`BuildAborted` or another :class:`BuilderError` on problems.

        Paths given to a build that failed are rescanned by the next one too: the record of inputs
        is only updated by a build that succeeds. ``scan``: what :func:`builder.engine.build_state.quick_scan`
        just read and scanned (``build`` asks it first), not read and scanned again."""
        if changed is not None:
            changed = set(changed) | self._unsettled
            self._unsettled = set(changed)
        try:
            report = self._run(changed, scan)
        finally:
            if self._early is not None:
                self._early.cancel()  # stages a failed build did not wait for
                self._early = None
            if self._prerendering is not None:
                self._prerendering.cancel()  # bodies a failed build did not wait for
                self._prerendering = None
            if self._write_ahead is not None:
                self._write_ahead.abandon()  # a tree begun but not published
                self._write_ahead = None
            if self._linker is not None:
                self._linker.abandon()
                self._linker = None
            self._record.abandon_rows()
            if self._ahead is not None:
                self._ahead.close()  # its threads finish (a failed build did not take the files)
                self._ahead = None
        self._unsettled = set()
        return report

    def _run(self, changed: set[Path] | frozenset[Path] | None, scan: QuickScan | None = None) -> BuildReport:
        from builder.config import load_config

        seconds: dict[str, float] = {}
        mark = time.perf_counter()

        def lap(name: str) -> None:
            nonlocal mark
            now = time.perf_counter()
            seconds[name] = seconds.get(name, 0.0) + now - mark
            mark = now

        self.config = config = load_config(self.config.root, self.config.out, verbose=self.config.verbose)
        if scan is not None and (scan.folder != self._record.folder or scan.templates != config.templates):
            scan = None  # made for another site or output
        # The published site is checked against the record (thousands of lstat calls, which let go
        # of the GIL) on a thread while this one unpickles the rest of the record (begun by the
        # quick scan, when there was one).
        walk = None
        if scan is not None and scan.state is not None:
            walk = scan.walk if scan.walk is not None else OutputWalk(config.out, scan.state)
        restored = self._record.read(
            scan.state if scan is not None else None, scan.prefetch if scan is not None else None
        )
        if restored is not None:
            self._state, self._cache = restored.state, restored.cache
            self._markdown, self._cache_code = restored.markdown, restored.code
        state = self._state
        environment = environment_key(config, config.source_date_epoch)
        if state is not None and state.environment != environment:
            state = None  # another toolchain or day: nothing global can be trusted
        if state is not None and scan is not None and scan.inputs is not None and scan.state is state:
            inputs = scan.inputs
        elif state is not None and changed is not None:
            inputs = rescan_paths(config, state.inputs, set(changed)) or scan_inputs(config, state.inputs)
        else:
            inputs = scan_inputs(config, state.inputs if state is not None else None)
        damaged: set[str]
        extra: set[str]
        if state is None:
            damaged, extra = set(), set()
        elif walk is not None and walk.state is state:
            damaged, extra = walk.result()
        else:
            damaged, extra = output_changes(config.out, state)
        lap("scan")
        if state is not None and inputs.digests == state.inputs.digests and not damaged and not extra:
            from builder.engine.output import remove_leftovers

            remove_leftovers(config.out)
            state.inputs = inputs
            self._record.save_state(state)
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
        from builder.data.loadcache import LoadCache
        from builder.engine.early_stages import EarlyStages
        from builder.engine.pipeline import load_and_reconcile, output_stages

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
            self._cache, self._markdown, self._cache_code = None, None, code
            self._record.forget_blobs()
        cache = self._cache if self._cache is not None else LoadCache()
        self._cache = cache
        changed = inputs.changed(state.inputs) if state is not None else None
        reused = self._reuse_loaded(config, state, inputs, changed, cache)
        if not reused:
            cache.scanned = {
                k: v for k, v in inputs.digests.items() if k.startswith(("data/rows/", "content/"))
            }
            cache.changed = changed
        begun = begin_stages(self._markdown, config.out, inputs, state, environment, damaged, changed)
        setups: list[StageSetup] = []

        def start_search(site: Site) -> None:
            """The search child, forked once: on the content pages as soon as they are loaded (or
            the site reused), else on the whole site. Not in a first build (see stage_setup)."""
            if state is not None and self._early is None:
                self._early = fork_search(begun, inputs, cache, site)

        def setup(site: Site) -> None:
            start_search(site)
            setups.append(stage_setup(begun, site, cache, inputs))

        def statuses_known(site: Site, recon: Reconciliation) -> None:
            if setups and few_changes(changed, bool(damaged or extra), self.workers):
                self._begin_downloads(site, recon, cache, setups[0].memo)

        if reused:
            start_search(reused.site)
        # A first build starts no stage early: its setup waits for reconciliation (the load stage
        # stays what it measures). Its recipe bodies begin rendering in a child meanwhile.
        loaded = reused or load_and_reconcile(
            config,
            cache=cache,
            on_loaded=setup if state is not None else functools.partial(self._start_bodies, begun.markdown),
            on_content=start_search if state is not None else None,
            on_statuses=statuses_known if state is not None else None,
        )
        lap("load")
        loaded.problems.raise_if_any()
        # The renderers are imported once the input is known to be valid (and timed as "prepare").
        from builder.engine.output import Linker
        from builder.site.deps import declared
        from builder.site.render import import_renderers, make_context, page_jobs

        assert loaded.recon is not None
        site = loaded.site
        if not setups:  # a template-only rebuild reused the loaded site
            setup(site)
        stages = setups[0]
        markdown, deps_index, memo, glob = stages.markdown, stages.deps_index, stages.memo, stages.glob
        prints = Fingerprints(glob, deps_index, inputs.digests, stages.changed_templates)
        previous = state.outputs if state is not None else {}
        out = config.out
        early = self._early if self._early is not None else EarlyStages([], markdown, memo)
        earlier = self._context if reused else None
        summary_source, summary_child = stages.summary_source, None
        if summary_source is None and len(site.recipes) >= SUMMARY_CHILD_RECIPES:
            # No search child to work it out (a first build): the bodies are rendered here, for the
            # render workers, and the summary is worked out from them beside the render context.
            from builder.engine.forked import Forked
            from builder.site.content_summary import prerender_bodies, summarize

            self._settle_threads()  # a child must not inherit them
            started, self._prerendering = self._prerendering, None
            prerender_bodies(site, markdown, started)
            summary_child = Forked(functools.partial(summarize, site, markdown))
            summary_source = summary_child.result
        try:
            ctx = make_context(site, loaded.recon, markdown, earlier.rows if earlier else None)
            if self.persist:
                from builder.engine.template_cache import template_cache

                ctx.env.bytecode_cache = template_cache(config.cache_dir, code)
            jobs = page_jobs(ctx, summary_source() if summary_source is not None else None)
        finally:
            if summary_child is not None:
                summary_child.cancel()  # taken above; otherwise not left running
        lap("prepare")

        out_prefix = f"{os.fspath(out)}/"
        sorted_jobs = sort_jobs(jobs, previous, damaged, prints, out_prefix)
        kept, records, pending = sorted_jobs.kept, sorted_jobs.records, sorted_jobs.pending
        workers = self.workers or worker_count(len(pending))
        if self._quick_con is not None and workers > 1:
            # DuckDB is not fork-safe (see render_jobs): no connection of ours alive at fork time.
            self._quick_con.close()
            self._quick_con = None
        # The new output tree is begun now, the unchanged pages linked into it on another thread
        # while pages render (system calls: ~0.2 s for 6,000 files). Not while render workers
        # are forked: then it starts after them.
        linker: Linker | None = None
        if self.atomic and state is not None and kept:
            inodes = {path: records[path].stat[0] for path in kept}
            linker = self._linker = Linker(out, config.root, kept, inodes, self._record.spare)
        forks = workers > 1 and len(pending) > 1
        if forks:
            self._settle_threads()  # begun early, expecting few pages: not inherited by the workers
            import_renderers(jobs[i][0] for i in pending)
        if linker is not None and not forks:
            linker.start()
        # rows.arrow is written beside the render when no fork follows (no render workers, and not
        # a first build, which forks its search child just after the render).
        rows_now = not forks and state is not None
        if rows_now and self._ahead is None:
            self._begin_downloads(site, ctx.recon, cache, memo)
        results = render_jobs(ctx, jobs, pending, self.progress, self.workers)
        if state is None:
            # A first build starts them once the render workers are done, beside the data stage
            # (see builder.engine.stage_setup).
            from builder.engine.pipeline import page_independent_stages

            stages_now = page_independent_stages(site, markdown, memo)
            self._early = early = EarlyStages(stages_now, markdown, memo)
        if linker is not None and forks:
            linker.start()
        failed = [r for r in results if r.error is not None]
        if failed:
            raise_first(failed)
        made = Fresh(dict(ctx.assets.files))
        fresh = made.files
        for result in results:
            path, job = jobs[result.index]
            assert result.data is not None
            fresh[path] = result.data
            made.digests[path] = result.digest
            deps = declared(job)
            made.templates[path] = result.templates
            made.fingerprints[path] = prints.of(path, deps, result.templates) if deps is not None else None
            if deps is not None:
                made.deps[path] = deps
        lap("render")
        if not rows_now:
            self._record.begin_rows(cache)  # after the last fork of the build

        files = OutputFiles(fresh, kept, out)
        in_place = not self.atomic and state is not None and not damaged and not extra
        producers = output_stages(site, ctx, memo, self._ahead)
        for index, (name, stage) in enumerate(producers):
            if name in early and not in_place and self._write_ahead is None:
                if all(later in early for later, _ in producers[index:]):
                    # Only the child's stages are left: while it finishes, what is made is written
                    # (on a thread) and the record's Python work is done.
                    self._write_ahead = WriteAhead(
                        made, previous, damaged, out_prefix, self._tree_maker(config)
                    )
                    used = markdown.used
                    self._record.prepare(cache, {k: v for k, v in markdown.cache.items() if k in used})
            produced = early.files(name) if name in early else stage(files)
            for path in produced:
                if path in fresh or path in kept:
                    raise BuilderError(f"two producers write {path}", "<builder>")
            fresh.update(produced)
            lap(name)

        # Publish: a fresh file whose bytes equal the kept one is linked, not written.
        tree = None
        if self._write_ahead is not None:
            tree = self._write_ahead.tree(made)
            self._write_ahead = None  # its tree is published or abandoned by apply
        if tree is None and self._linker is not None:
            tree = self._linker.staging()
        self._linker = None  # published or abandoned by apply
        published = plan(made, records, previous, damaged, out_prefix)
        new_records = published.records
        apply(
            published,
            out,
            config.root,
            in_place=in_place,
            tree_changed=bool(damaged or extra) or state is None,
            tree=tree,
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
            memo.current,
            glob,
            deps_index.digests,
        )
        self._state = new_state
        markdown_cache = {k: v for k, v in markdown.cache.items() if k in markdown.used}
        self._markdown = markdown_cache
        cache.prune()
        self._record.save(new_state, cache, markdown_cache, self._cache_code)
        cache.unsettled = None  # settled by the save; without one, not kept (it holds the site)
        lap("save")
        site.close_connection()
        self._context = ctx if self.keep_context else None
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

    def _begin_downloads(self, site: Site, recon: Reconciliation, cache: LoadCache, memo: Reuse) -> None:
        """``rows.arrow`` and the site-wide downloads (unless the last build's are kept), begun on
        threads: Arrow's writers and DuckDB let go of the GIL, and the other core is mostly idle
        until the render."""
        from builder.site.downloads import begin_site_wide

        self._record.begin_rows(cache)
        if self._ahead is None:
            self._ahead = begin_site_wide(site, recon, memo)

    def _settle_threads(self) -> None:
        """Wait for the threads :meth:`_begin_downloads` began (before a fork: a child must not
        inherit a thread inside Arrow's allocator or DuckDB); what they made stays available."""
        self._record.wait_rows()
        if self._ahead is not None:
            self._ahead.close()

    def _start_bodies(self, markdown: Markdown, site: Site) -> None:
        """A first build's recipe bodies begin rendering in a forked child while it reconciles (the
        other core is idle then); the render context's preparation finishes them."""
        if len(site.recipes) >= SUMMARY_CHILD_RECIPES:
            from builder.site.content_summary import start_prerender_bodies

            self._prerendering = start_prerender_bodies(site, markdown)

    def _tree_maker(self, config: SiteConfig) -> Callable[[], Staging]:
        """How :class:`WriteAhead` gets its tree: the one the linker began (with the kept pages in),
        else a new one."""
        linker = self._linker
        if linker is not None:
            return linker.staging

        def begin() -> Staging:
            from builder.engine.output import Staging

            return Staging(config.out, config.root, spare=self._record.spare)

        return begin

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

        # The content files are those the last load used: mark them used again, as a load would.
        # Otherwise the front matter digests (DepIndex) read as unknown, re-rendering every page
        # that lists recipes, and the cache's prune would forget every parse.
        cache.used_pages.update(k for k in cache.pages if inputs.digests.get(k[0]) == k[1])
        site = dataclasses.replace(old.site, config=config, _con=None)  # its own connection, when queried
        return Loaded(site, Problems(warnings=list(state.warnings)), old.recon)

"""What one build's output stages share, and the search stage begun early in a forked child.

:func:`begin_stages` makes the build's markdown and stage memo before the site loads. In a build
with a previous output the stages that read no page (search, :mod:`builder.engine.early_stages`) start
in a forked child (:func:`fork_search`; the engine cancels it if the build fails) as soon as the
content pages are loaded: the rows, which search does not read, load meanwhile. Forked once the
whole site had loaded, the child (records, then Pagefind re-indexing a shard: ≈ 0.2 s) finished
0.02-0.06 s after the edit build's render. Not so in a first build: indexing everything beside two
render workers on two cores made both slower than one after the other (cold build 16.8 s →
22.1 s). A first build forks its search child as soon as the render workers are done, at the
build's priority, so Pagefind shares the cores with the data stage. Forked before the render at
the lowest priority instead, Pagefind and the child feeding it got only what the data stage left
and the build then waited 2.20 s for them; now 1.26 s (medians of 6 interleaved cold builds of
the synthetic site: stage sum 10.63 → 9.58 s). :func:`stage_setup` completes the memo with the
dependency digests once the whole site is loaded.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from builder.engine.depindex import DepIndex, StageMemo, global_digest

if TYPE_CHECKING:
    from pathlib import Path

    from builder.content.markdown import Markdown, RenderedBody
    from builder.data.load import Site
    from builder.data.loadcache import LoadCache
    from builder.engine.build_state import State
    from builder.engine.early_stages import EarlyStages
    from builder.engine.inputs import Inputs
    from builder.site.context import ContentSummary


@dataclass
class Begun:
    """What :func:`begin_stages` made."""

    markdown: Markdown
    memo: StageMemo
    glob: bytes
    earlier: dict[str, bytes | None] | None
    """The previous build's dependency digests."""
    changed: set[str] | None
    """Inputs changed since the previous build; None when its digests cannot be carried over."""
    summary: Callable[[], ContentSummary | None] | None = None
    """The content summary, from the search child once forked."""


@dataclass
class StageSetup:
    """What the output stages need once the site is loaded."""

    markdown: Markdown
    deps_index: DepIndex
    memo: StageMemo
    glob: bytes
    changed_templates: set[str] | None
    """Templates changed since the previous build; None when unknown (another build or none)."""
    summary_source: Callable[[], ContentSummary | None] | None = None
    """The content summary from the search child (see :mod:`builder.site.content_summary`)."""


def begin_stages(
    markdown_cache: dict[str, RenderedBody] | None,
    out: Path,
    inputs: Inputs,
    state: State | None,
    environment: bytes,
    damaged: set[str],
    changed: set[str] | None,
) -> Begun:
    """The build's markdown (over the kept rendered bodies) and stage memo (over the previous
    build's), before the site loads; the memo's dependency digests come with the site."""
    from builder.content.markdown import Markdown

    markdown = Markdown(markdown_cache if markdown_cache is not None else {})
    previous = state.outputs if state is not None else {}
    glob = global_digest(inputs, environment)
    if state is None or state.glob != glob:
        changed = None  # the earlier digests are another build's: nothing can be carried over
    memo = StageMemo(
        state.memo if state is not None else {},
        lambda p: p in previous and p not in damaged,
        out,
        glob,
        None,
    )
    return Begun(markdown, memo, glob, state.dep_digests if state is not None else None, changed)


def fork_search(begun: Begun, inputs: Inputs, cache: LoadCache, site: Site) -> EarlyStages:
    """The search stage started in a forked child on ``site`` (its content pages are enough); the
    content summary it sends is ``begun.summary``."""
    from builder.engine.early_stages import EarlyStages
    from builder.engine.forked import Notice

    notice: Notice[tuple[ContentSummary, dict[str, RenderedBody]]] = Notice()
    search = functools.partial(
        _search_in_child,
        site,
        begun.markdown,
        begun.memo,
        inputs,
        cache,
        begun.earlier,
        begun.changed,
        notice.send,
    )
    markdown = begun.markdown

    def summary() -> ContentSummary | None:
        """The summary the child sent, and the bodies it rendered for it (this process would render
        the same ones again: an edit build's own body, and markdown-it's import, ≈ 0.05 s)."""
        sent = notice.receive()
        if sent is None:
            return None
        content, bodies = sent
        for key, body in bodies.items():
            markdown.cache.setdefault(key, body)
        return content

    begun.summary = summary
    return EarlyStages([("search", search)], begun.markdown, begun.memo, notice)


def stage_setup(begun: Begun, site: Site, cache: LoadCache, inputs: Inputs) -> StageSetup:
    """The stages' setup once the whole site is loaded: its dependency digests in the memo."""
    deps_index = DepIndex(inputs, cache, site, begun.earlier, begun.changed)
    begun.memo.deps_index = deps_index
    changed = begun.changed
    templates = None if changed is None else {key for key in changed if key.startswith("templates/")}
    return StageSetup(begun.markdown, deps_index, begun.memo, begun.glob, templates, begun.summary)


def _search_in_child(
    site: Site,
    markdown: Markdown,
    memo: StageMemo,
    inputs: Inputs,
    cache: LoadCache,
    earlier: dict[str, bytes | None] | None,
    changed: set[str] | None,
    announce: Callable[[tuple[ContentSummary, dict[str, RenderedBody]]], None],
    files: Mapping[str, bytes],
) -> dict[str, Any]:
    """The search stage as the early child runs it, on the site as far as it is loaded; it announces
    the content summary with the bodies it rendered to work it out."""
    from builder.engine.pipeline import page_independent_stages

    # Search keys its files by what it reads (its records), not by dependency names; a memo whose
    # digests were asked for would give this site's.
    memo.deps_index = DepIndex(inputs, cache, site, earlier, changed)
    had = set(markdown.cache)

    def with_bodies(summary: ContentSummary) -> None:
        announce((summary, {k: v for k, v in markdown.cache.items() if k not in had}))

    [(_, search)] = page_independent_stages(site, markdown, memo, with_bodies)
    return search(files)

"""What page jobs must know of every content body, as one small value.

The search page names the file-system fallback by a hash of every search record and lists the
index shards; the troubleshooting pages list every question of every recipe. Knowing that means
reading every body (its rendered markdown, kept across builds by the markdown cache).

The FAQ's digest lets the troubleshooting pages depend on the questions rather than on every
recipe file: a body edit that leaves the troubleshooting section alone does not re-render them.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any

from builder.site.context import ContentSummary
from builder.site.faq import FaqEntry, faq_entries
from builder.site.search import SearchPlan, page_records

if TYPE_CHECKING:
    from builder.content.markdown import Markdown
    from builder.data.load import Site


def prerender_bodies(site: Site, markdown: Markdown) -> None:
    """Render every recipe body not cached yet: a first build needs them all before its pages (the
    render workers then find them cached)."""
    markdown.prerender((site.recipes[slug].doc for slug in sorted(site.recipes)), faq=True)


def summarize(
    site: Site,
    markdown: Markdown,
    plan: SearchPlan | None = None,
    entries: list[FaqEntry] | None = None,
) -> ContentSummary:
    """The summary of ``site``'s bodies; ``plan`` and ``entries``: the search records' and the FAQ's,
    when the caller has them."""
    if plan is None:
        prerender_bodies(site, markdown)
    if entries is None:
        entries = faq_entries(site, markdown)
    if plan is None:
        plan = SearchPlan.of(page_records(site, markdown, entries))
    everything = hashlib.sha256()
    by_model: dict[str, Any] = {}
    for entry in entries:
        item = entry.item
        model = entry.recipe.meta.model
        hasher = by_model.get(model)
        if hasher is None:
            hasher = by_model[model] = hashlib.sha256()
        for part in (entry.recipe.slug, item.question, item.anchor, item.answer_html, item.answer_text):
            data = part.encode()
            chunk = len(data).to_bytes(8, "little") + data
            everything.update(chunk)
            hasher.update(chunk)
    return ContentSummary(
        search_fallback=plan.fallback,
        search_shards=tuple(f"{p}/" for p in plan.extra_bundles),
        faq_count=len(entries),
        faq_models={model: by_model[model].hexdigest() for model in sorted(by_model)},
        faq_digest=everything.hexdigest(),
    )

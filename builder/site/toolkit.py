"""The reader's toolkit beside the pages: feeds, sitemap, robots.txt, downloads and the JSON API.

Runs after rendering (the sitemap lists every rendered page) and before the search index and the
atomic write; declares its files as units (:mod:`builder.site.deps`) for the engine to make.
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection

from builder.analysis.reconcile import Reconciliation
from builder.content.markdown import Markdown
from builder.data.load import Site
from builder.site import deps
from builder.site.deps import Batch, Files, Unit
from builder.site.downloads import download_units
from builder.site.feeds import NEWS_FEED, content_dates, news_feed, robots_txt, sitemap


def reader_units(
    site: Site, recon: Reconciliation, markdown: Markdown, rendered: Collection[str]
) -> list[Unit | Batch]:
    """Feeds, robots, sitemap and downloads."""
    base_url = site.config.settings.base_url

    def feeds() -> Files:
        bodies = {slug: markdown.render(post.doc).html for slug, post in site.posts.items()}
        return {NEWS_FEED: news_feed(site, bodies), "robots.txt": robots_txt(base_url)}

    # The sitemap lists every page with its date (front matter, newest row): kept while neither the
    # pages nor those change, so an edit build does not scan the dates of every row.
    pages = "\0".join(sorted(path for path in rendered if path.endswith(".html")))
    return [
        Unit("feeds", None, b"", feeds),
        Unit(
            "sitemap",
            (deps.ROWS, deps.RECIPES, deps.CASE_STUDIES, deps.POSTS),
            hashlib.blake2b(pages.encode(), digest_size=16).digest(),
            lambda: {"sitemap.xml": sitemap(base_url, rendered, content_dates(site))},
        ),
        *download_units(site, recon, markdown),
    ]

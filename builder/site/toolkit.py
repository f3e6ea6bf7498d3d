"""The reader's toolkit beside the pages: feeds, sitemap, robots.txt, downloads and the API index.

Runs after rendering (the sitemap lists every rendered page) and before the search index and the
atomic write; gives its files as units (:mod:`builder.site.units`) for the engine to make.
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection

from builder.analysis.reconcile import Reconciliation
from builder.content.markdown import Markdown
from builder.data.load import Site
from builder.site.downloads import download_units
from builder.site.feeds import NEWS_FEED, content_dates, news_feed, robots_txt, sitemap
from builder.site.units import Batch, Files, Unit


def reader_units(
    site: Site, recon: Reconciliation, markdown: Markdown, rendered: Collection[str]
) -> list[Unit | Batch]:
    """Feeds, robots, sitemap, the downloads and the API index."""
    base_url = site.config.settings.base_url

    def feeds() -> Files:
        bodies = {slug: markdown.render(post.doc).html for slug, post in site.posts.items()}
        return {NEWS_FEED: news_feed(site, bodies), "robots.txt": robots_txt(base_url)}

    # The sitemap lists every page with its date (front matter, newest row): the pages are its digest.
    pages = "\0".join(sorted(path for path in rendered if path.endswith(".html")))
    return [
        Unit("feeds", b"", feeds),
        Unit(
            "sitemap",
            hashlib.blake2b(pages.encode(), digest_size=16).digest(),
            lambda: {"sitemap.xml": sitemap(base_url, rendered, content_dates(site))},
        ),
        *download_units(site, recon, markdown),
    ]

"""The reader's toolkit beside the pages: feeds, sitemap, robots.txt, downloads and the JSON API.

Runs after rendering (the sitemap lists every rendered page) and before the search index and the
atomic write; returns ``{output path: bytes}`` like :func:`builder.site.render.render_site`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection

from builder.analysis.reconcile import Reconciliation
from builder.content.markdown import Markdown
from builder.data.load import Site
from builder.site import deps
from builder.site.deps import Reuse, no_reuse
from builder.site.downloads import download_files
from builder.site.feeds import NEWS_FEED, content_dates, news_feed, robots_txt, sitemap


def reader_files(
    site: Site,
    recon: Reconciliation,
    markdown: Markdown,
    rendered: Collection[str],
    reuse: Reuse = no_reuse,
) -> dict[str, bytes]:
    """Feeds, robots, sitemap and downloads."""
    base_url = site.config.settings.base_url
    bodies = {slug: markdown.render(post.doc).html for slug, post in site.posts.items()}
    out = {NEWS_FEED: news_feed(site, bodies), "robots.txt": robots_txt(base_url)}
    # The sitemap lists every page with its date (front matter, newest row): kept while neither the
    # pages nor those change, so an edit build does not scan the dates of every row.
    key = reuse.key("sitemap", deps.ROWS, deps.RECIPES, deps.CASE_STUDIES, deps.POSTS)
    if key is not None:
        pages = "\0".join(sorted(path for path in rendered if path.endswith(".html")))
        key += hashlib.blake2b(pages.encode(), digest_size=16).digest()
    out.update(reuse(key, lambda: {"sitemap.xml": sitemap(base_url, rendered, content_dates(site))}))
    out.update(download_files(site, recon, markdown, reuse))
    return out

"""The reader's toolkit beside the pages: feeds, sitemap, robots.txt, downloads and the JSON API.

Runs after rendering (the sitemap lists every rendered page) and before the search index and the
atomic write; returns ``{output path: bytes}`` like :func:`builder.render.render_site`.
"""

from __future__ import annotations

from collections.abc import Mapping

from builder.content import Markdown
from builder.deps import Reuse, no_reuse
from builder.downloads import download_files
from builder.feeds import NEWS_FEED, content_dates, news_feed, robots_txt, sitemap
from builder.load import Site
from builder.reconcile import Reconciliation


def reader_files(
    site: Site,
    recon: Reconciliation,
    markdown: Markdown,
    rendered: Mapping[str, bytes],
    reuse: Reuse = no_reuse,
) -> dict[str, bytes]:
    base_url = site.config.settings.base_url
    bodies = {slug: markdown.render(post.doc.body).html for slug, post in site.posts.items()}
    out = {
        NEWS_FEED: news_feed(site, bodies),
        "sitemap.xml": sitemap(base_url, rendered, content_dates(site)),
        "robots.txt": robots_txt(base_url),
    }
    out.update(download_files(site, recon, markdown, reuse))
    return out

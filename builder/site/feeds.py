"""Machine-readable views of the site: Atom feeds, ``sitemap.xml`` and ``robots.txt``.

Everything here is deterministic: timestamps come from content dates (a post's date, a recipe's
verified date or its newest row), never from the clock. When a feed has nothing dated, its
``updated`` falls back to ``SOURCE_DATE_EPOCH`` and then to the Unix epoch, so two builds of the
same input give the same bytes. XML is built with ElementTree, which escapes every value.
"""

from __future__ import annotations

import datetime as dt
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from builder.config import SiteConfig
from builder.data.load import Site

if TYPE_CHECKING:
    import pyarrow as pa

ATOM_NS = "http://www.w3.org/2005/Atom"
SITEMAP_NS = "http://www.sitemaps.org/schemas/sitemap/0.9"
XML_BASE = "{http://www.w3.org/XML/1998/namespace}base"
NEWS_FEED = "news/feed.xml"
NOINDEX_PAGES = frozenset({"404.html", "search/index.html"})
"""Pages that are not content: left out of the sitemap (their template says ``noindex``)."""


def fallback_date(config: SiteConfig) -> dt.date:
    """The date used when nothing is dated: ``SOURCE_DATE_EPOCH``, else 1970-01-01 (never the clock)."""
    return dt.datetime.fromtimestamp(config.source_date_epoch or 0, tz=dt.UTC).date()


def atom_time(day: dt.date) -> str:
    return f"{day.isoformat()}T00:00:00Z"


@dataclass(frozen=True)
class AtomEntry:
    """One entry of an Atom feed."""

    id: str
    """Permanent id: the entry's absolute URL."""
    title: str
    url: str
    """Absolute URL of the entry's page."""
    updated: dt.date
    published: dt.date | None = None
    summary: str = ""
    content_html: str | None = None
    """Rendered HTML body; relative links in it resolve against ``url`` (``xml:base``)."""
    author: str | None = None


def _text(parent: ET.Element, tag: str, text: str, **attrib: str) -> ET.Element:
    element = ET.SubElement(parent, tag, attrib)
    element.text = text
    return element


def atom_feed(
    *,
    title: str,
    feed_url: str,
    page_url: str,
    author: str,
    entries: Iterable[AtomEntry],
    updated: dt.date,
    subtitle: str = "",
) -> bytes:
    """An Atom 1.0 document (RFC 4287). ``updated`` is the newest entry's date, or a fallback."""
    # Plain tag names with an explicit xmlns: ElementTree's default_namespace refuses the
    # unqualified attributes Atom uses (rel, href, type).
    feed = ET.Element("feed", {"xmlns": ATOM_NS})
    _text(feed, "title", title)
    if subtitle:
        _text(feed, "subtitle", subtitle)
    _text(feed, "id", feed_url)
    ET.SubElement(feed, "link", {"rel": "self", "type": "application/atom+xml", "href": feed_url})
    ET.SubElement(feed, "link", {"rel": "alternate", "type": "text/html", "href": page_url})
    _text(feed, "updated", atom_time(updated))
    author_el = ET.SubElement(feed, "author")
    _text(author_el, "name", author)
    for entry in entries:
        item = ET.SubElement(feed, "entry")
        _text(item, "title", entry.title)
        _text(item, "id", entry.id)
        ET.SubElement(item, "link", {"rel": "alternate", "type": "text/html", "href": entry.url})
        if entry.published is not None:
            _text(item, "published", atom_time(entry.published))
        _text(item, "updated", atom_time(entry.updated))
        if entry.author:
            _text(ET.SubElement(item, "author"), "name", entry.author)
        if entry.summary:
            _text(item, "summary", entry.summary)
        if entry.content_html is not None:
            _text(item, "content", entry.content_html, type="html", **{XML_BASE: entry.url})
    ET.indent(feed)
    body = ET.tostring(feed, encoding="unicode")
    return ('<?xml version="1.0" encoding="utf-8"?>\n' + body + "\n").encode("utf-8")


def news_feed(site: Site, render_html: Mapping[str, str]) -> bytes:
    """Atom feed of the news posts, newest first; ``render_html`` maps a post slug to its body HTML."""
    settings = site.config.settings
    base = settings.base_url
    posts = sorted(site.posts.values(), key=lambda p: (p.meta.date, p.slug), reverse=True)
    entries = [
        AtomEntry(
            id=f"{base}news/{post.slug}/",
            title=post.meta.title,
            url=f"{base}news/{post.slug}/",
            updated=post.meta.date,
            published=post.meta.date,
            summary=post.meta.summary,
            content_html=render_html[post.slug],
            author=post.meta.author,
        )
        for post in posts
    ]
    return atom_feed(
        title=f"{settings.title}: news",
        subtitle=settings.description,
        feed_url=base + NEWS_FEED,
        page_url=f"{base}news/",
        author=settings.title,
        entries=entries,
        updated=posts[0].meta.date if posts else fallback_date(site.config),
    )


def content_dates(site: Site) -> dict[str, dt.date]:
    """Last-modified date of each content page (output path → date), from content and rows only."""
    dates: dict[str, dt.date] = {}
    newest_row = newest_dates(site.rows)
    for slug, recipe in site.recipes.items():
        candidates = [d for d in (recipe.meta.verified, newest_row.get(slug)) if d is not None]
        if candidates:
            dates[f"recipes/{slug}/index.html"] = max(candidates)
    for slug, case in site.case_studies.items():
        dates[f"case-studies/{slug}/index.html"] = case.meta.date
    for slug, post in site.posts.items():
        dates[f"news/{slug}/index.html"] = post.meta.date
    if site.posts:
        dates["news/index.html"] = max(p.meta.date for p in site.posts.values())
    return dates


def newest_dates(rows: pa.Table) -> dict[str, dt.date]:
    """Each recipe's newest row date.

    numpy over dictionary codes, not SQL (a build that needs no query never opens DuckDB, see
    ``Site.con``) nor Arrow's ``group_by`` (whose import alone is slow)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    if rows.num_rows == 0:
        return {}
    recipes = pc.dictionary_encode(rows.column("recipe").combine_chunks())
    days = pc.cast(rows.column("date").combine_chunks(), pa.int32()).to_numpy()
    newest = np.full(len(recipes.dictionary), np.iinfo(np.int32).min, np.int64)
    np.maximum.at(newest, recipes.indices.to_numpy(), days)
    epoch = dt.date(1970, 1, 1).toordinal()
    return {
        slug: dt.date.fromordinal(epoch + int(day))
        for slug, day in zip(recipes.dictionary.to_pylist(), newest.tolist(), strict=True)
    }


def page_url(base_url: str, path: str) -> str:
    """Absolute URL of an output file, ``…/index.html`` shown as its folder."""
    return base_url + (path[: -len("index.html")] if path.endswith("index.html") else path)


def sitemap(base_url: str, paths: Iterable[str], dates: Mapping[str, dt.date]) -> bytes:
    """``sitemap.xml`` of every HTML page except :data:`NOINDEX_PAGES`, sorted by URL.

    Written as text (the bytes ElementTree's indented output gives): building and serialising
    thousands of elements would slow every edit build."""
    head = '<?xml version="1.0" encoding="utf-8"?>\n'
    pages = sorted(p for p in paths if p.endswith(".html") and p not in NOINDEX_PAGES)
    if not pages:
        return f'{head}<urlset xmlns="{SITEMAP_NS}" />\n'.encode()
    lines = [f'{head}<urlset xmlns="{SITEMAP_NS}">']
    for path in pages:
        lines.append(f"  <url>\n    <loc>{_xml_text(page_url(base_url, path))}</loc>")
        if path in dates:
            lines.append(f"    <lastmod>{dates[path].isoformat()}</lastmod>")
        lines.append("  </url>")
    lines.append("</urlset>\n")
    return "\n".join(lines).encode("utf-8")


def _xml_text(text: str) -> str:
    """Text escaped for an XML element (as ElementTree escapes it)."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def robots_txt(base_url: str) -> bytes:
    """Allow everything and point at the sitemap.

    Crawlers read ``robots.txt`` only at a host's root: a site published under a sub-path still
    ships one, but the host's own ``robots.txt`` must name this sitemap for crawlers to find it.
    """
    return f"User-agent: *\nDisallow:\n\nSitemap: {base_url}sitemap.xml\n".encode()

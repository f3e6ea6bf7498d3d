"""Site search, built offline: a Pagefind index of the site's records plus a file-system fallback.

Pagefind (its binary, run in service mode by :mod:`builder.site.pagefind_service`) indexes one small stand-in
page per recipe, case study and news post, naming the page it stands for. A recipe's troubleshooting
questions are sections of its stand-in, each under a heading that carries the answer's anchor:
Pagefind gives them back as sub-results, and the search page lists each as a hit of its own. (Not
one stand-in per question: most of Pagefind's work is per page.) The index is a folder of static
files (``pagefind/``) that the search page fetches in chunks, so it works from any static host.

Browsers refuse ``fetch()`` and module ``import()`` from ``file://`` pages, so Pagefind cannot run
from the file system. For that case the build also writes a small classic script holding every
record's title and text (:func:`fallback_script`); the search page loads it with a ``<script>``
element, which ``file://`` allows, and matches words itself. It ranks more crudely than Pagefind.
"""

from __future__ import annotations

import hashlib
import html
import json
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import PurePosixPath

from builder.content.markdown import Markdown
from builder.data.load import Site
from builder.errors import SearchIndexError
from builder.site.context import ContentSummary, PageJob, RenderContext
from builder.site.faq import FaqEntry, faq_entries
from builder.site.jsonscript import dumps_compact_for_script
from builder.site.pagefind_service import IndexOptions, index_sets
from builder.site.units import Batch, Files, Unit

BUNDLE_DIR = "pagefind"
SEARCH_PAGE = "search/index.html"
LANGUAGE = "en"
FALLBACK_TEXT_CHARS = 4000
"""Text kept per record in the file-system fallback, which is loaded whole."""
INDEXED_PREFIXES = ("recipes/", "case-studies/", "news/")
# Indexed pages are read from <main>; these parts are left out: the FAQ (each question is its own
# record), row tables (numbers without words) and chart markup.
EXCLUDE_SELECTORS = (".faq", ".table-scroll", ".chart", "[data-search-ignore]")
# Pagefind writes its own UI widgets too; the site has its own search page, so only the engine,
# its WebAssembly and the index chunks ship.
_UI_FILES = (
    "pagefind-ui",
    "pagefind-component-ui",
    "pagefind-modular-ui",
    "pagefind-highlight",
    "playground",
)


@dataclass(frozen=True)
class SearchRecord:
    """One search result: a page, or a troubleshooting question on a recipe page."""

    url: str
    """Relative to the site root (``recipes/x/#faq-y``)."""
    title: str
    kind: str
    """``Recipe``, ``Troubleshooting``, ``Case study`` or ``News``."""
    text: str
    """Its words, whitespace collapsed to single spaces (:func:`page_records` makes them so)."""


def is_indexed_page(path: str) -> bool:
    """Content pages: ``recipes/<slug>/``, ``case-studies/<slug>/``, ``news/<slug>/``."""
    parts = PurePosixPath(path).parts
    return len(parts) == 3 and parts[2] == "index.html" and f"{parts[0]}/" in INDEXED_PREFIXES


def page_records(site: Site, markdown: Markdown, entries: list[FaqEntry] | None = None) -> list[SearchRecord]:
    """Every searchable thing, built from content (not HTML), in a stable order; each record's text
    with its whitespace collapsed (rendered bodies' text comes so from the markdown cache, so an edit
    build does not collapse every recipe's text again)."""
    records: list[SearchRecord] = []
    for slug in sorted(site.recipes):
        meta = site.recipes[slug].meta
        body = markdown.render(site.recipes[slug].doc, faq=True)
        fields = _collapsed(
            " ".join(p for p in (meta.summary, meta.model, meta.checkpoint, meta.engine, meta.flags) if p)
        )
        text = " ".join(part for part in (fields, body.text) if part)
        records.append(SearchRecord(f"recipes/{slug}/", meta.title, "Recipe", text))
    # A question's text is its recipe's title, a full stop and the answer, collapsed: the answer comes
    # collapsed with the rendered body, the title once per recipe (split(x + " " + y) is split(x) +
    # split(y), so the parts join to what collapsing the whole gives).
    titles: dict[str, str] = {}
    for entry in entries if entries is not None else faq_entries(site, markdown):
        slug = entry.recipe.slug
        prefix = titles.get(slug)
        if prefix is None:
            prefix = titles[slug] = _collapsed(f"{entry.recipe.meta.title}.")
        words = entry.item.answer_words
        text = f"{prefix} {words}" if words else prefix
        records.append(SearchRecord(entry.path, entry.item.question, "Troubleshooting", text))
    for slug in sorted(site.case_studies):
        case = site.case_studies[slug]
        fields = _collapsed(f"{case.meta.question} {case.meta.verdict}")
        text = " ".join(part for part in (fields, markdown.render(case.doc).text) if part)
        records.append(SearchRecord(f"case-studies/{slug}/", case.meta.title, "Case study", text))
    for slug in sorted(site.posts):
        post = site.posts[slug]
        fields = _collapsed(post.meta.summary or "")
        text = " ".join(part for part in (fields, markdown.render(post.doc).text) if part)
        records.append(SearchRecord(f"news/{slug}/", post.meta.title, "News", text))
    return records


def _collapsed(text: str) -> str:
    return " ".join(text.split())


def fallback_script(records: list[SearchRecord]) -> bytes:
    """A classic script defining ``window.SEARCH_RECORDS`` (loadable from ``file://``)."""
    # Records' text comes collapsed (page_records): cut as it is.
    data = [{"u": r.url, "t": r.title, "k": r.kind, "x": r.text[:FALLBACK_TEXT_CHARS]} for r in records]
    return b"window.SEARCH_RECORDS=" + dumps_compact_for_script(data).encode("utf-8") + b";\n"


def records_digest(records: list[SearchRecord]) -> str:
    """A hash of the records (a shard's: :class:`SearchPlan`), cheaper than making what they give.

    The fields joined by NUL when none holds one (one join, no per-field encoding: every content
    edit hashes every record), else each prefixed with its length; the two encodings are told apart
    by their first bytes."""
    parts = [part for r in records for part in (r.url, r.title, r.kind, r.text)]
    joined = "\0".join(parts)
    if joined.count("\0") == max(len(parts) - 1, 0):
        return hashlib.sha256(b"nul\0" + joined.encode()).hexdigest()
    chunks = [b"len\0"]
    for part in parts:
        data = part.encode()
        chunks += (len(data).to_bytes(8, "little"), data)
    return hashlib.sha256(b"".join(chunks)).hexdigest()


def _keep(rel: str) -> bool:
    name = PurePosixPath(rel).name
    return not any(name.startswith(prefix) for prefix in _UI_FILES) and not rel.startswith("playground/")


def stand_in_html(records: list[SearchRecord]) -> str:
    """The stand-in page of one site page: ``records[0]`` is the page, the others its questions.

    The page's ``target`` names the page it stands for; each question is a section under an ``h2``
    whose ``id`` is the answer's anchor (Pagefind makes sub-results of headings with an ``id``).
    """
    page, *questions = records
    parts = [
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        f"<title>{html.escape(page.title)}</title></head><body>"
        f'<main data-pagefind-meta="kind:{html.escape(page.kind)}">'
        f'<h1 data-pagefind-meta="target:/{html.escape(page.url)}">{html.escape(page.title)}</h1>'
        f"<p>{html.escape(page.text)}</p>"
    ]
    for question in questions:
        owner, _, anchor = question.url.partition("#")
        if owner != page.url or not anchor:
            raise ValueError(f"{question.url} is not a section of {page.url}")
        # A question's record starts with its recipe's title, for the fallback, which matches each
        # record alone. Here the title is the page's heading: repeated in every section, a query for
        # the model would list every question of the recipe.
        answer = question.text.removeprefix(f"{page.title}. ")
        parts.append(
            f'<section><h2 id="{html.escape(anchor)}">{html.escape(question.title)}</h2>'
            f"<p>{html.escape(answer)}</p></section>"
        )
    parts.append("</main></body></html>")
    return "".join(parts)


INDEX_OPTIONS = IndexOptions(
    root_selector="main", exclude_selectors=EXCLUDE_SELECTORS, force_language=LANGUAGE
)


def _pagefind_many(shards: Mapping[str, Mapping[str, bytes]]) -> dict[str, dict[str, bytes]]:
    """Index several page sets (bundle folder → {path: HTML}); ``{folder: {folder/file: bytes}}``.

    Pagefind runs in service mode (:mod:`builder.site.pagefind_service`): two processes share the sets,
    and the files come back in memory. Each bundle is checked to hold every page.
    """
    bundles = index_sets(shards, INDEX_OPTIONS, keep=_keep)
    result: dict[str, dict[str, bytes]] = {}
    for prefix in sorted(shards):
        files = {f"{prefix}/{rel}": data for rel, data in sorted(bundles[prefix].items())}
        if f"{prefix}/pagefind.js" not in files:
            raise SearchIndexError("Pagefind wrote no pagefind.js: the search index is incomplete")
        try:
            entry = json.loads(files[f"{prefix}/pagefind-entry.json"])
            indexed = sum(language["page_count"] for language in entry["languages"].values())
        except (KeyError, ValueError, TypeError):
            raise SearchIndexError(f"Pagefind wrote an unreadable {prefix}/pagefind-entry.json") from None
        if indexed != len(shards[prefix]):
            raise SearchIndexError(f"Pagefind indexed {indexed} of {len(shards[prefix])} pages")
        result[prefix] = files
    return result


SHARD_PAGES = 32
"""Pages (stand-ins) per Pagefind index: a big site's index is split so an edit re-indexes one shard.
Pagefind's time grows with the pages of an index and an edit build waits for its shard, so shards
are small; a whole index costs about the same CPU in shards as in one piece, and shards can use
every core where one index cannot. The search page merges the shards in parallel (one round trip
before the first search)."""
MAX_SHARDS = 32
SHARDS_DIR = "pagefind-shards"


def _owner(record: SearchRecord) -> str:
    """The page a record belongs to (a question belongs to its recipe): shards keep them together."""
    return "/".join(record.url.split("/")[:2])


def shard_prefixes(records: list[SearchRecord]) -> list[str]:
    """Bundle folder of each record, in order: ``pagefind`` for shard 0, ``pagefind-shards/<n>``.

    Small sites get one index. A big site's pages are spread over shards by a hash of their URL, so
    a page (with its questions) stays in the same shard from build to build; the search page loads
    shard 0 and merges the others (Pagefind's ``mergeIndex``).
    """
    owners = [_owner(record) for record in records]
    pages = set(owners)
    count = min(MAX_SHARDS, -(-len(pages) // SHARD_PAGES)) if len(pages) > SHARD_PAGES * 2 else 1
    prefix_of = {}
    for owner in pages:  # once per page, not per question
        shard = int.from_bytes(hashlib.sha256(owner.encode()).digest()[:4], "big") % count
        prefix_of[owner] = BUNDLE_DIR if shard == 0 else f"{SHARDS_DIR}/{shard}"
    return [prefix_of[owner] for owner in owners]


@dataclass(frozen=True)
class SearchPlan:
    """The records, cut into index shards, with their hashes: worked out once per build (the search
    stage and the content summary both need them)."""

    records: list[SearchRecord]
    shards: dict[str, list[SearchRecord]]
    """Bundle folder → its records, in record order."""
    digests: dict[str, str]
    """Bundle folder → :func:`records_digest` of its records."""
    digest: str
    """Hash of every record: of the shards' hashes (a shard's records are a function of the
    records, and their order of the set of them)."""

    @classmethod
    def of(cls, records: list[SearchRecord]) -> SearchPlan:
        shards: dict[str, list[SearchRecord]] = {}
        for record, prefix in zip(records, shard_prefixes(records), strict=True):
            shards.setdefault(prefix, []).append(record)
        digests = {prefix: records_digest(shard) for prefix, shard in shards.items()}
        whole = hashlib.sha256(b"shards\0")
        for prefix in sorted(digests):
            whole.update(f"{prefix}\0{digests[prefix]}\0".encode())
        return cls(records, shards, digests, whole.hexdigest())

    @property
    def fallback(self) -> str:
        """Path of the file-system fallback script."""
        return f"search/records.{self.digest[:10]}.js"

    @property
    def extra_bundles(self) -> list[str]:
        """Bundle folders besides ``pagefind/``, in shard order."""
        return sorted((p for p in self.shards if p != BUNDLE_DIR), key=lambda p: int(p.rsplit("/", 1)[1]))


FALLBACK = "fallback"


def search_units(plan: SearchPlan) -> list[Unit | Batch]:
    """The Pagefind bundle of each shard and the file-system fallback, all from the plan's records.

    Pagefind indexes one small stand-in page per record (its title, kind, text and the URL it stands
    for), not the rendered pages: rendered recipe pages are mostly tables and charts the index leaves
    out anyway, and parsing them would be most of Pagefind's work. A shard's bundle is a pure
    function of its records, so it is keyed by them, not by its stand-in pages: those are only made
    for shards to index (the builder's code, hence how stand-ins are made, is part of every key).
    """
    digests = {prefix: digest.encode() for prefix, digest in plan.digests.items()}
    digests[FALLBACK] = plan.digest.encode()

    def index(prefixes: set[str]) -> dict[str, dict[str, bytes]]:
        return _pagefind_many({prefix: stand_ins(plan.shards[prefix]) for prefix in prefixes})

    def make(names: set[str]) -> Iterator[tuple[str, Files]]:
        # Pagefind runs (in its own processes) while this thread writes the fallback.
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="search") as pool:
            bundles = pool.submit(index, names - {FALLBACK})
            if FALLBACK in names:
                yield FALLBACK, {plan.fallback: fallback_script(plan.records)}
            yield from bundles.result().items()

    return [Batch(digests, make)]


def stand_ins(records: list[SearchRecord]) -> dict[str, bytes]:
    """One stand-in page per site page (its questions included), named by the page's URL (a page
    keeps its name when others come and go)."""
    pages: dict[str, list[SearchRecord]] = {}
    for record in records:
        pages.setdefault(_owner(record) + "/", []).append(record)
    return {
        f"records/{hashlib.sha256(url.encode()).hexdigest()[:20]}.html": stand_in_html(page).encode()
        for url, page in pages.items()
    }


def render_search_page(ctx: RenderContext, summary: ContentSummary) -> bytes:
    return ctx.page(
        "search.html",
        SEARCH_PAGE,
        fallback_records=summary.search_fallback,
        bundle=f"{BUNDLE_DIR}/pagefind.js",
        shards=list(summary.search_shards),
    )


def search_page_jobs(ctx: RenderContext, summary: ContentSummary) -> list[PageJob]:
    return [(SEARCH_PAGE, lambda: render_search_page(ctx, summary))]

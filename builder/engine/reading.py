"""Reading views of the domain values: each names what a step reads as it reads it.

The engine renders pages from a :class:`~builder.site.context.RenderContext` whose values are these
views (:func:`reading_context`); every read goes through :func:`builder.reads.note` with a key that
:class:`builder.engine.depindex.DepIndex` can digest. A page's record keeps the keys it read, and the
next build keeps the page when every key's digest is the one it had. The views return the very values
they wrap, so a page renders the same bytes through them as without them.

The keys:

``front:<slug>``
    that recipe's front matter, and whether it exists;
``recipes``
    every recipe's front matter and which recipes exist (iterating the recipes);
``rows-of:<slug>``
    every row whose ``recipe`` is the slug (its values, file and line);
``rows``
    every row file (the rows table, the row files, a query);
``rows-on:<hardware>``
    the row files with a row on one of the hardware's nodes (the rows measured on it);
``file:<path>``
    one input file, whole (a body rendered from it);
``case-studies`` / ``posts``
    every case study / post file;
``models``
    which recipes exist and the base model of each (the comparison pages' slugs);
``findings``
    every recipe's findings (lists and counts of all of them);
``figures:<path>``
    what the ``{{ }}`` figures of the body in that file show (worked out from any recipe's rows);
``summary:<part>``
    a part of the content summary (the FAQ's counts, the search bundle's names);
``card:<slug>`` / ``disputes:<model>``
    a derived value (:func:`builder.reads.derived`, :mod:`builder.engine.derived`), digested to the
    value's digest.

Everything else a page reads (``site.yaml``, ``data/*.yaml``, static assets, the build's day, the
builder's code) is in the build's global digest.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection, Iterator, Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

import numpy as np

from builder.content.markdown import figures_digest
from builder.data.load import Site
from builder.data.rows import ParsedFile
from builder.reads import note, noting
from builder.site.views import RowsByRecipe

if TYPE_CHECKING:
    import duckdb
    import pyarrow as pa

    from builder.analysis.findings import Finding
    from builder.analysis.reconcile import Reconciliation, RowStatus
    from builder.content.markdown import Document, Markdown, RenderedBody
    from builder.site.context import ContentSummary, RenderContext

V = TypeVar("V")


class ReadingMapping(Mapping[str, V]):
    """A mapping read item by item (``<item>:<key>``) or whole (``every``)."""

    def __init__(self, data: Mapping[str, V], item: str | None, every: str) -> None:
        self._data = data
        self._item = item
        self._every = every

    def _one(self, key: object) -> None:
        note(f"{self._item}:{key}" if self._item is not None else self._every)

    def __getitem__(self, key: str) -> V:
        self._one(key)
        return self._data[key]

    def get(self, key: str, default: Any = None) -> Any:
        self._one(key)
        return self._data.get(key, default)

    def __contains__(self, key: object) -> bool:
        self._one(key)
        return key in self._data

    def __iter__(self) -> Iterator[str]:
        note(self._every)
        return iter(self._data)

    def __len__(self) -> int:
        note(self._every)
        return len(self._data)

    def keys(self) -> Any:
        note(self._every)
        return self._data.keys()

    def values(self) -> Any:
        note(self._every)
        return self._data.values()

    def items(self) -> Any:
        note(self._every)
        return self._data.items()


class ReadingRows(ReadingMapping[list[dict[str, Any]]]):
    """The rows by recipe (:class:`~builder.site.views.RowsByRecipe`) as a view: a recipe's rows, as
    dicts or as its Arrow table, read ``rows-of:<slug>``."""

    def __init__(self, data: RowsByRecipe) -> None:
        super().__init__(data, "rows-of", "rows")
        self._tables = data

    def table(self, slug: str) -> pa.Table:
        self._one(slug)
        return self._tables.table(slug)


_ROWS = frozenset({"rows", "row_files", "con", "_con"})


class ReadingSite(Site):
    """A site whose rows (their table, their files, the connection that queries them) read every row
    file, and whose recipes, case studies and posts are :class:`ReadingMapping` views."""

    _raw: Site
    _rows_keys: tuple[str, ...] = ("rows",)
    """What reading the rows reads: every row file, those of one hardware (:meth:`measured_on`) or
    those of some recipes (:meth:`recipe_rows`)."""

    def _read_rows(self) -> None:
        for key in object.__getattribute__(self, "_rows_keys"):
            note(key)

    def __getattribute__(self, name: str) -> Any:
        if name in _ROWS:
            object.__getattribute__(self, "_read_rows")()
        return super().__getattribute__(name)

    def measured_on(self, hardware: str) -> Site:
        # The rows of one hardware read the row files with a row on its nodes, not every row file.
        raw: Site = object.__getattribute__(self, "_raw")
        return reading_site(raw.measured_on(hardware), rows_keys=(f"rows-on:{hardware}",))

    def recipe_rows(self, recipes: Collection[str]) -> Site:
        # The rows of some recipes read those recipes' rows, not every row file.
        raw: Site = object.__getattribute__(self, "_raw")
        return reading_site(
            raw.recipe_rows(recipes), rows_keys=tuple(f"rows-of:{s}" for s in sorted(recipes))
        )

    @property
    def con(self) -> duckdb.DuckDBPyConnection:
        object.__getattribute__(self, "_read_rows")()
        raw: Site = object.__getattribute__(self, "_raw")
        return raw.con

    def close_connection(self) -> None:
        object.__getattribute__(self, "_raw").close_connection()

    def row_sources(self, row_ids: list[int]) -> list[tuple[ParsedFile, int]]:
        # Where some rows come from reads those rows: their recipes' rows, not every row file.
        raw: Site = object.__getattribute__(self, "_raw")
        if noting() and row_ids:
            recipes = raw.rows.column("recipe").take(row_ids).unique().to_pylist()
            for slug in recipes:
                note(f"rows-of:{slug}")
        return raw.row_sources(row_ids)


def reading_site(site: Site, rows_keys: tuple[str, ...] = ("rows",)) -> Site:
    """``site`` as a view (:class:`ReadingSite`)."""
    fields = {f.name: getattr(site, f.name) for f in dataclasses.fields(site)}
    fields["recipes"] = ReadingMapping(site.recipes, "front", "recipes")
    fields["case_studies"] = ReadingMapping(site.case_studies, None, "case-studies")
    fields["posts"] = ReadingMapping(site.posts, None, "posts")
    fields["_con"] = None
    view = ReadingSite(**fields)
    object.__setattr__(view, "_raw", site)
    object.__setattr__(view, "_rows_keys", rows_keys)
    return view


class ReadingReconciliation:
    """The reconciliation as a view: a row's status reads its recipe and its rows; a recipe's findings
    read the same; every finding (lists, counts) reads ``findings``."""

    def __init__(self, recon: Reconciliation, site: Site) -> None:
        self._recon = recon
        self._site = site
        self._recipe_of: tuple[np.ndarray, list[str]] | None = None

    def _rows_read(self, row_ids: Any) -> None:
        """Reading some rows' statuses reads those rows' recipes and rows."""
        if not noting():
            return
        if self._recipe_of is None:
            import pyarrow.compute as pc

            encoded = pc.dictionary_encode(self._site.rows.column("recipe")).combine_chunks()
            self._recipe_of = (encoded.indices.to_numpy(zero_copy_only=False), encoded.dictionary.to_pylist())
        codes, names = self._recipe_of
        if isinstance(row_ids, int):  # one row (a page asks row by row): no array work
            found = [int(codes[row_ids])]
        else:
            found = np.unique(codes[row_ids]).tolist()
        for code in found:
            note(f"front:{names[code]}")
            note(f"rows-of:{names[code]}")

    def status(self, row_id: int) -> RowStatus:
        self._rows_read(row_id)
        return self._recon.status(row_id)

    @property
    def kind_of_row(self) -> _KindOfRow:
        return _KindOfRow(self._recon.kind_of_row, self._rows_read)

    @property
    def kinds(self) -> list[RowStatus]:
        # The distinct statuses: which row has which is read through kind_of_row or status.
        return self._recon.kinds

    @property
    def statuses(self) -> dict[int, RowStatus]:
        # Statuses set one by one (hand-made reconciliations); each is read through status.
        return self._recon.statuses

    def findings_for(self, recipe: str) -> list[Finding]:
        note(f"front:{recipe}")
        note(f"rows-of:{recipe}")
        return self._recon.findings_for(recipe)

    @property
    def findings(self) -> list[Finding]:
        note("findings")
        return self._recon.findings

    @property
    def open_findings(self) -> list[Finding]:
        note("findings")
        return self._recon.open_findings

    def open_recipe_count(self) -> int:
        note("findings")
        return self._recon.open_recipe_count()

    def finding_counts_by_recipe(self) -> dict[str, tuple[int, int]]:
        note("findings")
        return self._recon.finding_counts_by_recipe()

    def finding_counts(self) -> tuple[int, int]:
        note("findings")
        return self._recon.finding_counts()

    def findings_digest(self) -> str | None:
        note("findings")
        return self._recon.findings_digest()

    def __getattr__(self, name: str) -> Any:
        # Anything else of the reconciliation is read whole: every row and every recipe.
        note("rows")
        note("recipes")
        return getattr(self._recon, name)


class _KindOfRow:
    """``kind_of_row`` read by row ids: notes what those rows' statuses read."""

    def __init__(self, array: np.ndarray, rows_read: Callable[[Any], None]) -> None:
        self._array = array
        self._rows_read = rows_read

    def __getitem__(self, row_ids: Any) -> Any:
        self._rows_read(row_ids)
        return self._array[row_ids]


class ReadingMarkdown:
    """The markdown as a view: a body rendered reads its file and what its figures show."""

    def __init__(self, markdown: Markdown) -> None:
        self._markdown = markdown

    def _reads(self, source: str | Document) -> None:
        rel = getattr(source, "rel", None)
        if rel is None or not noting():
            return
        note(f"file:{rel}")
        note(f"figures:{rel}")

    def render(self, source: str | Document, *, faq: bool = False) -> RenderedBody:
        self._reads(source)
        return self._markdown.render(source, faq=faq)

    def figures_of(self, doc: Document) -> Any:
        self._reads(doc)
        return self._markdown.figures_of(doc)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._markdown, name)


class ReadingSummary:
    """The content summary as a view: each part read is a value of its own."""

    def __init__(self, summary: ContentSummary) -> None:
        self._summary = summary

    def __getattr__(self, name: str) -> Any:
        note(f"summary:{name}")
        return getattr(self._summary, name)


def reading_context(ctx: RenderContext) -> RenderContext:
    """The render context whose domain values are reading views (see the module's docstring)."""
    site = reading_site(ctx.site)
    return dataclasses.replace(
        ctx,
        site=site,
        recon=cast("Reconciliation", ReadingReconciliation(ctx.recon, ctx.site)),
        markdown=cast("Markdown", ReadingMarkdown(ctx.markdown)),
        rows=ReadingRows(ctx.rows)
        if isinstance(ctx.rows, RowsByRecipe)
        else ReadingMapping(ctx.rows, "rows-of", "rows"),
        cases_by_recipe=cast(
            "dict[str, list[Any]]", ReadingMapping(ctx.cases_by_recipe, None, "case-studies")
        ),
        comparisons=cast("dict[str, str]", ReadingMapping(ctx.comparisons, None, "models")),
    )


def reading_summary(summary: ContentSummary) -> ContentSummary:
    return cast("ContentSummary", ReadingSummary(summary))


def value_digests(ctx: RenderContext, summary: ContentSummary) -> dict[str, Callable[[str], bytes]]:
    """How :class:`~builder.engine.depindex.DepIndex` digests the keys of values worked out before
    the pages render (``figures:<path>``, ``summary:<part>``), by kind: from this build's values,
    so a kept page's earlier reads are compared with what they are now."""
    site = ctx.site
    docs = {
        page.doc.rel: page.doc
        for pages in (site.recipes, site.case_studies, site.posts)
        for page in pages.values()
    }

    def figures(rel: str) -> bytes:
        doc = docs.get(rel)
        shown = ctx.markdown.figures_of(doc) if doc is not None else ()
        return figures_digest(shown).encode() if shown else b"-"

    def part(name: str) -> bytes:
        return repr(getattr(summary, name, None)).encode()

    return {"figures": figures, "summary": part}

"""What loading one file produced, kept across builds and keyed by the file's content hash.

A content file's parse (front matter, model, problems) depends only on its bytes and path. A row
file's validated rows depend on its bytes and on whether the recipes and nodes it names exist, so
they are keyed by both. A build that changes one file re-parses and re-validates that file only; the
rows of every other file come back from the typed table of the previous build, and the result —
rows, their order, ``row_id``, ``file_id``, every problem — is what a clean load produces.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from builder.data.load import PageEntry, SiteLoader, read_content
from builder.engine.inputs import digest_bytes
from builder.engine.memo import Memo
from builder.errors import Problem, Problems
from builder.files import InputError

if TYPE_CHECKING:
    import duckdb
    import pyarrow as pa

    from builder.data.rows import ParsedFile, RowFile


Context = tuple[tuple[tuple[str, bool], ...], tuple[tuple[str, bool], ...]]


@dataclass
class RowEntry:
    """One row file as loaded."""

    digest: bytes
    kind: str
    recipes: tuple[str, ...]
    """Distinct ``recipe`` cells of the file (valid or not)."""
    nodes: tuple[str, ...]
    context: Context
    """Whether each of those recipes and nodes existed when the file was validated."""
    ragged: bool
    reported: frozenset[tuple[int, str]]
    errors: list[Problem]
    rows: int
    """Valid rows the file contributed (their typed rows are in :attr:`RowCache.typed`)."""
    plain: bool = False
    """:attr:`builder.data.rowfile.ParsedFile.plain`: row ``r`` is line ``r + 2`` (else finding a row's
    line re-reads and parses the file: the downloads ask for every row's line)."""


@dataclass
class RowCache:
    entries: dict[str, RowEntry] = field(default_factory=dict)
    """By file path, in the order of :attr:`typed`."""
    typed: pa.Table | None = None
    """Every valid row of every entry, in entry order, as the ``rows`` table holds them."""

    def offsets(self) -> dict[str, tuple[int, int]]:
        """By file path: (first row, row count) of its rows in :attr:`typed` (empty without it)."""
        out: dict[str, tuple[int, int]] = {}
        if self.typed is None:
            return out
        offset = 0
        for rel, entry in self.entries.items():
            out[rel] = (offset, entry.rows)
            offset += entry.rows
        return out


@dataclass
class LoadCache(SiteLoader):
    """What the load stage reuses, owned by :class:`~builder.engine.incremental.IncrementalBuilder`:
    the rows table with each row file's entry, and the engine's memo (:mod:`builder.engine.memo`),
    where each content file's parse is kept under ``("page", path, content hash)``."""

    memo: Memo = field(default_factory=Memo)
    rows: RowCache = field(default_factory=RowCache)
    front: dict[str, bytes] = field(default_factory=dict)
    """Hash of each content file's front matter as this build loaded it (listing pages depend on
    the front matter, not the body)."""
    scanned: dict[str, bytes] | None = None
    """Content hashes of the row files and content pages (by ``data/rows/…``, ``content/…`` path)
    from the build's own scan of its inputs, when it made one just before loading: the load then
    reads only the files that changed.
    Consumed by the load (reset to None), so it never outlives that scan."""
    _scanned: dict[str, bytes] | None = None
    """:attr:`scanned` as the load under way took it."""
    unsettled: Callable[[], None] | None = None
    """Stores what the last load computed but did not store yet into the memo
    (:meth:`builder.engine.findings_memo.FindingsMemo.settle`); run by :meth:`settle`, never pickled."""

    def settle(self) -> None:
        """Complete the cache at the end of a build, before a save or the next load (see :attr:`unsettled`)."""
        self._scanned = None
        unsettled, self.unsettled = self.unsettled, None
        if unsettled is not None:
            unsettled()

    def begin(self, root: Path) -> None:
        self._scanned, self.scanned = self.scanned, None  # good for this load only
        self.front = {}

    def page(self, rel: str, path: Path, parse: Callable[[bytes, Problems], Any], problems: Problems) -> Any:
        """The load of a content file from the memo (not even read when the build's scan hashed
        it), or parsed now and kept under ``("page", rel, content hash)``."""
        digest = (self._scanned or {}).get(rel)
        entry: PageEntry | None = self.memo.get(("page", rel, digest)) if digest is not None else None
        if entry is None:
            data = read_content(rel, path, problems)
            if data is None:
                return None
            key = ("page", rel, digest_bytes(data))
            entry = self.memo.get(key)
            if entry is None:
                local = Problems()
                page = parse(data, local)
                entry = PageEntry(page, local.errors, digest_bytes(_front_matter(data)))
                self.memo.put(key, entry)
        self.front[rel] = entry.front_digest
        problems.errors.extend(entry.errors)
        return entry.page

    def read_row_files_first(self) -> bool:
        return self._scanned is None

    def load_rows(
        self,
        files: Sequence[RowFile],
        connect: Callable[[], duckdb.DuckDBPyConnection],
        recipe_slugs: set[str],
        node_ids: set[str],
        problems: Problems,
    ) -> tuple[list[ParsedFile], pa.Table]:
        """:func:`load_rows` over this cache's rows."""
        return load_rows(files, connect, recipe_slugs, node_ids, problems, self.rows, self._scanned)


def _front_matter(data: bytes) -> bytes:
    """The bytes up to the line closing the front matter (all of them when it is not closed)."""
    end = data.find(b"\n---", 3)
    return data if end < 0 else data[: end + 4]


def _context(
    recipes: Sequence[str], nodes: Sequence[str], known_recipes: set[str], known_nodes: set[str]
) -> Context:
    return (
        tuple((r, r in known_recipes) for r in recipes),
        tuple((n, n in known_nodes) for n in nodes),
    )


def _distinct_by_file(raw: pa.Table, column: str, files: int) -> list[tuple[str, ...]]:
    """Per file (``_file``), the distinct non-empty values of ``column``, sorted.

    Dictionary codes and numpy, not ``Table.group_by`` (whose Acero import costs ≈ 0.05 s)."""
    import numpy as np
    import pyarrow.compute as pc

    encoded = pc.dictionary_encode(raw.column(column).combine_chunks())
    words = encoded.dictionary.to_pylist()
    codes = pc.fill_null(encoded.indices, -1).to_numpy().astype(np.int64) + 1  # 0: null
    file_of = raw.column("_file").to_numpy().astype(np.int64)
    pairs = np.unique(file_of * (len(words) + 1) + codes)
    out: list[list[str]] = [[] for _ in range(files)]
    for file_index, code in zip(
        (pairs // (len(words) + 1)).tolist(), (pairs % (len(words) + 1)).tolist(), strict=True
    ):
        value = words[code - 1] if code else None
        if value:
            out[file_index].append(str(value))
    return [tuple(sorted(values)) for values in out]


def load_rows(
    files: Sequence[RowFile],
    connect: Callable[[], duckdb.DuckDBPyConnection],
    known_recipes: set[str],
    known_nodes: set[str],
    problems: Problems,
    cache: RowCache,
    scanned: Mapping[str, bytes] | None = None,
) -> tuple[list[ParsedFile], pa.Table]:
    """Parse and validate the files that changed, reuse the rest; return what a clean load returns.

    ``scanned``: content hashes of files on disk by path (:attr:`LoadCache.scanned`); ``connect``
    gives the DuckDB connection that validates changed files (called only if there are some)."""
    import numpy as np
    import pyarrow as pa

    from builder.data.ingest import validate_rows
    from builder.data.rows import ParsedFile, parse_row_files

    # Reused rows are taken from the previous table by position, consecutive files in one slice
    # (a slice per file cost more than the rest of an unchanged load).
    old_offsets = cache.offsets()
    parsed: list[ParsedFile | None] = [None] * len(files)
    tables: list[pa.Table | tuple[int, int] | None] = [None] * len(files)
    entries: dict[str, RowEntry] = {}
    fresh: list[int] = []
    known = scanned or {}
    # A file on disk the build's scan hashed is not read again unless it is parsed.
    digests = [
        digest
        if source.data is None and (digest := known.get(source.rel)) is not None
        else _digest_row_file(source)
        for source in files
    ]
    for index, source in enumerate(files):
        entry = cache.entries.get(source.rel)
        if (
            entry is not None
            and entry.digest == digests[index]
            and entry.kind == source.kind
            and entry.context == _context(entry.recipes, entry.nodes, known_recipes, known_nodes)
            and source.rel in old_offsets
        ):
            item = ParsedFile(source, None, ragged=entry.ragged, plain=entry.plain)
            item.reported = set(entry.reported)
            parsed[index] = item
            tables[index] = old_offsets[source.rel]
            entries[source.rel] = entry
            problems.errors.extend(entry.errors)
        else:
            fresh.append(index)

    if fresh:
        local = Problems()
        fresh_parsed, raw = parse_row_files([files[i] for i in fresh], local)
        typed = validate_rows(connect(), fresh_parsed, raw, sorted(known_recipes), sorted(known_nodes), local)
        by_path: dict[str, list[Problem]] = {}
        for problem in local.errors:
            by_path.setdefault(problem.path, []).append(problem)
        problems.errors.extend(local.errors)
        problems.warnings.extend(local.warnings)
        file_ids = typed.column("file_id").to_numpy()
        recipes_of = _distinct_by_file(raw, "recipe", len(fresh))
        nodes_of = _distinct_by_file(raw, "node", len(fresh))
        # Rows of one file are contiguous (files in order, rows in file order).
        typed_starts = np.searchsorted(file_ids, np.arange(len(fresh) + 1))
        whole = len(fresh) == len(files)  # nothing reused: the typed table is the result
        for local_index, index in enumerate(fresh):
            item = fresh_parsed[local_index]
            recipes, nodes = recipes_of[local_index], nodes_of[local_index]
            t0, t1 = int(typed_starts[local_index]), int(typed_starts[local_index + 1])
            parsed[index] = item
            tables[index] = None if whole else typed.slice(t0, t1 - t0)
            entries[item.source.rel] = RowEntry(
                digest=digests[index],
                kind=item.source.kind,
                recipes=recipes,
                nodes=nodes,
                context=_context(recipes, nodes, known_recipes, known_nodes),
                ragged=item.ragged,
                reported=frozenset(item.reported),
                errors=by_path.get(item.source.rel, []),
                rows=t1 - t0,
                plain=item.plain,
            )
        if whole:
            cache.entries = {f.rel: entries[f.rel] for f in files}
            cache.typed = typed.combine_chunks()
            return [p for p in parsed if p is not None], cache.typed

    final_parsed: list[ParsedFile] = [p for p in parsed if p is not None]
    if not fresh and cache.typed is not None and list(cache.entries) == [f.rel for f in files]:
        return final_parsed, cache.typed  # nothing changed: same rows, same ids
    pieces: list[pa.Table] = []
    counts: list[int] = []
    run: list[int] = []  # [start, end) of the previous table's rows still to take
    for table in tables:
        if isinstance(table, tuple):
            start, count = table
            counts.append(count)
            if run and run[1] == start:
                run[1] = start + count
                continue
            if run and run[1] > run[0]:
                pieces.append(_previous(cache, run))
            run = [start, start + count]
            continue
        if run and run[1] > run[0]:
            pieces.append(_previous(cache, run))
        run = []
        counts.append(table.num_rows if table is not None else 0)
        if table is not None and table.num_rows:
            pieces.append(table)
    if run and run[1] > run[0]:
        pieces.append(_previous(cache, run))
    if pieces:
        combined = pa.concat_tables(pieces).combine_chunks()
    else:
        from builder.data.ingest import empty_typed_table

        combined = empty_typed_table()
    n = combined.num_rows
    file_id = np.repeat(np.arange(len(files), dtype=np.int32), counts)
    combined = combined.set_column(
        combined.schema.get_field_index("row_id"), "row_id", pa.array(np.arange(n, dtype=np.int32))
    )
    combined = combined.set_column(combined.schema.get_field_index("file_id"), "file_id", pa.array(file_id))
    cache.entries = {f.rel: entries[f.rel] for f in files}
    cache.typed = combined
    return final_parsed, combined


def _previous(cache: RowCache, run: list[int]) -> pa.Table:
    assert cache.typed is not None
    return cache.typed.slice(run[0], run[1] - run[0])


def _digest_row_file(source: RowFile) -> bytes:
    """The file's digest; for one that cannot be read (too big), a digest of why, so its parse runs
    and reports it."""
    try:
        return digest_bytes(source.read())
    except InputError as exc:
        return digest_bytes(b"\0refused\0" + exc.message.encode())

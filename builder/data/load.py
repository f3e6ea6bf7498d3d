"""Stage 1-3: load, validate and ingest everything into a :class:`Site`, rendering nothing.

Every problem is collected into a :class:`~builder.errors.Problems` accumulator; the caller decides
whether to abort (``build``) or to report (``check``).
"""

from __future__ import annotations

import datetime as dt
import functools
import os
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from builder.config import SiteConfig
from builder.content.flags import FlagSyntaxError, FlagValue, flag_map, parse_env, split_args
from builder.content.markdown import Document, split_document
from builder.content.models import (
    RESERVED_SLUGS,
    SLUG_RE,
    CaseStudyMeta,
    Hardware,
    Node,
    PostMeta,
    RecipeMeta,
)
from builder.errors import BuilderError, Problem, Problems
from builder.files import FOLDER, SKIP_DIRS, UNREADABLE, InputError, read_regular, readable, too_big, walk
from builder.limits import CONTENT_FILE_BYTES
from builder.yamlio import CONTROL_RE, YamlDoc, YamlProblem, control_problem, load_yaml

if TYPE_CHECKING:
    import duckdb
    import pyarrow as pa

    from builder.data.rows import ParsedFile, RowFile

M = TypeVar("M", bound=BaseModel)


@dataclass
class PageEntry:
    """A content file as loaded: its page (None when invalid) and the problems it produced."""

    page: Any
    errors: list[Problem]
    front_digest: bytes
    """Hash of the front matter alone: listing pages depend on it, not on the body."""


def read_content(rel: str, path: Path, problems: Problems) -> bytes | None:
    """The bytes of the content file ``rel``, or None with the reason in ``problems`` (not a regular
    file, unreadable, or gone since the scan)."""
    try:
        return read_regular(path, CONTENT_FILE_BYTES)
    except (FileNotFoundError, InputError) as exc:
        problems.error(rel, None, exc.message if isinstance(exc, InputError) else "vanished while loading")
        return None


class SiteLoader:
    """How :func:`load_site` gets each file's load: read and parsed now. The engine's subclass
    (:class:`builder.engine.loadcache.LoadCache`) keeps each file's load by its content hash and
    gives the same site and the same problems."""

    def begin(self, root: Path) -> None:
        """A load of the site at ``root`` starts."""

    def page(self, rel: str, path: Path, parse: Callable[[bytes, Problems], Any], problems: Problems) -> Any:
        """The page of the content file ``rel`` (None when invalid), its problems in ``problems``."""
        data = read_content(rel, path, problems)
        return None if data is None else parse(data, problems)

    def load_content(self, root: Path) -> Content:
        """Every content page (after the rows: see :func:`load_site`)."""
        return load_content(root, self)

    def read_row_files_first(self) -> bool:
        """Whether row files are read as they are found (else as they are parsed, which keeps only the
        bytes needed later)."""
        return False

    def load_rows(
        self,
        files: Sequence[RowFile],
        connect: Callable[[], duckdb.DuckDBPyConnection],
        recipe_slugs: set[str],
        node_ids: set[str],
        problems: Problems,
    ) -> tuple[list[ParsedFile], pa.Table]:
        """Every row file's rows, validated and typed, registered as the ``rows`` table."""
        from builder.data.ingest import ingest_rows
        from builder.data.rows import parse_row_files

        parsed, raw = parse_row_files(list(files), problems)
        return parsed, ingest_rows(connect(), parsed, raw, sorted(recipe_slugs), sorted(node_ids), problems)


@dataclass(frozen=True)
class Page(Generic[M]):
    """A content file with validated front matter."""

    slug: str
    doc: Document
    meta: M


@dataclass(frozen=True)
class Recipe(Page[RecipeMeta]):
    flags: dict[str, FlagValue] = field(default_factory=dict)
    """Normalised serve flags, for reconciliation."""
    flag_args: tuple[str, ...] = ()
    """The serve flags as the argument list commands print (``shlex.split`` of the front matter's)."""


CaseStudy = Page[CaseStudyMeta]
Post = Page[PostMeta]


@dataclass
class Site:
    """Everything loaded and validated; the input of every later stage."""

    config: SiteConfig
    hardware: dict[str, Hardware]
    nodes: dict[str, Node]
    recipes: dict[str, Recipe]
    case_studies: dict[str, CaseStudy]
    posts: dict[str, Post]
    row_files: list[ParsedFile]
    rows: pa.Table
    _con: duckdb.DuckDBPyConnection | None
    """See :attr:`con`; ``None`` until first used."""
    extra: dict[str, Any] = field(default_factory=dict)
    """Results of later stages (reconciliation), keyed by stage name."""
    recipe_files: frozenset[str] = frozenset()
    """Slugs of every ``content/recipes/*.md``, loaded or not (a reference to one that failed to
    load says so, rather than "unknown recipe")."""

    @property
    def con(self) -> duckdb.DuckDBPyConnection:
        """A DuckDB connection with ``rows`` registered, opened on first use: a cached build whose
        changes need no query (an edited recipe body) never imports DuckDB, a slow import."""
        if self._con is None:
            import duckdb

            self._con = duckdb.connect()
            self._con.register("rows", self.rows)
        return self._con

    def close_connection(self) -> None:
        """Close the connection if one is open (before a fork: DuckDB is not fork-safe)."""
        if self._con is not None:
            self._con.close()
            self._con = None

    def measured_on(self, hardware: str) -> Site:
        """The site with only the rows measured on ``hardware``'s nodes (row ids, files and lines as
        they are)."""
        import dataclasses

        import pyarrow as pa
        import pyarrow.compute as pc

        nodes = pa.array(
            sorted(n for n, node in self.nodes.items() if node.hardware == hardware), pa.string()
        )
        rows = self.rows.filter(pc.is_in(self.rows.column("node"), value_set=nodes))
        return dataclasses.replace(self, rows=rows, _con=None)

    def recipe_rows(self, recipes: Collection[str]) -> Site:
        """The site with only the rows of ``recipes`` (row ids, files and lines as they are)."""
        import dataclasses

        import pyarrow as pa
        import pyarrow.compute as pc

        slugs = pa.array(sorted(recipes), pa.string())
        rows = self.rows.filter(pc.is_in(self.rows.column("recipe"), value_set=slugs))
        return dataclasses.replace(self, rows=rows, _con=None)

    def row_sources(self, row_ids: list[int]) -> list[tuple[ParsedFile, int]]:
        """The file each row comes from and its row number there, for rows given by ``row_id``."""
        file_ids = self.rows.column("file_id").to_numpy()[row_ids].tolist()
        file_rows = self.rows.column("file_row").to_numpy()[row_ids].tolist()
        return [(self.row_files[f], r) for f, r in zip(file_ids, file_rows, strict=True)]

    def hardware_name(self, hardware_id: str) -> str:
        entry = self.hardware.get(hardware_id)
        return entry.name if entry else hardware_id

    def node_hardware(self) -> dict[str, str]:
        """Node id → its hardware id."""
        return {name: node.hardware for name, node in self.nodes.items()}


def pydantic_problems(
    exc: ValidationError,
    rel: str,
    line_of: Callable[[tuple[Any, ...]], int],
    problems: Problems,
    prefix: str = "",
) -> None:
    """Turn pydantic's errors into located, readable problems."""
    for err in exc.errors():
        loc = tuple(err["loc"])
        key = ".".join(str(part) for part in loc)
        kind = err["type"]
        if kind == "missing":
            message = f"missing required key '{key}'"
        elif kind == "extra_forbidden":
            message = f"unknown key '{key}'"
        else:
            shown = err.get("input")
            text = repr(shown) if not isinstance(shown, dict | list) else type(shown).__name__
            message = f"'{key}': {str(err['msg']).removeprefix('Value error, ')} (got {text[:80]})"
        problems.error(rel, line_of(loc), prefix + message)


def _load_yaml_mapping(
    path: Path, rel: str, model: type[M], problems: Problems, *, required: bool, known: set[str] | None = None
) -> dict[str, M]:
    """Load ``id: entry`` YAML; ``known`` receives every id, valid or not (to avoid cascades)."""
    try:
        doc = load_yaml(read_regular(path, CONTENT_FILE_BYTES).decode("utf-8"))
    except FileNotFoundError:
        if required:
            problems.error(rel, None, "file is missing")
        return {}
    except InputError as exc:
        problems.error(rel, None, exc.message)
        return {}
    except UnicodeDecodeError:
        problems.error(rel, None, "not valid UTF-8")
        return {}
    except YamlProblem as exc:
        problems.error(rel, exc.line, exc.message)
        return {}
    for dup in doc.duplicates:
        problems.error(rel, dup.line, dup.message)
    if doc.value is None:
        return {}
    if not isinstance(doc.value, dict):
        problems.error(rel, 1, "must be a mapping of ids to entries")
        return {}
    out: dict[str, M] = {}
    for key, value in doc.value.items():
        key_s = str(key)
        if known is not None:
            known.add(key_s)
        if not SLUG_RE.fullmatch(key_s):
            problems.error(
                rel, doc.line_of((key,)), f"id '{key_s}' must be lowercase letters, digits, '.', '-' or '_'"
            )
            continue
        if key_s in RESERVED_SLUGS:
            problems.error(rel, doc.line_of((key,)), _reserved(key_s))
            continue
        try:
            out[key_s] = model.model_validate(value)
        except ValidationError as exc:
            pydantic_problems(
                exc, rel, functools.partial(_entry_line, doc, key), problems, prefix=f"'{key_s}': "
            )
    return out


def _reserved(slug: str) -> str:
    names = " and ".join(sorted(RESERVED_SLUGS))
    return f"'{slug}' is reserved: the site writes {names} beside the pages; choose another name"


def _entry_line(doc: YamlDoc, key: Any, loc: tuple[Any, ...]) -> int:
    """File line of ``loc`` inside the entry ``key`` of a YAML mapping."""
    return doc.line_of((key, *loc))


def _load_pages(
    root: Path,
    folder: str,
    model: type[M],
    problems: Problems,
    make: Callable[[Problems], Callable[[str, Document, M], Page[M]]],
    loader: SiteLoader,
    known: set[str] | None = None,
) -> dict[str, Page[M]]:
    """Load ``content/<folder>/*.md``; ``known`` receives every slug, valid or not.

    ``make(problems)`` gives the function that turns a validated document into its page."""
    directory = root / "content" / folder
    pages: dict[str, Page[M]] = {}
    if not directory.is_dir():
        return pages
    names, others = _content_files(directory, f"content/{folder}/", problems)
    for name in names:
        rel = f"content/{folder}/{name}"
        path = directory / name
        slug = os.path.splitext(name)[0]
        if known is not None:
            known.add(slug)
        refused = _file_slug_problem(slug)
        if refused is not None:
            problems.error(rel, None, refused)
            continue
        parse = functools.partial(_parse_page, rel, slug, model, make)
        page = loader.page(rel, path, parse, problems)
        if page is not None:
            pages[slug] = page
    for other in others:
        problems.warn(f"content/{folder}/{other}", None, "ignored: content files end in .md")
    return pages


def _file_slug_problem(slug: str) -> str | None:
    """What is wrong with a content file named ``<slug>.md``, or None."""
    if not SLUG_RE.fullmatch(slug):
        return f"file name '{slug}' is not a valid slug (lowercase letters, digits, '.', '-', '_')"
    if slug in RESERVED_SLUGS:
        return _reserved(slug)
    return None


def _content_files(
    directory: Path, rel: str, problems: Problems | None = None
) -> tuple[list[str], list[str]]:
    """Names of the ``*.md`` files of ``directory``, and the relative paths of every other file
    under it (which are ignored, with a warning), each sorted as paths sort. Listed by
    :func:`builder.files.walk`, as the engine's input scan lists them: a symbolic link, a special
    file, a folder named ``*.md`` or an unreadable file is an error in ``problems``."""
    listing = walk(directory)
    names: list[str] = []
    others: list[list[str]] = []
    for key, entry in listing.files.items():
        path = entry.path
        parts = key.split("/")
        if len(parts) == 1 and key.endswith(".md"):
            if readable(path):
                names.append(key)
            elif problems is not None:
                problems.error(f"{rel}{key}", None, UNREADABLE)
        elif os.path.splitext(key)[1] != ".md" or len(parts) > 1:
            others.append(parts)
    if problems is not None:
        for key, reason in sorted(listing.refused.items()):
            problems.error(f"{rel}{key}", None, reason)
        for key in sorted(listing.folders):
            if key.count("/") == 1 and key.endswith(".md/"):
                problems.error(f"{rel}{key.rstrip('/')}", None, FOLDER)
    return sorted(names), ["/".join(parts) for parts in sorted(others)]


def _load_page(
    rel: str,
    slug: str,
    data: bytes,
    model: type[M],
    problems: Problems,
    *,
    make: Callable[[Problems], Callable[[str, Document, M], Page[M]]],
) -> Page[M] | None:
    try:
        # Universal newlines, as reading in text mode gives.
        text = data.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")
        control = CONTROL_RE.search(text)
        if control is not None:
            problem = control_problem(control.group())
            problems.error(rel, text.count("\n", 0, control.start()) + 1, str(problem))
            return None
        doc = split_document(rel, text)
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        problems.error(rel, line, f"not valid UTF-8 (byte 0x{data[exc.start]:02x}); save the file as UTF-8")
        return None
    except BuilderError as exc:
        problems.add(exc)
        return None
    for dup in doc.front.duplicates:
        problems.error(rel, dup.line, dup.message)
    try:
        meta = model.model_validate(doc.front.value)
    except ValidationError as exc:
        pydantic_problems(exc, rel, doc.line_of, problems)
        return None
    return make(problems)(slug, doc, meta)


def _parse_page(
    rel: str,
    slug: str,
    model: type[M],
    make: Callable[[Problems], Callable[[str, Document, M], Page[M]]],
    data: bytes,
    problems: Problems,
) -> Page[M] | None:
    return _load_page(rel, slug, data, model, problems, make=make)


def _make_recipe(problems: Problems) -> Callable[[str, Document, RecipeMeta], Recipe]:
    def make(slug: str, doc: Document, meta: RecipeMeta) -> Recipe:
        try:
            flags, args = flag_map(meta.flags), split_args(meta.flags)
        except FlagSyntaxError as exc:
            problems.error(doc.rel, doc.line_of(("flags",)), str(exc))
            flags, args = {}, ()
        return Recipe(slug, doc, meta, flags, args)

    return make


def _plain_page(problems: Problems) -> Callable[[str, Document, Any], Page[Any]]:
    del problems
    return Page


_LOADED_FOLDERS = frozenset({"content/recipes/", "content/case-studies/", "content/posts/", "data/rows/"})


def _refuse_other_links(root: Path, problems: Problems) -> None:
    """Links and special files elsewhere in ``content/`` and ``data/`` (the folders the loaders
    list report their own): the input scan refuses them everywhere, so the load does as well."""
    for name in ("content", "data"):
        listing = walk(root / name, f"{name}/", skip=_LOADED_FOLDERS)
        for key, reason in sorted(listing.refused.items()):
            if not (name == "data" and key.endswith(".yaml") and key.count("/") == 1):
                problems.error(key, None, reason)  # data/*.yaml: reported by their reader


def _warn_future_posts(site: Site, problems: Problems) -> None:
    """A post dated after the build's day is published now all the same: most likely a typo."""
    now = today(site.config)
    for post in site.posts.values():
        if post.meta.date > now:
            problems.warn(
                post.doc.rel,
                post.doc.line_of(("date",)),
                f"dated in the future ({post.meta.date.isoformat()}, after the build's day {now.isoformat()}); "
                "it is published now all the same",
            )


def recipe_reference_problem(slug: str, recipe_files: Collection[str]) -> str:
    """What is wrong with a reference to the recipe ``slug``, which did not load."""
    if slug in recipe_files:
        return f"recipe '{slug}' did not load (see the errors of content/recipes/{slug}.md)"
    return f"unknown recipe '{slug}' (no content/recipes/{slug}.md)"


def _check_recipe_identifiers(recipes: Iterable[Recipe], problems: Problems) -> None:
    """A recipe's engine version, flags and env are matched whole against its rows: printable ASCII.
    Its other text that is not prose (engine, model, checkpoint) may hold no invisible format character."""
    from builder.data.row_values import format_character_problem, identifier_problem

    for recipe in recipes:
        meta = recipe.meta
        checks: list[tuple[tuple[str, ...], str | None]] = [
            (("engine_version",), identifier_problem("engine_version", meta.engine_version)),
            (("flags",), identifier_problem("flags", meta.flags)),
            *((("env", name), identifier_problem(f"env {name}", value)) for name, value in meta.env.items()),
            *(
                ((name,), format_character_problem(name, getattr(meta, name) or ""))
                for name in ("engine", "model", "checkpoint", "served_model")
            ),
        ]
        for loc, problem in checks:
            if problem is not None:
                problems.error(recipe.doc.rel, recipe.doc.line_of(loc), problem)


def _check_references(site: Site, problems: Problems) -> None:
    if site.hardware:
        for slug, recipe in site.recipes.items():
            if recipe.meta.hardware not in site.hardware:
                problems.error(
                    recipe.doc.rel,
                    recipe.doc.line_of(("hardware",)),
                    f"unknown hardware '{recipe.meta.hardware}' (not in data/hardware.yaml)",
                )
            del slug
        for node_id, node in site.nodes.items():
            if node.hardware not in site.hardware:
                problems.error(
                    "data/nodes.yaml",
                    None,
                    f"'{node_id}': unknown hardware '{node.hardware}' (not in data/hardware.yaml)",
                )
    for case in site.case_studies.values():
        for index, arm in enumerate(case.meta.arms):
            if arm.recipe is not None and arm.recipe not in site.recipes:
                problems.error(
                    case.doc.rel,
                    case.doc.line_of(("arms", index, "recipe")),
                    recipe_reference_problem(arm.recipe, site.recipe_files),
                )


def _check_row_strings(site: Site, problems: Problems) -> None:
    """Flags and env of rows must parse; each distinct string is parsed once."""
    import pyarrow.compute as pc

    memo: dict[tuple[str, str], str | None] = {}
    for column, parse in (("flags", flag_map), ("env", parse_env)):
        # Arrow, not SQL: a build that needs no query then never opens DuckDB (Site.con).
        distinct = pc.drop_null(pc.unique(site.rows.column(column))).to_pylist()
        bad: dict[str, str] = {}
        for value in distinct:
            key = (column, value)
            if key not in memo:
                try:
                    parse(value)
                    memo[key] = None
                except FlagSyntaxError as exc:
                    memo[key] = str(exc)
            error = memo[key]
            if error is not None:
                bad[value] = error
        if not bad:
            continue
        hits = site.con.execute(
            f"SELECT file_id, file_row, {column} FROM rows WHERE list_contains($bad, {column}) ORDER BY row_id",
            {"bad": list(bad)},
        ).fetchall()
        for file_id, file_row, value in hits:
            parsed = site.row_files[file_id]
            problems.error(parsed.source.rel, parsed.line_of(file_row), f"{column}: {bad[value]}")


@dataclass
class Content:
    """Every content page, as :func:`load_content` loads them, with their problems."""

    recipes: dict[str, Recipe]
    case_studies: dict[str, CaseStudy]
    posts: dict[str, Post]
    problems: Problems


def load_content(root: Path, loader: SiteLoader) -> Content:
    problems = Problems()
    recipes: dict[str, Recipe] = _load_pages(  # type: ignore[assignment]
        root, "recipes", RecipeMeta, problems, _make_recipe, loader
    )
    case_studies = _load_pages(root, "case-studies", CaseStudyMeta, problems, _plain_page, loader)
    posts = _load_pages(root, "posts", PostMeta, problems, _plain_page, loader)
    return Content(recipes, case_studies, posts, problems)


def load_site(
    config: SiteConfig,
    problems: Problems,
    *,
    extra_row_files: list[RowFile] | None = None,
    loader: SiteLoader | None = None,
) -> Site:
    """Load and validate the whole site; every problem goes into ``problems``.

    ``loader`` says how each file's load is had (:class:`SiteLoader`: parsed now); the site and
    the problems are the same whichever.
    """
    import pyarrow as pa

    from builder.data.row_values import check_row_values
    from builder.data.rows import discover_row_files

    loader = loader if loader is not None else SiteLoader()
    loader.begin(config.root)
    root = config.root
    # Ids of entries that failed validation still count as known, so that one bad entry is reported
    # once rather than again on every row that references it.
    node_ids: set[str] = set()
    recipe_slugs: set[str] = set()
    hardware = _load_yaml_mapping(
        root / "data" / "hardware.yaml", "data/hardware.yaml", Hardware, problems, required=False
    )
    nodes = _load_yaml_mapping(
        root / "data" / "nodes.yaml", "data/nodes.yaml", Node, problems, required=True, known=node_ids
    )
    # Recipe slugs are file names: the rows are validated against them whatever the front matter says.
    names = _content_files(root / "content" / "recipes", "content/recipes/")[0]
    recipe_slugs.update(os.path.splitext(name)[0] for name in names)
    row_problems = Problems()
    files = discover_row_files(root, row_problems, read=loader.read_row_files_first()) + list(
        extra_row_files or []
    )
    con: duckdb.DuckDBPyConnection | None = None

    def connect() -> duckdb.DuckDBPyConnection:
        nonlocal con
        if con is None:
            import duckdb

            con = duckdb.connect()
        return con

    parsed, rows = loader.load_rows(files, connect, recipe_slugs, node_ids, row_problems)
    if con is not None:
        con.register("rows", rows)
    # The rows are validated against the recipes' file names, not their front matter: the content
    # can load after them (or beside them, in a loader that forks: review/check.py).
    loaded = loader.load_content(root)
    recipes, case_studies, posts = loaded.recipes, loaded.case_studies, loaded.posts
    # In the order a sequential load reports them: content first, then rows.
    for part in (loaded.problems, row_problems):
        problems.errors.extend(part.errors)
        problems.warnings.extend(part.warnings)
    for item in parsed:
        # The all-string tables have been validated into ``rows``; holding them would double the
        # memory of a big import (a slice keeps its whole parsed buffer alive).
        item.table = None
    # The parsed strings the typed rows do not share are free now; hand their pages back so the
    # stages after (numpy, DuckDB: other allocators) do not add to them.
    pa.default_memory_pool().release_unused()
    site = Site(
        config,
        hardware,
        nodes,
        recipes,
        case_studies,
        posts,
        parsed,
        rows,
        con,
        recipe_files=frozenset(recipe_slugs),
    )
    _check_references(site, problems)
    _check_recipe_identifiers(site.recipes.values(), problems)
    _warn_future_posts(site, problems)
    _refuse_other_links(root, problems)
    _check_row_strings(site, problems)
    check_row_values(site.rows, lambda: site.con, site.row_files, today(config), problems)
    return site


def replace_recipe(site: Site, rel: str, data: bytes, problems: Problems) -> Site:
    """``site`` with the recipe file ``rel`` (``content/recipes/<slug>.md``, edited or new) loaded from
    ``data`` as :func:`load_site` loads it, and the checks the load makes of a recipe: its problems go
    into ``problems``, and a recipe that does not load is left out.

    ``site`` is a site that loaded without errors, so every problem found is this file's. The rows
    are not validated again: they name recipes by file name, and no file was added or removed."""
    import dataclasses

    folder, _, name = rel.rpartition("/")
    if folder != "content/recipes" or not name.endswith(".md"):
        raise ValueError(f"{rel} is not a recipe file")
    slug = os.path.splitext(name)[0]
    recipe: Page[RecipeMeta] | None = None
    refused = _file_slug_problem(slug)
    if refused is not None:
        problems.error(rel, None, refused)
    elif len(data) > CONTENT_FILE_BYTES:
        problems.error(rel, None, too_big(len(data), CONTENT_FILE_BYTES))
    else:
        recipe = _load_page(rel, slug, data, RecipeMeta, problems, make=_make_recipe)
    recipes = {key: value for key, value in site.recipes.items() if key != slug}
    if isinstance(recipe, Recipe):
        recipes[slug] = recipe
        if slug in site.recipes:  # in its place; a new one where a load lists it (by file name)
            recipes = {key: recipes[key] for key in site.recipes}
        else:
            recipes = dict(sorted(recipes.items(), key=lambda item: f"{item[0]}.md"))
        _check_recipe_identifiers([recipe], problems)
    edited = dataclasses.replace(site, recipes=recipes, recipe_files=site.recipe_files | {slug}, _con=None)
    _check_references(edited, problems)
    return edited


def with_row_file(
    site: Site,
    rel: str,
    data: bytes,
    problems: Problems,
    con: duckdb.DuckDBPyConnection | None = None,
) -> Site:
    """``site`` with the row file ``rel`` (under ``data/rows/``, edited or new) read from ``data`` as
    :func:`load_site` reads it: parsed, validated against the site's recipes and nodes, its flags, env
    and values checked, its rows in their place among the others (files in path order, rows in file
    order, each row's id its position). Problems go into ``problems``; rows that fail are left out,
    as the load leaves them out.

    ``site`` is a site that loaded without errors, so every problem found is this file's. ``con``: a
    DuckDB connection to validate on (one is opened when not given); nothing stays registered on it.
    """
    import bisect
    import dataclasses

    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    from builder.data.ingest import validate_rows
    from builder.data.row_values import check_row_values
    from builder.data.rows import ParsedFile, RowFile, parse_row_files, row_file_kind, row_file_order
    from builder.limits import ROW_FILE_BYTES

    kind = row_file_kind(rel)
    folders = rel.split("/")[:-1]
    if kind is None or folders[:2] != ["data", "rows"] or not SKIP_DIRS.isdisjoint(folders):
        raise ValueError(f"{rel} is not a row file the load reads")
    source = RowFile(rel, data, kind)
    typed: pa.Table | None = None
    if len(data) > ROW_FILE_BYTES:
        problems.error(rel, None, too_big(len(data), ROW_FILE_BYTES))
        item = ParsedFile(source, None)
    else:
        parsed, raw = parse_row_files([source], problems)
        [item] = parsed
        own = con if con is not None else _connect()
        try:
            typed = validate_rows(own, parsed, raw, sorted(site.recipe_files), sorted(site.nodes), problems)
        finally:
            if con is None:
                own.close()
    # The file's place: its own when it was there, else where the path order puts it.
    files = list(site.row_files)
    at = bisect.bisect_left([row_file_order(f.source.rel) for f in files], row_file_order(rel))
    replaced = at < len(files) and files[at].source.rel == rel
    if replaced:
        files[at] = item
    else:
        files.insert(at, item)
    rows = site.rows
    file_ids = rows.column("file_id").to_numpy()
    start = int(np.searchsorted(file_ids, at, "left"))
    stop = int(np.searchsorted(file_ids, at, "right")) if replaced else start
    pieces = [rows.slice(0, start)]
    column = rows.schema.get_field_index("file_id")
    mine = None
    if typed is not None and typed.num_rows:
        mine = typed.set_column(column, "file_id", pa.array(np.full(typed.num_rows, at, np.int32))).cast(
            rows.schema
        )
        pieces.append(mine)
    after = rows.slice(stop)
    if not replaced and after.num_rows:  # the files after a new one move up by one
        after = after.set_column(column, "file_id", pc.add(after.column("file_id"), pa.scalar(1, pa.int32())))
    pieces.append(after)
    table = pa.concat_tables(pieces)
    table = table.set_column(
        table.schema.get_field_index("row_id"), "row_id", pa.array(np.arange(table.num_rows, dtype=np.int32))
    )
    updated = dataclasses.replace(site, row_files=files, rows=table, _con=None)
    if mine is not None:
        # The checks a load makes of every row, made of this file's (they are per row).
        alone = dataclasses.replace(updated, rows=mine, _con=None)
        try:
            _check_row_strings(alone, problems)
            check_row_values(mine, lambda: alone.con, files, today(site.config), problems)
        finally:
            alone.close_connection()
    return updated


def _connect() -> duckdb.DuckDBPyConnection:
    import duckdb

    return duckdb.connect()


def today(config: SiteConfig) -> dt.date:
    """The build's notion of "now": SOURCE_DATE_EPOCH when set, for reproducible output."""
    if config.source_date_epoch is not None:
        return dt.datetime.fromtimestamp(config.source_date_epoch, tz=dt.UTC).date()
    return dt.datetime.now(tz=dt.UTC).date()

"""``import``: benchmark tool output → a validated row file, without hand-copying.

Readers (:mod:`builder.importers`) turn files into measurements; this stage merges the run metadata
(options win over what a file records), refuses to go on while required metadata is missing, builds
the CSV, and validates it with the very load path ``check`` uses (the new file is an extra row file
of the site), so recipe and node references and every cell are checked exactly as ``check`` would.
Nothing is written unless all of that passes; a file is never overwritten.
"""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from builder.config import SiteConfig
from builder.content.models import REQUIRED_ROW_FIELDS, ROW_FIELDS, SLUG_RE
from builder.errors import OutputError, Problems
from builder.importers import STDIN, STDIN_DISPLAY, Measurement, load_cells, read_files

if TYPE_CHECKING:
    from builder.data.load import Site

STDOUT = "-"
STDOUT_REL = "<stdout>"

REQUIRED_META: dict[str, str] = {
    "recipe": "--recipe SLUG",
    "node": "--node NODE",
    "engine_version": "--engine-version V",
    "date": "--date YYYY-MM-DD",
    "request_rate": "--request-rate R|inf",
    "concurrency": "--concurrency N|none",
    "load": "--concurrency N (a closed-loop run) or --request-rate R|inf (an open-loop one)",
}
"""Required row metadata a benchmark file may lack, and the option that supplies it."""

_LOAD_HINT = {
    "request_rate": "the requests/s the run sent, inf when all at once; or paste the command line or the "
    "'Traffic request rate' line printed above the summary",
    "concurrency": "the run's --max-concurrency, none when it had no cap; or paste the command line or the "
    "'Maximum request concurrency' line printed above the summary",
}

_RECORD_HINT: dict[tuple[str, str], str] = {
    ("vllm-bench", "node"): "or benchmark with --metadata node=NODE",
    ("vllm-bench", "engine_version"): "or benchmark with --metadata engine_version=V",
}


@dataclass(frozen=True)
class ImportOptions:
    """What the command line gives; ``None`` = not given."""

    fmt: str | None
    """The ``--from`` format; ``None``: detected from each file's content."""
    files: tuple[Path, ...]
    """The files to read; ``-`` is :attr:`pasted`."""
    recipe: str | None = None
    node: str | None = None
    engine_version: str | None = None
    engine_build: str | None = None
    flags: str | None = None
    env: str | None = None
    date: str | None = None
    contributor: str | None = None
    request_rate: str | None = None
    """Requests/s of an open-loop run, or ``inf``: for output that does not show it."""
    concurrency: str | None = None
    """The run's concurrency cap, or ``none``: for output that does not show it."""
    out: str | None = None
    """``None``: the conventional path under data/rows; ``-``: standard output; else a file path."""
    pasted: bytes | None = None
    """The text read from standard input, for the file ``-``."""

    def metadata(self) -> dict[str, str]:
        names = ("node", "engine_version", "engine_build", "flags", "env", "date", "contributor")
        return {name: value for name in names if (value := getattr(self, name)) is not None}

    def load(self) -> dict[str, str]:
        """The load settings given as options."""
        names = ("request_rate", "concurrency")
        return {name: value for name in names if (value := getattr(self, name)) is not None}


@dataclass(frozen=True)
class MissingField:
    """A required field that neither the files nor the options give."""

    field: str
    option: str
    files: tuple[str, ...]
    """Files that do not record it (empty for fields no file can carry, like the recipe)."""
    hint: str = ""

    def describe(self) -> str:
        text = f"missing {self.field}: pass {self.option}"
        if self.hint:
            text += f" ({self.hint})"
        if self.files:
            text += f"; not recorded in {', '.join(self.files)}"
        return text


@dataclass
class ImportResult:
    """The outcome of :func:`prepare_import`; ``ok`` when ``data`` may be written to ``dest``."""

    rel: str
    """The new file's path in messages (relative to the site root when inside it)."""
    dest: Path | None
    """Where to write; ``None`` for standard output."""
    data: bytes = b""
    rows: int = 0
    problems: Problems = field(default_factory=Problems)
    missing: list[MissingField] = field(default_factory=list)
    other_errors: int = 0
    """Errors the site has elsewhere (reported by ``check``; they do not block the import)."""

    @property
    def ok(self) -> bool:
        return not self.problems.errors and not self.missing


def _missing(
    options: ImportOptions, merged: list[dict[str, str]], items: list[Measurement]
) -> list[MissingField]:
    out = []
    if not options.recipe:
        out.append(MissingField("recipe", REQUIRED_META["recipe"], ()))
    for name in ("node", "engine_version", "date"):
        short = [m for m, meta in zip(items, merged, strict=True) if not meta.get(name)]
        lacking = tuple(dict.fromkeys(_file_of(m) for m in short))
        if lacking:
            hints = dict.fromkeys(_RECORD_HINT.get((m.fmt, name), "") for m in short)
            out.append(MissingField(name, REQUIRED_META[name], lacking, "; ".join(h for h in hints if h)))
    given = options.load()
    for name in ("request_rate", "concurrency", "load"):
        # "load": the file shows neither, and either option settles it
        lacking = tuple(
            dict.fromkeys(
                _file_of(m)
                for m in items
                if name in m.unknown and (name not in given if name != "load" else not given)
            )
        )
        if lacking:
            out.append(MissingField(name, REQUIRED_META[name], lacking, _LOAD_HINT.get(name, "")))
    return out


def _merge(meta: dict[str, str], given: dict[str, str]) -> dict[str, str]:
    """A file's metadata under the options; a time of day belongs to the file's date, not another one."""
    merged = {**meta, **given}
    if "time" in meta and merged.get("date") != meta.get("date"):
        del merged["time"]
    return merged


def _file_of(item: Measurement) -> str:
    """The file a measurement was read from (its origin may add ``:14`` or `` benchmarks[2]``)."""
    return item.file or item.origin


def build_csv(rows: Sequence[dict[str, str]]) -> tuple[bytes, list[int]]:
    """CSV bytes (required columns, then every column some row fills, in model order) and each row's line."""
    used = {name for row in rows for name, value in row.items() if value != ""}
    columns = [name for name in ROW_FIELDS if name in REQUIRED_ROW_FIELDS or name in used]
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(columns)
    lines: list[int] = []
    line = 2
    for row in rows:
        lines.append(line)
        start = buffer.tell()
        writer.writerow([row.get(name, "") for name in columns])
        line += buffer.getvalue()[start:].count("\n")
    return buffer.getvalue().encode("utf-8"), lines


def conventional_rel(recipe: str, date: str, node: str) -> str:
    return f"data/rows/{recipe}/{date}-{node}.csv"


def free_rel(root: Path, rel: str, taken: set[str]) -> str:
    """``rel``, or ``<stem>-2.csv``, ``-3``… : the first name neither on disk nor already taken."""
    stem, suffix = rel.rsplit(".", 1)
    candidate, number = rel, 1
    while candidate in taken or (root / candidate).exists():
        number += 1
        candidate = f"{stem}-{number}.{suffix}"
    return candidate


def _destination(
    config: SiteConfig, options: ImportOptions, default_rel: str, problems: Problems
) -> tuple[str, Path | None]:
    if options.out == STDOUT:
        return STDOUT_REL, None
    if options.out is None:
        rel = free_rel(config.root, default_rel, set())
        return rel, config.root / rel
    dest = Path(options.out).resolve()
    try:
        rel = dest.relative_to(config.root).as_posix()
    except ValueError:
        rel = str(options.out)
    if dest.suffix != ".csv":
        problems.error(rel, None, "the output file must end in .csv")
    if dest.exists():
        problems.error(rel, None, "already exists; import never overwrites a file (choose another --out)")
    elif not rel.startswith("data/rows/"):
        problems.warn(rel, None, "not under data/rows/ of the site: check and build will not see it")
    return rel, dest


def prepare_import(config: SiteConfig, options: ImportOptions) -> ImportResult:
    """Read, merge, validate; write nothing. The caller writes ``result.data`` when ``result.ok``."""
    problems = Problems()
    items = read_files(options.fmt, list(options.files), problems, options.pasted)
    if problems.errors:
        return ImportResult("", None, problems=problems)
    if not items:
        shown = (STDIN_DISPLAY if str(path) == STDIN else str(path) for path in options.files)
        problems.error(", ".join(shown), None, "no measurements to import")
        return ImportResult("", None, problems=problems)
    given = options.metadata()
    merged = [_merge(item.meta, given) for item in items]
    missing = _missing(options, merged, items)
    if missing:
        return ImportResult("", None, problems=problems, missing=missing)
    assert options.recipe is not None
    for name, value in (("recipe", options.recipe), *(("node", meta["node"]) for meta in merged[:1])):
        if not SLUG_RE.match(value):
            problems.error(
                _file_of(items[0]),
                None,
                f"{name} '{value}' is not an id (lowercase letters, digits, '.', '-', '_')",
            )
    nodes = {meta["node"] for meta in merged}
    if len(nodes) > 1:
        problems.error(
            ", ".join(dict.fromkeys(_file_of(m) for m in items)),
            None,
            f"the files name different nodes ({', '.join(sorted(nodes))}): one row file holds one run; "
            "import them separately or pass --node",
        )
    if problems.errors:
        return ImportResult("", None, problems=problems)
    rows = [
        {**item.cells, **load_cells({**item.load, **options.load()}), **meta, "recipe": options.recipe}
        for item, meta in zip(items, merged, strict=True)
    ]
    data, lines = build_csv(rows)
    default_rel = conventional_rel(options.recipe, min(meta["date"] for meta in merged), merged[0]["node"])
    rel, dest = _destination(config, options, default_rel, problems)
    result = ImportResult(rel, dest, data, len(rows), problems)
    if problems.errors:
        return result
    _validate(config, result, options.recipe, items, lines)
    return result


def _validate(
    config: SiteConfig, result: ImportResult, recipe_slug: str, items: list[Measurement], lines: list[int]
) -> None:
    """Run the new file through the site's load path, as ``check`` would."""
    from builder.data.load import load_site
    from builder.data.rows import RowFile

    site_problems = Problems()
    site = load_site(config, site_problems, extra_row_files=[RowFile(result.rel, result.data, "csv")])
    origin_at = dict(zip(lines, (item.origin for item in items), strict=True))
    for problem in sorted(site_problems.errors):
        if problem.path != result.rel:
            result.other_errors += 1
            continue
        origin = origin_at.get(problem.line or 0)
        message = f"{problem.message} (from {origin})" if origin else problem.message
        result.problems.error(problem.path, problem.line, message)
    if result.problems.errors:
        return
    recipe = site.recipes.get(recipe_slug)
    if recipe is not None:
        expected = {recipe.meta.checkpoint, recipe.meta.served_model}
        for model in dict.fromkeys(item.model for item in items if item.model):
            if model not in expected:
                result.problems.warn(
                    result.rel,
                    None,
                    f"the benchmark names model '{model}', not the recipe's checkpoint "
                    f"'{recipe.meta.checkpoint}': is --recipe right?",
                )
    _duplicates(site, result, origin_at)


def _duplicates(site: Site, result: ImportResult, origin_at: dict[int, str]) -> None:
    """A row identical to one already in the site was most likely imported before."""
    ours = next(i for i, f in enumerate(site.row_files) if f.source.rel == result.rel)
    same = " AND ".join(f"a.{c} IS NOT DISTINCT FROM b.{c}" for c in ROW_FIELDS)
    # narrow the other side to the recipe and dates of the new rows first: the null-safe join on
    # every column is then over a handful of rows, not the whole site
    hits = site.con.execute(
        f"""WITH a AS (SELECT * FROM rows WHERE file_id = $ours),
        b AS (SELECT * FROM rows WHERE file_id <> $ours AND recipe IN (SELECT recipe FROM a)
              AND date IN (SELECT date FROM a))
        SELECT a.file_row, min(b.file_id), min(b.file_row) FROM a JOIN b ON {same}
        GROUP BY a.file_row ORDER BY a.file_row""",
        {"ours": ours},
    ).fetchall()
    for row, file_id, file_row in hits:
        other = site.row_files[file_id]
        line = site.row_files[ours].line_of(row)
        result.problems.error(
            result.rel,
            line,
            f"identical to {other.source.rel}:{other.line_of(file_row)}: already imported?"
            + (f" (from {origin_at[line]})" if line in origin_at else ""),
        )


def write_import(result: ImportResult) -> Path:
    """Create the file (never replacing one, even if it appeared since) and return its path."""
    assert result.dest is not None and result.ok
    result.dest.parent.mkdir(parents=True, exist_ok=True)
    try:
        with open(result.dest, "xb") as handle:
            handle.write(result.data)
    except FileExistsError:
        raise OutputError("appeared while importing; nothing was overwritten", result.dest) from None
    return result.dest


def shown_path(path: Path) -> str:
    """A path as the user would type it: relative to the working folder when inside it."""
    try:
        return os.path.relpath(path)
    except ValueError:  # another drive on Windows
        return str(path)

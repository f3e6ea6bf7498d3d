"""``diff``: what a change does to the site, in markdown, for a pull request.

Both sides are loaded with the normal pipeline (load → reconcile): the head is the working tree (or
a revision), the base a revision extracted with ``git archive`` into a temporary folder, so the
user's working tree, index and worktree list are never touched. Compared: rows added and removed per
recipe (as multisets of complete rows, so moving or renaming a file changes nothing), findings opened
and closed (by finding id), headline figures that changed, and pages added, removed or edited.
"""

from __future__ import annotations

import json
import re
import subprocess
import tarfile
import tempfile
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from builder.config import SiteConfig, load_config
from builder.content.models import METRICS, ROW_FIELDS, SETTING_COLUMNS, WORKLOAD
from builder.engine.pipeline import load_and_reconcile
from builder.errors import ConfigError, Problem

SITE_ENTRIES = ("content", "data", "site.yaml")
"""What a site root holds that the comparison reads (templates and output are not compared)."""
MAX_LISTED_ROWS = 25
MAX_LISTED_PROBLEMS = 10

RowKey = tuple[Any, ...]


@dataclass(frozen=True)
class HeadlineView:
    """A recipe's headline figures in comparable form."""

    setting: tuple[tuple[str, Any], ...]
    date: str
    node: str
    figures: tuple[tuple[str, str, float, int], ...]
    """(label, unit, value, trials)."""


@dataclass
class Snapshot:
    """One side of the comparison."""

    label: str
    rows: dict[str, Counter[RowKey]] = field(default_factory=dict)
    findings: dict[str, dict[str, Any]] = field(default_factory=dict)
    headlines: dict[str, HeadlineView | None] = field(default_factory=dict)
    titles: dict[str, str] = field(default_factory=dict)
    pages: dict[str, str] = field(default_factory=dict)
    """Content path → digest, for pages added, removed or edited."""
    errors: list[Problem] = field(default_factory=list)
    reconciled: bool = True
    exists: bool = True


@dataclass
class RecipeRows:
    recipe: str
    added: list[RowKey]
    removed: list[RowKey]
    edited: list[tuple[RowKey, RowKey]] = field(default_factory=list)
    """(before, after) of rows whose measurement stayed and whose other fields changed."""

    def edited_fields(self) -> list[str]:
        changed = {
            name
            for old, new in self.edited
            for name, a, b in zip(ROW_FIELDS, old, new, strict=True)
            if a != b
        }
        return [name for name in ROW_FIELDS if name in changed]


@dataclass
class SiteDiff:
    base: Snapshot
    head: Snapshot
    rows: list[RecipeRows]
    opened: list[dict[str, Any]]
    closed: list[dict[str, Any]]
    annotated: list[dict[str, Any]]
    headlines: list[tuple[str, HeadlineView | None, HeadlineView | None]]
    pages_added: list[str]
    pages_removed: list[str]
    pages_edited: list[str]

    @property
    def empty(self) -> bool:
        return not (
            self.rows
            or self.opened
            or self.closed
            or self.annotated
            or self.headlines
            or self.pages_added
            or self.pages_removed
            or self.pages_edited
        )


# ------------------------------------------------------------------------------------------ git


def git(args: Sequence[str], cwd: Path) -> str:
    """Run git with an argument list and return its output; its failure (or its absence) is a
    :class:`ConfigError` with git's message. ``diff`` and ``contribute`` both read git through it."""
    try:
        done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, check=False)
    except FileNotFoundError:
        raise ConfigError("git is not installed; diff and contribute need it") from None
    if done.returncode != 0:
        message = done.stderr.decode("utf-8", "replace").strip() or f"exit {done.returncode}"
        raise ConfigError(f"git {' '.join(args)}: {message}")
    return done.stdout.decode("utf-8", "replace")


def resolve(root: Path, ref: str) -> str:
    """The commit id ``ref`` names, or a ConfigError saying it names none."""
    try:
        return git(
            ["rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}"], root
        ).strip()
    except ConfigError:
        raise ConfigError(f"'{ref}' is not a revision of the repository at {root}") from None


@contextmanager
def extracted(root: Path, ref: str) -> Iterator[Path | None]:
    """The site root as it was at ``ref``, in a temporary folder; ``None`` when it did not exist."""
    commit = resolve(root, ref)
    top = Path(git(["rev-parse", "--show-toplevel"], root).strip()).resolve()
    prefix = root.resolve().relative_to(top).as_posix()
    prefix = "" if prefix == "." else prefix + "/"
    listed = git(["ls-tree", "--name-only", commit, prefix or "."], top).split("\n")
    present = [f"{prefix}{name}" for name in SITE_ENTRIES if f"{prefix}{name}" in listed]
    with tempfile.TemporaryDirectory(prefix="builder-diff-") as tmp:
        dest = Path(tmp)
        if not present:
            yield None
            return
        # git archive writes a tar of the tree; nothing in .git, the index or the worktree changes
        proc = subprocess.Popen(
            ["git", "archive", "--format=tar", commit, "--", *present],
            cwd=top,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert proc.stdout is not None
        with tarfile.open(fileobj=proc.stdout, mode="r|") as archive:
            archive.extractall(dest, filter="data")
        stderr = proc.stderr.read() if proc.stderr else b""
        if proc.wait() != 0:
            raise ConfigError(f"git archive {ref}: {stderr.decode('utf-8', 'replace').strip()}")
        site_root = dest / prefix if prefix else dest
        yield site_root


# ------------------------------------------------------------------------------------------ snapshot


def snapshot(config: SiteConfig, label: str) -> Snapshot:
    """Load and reconcile one side; a side with errors still reports its rows and pages."""
    from builder.site.views import headline, rows_by_recipe

    loaded = load_and_reconcile(config)
    site = loaded.site
    snap = Snapshot(label, errors=sorted(loaded.problems.errors), reconciled=loaded.recon is not None)
    columns = ", ".join(ROW_FIELDS)
    recipe_at = ROW_FIELDS.index("recipe")
    for row in site.con.sql(f"SELECT {columns} FROM rows").fetchall():
        snap.rows.setdefault(row[recipe_at], Counter())[tuple(row)] += 1
    for pages in (site.recipes, site.case_studies, site.posts):
        for page in pages.values():
            snap.pages[page.doc.rel] = page.doc.digest
    snap.titles = {slug: recipe.meta.title for slug, recipe in site.recipes.items()}
    if loaded.recon is not None:
        for finding in loaded.recon.findings:
            data = finding.as_json()
            snap.findings[_finding_key(data)] = data
        grouped = rows_by_recipe(site)
        for slug, recipe in site.recipes.items():
            head = headline(recipe, grouped.get(slug, []), loaded.recon, loaded.site.node_hardware())
            snap.headlines[slug] = (
                None
                if head is None
                else HeadlineView(
                    tuple(sorted(head.setting.items())),
                    head.date.isoformat(),
                    head.node,
                    tuple(
                        (label, unit, float(value), int(trials))
                        for label, unit, value, trials in head.figures
                    ),
                )
            )
    return snap


def _finding_key(data: dict[str, Any]) -> str:
    if isinstance(data.get("id"), str):
        return str(data["id"])
    return json.dumps(
        [data.get("recipe"), data.get("metric"), data.get("setting")], sort_keys=True, default=str
    )


def empty_snapshot(label: str) -> Snapshot:
    """A side without a site: nothing to compare, so everything on the other side is new."""
    return Snapshot(label, exists=False)


# ------------------------------------------------------------------------------------------ compare


def compare(base: Snapshot, head: Snapshot) -> SiteDiff:
    rows = []
    for recipe in sorted(set(base.rows) | set(head.rows)):
        before, after = base.rows.get(recipe, Counter()), head.rows.get(recipe, Counter())
        added, removed = after - before, before - after
        if added or removed:
            rows.append(
                _pair_edits(
                    recipe,
                    sorted(added.elements(), key=_row_order),
                    sorted(removed.elements(), key=_row_order),
                )
            )
    opened: list[dict[str, Any]] = []
    closed: list[dict[str, Any]] = []
    annotated: list[dict[str, Any]] = []
    # findings of a side that could not be reconciled are unknown, not absent
    if base.reconciled and head.reconciled:
        opened = [head.findings[k] for k in sorted(set(head.findings) - set(base.findings))]
        closed = [base.findings[k] for k in sorted(set(base.findings) - set(head.findings))]
        annotated = [
            head.findings[k]
            for k in sorted(set(head.findings) & set(base.findings))
            if head.findings[k].get("annotation") != base.findings[k].get("annotation")
        ]
    headlines = []
    if base.reconciled and head.reconciled:
        for recipe in sorted(set(base.headlines) | set(head.headlines)):
            old, new = base.headlines.get(recipe), head.headlines.get(recipe)
            if old != new:
                headlines.append((recipe, old, new))
    return SiteDiff(
        base,
        head,
        rows,
        opened,
        closed,
        annotated,
        headlines,
        sorted(set(head.pages) - set(base.pages)),
        sorted(set(base.pages) - set(head.pages)),
        sorted(p for p in set(head.pages) & set(base.pages) if head.pages[p] != base.pages[p]),
    )


_MEASUREMENT = tuple(ROW_FIELDS.index(name) for name in ("date", "time", *SETTING_COLUMNS, *METRICS))
"""Fields that make a row the same measurement (its run's date and time, its setting, its figures); a
change elsewhere (notes, flags...) is an edit."""


def _pair_edits(recipe: str, added: list[RowKey], removed: list[RowKey]) -> RecipeRows:
    pool: dict[tuple[Any, ...], list[RowKey]] = {}
    for row in added:
        pool.setdefault(tuple(row[i] for i in _MEASUREMENT), []).append(row)
    edited, gone = [], []
    for row in removed:
        match = pool.get(tuple(row[i] for i in _MEASUREMENT))
        if match:
            edited.append((row, match.pop(0)))
        else:
            gone.append(row)
    new = [row for rows in pool.values() for row in rows]
    return RecipeRows(recipe, sorted(new, key=_row_order), gone, edited)


def _row_order(row: RowKey) -> tuple[Any, ...]:
    return tuple((value is None, str(value)) for value in row)


def diff_revisions(config: SiteConfig, base_ref: str, head_ref: str | None = None) -> SiteDiff:
    """Compare the site at ``base_ref`` with the working tree (or ``head_ref``)."""
    root = config.root
    base_label = f"{base_ref} ({resolve(root, base_ref)[:12]})"
    with extracted(root, base_ref) as base_root:
        base = snapshot(load_config(base_root), base_label) if base_root else empty_snapshot(base_label)
    if head_ref is None:
        head = snapshot(config, "the working tree")
    else:
        head_label = f"{head_ref} ({resolve(root, head_ref)[:12]})"
        with extracted(root, head_ref) as head_root:
            head = snapshot(load_config(head_root), head_label) if head_root else empty_snapshot(head_label)
    return compare(base, head)


# ------------------------------------------------------------------------------------------ markdown

_ROW_COLUMNS = ("date", "node", "engine_version", *WORKLOAD, *METRICS)
"""The columns a listed row shows: its run, its setting (the node, then the workload), its figures."""
_INDEX = {name: i for i, name in enumerate(ROW_FIELDS)}
_MD_SPECIAL = str.maketrans({c: f"\\{c}" for c in "\\`*_[]<>|#!~"})
_NOTIFIES = re.compile(r"@[A-Za-z0-9][A-Za-z0-9-]*(?:/[A-Za-z0-9][A-Za-z0-9._-]*)?|#[0-9]+|(?i:gh)-[0-9]+")
"""What GitHub turns into a notification or a cross-reference in a comment: ``@user``, ``@org/team``,
``#123``, ``GH-123``. Escaping does not stop it (GitHub finds them in the rendered text); a code
span does. Each alternative is a run of one class after a fixed start: linear in the text."""


def md(text: Any) -> str:
    """Contributor text made inert in markdown, a table cell included: no links, images, HTML or cell
    breaks, and ``@mentions`` and ``#123`` references in code spans, so nobody is notified and no
    issue is cross-referenced."""
    flat = " ".join(str(text).split())
    out, last = [], 0
    for match in _NOTIFIES.finditer(flat):
        out += [flat[last : match.start()].translate(_MD_SPECIAL), f"`{match.group()}`"]
        last = match.end()
    out.append(flat[last:].translate(_MD_SPECIAL))
    return "".join(out)


def _number(value: float) -> str:
    return f"{value:,.6g}" if abs(value) < 1e6 else f"{value:,.0f}"


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return _number(value)
    return md(value)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _rows_table(rows: list[RowKey]) -> list[str]:
    lines = ["| " + " | ".join(_ROW_COLUMNS) + " |", "|" + "---|" * len(_ROW_COLUMNS)]
    for row in rows[:MAX_LISTED_ROWS]:
        lines.append("| " + " | ".join(_cell(row[_INDEX[c]]) for c in _ROW_COLUMNS) + " |")
    if len(rows) > MAX_LISTED_ROWS:
        lines.append(f"\n…and {len(rows) - MAX_LISTED_ROWS} more.")
    return lines


def _headline_text(view: HeadlineView | None, label: str, unit: str) -> str:
    if view is None:
        return "no matching rows"
    for name, figure_unit, value, trials in view.figures:
        if (name, figure_unit) == (label, unit):
            trial_text = f", {trials} trials" if trials > 1 else ""
            return f"{_number(value)} ({view.date}, {md(view.node)}{trial_text})"
    return "—"


def _setting_text(view: HeadlineView | None) -> str:
    if view is None:
        return ""
    s = dict(view.setting)
    load = s.get("load") or f"concurrency {s.get('concurrency')}"
    return f"prompt {s.get('prompt_tokens')}, context {s.get('context_tokens')}, {load}"


def _finding_line(data: dict[str, Any]) -> str:
    """The finding's summary sentence first, then its metric and setting and its explanation."""
    text = " ".join(str(data[key]) for key in ("summary", "detail", "explanation") if data.get(key))
    text = text or f"{data.get('metric')} at {json.dumps(data.get('setting'), default=str)}"
    return f"**{md(data.get('recipe'))}**: {md(text)}"


def render_markdown(diff: SiteDiff) -> str:
    """The summary posted on a pull request."""
    base, head = diff.base, diff.head
    out = ["## What this change does to the site", "", f"Compared with {md(base.label)} → {md(head.label)}."]
    if not base.exists:
        out.append("The base revision has no site at this path: everything is new.")
    if base.errors:
        out.append(
            f"The base has {_plural(len(base.errors), 'error')} under the current builder "
            "(its formats may have changed since)."
        )
    if head.errors:
        out += ["", f"**`check` fails: {_plural(len(head.errors), 'error')}.**", ""]
        out += [f"- `{p.format().replace('`', chr(39))}`" for p in head.errors[:MAX_LISTED_PROBLEMS]]
        if len(head.errors) > MAX_LISTED_PROBLEMS:
            out.append(
                f"- …and {len(head.errors) - MAX_LISTED_PROBLEMS} more (run `python -m builder check`)."
            )
    if not (base.reconciled and head.reconciled):
        out += [
            "",
            "Findings and headline figures are not compared: a side has errors, so it was not reconciled (and rows with errors are not counted).",
        ]
    if diff.empty:
        out += ["", "No change to rows, findings, headline figures or pages."]
        return "\n".join(out) + "\n"

    if diff.rows:
        added = sum(len(r.added) for r in diff.rows)
        removed = sum(len(r.removed) for r in diff.rows)
        edited = sum(len(r.edited) for r in diff.rows)
        title = f"### Rows: +{added} −{removed}" + (f", {edited} edited" if edited else "")
        out += ["", f"{title} in {_plural(len(diff.rows), 'recipe')}", ""]
        out += ["| recipe | added | removed | edited |", "|---|---:|---:|---|"]
        for r in diff.rows:
            fields = f" ({md(', '.join(r.edited_fields()))})" if r.edited else ""
            out.append(f"| {md(r.recipe)} | {len(r.added)} | {len(r.removed)} | {len(r.edited)}{fields} |")
        for change in diff.rows:
            for verb, rows in (("added to", change.added), ("removed from", change.removed)):
                if rows:
                    out += [
                        "",
                        f"<details><summary>{_plural(len(rows), 'row')} {verb} {md(change.recipe)}</summary>",
                        "",
                    ]
                    out += [*_rows_table(rows), "", "</details>"]

    if diff.opened or diff.closed or diff.annotated:
        out += ["", f"### Findings: {len(diff.opened)} opened, {len(diff.closed)} closed", ""]
        out += [f"- opened: {_finding_line(f)}" for f in diff.opened]
        out += [f"- closed: {_finding_line(f)}" for f in diff.closed]
        for data in diff.annotated:
            note = data.get("annotation")
            status = (
                f"annotated ({md(note.get('status'))})" if isinstance(note, dict) else "annotation removed"
            )
            out.append(f"- {status}: {_finding_line(data)}")

    if diff.headlines:
        out += ["", f"### Headline figures changed: {_plural(len(diff.headlines), 'recipe')}", ""]
        out += ["| recipe | setting | figure | before | after |", "|---|---|---|---|---|"]
        for recipe, old, new in diff.headlines:
            labels = dict.fromkeys((f[0], f[1]) for view in (old, new) if view for f in view.figures)
            title = md(head.titles.get(recipe) or base.titles.get(recipe) or recipe)
            setting = _setting_text(new) or _setting_text(old)
            if _setting_text(old) and _setting_text(new) and _setting_text(old) != _setting_text(new):
                setting = f"{_setting_text(old)} → {_setting_text(new)}"
            if not labels:
                out.append(f"| {title} | {setting} | | no matching rows | no matching rows |")
            for label, unit in labels:
                before, after = _headline_text(old, label, unit), _headline_text(new, label, unit)
                if before != after:
                    out.append(f"| {title} | {setting} | {md(label)} ({md(unit)}) | {before} | {after} |")

    pages = [("added", diff.pages_added), ("removed", diff.pages_removed), ("edited", diff.pages_edited)]
    if any(items for _, items in pages):
        out += ["", "### Pages", ""]
        for verb, items in pages:
            if items:
                out.append(f"- {verb}: " + ", ".join(f"`{p}`" for p in items))
    return "\n".join(out) + "\n"

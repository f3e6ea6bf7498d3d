"""``check``: validate everything without rendering and report in one pass."""

from __future__ import annotations

import gc
import os
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from builder.analysis.annotations import LocatedAnnotation, attach_annotations
from builder.analysis.comparable import not_compared
from builder.analysis.findings import Finding, find_non_reproduction
from builder.analysis.run_groups import Combinations, combinations
from builder.config import SiteConfig
from builder.data.load import Content, Site, SiteLoader, load_content
from builder.engine.forked import Forked
from builder.engine.pipeline import load_with_annotations
from builder.errors import Problem, Problems, capped
from builder.wording import counted


@dataclass
class CheckReport:
    stats: dict[str, int]
    errors: list[Problem]
    warnings: list[Problem]
    findings: list[dict[str, Any]] = field(default_factory=list)
    """Each finding's ``as_json()``, or only its :func:`brief` keys when the report was made so."""
    strict: bool = False

    @property
    def unannotated(self) -> list[dict[str, Any]]:
        return [f for f in self.findings if f.get("annotation") is None]

    @property
    def exit_code(self) -> int:
        if self.errors:
            return 1
        if self.strict and self.unannotated:
            return 1
        return 0

    def as_json(self) -> dict[str, Any]:
        return {
            "stats": self.stats,
            "errors": [p.as_dict() for p in self.errors],
            "warnings": [p.as_dict() for p in self.warnings],
            "findings": self.findings,
        }

    @classmethod
    def refused(cls, errors: list[Problem]) -> CheckReport:
        """The report of a site that could not be loaded at all (a bad root or ``site.yaml``)."""
        stats = dict.fromkeys(
            ("rows", "row_files", "recipes", "case_studies", "posts", "nodes", "findings"), 0
        )
        return cls({**stats, "findings_open": 0}, capped(errors), [])

    def summary(self) -> str:
        s = self.stats
        text = (
            f"{counted(s['rows'], 'row')}, {counted(s['recipes'], 'recipe')}, "
            f"{counted(s['case_studies'], 'case study', 'case studies')}, {counted(s['posts'], 'post')}: "
            f"{counted(len(self.errors), 'error')}, {counted(len(self.warnings), 'warning')}, "
            f"{counted(len(self.findings), 'finding')}"
        )
        if self.strict and self.unannotated:
            text += f" ({len(self.unannotated)} without annotation: failing under --strict)"
        return text


def brief(finding: Finding) -> dict[str, Any]:
    """The keys of a finding that the text and GitHub formats print (``as_json`` builds every run)."""
    return {
        "kind": finding.kind,
        "recipe": finding.recipe,
        "metric": finding.metric,
        "summary": finding.summary(),
        "detail": finding.detail(),
        "explanation": finding.explanation_text(),
        "path": finding.path,
        "line": finding.line,
        "annotation": finding.annotation,
    }


FORK_PAGES = 200
"""Recipes from which ``check`` loads the content pages in a forked child while it loads the rows."""


class ForkedContent(SiteLoader):
    """``check``'s loader: on a big site the content pages are parsed in a forked child while this
    process loads the rows (parsing front matter and rows both hold the GIL)."""

    def __init__(self) -> None:
        self._child: Forked[Content] | None = None

    def begin(self, root: Path) -> None:
        recipes = root / "content" / "recipes"
        if recipes.is_dir() and sum(1 for _ in recipes.glob("*.md")) >= FORK_PAGES:
            self._child = Forked(partial(load_content, root, SiteLoader()))

    def load_content(self, root: Path) -> Content:
        child, self._child = self._child, None
        return child.result() if child is not None else load_content(root, self)


def check_site(config: SiteConfig, *, strict: bool = False, full: bool = True) -> CheckReport:
    """Load and validate everything and find the findings (on every core for a big site).

    ``full``: each finding as ``as_json()`` (the ``--format json`` contract); otherwise only
    what :func:`brief` keeps.
    """
    site, problems, annotations = load_with_annotations(config, loader=ForkedContent())
    stats = {
        "rows": site.rows.num_rows,
        "row_files": len(site.row_files),
        "recipes": len(site.recipes),
        "case_studies": len(site.case_studies),
        "posts": len(site.posts),
        "nodes": len(site.nodes),
    }
    # Findings only for a valid site, as the build reconciles only then; row statuses are not needed.
    convert = Finding.as_json if full else brief
    if not problems:
        prose_problems(site, problems, strict=strict)
    combos = None if problems else combinations(site)
    findings = [] if combos is None else converted_findings(site, annotations, problems, convert, combos)
    if combos is not None:
        for row in not_compared(site, combos):
            parsed = site.row_files[row.file_id]
            problems.warn(parsed.source.rel, parsed.line_of(row.file_row), row.message, kind="not_compared")
    if not problems.errors:
        failed_request_warnings(site, problems)
    stats["findings"] = len(findings)
    stats["findings_open"] = sum(1 for f in findings if f["annotation"] is None)
    return CheckReport(stats, capped(problems.errors), capped(problems.warnings), findings, strict)


FAILED_SHARE = 0.05
"""A row whose run lost more than this share of its requests gets a warning: its metrics describe the
requests that survived, a faster subset when the others timed out."""


def failed_request_warnings(site: Site, problems: Problems) -> None:
    """A ``failed_requests`` warning for each row where more than 5 % of the requests failed."""
    hits = site.con.execute(
        "SELECT file_id, file_row, requests, failed_requests FROM rows "
        "WHERE failed_requests > $share * requests ORDER BY file_id, file_row",
        {"share": FAILED_SHARE},
    ).fetchall()
    for file_id, file_row, requests, failed in hits:
        parsed = site.row_files[file_id]
        problems.warn(
            parsed.source.rel,
            parsed.line_of(file_row),
            f"{failed} of {requests} requests failed ({100 * failed / requests:.0f} %, more than "
            f"{100 * FAILED_SHARE:.0f} %): the metrics are of the requests that succeeded; check the run",
            kind="failed_requests",
        )


def prose_problems(site: Site, problems: Problems, *, strict: bool = False) -> None:
    """The figures of the bodies: an error for each ``{{ ... }}`` no row supports (as the build
    gives), a ``prose_figure`` warning (an error under ``strict``) for each plain figure no row of
    the page's recipes supports."""
    from builder.content.figures import plain_figures
    from builder.content.markdown import Markdown
    from builder.site.prose import bind_figures, prose_figure_warnings
    from builder.site.views import rows_by_recipe

    bodies = [
        page.doc.body for pages in (site.recipes, site.case_studies, site.posts) for page in pages.values()
    ]
    if not any("{{" in body or plain_figures(body) for body in bodies):
        return  # the common case at scale: no body quotes a figure
    rows = rows_by_recipe(site)
    _, errors = bind_figures(site, rows, Markdown())
    problems.errors.extend(errors)
    (problems.errors if strict else problems.warnings).extend(prose_figure_warnings(site, rows))


SPLIT_ROWS = 200_000
"""From this many rows on, :func:`converted_findings` splits the recipes between processes."""

T = TypeVar("T")


def converted_findings(
    site: Site,
    annotations: Sequence[LocatedAnnotation],
    problems: Problems,
    convert: Callable[[Finding], T],
    combos: Combinations | None = None,
    *,
    parts: int | None = None,
) -> list[T]:
    """``convert(finding)`` for every annotated finding, in :func:`reconcile_rows`' order, with
    the same annotation problems (in the same order), computed on several cores.

    Findings and annotations are per recipe, so the recipes (in name order, the findings' first
    sort key) are cut into ``parts`` shares of about equal rows; forked children compute all but
    the last share, which this process computes meanwhile, and send back only what ``convert``
    made of their findings (a :class:`Finding` holds closures over the rows; ``check`` needs
    JSON). ``parts`` defaults to one per core (at most 4) from :data:`SPLIT_ROWS` rows on, else 1.
    Row statuses are not computed: only findings.
    """
    if combos is None:
        combos = combinations(site)  # DuckDB is not fork-safe: queried here, before any fork
    if parts is None:
        parts = min(len(os.sched_getaffinity(0)), 4) if site.rows.num_rows >= SPLIT_ROWS else 1
    shares = _recipe_shares(site, combos, max(parts, 1))
    compute = partial(_share_findings, site, combos, annotations, convert)
    if len(shares) == 1:
        converted, errors = compute(shares[0])
        problems.errors.extend(errors)
        return converted
    # The children only read the parent's heap: frozen, the collector does not walk (and copy) it.
    gc.freeze()
    try:
        children = [Forked(partial(compute, share)) for share in shares[:-1]]
        try:
            mine = compute(shares[-1])
        except BaseException:
            for child in children:
                child.cancel()
            raise
        results = [child.result() for child in children] + [mine]
    finally:
        gc.unfreeze()
    note_order: dict[tuple[str, int | None], int] = {(n.path, n.line): i for i, n in enumerate(annotations)}
    errors = [problem for _, part_errors in results for problem in part_errors]
    # Each annotation's problems come from one share: ordered by annotation, as one pass gives.
    problems.errors.extend(sorted(errors, key=lambda p: note_order.get((p.path, p.line), -1)))
    return [item for part, _ in results for item in part]


def _recipe_shares(site: Site, combos: Combinations, parts: int) -> list[frozenset[str]]:
    """Recipes in name order cut into at most ``parts`` consecutive shares of about equal rows."""
    rows = np.bincount(combos.of_row_id, minlength=len(combos)) if len(combos) else np.zeros(0, np.int64)
    by_recipe: dict[str, int] = dict.fromkeys(site.recipes, 0)
    for i, slug in enumerate(combos.recipe):
        by_recipe[slug] = by_recipe.get(slug, 0) + int(rows[i])
    names = sorted(by_recipe)
    total = sum(by_recipe.values())
    shares: list[frozenset[str]] = []
    start, running = 0, 0
    for i, name in enumerate(names):
        running += by_recipe[name]
        if len(shares) < parts - 1 and running * parts >= total * (len(shares) + 1) and i + 1 < len(names):
            shares.append(frozenset(names[start : i + 1]))
            start = i + 1
    shares.append(frozenset(names[start:]))
    return shares


def _share_findings(
    site: Site,
    combos: Combinations,
    annotations: Sequence[LocatedAnnotation],
    convert: Callable[[Finding], T],
    share: Collection[str],
) -> tuple[list[T], list[Problem]]:
    findings = find_non_reproduction(site, combos, recipes=share)
    notes = [note for note in annotations if note.entry.recipe in share]
    problems = Problems()
    if notes:
        attach_annotations(findings, notes, problems)
    return [convert(finding) for finding in findings], problems.errors

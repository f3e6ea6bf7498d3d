"""``check``: validate everything without rendering and report in one pass."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from builder.analysis.findings import Finding
from builder.analysis.reconcile import converted_findings
from builder.config import SiteConfig
from builder.engine.forked import Forked
from builder.engine.pipeline import load_with_annotations
from builder.errors import Problem
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
        "recipe": finding.recipe,
        "metric": finding.metric,
        "summary": finding.summary(),
        "explanation": finding.explanation_text(),
        "path": finding.path,
        "line": finding.line,
        "annotation": finding.annotation,
    }


def check_site(
    config: SiteConfig, *, strict: bool = False, full: bool = True, started: Forked[Any] | None = None
) -> CheckReport:
    """Load and validate everything and find the findings (on every core for a big site).

    ``full``: each finding as ``as_json()`` (the ``--format json`` contract); otherwise only
    what :func:`brief` keeps. ``started``: the content load begun ahead
    (:func:`builder.data.load.start_content_load`), finished here.
    """
    site, problems, annotations = load_with_annotations(config, started=started)
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
    findings = [] if problems else converted_findings(site, annotations, problems, convert)
    stats["findings"] = len(findings)
    stats["findings_open"] = sum(1 for f in findings if f["annotation"] is None)
    return CheckReport(stats, sorted(problems.errors), sorted(problems.warnings), findings, strict)

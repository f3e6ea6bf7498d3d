"""``check``: validate everything without rendering and report in one pass."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from builder.config import SiteConfig
from builder.errors import Problem
from builder.pipeline import load_and_reconcile


@dataclass
class CheckReport:
    stats: dict[str, int]
    errors: list[Problem]
    warnings: list[Problem]
    findings: list[dict[str, Any]] = field(default_factory=list)
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
            f"{s['rows']} rows, {s['recipes']} recipes, {s['case_studies']} case studies, {s['posts']} posts: "
            f"{len(self.errors)} errors, {len(self.warnings)} warnings, {len(self.findings)} findings"
        )
        if self.strict and self.unannotated:
            text += f" ({len(self.unannotated)} without annotation: failing under --strict)"
        return text


def check_site(config: SiteConfig, *, strict: bool = False) -> CheckReport:
    loaded = load_and_reconcile(config)
    site = loaded.site
    stats = {
        "rows": site.rows.num_rows,
        "row_files": len(site.row_files),
        "recipes": len(site.recipes),
        "case_studies": len(site.case_studies),
        "posts": len(site.posts),
        "nodes": len(site.nodes),
    }
    findings = [f.as_json() for f in loaded.recon.findings] if loaded.recon is not None else []
    stats["findings"] = len(findings)
    stats["findings_open"] = sum(1 for f in findings if f["annotation"] is None)
    return CheckReport(
        stats, sorted(loaded.problems.errors), sorted(loaded.problems.warnings), findings, strict
    )

"""Findings on the site: the recipe banner's values, ``/findings/`` and its Atom feed.

Templates receive plain dicts (:func:`finding_view`): the ``check --format json`` contract of the
finding plus what a page needs to show it (labels, links, the recipe's title). The feed is
deterministic: every timestamp is a date taken from the rows, never the clock.
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING, Any

from builder import deps
from builder.findings import Finding
from builder.load import Site
from builder.views import METRIC_LABELS

if TYPE_CHECKING:  # render imports this module; the types are only needed for annotations
    from builder.render import PageJob, RenderContext

STATUS_LABELS = {
    "acknowledged": "Acknowledged",
    "distribution_change": "Distribution change",
    "upstream_issue": "Known upstream issue",
}


def finding_view(finding: Finding, site: Site) -> dict[str, Any]:
    """The finding as templates see it: its JSON contract plus labels and links."""
    data = finding.as_json()
    for run_json, (run, _) in zip(data["runs"], finding.runs, strict=True):
        run_json["row_ids"] = list(run.row_ids)
    label, unit = METRIC_LABELS.get(finding.metric, (finding.metric, ""))
    recipe = site.recipes.get(finding.recipe)
    data.update(
        anchor=f"finding-{finding.id}",
        metric_label=label,
        unit=unit,
        recipe_title=recipe.meta.title if recipe else finding.recipe,
        setting_text=finding.setting_text(),
        hardware_name=site.hardware_name(finding.setting["hardware"]),
        change_pct=f"{finding.change * 100:+.1f}%",
        band_pct=f"±{finding.noise.relative * 100:.1f}%",
        is_open=finding.is_open,
        updated=finding.date,
        row_ids=sorted(finding.row_ids),
        status_label=STATUS_LABELS.get((finding.annotation or {}).get("status", ""), ""),
    )
    return data


def recipe_findings(ctx: RenderContext, slug: str) -> tuple[list[dict[str, Any]], list[int]]:
    """A recipe's findings (open first) and the row ids of the runs involved, for its page."""
    findings = sorted(ctx.recon.findings_for(slug), key=lambda f: not f.is_open)
    marked = sorted({row_id for f in findings for row_id in f.row_ids})
    return [finding_view(f, ctx.site) for f in findings], marked


def _latest_row_date(site: Site) -> dt.date | None:
    row = site.con.execute("SELECT max(date) FROM rows").fetchone()
    return row[0] if row else None


def render_findings(ctx: RenderContext) -> bytes:
    views = [finding_view(f, ctx.site) for f in ctx.recon.findings]
    return ctx.page(
        "findings.html",
        "findings/index.html",
        open_findings=[v for v in views if v["is_open"]],
        annotated_findings=[v for v in views if not v["is_open"]],
    )


def render_findings_feed(ctx: RenderContext) -> bytes:
    views = sorted(
        (finding_view(f, ctx.site) for f in ctx.recon.findings),
        key=lambda v: (v["updated"], v["id"]),
        reverse=True,
    )
    # The feed's own date comes from the data: its newest finding, else the newest row.
    updated = views[0]["updated"] if views else _latest_row_date(ctx.site)
    return ctx.page(
        "findings_feed.xml",
        "findings/feed.xml",
        findings=views,
        updated=updated or dt.date(1970, 1, 1),
    )


def findings_page_jobs(ctx: RenderContext) -> list[PageJob]:
    return [
        ("findings/index.html", deps.depends(lambda: render_findings(ctx), deps.RECIPES, deps.ROWS)),
        ("findings/feed.xml", deps.depends(lambda: render_findings_feed(ctx), deps.RECIPES, deps.ROWS)),
    ]

"""Findings on the site: the recipe banner's values, ``/findings/`` and its Atom feed.

Templates receive plain dicts (:func:`finding_view`): the ``check --format json`` contract of the
finding plus what a page needs to show it (labels, links, the recipe's title). The feed is
deterministic: every timestamp is a date taken from the rows, never the clock.
"""

from __future__ import annotations

import datetime as dt
import functools
from typing import Any

from builder.analysis.findings import Finding, Side, change_text
from builder.data.load import Site
from builder.site.context import PageJob, RenderContext
from builder.site.views import METRIC_LABELS

STATUS_LABELS = {
    "acknowledged": "Acknowledged",
    "distribution_change": "Distribution change",
    "upstream_issue": "Known upstream issue",
}


def _labels(finding: Finding) -> dict[str, Any]:
    """What both a finding's full view and its table row show besides its figures."""
    label, unit = METRIC_LABELS.get(finding.metric, (finding.metric, ""))
    return {
        "anchor": _anchor(finding),
        "metric_label": label,
        "unit": unit,
        "setting_text": finding.setting_text(),
        "change_pct": change_text(finding.change),
        "band_pct": f"±{finding.noise.relative * 100:.1f} %",
    }


def _anchor(finding: Finding) -> str:
    """The id a finding is linked to on its recipe's page."""
    return f"finding-{finding.id}"


def finding_view(finding: Finding, site: Site) -> dict[str, Any]:
    """The finding as templates see it: its JSON contract plus labels and links."""
    data = finding.as_json()
    for run_json, (run, _) in zip(data["runs"], finding.runs, strict=True):
        run_json["row_ids"] = list(run.row_ids)
    recipe = site.recipes.get(finding.recipe)
    data.update(
        _labels(finding),
        recipe_title=recipe.meta.title if recipe else finding.recipe,
        hardware_name=site.hardware_name(finding.setting["hardware"]),
        is_open=finding.is_open,
        updated=finding.date,
        row_ids=sorted(finding.row_ids),
        status_label=STATUS_LABELS.get((finding.annotation or {}).get("status", ""), ""),
        earlier=_side_view(finding, finding.earlier),
        later=_side_view(finding, finding.later),
    )
    return data


def _side_view(finding: Finding, side: Side) -> dict[str, Any]:
    return {**side.as_json(), "departs": side is finding.departing}


FULL_PER_GROUP = 1
"""Findings of one group shown in full; the group's settings and metrics as a table inside it."""
GROUPS_IN_FULL = 3
"""Finding groups a recipe page shows in full (open groups first); its other groups are one line each."""
RECIPES_PER_PAGE = 50
"""Recipes per page of ``/findings/`` (pages ``/findings/page/<n>/`` after the first)."""
FEED_ENTRIES = 50
"""Newest findings in the Atom feed (feed readers keep what they have seen)."""


def finding_row(finding: Finding, site: Site) -> dict[str, Any]:
    """A finding as one row of a table: what it is and by how much, without the runs' details."""
    return {
        **_labels(finding),
        "earlier": _side_view(finding, finding.earlier),
        "later": _side_view(finding, finding.later),
        "direction": finding.direction,
        "explained_by": [d.field for d in finding.explanation.explained_by],
        "row_ids": sorted(finding.row_ids),
    }


def finding_groups(findings: list[Finding], site: Site, full: int = FULL_PER_GROUP) -> list[dict[str, Any]]:
    """A recipe's findings by their ``group`` (open groups first): one regression seen at every
    setting and metric it covered reads as one finding, not dozens of banners. Each group: its first
    ``full`` findings as views, and every member as a row of its table of settings."""
    return [_group_view(members, site, full) for members in _by_group(findings)]


def _group_view(members: list[Finding], site: Site, full: int = FULL_PER_GROUP) -> dict[str, Any]:
    return {
        "id": members[0].group,
        "is_open": members[0].is_open,
        "full": [finding_view(f, site) for f in members[:full]],
        "settings": [finding_row(f, site) for f in members] if len(members) > 1 else [],
    }


def _by_group(findings: list[Finding]) -> list[list[Finding]]:
    """The findings by their ``group``, open groups first, each group in the findings' order."""
    groups: dict[tuple[bool, str], list[Finding]] = {}
    for finding in findings:
        groups.setdefault((not finding.is_open, finding.group), []).append(finding)
    return [members for _, members in sorted(groups.items(), key=lambda kv: kv[0][0])]


def finding_line(members: list[Finding], site: Site) -> dict[str, Any]:
    """A group of findings as one line of a table: its first finding as a row (:func:`finding_row`)
    with its sentence, and the anchors of the group's other findings (links to them keep working)."""
    first = members[0]
    return {
        **finding_row(first, site),
        "summary": first.summary(),
        "is_open": first.is_open,
        "more": [_anchor(f) for f in members[1:]],
    }


def recipe_findings(ctx: RenderContext, slug: str) -> tuple[dict[str, Any], list[int]]:
    """A recipe's findings for its page, and the row ids of every run involved: the first
    :data:`GROUPS_IN_FULL` groups (see :func:`finding_groups`) in full, the others as lines."""
    findings = ctx.recon.findings_for(slug)
    marked = sorted({row_id for f in findings for row_id in f.row_ids})
    grouped = _by_group(findings)
    return {
        "groups": [_group_view(members, ctx.site) for members in grouped[:GROUPS_IN_FULL]],
        "lines": [finding_line(members, ctx.site) for members in grouped[GROUPS_IN_FULL:]],
        "count": len(findings),
    }, marked


def _latest_row_date(site: Site) -> dt.date | None:
    row = site.con.execute("SELECT max(date) FROM rows").fetchone()
    return row[0] if row else None


def _by_recipe(ctx: RenderContext, is_open: bool) -> list[tuple[str, list[Finding]]]:
    by_recipe: dict[str, list[Finding]] = {}
    for finding in ctx.recon.findings:
        if finding.is_open == is_open:
            by_recipe.setdefault(finding.recipe, []).append(finding)
    return sorted(by_recipe.items())


def _summaries(ctx: RenderContext, groups: list[tuple[str, list[Finding]]]) -> list[dict[str, Any]]:
    """Per recipe: its first group of findings (one finding with its table of settings) and how many
    more groups it has (its page shows them all)."""
    out = []
    for slug, members in groups:
        grouped = finding_groups(members, ctx.site)
        out.append({"slug": slug, "first": grouped[0], "more": len(grouped) - 1})
    return out


def findings_page_count(ctx: RenderContext) -> int:
    return max(1, -(-ctx.recon.open_recipe_count() // RECIPES_PER_PAGE))


def findings_page_path(number: int) -> str:
    return "findings/index.html" if number == 1 else f"findings/page/{number}/index.html"


def render_findings(ctx: RenderContext, number: int = 1) -> bytes:
    """Page ``number`` of ``/findings/``: open findings by recipe, :data:`RECIPES_PER_PAGE` recipes
    a page; the first page also lists the annotated ones."""
    open_groups = _by_recipe(ctx, True)
    annotated = _by_recipe(ctx, False) if number == 1 else []
    pages = max(1, -(-len(open_groups) // RECIPES_PER_PAGE))
    chunk = open_groups[(number - 1) * RECIPES_PER_PAGE : number * RECIPES_PER_PAGE]
    return ctx.page(
        "findings.html",
        findings_page_path(number),
        open_recipes=_summaries(ctx, chunk),
        open_count=sum(len(m) for _, m in open_groups),
        open_recipe_count=len(open_groups),
        annotated_recipes=_summaries(ctx, annotated),
        annotated_count=sum(1 for f in ctx.recon.findings if not f.is_open),
        page_number=number,
        page_links=[(n, findings_page_path(n).removesuffix("index.html")) for n in range(1, pages + 1)],
    )


def render_findings_feed(ctx: RenderContext) -> bytes:
    newest = sorted(ctx.recon.findings, key=lambda f: (f.date, f.id), reverse=True)[:FEED_ENTRIES]
    views = [finding_view(f, ctx.site) for f in newest]
    # The feed's own date comes from the data: its newest finding, else the newest row.
    updated = views[0]["updated"] if views else _latest_row_date(ctx.site)
    return ctx.page(
        "findings_feed.xml",
        "findings/feed.xml",
        findings=views,
        updated=updated or dt.date(1970, 1, 1),
    )


def findings_page_jobs(ctx: RenderContext) -> list[PageJob]:
    jobs: list[PageJob] = [("findings/feed.xml", lambda: render_findings_feed(ctx))]
    for number in range(1, findings_page_count(ctx) + 1):
        jobs.append((findings_page_path(number), functools.partial(render_findings, ctx, number)))
    return jobs

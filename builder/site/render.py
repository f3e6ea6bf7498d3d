"""Stage 5: render every page to bytes. Nothing here touches the output folder.

One jinja2 environment (autoescape on for every template) and one markdown parser serve the whole
build. ``render_site`` returns ``{relative path: bytes}``; :mod:`builder.engine.output` writes it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup

from builder.analysis.reconcile import Reconciliation
from builder.content.markdown import Markdown
from builder.data.load import Site, today
from builder.data.model_slugs import comparison_slugs
from builder.errors import BuildAborted
from builder.site import content_summary, home
from builder.site.chart_data import recipe_charts
from builder.site.chart_runtime import RUNTIME_ASSET, runtime_bundle, user_cache_dir
from builder.site.charts import SpecTemplates, page_data
from builder.site.choose import known_hardware
from builder.site.choose_pages import choose_page_jobs
from builder.site.context import Assets, ContentSummary, Output, PageJob, RenderContext
from builder.site.downloads import api_page_jobs
from builder.site.faq import faq_jsonld, faq_page_jobs
from builder.site.findings_pages import findings_page_jobs, recipe_findings
from builder.site.formats import fmt_number, fmt_ratio
from builder.site.indexes import index_page_jobs
from builder.site.jsonscript import script_json
from builder.site.prose import bind_figures
from builder.site.search import search_page_jobs
from builder.site.tables import chart_rows, row_table_rows, run_notes
from builder.site.views import (
    METRIC_LABELS,
    api_example,
    case_studies_by_recipe,
    headline,
    key_parameters,
    recipe_command,
    recipe_runs,
    row_anchors,
    rows_by_recipe,
)


def make_environment(templates: Path, specs: SpecTemplates | None = None) -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(templates)),
        autoescape=True,  # every template, HTML and XML alike
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        auto_reload=False,
    )
    env.filters["num"] = fmt_number
    env.filters["ratio"] = fmt_ratio
    env.filters["isodate"] = lambda d: d.isoformat() if d else ""
    env.filters["longdate"] = lambda d: f"{d.day} {d:%B %Y}" if d else ""
    env.filters["script_json"] = script_json  # JSON inside <script>: no `</script>` breakout
    env.globals["METRIC_LABELS"] = METRIC_LABELS
    # Table bodies built in Python: the per-cell cost of a template loop would dominate rendering.
    env.globals["row_table_rows"] = row_table_rows
    env.globals["run_notes"] = run_notes
    env.globals["chart_rows"] = chart_rows
    chart_specs = specs if specs is not None else SpecTemplates()
    env.globals["chart_data"] = lambda charts: Markup(page_data(charts, chart_specs))  # escaped for <script>
    env.globals["faq_jsonld"] = faq_jsonld
    return env


def make_context(
    site: Site,
    recon: Reconciliation,
    markdown: Markdown | None = None,
    rows: Mapping[str, list[dict[str, Any]]] | None = None,
) -> RenderContext:
    """``rows``: the rows by recipe of an earlier context over the same rows (the preview after a
    template edit), with the recipes it already converted."""
    config = site.config
    markdown = markdown or Markdown()
    rows = rows if rows is not None else rows_by_recipe(site)
    # Bodies show figures from the rows: worked out before any body renders (the FAQ, search and
    # every page read the same bodies); a figure no row supports stops the build here.
    figures, problems = bind_figures(site, rows, markdown)
    if problems:
        raise BuildAborted(problems)
    markdown.bind(figures)
    assets = Assets.collect(config.templates / "static")
    assets.add(RUNTIME_ASSET, runtime_bundle(config.cache_dir, user_cache_dir()))
    specs = SpecTemplates()
    return RenderContext(
        site=site,
        recon=recon,
        env=make_environment(config.templates, specs),
        specs=specs,
        markdown=markdown,
        assets=assets,
        rows=rows,
        cases_by_recipe=case_studies_by_recipe(site),
        build_date=today(config),
        comparisons=comparison_slugs(site),
        node_hw=site.node_hardware(),
    )


def derived_makers(ctx: RenderContext) -> dict[str, Callable[[str], Any]]:
    """The makers of the derived values pages read (:func:`builder.reads.derived`), by kind."""
    return home.Cards(ctx.site, ctx.recon, ctx.rows, ctx.node_hw).makers()


def render_recipe(ctx: RenderContext, slug: str) -> bytes:
    recipe = ctx.site.recipes[slug]
    rows = ctx.rows.get(slug, [])
    statuses = {r["row_id"]: ctx.recon.status(r["row_id"]) for r in rows}
    findings, marked_rows = recipe_findings(ctx, slug)
    return ctx.page(
        "recipe.html",
        f"recipes/{slug}/index.html",
        recipe=recipe,
        meta=recipe.meta,
        body=ctx.markdown.render(recipe.doc, faq=True),
        rows=rows,
        statuses=statuses,
        findings=findings,
        marked_rows=marked_rows,
        anchors=row_anchors(ctx.site, rows),
        runs=recipe_runs(ctx.site, recipe, rows),
        headline=headline(recipe, rows, ctx.recon, ctx.site.node_hardware()),
        params=key_parameters(recipe),
        command=recipe_command(recipe),
        api=api_example(recipe.meta),
        charts=recipe_charts(rows, statuses.__getitem__, ctx.node_hw, ctx.recon.findings_for(slug)),
        cases=ctx.cases_by_recipe.get(slug, []),
        hardware_name=ctx.site.hardware_name(recipe.meta.hardware),
        nodes=ctx.site.nodes,
        comparison_url=_comparison_url(ctx, recipe.meta.model),
    )


def render_case_study(ctx: RenderContext, slug: str) -> bytes:
    from builder.site.side_by_side_charts import case_charts  # with the comparisons, only when needed

    case = ctx.site.case_studies[slug]
    return ctx.page(
        "case_study.html",
        f"case-studies/{slug}/index.html",
        case=case,
        meta=case.meta,
        body=ctx.markdown.render(case.doc),
        recipes=ctx.site.recipes,
        charts=case_charts(ctx.site, case.meta.arms, ctx.rows, ctx.recon, ctx.node_hw),
    )


def _comparison_url(ctx: RenderContext, model: str) -> str | None:
    slug = ctx.comparisons.get(model)
    return f"models/{slug}/" if slug else None


def import_renderers(paths: Iterable[str]) -> None:
    """Import here what the renderers of ``paths`` import when first called (the comparison pages'
    and case studies' modules), so that forked render workers inherit them instead of each
    importing them again."""
    if any(path.startswith(("models/", "case-studies/")) for path in paths):
        import builder.site.comparison_tables
        import builder.site.side_by_side_charts  # noqa: F401 - imported for the workers to inherit


def render_comparison(ctx: RenderContext, model: str) -> bytes:
    # Imported here: a build that renders no comparison page (an edit's) never loads them.
    from builder.site import comparison_tables
    from builder.site.comparisons import comparison
    from builder.site.side_by_side_charts import comparison_charts

    slug = ctx.comparisons[model]
    comp = comparison(ctx.site, model, slug, ctx.rows, ctx.recon)
    return ctx.page(
        "comparison.html",
        f"models/{slug}/index.html",
        comp=comp,
        recipes=ctx.site.recipes,
        hardware_name=ctx.site.hardware_name,
        charts=comparison_charts(comp, ctx.site.hardware_name),
        compare_rows=comparison_tables.shared_rows,
        alone_rows=comparison_tables.alone_rows,
    )


def render_post(ctx: RenderContext, slug: str) -> bytes:
    post = ctx.site.posts[slug]
    return ctx.page(
        "post.html",
        f"news/{slug}/index.html",
        post=post,
        meta=post.meta,
        body=ctx.markdown.render(post.doc),
    )


def _sorted_posts(ctx: RenderContext) -> list[Any]:
    return sorted(ctx.site.posts.values(), key=lambda p: (p.meta.date, p.slug), reverse=True)


def render_news_index(ctx: RenderContext) -> bytes:
    return ctx.page("news.html", "news/index.html", posts=_sorted_posts(ctx))


def render_case_index(ctx: RenderContext) -> bytes:
    cases = sorted(ctx.site.case_studies.values(), key=lambda c: (c.meta.date, c.slug), reverse=True)
    return ctx.page("case_studies.html", "case-studies/index.html", cases=cases)


def render_index(ctx: RenderContext) -> bytes:
    findings_total, findings_open = ctx.recon.finding_counts()
    hardware, models = home.model_table(ctx.site, ctx.comparisons)
    return ctx.page(
        "index.html",
        "index.html",
        choose_hardware=[(hw, ctx.site.hardware_name(hw)) for hw in known_hardware(ctx.site)],
        recent=home.recent_files(ctx.site),
        recent_findings=home.recent_open_findings(ctx.recon.findings) if findings_open else [],
        table_hardware=hardware,
        models=models,
        recipes=ctx.site.recipes,
        posts=_sorted_posts(ctx)[:5],
        hardware_name=ctx.site.hardware_name,
        row_count=ctx.site.rows.num_rows,
        recipe_count=len(ctx.site.recipes),
        findings_open=findings_open,
        findings_total=findings_total,
    )


def render_recipes_index(ctx: RenderContext, number: int) -> bytes:
    pages = home.list_pages(ctx.site)
    return ctx.page(
        "recipes.html",
        home.list_page_path(number),
        groups=pages[number - 1].groups,
        page_number=number,
        page_urls=[home.list_page_url(n) for n in range(1, len(pages) + 1)],
        group_anchor=home.group_anchor,
        recipe_count=len(ctx.site.recipes),
        hardware_name=ctx.site.hardware_name,
        comparison_urls={m: f"models/{s}/" for m, s in ctx.comparisons.items()},
        cards=home.Cards(ctx.site, ctx.recon, ctx.rows, ctx.node_hw),
    )


def render_404(ctx: RenderContext) -> bytes:
    return ctx.page("404.html", "404.html")


def page_jobs(ctx: RenderContext, summary: ContentSummary | None = None) -> list[PageJob]:
    """Every page as (output path, render function), in a stable order. ``summary``: the content
    summary when the caller has it, else it is worked out here.

    Nothing here says what a page reads: the incremental engine renders each page from reading
    views of the context and records what it read (:mod:`builder.engine.reading`)."""
    site = ctx.site
    jobs: list[PageJob] = [
        ("index.html", lambda: render_index(ctx)),
        ("news/index.html", lambda: render_news_index(ctx)),
        ("case-studies/index.html", lambda: render_case_index(ctx)),
        ("404.html", lambda: render_404(ctx)),
    ]
    jobs += [
        (home.list_page_path(n), functools.partial(render_recipes_index, ctx, n))
        for n in range(1, len(home.list_pages(site)) + 1)
    ]
    jobs += [
        (f"recipes/{s}/index.html", functools.partial(render_recipe, ctx, s)) for s in sorted(site.recipes)
    ]
    jobs += [
        (f"case-studies/{s}/index.html", functools.partial(render_case_study, ctx, s))
        for s in sorted(site.case_studies)
    ]
    jobs += [(f"news/{s}/index.html", functools.partial(render_post, ctx, s)) for s in sorted(site.posts)]
    jobs += [
        (f"models/{slug}/index.html", functools.partial(render_comparison, ctx, m))
        for m, slug in sorted(ctx.comparisons.items())
    ]
    if summary is None:
        summary = content_summary.summarize(ctx.site, ctx.markdown)
    jobs += faq_page_jobs(ctx, summary) + index_page_jobs(ctx) + search_page_jobs(ctx, summary)
    jobs += api_page_jobs(ctx)
    jobs += findings_page_jobs(ctx)
    jobs += choose_page_jobs(ctx)
    return jobs


def render_site(ctx: RenderContext) -> Output:
    """Render every page and asset; raise :class:`TemplateError` on the first template failure."""
    out: Output = dict(ctx.assets.files)
    for path, job in page_jobs(ctx):
        out[path] = job()
    return out

"""The troubleshooting FAQ: structured data for recipe pages and the site-wide index.

Each recipe's ``## Troubleshooting`` section becomes :class:`~builder.content.markdown.FaqItem` values
(:mod:`builder.content.markdown`). This module turns them into FAQPage JSON-LD for the recipe page and into
``/troubleshooting/``, the list of every question across recipes linked to its answer.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from functools import partial
from typing import Any

from builder.content.markdown import FaqItem, Markdown
from builder.data.load import Recipe, Site
from builder.data.model_slugs import model_slugs
from builder.site.context import ContentSummary, PageJob, RenderContext

EXCERPT_CHARS = 180


def faq_jsonld(items: tuple[FaqItem, ...] | list[FaqItem], page_url: str) -> dict[str, Any]:
    """schema.org FAQPage for a page's questions (embed with the ``script_json`` filter)."""
    return {
        "@context": "https://schema.org",
        "@type": "FAQPage",
        "url": page_url,
        "mainEntity": [
            {
                "@type": "Question",
                "name": item.question,
                "url": f"{page_url}#{item.anchor}",
                "acceptedAnswer": {"@type": "Answer", "text": item.answer_text},
            }
            for item in items
        ],
    }


def excerpt(text: str, limit: int = EXCERPT_CHARS) -> str:
    """The start of ``text``, cut at a word boundary with an ellipsis when longer than ``limit``."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[:limit].rsplit(" ", 1)[0].rstrip(",;:.")
    return cut + "…"


@dataclass(frozen=True)
class FaqEntry:
    """One question of one recipe, as listed on the troubleshooting index."""

    recipe: Recipe
    item: FaqItem

    @property
    def path(self) -> str:
        """Link target relative to the site root."""
        return f"recipes/{self.recipe.slug}/#{self.item.anchor}"


def faq_entries(site: Site, markdown: Markdown, model: str | None = None) -> list[FaqEntry]:
    """Every question of every recipe (of base model ``model`` only, when given), recipes in slug
    order, questions in page order."""
    entries: list[FaqEntry] = []
    for slug in sorted(site.recipes):
        recipe = site.recipes[slug]
        if model is not None and recipe.meta.model != model:
            continue
        # The markdown cache makes this free once the body was rendered (its page renders the same).
        body = markdown.render(recipe.doc, faq=True)
        entries.extend(FaqEntry(recipe, item) for item in body.faq)
    return entries


def group_by_model(entries: list[FaqEntry]) -> list[tuple[str, list[tuple[Recipe, list[FaqEntry]]]]]:
    """Entries grouped by base model, then recipe, both sorted."""
    grouped: dict[str, dict[str, list[FaqEntry]]] = defaultdict(lambda: defaultdict(list))
    for entry in entries:
        grouped[entry.recipe.meta.model][entry.recipe.slug].append(entry)
    return [
        (model, [(recipes[slug][0].recipe, recipes[slug]) for slug in sorted(recipes)])
        for model, recipes in sorted(grouped.items())
    ]


INLINE_QUESTIONS = 150
"""Up to this many questions, /troubleshooting/ lists them all; beyond, one page per base model
(keeps every page inside the 50 KB budget, excerpts included)."""


def model_pages(models: list[str]) -> dict[str, str]:
    """Base model → its troubleshooting page slug (``model_slug``, numbered on collision)."""
    return model_slugs(models)


def render_troubleshooting(ctx: RenderContext) -> bytes:
    entries = faq_entries(ctx.site, ctx.markdown)
    groups = group_by_model(entries)
    split = len(entries) > INLINE_QUESTIONS
    return ctx.page(
        "troubleshooting.html",
        "troubleshooting/index.html",
        groups=groups,
        count=len(entries),
        recipe_count=len({e.recipe.slug for e in entries}),
        excerpt=excerpt,
        hardware_name=ctx.site.hardware_name,
        model_pages=model_pages([m for m, _ in groups]) if split else {},
        model=None,
    )


def render_model_troubleshooting(ctx: RenderContext, model: str, slug: str) -> bytes:
    entries = faq_entries(ctx.site, ctx.markdown, model)
    return ctx.page(
        "troubleshooting.html",
        f"troubleshooting/{slug}/index.html",
        groups=group_by_model(entries),
        count=len(entries),
        recipe_count=len({e.recipe.slug for e in entries}),
        excerpt=excerpt,
        hardware_name=ctx.site.hardware_name,
        model_pages={},
        model=model,
    )


def faq_page_jobs(ctx: RenderContext, summary: ContentSummary) -> list[PageJob]:
    jobs: list[PageJob] = [("troubleshooting/index.html", lambda: render_troubleshooting(ctx))]
    if summary.faq_count > INLINE_QUESTIONS:
        pages = model_pages(list(summary.faq_models))
        jobs += [
            (f"troubleshooting/{slug}/index.html", partial(render_model_troubleshooting, ctx, model, slug))
            for model, slug in pages.items()
        ]
    return jobs

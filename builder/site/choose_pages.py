"""The ``/choose/`` pages: the chooser, a page per hardware, and the JSON index the chooser reads.

- ``choose/index.html``: pick hardware, workload (a measured setting) and metric; the ranking
  comes from ``choose/<hardware>/rankings.json`` (``static/choose.js``). Without JavaScript it
  links to the hardware pages.
- ``choose/<hardware>/index.html``: at each measured setting, for each metric measured there, the
  recipes measured at that setting ranked (the first :data:`PAGE_TOP`; the chooser has them all).
- ``choose/<hardware>/rankings.json``: every ranking of :func:`builder.site.choose.rankings`, its
  first :data:`INDEX_TOP` recipes, figures listed once.

All of them are ranked by :func:`builder.site.choose.rank`, as ``python -m builder choose`` is.
"""

from __future__ import annotations

import json
from functools import cache, partial
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow.compute as pc

from builder.content.models import LOWER_IS_BETTER, QUANTITIES
from builder.site import deps
from builder.site.choose import (
    Choice,
    Figure,
    HardwareFigures,
    Ranking,
    Setting,
    hardware_figures,
    known_hardware,
    load_text,
    rankings,
)
from builder.site.context import PageJob, RenderContext

if TYPE_CHECKING:
    from builder.data.load import Site

PAGE_TOP = 10
"""Recipes shown per ranking on a hardware page (a page stays within the size budget)."""
INDEX_TOP = 25
"""Recipes per ranking in the chooser's index (it stays small; ``python -m builder choose`` lists all)."""

STATUS_TEXT = {"matches": "matches", "not_recorded": "not recorded", "differs": "differs"}


Ranked = list[tuple[Setting, str, Ranking]]


def rankings_json(figures: HardwareFigures, ranked_all: Ranked) -> bytes:
    """The chooser's index for one hardware: each figure and serve command once, each ranking as
    figure numbers (its first :data:`INDEX_TOP`), its answer, and per metric the loads measured."""
    recipes = sorted(figures.titles)
    recipe_no = {slug: i for i, slug in enumerate(recipes)}
    settings = figures.settings()
    setting_no = {s: i for i, s in enumerate(settings)}
    figure_no: dict[Figure, int] = {}
    figure_rows: list[list[Any]] = []
    command_no: dict[str, int] = {}

    def number(choice: Choice) -> int:
        f = choice.figure
        if f not in figure_no:
            command = -1 if f.command is None else command_no.setdefault(f.command, len(command_no))
            figure_no[f] = len(figure_rows)
            figure_rows.append(
                [
                    recipe_no[f.recipe],
                    setting_no[f.setting],
                    f.value,
                    f.date.isoformat(),
                    f.status,
                    f.row,
                    len(choice.findings),
                    command,
                    int(choice.contested),
                ]
            )
        return figure_no[f]

    ranked: dict[str, dict[str, list[list[int]]]] = {}
    answers: dict[str, dict[str, int]] = {}
    loads: dict[str, list[str]] = {}
    for setting, metric, ranking in ranked_all:
        entries = [[number(c), int(c.exact)] for c in ranking.results[:INDEX_TOP]]
        ranked.setdefault(str(setting_no[setting]), {})[metric] = entries
        if ranking.answer is not None:
            answers.setdefault(str(setting_no[setting]), {})[metric] = number(ranking.answer)
        loads.setdefault(metric, [load_text(c, r) for c, r in ranking.loads])
    document = {
        "hardware": figures.hardware,
        "name": figures.name,
        "metrics": [
            [m, QUANTITIES[m].label, QUANTITIES[m].unit, m in LOWER_IS_BETTER] for m in figures.metrics()
        ],
        "recipes": [[slug, figures.titles[slug]] for slug in recipes],
        "settings": [s.text() for s in settings],
        "setting_loads": [load_text(s.concurrency, s.request_rate) for s in settings],
        "setting_values": [list(s.as_json().values()) for s in settings],
        "loads": loads,
        "commands": sorted(command_no, key=command_no.__getitem__),
        "figures": figure_rows,
        "rankings": ranked,
        "answers": answers,
    }
    return json.dumps(document, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def page_sections(ranked_all: Ranked) -> list[dict[str, Any]]:
    """Per measured setting, its rankings: only the recipes measured at that very setting, and
    the ranking's answer (which may have been measured at a nearer setting than none)."""
    sections: dict[Any, dict[str, Any]] = {}
    for setting, metric, ranking in ranked_all:
        here = ranking.exact
        if not here:
            continue
        section = sections.setdefault(setting, {"setting": setting, "tables": []})
        label, unit = QUANTITIES[metric].label, QUANTITIES[metric].unit
        section["tables"].append(
            {
                "metric": metric,
                "label": label,
                "unit": unit,
                "lower": metric in LOWER_IS_BETTER,
                "answer": ranking.answer,
                "choices": here[:PAGE_TOP],
                "more": max(0, len(here) - PAGE_TOP),
            }
        )
    return list(sections.values())


def render_chooser(ctx: RenderContext) -> bytes:
    site = ctx.site
    hardware = [(hw, site.hardware_name(hw)) for hw in known_hardware(site)]
    return ctx.page("choose.html", "choose/index.html", hardware=hardware)


def render_hardware_choices(ctx: RenderContext, figures: HardwareFigures, ranked_all: Ranked) -> bytes:
    return ctx.page(
        "choose_hardware.html",
        f"choose/{figures.hardware}/index.html",
        hw_id=figures.hardware,
        hw_name=figures.name,
        sections=page_sections(ranked_all),
        status_text=STATUS_TEXT,
    )


def recipes_measured_on(site: Site) -> dict[str, list[str]]:
    """Per hardware, the recipes with a row on one of its nodes (sorted)."""
    rows = site.rows
    if not rows.num_rows:
        return {}
    nodes = pc.dictionary_encode(rows.column("node")).combine_chunks()
    recipes = pc.dictionary_encode(rows.column("recipe")).combine_chunks()
    hardware = sorted({node.hardware for node in site.nodes.values()})
    code = {hw: i for i, hw in enumerate(hardware)}
    node_hw = np.array([code[site.nodes[n].hardware] for n in nodes.dictionary.to_pylist()])
    names = recipes.dictionary.to_pylist()
    pairs = np.unique(
        node_hw[nodes.indices.to_numpy()].astype(np.int64) * len(names) + recipes.indices.to_numpy()
    )
    out: dict[str, list[str]] = {}
    for pair in pairs.tolist():
        out.setdefault(hardware[pair // len(names)], []).append(names[pair % len(names)])
    return {hw: sorted(slugs) for hw, slugs in out.items()}


def choose_page_jobs(ctx: RenderContext) -> list[PageJob]:
    """The chooser, and per hardware its page and its JSON index. A hardware's pages read every
    recipe's front matter (titles; with the rows, statuses and findings) and the rows of the recipes
    measured on it: a new row file renders again only the pages of its hardware, a body edit none."""

    @cache
    def ranked(hardware: str) -> tuple[HardwareFigures, Ranked]:
        figures = hardware_figures(ctx.site, ctx.recon, hardware)
        return figures, list(rankings(figures))

    def page(hardware: str) -> bytes:
        return render_hardware_choices(ctx, *ranked(hardware))

    def index(hardware: str) -> bytes:
        return rankings_json(*ranked(hardware))

    measured = recipes_measured_on(ctx.site)
    jobs: list[PageJob] = [("choose/index.html", deps.depends(lambda: render_chooser(ctx), deps.RECIPES))]
    for hardware in known_hardware(ctx.site):
        slugs = measured.get(hardware, [])
        reads = (
            deps.RECIPES,
            deps.value("measured-on", hardware, *slugs),
            *(deps.rows_of(slug) for slug in slugs),
        )
        jobs.append((f"choose/{hardware}/index.html", deps.depends(partial(page, hardware), *reads)))
        jobs.append((f"choose/{hardware}/rankings.json", deps.depends(partial(index, hardware), *reads)))
    return jobs

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
from functools import partial
from typing import TYPE_CHECKING, Any

from builder.content.models import LOWER_IS_BETTER, QUANTITIES
from builder.reads import Once
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
    pass

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


def choose_page_jobs(ctx: RenderContext) -> list[PageJob]:
    """The chooser, and per hardware its page and its JSON index."""

    def rank(hardware: str) -> tuple[HardwareFigures, Ranked]:
        figures = hardware_figures(ctx.site, ctx.recon, hardware, ctx.rows)
        return figures, list(rankings(figures))

    # A page and its JSON index share one ranking, and so what making it read.
    by_hardware = {hardware: Once(partial(rank, hardware)) for hardware in known_hardware(ctx.site)}

    def ranked(hardware: str) -> tuple[HardwareFigures, Ranked]:
        return by_hardware[hardware]()

    def page(hardware: str) -> bytes:
        return render_hardware_choices(ctx, *ranked(hardware))

    def index(hardware: str) -> bytes:
        return rankings_json(*ranked(hardware))

    jobs: list[PageJob] = [("choose/index.html", lambda: render_chooser(ctx))]
    for hardware in known_hardware(ctx.site):
        jobs.append((f"choose/{hardware}/index.html", partial(page, hardware)))
        jobs.append((f"choose/{hardware}/rankings.json", partial(index, hardware)))
    return jobs

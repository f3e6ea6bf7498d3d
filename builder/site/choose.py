"""The chooser: on one hardware, for one workload, which recipe is fastest.

:func:`hardware_figures` works out, once per hardware, every recipe's figure at every setting it
was measured at; :func:`rank` answers a :class:`Query` from them. ``python -m builder choose`` and
the ``/choose/`` pages both rank with :func:`rank`.

- **Rows**: only rows measured on the asked hardware (through their node) that carry the metric,
  and of the asked kind of load: closed-loop rows (no ``request_rate``) for ``concurrency``,
  open-loop rows for ``request_rate``; the two never stand in for each other.
- **The figure at a setting**: the one every page shows for that recipe, setting and metric
  (:mod:`builder.site.figures`: the best-ranked rows there, their latest run, its median; rows that
  differ from the recipe only where nothing better was measured, said by ``status``); ``row`` is that
  run's row nearest the median.
- **Like with like**: a ranking holds only figures measured at the asked load (the concurrency, or
  the request rate and its cap); a query never borrows a figure from another load. When nothing was
  measured at the asked load, the ranking is empty and says which loads were (``loads``).
- **The setting ranked at**: the asked one. A dimension not asked (prompt or output length) is
  settled first, to the value most recipes were measured at (at that load, context and asked
  lengths; among equals, a recorded one, then the smaller).
- **Exact, then nearest**: recipes measured at that setting come first, best first (higher
  throughput, lower latency). A recipe that was not is listed at its nearest setting of the same
  load, in a section per setting, nearest section first, each best first. Distance adds, over the
  prompt, output and context lengths, ``|log2((1 + measured) / (1 + asked))|``: doubling a prompt
  costs 1 whatever the scale, and a context of 0 against 4,096 costs 12. A setting that leaves an
  asked length unrecorded comes after every setting that records it; among equally near settings,
  the most measured one wins, then the smaller. Ties by recipe slug.
- **The answer** ("use this"): the first result, in that order, that can be run as recorded
  (:func:`builder.site.reproduce.runnable_command`: a repository id and a complete serve command).
  Other results say "command not recorded" and are never the answer.
- **Contested**: a result whose figure has an open finding at its very setting, or whose recipe's
  single-stream claim disagrees with another recipe's about the same checkpoint, is marked: the
  claims the model's comparison page and the recipe cards name, from the rows of every hardware
  (:func:`builder.site.comparisons.model_disputes`), when the claim is this figure's.
"""

from __future__ import annotations

import datetime as dt
import math
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

from builder.analysis.reconcile import DIFFERS, MATCHES, NOT_RECORDED, Reconciliation
from builder.content.models import LOWER_IS_BETTER, METRICS, QUANTITIES, ROW_SCHEMA, WORKLOAD
from builder.data.load import Site
from builder.errors import UsageError
from builder.site.figures import SHAPE, figure_key, median_row
from builder.site.figures import Setting as FigureSetting
from builder.site.formats import fmt_number
from builder.site.reproduce import runnable_command
from builder.site.views import rows_by_recipe

DEFAULT_METRIC = "decode_tok_s"
STATUS_ORDER = (MATCHES, NOT_RECORDED, DIFFERS)
"""Row statuses in the order a recipe's figure prefers them."""
DIMENSIONS = WORKLOAD
"""What a query asks for and a setting gives: the setting but its hardware (a chooser is per hardware)."""
LOAD = ("concurrency", "request_rate")
"""The dimensions of the load, which a ranking matches exactly (never borrowed from another load)."""
LENGTHS = tuple(d for d in DIMENSIONS if d not in LOAD)
"""The other dimensions, compared by distance (prompt, output and context lengths)."""
FREE = tuple(d for d in LENGTHS if ROW_SCHEMA[d].empty is None)
"""The lengths a query may leave free or ask for as not recorded: those a row may leave empty (a context
left empty is 0)."""


@dataclass(frozen=True, order=True)
class Setting:
    """Where a figure was measured. ``request_rate`` is None for a closed-loop run."""

    prompt_tokens: int | None
    output_tokens: int | None
    context_tokens: int
    concurrency: int | None
    """``None`` only for an open-loop run without a cap."""
    request_rate: float | None

    @property
    def open_loop(self) -> bool:
        return self.request_rate is not None

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {d: getattr(self, d) for d in DIMENSIONS}
        if self.request_rate is not None and math.isinf(self.request_rate):
            out["request_rate"] = "inf"  # JSON has no infinity
        return out

    def text(self) -> str:
        prompt = f"{self.prompt_tokens:,}-token prompt" if self.prompt_tokens else "prompt not recorded"
        parts = [prompt]
        if self.output_tokens is not None:
            parts.append(f"{self.output_tokens:,} output tokens")
        parts.append(f"context {self.context_tokens:,}")
        if self.request_rate is not None:
            rate = self.request_rate
            text = "all requests at once" if math.isinf(rate) else f"{rate:g} requests/s"
            parts.append(f"{text} (cap {self.concurrency})" if self.concurrency is not None else text)
        else:
            parts.append(f"concurrency {self.concurrency}")
        return ", ".join(parts)

    def workload(self) -> tuple[Any, ...]:
        """The values of :data:`DIMENSIONS`, in order."""
        return tuple(getattr(self, d) for d in DIMENSIONS)

    def sort_key(self) -> tuple[Any, ...]:
        """Open-loop after closed-loop, then by each dimension, unrecorded last."""
        return (
            self.open_loop,
            self.request_rate or 0.0,
            self.concurrency or 0,
            self.context_tokens,
            self.prompt_tokens is None,
            self.prompt_tokens or 0,
            self.output_tokens is None,
            self.output_tokens or 0,
        )


@dataclass(frozen=True)
class Query:
    """What the reader asks. A dimension left None is free (see the module's docstring)."""

    hardware: str
    metric: str = DEFAULT_METRIC
    prompt_tokens: int | None = None
    output_tokens: int | None = None
    context_tokens: int = 0
    concurrency: int | None = 1
    request_rate: float | None = None
    unrecorded: frozenset[str] = frozenset()
    """Dimensions asked for as *not recorded* (the pages rank at settings that leave one unrecorded)."""

    @classmethod
    def at(cls, hardware: str, metric: str, setting: Setting) -> Query:
        """The query that asks for exactly ``setting``."""
        # An open-loop setting's cap too: the pages rank at that very setting.
        return cls(
            hardware,
            metric,
            unrecorded=frozenset(d for d in FREE if getattr(setting, d) is None),
            **{d: getattr(setting, d) for d in DIMENSIONS},
        )

    def text(self) -> str:
        if "prompt_tokens" in self.unrecorded:
            parts = ["prompt not recorded"]
        else:
            parts = [f"{self.prompt_tokens:,}-token prompt" if self.prompt_tokens else "any prompt"]
        if self.output_tokens is not None:
            parts.append(f"{self.output_tokens:,} output tokens")
        elif "output_tokens" in self.unrecorded:
            parts.append("output length not recorded")
        parts.append(f"context {self.context_tokens:,}")
        if self.request_rate is not None:
            rate = self.request_rate
            parts.append("all requests at once" if math.isinf(rate) else f"{rate:g} requests/s")
        else:
            parts.append(f"concurrency {self.concurrency or 1}")
        return ", ".join(parts)

    def as_json(self) -> dict[str, Any]:
        rate: Any = self.request_rate
        if rate is not None and math.isinf(rate):
            rate = "inf"
        return {
            "hardware": self.hardware,
            "metric": self.metric,
            **{d: getattr(self, d) for d in DIMENSIONS},
            "request_rate": rate,
        }


@dataclass(frozen=True)
class FindingRef:
    """An open finding on a recipe and metric, as a result lists it."""

    id: str
    summary: str
    setting: Setting | None = None
    """Where the finding is (its hardware is the chooser's); ``None`` when it cannot be told."""

    def as_json(self) -> dict[str, str]:
        return {"id": self.id, "summary": self.summary}


@dataclass(frozen=True)
class Figure:
    """A recipe's figure for one metric at one setting."""

    recipe: str
    metric: str
    setting: Setting
    value: float
    date: dt.date
    status: str
    row: str
    """``path:line`` of the row that gives the figure (the latest run's row nearest its median)."""
    rows: int
    """Rows of the recipe's chosen status at this setting (how measured the setting is)."""
    command: str | None = None
    """The serve command of the figure's run when it can be run as recorded, else ``None``."""
    hardware: str = ""

    @property
    def key(self) -> str:
        """:func:`~builder.site.figures.figure_key` of this figure."""
        return figure_key(self.recipe, self.metric, self.hardware, *self.setting.workload())


@dataclass(frozen=True)
class Choice:
    """One result: a recipe's figure for the query, and whether it was measured at the asked setting."""

    figure: Figure
    title: str
    exact: bool
    findings: tuple[FindingRef, ...]
    """The open findings on the recipe and metric on this hardware (at any setting)."""
    contested: bool = False
    """An open finding at the figure's own setting, or a same-checkpoint claim that disagrees."""
    disputed: bool = False
    """The recipe's single-stream claim disagrees with another recipe's about the same checkpoint."""

    @property
    def runnable(self) -> bool:
        return self.figure.command is not None

    def as_json(self) -> dict[str, Any]:
        f = self.figure
        return {
            "recipe": f.recipe,
            "title": self.title,
            "metric": f.metric,
            "value": f.value,
            "setting": f.setting.as_json(),
            "exact": self.exact,
            "date": f.date.isoformat(),
            "status": f.status,
            "runnable": self.runnable,
            "command": f.command,
            "contested": self.contested,
            "findings": [x.as_json() for x in self.findings],
            "row": f.row,
        }


@dataclass(frozen=True)
class Ranking:
    """The answer to a query: the results in order, the answer among them, the loads measured."""

    query: Query
    setting: Setting | None
    """The setting ranked at (free dimensions settled); ``None`` when nothing was measured at the load."""
    results: list[Choice]
    """Exact results first, best first; then each nearest setting's results (see the module)."""
    loads: list[tuple[int | None, float | None]]
    """(concurrency, request rate) of every load the metric was measured at on the hardware."""

    @property
    def answer(self) -> Choice | None:
        """The first result that can be run as recorded."""
        return next((c for c in self.results if c.runnable), None)

    @property
    def exact(self) -> list[Choice]:
        return [c for c in self.results if c.exact]

    def sections(self) -> list[tuple[Setting, list[Choice]]]:
        """The results measured at another setting, a section per setting, in order."""
        out: dict[Setting, list[Choice]] = {}
        for choice in self.results:
            if not choice.exact:
                out.setdefault(choice.figure.setting, []).append(choice)
        return list(out.items())

    def as_json(self) -> dict[str, Any]:
        answer = self.answer
        return {
            "query": self.query.as_json(),
            "setting": None if self.setting is None else self.setting.as_json(),
            "answer": None if answer is None else answer.as_json(),
            "results": [c.as_json() for c in self.results],
            "loads": [_load_json(c, r) for c, r in self.loads],
        }


def _load_json(concurrency: int | None, rate: float | None) -> dict[str, Any]:
    if rate is not None and math.isinf(rate):
        return {"concurrency": concurrency, "request_rate": "inf"}
    return {"concurrency": concurrency, "request_rate": rate}


def load_text(concurrency: int | None, rate: float | None) -> str:
    """A load in words: ``concurrency 8``, ``4 requests/s (cap 16)``."""
    if rate is None:
        return f"concurrency {concurrency}"
    text = "all requests at once" if math.isinf(rate) else f"{rate:g} requests/s"
    return f"{text} (cap {concurrency})" if concurrency is not None else text


@dataclass(frozen=True)
class HardwareFigures:
    """Every figure measured on one hardware, by recipe and metric, kind of load apart."""

    hardware: str
    name: str
    titles: dict[str, str]
    figures: dict[tuple[str, str, bool], dict[Setting, Figure]]
    """(recipe, metric, open loop) → setting → figure, from the rows of the recipe's best status."""
    findings: dict[tuple[str, str], tuple[FindingRef, ...]]
    """(recipe, metric) → open findings on this hardware."""
    disputed: dict[str, tuple[Any, ...]] = field(default_factory=dict)
    """Recipe → the :data:`~builder.site.figures.SHAPE` of its single-stream decode claim, when that
    claim disagrees with another recipe's about the same checkpoint."""
    load_index: dict[str, dict[tuple[int | None, float | None], dict[str, dict[Setting, Figure]]]] = field(
        default_factory=dict, compare=False, repr=False
    )
    """:meth:`by_load`'s, per metric, made on first use."""

    def settings(self) -> list[Setting]:
        """Every setting some recipe was measured at, sorted."""
        found = {s for by_setting in self.figures.values() for s in by_setting}
        return sorted(found, key=Setting.sort_key)

    def metrics(self) -> list[str]:
        """The metrics measured on this hardware, in the row format's order."""
        present = {metric for _, metric, _ in self.figures}
        return [m for m in METRICS if m in present]

    def by_load(self, metric: str) -> dict[tuple[int | None, float | None], dict[str, dict[Setting, Figure]]]:
        """(concurrency, request rate) → recipe → setting → figure, for ``metric`` (made once)."""
        found = self.load_index.get(metric)
        if found is None:
            found = self.load_index[metric] = {}
            for (recipe, measured, _), by_setting in self.figures.items():
                if measured == metric:
                    for s, f in by_setting.items():
                        found.setdefault((s.concurrency, s.request_rate), {}).setdefault(recipe, {})[s] = f
        return found

    def choice(self, figure: Figure, exact: bool) -> Choice:
        """``figure`` as a result: its title, findings and whether it is contested."""
        findings = self.findings.get((figure.recipe, figure.metric), ())
        s = figure.setting
        disputed = figure.metric == "decode_tok_s" and self.disputed.get(figure.recipe) == tuple(
            getattr(s, d) for d in SHAPE
        )
        at_setting = any(f.setting == s for f in findings)
        title = self.titles.get(figure.recipe, figure.recipe)
        return Choice(figure, title, exact, findings, at_setting or disputed, disputed)


def known_hardware(site: Site) -> list[str]:
    """Hardware ids the site knows (``data/hardware.yaml``, recipes, nodes), sorted."""
    return sorted(
        set(site.hardware)
        | {r.meta.hardware for r in site.recipes.values()}
        | {n.hardware for n in site.nodes.values()}
    )


def check_query(site: Site, query: Query) -> None:
    """Raise :class:`UsageError` for a query naming an unknown hardware or metric."""
    known = known_hardware(site)
    if query.hardware not in known:
        raise UsageError(f"unknown hardware {query.hardware!r}; known: {', '.join(known) or 'none'}")
    if query.metric not in METRICS:
        raise UsageError(f"unknown metric {query.metric!r}; known: {', '.join(METRICS)}")
    if query.request_rate is not None and query.concurrency is not None:
        raise UsageError("ask for a concurrency or a request rate, not both")


_SERVE = ("engine", "engine_version", "engine_build", "flags", "env")
"""The fields of a figure's row that its serve command reads."""


def hardware_figures(
    site: Site,
    recon: Reconciliation,
    hardware: str,
    every_rows: Mapping[str, list[dict[str, Any]]] | None = None,
) -> HardwareFigures:
    """Every recipe's figure, per metric, at every setting it was measured at on ``hardware``: the
    figures of :class:`~builder.site.figure_grid.FigureGrid`, the one figure of a recipe at a setting
    that every page shows (rows that differ from the recipe give one where nothing better does).

    ``every_rows``: the rows of every recipe by recipe (the render context's; made when not given),
    for the claims disputed among a base model's recipes, on whatever hardware (as its comparison page
    and the recipe cards say)."""
    # Imported here: a build that renders no chooser page (an edited body) never loads them.
    from builder.site.comparisons import model_disputes
    from builder.site.figure_grid import FigureGrid, rows_table

    every = site
    site = site.measured_on(hardware)
    mine = site.rows.select(["row_id", "recipe", "file_id", "file_row", *_SERVE, *METRICS])
    local = {row_id: i for i, row_id in enumerate(mine.column("row_id").to_pylist())}
    slugs = sorted(set(mine.column("recipe").to_pylist()))
    rows = rows_by_recipe(site)
    grid = FigureGrid(rows_table(rows, slugs), recon, site.node_hardware())
    columns: dict[str, list[Any]] = {}

    def column(name: str) -> list[Any]:
        if name not in columns:
            columns[name] = mine.column(name).to_pylist()
        return columns[name]

    figures: dict[tuple[str, str, bool], dict[Setting, Figure]] = defaultdict(dict)
    commands: dict[tuple[Any, ...], str | None] = {}
    serves = list(zip(*(column(f) for f in _SERVE), strict=True))
    file_ids, file_rows = column("file_id"), column("file_row")
    for metric in METRICS:
        values = column(metric) if grid.measured(metric) else []
        for where, recipes in grid.measured(metric):
            if where is None or where.hardware != hardware:
                continue
            setting = Setting(*where.workload())
            for recipe in recipes:
                cell = grid.cell(metric, where, recipe)
                if cell is None:
                    continue
                at = local[median_row(cell, partial(_value_at, values, local))]
                parsed = site.row_files[file_ids[at]]
                serve = serves[at]
                if (recipe, serve) not in commands:
                    meta = site.recipes[recipe].meta if recipe in site.recipes else None
                    commands[(recipe, serve)] = (
                        None
                        if meta is None
                        else runnable_command(meta, dict(zip(_SERVE, serve, strict=True)))
                    )
                figures[(recipe, metric, setting.open_loop)][setting] = Figure(
                    recipe,
                    metric,
                    setting,
                    cell.value,
                    cell.date,
                    cell.status,
                    f"{parsed.source.rel}:{parsed.line_of(file_rows[at])}",
                    cell.trials,
                    commands[(recipe, serve)],
                    hardware,
                )
    for by_setting in figures.values():
        ordered = sorted(by_setting.items(), key=lambda kv: kv[0].sort_key())
        by_setting.clear()
        by_setting.update(ordered)
    slugs = sorted({k[0] for k in figures})
    findings: dict[tuple[str, str], tuple[FindingRef, ...]] = {}
    for recipe in slugs:
        refs: dict[str, list[FindingRef]] = defaultdict(list)
        for finding in recon.findings_for(recipe):
            if finding.is_open and finding.setting.get("hardware") == hardware:
                refs[finding.metric].append(
                    FindingRef(finding.id, finding.summary(), _finding_setting(finding))
                )
        for metric, found_refs in refs.items():
            findings[(recipe, metric)] = tuple(found_refs)
    titles = {slug: site.recipes[slug].meta.title for slug in slugs if slug in site.recipes}
    claims: dict[str, FigureSetting] = {}
    every_rows = every_rows if every_rows is not None else rows_by_recipe(every)
    for model in sorted({every.recipes[slug].meta.model for slug in slugs if slug in every.recipes}):
        claims.update(model_disputes(every, every_rows, recon, model))
    disputed = {
        slug: tuple(getattr(s, d) for d in SHAPE)
        for slug, s in claims.items()
        if slug in titles and s.hardware == hardware
    }
    return HardwareFigures(
        hardware, site.hardware_name(hardware), titles, dict(sorted(figures.items())), findings, disputed
    )


def _value_at(values: list[Any], local: dict[int, int], row_id: int) -> float:
    return float(values[local[row_id]])


def _finding_setting(finding: Any) -> Setting | None:
    s = finding.setting
    try:
        return Setting(*(s[d] for d in DIMENSIONS))
    except KeyError:
        return None


def _log_distance(measured: float, asked: float) -> float:
    if math.isinf(measured) or math.isinf(asked):
        return 0.0 if measured == asked else 64.0
    return abs(math.log2((1 + measured) / (1 + asked)))


def _distance(setting: Setting, query: Query) -> tuple[int, float]:
    """(asked dimensions the setting leaves unrecorded, distance over the recorded ones)."""
    unknown = 0
    distance = 0.0
    for name in DIMENSIONS:
        asked = getattr(query, name)
        measured = getattr(setting, name)
        if name in query.unrecorded:
            unknown += measured is not None
            continue
        if asked is None:
            continue
        if measured is None:
            unknown += 1
        else:
            distance += _log_distance(measured, asked)
    return unknown, distance


def _at_load(concurrency: int | None, rate: float | None, query: Query) -> bool:
    """Whether a setting of that load is at the query's load (never another concurrency or rate)."""
    if query.request_rate is None:
        return rate is None and concurrency == (query.concurrency or 1)
    return rate == query.request_rate and (query.concurrency is None or concurrency == query.concurrency)


def _settled(query: Query, candidates: dict[Setting, set[str]]) -> Query:
    """``query`` with its free lengths settled: the value most recipes were measured at among
    ``candidates`` (setting → recipes, at the asked load) that agree with what is asked."""
    free = [d for d in FREE if getattr(query, d) is None and d not in query.unrecorded]
    if not free:
        return query
    asked = {d for d in LENGTHS if d not in free}
    fitting = [
        s
        for s in candidates
        if all(
            (getattr(s, d) is None) if d in query.unrecorded else getattr(s, d) == getattr(query, d)
            for d in asked
        )
    ]
    if not fitting:
        return query
    counts: dict[tuple[Any, ...], set[str]] = defaultdict(set)
    for s in fitting:
        counts[tuple(getattr(s, d) for d in free)] |= candidates[s]
    best = min(
        counts,
        key=lambda k: (-len(counts[k]), tuple((v is None, v or 0) for v in k)),
    )
    settled = dict(zip(free, best, strict=True))
    unrecorded = query.unrecorded | {d for d, v in settled.items() if v is None}
    return replace(
        query, unrecorded=frozenset(unrecorded), **{d: v for d, v in settled.items() if v is not None}
    )


def _asked_setting(query: Query) -> Setting | None:
    """The one setting the query asks for, when it leaves no dimension free."""
    prompt = None if "prompt_tokens" in query.unrecorded else query.prompt_tokens
    output = None if "output_tokens" in query.unrecorded else query.output_tokens
    if prompt is None and "prompt_tokens" not in query.unrecorded:
        return None
    if output is None and "output_tokens" not in query.unrecorded:
        return None
    if query.concurrency is None:
        return None  # an open-loop query without a cap
    return Setting(prompt, output, query.context_tokens, query.concurrency, query.request_rate)


def nearest(
    figures: Mapping[Setting, Figure], query: Query, asked: Setting | None = None
) -> tuple[Figure, bool]:
    """The figure at the setting nearest the query, and whether it is the asked setting itself.
    ``asked``: the query's one setting (:func:`_asked_setting`), when it has one."""
    if asked is not None:
        found = figures.get(asked)
        if found is not None:
            return found, True
    best = min(
        figures.values(),
        key=lambda f: (*_distance(f.setting, query), -f.rows, f.setting.sort_key()),
    )
    unknown, distance = _distance(best.setting, query)
    return best, unknown == 0 and distance == 0.0


def rank(figures: HardwareFigures, query: Query) -> Ranking:
    """The recipes for ``query``, best first (see the module's docstring for how)."""
    open_loop = query.request_rate is not None
    lower = query.metric in LOWER_IS_BETTER
    by_load = figures.by_load(query.metric)
    at_load: dict[str, dict[Setting, Figure]] = {}
    for (concurrency, rate), by_recipe in by_load.items():
        if (rate is not None) == open_loop and _at_load(concurrency, rate, query):
            for recipe, mine in by_recipe.items():
                at_load.setdefault(recipe, {}).update(mine)
    measured = sorted(by_load, key=lambda load: (load[1] is not None, load[1] or 0.0, load[0] or 0))
    if not at_load:
        return Ranking(query, None, [], measured)
    candidates: dict[Setting, set[str]] = defaultdict(set)
    for recipe, mine in at_load.items():
        for s in mine:
            candidates[s].add(recipe)
    settled = _settled(query, candidates)
    asked = _asked_setting(settled)
    exact: list[Choice] = []
    elsewhere: list[Choice] = []
    for mine in at_load.values():
        figure, is_exact = nearest(mine, settled, asked)
        (exact if is_exact else elsewhere).append(figures.choice(figure, is_exact))

    def best(c: Choice) -> tuple[Any, ...]:
        return (c.figure.value if lower else -c.figure.value, c.figure.recipe)

    exact.sort(key=best)
    elsewhere.sort(
        key=lambda c: (*_distance(c.figure.setting, settled), c.figure.setting.sort_key(), *best(c))
    )
    ranked_at = asked or (exact[0].figure.setting if exact else None)
    return Ranking(settled, ranked_at, exact + elsewhere, measured)


def choose(site: Site, recon: Reconciliation, query: Query) -> Ranking:
    """The answer to ``query`` (what ``python -m builder choose`` prints)."""
    check_query(site, query)
    return rank(hardware_figures(site, recon, query.hardware), query)


def rankings(figures: HardwareFigures) -> Iterable[tuple[Setting, str, Ranking]]:
    """The ranking at every measured setting, for every metric measured on the hardware (the pages)."""
    metrics = figures.metrics()
    for setting in figures.settings():
        for metric in metrics:
            yield setting, metric, rank(figures, Query.at(figures.hardware, metric, setting))


def _marks(choice: Choice) -> str:
    marks = [] if choice.runnable else ["command not recorded"]
    if choice.contested:
        marks.append("CONTESTED")
    return f"  [{'; '.join(marks)}]" if marks else ""


def describe(site: Site, ranking: Ranking) -> str:
    """The answer as text: "use this" first, then one numbered line per result, exact ones first,
    then a section per other setting, each with where its figure comes from."""
    query = ranking.query
    label, unit = QUANTITIES[query.metric].label, QUANTITIES[query.metric].unit
    hardware = site.hardware_name(query.hardware)
    asked = query.text()
    load = load_text(query.concurrency or (None if query.request_rate is not None else 1), query.request_rate)
    answer = ranking.answer
    if answer is not None:
        f = answer.figure
        contested = ", contested" if answer.contested else ""
        lines = [f"Use this: {answer.title} ({f.recipe}), {fmt_number(f.value)} {unit}{contested}"]
        lines += [f"  {line}" for line in (f.command or "").splitlines()]
    elif not ranking.results:
        lines = [f"Use this: nothing measured {label.lower()} at {load} on {hardware}"]
    else:
        lines = [
            "Use this: no result here can be run as recorded (none gives a repository id and a complete serve command)"
        ]
    better = "lower is better" if query.metric in LOWER_IS_BETTER else "higher is better"
    lines.append(f"{label} ({unit}, {better}) on {hardware}, {asked}:")
    if not ranking.results:
        measured = ", ".join(load_text(c, r) for c, r in ranking.loads)
        lines.append(f"  no recipe has a row with this metric at {load} on this hardware")
        lines.append(
            f"  loads measured: {measured}" if measured else "  no load was measured with this metric"
        )
    number = 0
    shown: Setting | None = None
    for choice in ranking.results:
        f = choice.figure
        if not choice.exact and f.setting != shown:
            shown = f.setting
            lines.append(f"Measured at another setting: {f.setting.text()}:")
        number += 1
        lines.append(
            f"{number:>3}. {fmt_number(f.value)} {unit}  {choice.title} ({f.recipe}){_marks(choice)}"
        )
        lines.append(f"     {f.date.isoformat()}; {f.status.replace('_', ' ')}; row {f.row}")
        for finding in choice.findings:
            lines.append(f"     open finding: {finding.summary}")
        if choice.disputed:
            lines.append("     sources about the same checkpoint disagree (see the model's comparison page)")
    return "\n".join(lines)

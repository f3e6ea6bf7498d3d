"""The chooser: on one hardware, for one workload, which recipe is fastest.

:func:`hardware_figures` works out, once per hardware, every recipe's figure at every setting it
was measured at; :func:`rank` answers a :class:`Query` from them. ``python -m builder choose`` and
the ``/choose/`` pages both rank with :func:`rank`.

- **Rows**: only rows measured on the asked hardware (through their node) that carry the metric,
  and of the asked kind of load: closed-loop rows (no ``request_rate``) for ``concurrency``,
  open-loop rows for ``request_rate``; the two never stand in for each other.
- **Which rows make a recipe's figure**: as for headlines, its rows that match the recipe when it
  has any (for that metric, on that hardware, of that kind of load); otherwise its rows whose
  status is *not recorded*; otherwise its rows that differ. The result says which (``status``).
- **The figure at a setting**: the latest run there (same date, time, node, engine version and
  build, flags, env), the median of its values; ``row`` is that run's row nearest the median.
- **The setting used**: the asked one when the recipe was measured there (``exact``); otherwise the
  nearest measured one. Distance adds, over the asked dimensions, ``|log2((1 + measured) / (1 +
  asked))|``: doubling a prompt or the concurrency costs 1 whatever the scale, and a context of 0
  against 4,096 costs 12. A setting that leaves an asked dimension unrecorded comes after every
  setting that records it; among equally near settings, the most measured one wins, then the
  smaller. A dimension not asked (prompt or output length) is free: the most measured setting.
- **Order**: results measured at the asked setting first, best first (higher throughput, lower
  latency); then the nearest-setting ones, best first; ties by recipe slug.
"""

from __future__ import annotations

import datetime as dt
import math
import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from builder.analysis.reconcile import DIFFERS, MATCHES, NOT_RECORDED, Reconciliation
from builder.content.models import LOWER_IS_BETTER, METRICS, QUANTITIES
from builder.data.load import Site
from builder.errors import UsageError
from builder.site.formats import fmt_number

DEFAULT_METRIC = "decode_tok_s"
STATUS_ORDER = (MATCHES, NOT_RECORDED, DIFFERS)
"""Row statuses in the order a recipe's figure prefers them."""
DIMENSIONS = ("prompt_tokens", "output_tokens", "context_tokens", "concurrency", "request_rate")


@dataclass(frozen=True, order=True)
class Setting:
    """Where a figure was measured. ``request_rate`` is None for a closed-loop run."""

    prompt_tokens: int | None
    output_tokens: int | None
    context_tokens: int
    concurrency: int
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
            parts.append(f"{text} (cap {self.concurrency})")
        else:
            parts.append(f"concurrency {self.concurrency}")
        return ", ".join(parts)

    def sort_key(self) -> tuple[Any, ...]:
        """Open-loop after closed-loop, then by each dimension, unrecorded last."""
        return (
            self.open_loop,
            self.request_rate or 0.0,
            self.concurrency,
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
        return cls(
            hardware,
            metric,
            setting.prompt_tokens,
            setting.output_tokens,
            setting.context_tokens,
            setting.concurrency,  # an open-loop setting's cap too: the pages rank at that very setting
            setting.request_rate,
            frozenset(d for d in ("prompt_tokens", "output_tokens") if getattr(setting, d) is None),
        )

    def text(self) -> str:
        parts = [f"{self.prompt_tokens:,}-token prompt" if self.prompt_tokens else "any prompt"]
        if self.output_tokens is not None:
            parts.append(f"{self.output_tokens:,} output tokens")
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
            "prompt_tokens": self.prompt_tokens,
            "output_tokens": self.output_tokens,
            "context_tokens": self.context_tokens,
            "concurrency": self.concurrency,
            "request_rate": rate,
        }


@dataclass(frozen=True)
class FindingRef:
    """An open finding on a recipe and metric, as a result lists it."""

    id: str
    summary: str

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


@dataclass(frozen=True)
class Choice:
    """One result: a recipe's figure for the query, and whether it was measured at the asked setting."""

    figure: Figure
    title: str
    exact: bool
    findings: tuple[FindingRef, ...]

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
            "findings": [x.as_json() for x in self.findings],
            "row": f.row,
        }


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

    def settings(self) -> list[Setting]:
        """Every setting some recipe was measured at, sorted."""
        found = {s for by_setting in self.figures.values() for s in by_setting}
        return sorted(found, key=Setting.sort_key)

    def metrics(self) -> list[str]:
        """The metrics measured on this hardware, in the row format's order."""
        present = {metric for _, metric, _ in self.figures}
        return [m for m in METRICS if m in present]


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


_COLUMNS = (
    "recipe",
    "node",
    "date",
    "time",
    "engine_version",
    "engine_build",
    "flags",
    "env",
    "file_id",
    "file_row",
    *DIMENSIONS,
)


_FIGURES_SQL = """
WITH measured AS (
    UNPIVOT mine ON {metrics} INTO NAME metric VALUE value
), tiered AS (
    SELECT *, min(tier) OVER (PARTITION BY recipe, metric, request_rate IS NULL) AS best FROM measured
), pool AS (
    SELECT *, count(*) OVER setting AS n, max(run) OVER setting AS latest
    FROM tiered WHERE tier = best
    WINDOW setting AS (PARTITION BY recipe, metric, {dimensions})
)
SELECT recipe, metric, {dimensions}, tier, n, value, date, file_id, file_row, position
FROM pool WHERE run = latest
ORDER BY recipe, metric, {dimensions}, position
"""
"""Per recipe, metric and setting, the latest run's rows among the rows of the recipe's best status
(``tier``) for that metric and kind of load, with how many rows that status has at the setting."""

_RUN = ("date", "time", "node", "engine_version", "engine_build", "flags", "env")
"""What tells runs apart, in the order that makes one run later than another."""


def hardware_figures(site: Site, recon: Reconciliation, hardware: str) -> HardwareFigures:
    """Every recipe's figure, per metric, at every setting it was measured at on ``hardware``."""
    import duckdb  # the rows of one hardware, grouped by recipe, metric, setting and run

    nodes = sorted(n for n, hw in site.node_hardware().items() if hw == hardware)
    table = site.rows
    positions = pc.indices_nonzero(pc.is_in(table.column("node"), value_set=pa.array(nodes, pa.string())))
    tier_of = {status: tier for tier, status in enumerate(STATUS_ORDER)}
    tiers = [tier_of.get(recon.status(i).status, -1) for i in positions.to_pylist()]
    mine = table.select([*_COLUMNS, *METRICS]).take(positions)
    # Runs numbered in order, latest last: a run is later when its date, time, node, ... are.
    keys = list(zip(*(mine.column(c).to_pylist() for c in _RUN), strict=True))
    keys = [tuple(v or "" for v in key) for key in keys]
    number = {key: n for n, key in enumerate(sorted(set(keys)))}
    mine = mine.append_column("run", pa.array([number[k] for k in keys], pa.int64()))
    mine = mine.append_column("tier", pa.array(tiers, pa.int8()))
    mine = mine.append_column("position", pa.array(range(mine.num_rows), pa.int64()))
    mine = mine.filter(pc.greater_equal(mine.column("tier"), 0))
    query = _FIGURES_SQL.format(metrics=", ".join(METRICS), dimensions=", ".join(DIMENSIONS))
    with duckdb.connect() as con:
        con.register("mine", mine)
        found = con.sql(query).to_arrow_table()
    latest = list(zip(*(column.to_pylist() for column in found.columns), strict=True))
    # One group per recipe, metric and setting: the latest run's rows, in table order.
    groups: dict[tuple[Any, ...], list[tuple[Any, ...]]] = defaultdict(list)
    for record in latest:
        groups[record[: 2 + len(DIMENSIONS)]].append(record)
    figures: dict[tuple[str, str, bool], dict[Setting, Figure]] = defaultdict(dict)
    made: dict[tuple[Any, ...], Setting] = {}
    for key, run in groups.items():
        recipe, metric, where = key[0], key[1], key[2:]
        setting = made.get(where)
        if setting is None:
            setting = made[where] = Setting(*where)
        figures[(recipe, metric, setting.open_loop)][setting] = _figure(site, recipe, metric, setting, run)
    for by_setting in figures.values():
        ordered = sorted(by_setting.items(), key=lambda kv: kv[0].sort_key())
        by_setting.clear()
        by_setting.update(ordered)
    findings: dict[tuple[str, str], tuple[FindingRef, ...]] = {}
    for recipe in sorted({k[0] for k in figures}):
        refs: dict[str, list[FindingRef]] = defaultdict(list)
        for finding in recon.findings_for(recipe):
            if finding.is_open and finding.setting.get("hardware") == hardware:
                refs[finding.metric].append(FindingRef(finding.id, finding.summary()))
        for metric, found in refs.items():
            findings[(recipe, metric)] = tuple(found)
    titles = {slug: site.recipes[slug].meta.title for slug in {k[0] for k in figures} if slug in site.recipes}
    return HardwareFigures(
        hardware, site.hardware_name(hardware), titles, dict(sorted(figures.items())), findings
    )


def _figure(site: Site, recipe: str, metric: str, setting: Setting, run: list[tuple[Any, ...]]) -> Figure:
    """The figure of a setting's latest run: ``run`` holds its rows as the query selects them."""
    at = 2 + len(DIMENSIONS)
    tier, count = run[0][at], run[0][at + 1]
    if len(run) == 1:
        nearest = run[0]
        value = nearest[at + 2]
    else:
        value = statistics.median(r[at + 2] for r in run)
        nearest = min(run, key=lambda r: (abs(r[at + 2] - value), r[-1]))
    date, file_id, file_row = nearest[at + 3 : at + 6]
    parsed = site.row_files[file_id]
    row = f"{parsed.source.rel}:{parsed.line_of(file_row)}"
    return Figure(recipe, metric, setting, value, date, STATUS_ORDER[tier], row, count)


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


def rank(figures: HardwareFigures, query: Query) -> list[Choice]:
    """The recipes for ``query``, best first (see the module's docstring for how)."""
    open_loop = query.request_rate is not None
    lower = query.metric in LOWER_IS_BETTER
    asked = _asked_setting(query)
    out: list[Choice] = []
    for (recipe, metric, kind), by_setting in figures.figures.items():
        if metric != query.metric or kind != open_loop:
            continue
        figure, exact = nearest(by_setting, query, asked)
        out.append(
            Choice(
                figure,
                figures.titles.get(recipe, recipe),
                exact,
                figures.findings.get((recipe, metric), ()),
            )
        )
    return _ordered(out, lower)


def _ordered(choices: list[Choice], lower: bool) -> list[Choice]:
    return sorted(
        choices, key=lambda c: (not c.exact, c.figure.value if lower else -c.figure.value, c.figure.recipe)
    )


def choose(site: Site, recon: Reconciliation, query: Query) -> list[Choice]:
    """The answer to ``query`` (what ``python -m builder choose`` prints)."""
    check_query(site, query)
    return rank(hardware_figures(site, recon, query.hardware), query)


def rankings(figures: HardwareFigures) -> Iterable[tuple[Setting, str, list[Choice]]]:
    """The ranking at every measured setting, for every metric measured on the hardware (the pages)."""
    metrics = figures.metrics()
    for setting in figures.settings():
        for metric in metrics:
            yield setting, metric, rank(figures, Query.at(figures.hardware, metric, setting))


def describe(site: Site, query: Query, results: list[Choice]) -> str:
    """The answer as text: one numbered line per recipe, best first, with where its figure comes from."""
    label, unit = QUANTITIES[query.metric].label, QUANTITIES[query.metric].unit
    asked = query.text()
    better = "lower is better" if query.metric in LOWER_IS_BETTER else "higher is better"
    lines = [f"{label} ({unit}, {better}) on {site.hardware_name(query.hardware)}, {asked}:"]
    if not results:
        kind = "an open-loop" if query.request_rate is not None else "a closed-loop"
        lines.append(f"  no recipe has {kind} row with this metric on this hardware")
    for number, choice in enumerate(results, 1):
        f = choice.figure
        lines.append(f"{number:>3}. {fmt_number(f.value)} {unit}  {choice.title} ({f.recipe})")
        where = "at the asked setting" if choice.exact else f"NEAREST setting: {f.setting.text()}"
        lines.append(f"     {where}; {f.date.isoformat()}; {f.status.replace('_', ' ')}; row {f.row}")
        for finding in choice.findings:
            lines.append(f"     open finding: {finding.summary}")
    return "\n".join(lines)

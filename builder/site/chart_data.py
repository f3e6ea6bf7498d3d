"""The data values of a recipe page's charts, computed from its rows (the specs come from :mod:`charts`).

A chart appears only when its data can show something: a prompt curve needs two prompt lengths, a
throughput curve two concurrencies, a history two dates (or a finding). Recipe curves use the
recipe's own rows (matching first, never off-recipe rows); the history shows every row and tells
off-recipe rows apart. Comparison pages' and case studies' charts are in
:mod:`builder.site.side_by_side_charts`.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from builder.analysis.findings import Finding
from builder.analysis.reconcile import DIFFERS, MATCHES, RowStatus
from builder.content.models import METRICS
from builder.site.charts import (
    CONCURRENCY,
    HISTORY,
    PROMPT,
    Chart,
    Column,
    chart_from_rows,
)
from builder.site.figures import (
    QUANTITY_LABELS,
    STATUS_LABELS,
    STATUS_ORDER,
    Row,
    Setting,
    run_key,
    setting_values,
    status_rank,
    why_text,
)


def _basis(statuses: Iterable[str], unrecorded: Iterable[str]) -> str:
    """How the rows behind a curve relate to the recipe, for its caption."""
    kinds = set(statuses)
    if kinds <= {MATCHES}:
        return "From rows that match the recipe."
    missing = ", ".join(sorted(set(unrecorded))) or "some fields"
    if MATCHES in kinds:
        return f"From rows that match the recipe, and where no such row exists, rows that leave {missing} unrecorded."
    return f"No row matches the recipe on every field; these rows agree with it on all they record but leave {missing} unrecorded."


StatusOf = Callable[[int], RowStatus]
"""``row_id`` → its status (``Reconciliation.status``, or a page's own dict's ``__getitem__``)."""

Trials = list[tuple[Row, RowStatus]]

RESULTS_ANCHOR = "#results-h"
"""The recipe page's results table, which lists every row a history chart plots."""


class RecipeRows:
    """A recipe's rows with their setting and status, grouped once (one pass) for all of its charts.

    Settings and statuses are shared objects (one per distinct value), so grouping goes by object
    identity: hashing them field by field for every row is what the charts would otherwise spend
    their time on.
    """

    def __init__(self, rows: list[Row], status_of: StatusOf, node_hw: Mapping[str, str]) -> None:
        self._rows = rows
        settings: dict[tuple[Any, ...], tuple[Setting, Trials]] = {}
        hardware: dict[str, str] = {}
        runs: dict[tuple[Any, ...], tuple[Setting, RowStatus, list[Row]]] = {}
        for r in rows:
            node = r["node"]
            hw = hardware.get(node)
            if hw is None:
                hw = hardware[node] = node_hw.get(node, "")
            # Keyed by hardware, not node: rows of one setting measured on two nodes of the same
            # hardware are one setting (as figures.pick_cell sees them).
            key = setting_values(r, hw)
            group = settings.get(key)
            if group is None:
                group = settings[key] = (Setting.of(key), [])
            status = status_of(r["row_id"])
            group[1].append((r, status))
            run_key = (id(group[0]), r["date"], node, r["engine_version"], id(status))
            run = runs.get(run_key)
            if run is None:
                runs[run_key] = (group[0], status, [r])
            else:
                run[2].append(r)
        self.settings: list[tuple[Setting, Trials]] = sorted(settings.values(), key=lambda g: g[0].sort_key())
        """Rows by setting, settings in :meth:`Setting.sort_key` order."""
        self._run_groups = runs
        self._runs: list[Run] | None = None
        self._best: dict[tuple[int, str], Trials] = {}
        self._ranks: dict[int, tuple[int, int]] = {}
        self._iso: dict[Any, str] = {}
        self._measured: dict[str, bool] = {}

    def measures(self, metric: str) -> bool:
        """Whether any row has a value for ``metric``."""
        measured = self._measured.get(metric)
        if measured is None:
            measured = self._measured[metric] = any(r[metric] is not None for r in self._rows)
        return measured

    def iso(self, date: Any) -> str:
        text = self._iso.get(date)
        if text is None:
            text = self._iso[date] = date.isoformat()
        return text

    def best_run(self, setting: Setting, trials: Trials, metric: str) -> Trials:
        """The trials of the latest run among the best-ranked rows with ``metric`` (never off-recipe rows).

        The same choice as :func:`builder.site.figures.pick_cell`, on rows whose statuses are already known.
        """
        key = (id(setting), metric)
        best = self._best.get(key)
        if best is None:
            best = self._best[key] = self._pick(trials, metric)
        return best

    def _pick(self, trials: Trials, metric: str) -> Trials:
        ranks = self._ranks
        best: tuple[int, int] | None = None
        chosen: Trials = []
        for r, st in trials:
            if r[metric] is None:
                continue
            rank = ranks.get(id(st))
            if rank is None:
                rank = ranks[id(st)] = status_rank(st)
            if best is None or rank < best:
                best, chosen = rank, [(r, st)]
            elif rank == best:
                chosen.append((r, st))
        if not chosen or chosen[0][1].status == DIFFERS:
            return []
        if len(chosen) > 1:
            latest = max(run_key(r) for r, _ in chosen)
            chosen = [(r, st) for r, st in chosen if run_key(r) == latest]
            chosen.sort(key=lambda x: x[0]["row_id"])
        return chosen

    def runs(self) -> list[Run]:
        """Every run of every setting (rows of one date, node, engine version and status), in order.

        Ordered by setting first (the history's legend lists settings in the order they first
        appear in its data), then date, node, engine version and status; two statuses of one rank
        keep their order of appearance (the sort is stable).
        """
        if self._runs is None:
            rank = {id(setting): i for i, (setting, _) in enumerate(self.settings)}
            groups = self._run_groups

            def order(k: tuple[Any, ...]) -> tuple[Any, ...]:
                return (rank[k[0]], k[1], k[2], k[3], STATUS_ORDER[groups[k][1].status])

            labels: dict[int, str] = {}
            whys: dict[int, tuple[str, str]] = {}
            runs = []
            for key in sorted(groups, key=order):
                setting, status, rows = groups[key]
                label = labels.get(key[0])
                if label is None:
                    label = labels[key[0]] = setting.label()
                why = whys.get(key[4])
                if why is None:
                    why = whys[key[4]] = (STATUS_LABELS[status.status], why_text(status))
                runs.append((rows, self.iso(key[1]), label, why[0], why[1], key[2], key[3]))
            self._runs = runs
        return self._runs


Run = tuple[list[Row], str, str, str, str, str, str]
"""One run of one setting on a recipe's history: its rows, date, setting label, status label,
why off-recipe, node and engine version (labels worked out once per page)."""


def annotate(rows: list[Row], status_of: StatusOf, node_hw: Mapping[str, str]) -> RecipeRows:
    """A recipe's rows with their setting and status, worked out once for all its charts."""
    return RecipeRows(rows, status_of, node_hw)


PROMPT_FIELDS = ("concurrency", "prompt", "decode", "date", "node", "status")


def prompt_chart(rows: RecipeRows) -> Chart | None:
    """Decode tok/s against prompt length, a line per concurrency (latest best run per setting)."""
    values: list[list[Any]] = []
    statuses: list[str] = []
    unrecorded: list[str] = []
    groups = [
        (setting, trials)
        for setting, trials in rows.settings
        if setting.prompt_tokens is not None and not setting.context_tokens and not setting.open_loop
    ]
    groups.sort(key=lambda g: (g[0].concurrency, g[0].prompt_tokens or 0, g[0].hardware))
    for setting, trials in groups:
        for r, status in rows.best_run(setting, trials, "decode_tok_s"):
            statuses.append(status.status)
            unrecorded.extend(status.unrecorded)
            values.append(
                [
                    r["concurrency"],
                    r["prompt_tokens"],
                    r["decode_tok_s"],
                    rows.iso(r["date"]),
                    r["node"],
                    STATUS_LABELS[status.status],
                ]
            )
    prompts_per_line: dict[int, set[int]] = defaultdict(set)
    for v in values:
        prompts_per_line[v[0]].add(v[1])
    if not any(len(p) > 1 for p in prompts_per_line.values()):
        return None
    columns = (
        Column("concurrency", "Concurrency", True),
        Column("prompt", "Prompt tokens", True),
        Column("decode", "Decode tok/s per stream", True),
        Column("date", "Date"),
        Column("node", "Node"),
        Column("status", "Row"),
    )
    caption = (
        "Decode speed of one stream against prompt length, one line per concurrency; the latest run at "
        "each setting, lines through the median of its trials. " + _basis(statuses, unrecorded)
    )
    return chart_from_rows(
        PROMPT, "chart-prompt", "Decode speed by prompt length", caption, columns, PROMPT_FIELDS, values
    )


_THROUGHPUT = (("aggregate_tok_s", "Aggregate"), ("decode_tok_s", "Per stream"))
CONCURRENCY_FIELDS = ("measure", "concurrency", "value", "prompt", "date", "node", "status")


def concurrency_chart(rows: RecipeRows) -> Chart | None:
    """Aggregate and per-stream throughput against concurrency (latest best run per setting)."""
    values: list[list[Any]] = []
    statuses: list[str] = []
    unrecorded: list[str] = []
    # Open-loop runs have no concurrency to plot against (a cap, at most): they stay in the table.
    groups = [
        (setting, trials)
        for setting, trials in rows.settings
        if not setting.context_tokens and not setting.open_loop
    ]
    for metric, measure in _THROUGHPUT:
        for setting, trials in groups:
            prompt = "not recorded" if setting.prompt_tokens is None else f"{setting.prompt_tokens:,} tokens"
            for r, status in rows.best_run(setting, trials, metric):
                statuses.append(status.status)
                unrecorded.extend(status.unrecorded)
                values.append(
                    [
                        measure,
                        r["concurrency"],
                        r[metric],
                        prompt,
                        rows.iso(r["date"]),
                        r["node"],
                        STATUS_LABELS[status.status],
                    ]
                )
    if not any(v[0] == "Aggregate" for v in values) or len({v[1] for v in values}) < 2:
        return None
    columns = (
        Column("measure", "Throughput"),
        Column("concurrency", "Concurrency", True),
        Column("value", "tok/s", True),
        Column("prompt", "Prompt"),
        Column("date", "Date"),
        Column("node", "Node"),
        Column("status", "Row"),
    )
    caption = (
        "Output throughput of all streams together (aggregate) and of each stream, against the number of "
        "concurrent requests; the latest run at each setting. " + _basis(statuses, unrecorded)
    )
    return chart_from_rows(
        CONCURRENCY,
        "chart-concurrency",
        "Throughput by concurrency",
        caption,
        columns,
        CONCURRENCY_FIELDS,
        values,
    )


def _finding_setting(setting: Any) -> str:
    if isinstance(setting, dict):
        try:
            # The output length is told after the rest of the label (below).
            label = Setting(
                hardware=str(setting.get("hardware", "")),
                prompt_tokens=setting.get("prompt_tokens"),
                output_tokens=None,
                context_tokens=int(setting.get("context_tokens") or 0),
                concurrency=None if setting.get("concurrency") is None else int(setting["concurrency"]),
                request_rate=None if setting.get("request_rate") is None else float(setting["request_rate"]),
            ).label()
        except (KeyError, TypeError, ValueError):
            return ", ".join(f"{k} {v}" for k, v in setting.items())
        if setting.get("output_tokens") is not None:
            label += f" · {setting['output_tokens']:,} output tokens"
        return label
    return str(setting)


HISTORY_FIELDS = ("layer", "date", "setting", "value", "trials", "status", "note", "node", "engine_version")


def _finding_points(findings: Iterable[Finding], metric: str) -> list[list[Any]]:
    """Rings for the runs the findings on ``metric`` compare, in :data:`HISTORY_FIELDS` order.

    Reads only what the rings show (metric, setting, runs, summary, annotation), not each
    finding's whole JSON contract: that would cost more than the rest of the history chart.
    """
    points: list[list[Any]] = []
    for finding in findings:
        if finding.metric != metric:
            continue
        note = finding.summary()
        annotation = finding.annotation
        if annotation and annotation.get("reason"):
            note += f" (annotated: {annotation['reason']})"
        setting = _finding_setting(finding.setting)
        for run, _ in finding.runs:
            points.append(
                [
                    "finding",
                    run.date.isoformat(),
                    setting,
                    run.value,
                    None,
                    "finding",
                    note,
                    run.node or "",
                    run.engine_version or "",
                ]
            )
    return points


def history_chart(metric: str, rows: RecipeRows, findings: Iterable[Finding]) -> Chart | None:
    """Each run's figure for one metric over time (median of its trials), a colour per setting.

    Runs are kept apart by status, so an off-recipe run never merges with a matching one on the same
    day; rings mark the runs a finding compares. The points are the recipe's rows, which its page
    lists in its results table: the figure links there instead of repeating them.
    """
    values: list[list[Any]] = []
    dates: set[str] = set()
    if rows.measures(metric):
        for run_rows, date, setting, status, why, node, engine_version in rows.runs():
            if len(run_rows) == 1:  # the common case: one trial
                value = run_rows[0][metric]
                if value is None:
                    continue
                count = 1
            else:
                trials = [v for v in (r[metric] for r in run_rows) if v is not None]
                if not trials:
                    continue
                value, count = statistics.median(trials), len(trials)
            dates.add(date)
            values.append(["row", date, setting, value, count, status, why, node, engine_version])
    marks = _finding_points(findings, metric)
    if len(dates) < 2 and not marks:
        return None
    label, unit = QUANTITY_LABELS[metric]
    caption = (
        f"Each run's {label.lower()} figure by date (the median of its trials), a colour per setting. "
        "Filled circles match the recipe, squares leave something unrecorded, triangles differ from it; "
        "the line joins matching runs" + (". Rings mark the runs a finding compares." if marks else ".")
    )
    return chart_from_rows(
        HISTORY,
        f"chart-history-{metric}",
        f"{label} over time",
        caption,
        (),
        HISTORY_FIELDS,
        values + marks,
        quantity=metric,
        rows_link=RESULTS_ANCHOR,
    )


def recipe_charts(
    rows: list[Row], status_of: StatusOf, node_hw: Mapping[str, str], findings: Iterable[Finding]
) -> list[Chart]:
    """A recipe page's charts: its curves, and a history per metric with its findings ringed."""
    recipe_rows = RecipeRows(rows, status_of, node_hw)
    findings = list(findings)
    charts = [prompt_chart(recipe_rows), concurrency_chart(recipe_rows)]
    charts += [history_chart(m, recipe_rows, findings) for m in METRICS]
    return [c for c in charts if c is not None]

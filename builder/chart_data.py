"""The data values of each page's charts, computed from its rows (the specs come from :mod:`charts`).

A chart appears only when its data can show something: a prompt curve needs two prompt lengths, a
throughput curve two concurrencies, a history two dates (or a finding), a side-by-side two builds.
Recipe curves use the recipe's own rows (matching first, never off-recipe rows); the history shows
every row and tells off-recipe rows apart.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from builder.charts import ARMS, BUILDS, CONCURRENCY, HISTORY, PROMPT, Chart, Column, axis_title, make_chart
from builder.comparisons import Build, Comparison, Line, make_builds, side_by_side
from builder.figures import (
    QUANTITY_LABELS,
    SERVE_PROPERTIES,
    SMALLER_IS_BETTER,
    STATUS_LABELS,
    STATUS_ORDER,
    Row,
    Setting,
    status_rank,
    why_text,
)
from builder.load import Site
from builder.models import METRICS, Arm
from builder.reconcile import DIFFERS, MATCHES, Reconciliation, RowStatus

HardwareName = Callable[[str], str]


def _basis(statuses: Iterable[str], unrecorded: Iterable[str]) -> str:
    """How the rows behind a curve relate to the recipe, for its caption."""
    kinds = set(statuses)
    if kinds <= {MATCHES}:
        return "From rows that match the recipe."
    missing = ", ".join(sorted(set(unrecorded))) or "some fields"
    if MATCHES in kinds:
        return f"From rows that match the recipe, and where no such row exists, rows that leave {missing} unrecorded."
    return f"No row matches the recipe on every field; these rows agree with it on all they record but leave {missing} unrecorded."


Annotated = list[tuple[Row, Setting, RowStatus]]
"""A recipe's rows with their setting and status, worked out once for all its charts."""


def annotate(rows: list[Row], recon: Reconciliation, node_hw: dict[str, str]) -> Annotated:
    settings: dict[tuple[Any, ...], Setting] = {}
    out = []
    for r in rows:
        key = (r["node"], r["prompt_tokens"], r["context_tokens"] or 0, r["concurrency"])
        setting = settings.get(key)
        if setting is None:
            setting = settings[key] = Setting(node_hw.get(r["node"], ""), key[1], key[2], key[3])
        out.append((r, setting, recon.status(r["row_id"])))
    return out


def _best_run(items: list[tuple[Row, RowStatus]], metric: str) -> list[tuple[Row, RowStatus]]:
    """The trials of the latest run among the best-ranked rows with ``metric`` (never off-recipe rows).

    The same choice as :func:`builder.figures.pick_cell`, on rows whose statuses are already known.
    """
    ranks: dict[int, tuple[int, int]] = {}
    ranked = []
    for r, st in items:
        if r[metric] is not None:
            rank = ranks.get(id(st))
            if rank is None:
                rank = ranks[id(st)] = status_rank(st)
            ranked.append((rank, r, st))
    if not ranked:
        return []
    best = min(rank for rank, _, _ in ranked)
    chosen = [(r, st) for rank, r, st in ranked if rank == best]
    if chosen[0][1].status == DIFFERS:
        return []
    latest = max((r["date"], r["node"]) for r, _ in chosen)
    return sorted(
        ((r, st) for r, st in chosen if (r["date"], r["node"]) == latest), key=lambda x: x[0]["row_id"]
    )


def _by_setting(rows: Annotated, keep: Callable[[Row], bool]) -> dict[Setting, list[tuple[Row, RowStatus]]]:
    # Keyed by identity first (annotate shares one Setting per distinct setting), which is cheaper
    # than hashing the dataclass for every row.
    by_id: dict[int, list[tuple[Row, RowStatus]]] = defaultdict(list)
    settings: dict[int, Setting] = {}
    for r, setting, status in rows:
        if keep(r):
            settings[id(setting)] = setting
            by_id[id(setting)].append((r, status))
    return {settings[k]: v for k, v in by_id.items()}


def _measured_without_context(metric: str) -> Callable[[Row], bool]:
    return lambda r: r[metric] is not None and not r["context_tokens"]


def prompt_chart(rows: Annotated) -> Chart | None:
    """Decode tok/s against prompt length, a line per concurrency (latest best run per setting)."""
    groups = _by_setting(
        rows,
        lambda r: (
            r["decode_tok_s"] is not None and r["prompt_tokens"] is not None and not r["context_tokens"]
        ),
    )
    values: list[dict[str, Any]] = []
    statuses: list[str] = []
    unrecorded: list[str] = []
    for setting in sorted(groups, key=lambda s: (s.concurrency, s.prompt_tokens or 0, s.hardware)):
        for r, status in _best_run(groups[setting], "decode_tok_s"):
            statuses.append(status.status)
            unrecorded.extend(status.unrecorded)
            values.append(
                {
                    "concurrency": r["concurrency"],
                    "prompt": r["prompt_tokens"],
                    "decode": r["decode_tok_s"],
                    "date": r["date"].isoformat(),
                    "node": r["node"],
                    "status": STATUS_LABELS[status.status],
                }
            )
    prompts_per_line: dict[int, set[int]] = defaultdict(set)
    for v in values:
        prompts_per_line[v["concurrency"]].add(v["prompt"])
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
    return make_chart(PROMPT, "chart-prompt", "Decode speed by prompt length", caption, columns, values)


_THROUGHPUT = (("aggregate_tok_s", "Aggregate"), ("decode_tok_s", "Per stream"))


def concurrency_chart(rows: Annotated) -> Chart | None:
    """Aggregate and per-stream throughput against concurrency (latest best run per setting)."""
    values: list[dict[str, Any]] = []
    statuses: list[str] = []
    unrecorded: list[str] = []
    for metric, measure in _THROUGHPUT:
        groups = _by_setting(rows, _measured_without_context(metric))
        for setting in sorted(groups, key=Setting.sort_key):
            prompt = "not recorded" if setting.prompt_tokens is None else f"{setting.prompt_tokens:,} tokens"
            for r, status in _best_run(groups[setting], metric):
                statuses.append(status.status)
                unrecorded.extend(status.unrecorded)
                values.append(
                    {
                        "measure": measure,
                        "concurrency": r["concurrency"],
                        "value": r[metric],
                        "prompt": prompt,
                        "date": r["date"].isoformat(),
                        "node": r["node"],
                        "status": STATUS_LABELS[status.status],
                    }
                )
    if not any(v["measure"] == "Aggregate" for v in values) or len({v["concurrency"] for v in values}) < 2:
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
    return make_chart(CONCURRENCY, "chart-concurrency", "Throughput by concurrency", caption, columns, values)


def _finding_setting(setting: Any) -> str:
    if isinstance(setting, dict):
        try:
            label = Setting(
                str(setting.get("hardware", "")),
                setting.get("prompt_tokens"),
                int(setting.get("context_tokens") or 0),
                int(setting["concurrency"]),
            ).label()
        except (KeyError, TypeError, ValueError):
            return ", ".join(f"{k} {v}" for k, v in setting.items())
        if setting.get("output_tokens") is not None:
            label += f" · {setting['output_tokens']:,} output tokens"
        return label
    return str(setting)


def _finding_points(findings: Iterable[Any], metric: str) -> list[dict[str, Any]]:
    points = []
    for finding in findings:
        data = finding.as_json()
        if data.get("metric") != metric:
            continue
        text = data.get("annotation") or data.get("summary") or "finding of non-reproduction"
        setting = _finding_setting(data.get("setting"))
        for run in data.get("runs", []):
            if run.get("date") is None or run.get("value") is None:
                continue
            points.append(
                {
                    "layer": "finding",
                    "date": str(run["date"]),
                    "setting": setting,
                    "value": run["value"],
                    "status": "finding",
                    "note": str(text),
                    "node": str(run.get("node") or ""),
                    "engine_version": str(run.get("engine_version") or ""),
                }
            )
    return points


HISTORY_COLUMNS = (
    Column("date", "Date"),
    Column("setting", "Setting"),
    Column("value", "Value", True),
    Column("trials", "Rows", True),
    Column("status", "Row"),
    Column("note", "Off-recipe because / finding"),
    Column("node", "Node"),
    Column("engine_version", "Engine version"),
)


def history_chart(metric: str, rows: Annotated, findings: list[Any]) -> Chart | None:
    """Each run's figure for one metric over time (median of its trials), a colour per setting.

    Runs are kept apart by status, so an off-recipe run never merges with a matching one on the same
    day; rings mark the runs a finding compares.
    """
    # Grouped by object identity: settings and statuses are shared objects, and hashing them field
    # by field for every row is what this step would otherwise spend its time on.
    runs: dict[tuple[Any, ...], list[float]] = defaultdict(list)
    objects: dict[int, Any] = {}
    for r, setting, status in rows:
        value = r[metric]
        if value is not None:
            objects[id(setting)] = setting
            objects[id(status)] = status
            runs[(id(setting), r["date"], r["node"], r["engine_version"], id(status))].append(value)
    values: list[dict[str, Any]] = []
    labels: dict[int, str] = {}
    whys: dict[int, str] = {}

    def order(k: tuple[Any, ...]) -> tuple[Any, ...]:
        return (objects[k[0]].sort_key(), k[1], k[2], k[3], STATUS_ORDER[objects[k[4]].status])

    # Setting first: the legend lists settings in the order they first appear in the data.
    for key in sorted(runs, key=order):
        setting_id, date, node, engine_version, status_id = key
        status = objects[status_id]
        label = labels.get(setting_id)
        if label is None:
            label = labels[setting_id] = objects[setting_id].label()
        why = whys.get(status_id)
        if why is None:
            why = whys[status_id] = why_text(status)
        trials = runs[key]
        values.append(
            {
                "layer": "row",
                "date": date.isoformat(),
                "setting": label,
                "value": statistics.median(trials),
                "trials": len(trials),
                "status": STATUS_LABELS[status.status],
                "note": why,
                "node": node,
                "engine_version": engine_version,
            }
        )
    marks = _finding_points(findings, metric)
    if len({v["date"] for v in values}) < 2 and not marks:
        return None
    label, unit = QUANTITY_LABELS[metric]
    columns = tuple(
        Column(c.key, axis_title(metric), True) if c.key == "value" else c for c in HISTORY_COLUMNS
    )
    caption = (
        f"Each run's {label.lower()} figure by date (the median of its trials), a colour per setting. "
        "Filled circles match the recipe, squares leave something unrecorded, triangles differ from it; "
        "the line joins matching runs" + (". Rings mark the runs a finding compares." if marks else ".")
    )
    return make_chart(
        HISTORY,
        f"chart-history-{metric}",
        f"{label} over time",
        caption,
        columns,
        values + marks,
        quantity=metric,
    )


def recipe_charts(
    rows: list[Row], recon: Reconciliation, node_hw: dict[str, str], findings: list[Any]
) -> list[Chart]:
    annotated = annotate(rows, recon, node_hw)
    charts = [prompt_chart(annotated), concurrency_chart(annotated)]
    charts += [history_chart(m, annotated, findings) for m in METRICS]
    return [c for c in charts if c is not None]


def _side_by_side_values(
    lines: list[Line], builds: list[Build], who: str, hardware_name: HardwareName | None
) -> list[dict[str, Any]]:
    order = {b.slug: i for i, b in enumerate(builds)}
    label = {b.slug: b.label for b in builds}
    values = []
    for line in lines:
        setting = line.setting_label(hardware_name)
        for slug, cell in sorted(line.cells.items(), key=lambda kv: order[kv[0]]):
            values.append(
                {
                    "setting": setting,
                    who: label[slug],
                    "order": order[slug],
                    "value": cell.value,
                    "trials": cell.trials,
                    "date": cell.date.isoformat(),
                    "node": cell.node,
                    "why": cell.why,
                }
            )
    return values


def side_by_side_charts(
    kind: str,
    lines: list[Line],
    builds: list[Build],
    hardware_name: HardwareName | None = None,
    *,
    key: str = "",
    where: str = "",
) -> list[Chart]:
    """One chart per quantity measured by two builds or more at a shared setting.

    A page with a set of charts per hardware tells them apart by ``key`` (in ids) and ``where``
    (the hardware's name, in titles)."""
    who = "arm" if kind == ARMS else "build"
    by_quantity: dict[str, list[Line]] = defaultdict(list)
    for line in lines:
        if len(line.cells) > 1:
            by_quantity[line.quantity].append(line)
    multi_hw = len({b.hardware for b in builds}) > 1
    charts = []
    for quantity in (*METRICS, *SERVE_PROPERTIES):
        if quantity not in by_quantity:
            continue
        label, unit = QUANTITY_LABELS[quantity]
        values = _side_by_side_values(by_quantity[quantity], builds, who, hardware_name if multi_hw else None)
        columns = (
            Column("setting", "Setting"),
            Column(who, "Arm" if kind == ARMS else "Build"),
            Column("value", axis_title(quantity), True),
            Column("trials", "Rows", True),
            Column("date", "Date"),
            Column("node", "Node"),
            Column("why", "Off-recipe because"),
        )
        better = "smaller is better" if quantity in SMALLER_IS_BETTER else "higher is better"
        caption = (
            f"{label} ({unit}, {better}) of each {who} at the settings two or more of them were measured at; "
            "each bar is the median of the latest run, from matching rows where there are any."
        )
        charts.append(
            make_chart(
                kind,
                f"chart-{who}s-{key}-{quantity}" if key else f"chart-{who}s-{quantity}",
                f"{label} side by side" + (f" on {where}" if where else ""),
                caption,
                columns,
                values,
                quantity=quantity,
            )
        )
    return charts


def comparison_charts(comp: Comparison, hardware_name: HardwareName) -> list[Chart]:
    """The figures of each of a comparison page's tables as charts, a chart per quantity: a set per
    hardware where the page has a table per hardware (their builds never share a setting)."""
    charts = []
    for table in comp.shared_tables:
        where = hardware_name(table.hardware) if table.hardware else ""
        charts += side_by_side_charts(
            BUILDS, table.lines, table.builds, hardware_name, key=table.key, where=where
        )
    return charts


def case_charts(
    site: Site,
    arms: Iterable[Arm],
    rows: Mapping[str, list[Row]],
    recon: Reconciliation,
    node_hw: dict[str, str],
) -> list[Chart]:
    """A case study's arms side by side: every arm that ran a recipe, labelled as the study labels it."""
    linked = [(arm, site.recipes[arm.recipe]) for arm in arms if arm.recipe and arm.recipe in site.recipes]
    if len({recipe.slug for _, recipe in linked}) < 2:
        return []
    seen: set[str] = set()
    recipes, labels = [], []
    for arm, recipe in linked:
        if recipe.slug not in seen:
            seen.add(recipe.slug)
            recipes.append(recipe)
            labels.append(f"{arm.label} ({arm.role})")
    builds = make_builds(recipes, labels)
    shared, _ = side_by_side(builds, rows, recon, node_hw)
    return side_by_side_charts(ARMS, shared, builds, site.hardware_name)

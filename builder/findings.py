"""Findings of non-reproduction: runs of one recipe that disagree beyond the noise the data shows.

Runs and settings
    Rows of a recipe with the same date, node, engine_version, engine_build, flags and env (flags and
    env compared after normalisation) form a *run*; its rows at one setting are *trials*. A *setting*
    is hardware (through the node), prompt_tokens, context_tokens and concurrency, plus output_tokens
    where both runs give it. Rows whose prompt length is not recorded are not comparable and never
    take part; neither does a setting with a single run.

Where the work happens
    DuckDB groups the rows into runs per (recipe, setting, metric) and computes the run means and
    within-run sums of squares; only groups with two runs or more whose widest gap between
    neighbouring run means could exceed the narrowest band the noise model allows reach Python (an
    exact pre-filter: no finding is lost by it).

Detection (:mod:`builder.noise` holds the noise model)
    Runs split into groups that agree within the band. With one group nothing is flagged. Otherwise
    the largest group (ties: the one whose first run is earliest) is the reference and every other
    group departs from it, one finding each: a run that departs from a stable history before and
    after it is flagged, and so is a step change (the later level departs from the earlier one).
    Rises count as well as drops. ``change`` is the later side's median run value over the earlier
    side's, minus one; ``direction`` says whether that is ``worse`` or ``better`` (for ttft_ms and
    itl_ms lower is better).

Explanation (:mod:`builder.explain`)
    The metadata that differs between the departing and the reference runs, with the differences a
    control run rules out; "unexplained by the recorded metadata" when nothing is left.
"""

from __future__ import annotations

import datetime as dt
import json
import statistics
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from builder.explain import Explanation, Parsed, explain, fmt_value
from builder.flags import FlagSyntaxError, flag_map, format_value, parse_env
from builder.models import LOWER_IS_BETTER, METRICS
from builder.noise import FLOOR, PRIOR_DOF, SIGMA0, K, Noise, Run, detect

if TYPE_CHECKING:
    from builder.load import Site


def _pct(value: float) -> str:
    return f"{value * 100:+.1f}%"


@dataclass(frozen=True)
class Side:
    """One side of a finding: the runs of a group, summarised."""

    runs: tuple[Run, ...]

    @property
    def value(self) -> float:
        return float(statistics.median(run.value for run in self.runs))

    @property
    def first(self) -> dt.date:
        return min(run.date for run in self.runs)

    @property
    def dates(self) -> list[dt.date]:
        return sorted({run.date for run in self.runs})

    def as_json(self) -> dict[str, Any]:
        return {
            "dates": [d.isoformat() for d in self.dates],
            "value": round(self.value, 6),
            "runs": len(self.runs),
        }


@dataclass
class Finding:
    """A result that does not reproduce: one group of runs departs from the reference group."""

    recipe: str
    metric: str
    setting: dict[str, Any]
    departing: Side
    reference: Side
    noise: Noise
    explanation: Explanation
    path: str
    """Row file of the first departing run (where a pull request would be annotated)."""
    line: int
    annotation: dict[str, Any] | None = None
    """The curator's entry from ``data/annotations.yaml``, once attached."""

    kind = "non_reproducing"

    @property
    def lower_is_better(self) -> bool:
        return self.metric in LOWER_IS_BETTER

    @property
    def earlier(self) -> Side:
        return min((self.departing, self.reference), key=lambda s: (s.first, s is self.departing))

    @property
    def later(self) -> Side:
        return self.departing if self.earlier is self.reference else self.reference

    @property
    def change(self) -> float:
        """Relative change, later vs earlier."""
        return self.later.value / self.earlier.value - 1.0

    @property
    def direction(self) -> str:
        worse = self.change > 0 if self.lower_is_better else self.change < 0
        return "worse" if worse else "better"

    @property
    def runs(self) -> list[tuple[Run, bool]]:
        """Every run involved, by date, with whether it departs."""
        pairs = [(r, True) for r in self.departing.runs] + [(r, False) for r in self.reference.runs]
        return sorted(pairs, key=lambda p: (p[0].date, p[0].node, p[0].value))

    @property
    def row_ids(self) -> frozenset[int]:
        return frozenset(i for run, _ in self.runs for i in run.row_ids)

    @property
    def is_open(self) -> bool:
        return self.annotation is None

    @property
    def date(self) -> dt.date:
        """The latest date among the runs involved (the finding exists since then)."""
        return max(run.date for run, _ in self.runs)

    @property
    def id(self) -> str:
        s = self.setting
        parts = [
            self.recipe,
            self.metric,
            s["hardware"],
            f"p{s['prompt_tokens']}",
            f"x{s['context_tokens']}",
            f"c{s['concurrency']}",
        ]
        if s["output_tokens"] is not None:
            parts.append(f"o{s['output_tokens']}")
        parts.append(self.departing.first.isoformat())
        return "-".join(parts)

    def setting_text(self) -> str:
        s = self.setting
        text = f"{s['prompt_tokens']:,}-token prompt, context {s['context_tokens']:,}, concurrency {s['concurrency']}"
        if s["output_tokens"] is not None:
            text += f", {s['output_tokens']:,} output tokens"
        return text + f", on {s['hardware']}"

    def summary(self) -> str:
        earlier, later = self.earlier, self.later
        return (
            f"{self.metric} does not reproduce at {self.setting_text()}: "
            f"{fmt_value(earlier.value)} ({_dates_text(earlier.dates)}) vs {fmt_value(later.value)} "
            f"({_dates_text(later.dates)}), {_pct(self.change)} ({self.direction}); "
            f"noise band ±{self.noise.relative * 100:.1f}% ({self.noise.source})"
        )

    def explanation_text(self) -> str:
        exp = self.explanation
        parts = []
        if exp.explained_by:
            parts.append(
                "Differs between the runs: "
                + "; ".join(f"{d.field} ({' vs '.join(d.values)})" for d in exp.explained_by)
                + "."
            )
        else:
            parts.append("Unexplained by the recorded metadata.")
        parts.extend(f"{r.field} ruled out: {r.reason(self.metric)}." for r in exp.ruled_out)
        return " ".join(parts)

    def as_json(self) -> dict[str, Any]:
        """The ``check --format json`` contract for one finding."""
        exp = self.explanation
        return {
            "kind": self.kind,
            "id": self.id,
            "recipe": self.recipe,
            "metric": self.metric,
            "lower_is_better": self.lower_is_better,
            "setting": dict(self.setting),
            "runs": [
                {
                    "date": run.date.isoformat(),
                    "node": run.node,
                    "engine_version": run.engine_version,
                    "engine_build": run.engine_build,
                    "flags": run.flags,
                    "value": run.value,
                    "trials": list(run.trials),
                    "departs": departs,
                }
                for run, departs in self.runs
            ],
            "earlier": self.earlier.as_json(),
            "later": self.later.as_json(),
            "change": round(self.change, 4),
            "direction": self.direction,
            "band": round(self.noise.relative, 4),
            "noise": self.noise.source,
            "explained_by": [d.as_json() for d in exp.explained_by],
            "ruled_out": [r.as_json(self.metric) for r in exp.ruled_out],
            "unrecorded": list(exp.unrecorded),
            "explanation": self.explanation_text(),
            "advice": list(exp.advice),
            "summary": self.summary(),
            "path": self.path,
            "line": self.line,
            "annotation": self.annotation,
        }


def _dates_text(dates: list[dt.date]) -> str:
    if len(dates) == 1:
        return dates[0].isoformat()
    return f"{dates[0].isoformat()} to {dates[-1].isoformat()}, {len(dates)} dates"


# ------------------------------------------------------------------------------------------ queries

_SETTING = "recipe, hardware, prompt_tokens, context_tokens, concurrency"
_GROUP = f"{_SETTING}, metric"
_RUN = "date, node, engine_version, engine_build, flags_key, env_key"


_LOGS = ", ".join(f"r.{m}, CASE WHEN r.{m} > 0 THEN ln(r.{m}) END AS l_{m}" for m in METRICS)
_RUN_STATS = ", ".join(
    f"count(l_{m}) AS n_{m}, avg(l_{m}) AS mu_{m}, coalesce(var_pop(l_{m}) * count(l_{m}), 0) AS ss_{m}"
    for m in METRICS
)
_METRIC_RUNS = " UNION ALL ".join(
    f"SELECT {_SETTING}, '{m}' AS metric, n_{m} AS n, mu_{m} AS mu, ss_{m} AS ss, olo, ohi "
    f"FROM runs WHERE n_{m} > 0"
    for m in METRICS
)
_VALUE = "CASE c.metric " + " ".join(f"WHEN '{m}' THEN b.{m}" for m in METRICS) + " END"

# One pass over the rows aggregates every metric of every run (conditional aggregates rather than an
# unpivot of the rows); the run summaries, a few per setting, are unpivoted instead. Flags and env
# are grouped by the integer id of their normalised form. Log values: bands are relative, and a
# zero cannot be compared on a ratio scale, so it takes no part.
_CANDIDATES_SQL = f"""
WITH base AS MATERIALIZED (
    SELECT r.row_id, r.file_id, r.file_row, r.recipe, h.hardware, r.prompt_tokens, r.context_tokens,
           r.concurrency, r.output_tokens, r.date, r.node, r.engine, r.engine_version, r.engine_build,
           r.flags, r.env, r.driver, r.harness, fc.key AS flags_key, ec.key AS env_key, {_LOGS}
    FROM rows r
    JOIN _f_node_hw h USING (node)
    LEFT JOIN _f_flag_canon fc ON fc.raw = r.flags
    LEFT JOIN _f_env_canon ec ON ec.raw = r.env
    WHERE r.prompt_tokens IS NOT NULL
), runs AS MATERIALIZED (
    SELECT {_SETTING}, {_RUN}, {_RUN_STATS}, min(output_tokens) AS olo, max(output_tokens) AS ohi
    FROM base GROUP BY ALL
), metric_runs AS (
    {_METRIC_RUNS}
), groups AS (
    SELECT {_GROUP}, count(*) AS m, sum(n - 1) AS dof_w, sum(ss) AS ss_w, list_sort(list(mu)) AS mus,
           coalesce(min(olo) < max(ohi), false) AS split_out
    FROM metric_runs GROUP BY ALL HAVING count(*) >= 2
), candidates AS (
    -- The narrowest band the Python pass could use for this group: a group whose widest gap
    -- between neighbouring run means stays within it cannot split. Groups whose rows give
    -- different output_tokens may split by that rule and are always walked ($all walks every
    -- group: the tests' reference path).
    SELECT {_GROUP} FROM groups
    WHERE $all OR split_out
       OR list_max(list_transform(range(1, m), lambda i: mus[i + 1] - mus[i])) > 0.999999 * greatest(
          $floor,
          $k * sqrt(CASE WHEN dof_w > 0 THEN ($prior + ss_w) / ($nu0 + dof_w) ELSE $prior / ($nu0 + m - 1) END))
), trials AS (
    SELECT c.metric, b.*, {_VALUE} AS value FROM base b JOIN candidates c USING ({_SETTING})
)
SELECT {_GROUP}, {_RUN}, min(engine) AS engine, min(flags) AS flags, min(env) AS env,
       avg(ln(value)) AS mu, coalesce(var_pop(ln(value)) * count(*), 0) AS ss,
       list({{'row_id': row_id, 'value': value, 'output': output_tokens, 'file_id': file_id,
              'file_row': file_row, 'driver': driver, 'harness': harness}}) AS trials
FROM trials WHERE value > 0
GROUP BY ALL
ORDER BY {_GROUP}, {_RUN}
"""


def _canon_flags(text: str) -> str:
    return json.dumps(sorted((k, format_value(v)) for k, v in flag_map(text).items()))


def _canon_env(text: str) -> str:
    return json.dumps(sorted(parse_env(text).items()))


def _canon_table(site: Site, column: str, canon: Callable[[str], str]) -> pa.Table:
    """Each distinct string → the integer id of its normalised form (unparseable: its own id)."""
    raws = [
        v
        for (v,) in site.con.execute(
            f"SELECT DISTINCT {column} FROM rows WHERE {column} IS NOT NULL"
        ).fetchall()
    ]
    ids: dict[str, int] = {}
    keys = []
    for raw in raws:
        try:
            form = canon(raw)
        except FlagSyntaxError:
            form = "raw:" + raw
        keys.append(ids.setdefault(form, len(ids)))
    return pa.table({"raw": pa.array(raws, pa.string()), "key": pa.array(keys, pa.int32())})


def _fetch_candidates(site: Site, exhaustive: bool) -> pa.Table:
    tables = {
        "_f_node_hw": pa.table(
            {
                "node": pa.array(list(site.nodes), pa.string()),
                "hardware": pa.array([n.hardware for n in site.nodes.values()], pa.string()),
            }
        ),
        "_f_flag_canon": _canon_table(site, "flags", _canon_flags),
        "_f_env_canon": _canon_table(site, "env", _canon_env),
    }
    for name, table in tables.items():
        site.con.register(name, table)
    try:
        params = {
            "all": exhaustive,
            "floor": FLOOR,
            "k": K,
            "prior": PRIOR_DOF * SIGMA0 * SIGMA0,
            "nu0": PRIOR_DOF,
        }
        return site.con.sql(_CANDIDATES_SQL, params=params).to_arrow_table()
    finally:
        for name in tables:
            site.con.unregister(name)


def _runs_by_group(table: pa.Table, site: Site) -> dict[tuple[Any, ...], list[Run]]:
    """Runs (one result row each) by (recipe, metric, hardware, prompt, context, concurrency)."""
    cols = {name: table.column(name).to_pylist() for name in table.column_names if name != "trials"}
    trials = table.column("trials").combine_chunks()
    offsets = trials.offsets.to_pylist()
    flat = trials.flatten()
    fields = {
        name: flat.field(name).to_pylist() for name in ("row_id", "value", "output", "file_id", "file_row")
    }
    drivers, harnesses = flat.field("driver").to_pylist(), flat.field("harness").to_pylist()
    engines = {slug: recipe.meta.engine for slug, recipe in site.recipes.items()}
    groups: dict[tuple[Any, ...], list[Run]] = defaultdict(list)
    for i in range(table.num_rows):
        lo, hi = offsets[i], offsets[i + 1]
        order = sorted(range(lo, hi), key=fields["row_id"].__getitem__)  # trials in file order
        key = (
            cols["recipe"][i],
            cols["metric"][i],
            cols["hardware"][i],
            cols["prompt_tokens"][i],
            cols["context_tokens"][i],
            cols["concurrency"][i],
        )
        groups[key].append(
            Run(
                date=cols["date"][i],
                node=cols["node"][i],
                engine=cols["engine"][i] or engines.get(key[0], ""),
                engine_version=cols["engine_version"][i],
                engine_build=cols["engine_build"][i],
                flags=cols["flags"][i],
                env=cols["env"][i],
                drivers=tuple(sorted({drivers[j] for j in order if drivers[j] is not None})),
                harnesses=tuple(sorted({harnesses[j] for j in order if harnesses[j] is not None})),
                trials=[fields["value"][j] for j in order],
                outputs=[fields["output"][j] for j in order],
                row_ids=[fields["row_id"][j] for j in order],
                locations=[(fields["file_id"][j], fields["file_row"][j]) for j in order],
                mu=cols["mu"][i],
                ss=cols["ss"][i],
            )
        )
    return groups


def _sub_settings(runs: list[Run]) -> list[tuple[int | None, list[Run]]]:
    """Split by output_tokens where runs give different ones; a run that does not give it joins each."""
    outputs = sorted({o for run in runs for o in run.outputs if o is not None})
    if len(outputs) < 2:
        return [(None, runs)]
    subs: list[tuple[int | None, list[Run]]] = []
    for wanted in outputs:
        sub = []
        for run in runs:
            keep = [i for i, o in enumerate(run.outputs) if o is None or o == wanted]
            if keep:
                sub.append(run if len(keep) == len(run.trials) else run.restricted(keep))
        if len(sub) >= 2:
            subs.append((wanted, sub))
    return subs


def find_non_reproduction(site: Site, *, exhaustive: bool = False) -> list[Finding]:
    """Every finding of the site, in a stable order (recipe, metric, setting, date).

    ``exhaustive`` walks every group in Python, skipping DuckDB's pre-filter (for tests: the
    results must be the same).
    """
    table = _fetch_candidates(site, exhaustive)
    if table.num_rows == 0:
        return []
    parsed = Parsed()
    findings: list[Finding] = []
    for (recipe, metric, hardware, prompt, context, concurrency), runs in _runs_by_group(table, site).items():
        for output, sub in _sub_settings(runs):
            groups, noise = detect(sub)
            if len(groups) < 2:
                continue
            sides = [Side(tuple(sub[i] for i in g)) for g in groups]
            reference = max(sides, key=lambda s: (len(s.runs), -s.first.toordinal()))
            setting = {
                "hardware": hardware,
                "prompt_tokens": prompt,
                "context_tokens": context,
                "output_tokens": output,
                "concurrency": concurrency,
            }
            for side in sorted(sides, key=lambda s: s.first):
                if side is reference:
                    continue
                first = min(side.runs, key=lambda r: (r.date, r.node))
                file_id, file_row = first.locations[0]
                parsed_file = site.row_files[file_id]
                findings.append(
                    Finding(
                        recipe=recipe,
                        metric=metric,
                        setting=setting,
                        departing=side,
                        reference=reference,
                        noise=noise,
                        explanation=explain(list(side.runs), list(reference.runs), parsed),
                        path=parsed_file.source.rel,
                        line=parsed_file.line_of(file_row),
                    )
                )
    metric_order = {m: i for i, m in enumerate(METRICS)}
    findings.sort(
        key=lambda f: (
            f.recipe,
            metric_order[f.metric],
            f.setting["hardware"],
            f.setting["prompt_tokens"],
            f.setting["context_tokens"],
            f.setting["concurrency"],
            f.setting["output_tokens"] or 0,
            f.departing.first,
        )
    )
    return findings

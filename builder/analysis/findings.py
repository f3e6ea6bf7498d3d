"""Findings of non-reproduction: runs of one recipe that disagree beyond the noise the data shows.

Runs and settings
    Rows of a recipe with the same date, time, node, engine_version, engine_build, flags and env
    (flags and env compared after normalisation) form a *run*; its rows at one setting are *trials*
    (a row with a reported spread counts as its repetitions: :mod:`builder.analysis.noise`). A
    *setting* is the row columns :class:`~builder.content.models.Row` marks
    :class:`~builder.content.models.SettingColumn`: hardware (through the node), prompt_tokens,
    context_tokens, concurrency and request_rate (open- and closed-loop runs are never compared), and
    output_tokens where both runs give it (:data:`~builder.analysis.candidates.LOOSE`). Rows whose prompt
    length is not recorded are not comparable and never take part; neither does a setting with a single
    run (``check`` warns about both: :mod:`builder.analysis.comparable`).

Where the work happens (:mod:`builder.analysis.run_groups`)
    :mod:`builder.analysis.candidates` sorts the rows into runs per (recipe, setting, metric) and computes
    the run means and within-run sums of squares; only groups with two runs or more whose widest
    gap between neighbouring run means could exceed the narrowest band the noise model allows
    reach Python (an exact pre-filter: no finding is lost by it).

Detection (:mod:`builder.analysis.noise` holds the noise model)
    Runs are ordered, never by value (:func:`order_runs`): by date, on one date by time of day, else
    by engine version (PEP 440), else the run matching the recipe first. Runs split into groups that
    agree within the band. Otherwise the largest group (ties: the one whose first run comes first)
    is the reference and every other group departs from it, one finding each: a run that departs
    from a stable history before and after it is flagged, and so is a step change. Rises count as
    well as drops. A finding is told in time order: ``departs`` is ``earlier`` (every departing run
    precedes every reference run), ``later`` or ``between``; ``change`` is the later side's median run
    value over the earlier side's, minus one (``between``: the departing side's over the reference's);
    ``direction`` says whether that is ``worse`` or ``better`` (for ttft_ms and itl_ms lower is better).
    :meth:`Finding.summary` says it in one sentence, each side by its own trials' figures.

Drift (:func:`_drift`, after trend tests such as Mann-Kendall's, kept to what a reader can check)
    Three runs or more that move one way at every step, first to last beyond the noise, are one
    ``drift`` finding, the last run against the first with the runs between listed, whether each
    step is within the noise (the runs form one group: measured against their own trials' noise) or
    beyond it (three groups or more: no one step explains the move). Runs in two groups are one step:
    the groups' findings tell it. A change-point method that needs several runs on each side of a
    change (E-divisive means) would miss a two-run change, which the groups find.

Groups
    Findings of one recipe whose departing and reference runs and explanation are the same share a
    ``group`` id (:func:`group_id`): one regression at many settings and metrics, shown as one.

Explanation (:mod:`builder.analysis.explain`)
    The metadata that differs between the departing and the reference runs, with the differences a
    control run rules out; "unexplained by the recorded metadata" when nothing is left.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import itertools
import json
import math
import statistics
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, replace
from functools import cached_property
from typing import TYPE_CHECKING, Any

from packaging.version import InvalidVersion, Version

from builder.analysis.candidates import COMPARED, LOOSE
from builder.analysis.explain import Explanation, Parsed, explain
from builder.analysis.noise import Noise, Run, TrialDetails, detect, within_noise
from builder.analysis.run_groups import Combinations, candidate_runs
from builder.content.flags import FlagSyntaxError, flag_map, format_value
from builder.content.models import (
    LOWER_IS_BETTER,
    METRICS,
    QUANTITIES,
    ROW_SCHEMA,
    SETTING_COLUMN_OF,
    SETTING_KEYS,
    RecipeMeta,
)
from builder.wording import fmt_number

if TYPE_CHECKING:
    from builder.data.load import Site


def _always_given(key: str) -> bool:
    column = ROW_SCHEMA[SETTING_COLUMN_OF[key]]
    return column.required or column.empty is not None


FINDING_SETTING: tuple[str, ...] = (
    *(key for key in SETTING_KEYS if _always_given(key)),
    *(key for key in SETTING_KEYS if not _always_given(key)),
)
"""The keys of :attr:`Finding.setting`, in the order the JSON contract lists them: the setting's columns
every compared row gives (hardware, prompt, context), then those a row may leave empty."""
ORDERED: tuple[str, ...] = (*COMPARED, LOOSE)
"""The setting's keys in the order findings sort by them and ids write them: the group's keys, then the
loosely compared :data:`~builder.analysis.candidates.LOOSE` that splits a group last."""
_TAGS = {
    key: column.setting.tag
    for key in ORDERED
    if (column := ROW_SCHEMA[SETTING_COLUMN_OF[key]]).setting is not None
}
"""What an id writes before each setting value (:attr:`~builder.content.models.SettingColumn.tag`)."""


def change_text(change: float) -> str:
    """A relative change as summaries write it: ``−44.6 %``, ``+12.0 %`` (a true minus sign)."""
    return f"{change * 100:+.1f} %".replace("-", "\u2212")


def _unit(metric: str) -> str:
    # The unit proper: "tok/s per stream" reads "tok/s" after a figure in a sentence.
    return QUANTITIES[metric].unit.split(" ", 1)[0]


def _runs_word(count: int, which: str) -> str:
    """``the later run``, ``both later runs``, ``all 3 later runs``."""
    if count == 1:
        return f"the {which} run"
    return f"both {which} runs" if count == 2 else f"all {count} {which} runs"


@dataclass(frozen=True)
class Side:
    """One side of a finding: the runs of a group, summarised (each summary computed once)."""

    runs: tuple[Run, ...]

    @cached_property
    def value(self) -> float:
        return float(statistics.median(run.value for run in self.runs))

    @cached_property
    def first(self) -> dt.date:
        return min(run.date for run in self.runs)

    @cached_property
    def rank(self) -> int:
        """Place of the side's first run in the order of runs (see :func:`order_runs`)."""
        return min(run.rank for run in self.runs)

    @cached_property
    def last_rank(self) -> int:
        """Place of the side's last run in the order of runs."""
        return max(run.rank for run in self.runs)

    @cached_property
    def span(self) -> tuple[float, float]:
        """The lowest and the highest of the side's trials: figures the results table shows."""
        trials = [value for run in self.runs for value in run.trials]
        return min(trials), max(trials)

    def figures(self, unit: str) -> str:
        """The side's figures as a reader finds them in the results table: ``42.5–42.6 tok/s``, never a
        statistic of them."""
        low, high = self.span
        text = fmt_number(low) if low == high else f"{fmt_number(low)}\u2013{fmt_number(high)}"
        return f"{text} {unit}"

    @cached_property
    def versions(self) -> list[str]:
        return sorted({run.engine_version for run in self.runs}, key=_version_key)

    @cached_property
    def dates(self) -> list[dt.date]:
        return sorted({run.date for run in self.runs})

    def as_json(self) -> dict[str, Any]:
        return {
            "dates": [d.isoformat() for d in self.dates],
            "value": round(self.value, 6),
            "low": self.span[0],
            "high": self.span[1],
            "runs": len(self.runs),
            "engine_versions": self.versions,
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
    ordinal: int = 1
    """Tells apart findings of one setting whose departing runs start on the same date."""
    kind: str = "non_reproducing"
    """``non_reproducing`` (groups of runs that disagree) or ``drift`` (runs that move one way at every
    step, first to last beyond the noise: see :func:`_drift`)."""
    between: tuple[Run, ...] = ()
    """A drift's runs between the first (reference) and the last (departing)."""
    group: str = ""
    """Shared by the findings of one recipe whose departing and reference runs are the same and whose
    explanation is the same: one regression seen at several settings and metrics."""

    departs: str = "later"
    """When the departing runs were measured against the reference: ``earlier`` (every one before
    every reference run), ``later`` (every one after) or ``between``."""

    @property
    def lower_is_better(self) -> bool:
        return self.metric in LOWER_IS_BETTER

    @property
    def earlier(self) -> Side:
        if self.departs != "between":
            return self.departing if self.departs == "earlier" else self.reference
        return min((self.departing, self.reference), key=lambda s: (s.rank, s is self.departing))

    @property
    def later(self) -> Side:
        return self.departing if self.earlier is self.reference else self.reference

    @property
    def change(self) -> float:
        """Relative change of the later side against the earlier side; for a finding that departs
        ``between``, of the departing runs against the reference around them."""
        if self.departs == "between":
            return self.departing.value / self.reference.value - 1.0
        return self.later.value / self.earlier.value - 1.0

    @property
    def direction(self) -> str:
        """Whether :attr:`change` is ``worse`` or ``better``, in the metric's sense."""
        worse = self.change > 0 if self.lower_is_better else self.change < 0
        return "worse" if worse else "better"

    @property
    def runs(self) -> list[tuple[Run, bool]]:
        """Every run involved, by date, with whether it departs."""
        return list(self._runs)

    @cached_property
    def _runs(self) -> tuple[tuple[Run, bool], ...]:
        # Sorted once: pages, annotations and the JSON contract all walk the runs.
        pairs = [(r, True) for r in self.departing.runs] + [(r, False) for r in self.reference.runs]
        pairs += [(r, False) for r in self.between]
        return tuple(sorted(pairs, key=lambda p: (p[0].rank, p[0].date, p[0].node, p[0].value)))

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
        """``<recipe>-<metric>-<hardware>-p2048-x0-c1``: each setting value the finding has, after its
        column's tag (:attr:`~builder.content.models.SettingColumn.tag`), then the first departing date."""
        s = self.setting
        parts = [self.recipe, self.metric]
        for key in ORDERED:
            value = s.get(key)
            if value is not None:
                parts.append(f"{_TAGS[key]}{rate_text(value) if isinstance(value, float) else value}")
        parts.append(self.departing.first.isoformat())
        if self.kind != "non_reproducing":
            parts.append(self.kind)
        if self.ordinal > 1:
            parts.append(str(self.ordinal))
        return "-".join(parts)

    def setting_text(self) -> str:
        s = self.setting
        text = f"{s['prompt_tokens']:,}-token prompt, context {s['context_tokens']:,}, {load_text(s)}"
        if s["output_tokens"] is not None:
            text += f", {s['output_tokens']:,} output tokens"
        return text + f", on {s['hardware']}"

    def _when(self, side: Side) -> str:
        """``on 2026-07-27``, with the versions when the other side has runs that day too."""
        text = _dates_text(side.dates)
        other = self.reference if side is self.departing else self.departing
        if set(side.dates) & set(other.dates):  # same-day runs: the versions tell them apart
            text += " with " + ", ".join(side.versions)
        return text

    def summary(self) -> str:
        """One plain sentence, in time order, each side quoted by its own figures (never a statistic
        of them); "better" and "worse" never describe a figure that did not reproduce."""
        unit = _unit(self.metric)
        departing, reference = self.departing, self.reference
        change = change_text(self.change)
        if self.kind == "drift":
            trend = "loss" if self.direction == "worse" else "gain"
            return (
                f"A steady {trend} over {len(self.between) + 2} runs: "
                f"{reference.figures(unit)} {self._when(reference)}, "
                f"{departing.figures(unit)} {self._when(departing)} ({change}), "
                f"each run {'below' if self.change < 0 else 'above'} the one before."
            )
        if self.departs == "earlier":
            return (
                f"{departing.figures(unit)} {self._when(departing)} did not reproduce: "
                f"{_runs_word(len(reference.runs), 'later')}, {self._when(reference)}, "
                f"read {reference.figures(unit)} ({change})."
            )
        if self.departs == "later":
            first = min(departing.runs, key=lambda r: r.rank)
            trend = "loss" if self.direction == "worse" else "gain"
            return (
                f"A {trend} since {first.engine_version} on {first.date.isoformat()}: "
                f"{_runs_word(len(departing.runs), 'later')} read {departing.figures(unit)}, against "
                f"{reference.figures(unit)} in {_runs_word(len(reference.runs), 'earlier')}, "
                f"{self._when(reference)} ({change})."
            )
        count = len(departing.runs)
        return (
            f"{'One run departs' if count == 1 else f'{count} runs depart'} from those before and after "
            f"{'it' if count == 1 else 'them'}: {departing.figures(unit)} {self._when(departing)}, "
            f"against {reference.figures(unit)} {self._when(reference)} ({change})."
        )

    def detail(self) -> str:
        """What the summary leaves out: the metric, the setting and the noise band."""
        return (
            f"{QUANTITIES[self.metric].label} at {self.setting_text()}; "
            f"beyond the noise band of ±{self.noise.relative * 100:.1f} % ({self.noise.source})."
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
        parts.extend(f"{r.field} ruled out: {r.reason()}." for r in exp.ruled_out)
        return " ".join(parts)

    def as_json(self) -> dict[str, Any]:
        """The ``check --format json`` contract for one finding."""
        exp = self.explanation
        setting = dict(self.setting)
        if setting.get("request_rate") == math.inf:  # JSON has no infinity: written as rows take it
            setting["request_rate"] = "inf"
        return {
            "kind": self.kind,
            "id": self.id,
            "group": self.group,
            "recipe": self.recipe,
            "metric": self.metric,
            "lower_is_better": self.lower_is_better,
            "setting": setting,
            "runs": [
                {
                    "date": run.date.isoformat(),
                    "time": run.time,
                    "node": run.node,
                    "engine_version": run.engine_version,
                    "engine_build": run.engine_build,
                    "flags": run.flags,
                    "value": run.value,
                    "trials": list(run.trials),
                    "departs": departs,
                    "role": "departing"
                    if departs
                    else "between"
                    if any(run is r for r in self.between)
                    else "reference",
                }
                for run, departs in self.runs
            ],
            "earlier": self.earlier.as_json(),
            "later": self.later.as_json(),
            "departs": self.departs,
            "change": round(self.change, 4),
            "direction": self.direction,
            "band": round(self.noise.relative, 4),
            "noise": self.noise.source,
            "explained_by": [d.as_json() for d in exp.explained_by],
            "ruled_out": [r.as_json() for r in exp.ruled_out],
            "unrecorded": list(exp.unrecorded),
            "explanation": self.explanation_text(),
            "advice": list(exp.advice),
            "summary": self.summary(),
            "detail": self.detail(),
            "path": self.path,
            "line": self.line,
            "annotation": self.annotation,
        }


def rate_text(rate: float) -> str:
    """A request rate as ids and labels write it: ``10``, ``1.5``, ``inf``."""
    return "inf" if rate == math.inf else f"{rate:g}"


def load_text(setting: dict[str, Any]) -> str:
    """How a setting loads the server: ``concurrency 8``, ``10 req/s``, ``10 req/s, concurrency 25``,
    ``unlimited rate (∞ req/s)``."""
    rate = setting.get("request_rate")
    concurrency = setting.get("concurrency")
    if rate is None:
        return f"concurrency {concurrency}"
    text = "unlimited rate (∞ req/s)" if rate == math.inf else f"{rate_text(rate)} req/s"
    return text if concurrency is None else f"{text}, concurrency {concurrency}"


def _version_key(version: str) -> tuple[int, Any]:
    """PEP 440 order; versions that do not parse come after every one that does (and keep their order)."""
    try:
        return (0, Version(version))
    except InvalidVersion:
        return (1, 0)


def _canon_flags(text: str | None) -> Any:
    if text is None:
        return None
    try:
        return sorted((k, format_value(v)) for k, v in flag_map(text).items())
    except FlagSyntaxError:
        return text


def order_runs(runs: Sequence[Run], meta: RecipeMeta | None) -> None:
    """Give each run its ``rank``, never by value: by date; on one date by the time of day when every
    run of that date records one, else by engine version (PEP 440), else the run that matches the
    recipe (engine version and flags) first -- it is then the reference. Runs still tied (one date,
    one version, told apart by node, build, flags or env) go by those, so the order never depends
    on the order the rows were grouped in."""
    timed: dict[dt.date, bool] = {}
    for run in runs:
        timed[run.date] = timed.get(run.date, True) and run.time is not None

    def matches(run: Run) -> int:
        if meta is None or run.engine_version != meta.engine_version:
            return 1
        return 0 if run.flags is None or _canon_flags(run.flags) == _canon_flags(meta.flags) else 1

    def when(run: Run) -> tuple[Any, ...]:
        return (run.date, (run.time or "") if timed[run.date] else "", _version_key(run.engine_version))

    def tie(run: Run) -> tuple[Any, ...]:
        return (
            0 if timed[run.date] else matches(run),
            run.engine_version,
            run.node,
            run.engine_build or "",
            json.dumps(_canon_flags(run.flags)),
            run.env or "",
        )

    ordered: list[Run] = []
    for _, group in itertools.groupby(sorted(runs, key=when), key=when):
        same = list(group)
        # A run's flags and env are read only on a tie: reading them loads its rows' metadata.
        ordered.extend(sorted(same, key=tie) if len(same) > 1 else same)
    for rank, run in enumerate(ordered):
        run.rank = rank


def _dates_text(dates: list[dt.date]) -> str:
    """``on 2026-07-27``, ``on 2026-07-06 and 2026-07-27``, ``on 3 dates from 2026-07-01 to 2026-07-20``."""
    if len(dates) == 1:
        return f"on {dates[0].isoformat()}"
    if len(dates) == 2:
        return f"on {dates[0].isoformat()} and {dates[1].isoformat()}"
    return f"on {len(dates)} dates from {dates[0].isoformat()} to {dates[-1].isoformat()}"


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


def find_non_reproduction(
    site: Site,
    combos: Combinations | None = None,
    *,
    exhaustive: bool = False,
    recipes: Collection[str] | None = None,
) -> list[Finding]:
    """Every finding of the site, in a stable order (recipe, metric, setting, date).

    ``exhaustive`` walks every group in Python, skipping the pre-filter (for tests: the
    results must be the same). ``recipes``: the findings of those recipes only, the same as
    the whole site's findings of them (findings are computed per recipe).
    """
    by_group = candidate_runs(site, combos, exhaustive=exhaustive, recipes=recipes)
    parsed = Parsed()
    findings: list[Finding] = []

    def add(setting: dict[str, Any], side: Side, reference: Side, noise: Noise, **extra: Any) -> None:
        # Fixed now: a run shared by two output splits is ranked again.
        _ = side.rank, reference.rank, side.last_rank, reference.last_rank
        if side.last_rank < reference.rank:
            departs = "earlier"
        elif side.rank > reference.last_rank:
            departs = "later"
        else:
            departs = "between"
        first = min(side.runs, key=lambda r: (r.rank, r.date, r.node))
        file_id, file_row = first.first_location
        parsed_file = site.row_files[file_id]
        findings.append(
            Finding(
                recipe=setting["recipe"],
                metric=setting["metric"],
                setting={k: v for k, v in setting.items() if k not in ("recipe", "metric")},
                departing=side,
                reference=reference,
                noise=noise,
                explanation=explain(list(side.runs), list(reference.runs), parsed),
                path=parsed_file.source.rel,
                line=parsed_file.line_of(file_row),
                departs=departs,
                **extra,
            )
        )

    for (recipe, metric, *where), runs in by_group.items():
        recipe_page = site.recipes.get(recipe)
        compared = dict(zip(COMPARED, where, strict=True))
        for output, sub in _sub_settings(runs):
            order_runs(sub, recipe_page.meta if recipe_page is not None else None)
            groups, noise = detect(sub)
            values = {**compared, LOOSE: output}
            setting = {"recipe": recipe, "metric": metric, **{key: values[key] for key in FINDING_SETTING}}
            drift = _drift(sub, groups, noise)
            if drift is not None:
                first, last, between, band = drift
                add(setting, Side((last,)), Side((first,)), band, kind="drift", between=between)
                continue
            if len(groups) < 2:
                continue
            sides = [Side(tuple(sub[i] for i in g)) for g in groups]
            reference = max(sides, key=lambda s: (len(s.runs), -s.rank))
            for side in sorted(sides, key=lambda s: s.rank):
                if side is not reference:
                    add(setting, side, reference, noise)
    metric_order = {m: i for i, m in enumerate(METRICS)}
    findings.sort(
        key=lambda f: (
            f.recipe,
            metric_order[f.metric],
            *(0 if f.setting[key] is None else f.setting[key] for key in ORDERED),  # empty first
            f.departing.first,
            f.kind,
            f.departing.value,
        )
    )
    seen: dict[str, int] = {}
    for finding in findings:
        base = finding.id
        seen[base] = seen.get(base, 0) + 1
        finding.ordinal = seen[base]
        finding.group = group_id(finding)
    return findings


def _drift(
    runs: list[Run], groups: list[list[int]], noise: Noise
) -> tuple[Run, Run, tuple[Run, ...], Noise] | None:
    """(first, last, the runs between, the band) when three runs or more, in order, move one way at
    every step and first to last beyond the noise, and no single step explains the move; else None.

    Whether each step is within the noise or beyond it does not matter: runs that agree as one group
    drift beyond their own trials' noise (the scatter between the runs of a drift is the drift itself,
    so it is not the band), and runs that split into three groups or more moved step after step. Two
    groups are one step: the findings of the groups tell it, as a change at that step.
    """
    if len(runs) < 3 or len(groups) == 2:
        return None
    ordered = sorted(runs, key=lambda r: r.rank)
    steps = [b.mu - a.mu for a, b in zip(ordered, ordered[1:], strict=False)]
    if not (all(step > 0 for step in steps) or all(step < 0 for step in steps)):
        return None
    band = within_noise(runs) if len(groups) == 1 else noise
    if abs(ordered[-1].mu - ordered[0].mu) <= band.band:
        return None
    return ordered[0], ordered[-1], tuple(ordered[1:-1]), band


def _run_identity(run: Run) -> list[str]:
    # Not recorded is "" here: identities are sorted, and None does not sort with text.
    return [
        run.date.isoformat(),
        run.time or "",
        run.node,
        run.engine_version,
        run.engine_build or "",
        run.flags or "",
        run.env or "",
    ]


def group_id(finding: Finding) -> str:
    """The id findings of one recipe share when their departing and reference runs are the same and
    their explanation is the same (one regression at several settings and metrics)."""
    key = json.dumps(
        [
            finding.recipe,
            finding.kind,
            sorted(_run_identity(r) for r in finding.departing.runs),
            sorted(_run_identity(r) for r in finding.reference.runs),
            finding.explanation_text(),
        ],
        sort_keys=True,
        default=str,
    )
    digest = hashlib.sha256(key.encode()).hexdigest()[:10]
    return f"{finding.recipe}-{finding.departing.first.isoformat()}-{digest}"


# --------------------------------------------------------------------------------------------------
# Findings kept across builds (:mod:`builder.engine.findings_memo`): a finding's runs read their trials'
# metadata through a :class:`~builder.analysis.noise.TrialDetails` bound to the loaded rows, which neither
# pickles nor survives a reload (row ids move when files come and go). Detached, a finding carries
# its runs' trial metadata itself, rows named by (row file, row in file); restored, the row ids
# are looked up again in the new site.


class StoredTrials(TrialDetails):
    """Where one run's trials are, kept with the run: ``rel`` (row file), ``in_file`` (place among
    the file's rows) and ``file_row``; ``row_id`` and ``file_id`` are filled in from the site a
    finding is restored into. The rest of the metadata is the run's summary (``Run._meta``)."""

    def __init__(self, columns: dict[str, list[Any]]) -> None:
        self.columns = columns

    def column(self, name: str) -> list[Any]:
        return self.columns[name]

    def one(self, name: str, position: int) -> Any:
        return self.columns[name][position]

    def meta(self, index: int) -> None:
        return None


def _run_mapper(convert: Callable[[Run], Run]) -> Callable[[Run], Run]:
    """``convert`` once per run: a run shared by sides and explanations stays one object."""
    done: dict[int, Run] = {}

    def mapped(run: Run) -> Run:
        found = done.get(id(run))
        if found is None:
            found = done[id(run)] = convert(run)
        return found

    return mapped


def _copy_finding(finding: Finding, run: Callable[[Run], Run]) -> Finding:
    exp = finding.explanation
    ruled = tuple(replace(r, control=run(r.control), departing=run(r.departing)) for r in exp.ruled_out)
    return Finding(
        recipe=finding.recipe,
        metric=finding.metric,
        setting=dict(finding.setting),
        departing=Side(tuple(run(r) for r in finding.departing.runs)),
        reference=Side(tuple(run(r) for r in finding.reference.runs)),
        noise=finding.noise,
        explanation=replace(exp, ruled_out=ruled),
        path=finding.path,
        line=finding.line,
        annotation=None,
        ordinal=finding.ordinal,
        kind=finding.kind,
        between=tuple(run(r) for r in finding.between),
        group=finding.group,
        departs=finding.departs,
    )


class _FileSpans:
    """Where each row file's rows are in ``site.rows`` (rows are ordered by file, then line)."""

    def __init__(self, site: Site) -> None:
        import numpy as np

        self._np = np
        self.file_of = {parsed.source.rel: i for i, parsed in enumerate(site.row_files)}
        self.file_ids = site.rows.column("file_id").to_numpy()
        self.file_rows = site.rows.column("file_row").to_numpy()
        self.row_ids = site.rows.column("row_id").to_numpy()
        self._starts: dict[int, int] = {}

    def start(self, file_id: int) -> int:
        found = self._starts.get(file_id)
        if found is None:
            found = self._starts[file_id] = int(self._np.searchsorted(self.file_ids, file_id, "left"))
        return found


def detach_findings(findings: Sequence[Finding], site: Site) -> list[Finding]:
    """Copies of ``findings`` (annotations left out) that pickle and hold nothing of ``site``."""
    spans = _FileSpans(site)
    ids = spans.row_ids
    # A row's id is its position in the table (so it is made); a table not so made is looked up.
    dense = bool((ids == spans._np.arange(len(ids))).all())
    position = None if dense else {int(row_id): at for at, row_id in enumerate(ids.tolist())}

    def detached(run: Run) -> Run:
        # Only where the rows are: the run's engine, flags, env, drivers and harnesses go along
        # summarised (``_meta``), as the live run read them.
        row_ids, file_ids = run._each("row_id"), run._each("file_id")
        columns = {
            "file_row": run._each("file_row"),
            "rel": [site.row_files[i].source.rel for i in file_ids],
            # Rows by their place among their file's rows: unchanged while the file is.
            "in_file": [
                (row_id if position is None else position[row_id]) - spans.start(file_id)
                for row_id, file_id in zip(row_ids, file_ids, strict=True)
            ],
        }
        copy = replace(run, details=StoredTrials(columns), positions=range(len(run.trials)), index=None)
        copy.__dict__["_meta"] = run._meta  # as the live run summarised it
        return copy

    return [_copy_finding(f, _run_mapper(detached)) for f in findings]


class StaleFindings(Exception):
    """Detached findings name a row the site does not have: they must be computed again."""


def restore_findings(detached: Sequence[Finding], site: Site) -> list[Finding]:
    """Findings from :func:`detach_findings` (freshly unpickled: they are bound in place) bound to
    ``site``: file ids and row ids looked up anew.

    Raises :class:`StaleFindings` when a row they name is not where it was in its file (the
    caller's key should have prevented that)."""
    spans = _FileSpans(site)
    done: set[int] = set()

    def bind(run: Run) -> None:
        if id(run) in done:
            return
        done.add(id(run))
        assert isinstance(run.details, StoredTrials)
        columns = run.details.columns
        file_id_list: list[int] = []
        row_id_list: list[int] = []
        for rel, in_file, line in zip(columns["rel"], columns["in_file"], columns["file_row"], strict=True):
            file_id = spans.file_of.get(rel)
            if file_id is None:
                raise StaleFindings(f"no row file {rel}")
            at = spans.start(file_id) + in_file
            if (
                at >= len(spans.file_ids)
                or int(spans.file_ids[at]) != file_id
                or int(spans.file_rows[at]) != line
            ):
                raise StaleFindings(f"row {line} of {rel} moved")
            file_id_list.append(file_id)
            row_id_list.append(int(spans.row_ids[at]))
        columns["file_id"], columns["row_id"] = file_id_list, row_id_list

    for finding in detached:
        for run in (*finding.departing.runs, *finding.reference.runs, *finding.between):
            bind(run)
        for ruled in finding.explanation.ruled_out:
            bind(ruled.control)
            bind(ruled.departing)
    return list(detached)

"""What differed between runs that disagree, and what a control run rules out.

For each recorded field that can tell runs apart -- engine, engine_version, engine_build, node,
driver, harness, every flag by name (``--max-model-len``, normalised) and every env key
(``env:NAME``) -- the values of the departing runs are compared with those of the reference runs:

* the two sides share no value: the field is offered as a cause (``explained_by``);
* a reference run shares a departing run's value yet agrees with the other reference runs (so it
  disagrees with the departing run as much as they do): it is a control, and the field is
  ``ruled_out``;
* a side does not record the field: it cannot explain anything (``unrecorded``).

With nothing offered, the finding is "unexplained by the recorded metadata" and the advice says
what to record next time (engine_build as a digest, driver).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from builder.analysis.noise import Run
from builder.content.flags import FlagSyntaxError, flag_map, format_value, parse_env

NOT_RECORDED_ADVICE = {
    "engine_build": "engine_build (an image digest or a wheel commit: what a version string cannot tell apart)",
    "driver": "driver (the GPU driver version at the time of the run)",
    "harness": "harness (the benchmark tool and its settings)",
}
_HASHLIKE = re.compile(r"(?:sha256:)?[0-9a-f]{7,64}|.*@sha256:[0-9a-f]{64}|.*\+g[0-9a-f]{7,40}.*", re.I)


def fmt_value(value: float) -> str:
    """A figure as shown in findings: four significant digits."""
    text = f"{value:,.4g}" if abs(value) < 1e4 else f"{value:,.0f}"
    return text


@dataclass(frozen=True)
class Difference:
    """A recorded field whose values differ between the departing and the reference runs."""

    field: str
    values: tuple[str, ...]
    """Distinct values in the order of the runs' dates."""
    departing: tuple[str, ...]
    reference: tuple[str, ...]

    def as_json(self) -> dict[str, Any]:
        return {
            "field": self.field,
            "values": list(self.values),
            "departing": list(self.departing),
            "reference": list(self.reference),
        }


@dataclass(frozen=True)
class RuledOut:
    """A difference a control run excludes: it shares the departing value yet agrees with the rest."""

    field: str
    values: tuple[str, ...]
    shared: str
    control: Run
    departing: Run

    def reason(self) -> str:
        return (
            f"the {self.control.date.isoformat()} run on {self.control.node} also has {self.field} = "
            f"{self.shared}, like the {self.departing.date.isoformat()} run, yet reads "
            f"{fmt_value(self.control.value)} against {fmt_value(self.departing.value)}, "
            "as far off as the runs that differ in it"
        )

    def as_json(self) -> dict[str, Any]:
        return {
            "field": self.field,
            "values": list(self.values),
            "shared_value": self.shared,
            "control": {
                "date": self.control.date.isoformat(),
                "node": self.control.node,
                "value": self.control.value,
            },
            "reason": self.reason(),
        }


def _joined(values: tuple[str, ...]) -> str | None:
    """Distinct sorted values (a run's drivers or harnesses are kept so) joined for display."""
    return ", ".join(values) if values else None


class Parsed:
    """Flags and env strings parsed once per distinct string."""

    def __init__(self) -> None:
        self._flags: dict[str, dict[str, str] | None] = {}
        self._env: dict[str, dict[str, str] | None] = {}

    def flags(self, text: str | None) -> dict[str, str] | None:
        if text is None:
            return None
        if text not in self._flags:
            try:
                self._flags[text] = {k: format_value(v) for k, v in flag_map(text).items()}
            except FlagSyntaxError:
                self._flags[text] = None
        return self._flags[text]

    def env(self, text: str | None) -> dict[str, str] | None:
        if text is None:
            return None
        if text not in self._env:
            try:
                self._env[text] = parse_env(text)
            except FlagSyntaxError:
                self._env[text] = None
        return self._env[text]


def _field_columns(runs: list[Run], parsed: Parsed) -> dict[str, list[str | None]]:
    """Field name → the recorded value of each run (``None`` = not recorded), in the runs' order."""
    flag_maps = [parsed.flags(run.flags) for run in runs]
    env_maps = [parsed.env(run.env) for run in runs]
    columns: dict[str, list[str | None]] = {
        "engine": [run.engine for run in runs],
        "engine_version": [None if run.engine_version == "unknown" else run.engine_version for run in runs],
        "engine_build": [run.engine_build for run in runs],
        "node": [run.node for run in runs],
        "driver": [_joined(run.drivers) for run in runs],
        "harness": [_joined(run.harnesses) for run in runs],
    }
    for name in sorted({name for m in flag_maps if m for name in m}):
        columns[name] = [None if m is None else m.get(name, "(absent)") for m in flag_maps]
    for name in sorted({name for m in env_maps if m for name in m}):
        columns[f"env:{name}"] = [None if m is None else m.get(name, "(unset)") for m in env_maps]
    return columns


@dataclass(frozen=True)
class Explanation:
    explained_by: tuple[Difference, ...]
    ruled_out: tuple[RuledOut, ...]
    unrecorded: tuple[str, ...]
    advice: tuple[str, ...]


def explain(departing: list[Run], reference: list[Run], parsed: Parsed) -> Explanation:
    """Which recorded differences between the two sides could explain the disagreement."""
    everyone = sorted(departing + reference, key=lambda r: (r.date, r.node))
    leaving = {id(run) for run in departing}
    d_idx = [i for i, run in enumerate(everyone) if id(run) in leaving]
    r_idx = [i for i, run in enumerate(everyone) if id(run) not in leaving]
    columns = _field_columns(everyone, parsed)
    explained: list[Difference] = []
    ruled: list[RuledOut] = []
    unrecorded: list[str] = []
    for name, column in columns.items():
        if column[0] is not None and column.count(column[0]) == len(column):
            continue  # the same everywhere: cannot tell the runs apart
        d_vals = [column[i] for i in d_idx]
        r_vals = [column[i] for i in r_idx]
        d_known = {v for v in d_vals if v is not None}
        r_known = {v for v in r_vals if v is not None}
        if not d_known or not r_known:
            unrecorded.append(name)
            continue
        if len(d_known | r_known) == 1:
            if None in d_vals or None in r_vals:
                unrecorded.append(name)
            continue
        distinct = tuple(v for v in dict.fromkeys(column) if v is not None)
        shared = d_known & r_known
        if shared:
            # The earliest reference run sharing a departing value is the control.
            ref = next(i for i in r_idx if column[i] in shared)
            dep = next(i for i in d_idx if column[i] == column[ref])
            value = column[ref]
            assert value is not None
            ruled.append(RuledOut(name, distinct, value, everyone[ref], everyone[dep]))
        else:
            explained.append(Difference(name, distinct, tuple(sorted(d_known)), tuple(sorted(r_known))))
    return Explanation(tuple(explained), tuple(ruled), tuple(unrecorded), _advice(everyone, columns))


def _advice(runs: list[Run], columns: dict[str, list[str | None]]) -> tuple[str, ...]:
    missing = [name for name in ("engine_build", "driver") if None in columns[name]]
    advice: list[str] = []
    if missing:
        advice.append("Record " + " and ".join(NOT_RECORDED_ADVICE[n] for n in missing) + " with every run.")
    builds = set(columns["engine_build"])
    if len(builds) == 1 and None not in builds:
        build = next(iter(builds))
        assert build is not None
        if not _HASHLIKE.fullmatch(build):
            advice.append(
                f"engine_build is '{build}' in every run, a name rather than a content hash: an in-place "
                "upgrade of that environment would not change it. Record an image digest or wheel commit."
            )
    if not any(r.harnesses for r in runs):
        advice.append("Record the harness that produced the figures.")
    return tuple(advice)

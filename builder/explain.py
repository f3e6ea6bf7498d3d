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
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from builder.flags import FlagSyntaxError, flag_map, format_value, parse_env
from builder.noise import Run

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

    def reason(self, metric: str) -> str:
        return (
            f"the {self.control.date.isoformat()} run on {self.control.node} also has {self.field} = "
            f"{self.shared}, like the {self.departing.date.isoformat()} run, yet reads "
            f"{fmt_value(self.control.value)} against {fmt_value(self.departing.value)} {metric}, "
            "as far off as the runs that differ in it"
        )

    def as_json(self, metric: str) -> dict[str, Any]:
        return {
            "field": self.field,
            "values": list(self.values),
            "shared_value": self.shared,
            "control": {
                "date": self.control.date.isoformat(),
                "node": self.control.node,
                "value": self.control.value,
            },
            "reason": self.reason(metric),
        }


def _joined(values: Iterable[str]) -> str | None:
    items = sorted(set(values))
    return ", ".join(items) if items else None


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


def _field_values(runs: list[Run], parsed: Parsed) -> list[dict[str, str | None]]:
    """Per run, field name → recorded value (``None`` = not recorded)."""
    out: list[dict[str, str | None]] = []
    flag_names: set[str] = set()
    env_names: set[str] = set()
    maps = []
    for run in runs:
        flags, env = parsed.flags(run.flags), parsed.env(run.env)
        maps.append((flags, env))
        flag_names.update(flags or ())
        env_names.update(env or ())
    for run, (flags, env) in zip(runs, maps, strict=True):
        values: dict[str, str | None] = {
            "engine": run.engine,
            "engine_version": None if run.engine_version == "unknown" else run.engine_version,
            "engine_build": run.engine_build,
            "node": run.node,
            "driver": _joined(run.drivers),
            "harness": _joined(run.harnesses),
        }
        for name in sorted(flag_names):
            values[name] = None if flags is None else flags.get(name, "(absent)")
        for name in sorted(env_names):
            values[f"env:{name}"] = None if env is None else env.get(name, "(unset)")
        out.append(values)
    return out


@dataclass(frozen=True)
class Explanation:
    explained_by: tuple[Difference, ...]
    ruled_out: tuple[RuledOut, ...]
    unrecorded: tuple[str, ...]
    advice: tuple[str, ...]


def explain(departing: list[Run], reference: list[Run], parsed: Parsed) -> Explanation:
    """Which recorded differences between the two sides could explain the disagreement."""
    everyone = sorted(departing + reference, key=lambda r: (r.date, r.node))
    values = _field_values(everyone, parsed)
    by_run = {id(run): v for run, v in zip(everyone, values, strict=True)}
    explained: list[Difference] = []
    ruled: list[RuledOut] = []
    unrecorded: list[str] = []
    for name in values[0]:
        ordered = [v[name] for v in values]
        known = [v for v in ordered if v is not None]
        if len(set(known)) <= 1 and len(known) == len(ordered):
            continue  # the same everywhere: cannot tell the runs apart
        d_vals = [by_run[id(r)][name] for r in departing]
        r_vals = [by_run[id(r)][name] for r in reference]
        d_known = {v for v in d_vals if v is not None}
        r_known = {v for v in r_vals if v is not None}
        if not d_known or not r_known:
            unrecorded.append(name)
            continue
        if len(d_known | r_known) == 1:
            if None in d_vals or None in r_vals:
                unrecorded.append(name)
            continue
        distinct = tuple(dict.fromkeys(known))
        shared = d_known & r_known
        if shared:
            control, dep, value = _control(departing, reference, by_run, name, shared)
            ruled.append(RuledOut(name, distinct, value, control, dep))
        else:
            explained.append(
                Difference(name, distinct, tuple(dict.fromkeys(sorted(d_known))), tuple(sorted(r_known)))
            )
    return Explanation(tuple(explained), tuple(ruled), tuple(unrecorded), _advice(everyone, values))


def _control(
    departing: list[Run],
    reference: list[Run],
    by_run: dict[int, dict[str, str | None]],
    name: str,
    shared: set[str],
) -> tuple[Run, Run, str]:
    for ref in sorted(reference, key=lambda r: (r.date, r.node)):
        value = by_run[id(ref)][name]
        if value in shared:
            dep = next(d for d in departing if by_run[id(d)][name] == value)
            return ref, dep, value
    raise AssertionError("a shared value has a control run")  # pragma: no cover


def _advice(runs: list[Run], values: list[dict[str, str | None]]) -> tuple[str, ...]:
    missing = [name for name in ("engine_build", "driver") if any(v[name] is None for v in values)]
    advice: list[str] = []
    if missing:
        advice.append("Record " + " and ".join(NOT_RECORDED_ADVICE[n] for n in missing) + " with every run.")
    builds = {v["engine_build"] for v in values}
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

"""Stage 4: reconcile every row with its recipe's metadata.

A row *matches* its recipe when engine, engine version, flags (parsed and normalised), env (by key)
and hardware (through its node) agree; it *differs* when any recorded value disagrees (each
difference listed); it is *not recorded* when it agrees on everything it records but leaves flags
or env (or the version) unrecorded. Statuses are computed once per distinct combination of those
values (a handful, even over 100k rows) and joined back to the rows by DuckDB.

Then :mod:`builder.analysis.findings` compares the runs of each recipe at each comparable setting and
reports the results that do not reproduce (its docstring holds the noise model), and
:mod:`builder.analysis.annotations` attaches the curators' reasons from ``data/annotations.yaml``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from builder.analysis.annotations import LocatedAnnotation, attach_annotations
from builder.analysis.findings import Finding, find_non_reproduction
from builder.analysis.run_groups import Combinations, combinations
from builder.content.flags import FlagSyntaxError, FlagValue, flag_map, format_value, parse_env
from builder.data.load import Recipe, Site
from builder.errors import Problems

MATCHES = "matches"
DIFFERS = "differs"
NOT_RECORDED = "not_recorded"
UNKNOWN = "unknown"


@dataclass(frozen=True)
class Difference:
    """One recorded value of a row that disagrees with its recipe."""

    field: str
    """``engine``, ``engine_version``, ``hardware``, ``env:NAME`` or a flag name like ``--max-model-len``."""
    row_value: str
    recipe_value: str

    def describe(self) -> str:
        return f"{self.field}: {self.row_value} (recipe: {self.recipe_value})"


@dataclass(frozen=True)
class RowStatus:
    status: str
    differences: tuple[Difference, ...] = ()
    unrecorded: tuple[str, ...] = ()
    """Fields the row leaves unrecorded (``flags``, ``env``, ``engine_version``)."""


class FindingsSource(Protocol):
    """Findings handed out recipe by recipe (an engine that kept an earlier build's findings restores
    them only as pages ask)."""

    def of(self, slug: str) -> list[Finding]:
        """The recipe's findings (the same objects every time: annotations are attached to them)."""

    def all(self) -> list[Finding]:
        """Every finding, recipes in name order."""

    def digest(self) -> str | None:
        """A hash of every finding, or None when it cannot be had cheaply."""

    def counts(self) -> dict[str, tuple[int, int]]:
        """Per recipe, (findings, open findings)."""


@dataclass
class Reconciliation:
    """Per-row statuses (by ``row_id``) and the findings of non-reproduction."""

    kinds: list[RowStatus] = field(default_factory=list)
    """The distinct statuses, one per combination of recorded metadata."""
    kind_of_row: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    """``row_id`` → index into :attr:`kinds` (rows are many, combinations few)."""
    statuses: dict[int, RowStatus] = field(default_factory=dict)
    """Statuses set one by one (tests, hand-made reconciliations); they take precedence."""
    source: FindingsSource | None = field(default=None, repr=False, compare=False)
    """Where the findings come from when an earlier build kept them (restored recipe by recipe,
    as pages ask); None: :attr:`findings` as set."""
    _findings: list[Finding] | None = field(default=None, repr=False, compare=False)

    @property
    def findings(self) -> list[Finding]:
        """Non-reproduction findings; each has ``recipe`` and ``as_json()`` (the ``check --format json``
        contract)."""
        if self._findings is None:
            self._findings = self.source.all() if self.source is not None else []
        return self._findings

    @findings.setter
    def findings(self, value: list[Finding]) -> None:
        self._findings = value

    def status(self, row_id: int) -> RowStatus:
        if self.statuses:
            given = self.statuses.get(row_id)
            if given is not None:
                return given
        return self.kinds[int(self.kind_of_row[row_id])]

    _findings_index: tuple[list[Finding], int, dict[str, list[Finding]]] | None = field(
        default=None, init=False, repr=False, compare=False
    )
    """Findings by recipe, with the list (held, so its identity stays unique) and length it indexes."""

    def findings_for(self, recipe: str) -> list[Finding]:
        if self._findings is None and self.source is not None:
            return list(self.source.of(recipe))  # no need to restore the others
        # Pages ask once per recipe; a scan of every finding each time is quadratic at scale.
        cached = self._findings_index
        if cached is None or cached[0] is not self.findings or cached[1] != len(self.findings):
            index: dict[str, list[Finding]] = {}
            for finding in self.findings:
                index.setdefault(finding.recipe, []).append(finding)
            cached = self._findings_index = (self.findings, len(self.findings), index)
        return list(cached[2].get(recipe, ()))

    def open_recipe_count(self) -> int:
        """How many recipes have a finding no curator has annotated yet."""
        return sum(1 for _, opened in self.finding_counts_by_recipe().values() if opened)

    def findings_digest(self) -> str | None:
        """A hash of every finding when an earlier build's are kept (:meth:`FindingsSource.digest`);
        None without (then a page listing findings depends on the rows)."""
        return self.source.digest() if self.source is not None else None

    def finding_counts_by_recipe(self) -> dict[str, tuple[int, int]]:
        """Per recipe with findings, (findings, open findings), counted without restoring kept ones
        (the home page's and the API index's figures: restoring every recipe's findings for a count
        would slow a row-file build)."""
        if self._findings is None and self.source is not None:
            return {slug: pair for slug, pair in self.source.counts().items() if pair[0]}
        out: dict[str, tuple[int, int]] = {}
        for finding in self.findings:
            total, opened = out.get(finding.recipe, (0, 0))
            out[finding.recipe] = (total + 1, opened + finding.is_open)
        return out

    def finding_counts(self) -> tuple[int, int]:
        """(findings, open findings), counted as :meth:`finding_counts_by_recipe` counts."""
        pairs = self.finding_counts_by_recipe().values()
        return sum(p[0] for p in pairs), sum(p[1] for p in pairs)

    @property
    def open_findings(self) -> list[Finding]:
        """Findings no curator has annotated yet."""
        return [f for f in self.findings if f.is_open]


def _flag_differences(
    row_flags: dict[str, FlagValue], recipe_flags: dict[str, FlagValue]
) -> list[Difference]:
    out = []
    for name in sorted(set(row_flags) | set(recipe_flags)):
        mine, theirs = row_flags.get(name), recipe_flags.get(name)
        if mine != theirs:
            out.append(Difference(name, format_value(mine), format_value(theirs)))
    return out


def status_for(
    recipe: Recipe,
    *,
    engine: str | None,
    engine_version: str,
    flags: str | None,
    env: str | None,
    hardware: str | None,
    parse_flags: Callable[[str], dict[str, FlagValue]] = flag_map,
    parse_environment: Callable[[str], dict[str, str]] = parse_env,
) -> RowStatus:
    """Compare one combination of recorded metadata with the recipe."""
    meta = recipe.meta
    diffs: list[Difference] = []
    unrecorded: list[str] = []
    if engine is not None and engine.lower() != meta.engine.lower():
        diffs.append(Difference("engine", engine, meta.engine))
    if engine_version == UNKNOWN or meta.engine_version == UNKNOWN:
        unrecorded.append("engine_version")
    elif engine_version != meta.engine_version:
        diffs.append(Difference("engine_version", engine_version, meta.engine_version))
    if hardware is not None and hardware != meta.hardware:
        diffs.append(Difference("hardware", hardware, meta.hardware))
    if flags is None or not meta.flags.strip():
        unrecorded.append("flags")
    else:
        try:
            diffs.extend(_flag_differences(parse_flags(flags), recipe.flags))
        except FlagSyntaxError:
            unrecorded.append("flags")
    if env is None:
        if meta.env:
            unrecorded.append("env")
    else:
        try:
            row_env = parse_environment(env)
        except FlagSyntaxError:
            row_env = {}
            unrecorded.append("env")
        diffs.extend(
            Difference(f"env:{name}", row_env.get(name, "(unset)"), meta.env.get(name, "(unset)"))
            for name in sorted(set(row_env) | set(meta.env))
            if row_env.get(name) != meta.env.get(name)
        )
    if diffs:
        return RowStatus(DIFFERS, tuple(diffs), tuple(unrecorded))
    if unrecorded:
        return RowStatus(NOT_RECORDED, (), tuple(unrecorded))
    return RowStatus(MATCHES)


class _Cache:
    """A parser memoised per distinct string (strings repeat across combinations)."""

    def __init__(self, parse: Callable[[str], Any]) -> None:
        self.parse = parse
        self.done: dict[str, Any] = {}
        self.failed: dict[str, FlagSyntaxError] = {}

    def __call__(self, text: str) -> Any:
        if text in self.failed:
            raise self.failed[text]
        if text not in self.done:
            try:
                self.done[text] = self.parse(text)
            except FlagSyntaxError as exc:
                self.failed[text] = exc
                raise
        return self.done[text]


def reconcile_rows(
    site: Site, annotations: Sequence[LocatedAnnotation] = (), problems: Problems | None = None
) -> Reconciliation:
    """Status of every row (one Python comparison per distinct metadata combination), the findings
    of non-reproduction and their annotations (:func:`annotate`)."""
    combos = combinations(site)
    result = Reconciliation(*row_statuses(site, combos))
    result.findings = find_non_reproduction(site, combos)
    return annotate(result, annotations, problems)


def annotate(
    result: Reconciliation, annotations: Sequence[LocatedAnnotation], problems: Problems | None = None
) -> Reconciliation:
    """Attach the annotations to the findings they select. An annotation that selects no finding is
    an error, added to ``problems`` (raised as :class:`~builder.errors.BuildAborted` when none is
    given)."""
    if annotations:
        collected = problems if problems is not None else Problems()
        # An annotation selects findings of its recipe only: those recipes' findings, in the
        # site's order (by recipe first), are all it needs.
        named = sorted({note.entry.recipe for note in annotations})
        attach_annotations([f for slug in named for f in result.findings_for(slug)], annotations, collected)
        if problems is None:
            collected.raise_if_any()
    return result


def row_statuses(site: Site, combos: Combinations) -> tuple[list[RowStatus], np.ndarray]:
    """The distinct statuses and each row's (by ``row_id``), one comparison per combination."""
    # One status per distinct combination of recorded metadata (a handful, even over 100k rows),
    # each flags/env string parsed once; the per-row index is built with numpy.
    flags_cache = _Cache(flag_map)
    env_cache = _Cache(parse_env)
    kinds: dict[RowStatus, int] = {}
    kind_of_combo = []
    for i in range(len(combos)):
        node = combos.node[i]
        status = status_for(
            site.recipes[combos.recipe[i]],  # ingest refuses rows of unknown recipes
            engine=combos.engine[i],
            engine_version=combos.engine_version[i],
            flags=combos.flags[i],
            env=combos.env[i],
            hardware=site.nodes[node].hardware if node in site.nodes else None,
            parse_flags=flags_cache,
            parse_environment=env_cache,
        )
        kind_of_combo.append(kinds.setdefault(status, len(kinds)))
    kind_of_row = np.asarray(kind_of_combo, np.int32)[combos.of_row_id] if len(combos) else combos.of_row_id
    return list(kinds), kind_of_row

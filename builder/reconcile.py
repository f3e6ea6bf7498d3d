"""Stage 4: reconcile every row with its recipe's metadata.

A row *matches* its recipe when engine, engine version, flags (parsed and normalised), env (by key)
and hardware (through its node) agree; it *differs* when any recorded value disagrees (each
difference listed); it is *not recorded* when it agrees on everything it records but leaves flags
or env (or the version) unrecorded. Statuses are computed once per distinct combination of those
values (a handful, even over 100k rows) and joined back to the rows by DuckDB.

Then :mod:`builder.findings` compares the runs of each recipe at each comparable setting and
reports the results that do not reproduce (its docstring holds the noise model), and
:mod:`builder.annotations` attaches the curators' reasons from ``data/annotations.yaml``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import pyarrow as pa

from builder.annotations import LocatedAnnotation, attach_annotations
from builder.errors import Problems
from builder.findings import Finding, find_non_reproduction
from builder.flags import FlagSyntaxError, FlagValue, flag_map, format_value, parse_env
from builder.load import Recipe, Site

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


@dataclass
class Reconciliation:
    """Per-row statuses (keyed by ``row_id``) and the findings of non-reproduction."""

    statuses: dict[int, RowStatus] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)
    """Non-reproduction findings; each has ``recipe`` and ``as_json()`` (the check --format json contract)."""

    def status(self, row_id: int) -> RowStatus:
        return self.statuses[row_id]

    def findings_for(self, recipe: str) -> list[Finding]:
        return [f for f in self.findings if f.recipe == recipe]

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
            diffs.extend(_flag_differences(flag_map(flags), recipe.flags))
        except FlagSyntaxError:
            unrecorded.append("flags")
    if env is None:
        if meta.env:
            unrecorded.append("env")
    else:
        try:
            row_env = parse_env(env)
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


def reconcile_rows(
    site: Site, annotations: Sequence[LocatedAnnotation] = (), problems: Problems | None = None
) -> Reconciliation:
    """Status of every row (one Python comparison per distinct metadata combination), the findings
    of non-reproduction and their annotations. An annotation that selects no finding is an error,
    added to ``problems`` (raised as :class:`~builder.errors.BuildAborted` when none is given)."""
    node_hw = pa.table(
        {
            "node": pa.array(list(site.nodes), pa.string()),
            "hardware": pa.array([n.hardware for n in site.nodes.values()], pa.string()),
        }
    )
    site.con.register("_node_hw", node_hw)
    try:
        combos = site.con.execute(
            """
            SELECT r.recipe, r.engine, r.engine_version, r.flags, r.env, h.hardware, list(r.row_id)
            FROM rows r LEFT JOIN _node_hw h USING (node)
            GROUP BY ALL
            """
        ).fetchall()
    finally:
        site.con.unregister("_node_hw")
    result = Reconciliation()
    for recipe_slug, engine, version, flags, env, hardware, row_ids in combos:
        recipe = site.recipes.get(recipe_slug)
        if recipe is None:
            continue
        status = status_for(
            recipe, engine=engine, engine_version=version, flags=flags, env=env, hardware=hardware
        )
        for row_id in row_ids:
            result.statuses[row_id] = status
    result.findings = find_non_reproduction(site)
    if annotations:
        collected = problems if problems is not None else Problems()
        attach_annotations(result.findings, annotations, collected)
        if problems is None:
            collected.raise_if_any()
    return result

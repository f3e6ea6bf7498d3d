"""The noise model: how far apart runs of one setting may read before they disagree.

Everything happens on the log scale, so bands are relative and a drop and a rise of the same ratio
weigh the same. Each run is summarised by the mean of its log trials. A trial that reports the
spread of its repetitions (``<metric>_sd`` over ``repetitions``, two when not given) weighs as many
trials and brings their sum of squares, ``(n - 1) * (sd / mean)^2``; when every trial of a group
reports one, the within-run estimate is that measured spread alone, with no prior. The noise ``sigma`` is
estimated from the data in two ways:

* within runs: the pooled standard deviation of trials around their run's mean (degrees of
  freedom: trials minus runs);
* between agreeing runs: the pooled scatter of run means inside each group of runs that agree
  (degrees of freedom: runs minus groups).

Each estimate is shrunk towards a conservative prior, ``sigma0 = ln(1 + DEFAULT_BAND) / K`` worth
``PRIOR_DOF`` degrees of freedom: ``sigma^2 = (PRIOR_DOF * sigma0^2 + SS) / (PRIOR_DOF + dof)``. With
no estimate at all (single-trial runs, none agreeing) the band is the prior's, +/-10 %: conservative,
since repeated serving benchmarks on one machine usually agree within a few percent, so a 10 %
departure is unlikely to be restart or thermal noise, while a drop like the seed's 45 % is flagged
whatever the prior. A pair of
trials cannot narrow it much; many tight trials narrow it towards what the data shows; widely
scattering trials widen it. When both estimates exist the larger is used. The band is
``max(FLOOR, K * sigma)`` with ``K = 4`` and ``FLOOR = ln(1.02)``: a difference of 2 % or less is never
a finding, whatever the data (published figures are often rounded to two or three digits).
:func:`noise_band` is that formula, the one both detection and the pre-filter of
:mod:`builder.analysis.candidates` use (vectorised: the pre-filter computes every group's at once).

Which runs depart: run means are sorted and split wherever two neighbours are further apart than
the band (single linkage); each part is a group of runs that agree. Agreeing runs feed the
between-run estimate, so band and groups are found together: starting from the floor (every
clear gap splits), the band is re-estimated from the groups and raised, and groups merge, until
they settle. Starting narrow keeps a departing run from inflating the scatter of the runs it is
measured against (it would mask itself); the prior keeps two runs that happen to agree closely
from narrowing the band much.
"""

from __future__ import annotations

import datetime as dt
import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

K = 4.0
"""Band half-width in noise standard deviations."""
DEFAULT_BAND = 0.10
"""Relative band when the data gives no noise estimate (single-trial runs, none agreeing)."""
PRIOR_DOF = 2.0
"""Weight of the default noise, in degrees of freedom, against the data's own estimate."""
FLOOR_BAND = 0.02
"""Relative differences at or below this are never findings."""
SIGMA0 = math.log1p(DEFAULT_BAND) / K
FLOOR = math.log1p(FLOOR_BAND)


def noise_band(ss: ArrayLike, dof: ArrayLike, measured: ArrayLike = False) -> np.ndarray:
    """The band's half-width on the log scale from one noise estimate: ``ss``, a sum of squares of
    log values around their means, over ``dof`` degrees of freedom.

    The variance is shrunk towards the conservative prior, ``(PRIOR_DOF * SIGMA0^2 + ss) / (PRIOR_DOF +
    dof)``, unless ``measured`` (every trial reports the spread of its repetitions: ``ss / dof``,
    nothing assumed; ``dof`` must be > 0); the band is ``max(FLOOR, K * sqrt(variance))``. ``ss = dof
    = 0`` (no estimate) gives the prior's band, +/-10 %. The one formula of the band: :func:`detect`
    calls it on each group's estimates and :mod:`builder.analysis.candidates` on every group's at once.
    Elementwise over arrays; a call with numbers is the one-element case (a 0-d array).
    """
    ss = np.asarray(ss, dtype=np.float64)
    dof = np.asarray(dof, dtype=np.float64)
    # Picked before dividing: a measured estimate has dof > 0, a shrunk one PRIOR_DOF + dof > 0.
    variance = np.where(measured, ss, PRIOR_DOF * SIGMA0 * SIGMA0 + ss) / np.where(
        measured, dof, PRIOR_DOF + dof
    )
    return np.maximum(FLOOR, K * np.sqrt(variance))


DEFAULT_NOISE_BAND = float(noise_band(0.0, 0.0))
"""The band when the data gives no estimate at all: the prior's, +/-10 %."""


# --------------------------------------------------------------------------------------------- runs


RunMeta = tuple[str | None, str | None, str | None, tuple[str, ...], tuple[str, ...]]
"""engine, flags, env (as the run's first trial typed them), drivers, harnesses."""


class TrialDetails:
    """Per-trial metadata of one fetch of runs, read on first use.

    Detection needs only each run's values; the metadata (row ids, file lines, flags, env, driver,
    harness) is read only for runs that end up in a finding, so it is loaded lazily: per column,
    and per run as a whole (``meta``) when the fetch can summarise its runs in bulk.
    """

    COLUMNS = ("row_id", "file_id", "file_row", "engine", "flags", "env", "driver", "harness")

    def __init__(
        self,
        load: Callable[[str], list[Any]],
        load_meta: Callable[[], list[RunMeta]] | None = None,
        load_one: Callable[[str, int], Any] | None = None,
    ) -> None:
        self._load = load
        self._load_meta = load_meta
        self._load_one = load_one
        self._columns: dict[str, list[Any]] = {}
        self._meta: list[RunMeta] | None = None

    def column(self, name: str) -> list[Any]:
        if name not in self._columns:
            self._columns[name] = self._load(name)
        return self._columns[name]

    def one(self, name: str, position: int) -> Any:
        """One trial's value, without reading the whole column when the fetch can avoid it."""
        if self._load_one is not None and name not in self._columns:
            return self._load_one(name, position)
        return self.column(name)[position]

    def meta(self, index: int) -> RunMeta | None:
        if self._load_meta is None:
            return None
        if self._meta is None:
            self._meta = self._load_meta()
        return self._meta[index]


@dataclass
class Run:
    """One run's trials at one setting, for one metric, with the metadata that can explain a change."""

    date: dt.date
    node: str
    engine_version: str
    engine_build: str | None
    trials: list[float]
    outputs: list[int | None]
    details: TrialDetails
    positions: Sequence[int]
    """This run's trials in :attr:`details`, in file order."""
    time: str | None = None
    """Time of day the run started (``HH:MM``), when its rows record it."""
    weights: list[float] | None = None
    """How many repetitions each trial stands for (a row with a reported spread: its ``repetitions``);
    ``None``: one each."""
    spreads: list[float] | None = None
    """Each trial's within-row sum of squares on the log scale, from its reported spread."""
    default_engine: str = ""
    """The recipe's engine, for rows that do not name one."""
    index: int | None = None
    """This run's index in :meth:`TrialDetails.meta`, when the fetch summarised its runs."""
    mu: float = math.nan
    """Mean of the log trials (computed when not given)."""
    ss: float = math.nan
    """Sum of squares of the log trials around their mean (computed when not given)."""
    rank: int = 0
    """Place among the runs of its setting, in the order findings read them (set by
    :func:`builder.analysis.findings.order_runs`: never by value)."""

    def __post_init__(self) -> None:
        if math.isnan(self.mu) or math.isnan(self.ss):
            logs = [math.log(v) for v in self.trials]
            weights = self.weights or [1.0] * len(logs)
            self.mu = sum(w * x for w, x in zip(weights, logs, strict=True)) / sum(weights)
            self.ss = sum(w * (x - self.mu) ** 2 for w, x in zip(weights, logs, strict=True))
            self.ss += sum(self.spreads or ())

    @property
    def count(self) -> float:
        """How many repetitions the run's trials stand for together."""
        return float(sum(self.weights)) if self.weights else float(len(self.trials))

    @property
    def reported(self) -> bool:
        """Whether every trial reports the spread of its repetitions (the noise is measured)."""
        return bool(self.weights) and all(w > 1 for w in self.weights or ())

    def _each(self, name: str) -> list[Any]:
        column = self.details.column(name)
        positions = self.positions
        if isinstance(positions, range) and positions.step == 1:
            return column[positions.start : positions.stop]
        return [column[i] for i in positions]

    @cached_property
    def value(self) -> float:
        """The run's figure: the median of its trials (computed once: findings sort and print by it)."""
        return float(statistics.median(self.trials))

    @cached_property
    def row_ids(self) -> list[int]:
        return self._each("row_id")

    @property
    def first_location(self) -> tuple[int, int]:
        """(file_id, file_row) of the first trial."""
        first = self.positions[0]
        return self.details.one("file_id", first), self.details.one("file_row", first)

    @cached_property
    def locations(self) -> list[tuple[int, int]]:
        """(file_id, file_row) per trial."""
        return list(zip(self._each("file_id"), self._each("file_row"), strict=True))

    @cached_property
    def _meta(self) -> tuple[str, str | None, str | None, tuple[str, ...], tuple[str, ...]]:
        """engine, flags, env (as the first trial typed them), drivers, harnesses: read together."""
        summary = self.details.meta(self.index) if self.index is not None else None
        if summary is None:
            summary = (
                min(filter(None, self._each("engine")), default=None),
                self._each("flags")[0],
                self._each("env")[0],
                tuple(sorted(set(filter(None, self._each("driver"))))),
                tuple(sorted(set(filter(None, self._each("harness"))))),
            )
        engine, flags, env, drivers, harnesses = summary
        return (engine or self.default_engine, flags, env, drivers, harnesses)

    @property
    def engine(self) -> str:
        return self._meta[0]

    @property
    def flags(self) -> str | None:
        return self._meta[1]

    @property
    def env(self) -> str | None:
        return self._meta[2]

    @property
    def drivers(self) -> tuple[str, ...]:
        return self._meta[3]

    @property
    def harnesses(self) -> tuple[str, ...]:
        return self._meta[4]

    def restricted(self, keep: list[int]) -> Run:
        """The same run with only the trials at indices ``keep``."""
        return Run(
            self.date,
            self.node,
            self.engine_version,
            self.engine_build,
            [self.trials[i] for i in keep],
            [self.outputs[i] for i in keep],
            self.details,
            [self.positions[i] for i in keep],
            self.time,
            None if self.weights is None else [self.weights[i] for i in keep],
            None if self.spreads is None else [self.spreads[i] for i in keep],
            self.default_engine,
        )


@dataclass(frozen=True)
class Noise:
    band: float
    """Half-width of the band on the log scale."""
    source: str
    """``default``, ``trials``, ``runs`` or ``trials and runs``."""
    trial_dof: float
    run_dof: int

    @property
    def relative(self) -> float:
        return math.expm1(self.band)


def _noise(runs: list[Run], mus: list[float], clusters: list[list[int]]) -> Noise:
    ss_w = 0.0
    dof_w = 0.0
    for run in runs:
        if run.count > 1:
            ss_w += run.ss
            dof_w += run.count - 1
    ss_b = 0.0
    dof_b = 0
    for cluster in clusters:
        if len(cluster) > 1:
            centre = sum(mus[i] for i in cluster) / len(cluster)
            ss_b += sum((mus[i] - centre) ** 2 for i in cluster)
            dof_b += len(cluster) - 1
    if not dof_w and not dof_b:
        return Noise(DEFAULT_NOISE_BAND, "default", 0, 0)
    # Every trial reports the spread of its repetitions: the noise is measured, nothing assumed.
    measured = bool(dof_w) and all(run.reported for run in runs)
    within, between = noise_band((ss_w, ss_b), (dof_w, dof_b), (measured, False)).tolist()
    # The wider band: the larger variance (the band grows with it).
    estimates = [(within, "reported spread" if measured else "trials")] if dof_w else []
    estimates += [(between, "runs")] if dof_b else []
    band = max(b for b, _ in estimates)
    return Noise(band, " and ".join(name for _, name in estimates), dof_w, dof_b)


def within_noise(runs: list[Run]) -> Noise:
    """The band from the runs' own trials (or the default) alone: the noise a drift is measured
    against, since the scatter between the runs of a drift is the drift itself."""
    return _noise(runs, [run.mu for run in runs], [[i] for i in range(len(runs))])


def cluster_runs(mus: list[float], band: float) -> list[list[int]]:
    """Single-linkage groups of run indices: neighbours (by value) closer than ``band`` agree."""
    order = sorted(range(len(mus)), key=lambda i: mus[i])
    groups = [[order[0]]]
    for prev, cur in zip(order, order[1:], strict=False):
        if mus[cur] - mus[prev] > band:
            groups.append([cur])
        else:
            groups[-1].append(cur)
    return groups


def detect(runs: list[Run]) -> tuple[list[list[int]], Noise]:
    """Groups of agreeing runs and the noise band that separates them (see the module docstring)."""
    mus = [run.mu for run in runs]
    band = FLOOR
    groups = cluster_runs(mus, band)
    # The band only grows and groups only merge, so this settles within one round per merge.
    for _ in range(len(runs) + 1):
        noise = _noise(runs, mus, groups)
        band = max(band, noise.band)
        regrouped = cluster_runs(mus, band)
        if regrouped == groups:
            break
        groups = regrouped
    return groups, Noise(band, noise.source, noise.trial_dof, noise.run_dof)

"""The noise model: how far apart runs of one setting may read before they disagree.

Everything happens on the log scale, so bands are relative and a drop and a rise of the same ratio
weigh the same. Each run is summarised by the mean of its log trials. The noise ``sigma`` is
estimated from the data in two ways:

* within runs: the pooled standard deviation of trials around their run's mean (degrees of
  freedom: trials minus runs);
* between agreeing runs: the pooled scatter of run means inside each group of runs that agree
  (degrees of freedom: runs minus groups).

Each estimate is shrunk towards a conservative prior, ``sigma0 = ln(1 + DEFAULT_BAND) / K`` worth
``PRIOR_DOF`` degrees of freedom: ``sigma^2 = (PRIOR_DOF * sigma0^2 + SS) / (PRIOR_DOF + dof)``. With
no estimate at all (single-trial runs, none agreeing) the band is the prior's, +/-10 %. A pair of
trials cannot narrow it much; many tight trials narrow it towards what the data shows; widely
scattering trials widen it. When both estimates exist the larger is used. The band is
``max(FLOOR, K * sigma)`` with ``K = 4`` and ``FLOOR = ln(1.02)``: a difference of 2 % or less is never
a finding, whatever the data (published figures are often rounded to two or three digits).

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
from dataclasses import dataclass

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


def noise_variance(ss: float, dof: float) -> float:
    """The shrunk variance estimate: the data's sum of squares against the conservative prior."""
    return (PRIOR_DOF * SIGMA0 * SIGMA0 + ss) / (PRIOR_DOF + dof)


def band_from_variance(variance: float) -> float:
    return max(FLOOR, K * math.sqrt(variance))


# --------------------------------------------------------------------------------------------- runs


@dataclass
class Run:
    """One run's trials at one setting, for one metric, with the metadata that can explain a change."""

    date: dt.date
    node: str
    engine: str
    engine_version: str
    engine_build: str | None
    flags: str | None
    env: str | None
    drivers: tuple[str, ...]
    harnesses: tuple[str, ...]
    trials: list[float]
    outputs: list[int | None]
    row_ids: list[int]
    locations: list[tuple[int, int]]
    """(file_id, file_row) per trial."""
    mu: float = math.nan
    """Mean of the log trials (computed when not given)."""
    ss: float = math.nan
    """Sum of squares of the log trials around their mean (computed when not given)."""

    def __post_init__(self) -> None:
        if math.isnan(self.mu) or math.isnan(self.ss):
            logs = [math.log(v) for v in self.trials]
            self.mu = sum(logs) / len(logs)
            self.ss = sum((x - self.mu) ** 2 for x in logs)

    @property
    def value(self) -> float:
        """The run's figure: the median of its trials."""
        return float(statistics.median(self.trials))

    def restricted(self, keep: list[int]) -> Run:
        return Run(
            self.date,
            self.node,
            self.engine,
            self.engine_version,
            self.engine_build,
            self.flags,
            self.env,
            self.drivers,
            self.harnesses,
            [self.trials[i] for i in keep],
            [self.outputs[i] for i in keep],
            [self.row_ids[i] for i in keep],
            [self.locations[i] for i in keep],
        )


@dataclass(frozen=True)
class Noise:
    band: float
    """Half-width of the band on the log scale."""
    source: str
    """``default``, ``trials``, ``runs`` or ``trials and runs``."""
    trial_dof: int
    run_dof: int

    @property
    def relative(self) -> float:
        return math.expm1(self.band)


def _noise(runs: list[Run], mus: list[float], clusters: list[list[int]]) -> Noise:
    ss_w = 0.0
    dof_w = 0
    for run in runs:
        if len(run.trials) > 1:
            ss_w += run.ss
            dof_w += len(run.trials) - 1
    ss_b = 0.0
    dof_b = 0
    for cluster in clusters:
        if len(cluster) > 1:
            centre = sum(mus[i] for i in cluster) / len(cluster)
            ss_b += sum((mus[i] - centre) ** 2 for i in cluster)
            dof_b += len(cluster) - 1
    estimates: list[tuple[float, str]] = []
    if dof_w:
        estimates.append((noise_variance(ss_w, dof_w), "trials"))
    if dof_b:
        estimates.append((noise_variance(ss_b, dof_b), "runs"))
    if not estimates:
        return Noise(band_from_variance(SIGMA0 * SIGMA0), "default", 0, 0)
    variance = max(v for v, _ in estimates)
    source = " and ".join(name for _, name in estimates)
    return Noise(band_from_variance(variance), source, dof_w, dof_b)


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

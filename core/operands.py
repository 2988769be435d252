"""The operand bundles that cross into the burst kernel (core/_place.pyx).

Each bundle groups arrays that travel together, laid out as the matching attributes of
``BurstKernel`` in core/_place.pxd (C-contiguous, the dtypes of core/_typedefs.py); the
kernel reads each bundle once per chunk. The profile's scalars cross as the
``KernelSettings`` struct declared there (:func:`kernel_settings` builds the dict Cython
converts to it). The static tables and the spread/inter-pod tables are the encoders'
own bundles (``encode.StaticTables``, ``spread.SpreadTables``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from kubesalvo.core.plugins import names, registry
from kubesalvo.core.plugins.framework import Normalise
from kubesalvo.core.plugins.node_resources_fit import ScoringStrategyType
from kubesalvo.core.profile import Profile

__all__ = [
    "ClassColumns",
    "Outputs",
    "PodColumns",
    "PortConflicts",
    "ScoringColumns",
    "kernel_settings",
]

_STRATEGIES = {
    ScoringStrategyType.LEAST_ALLOCATED: 0,
    ScoringStrategyType.MOST_ALLOCATED: 1,
    ScoringStrategyType.REQUESTED_TO_CAPACITY_RATIO: 2,
}


def kernel_settings(profile: Profile, max_constraints: int) -> dict[str, int | bool]:
    """The profile's scalars, keyed as the fields of ``KernelSettings`` (_place.pxd)."""
    weights = profile.score_weights
    filters = set(profile.filters)
    # The normalised score channels' weights: the kernel's REVERSE_MAX lane is w_taint,
    # its MAX lane w_aff: the first channel of each kind (the further ones are extra
    # channels, with their weights in encode.StaticTables).
    lanes: dict[Normalise, int] = {}
    for _, channel, weight in registry.score_channels(profile.scores):
        lanes.setdefault(channel.normalise, weight)
    return {
        "strategy": _STRATEGIES[profile.fit.scoring_strategy.type],
        "w_fit": weights.get(names.NODE_RESOURCES_FIT, 0),
        "w_bal": weights.get(names.NODE_RESOURCES_BALANCED_ALLOCATION, 0),
        "w_taint": lanes.get(Normalise.REVERSE_MAX, 0),
        "w_aff": lanes.get(Normalise.MAX, 0),
        "w_spread": weights.get(names.POD_TOPOLOGY_SPREAD, 0),
        "w_ipa": weights.get(names.INTER_POD_AFFINITY, 0),
        "fit_on": names.NODE_RESOURCES_FIT in filters,
        "ports_on": names.NODE_PORTS in filters,
        "spread_on": names.POD_TOPOLOGY_SPREAD in filters,
        "ipa_on": names.INTER_POD_AFFINITY in filters,
        "max_constraints": max_constraints,
    }


@dataclass(frozen=True)
class ScoringColumns:
    """The resource columns the scores read, for the whole burst."""

    sc_cols: npt.NDArray[np.int32]  # columns NodeResourcesFit scores
    sc_weight: npt.NDArray[np.int64]  # their weights
    shape_util: npt.NDArray[np.int64]  # RequestedToCapacityRatio points: utilization 0..100
    shape_score: npt.NDArray[np.int64]  # ... and score 0..100
    bal_cols: npt.NDArray[np.int32]  # columns BalancedAllocation looks at
    col_scalar: npt.NDArray[np.uint8]  # per column: 1 for scalar (extended) resources
    col_fit_check: npt.NDArray[np.uint8]  # per column: 1 if the fit filter checks it


@dataclass(frozen=True)
class ClassColumns:
    """Per class of the chunk: requests, non-zero requests, and a PreScore error flag."""

    c_req: npt.NDArray[np.int64]  # classes x resources
    c_nz: npt.NDArray[np.int64]  # classes x 2: non-zero cpu/memory as the scores see them
    c_nz_add: npt.NDArray[np.int64]  # classes x 2: what a pod adds to non-zero requests
    c_score_error: npt.NDArray[np.uint8]  # 1: its PreScore fails when 2+ nodes are feasible


@dataclass(frozen=True)
class PortConflicts:
    """Per class (CSR offsets): the port keys it clashes with, and the ones it holds."""

    conf_off: npt.NDArray[np.int32]
    conf: npt.NDArray[np.int32]
    own_off: npt.NDArray[np.int32]
    own: npt.NDArray[np.int32]


@dataclass(frozen=True)
class PodColumns:
    """Per pod of the chunk, in placement order."""

    p_class: npt.NDArray[np.int32]  # its class, local to the chunk
    p_gang_min: npt.NDArray[np.int32]  # its gang's minimum (0: no gang)
    p_gang_last: npt.NDArray[np.uint8]  # 1 on the last pod of a gang's run
    p_nominated: npt.NDArray[np.int32]  # the row of its nominated node, -1 for none


@dataclass(frozen=True)
class Outputs:
    """What the kernel writes per pod of the chunk (views into the burst's arrays)."""

    node: npt.NDArray[np.int32]  # chosen row, -1 when not placed
    score: npt.NDArray[np.int64]  # total weighted score of the chosen row
    reasons: npt.NDArray[np.int32]  # pods x codes: nodes failing with each reason code
    rolled: npt.NDArray[np.int32]  # for a pod rolled back with its gang, the row it had
    error: npt.NDArray[np.uint8]  # 1: its attempt failed with the class's PreScore error
    ties: npt.NDArray[np.int32]  # rows sharing the chosen row's best total (1: no tie)

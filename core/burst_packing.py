"""BurstPacking in ``place_burst``: the kernel's plan of a burst, improved, then placed.

With BurstPacking enabled (core/plugins/burst_packing.py), ``place_burst`` first plans the
burst with the kernel as usual (nothing assumed), turns the plan into the plain arrays
of ``core.packing.improve`` and hands the improved assignment back as each placed pod's
nominated node. The real placement then runs the kernel over those pods: a pod takes its
nominated node only when it passes every filter there (the kernel's own check, as for
the room preemption freed), otherwise it is placed as any other pod. So the guarantees
are the kernel's even where the improvement's view was short. Where arithmetic shows the
kernel would take every pod's nominated node (``_proven``), the placement writes that
outcome without running the kernel again (``Packed.taken``, core/place.py's ``_taken``).

What the improvement may move: pods whose placement depends on nothing but the node and
their requests. A pod with host ports, pod (anti-)affinity, hard topology spread constraints
(DoNotSchedule: its own, or default ones on an owned pod), volumes other than config and scratch
ones, resource claims (or a counted run's device column), a gang, a nominated node, a
class filter's answer or a PreFilter rejection stays where the kernel put it (nominated
there). Nodes with pods carrying pod (anti-)affinity terms from before the burst take no
moved pod (their terms may repel it).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from kubesalvo.core.dra import slots
from kubesalvo.core.encode import ClassInfo, Encoder
from kubesalvo.core.interpod import carried_terms
from kubesalvo.core.label_selectors import (
    Selector,
    indexed_candidates,
    label_selector,
    selector_matches,
)
from kubesalvo.core.packing import Burst, Limits, improve, valid
from kubesalvo.core.plugins.coscheduling import gang
from kubesalvo.core.profile import Profile
from kubesalvo.core.results import PlacementResult
from kubesalvo.core.state import POD_COLUMN, ClusterState
from kubesalvo.core.ties import TieBreak

__all__ = ["Packed", "pack"]

# Volumes that tie a pod to no node and no other object's placement.
_PLAIN_VOLUMES = frozenset(
    {"name", "configMap", "secret", "emptyDir", "downwardAPI", "projected", "hostPath"}
)

# The kernel's plan of a burst under a profile without BurstPacking, with a tie stream.
Planner = Callable[[Sequence[Mapping[str, Any]], Profile, TieBreak], PlacementResult]


@dataclasses.dataclass(frozen=True)
class Packed:
    """The burst to place instead: its pods with nominated nodes set (as they came when
    ``taken`` gives the nodes), in ``order`` (the pods left out last, so that none takes
    room meant for a later one);
    per pod index, the node the kernel alone chose when BurstPacking decided otherwise."""

    pods: list[Mapping[str, Any]]
    order: list[int]
    moved: dict[int, str | None]
    how: str  # "exact", "moves" or "greedy" (nothing better found)
    # The plan's encoder and each pod's class, in ``order`` (None: the plan was placed in
    # segments and kept no one encoder): the placement classes the pods no second time.
    classified: tuple[Encoder, npt.NDArray[np.intp]] | None = None
    # Per pod in ``order``, its nominated node's row when arithmetic proves the kernel
    # takes every pod's nominated node in turn (``_proven``): the placement then writes
    # that outcome without a second kernel pass (set only with ``classified``). None: the
    # kernel checks each pod.
    taken: npt.NDArray[np.int32] | None = None
    # The plan's kernel and encoding seconds: the result counts them with the placement's.
    plan_seconds: tuple[float, float] = (0.0, 0.0)

    def result(self, placed: PlacementResult) -> PlacementResult:
        """``placed`` (the result of ``pods`` in ``order``) in the burst's own order."""
        back = np.empty(len(self.order), dtype=np.intp)
        back[np.array(self.order, dtype=np.intp)] = np.arange(len(self.order))
        pick = back.tolist()

        def each(values: list[Any]) -> list[Any]:
            return [values[j] for j in pick] if values else values

        return dataclasses.replace(
            placed,
            nodes=each(placed.nodes),
            rows=placed.rows[back],
            scores=placed.scores[back],
            ties=each(placed.ties),
            reason_counts=each(placed.reason_counts),
            rejectors=each(placed.rejectors),
            prefilter_rejector=each(placed.prefilter_rejector),
            messages=each(placed.messages),
            errors=each(placed.errors),
            rolled_back=placed.rolled_back[back],
            tentative=each(placed.tentative),
            volume_bindings=each(placed.volume_bindings),
            packing_moved=dict(self.moved),
            kernel_seconds=placed.kernel_seconds + self.plan_seconds[0],
            encode_seconds=placed.encode_seconds + self.plan_seconds[1],
        )


def pack(
    state: ClusterState,
    pods: Sequence[Mapping[str, Any]],
    profile: Profile,
    planner: Planner,
    ties: TieBreak | None,
) -> Packed | None:
    """The burst as ``place_burst`` should place it under ``profile.packing``; None when
    no pod of it may move (the kernel's placement is then the answer, planned once)."""
    args = profile.packing
    assert args is not None
    if not any(_may_move(pod) for pod in pods):
        return None
    plain = dataclasses.replace(profile, packing=None)
    trial = TieBreak()  # the plan draws from a copy: the real placement draws the same
    if ties is not None:
        trial.state[0] = ties.state[0]
    plan = planner(pods, plain, trial)
    groups = [gang.group_of(pod) for pod in pods]
    burst = _burst(state, pods, plain, plan, groups)
    limits = Limits(
        args.max_exact_pods, args.max_exact_nodes, args.time_budget_seconds, args.max_emptied_nodes
    )
    out, how = improve(burst, limits)
    moved = {i: plan.nodes[i] for i in np.flatnonzero(out != plan.rows).tolist()}
    # Pods left out go last, so that none takes room meant for a pod after it: those the
    # improvement left out and those the kernel did (an immovable pod placed nowhere
    # may find room the kernel's order gave to others), and gangs none of whose members
    # is placed (a gang is placed as one run, at its first member: a gang with a member
    # placed keeps its place, its members left out placed with it).
    left_out = out < 0
    if any(groups):
        placed_groups = {key for key, row in zip(groups, out.tolist(), strict=True) if row >= 0}
        for i, key in enumerate(groups):
            if key is not None and key in placed_groups:
                left_out[i] = False
    order = [*np.flatnonzero(~left_out).tolist(), *np.flatnonzero(left_out).tolist()]
    classified = taken = None
    if plan.classified is not None:
        encoder, class_of = plan.classified
        at = np.array(order, dtype=np.intp)
        classified = (encoder, class_of[at])
        if _proven(state, burst, out, encoder.classes, class_of, plain):
            taken = out[at]
    seconds = (plan.kernel_seconds, plan.encode_seconds)
    if taken is not None:  # (the placement reads no nominated node: ``taken`` says it)
        return Packed([pods[i] for i in order], order, moved, how, classified, taken, seconds)
    names = state.names
    nominated: list[Mapping[str, Any]] = []
    for pod, row in zip(pods, out.tolist(), strict=True):
        if row < 0:
            nominated.append(pod)
            continue
        status = {**(pod.get("status") or {}), "nominatedNodeName": names[row]}
        nominated.append({**pod, "status": status})
    return Packed([nominated[i] for i in order], order, moved, how, classified, None, seconds)


def _proven(
    state: ClusterState,
    burst: Burst,
    out: npt.NDArray[np.int32],
    classes: Sequence[ClassInfo],
    class_of: npt.NDArray[np.intp],
    profile: Profile,
) -> bool:
    """Whether the kernel, given each pod's node in ``out`` as its nominated one, takes it
    for every pod (the placement then needs no second kernel pass). The kernel's check of
    a nominated node (``_place.pyx``'s ``_nominated_fits``) is the static filters' row,
    the requests' fit and NodePorts, then hard spread constraints and required inter-pod
    terms. Every pod placed, none left out, the placement runs in the plan's queue order.
    The requests: ``valid`` checks that every node's room holds all the pods ``out``
    puts there (so each fits after any of the others) and that each moved pod's static
    row passes. An immovable pod stays on the node the kernel gave it in that order, and
    the moved pods are invisible to it (``_unseen``): no host port, no term of theirs, no
    selector of its terms or constraints matches them, so it passes there again. A moved
    pod's own check is the static row and the fit alone: no port, no term of its own,
    and no required anti-affinity term of a pod in the cluster selects it (such a term
    reaches across its topology domain, beyond the nodes ``_burst`` keeps moves off)."""
    if (out < 0).any() or not valid(burst, out):
        return False
    moving = np.unique(class_of[burst.movable]).tolist()
    index: dict[tuple[str, str], set[int]] = {}
    for cid in moving:
        for pair in classes[cid].labels:
            index.setdefault(pair, set()).add(cid)
    if state.affinity_pods:
        anti = [
            term.selector
            for record in state.pods.values()
            if record.affinity is not None
            for term in carried_terms(record.namespace, record.affinity)
            if term.kind == "anti"
        ]
        if _select_any(anti, index, moving, classes):
            return False
    if burst.movable.all():
        return True
    return _unseen(classes, class_of, burst.movable, profile, index, moving)


def _select_any(
    selectors: Sequence[Selector],
    index: Mapping[tuple[str, str], set[int]],
    moving: list[int],
    classes: Sequence[ClassInfo],
) -> bool:
    """Whether a selector matches the labels of a class in ``moving`` (``index``: those
    classes by label pair). Namespaces are not looked at: a wider test, never narrower."""
    for selector in selectors:
        found = indexed_candidates(selector, index)
        for other in moving if found is None else found:
            if selector_matches(selector, classes[other].label_map):
                return True
    return False


def _unseen(
    classes: Sequence[ClassInfo],
    class_of: npt.NDArray[np.intp],
    movable: npt.NDArray[np.bool_],
    profile: Profile,
    index: Mapping[tuple[str, str], set[int]],
    moving: list[int],
) -> bool:
    """Whether no hard spread constraint and no required inter-pod term of the immovable
    pods' classes selects a class in ``moving`` (label keys added to a selector are
    ignored: a wider selector, never a narrower one)."""
    hard_defaults = _hard_defaults(profile)
    for cid in np.unique(class_of[~movable]).tolist():
        info = classes[cid]
        spec = info.spec
        constraints = spec.get("topologySpreadConstraints") or ()
        if hard_defaults and info.owners and not constraints:
            return False  # the default constraints' selectors come from the workloads
        if info.spread_invalid or len(info.spread_selectors) != len(constraints):
            return False
        selectors = [
            selector
            for constraint, (selector, _) in zip(constraints, info.spread_selectors, strict=True)
            if (constraint.get("whenUnsatisfiable") or "DoNotSchedule") == "DoNotSchedule"
        ]
        if info.affinity is not None:
            if info.affinity_error is not None:
                return False
            for kind in ("podAffinity", "podAntiAffinity"):
                terms = (info.affinity.get(kind) or {}).get(
                    "requiredDuringSchedulingIgnoredDuringExecution"
                )
                selectors.extend(label_selector(t.get("labelSelector")) for t in terms or ())
        if _select_any(selectors, index, moving, classes):
            return False
    return True


def _burst(
    state: ClusterState,
    pods: Sequence[Mapping[str, Any]],
    profile: Profile,
    plan: PlacementResult,
    groups: Sequence[gang.GroupKey | None],
) -> Burst:
    """The arrays ``improve`` reads, from the state and the kernel's ``plan`` (``groups``:
    each pod's gang, None outside one)."""
    if plan.classified is not None:
        encoder, class_of = plan.classified
    else:  # a plan in segments (volumes) keeps no one encoder
        encoder = Encoder(state, profile)
        class_of = encoder.classify(pods).astype(np.intp)
    rows = plan.rows
    classes = encoder.classes
    n_rows = state.rows
    tables = encoder.tables(list(range(len(classes))))
    # The filters' verdict per static row (classes sharing their node-side signature share
    # a row): pods are told apart by that row, not by their class.
    passing = tables.static_reason[:, :n_rows] == 0
    # Nodes with pods carrying pod (anti-)affinity from before: no pod moves there.
    repelling = np.array(state.affinity_pods_on_row[:n_rows], dtype=np.int64) > 0
    absent = np.array([name is None for name in state.names[:n_rows]], dtype=bool)
    passing[:, repelling | absent] = False
    # Only the resources the burst asks for are checked (the others fit any pod of it).
    asked = sorted({r for info in classes for r, amount in info.requests.items() if amount})
    names = [
        state.resource_names[POD_COLUMN],
        *(r for r in asked if r != state.resource_names[POD_COLUMN]),
    ]
    free = np.zeros((n_rows, len(names)), dtype=np.int64)
    for j, name in enumerate(names):
        column = state.resource_index.get(name)
        if column is not None:  # a resource no node has: no room for it anywhere
            free[:, j] = state.allocatable[:n_rows, column] - state.requested[:n_rows, column]
    # A column a node is already over in fails only the pods asking for it (as the fit).
    free = np.maximum(free, 0)
    index = {name: j for j, name in enumerate(names)}
    class_requests = np.zeros((len(classes), len(names)), dtype=np.int64)
    class_requests[:, 0] = 1  # the pod itself, against the node's pod count
    for cid, info in enumerate(classes):
        for res, amount in info.requests.items():
            if amount:
                class_requests[cid, index[res]] = amount
    hard_defaults = _hard_defaults(profile)
    movable_class = np.array([_movable_class(info, hard_defaults) for info in classes], bool)
    movable = movable_class[class_of] & np.array(
        [key is None and _unnominated(pod) for pod, key in zip(pods, groups, strict=True)],
        dtype=bool,
    )
    level = np.array([(pod.get("spec") or {}).get("priority") or 0 for pod in pods], np.int64)
    return Burst(
        class_requests[class_of],
        free,
        rows.astype(np.int32),
        np.asarray(tables.c_static, dtype=np.intp)[class_of],
        passing,
        movable,
        level,
        state.requested[:n_rows, POD_COLUMN] > 0,
    )


def _hard_defaults(profile: Profile) -> bool:
    """Whether the profile's default spread constraints filter (owned pods get them)."""
    return any(c.when_unsatisfiable == "DoNotSchedule" for c in profile.spread.default_constraints)


def _movable_class(info: ClassInfo, hard_defaults: bool) -> bool:
    """Whether the class's placement depends on nothing but the node and its requests
    (``hard_defaults``: ``_hard_defaults`` of the profile)."""
    spec = info.spec
    if info.ports or info.affinity is not None or _hard_spread(spec):
        return False
    if info.class_filters or info.prefilter_message or info.error or info.score_error:
        return False
    if spec.get("resourceClaims") or slots.COLUMN in info.requests:
        # (a counted run of claim pods asks for free devices as a column: core/dra/slots.py)
        return False
    if any(set(volume) - _PLAIN_VOLUMES for volume in spec.get("volumes") or ()):
        return False
    return not (hard_defaults and info.owners)


def _may_move(pod: Mapping[str, Any]) -> bool:
    """What ``_movable_class`` and ``_movable_pod`` will say, read off the pod alone (before
    any planning: a burst none of whose pods may move is placed as without the plugin)."""
    spec = pod.get("spec") or {}
    affinity = spec.get("affinity") or {}
    if affinity.get("podAffinity") or affinity.get("podAntiAffinity"):
        return False
    if _hard_spread(spec) or spec.get("resourceClaims"):
        return False
    if any(set(volume) - _PLAIN_VOLUMES for volume in spec.get("volumes") or ()):
        return False
    for container in (*(spec.get("containers") or ()), *(spec.get("initContainers") or ())):
        if any(port.get("hostPort") for port in container.get("ports") or ()):
            return False
    return _movable_pod(pod)


def _hard_spread(spec: Mapping[str, Any]) -> bool:
    """Whether a spread constraint of the pod filters (ScheduleAnyway ones only score)."""
    # A plain loop: this runs per class and per pod of a burst.
    for c in spec.get("topologySpreadConstraints") or ():
        if (c.get("whenUnsatisfiable") or "DoNotSchedule") == "DoNotSchedule":
            return True
    return False


def _movable_pod(pod: Mapping[str, Any]) -> bool:
    """Gang members and pods nominated by a preemption stay where the kernel put them."""
    return gang.group_of(pod) is None and _unnominated(pod)


def _unnominated(pod: Mapping[str, Any]) -> bool:
    return not (pod.get("status") or {}).get("nominatedNodeName")

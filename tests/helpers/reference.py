"""Holding place_burst's result to the plain-Python reference scheduler (core/reference).

The reference replays a burst in order and, for each pod, asks which of its best nodes
the kernel took (``choose``); the kernel's choice must be among them with the same total
score, and the kernel's count of tied nodes must be theirs (it draws among them, as
kube-scheduler does). Then every pod the kernel left out must fail in the reference the
same way.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from kubesalvo.core.pernode.volumes import VolumeBinding
from kubesalvo.core.place import PlacementResult, plan
from kubesalvo.core.profile import Profile
from kubesalvo.core.reference import ReferenceScheduler
from kubesalvo.core.state import ClusterState
from kubesalvo.core.volumes import StorageObjects


def kernel_choices(
    result: PlacementResult, burst: Sequence[Mapping[str, Any]]
) -> Callable[[Any], str | None]:
    """The reference's ``choose``: the kernel's node for each pod (a rolled-back gang
    member's tentative one), checked against the reference's best nodes and score."""
    by_key = {
        f"{p['metadata']['namespace']}/{p['metadata']['name']}": i for i, p in enumerate(burst)
    }

    def choose(ref_result: Any) -> str | None:
        i = by_key[ref_result.pod]
        if result.rolled_back[i]:
            assert result.tentative[i] in ref_result.best_nodes
            return result.tentative[i]
        assert result.nodes[i] is not None, (
            f"{ref_result.pod}: kernel placed nowhere, reference best "
            f"{sorted(ref_result.best_nodes)} ({result.messages[i]})"
        )
        assert result.nodes[i] in ref_result.best_nodes, (ref_result.pod, ref_result.best_nodes)
        if ref_result.score is not None:  # None: one node feasible and a PreScore erred
            assert result.scores[i] == ref_result.score, (ref_result.pod, ref_result.score)
            assert result.ties[i] == len(ref_result.best_nodes), (
                ref_result.pod,
                result.ties[i],
                sorted(ref_result.best_nodes),
            )
        return result.nodes[i]

    return choose


def assert_same_outcomes(result: PlacementResult, expected: Sequence[Any]) -> None:
    """Each pod placed where the reference placed it, or left out with its message,
    reasons and rollback."""
    for i, ref in enumerate(expected):
        if ref.node is None:
            assert result.nodes[i] is None, (ref.pod, ref.message)
            assert result.messages[i] == ref.message
            assert bool(result.rolled_back[i]) == ref.rolled_back
            if not ref.rolled_back:
                assert result.reason_counts[i] == ref.reason_counts
        else:
            assert result.nodes[i] == ref.node


def state_of(
    fleet: Sequence[Mapping[str, Any]], bound: Sequence[Mapping[str, Any]] = ()
) -> ClusterState:
    """A ClusterState of the nodes and the pods bound to them."""
    state = ClusterState()
    for node in fleet:
        state.add_node(node)
    for pod in bound:
        state.add_pod(pod)
    return state


def assert_plan_matches_reference(
    fleet: Sequence[Mapping[str, Any]], burst: Sequence[Mapping[str, Any]]
) -> None:
    """``plan`` of the burst on a state of the fleet (default profile) places every pod
    where the reference does, with its score, and leaves out the same pods with the same
    messages."""
    result = plan(state_of(fleet), burst)
    expected = ReferenceScheduler(fleet).place_burst(burst, choose=kernel_choices(result, burst))
    assert [r.node for r in expected] == result.nodes
    assert [r.message for r in expected] == result.messages


def plan_with_volumes_matches_reference(
    fleet: Sequence[Mapping[str, Any]],
    storage: StorageObjects,
    burst: Sequence[Mapping[str, Any]],
    profile: Profile | None = None,
    *,
    same_volumes: bool = True,
) -> tuple[ClusterState, PlacementResult, list[Any]]:
    """``plan`` of the burst (``profile``: the default one if None) on a state of the
    fleet holding ``storage``, held to the reference replaying it on a copy of the
    storage: each pod on the kernel's node, the volumes the kernel gave it there assumed
    for the next pods (the kernel's Reserve, replayed), and, with ``same_volumes``, those
    volumes the ones the reference's VolumeBinding picks on that node. Asserts the same
    outcomes; returns the state, the kernel's result and the reference's."""
    state = state_of(fleet)
    state.storage = storage
    reference = ReferenceScheduler(fleet, profile=profile)
    reference.storage = storage.copy()
    result = plan(state, burst, profile)
    check = kernel_choices(result, burst)
    position = {f"ns/{p['metadata']['name']}": i for i, p in enumerate(burst)}

    def choose(ref_result: Any) -> str | None:
        node = check(ref_result)
        i = position[ref_result.pod]
        # no list at all when the burst has no claim to bind
        chosen = result.volume_bindings[i] if result.volume_bindings else []
        if same_volumes:
            plugin = VolumeBinding(burst[i], reference.storage)
            assert dict(chosen) == plugin.delayed_choice(reference.snapshot.by_name[node])
        for claim_key, pv in chosen:
            if pv:
                reference.storage.assumed[pv] = claim_key
        return node

    expected = reference.place_burst(burst, choose=choose)
    assert_same_outcomes(result, expected)
    return state, result, expected

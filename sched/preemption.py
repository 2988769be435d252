"""Carrying out a preemption decision on the API server (DefaultPreemption's PostFilter).

``core/preemption.py`` decides (which node, which victims); this module writes it, in
kube-scheduler v1.34's order (its synchronous ``prepareCandidate`` path):

1. Each victim, concurrently: read it (a victim gone or replaced by a pod of the same
   name is left alone), the status condition DisruptionTarget=True, reason
   ``PreemptionByScheduler``, message "<schedulerName>: preempting to accommodate a higher
   priority pod" (it tells the victim's owner why, and tells later cycles that the pod is
   terminating because of a preemption), then a DELETE with a UID precondition, so that a
   pod re-created under the same name is never hit. A victim already gone (404, or 409:
   its UID changed) counts as done and gets no event, as upstream. Then the ``Preempted``
   event on the victim, related to the preemptor: "Preempted by pod <uid> on node <node>".
2. Lower-priority pods nominated to the chosen node lose their nomination
   (``status.nominatedNodeName`` cleared), so that they look for room elsewhere.
3. The preemptor's ``status.nominatedNodeName`` is set to the node (or cleared, when
   preemption cannot help and the pod had a nomination).

Transient errors (429, 5xx, transport) are retried a few times; any other failure stops
the preemption and is reported, and the preemptor's nomination is left unchanged.

How the scheduling cycle uses it, for a pod that fit no node, when the profile runs
DefaultPreemption as a postFilter (``ProfileConfig.preemption`` gives its args)::

    decision, outcome = await preempt_pod(
        client, recorder, pod, nodes, pods, pdbs, profile,
        namespaces=namespaces, args=PreemptionArgs(a.min_candidate_nodes_percentage,
        a.min_candidate_nodes_absolute), scheduler_name=profile_name,
    )

(API dicts, as ``informers.to_api_dict`` makes them; the decision runs in a worker thread,
as it may take a second on a large cluster), or the two steps on their own::

    decision = Preemptor(nodes, pods, pdbs, profile, namespaces=..., args=...).preempt(pod)
    outcome = await execute(client, recorder, pod, decision, scheduler_name=profile_name)

then, as for any unschedulable pod: the FailedScheduling event and the PodScheduled=False
condition with ``names.fit_error_message(n, reasons, postfilter_message=decision.message)``
(no suffix when a node was found), and the pod goes back to the queue as unschedulable.
The victims' deletions (pod Delete events) re-activate it; its next cycle should try the
nominated node first and count it there, and lower-priority pods should leave the
nominated pod's room free. ``outcome.error`` set means the attempt failed: back off.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import msgspec

from kubesalvo.core.preemption import (
    DISRUPTION_TARGET,
    PREEMPTION_BY_SCHEDULER,
    PreemptionArgs,
    PreemptionDecision,
    Preemptor,
)
from kubesalvo.core.profile import Profile
from kubesalvo.sched.client import ApiClient, ApiError, is_transient
from kubesalvo.sched.events import EventRecorder, ObjectRef, rfc3339

__all__ = ["PreemptionOutcome", "disruption_message", "execute", "preempt_pod"]

log = logging.getLogger(__name__)

Pod = Mapping[str, Any]
T = TypeVar("T")

ATTEMPTS = 3
RETRY_DELAY = 0.2  # seconds before the first retry; doubled each time


def disruption_message(scheduler_name: str) -> str:
    """The DisruptionTarget condition's message kube-scheduler writes on a victim."""
    return f"{scheduler_name}: preempting to accommodate a higher priority pod"


@dataclass
class PreemptionOutcome:
    """What ``execute`` did; pods are named ``namespace/name``."""

    node: str | None
    evicted: list[str] = field(default_factory=list)  # deleted by us now
    already_gone: list[str] = field(default_factory=list)  # 404 or replaced (409)
    cleared: list[str] = field(default_factory=list)  # lower-priority nominations dropped
    nominated_node_name: str | None = None  # what was written (None: not touched)
    error: str | None = None


def _meta(pod: Pod) -> Mapping[str, Any]:
    return pod.get("metadata") or {}


def _ref(pod: Pod) -> ObjectRef:
    meta = _meta(pod)
    return ObjectRef(meta.get("namespace") or "default", meta.get("name", ""), meta.get("uid", ""))


def _path(pod: Pod) -> str:
    ref = _ref(pod)
    return f"/api/v1/namespaces/{ref.namespace}/pods/{ref.name}"


def _label(pod: Pod) -> str:
    ref = _ref(pod)
    return f"{ref.namespace}/{ref.name}"


async def _retrying(call: Callable[[], Awaitable[T]]) -> T:
    delay = RETRY_DELAY
    for attempt in range(ATTEMPTS):
        try:
            return await call()
        except Exception as error:  # narrowed by is_transient below
            if attempt == ATTEMPTS - 1 or not is_transient(error):
                raise
            wait = error.retry_after if isinstance(error, ApiError) else None
            await asyncio.sleep(wait if wait is not None else delay)
            delay *= 2
    raise AssertionError("unreachable: the loop returns or raises")


def _has_disruption_condition(pod: Pod) -> bool:
    for condition in (pod.get("status") or {}).get("conditions") or ():
        if condition.get("type") == DISRUPTION_TARGET:
            return (
                condition.get("status") == "True"
                and condition.get("reason") == PREEMPTION_BY_SCHEDULER
            )
    return False


async def _patch_status(client: ApiClient, pod: Pod, status: Mapping[str, Any]) -> None:
    """A strategic merge patch of the pod's status (a UID in a patch is not a precondition:
    the API server refuses it as a change of an immutable field)."""
    body = {"status": status}
    await _retrying(
        lambda: client.request(
            "PATCH",
            _path(pod) + "/status",
            body=msgspec.json.encode(body),
            content_type="application/strategic-merge-patch+json",
        )
    )


async def _current(client: ApiClient, pod: Pod) -> Pod | None:
    """The pod as stored now, or None when it is gone or was replaced (another UID)."""
    try:
        response = await _retrying(lambda: client.request("GET", _path(pod)))
    except ApiError as error:
        if error.status == 404:
            return None
        raise
    stored: dict[str, Any] = msgspec.json.decode(response.body)
    if (stored.get("metadata") or {}).get("uid") != _meta(pod).get("uid"):
        return None
    return stored


async def _evict(
    client: ApiClient,
    recorder: EventRecorder | None,
    victim: Pod,
    preemptor: Pod,
    node: str,
    scheduler_name: str,
    outcome: PreemptionOutcome,
) -> None:
    try:
        # Read it first: the condition must not land on a pod re-created under its name.
        stored = await _current(client, victim)
        if stored is None:
            outcome.already_gone.append(_label(victim))
            return
        if not _has_disruption_condition(stored):
            condition = {
                "type": DISRUPTION_TARGET,
                "status": "True",
                "reason": PREEMPTION_BY_SCHEDULER,
                "message": disruption_message(scheduler_name),
                "lastTransitionTime": rfc3339(time.time()),
            }
            await _patch_status(client, victim, {"conditions": [condition]})
        options = {
            "apiVersion": "v1",
            "kind": "DeleteOptions",
            "preconditions": {"uid": _meta(victim).get("uid")},
        }
        await _retrying(
            lambda: client.request("DELETE", _path(victim), body=msgspec.json.encode(options))
        )
    except ApiError as error:
        if error.status in (404, 409):
            outcome.already_gone.append(_label(victim))
            return
        raise
    outcome.evicted.append(_label(victim))
    log.info("preempted %s on %s for %s", _label(victim), node, _label(preemptor))
    if recorder is not None:
        recorder.preempted(_ref(victim), _ref(preemptor), node, scheduler_name)


async def _set_nomination(client: ApiClient, pod: Pod, node: str) -> None:
    # JSON null removes the field in a strategic merge patch: that is how it is cleared.
    await _patch_status(client, pod, {"nominatedNodeName": node or None})


async def execute(
    client: ApiClient,
    recorder: EventRecorder | None,
    preemptor: Pod,
    decision: PreemptionDecision,
    *,
    scheduler_name: str,
) -> PreemptionOutcome:
    """Write ``decision`` for ``preemptor`` (see the module docstring); never raises
    ApiError: a failure is reported in ``outcome.error``."""
    outcome = PreemptionOutcome(decision.node)
    try:
        if decision.node is not None:
            await _evict_all(client, recorder, preemptor, decision, scheduler_name, outcome)
            await _clear(client, decision.clear_nominated, outcome)
        current = (preemptor.get("status") or {}).get("nominatedNodeName") or ""
        wanted = decision.nominated_node_name
        if wanted is not None and wanted != current:
            await _set_nomination(client, preemptor, wanted)
            outcome.nominated_node_name = wanted
    except ApiError as error:
        if error.status == 404 and outcome.error is None:
            outcome.error = f"pod {_label(preemptor)} is gone"
        else:
            outcome.error = str(error)
    except Exception as error:
        if not is_transient(error):
            raise
        outcome.error = f"{type(error).__name__}: {error}"
    return outcome


async def _evict_all(
    client: ApiClient,
    recorder: EventRecorder | None,
    preemptor: Pod,
    decision: PreemptionDecision,
    scheduler_name: str,
    outcome: PreemptionOutcome,
) -> None:
    assert decision.node is not None
    results = await asyncio.gather(
        *(
            _evict(client, recorder, v, preemptor, decision.node, scheduler_name, outcome)
            for v in decision.victims
        ),
        return_exceptions=True,
    )
    for result in results:
        if isinstance(result, BaseException):
            raise result


async def _clear(client: ApiClient, pods: Sequence[Pod], outcome: PreemptionOutcome) -> None:
    for pod in pods:
        if not (pod.get("status") or {}).get("nominatedNodeName"):
            continue
        try:
            await _set_nomination(client, pod, "")
        except ApiError as error:
            # Not critical (upstream only logs it): the pod may be gone or bound meanwhile.
            log.warning("could not clear the nomination of %s: %s", _label(pod), error)
            continue
        outcome.cleared.append(_label(pod))


async def preempt_pod(
    client: ApiClient,
    recorder: EventRecorder | None,
    pod: Pod,
    nodes: Sequence[Mapping[str, Any]],
    pods: Sequence[Pod],
    pdbs: Sequence[Mapping[str, Any]],
    profile: Profile | None,
    *,
    scheduler_name: str,
    namespaces: Sequence[Mapping[str, Any]] = (),
    args: PreemptionArgs | None = None,
    offset: int = 0,
) -> tuple[PreemptionDecision, PreemptionOutcome]:
    """Decide for ``pod`` (in a worker thread) and write the decision; the inputs must not
    change while the decision is made (hand over lists of dicts made for it)."""

    def decide() -> PreemptionDecision:
        preemptor = Preemptor(nodes, pods, pdbs, profile, namespaces=namespaces, args=args)
        return preemptor.preempt(pod, offset=offset)

    decision = await asyncio.to_thread(decide)
    outcome = await execute(client, recorder, pod, decision, scheduler_name=scheduler_name)
    return decision, outcome

"""The binder's request body and how it reads the API server's conflicts.

Binding itself (retries, 429, exactly-once through faults) is tested against the real
API server in tests/sched/test_binder_integration.py.
"""

from __future__ import annotations

import msgspec

from kubesalvo.sched.binder import BindOutcome, binding_body, classify_conflict
from kubesalvo.sched.client import ApiError


def test_binding_body_is_a_v1_binding_with_a_uid_precondition():
    body = msgspec.json.decode(binding_body("team-a", "web-1", "uid-123", "node-7"))
    assert body == {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": "web-1", "namespace": "team-a", "uid": "uid-123"},
        "target": {"apiVersion": "v1", "kind": "Node", "name": "node-7"},
    }


def _conflict(message: str) -> ApiError:
    return ApiError(
        409, msgspec.json.encode({"reason": "Conflict", "message": message, "code": 409})
    )


def test_a_conflict_naming_our_own_node_means_an_earlier_attempt_bound_the_pod():
    error = _conflict(
        'Operation cannot be fulfilled on pods/binding "web-1": pod web-1 is already '
        'assigned to node "node-7"'
    )
    assert classify_conflict(error, "node-7") is BindOutcome.BOUND


def test_a_pod_bound_to_another_node_is_forgotten():
    error = _conflict(
        'Operation cannot be fulfilled on pods/binding "web-1": pod web-1 is already '
        'assigned to node "node-3"'
    )
    assert classify_conflict(error, "node-7") is BindOutcome.FORGOTTEN


def test_a_uid_precondition_failure_is_forgotten():
    error = _conflict(
        'Operation cannot be fulfilled on pods "web-1": StorageError: invalid object, '
        "Precondition failed: UID in precondition: old, UID in object meta: new"
    )
    assert classify_conflict(error, "node-7") is BindOutcome.FORGOTTEN

"""scheduler-plugins' PodGroup objects (``scheduling.x-k8s.io/v1alpha1``), when installed.

Only what Coscheduling reads (``spec.minMember``, ``spec.minResources``,
``spec.scheduleTimeoutSeconds``) and the status fields kubesalvo writes (``phase``,
``scheduled``, ``running``, ``scheduleStartTime``) are decoded. :func:`served` asks the
API server once at start whether the CRD is there; without it no informer runs and gangs
take their minimum from the ``minAvailable`` label.
"""

from __future__ import annotations

from typing import Any

import msgspec

from kubesalvo.sched.client import ApiClient, ApiError
from kubesalvo.sched.informers.models import ObjectMeta, _Api
from kubesalvo.sched.informers.watch import Resource

__all__ = ["PODGROUPS", "PodGroup", "PodGroupStatus", "served", "status_path"]

GROUP_VERSION = "/apis/scheduling.x-k8s.io/v1alpha1"


class PodGroupSpec(_Api):
    min_member: int = 0
    # int-or-string quantities: "4", 4 or "500m"
    min_resources: dict[str, Any] = msgspec.field(default_factory=dict)
    schedule_timeout_seconds: int | None = None


class PodGroupStatus(_Api):
    phase: str = ""
    scheduled: int = 0
    running: int = 0
    schedule_start_time: str = ""


class PodGroup(_Api):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: PodGroupSpec = msgspec.field(default_factory=PodGroupSpec)
    status: PodGroupStatus = msgspec.field(default_factory=PodGroupStatus)


PODGROUPS = Resource("podgroups", f"{GROUP_VERSION}/podgroups", PodGroup)


def status_path(namespace: str, name: str) -> str:
    return f"{GROUP_VERSION}/namespaces/{namespace}/podgroups/{name}/status"


async def served(client: ApiClient) -> bool:
    """Whether the API server serves PodGroups (the CRD is installed and established)."""
    try:
        await client.request("GET", PODGROUPS.path, params={"limit": "1"})
    except ApiError as error:
        if error.status == 404:
            return False
        raise
    return True

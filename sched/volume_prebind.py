"""VolumeBinding's PreBind and Unreserve in the runtime: the reserved volumes written.

For a pod the burst placed with unbound WaitForFirstConsumer claims, Reserve chose a
volume per claim, or provisioning on the node (``StorageObjects.reserved``, filled by
core/volume_burst.py). Before the pod's binding is POSTed, as kube-scheduler's
BindPodVolumes does:

* each chosen volume gets the claim as its ``claimRef`` (and the
  ``pv.kubernetes.io/bound-by-controller`` annotation), for the PV controller to finish
  the binding;
* each claim to provision gets the ``volume.kubernetes.io/selected-node`` annotation, for
  the provisioner;
* then it waits, polling each second as upstream, until every claim is bound
  (``volumeName`` and ``pv.kubernetes.io/bind-completed``), at most
  ``bindTimeoutSeconds``; past that the PreBind fails with upstream's text
  (``binding volumes: context deadline exceeded``) and the pod is retried.

The writes are merge patches (upstream sends updates of the whole objects; the API
side effects are the same). The wait runs in the binding cycle's PreBind, outside the
binder's in-flight bound, so other pods' binds go on meanwhile. Unreserve drops the
pod's reservation and the volumes assumed for it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from typing import Any

from kubesalvo.core import volumes
from kubesalvo.core.plugins import names
from kubesalvo.sched.cache import SchedulerCache
from kubesalvo.sched.client import ApiClient
from kubesalvo.sched.queue import QueuedPod

__all__ = ["VolumePreBind"]

log = logging.getLogger(__name__)

ANN_BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"
MERGE_PATCH = "application/merge-patch+json"
POLL_SECONDS = 1.0


class VolumePreBind:
    """VolumeBinding's PreBind plugin (``sched/cycle/prebind.PreBindPlugin``)."""

    name = names.VOLUME_BINDING

    def __init__(
        self, cache: SchedulerCache, client: ApiClient, timeout: float, poll: float = POLL_SECONDS
    ) -> None:
        self.cache = cache
        self.client = client
        self.timeout = timeout
        self.poll = poll

    @property
    def storage(self) -> volumes.StorageObjects:
        return self.cache.state.storage

    def wants(self, qp: QueuedPod, node: str) -> bool:
        return bool(self.storage.reserved.get(qp.key))

    async def pre_bind(self, qp: QueuedPod, node: str) -> None:
        chosen = self.storage.reserved.get(qp.key) or []
        for claim_key, pv_name in chosen:
            claim = self._claim(claim_key)
            if pv_name:
                await self._bind_volume(pv_name, claim)
            else:
                await self._select_node(claim, node)
        deadline = time.monotonic() + self.timeout
        while not all(self._bound(claim_key, pv) for claim_key, pv in chosen):
            if time.monotonic() >= deadline:
                raise TimeoutError("binding volumes: context deadline exceeded")
            await asyncio.sleep(self.poll)
        self.storage.reserved.pop(qp.key, None)

    def unreserve(self, qp: QueuedPod, node: str) -> None:
        chosen = self.storage.reserved.pop(qp.key, None) or []
        names_ = {pv for _, pv in chosen if pv}

        def forget() -> None:
            for pv in names_:
                self.storage.assumed.pop(pv, None)

        self.cache.run_unfrozen(forget)

    # --- the writes -----------------------------------------------------------------------

    def _claim(self, claim_key: str) -> volumes.Object:
        namespace, _, name = claim_key.partition("/")
        claim = self.storage.claim(namespace, name)
        if claim is None:
            raise RuntimeError(f'persistentvolumeclaim "{name}" not found')
        return claim

    async def _bind_volume(self, pv_name: str, claim: volumes.Object) -> None:
        meta = claim.get("metadata") or {}
        claim_ref = {
            "kind": "PersistentVolumeClaim",
            "namespace": meta.get("namespace") or "default",
            "name": meta.get("name") or "",
            "uid": meta.get("uid") or "",
            "apiVersion": "v1",
            "resourceVersion": meta.get("resourceVersion") or "",
        }
        body: dict[str, Any] = {
            "metadata": {"annotations": {ANN_BOUND_BY_CONTROLLER: "yes"}},
            "spec": {"claimRef": claim_ref},
        }
        await self.client.request(
            "PATCH",
            f"/api/v1/persistentvolumes/{pv_name}",
            body=json.dumps(body).encode(),
            content_type=MERGE_PATCH,
        )

    async def _select_node(self, claim: volumes.Object, node: str) -> None:
        meta = claim.get("metadata") or {}
        body = {"metadata": {"annotations": {volumes.ANN_SELECTED_NODE: node}}}
        path = (
            f"/api/v1/namespaces/{meta.get('namespace') or 'default'}"
            f"/persistentvolumeclaims/{meta.get('name') or ''}"
        )
        await self.client.request(
            "PATCH", path, body=json.dumps(body).encode(), content_type=MERGE_PATCH
        )

    def _bound(self, claim_key: str, pv_name: str) -> bool:
        namespace, _, name = claim_key.partition("/")
        claim = self.storage.claim(namespace, name)
        if claim is None or not volumes.is_fully_bound(claim):
            return False
        return not pv_name or (claim.get("spec") or {}).get("volumeName") == pv_name

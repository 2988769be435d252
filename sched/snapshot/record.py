"""``kubesalvo snapshot -o FILE``: record a live cluster for ``kubesalvo simulate --snapshot``.

Lists nodes, pods, namespaces and PriorityClasses, the Services,
ReplicationControllers, ReplicaSets and StatefulSets whose selectors give pods their
default spread constraints, the volume filters' objects (claims, volumes, classes,
CSI nodes, drivers and capacities) and DynamicResources' (DeviceClasses, ResourceClaims,
ResourceSlices) (paginated, read-only: nothing in the cluster changes), cuts
each object down to what scheduling reads (``kubesalvo.core.snapshot``) and writes the
msgpack file atomically (``kubesalvo.sched.snapshot.files``). Finished pods are left out; bound
pods are the running load and unbound ones the pending burst, so ``simulate`` answers
"where would these go" for the real cluster without touching it.

A workload resource the credentials may not list (403) does not stop the recording: a
warning on stderr names it, the snapshot records it under ``omitted`` and holds the
other workloads, and ``simulate`` warns again when it replays the file. The same holds for
the storage and device kinds, and for resource.k8s.io/v1 on a server that does not serve
it (404).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any

import msgspec

from kubesalvo.core.snapshot import Snapshot, from_objects
from kubesalvo.sched.client import (
    ApiClient,
    ApiError,
    Credentials,
    CredentialsError,
    load_credentials,
)
from kubesalvo.sched.informers.models import object_list, to_api_dict
from kubesalvo.sched.informers.resources import DRA_RESOURCES, RESOURCECLAIMTEMPLATES
from kubesalvo.sched.informers.storage import STORAGE_RESOURCES
from kubesalvo.sched.informers.watch import Resource
from kubesalvo.sched.informers.workloads import WORKLOAD_KINDS
from kubesalvo.sched.snapshot import files as snapshot

__all__ = ["configure", "list_all", "list_workloads", "main", "take"]

FORBIDDEN = 403
NOT_FOUND = 404

PAGE_SIZE = 500
COLLECTIONS = {
    "nodes": "/api/v1/nodes",
    "pods": "/api/v1/pods",
    "namespaces": "/api/v1/namespaces",
    "priorityclasses": "/apis/scheduling.k8s.io/v1/priorityclasses",
}


async def list_all(client: ApiClient, path: str) -> list[dict[str, Any]]:
    """Every object of a collection, page by page, as API JSON dicts."""
    items: list[dict[str, Any]] = []
    params = {"limit": str(PAGE_SIZE)}
    while True:
        body = msgspec.json.decode((await client.request("GET", path, params=params)).body)
        items.extend(body.get("items") or [])
        token = (body.get("metadata") or {}).get("continue")
        if not token:
            return items
        params = {"limit": str(PAGE_SIZE), "continue": token}


async def list_workloads(client: ApiClient, resource: Resource[Any], kind: str) -> list[Any]:
    """Every object of a workload resource, page by page, decoded as the informers do
    (only identity and selector: pod templates are skipped, not materialised), with the
    ``kind`` list items lack."""
    decoder = msgspec.json.Decoder(object_list(resource.type))
    items: list[Any] = []
    params = {"limit": str(PAGE_SIZE)}
    while True:
        page = decoder.decode((await client.request("GET", resource.path, params=params)).body)
        for item in page.items:
            obj = to_api_dict(item)
            obj["kind"] = kind
            items.append(obj)
        if not page.metadata.continue_:
            return items
        params = {"limit": str(PAGE_SIZE), "continue": page.metadata.continue_}


async def list_decoded(client: ApiClient, resource: Resource[Any]) -> list[dict[str, Any]]:
    """Every object of a resource, page by page, cut down as its informer decodes it."""
    decoder = msgspec.json.Decoder(object_list(resource.type))
    items: list[dict[str, Any]] = []
    params = {"limit": str(PAGE_SIZE)}
    while True:
        page = decoder.decode((await client.request("GET", resource.path, params=params)).body)
        items.extend(to_api_dict(item) for item in page.items)
        if not page.metadata.continue_:
            return items
        params = {"limit": str(PAGE_SIZE), "continue": page.metadata.continue_}


async def take(client: ApiClient) -> Snapshot:
    """A snapshot of the cluster ``client`` talks to; a workload resource it may not list
    is warned about on stderr and named in ``Snapshot.omitted``."""
    listed = {kind: await list_all(client, path) for kind, path in COLLECTIONS.items()}
    workloads: list[dict[str, Any]] = []
    omitted: list[str] = []
    for resource, kind in WORKLOAD_KINDS:
        try:
            workloads.extend(await list_workloads(client, resource, kind))
        except ApiError as error:
            if error.status != FORBIDDEN:
                raise
            omitted.append(resource.plural)
            print(
                f"kubesalvo snapshot: warning: cannot list {resource.plural} ({error}); "
                f"the snapshot is recorded without them, so default topology spreading "
                f"in simulate misses their selectors",
                file=sys.stderr,
            )
    storage = await _list_kinds(
        client, STORAGE_RESOURCES, (FORBIDDEN,), omitted, "places pods with volumes without them"
    )
    # resource.k8s.io/v1 may not be served at all (404) on an older or gated cluster.
    devices = await _list_kinds(
        client,
        (*DRA_RESOURCES, RESOURCECLAIMTEMPLATES),
        (FORBIDDEN, NOT_FOUND),
        omitted,
        "leaves pods with device claims pending",
    )
    return from_objects(
        listed["nodes"],
        listed["pods"],
        listed["namespaces"],
        listed["priorityclasses"],
        workloads,
        storage=storage,
        devices=devices,
        omitted=omitted,
        source=client.server,
    )


async def _list_kinds(
    client: ApiClient,
    resources: tuple[Resource[Any], ...],
    tolerated: tuple[int, ...],
    omitted: list[str],
    consequence: str,
) -> dict[str, list[dict[str, Any]]]:
    """Each resource's objects by plural; one answered with a ``tolerated`` status is
    warned about on stderr (what simulate then does without it: ``consequence``) and
    named in ``omitted``."""
    found: dict[str, list[dict[str, Any]]] = {}
    for resource in resources:
        try:
            found[resource.plural] = await list_decoded(client, resource)
        except ApiError as error:
            if error.status not in tolerated:
                raise
            omitted.append(resource.plural)
            print(
                f"kubesalvo snapshot: warning: cannot list {resource.plural} ({error}); "
                f"the snapshot is recorded without them, so simulate {consequence}",
                file=sys.stderr,
            )
    return found


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-o", "--output", required=True, metavar="FILE", help="snapshot file")
    parser.add_argument(
        "--kubeconfig",
        help="kubeconfig file (default: $KUBECONFIG, ~/.kube/config, in-cluster credentials)",
    )


async def _take(credentials: Credentials) -> Snapshot:
    async with ApiClient(credentials, qps=0) as client:
        return await take(client)


def main(args: argparse.Namespace) -> int:
    try:
        credentials = load_credentials(args.kubeconfig)
    except CredentialsError as error:
        print(f"kubesalvo snapshot: cannot load credentials from {error}", file=sys.stderr)
        return 1
    try:
        taken = asyncio.run(_take(credentials))
    except (ApiError, OSError) as error:
        print(f"kubesalvo snapshot: {error}", file=sys.stderr)
        return 1
    snapshot.save(args.output, taken)
    pending = len(taken.pending_pods())
    line = (
        f"{args.output}: {len(taken.nodes)} nodes, {len(taken.pods) - pending} bound pods, "
        f"{pending} pending pods, {len(taken.namespaces)} namespaces, "
        f"{len(taken.workloads)} workloads, "
        f"{sum(len(objects) for objects in taken.storage.values())} storage objects, "
        f"{sum(len(objects) for objects in taken.devices.values())} device objects"
    )
    if taken.omitted:
        line += f" (without {', '.join(taken.omitted)}: forbidden or not served)"
    print(line)
    return 0

"""``kubesalvo snapshot -o FILE``: record a live cluster for ``kubesalvo simulate --snapshot``.

Lists nodes, pods, namespaces and PriorityClasses (paginated, read-only: nothing in the
cluster changes), cuts each object down to what scheduling reads
(``kubesalvo.core.snapshot``) and writes the msgpack file atomically
(``kubesalvo.sched.snapshot``). Finished pods are left out; bound pods are the running
load and unbound ones the pending burst, so ``simulate`` answers "where would these go"
for the real cluster without touching it.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any

import msgspec

from kubesalvo.core.snapshot import Snapshot, from_objects
from kubesalvo.sched import snapshot
from kubesalvo.sched.client import ApiClient, ApiError, Credentials, load_credentials

__all__ = ["configure", "list_all", "main", "take"]

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


async def take(client: ApiClient) -> Snapshot:
    """A snapshot of the cluster ``client`` talks to."""
    listed = {kind: await list_all(client, path) for kind, path in COLLECTIONS.items()}
    return from_objects(
        listed["nodes"],
        listed["pods"],
        listed["namespaces"],
        listed["priorityclasses"],
        source=client.server,
    )


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-o", "--output", required=True, metavar="FILE", help="snapshot file")
    parser.add_argument("--kubeconfig", help="kubeconfig file (default: in-cluster credentials)")


async def _take(credentials: Credentials) -> Snapshot:
    async with ApiClient(credentials, qps=0) as client:
        return await take(client)


def main(args: argparse.Namespace) -> int:
    try:
        credentials = load_credentials(args.kubeconfig)
    except Exception as error:
        where = args.kubeconfig or "in-cluster service account"
        print(f"kubesalvo snapshot: cannot load credentials ({where}): {error}", file=sys.stderr)
        return 1
    try:
        taken = asyncio.run(_take(credentials))
    except (ApiError, OSError) as error:
        print(f"kubesalvo snapshot: {error}", file=sys.stderr)
        return 1
    snapshot.save(args.output, taken)
    pending = len(taken.pending_pods())
    print(
        f"{args.output}: {len(taken.nodes)} nodes, {len(taken.pods) - pending} bound pods, "
        f"{pending} pending pods, {len(taken.namespaces)} namespaces"
    )
    return 0

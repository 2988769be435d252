"""The bind verb on the real API server, through the fault proxy: a bind whose answer
was lost is recognised on retry and never repeated; the pod's UID guards a recreated pod;
the state counts the pod at once."""

from __future__ import annotations

import msgspec
import pytest

from kubesalvo.sched.extender import wire
from kubesalvo.sched.extender.service import Extender
from tests.helpers.extender import config, post

pytestmark = pytest.mark.integration


@pytest.fixture
def nodes(control_plane) -> list[str]:
    return [node["metadata"]["name"] for node in control_plane.add_nodes(2)]


async def node_of(api, namespace: str, name: str) -> str:
    response = await api.request("GET", f"/api/v1/namespaces/{namespace}/pods/{name}")
    return msgspec.json.decode(response.body)["spec"].get("nodeName", "")


def bind_args(created, node: str, uid: str | None = None) -> dict[str, str]:
    meta = created["metadata"]
    return {
        "PodName": meta["name"],
        "PodNamespace": meta["namespace"],
        "PodUID": uid if uid is not None else meta["uid"],
        "Node": node,
    }


async def test_a_bind_whose_answer_was_lost_is_recognised_not_repeated(
    proxied_api, proxy, api, namespace, create_pod, nodes
):
    cfg = config([{"name": "congestion"}])
    extender = Extender(cfg, proxied_api, "127.0.0.1", 0)
    await extender.start()
    try:
        await extender.synced(timeout=60)
        first = await create_pod(namespace, "lost-answer")
        # The API server binds the pod, and the extender sees a 503 instead of the answer.
        proxy.faults.bind_errors = 1
        proxy.faults.bind_error_after_forward = True
        status, body = await post(extender.url, "bind", bind_args(first, nodes[0]))
        assert status == 200 and body == {"Error": ""}
        # kube-scheduler retrying the same bind (its own timeout fired) is told it worked.
        status, body = await post(extender.url, "bind", bind_args(first, nodes[0]))
        assert status == 200 and body == {"Error": ""}
        # Asking for another node now is refused: the pod is already bound.
        _, body = await post(extender.url, "bind", bind_args(first, nodes[1]))
        assert "forgotten" in body["Error"]
        path = f"/api/v1/namespaces/{namespace}/pods/lost-answer/binding"
        assert dict(proxy.stats.binds_accepted) == {path: 1}
        assert await node_of(api, namespace, "lost-answer") == nodes[0]
        # The state counted the pod on its node at once.
        row = extender.feed.state.row_of[nodes[0]]
        assert first["metadata"]["uid"] in extender.feed.state.pods_on_row[row]
    finally:
        await extender.shutdown()


async def test_a_bind_for_a_recreated_pod_is_refused_by_its_uid(api, namespace, create_pod, nodes):
    cfg = config([{"name": "example"}])
    extender = Extender(cfg, api, "127.0.0.1", 0)
    await extender.start()
    try:
        created = await create_pod(namespace, "reborn")
        _, body = await post(extender.url, "bind", bind_args(created, nodes[0], uid="stale-uid"))
        assert body["Error"].startswith(f"binding {namespace}/reborn to {nodes[0]} forgotten")
        assert await node_of(api, namespace, "reborn") == ""
    finally:
        await extender.shutdown()


def test_binding_result_has_kube_schedulers_error_field():
    assert wire.encode(wire.BindingResult()) == b'{"Error":""}'

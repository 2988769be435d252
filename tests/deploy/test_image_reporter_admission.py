"""deploy/overlays/image-reporter's ValidatingAdmissionPolicy on the real API server.

The reporter's ServiceAccount holds the overlay's ClusterRole (`patch` on every node); its
token is a pod-bound one, as the kubelet mounts it, for a pod on node A, so the API server
names node A in the user's extra `authentication.kubernetes.io/node-name`. With the policy
applied, the real agent (`ImageReporter`) writes node A's annotation; the same token
cannot touch node B, nor any other field of node A, and a token bound to no pod (no node
claim) can patch nothing. The DaemonSet's pod runs as a non-root user in the socket's group.
"""

from __future__ import annotations

import asyncio
import json
import logging
import secrets
import time
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kubesalvo.core.plugins.image_locality import ANNOTATION, ReportedImage, decode_annotation
from kubesalvo.sched.client import ApiClient, ApiError, load_credentials
from kubesalvo.sched.image_reporter.agent import ImageReporter, Outcome
from tests.helpers.deploy import (
    DEPLOY,
    bind_rules,
    delete_cluster_rbac,
    find,
    kubectl,
    render,
    token_kubeconfig,
)
from tests.sched.test_app import kwok_node

pytestmark = pytest.mark.integration

OVERLAY = DEPLOY / "overlays" / "image-reporter"
ACCOUNT = "kubesalvo-image-reporter"
NODE_NAME_EXTRA = "authentication.kubernetes.io/node-name"
IMAGES = [ReportedImage(("registry.k8s.io/pause:3.10",), (), 320_000)]


@pytest.fixture(scope="module")
def rendered(control_plane) -> list[dict[str, Any]]:
    return render(control_plane, OVERLAY)


@pytest.fixture(scope="module")
def policy(control_plane, rendered) -> Iterator[None]:
    """The overlay's policy and its binding, applied for real (cluster-wide)."""
    objects = [o for o in rendered if o["kind"].startswith("ValidatingAdmissionPolicy")]
    assert {o["kind"] for o in objects} == {
        "ValidatingAdmissionPolicy",
        "ValidatingAdmissionPolicyBinding",
    }
    path = Path(control_plane.dir) / f"policy-{secrets.token_hex(3)}.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}))
    kubectl(control_plane, "apply", "--server-side", "--validate=strict", "-f", str(path))
    yield
    kubectl(control_plane, "delete", "-f", str(path), "--ignore-not-found")


@pytest.fixture
def nodes(control_plane) -> Iterator[tuple[str, str]]:
    pool = f"vap-{secrets.token_hex(3)}"
    names = (f"{pool}-a", f"{pool}-b")
    control_plane.create([kwok_node(name, pool) for name in names])
    yield names

    async def delete(client: Any) -> None:
        for name in names:
            await client.request("DELETE", f"/api/v1/nodes/{name}")

    control_plane.call(delete)


@pytest.fixture
def reporter_account(control_plane, namespace, rendered) -> Iterator[str]:
    """The reporter's ServiceAccount in ``namespace`` with the overlay's ClusterRole rules."""
    rules = find(rendered, "ClusterRole", "kubesalvo:image-reporter")["rules"]
    control_plane.create([{"apiVersion": "v1", "kind": "ServiceAccount",
                           "metadata": {"name": ACCOUNT, "namespace": namespace}}])  # fmt: skip
    role = bind_rules(control_plane, namespace, ACCOUNT, rules)
    yield ACCOUNT
    delete_cluster_rbac(control_plane, role)


def pod_bound_token(control_plane: Any, namespace: str, node: str) -> str:
    """A token of the reporter's account bound to a pod on ``node``, as the kubelet's
    projected volume gets it (TokenRequest with the pod as bound object)."""
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"reporter-{node}", "namespace": namespace},
        "spec": {
            "nodeName": node,
            "serviceAccountName": ACCOUNT,
            "automountServiceAccountToken": False,
            "tolerations": [{"operator": "Exists"}],
            "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}],
        },
    }

    async def ask(client: Any) -> str:
        created = await client.request("POST", f"/api/v1/namespaces/{namespace}/pods", pod)
        request = {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenRequest",
            "spec": {
                "expirationSeconds": 3600,
                "boundObjectRef": {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "name": created["metadata"]["name"],
                    "uid": created["metadata"]["uid"],
                },
            },
        }
        path = f"/api/v1/namespaces/{namespace}/serviceaccounts/{ACCOUNT}/token"
        return str((await client.request("POST", path, request))["status"]["token"])

    token: str = control_plane.call(ask)
    return token


def unbound_token(control_plane: Any, namespace: str) -> str:
    async def ask(client: Any) -> str:
        path = f"/api/v1/namespaces/{namespace}/serviceaccounts/{ACCOUNT}/token"
        request = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                   "spec": {"expirationSeconds": 3600}}  # fmt: skip
        return str((await client.request("POST", path, request))["status"]["token"])

    token: str = control_plane.call(ask)
    return token


def as_token(control_plane: Any, token: str, tmp_path: Path, fn: Any) -> Any:
    """``await fn(client)`` with a client that authenticates with ``token``."""
    credentials = load_credentials(
        str(token_kubeconfig(control_plane, token, tmp_path / f"{secrets.token_hex(3)}.yaml"))
    )

    async def run() -> Any:
        client = ApiClient(credentials)
        try:
            return await fn(client)
        finally:
            await client.close()

    return asyncio.run(run())


def merge_patch(node: str, patch: dict[str, Any]) -> Any:
    async def send(client: Any) -> Any:
        path = "/api/v1/nodes/" + urllib.parse.quote(node, safe="")
        body = json.dumps(patch).encode()
        return await client.request(
            "PATCH", path, body=body, content_type="application/merge-patch+json"
        )

    return send


def refused(control_plane: Any, token: str, tmp_path: Path, node: str, patch: Any) -> ApiError:
    with pytest.raises(ApiError) as info:
        as_token(control_plane, token, tmp_path, merge_patch(node, patch))
    assert info.value.status == 403, info.value
    return info.value


def wait_enforced(control_plane: Any, token: str, tmp_path: Path, other: str) -> None:
    """The API server compiles a new policy shortly after it is created: wait for it to
    refuse a patch of another node (which RBAC alone allows)."""
    deadline = time.monotonic() + 60
    while True:
        try:
            as_token(control_plane, token, tmp_path, merge_patch(other, {"metadata": {
                "annotations": {ANNOTATION: "{}"}}}))  # fmt: skip
        except ApiError as error:
            if error.status == 403 and "kubesalvo-image-reporter" in str(error):
                return
            raise
        assert time.monotonic() < deadline, "the policy is not enforced after 60 s"
        time.sleep(0.5)


def test_the_reporter_writes_its_own_nodes_annotation_and_nothing_else(
    control_plane, policy, nodes, namespace, reporter_account, tmp_path, caplog
):
    own, other = nodes
    token = pod_bound_token(control_plane, namespace, own)

    async def who(client: Any) -> Any:
        review = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
        path = "/apis/authentication.k8s.io/v1/selfsubjectreviews"
        answer = await client.request("POST", path, body=json.dumps(review).encode())
        return json.loads(answer.body)

    user = as_token(control_plane, token, tmp_path, who)["status"]["userInfo"]
    assert user["extra"][NODE_NAME_EXTRA] == [own]
    wait_enforced(control_plane, token, tmp_path, other)

    async def report(client: Any) -> Outcome:
        async def lister() -> list[ReportedImage]:
            return IMAGES

        return await ImageReporter(client, own, lister).step()

    assert as_token(control_plane, token, tmp_path, report) is Outcome.WRITTEN
    node = json.loads(kubectl(control_plane, "get", f"node/{own}", "-o=json"))
    assert decode_annotation(node["metadata"]["annotations"][ANNOTATION]).images == tuple(IMAGES)

    # The agent for another node, with this node's token: refused, logged, retried later.
    async def report_other(client: Any) -> Outcome:
        async def lister() -> list[ReportedImage]:
            return IMAGES

        return await ImageReporter(client, other, lister).step()

    with caplog.at_level(logging.WARNING, logger="kubesalvo.image_reporter"):
        assert as_token(control_plane, token, tmp_path, report_other) is Outcome.PATCH_FAILED
    assert "--node must be spec.nodeName" in caplog.text
    error = refused(control_plane, token, tmp_path, other, {"metadata": {"annotations": {
        ANNOTATION: "{}"}}})  # fmt: skip
    assert f"the image reporter of node {own} may not update node {other}" in str(error)
    # Its own node: no other annotation, no label, no taint.
    for patch in (
        {"metadata": {"annotations": {"example.com/other": "x"}}},
        {"metadata": {"labels": {"kubesalvo.io/test-pool": "moved"}}},
        {"spec": {"taints": [{"key": "k", "value": "v", "effect": "NoSchedule"}]}},
        {"spec": {"unschedulable": True}},
    ):
        error = refused(control_plane, token, tmp_path, own, patch)
        assert "may only change the annotation kubesalvo.io/images" in str(error), patch
    after = json.loads(kubectl(control_plane, "get", f"node/{own}", "-o=json"))
    assert after["metadata"]["labels"] == node["metadata"]["labels"]
    assert not after["spec"].get("taints") and not after["spec"].get("unschedulable")


def test_a_token_that_names_no_node_patches_no_node(
    control_plane, policy, nodes, namespace, reporter_account, tmp_path
):
    own, other = nodes
    wait_enforced(control_plane, pod_bound_token(control_plane, namespace, own), tmp_path, other)
    token = unbound_token(control_plane, namespace)
    error = refused(control_plane, token, tmp_path, own, {"metadata": {"annotations": {
        ANNOTATION: "{}"}}})  # fmt: skip
    assert "its token names no node" in str(error)


def test_other_users_are_not_limited_by_the_policy(control_plane, policy, nodes):
    own, _ = nodes
    kubectl(control_plane, "label", f"node/{own}", "example.com/admin=yes")


def test_the_reporter_runs_as_a_non_root_user_in_the_sockets_group(rendered):
    daemonset = find(rendered, "DaemonSet", "kubesalvo-image-reporter")
    pod = daemonset["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] == 65532
    # containerd's and CRI-O's default socket: root:root, mode 0660.
    assert pod["securityContext"]["supplementalGroups"] == [0]
    (container,) = pod["containers"]
    assert container["securityContext"]["runAsNonRoot"] is True
    assert "runAsUser" not in container["securityContext"]

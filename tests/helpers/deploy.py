"""The in-cluster side of tests: deploy/'s manifests rendered by the control plane's
kubectl, ServiceAccounts with real tokens (TokenRequest API), RBAC objects, and
kubeconfigs that carry such a token instead of the admin's."""

from __future__ import annotations

import base64
import json
import secrets
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"
PROMETHEUS_OPERATOR = "github.com/prometheus-operator/prometheus-operator"
PROMETHEUS_OPERATOR_VERSION = "v0.85.0"
OPERATOR_CRDS = "example/prometheus-operator-crd"


def kubectl(control_plane: Any, *args: str, timeout: float = 120.0) -> str:
    """Runs the control plane's kubectl (built by ``kubesalvo cluster build``) as admin."""
    argv = [str(control_plane.kubectl), f"--kubeconfig={control_plane.kubeconfig}", *args]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
    if done.returncode != 0:
        raise AssertionError(f"kubectl {' '.join(args)} failed:\n{done.stderr}{done.stdout}")
    return done.stdout


def render(control_plane: Any, folder: Path) -> list[dict[str, Any]]:
    """The objects ``kubectl kustomize folder`` renders."""
    text = kubectl(control_plane, "kustomize", str(folder))
    return [doc for doc in yaml.safe_load_all(text) if doc]


def find(objects: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    matches = [o for o in objects if o["kind"] == kind and o["metadata"]["name"] == name]
    assert len(matches) == 1, f"{len(matches)} {kind} named {name}"
    return matches[0]


def service_account_token(control_plane: Any, namespace: str, name: str) -> str:
    """A token of the ServiceAccount ``namespace/name`` (created if missing), from the
    TokenRequest API, as the kubelet would mount it."""
    control_plane.create(
        [
            {
                "apiVersion": "v1",
                "kind": "ServiceAccount",
                "metadata": {"name": name, "namespace": namespace},
            }
        ],
        exist_ok=True,
    )
    request = {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenRequest",
        "spec": {"expirationSeconds": 3600},
    }

    async def ask(client: Any) -> str:
        path = f"/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token"
        answer = await client.request("POST", path, request)
        return str(answer["status"]["token"])

    token: str = control_plane.call(ask)
    return token


def token_kubeconfig(control_plane: Any, token: str, path: Path) -> Path:
    """A kubeconfig for the control plane that authenticates with ``token``."""
    ca = base64.b64encode(control_plane.ca_file.read_bytes()).decode()
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "local",
                "cluster": {"server": control_plane.server, "certificate-authority-data": ca},
            }
        ],
        "users": [{"name": "sa", "user": {"token": token}}],
        "contexts": [{"name": "sa", "context": {"cluster": "local", "user": "sa"}}],
        "current-context": "sa",
    }
    path.write_text(yaml.safe_dump(config))
    path.chmod(0o600)
    return path


def bind_rules(
    control_plane: Any,
    namespace: str,
    account: str,
    cluster_rules: list[dict[str, Any]],
    namespaced_rules: list[dict[str, Any]] = (),  # type: ignore[assignment]
    name: str | None = None,
) -> str:
    """Grants ``namespace/account`` exactly these rules: a fresh ClusterRole (bound
    cluster-wide; named ``name``, else a random name) and, when given, a Role in
    ``namespace``. Returns the ClusterRole's name; delete it with ``delete_cluster_rbac``
    (namespaces take their Roles with them)."""
    name = name or f"kubesalvo-test-{secrets.token_hex(4)}"
    subject = [{"kind": "ServiceAccount", "name": account, "namespace": namespace}]
    rbac = "rbac.authorization.k8s.io"
    objects: list[dict[str, Any]] = [
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": name},
            "rules": cluster_rules,
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": name},
            "roleRef": {"apiGroup": rbac, "kind": "ClusterRole", "name": name},
            "subjects": subject,
        },
    ]
    if namespaced_rules:
        objects += [
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "Role",
                "metadata": {"name": name, "namespace": namespace},
                "rules": list(namespaced_rules),
            },
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "RoleBinding",
                "metadata": {"name": name, "namespace": namespace},
                "roleRef": {"apiGroup": rbac, "kind": "Role", "name": name},
                "subjects": subject,
            },
        ]
    control_plane.create(objects)
    return name


def delete_cluster_rbac(control_plane: Any, name: str) -> None:
    async def delete(client: Any) -> None:
        for kind in ("clusterrolebindings", "clusterroles"):
            try:
                await client.request("DELETE", f"/apis/rbac.authorization.k8s.io/v1/{kind}/{name}")
            except Exception as error:
                if getattr(error, "status", None) != 404:
                    raise

    control_plane.call(delete)


# --- a pool of nodes of a test's own ------------------------------------------------------


def node_pool(control_plane: Any, pool: str, count: int, cpu: str = "1") -> list[str]:
    """``count`` Ready kwok nodes that only pods tolerating ``pool``'s taint can use (see
    ``pool_pod``), so other tests' pods and these never mix. Returns their names."""
    from kubesalvo.sched.cluster.nodes import add_nodes
    from tests.sched.cycle.test_burst import own_node

    nodes = [own_node(f"{pool}-{i}", pool, cpu) for i in range(count)]
    control_plane.call(lambda client: add_nodes(client, nodes, 120.0))
    return [node["metadata"]["name"] for node in nodes]


def pool_pod(
    namespace: str, name: str, pool: str, cpu: str = "10m", priority_class: str | None = None
) -> dict[str, Any]:
    """A pod for kubesalvo that may only go to ``pool``'s nodes."""
    from tests.sched.cycle.test_burst import TAINT_KEY, toleration

    spec: dict[str, Any] = {
        "schedulerName": "kubesalvo",
        "nodeSelector": {TAINT_KEY: pool},
        "tolerations": toleration(pool),
        "containers": [
            {
                "name": "c",
                "image": "registry.k8s.io/pause:3.10",
                "resources": {"requests": {"cpu": cpu, "memory": "16Mi"}},
            }
        ],
    }
    if priority_class:
        spec["priorityClassName"] = priority_class
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


def get_pod(control_plane: Any, namespace: str, name: str) -> dict[str, Any] | None:
    async def read(client: Any) -> dict[str, Any] | None:
        try:
            pod: dict[str, Any] = await client.request(
                "GET", f"/api/v1/namespaces/{namespace}/pods/{name}"
            )
            return pod
        except Exception as error:
            if getattr(error, "status", None) == 404:
                return None
            raise

    result: dict[str, Any] | None = control_plane.call(read)
    return result


# --- the scheduler's rules, as deploy/base grants them ------------------------------------


def scheduler_rules(control_plane: Any) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The rules of deploy/base's ClusterRole kubesalvo:scheduler and of its leader-election
    Role, as kubectl renders them."""
    objects = render(control_plane, DEPLOY / "base")
    cluster = find(objects, "ClusterRole", "kubesalvo:scheduler")["rules"]
    lease = find(objects, "Role", "kubesalvo:leader-election")["rules"]
    return cluster, lease


def write_service_account(root: Path, token: str, ca: bytes, namespace: str) -> Path:
    """The files a pod's service account mount holds, under ``root`` (as /)."""
    folder = root / "var/run/secrets/kubernetes.io/serviceaccount"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "token").write_text(token)
    (folder / "ca.crt").write_bytes(ca)
    (folder / "namespace").write_text(namespace)
    return folder


def install_monitoring_crds(
    control_plane: Any, plurals: tuple[str, ...], field_manager: str, *flags: str
) -> None:
    """The Prometheus Operator's monitoring.coreos.com CRDs named by ``plurals``, from its
    Go module, installed (server-side apply: they are too large for client-side apply;
    ``flags`` go with it) and Established."""
    go = shutil.which("go")
    if go is None:
        pytest.fail("`go` is needed to fetch the Prometheus Operator's CRDs from its module")
    done = subprocess.run(
        [go, "mod", "download", "-json", f"{PROMETHEUS_OPERATOR}@{PROMETHEUS_OPERATOR_VERSION}"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        cwd="/",
    )
    assert done.returncode == 0, done.stderr + done.stdout
    folder = Path(json.loads(done.stdout)["Dir"]) / OPERATOR_CRDS
    for plural in plurals:
        crd = folder / f"monitoring.coreos.com_{plural}.yaml"
        kubectl(control_plane, "apply", "--server-side", f"--field-manager={field_manager}",
                *flags, "-f", str(crd))  # fmt: skip
    # Polled rather than `kubectl wait`, and read as JSON rather than with a jsonpath
    # filter: a CRD read before the API server wrote its first status has no conditions
    # at all (null), on which both fail at once.
    deadline = time.monotonic() + 60
    for plural in plurals:
        while True:
            crd = json.loads(
                kubectl(control_plane, "get", f"crd/{plural}.monitoring.coreos.com", "-o=json")
            )
            conditions = crd.get("status", {}).get("conditions") or []
            if any(c["type"] == "Established" and c["status"] == "True" for c in conditions):
                break
            assert time.monotonic() < deadline, f"{plural} is not Established in 60 s"
            time.sleep(0.5)

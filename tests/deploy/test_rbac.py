"""Least privilege, proven on the real API server.

``kubesalvo run`` authenticates with a real ServiceAccount token (TokenRequest API) that
holds exactly the rules of deploy/base's ClusterRole ``kubesalvo:scheduler`` and Role
``kubesalvo:leader-election`` (as kubectl renders them), and does its whole job: it
becomes leader, binds a pod, writes the PodScheduled=False condition and the
FailedScheduling event of a pod that fits nowhere, preempts a lower-priority pod, spreads
by default without warnings, reads a PodGroup and writes its status, allocates a pod's
resource claim, and serves /metrics
over HTTPS to a token allowed to read it. Then each rule is removed in turn and the run
shows what breaks without it, so that no rule is spare; a rule added to the manifests
without a case here fails the test.
"""

from __future__ import annotations

import json
import re
import secrets
import ssl
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from tests.helpers import devices as dra
from tests.helpers.deploy import (
    DEPLOY,
    bind_rules,
    delete_cluster_rbac,
    find,
    get_pod,
    node_pool,
    pool_pod,
    render,
    scheduler_rules,
    service_account_token,
    token_kubeconfig,
)
from tests.helpers.objects import priority_class
from tests.helpers.podgroups import install_pod_group_crd, pod_group, pod_group_status
from tests.sched.test_app import SchedulerProcess, free_port, pod_scheduled

pytestmark = [pytest.mark.integration, pytest.mark.slow]

LOW, HIGH = "kubesalvo-rbac-low", "kubesalvo-rbac-high"
LEASE = "kubesalvo"  # the name deploy/base's Role grants get/update on
CONFIG = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
podInitialBackoffSeconds: 1
podMaxBackoffSeconds: 2
leaderElection:
  leaderElect: true
  resourceName: {lease}
  resourceNamespace: {namespace}
  leaseDuration: 4s
  renewDeadline: 3s
  retryPeriod: 1s
"""


def rule_key(rule: dict[str, Any]) -> str:
    """A rule as `group/resources[names]:verbs`, e.g. `core/pods/binding:create`."""
    group = ",".join(rule.get("apiGroups") or []) or "core"
    names = f"[{','.join(rule['resourceNames'])}]" if rule.get("resourceNames") else ""
    return f"{group}/{','.join(rule['resources'])}{names}:{','.join(rule['verbs'])}"


# --- a scheduler run under a given set of rules --------------------------------------------


@dataclass
class Run:
    control_plane: Any
    namespace: str
    pool: str
    process: SchedulerProcess
    secure_port: int
    reader_token: str
    cluster_objects: list[dict[str, Any]]  # DeviceClasses and ResourceSlices, deleted after

    # reading the scheduler -----------------------------------------------------------------

    def log_has(self, pattern: str) -> bool:
        return re.search(pattern, self.process.log.read_text(errors="replace")) is not None

    def readyz(self) -> str:
        url = f"http://127.0.0.1:{self.process.metrics_port}/readyz?verbose"
        return self.process.get(url)[1].decode()

    def metric(self, metric: str, **labels: str) -> float:
        return self.process.metric(metric, **labels)

    def https(self, path: str, token: str | None) -> int:
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        request = urllib.request.Request(f"https://127.0.0.1:{self.secure_port}{path}")
        if token:
            request.add_header("Authorization", f"Bearer {token}")
        try:
            with urllib.request.urlopen(request, timeout=30, context=context) as response:
                return int(response.status)
        except urllib.error.HTTPError as error:
            return int(error.code)

    # the cluster ---------------------------------------------------------------------------

    def create(
        self,
        name: str,
        cpu: str = "10m",
        priority: str | None = None,
        labels: dict[str, str] | None = None,
    ) -> None:
        pod = pool_pod(self.namespace, name, self.pool, cpu, priority)
        pod["metadata"]["labels"] = labels or {}
        self.control_plane.create([pod])

    def gpu_pod(self, name: str) -> None:
        """A pod claiming one device of a driver publishing 2 on the pool's node."""
        driver = dra.Driver(f"{self.pool}.example.com", gpus=2)
        self.cluster_objects += [driver.device_class("gpu"), driver.slice(f"{self.pool}-0", "a100")]
        self.control_plane.create(self.cluster_objects[-2:])
        spec = dra.claim_spec(dra.request("gpu", f"gpu.{driver.name}"))
        pod = pool_pod(self.namespace, name, self.pool)
        pod["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": name}]
        self.control_plane.create([dra.claim(self.namespace, name, spec)])
        self.control_plane.create([pod])

    def claim_status(self, name: str) -> dict[str, Any]:
        path = f"{dra.PATH}/namespaces/{self.namespace}/resourceclaims/{name}"
        claim: dict[str, Any] = self.control_plane.call(lambda c: c.request("GET", path))
        return claim.get("status") or {}

    def pod_group_member(self, name: str) -> None:
        """A PodGroup of one member, and the member."""
        self.control_plane.create([pod_group(self.namespace, "gang", minMember=1)])
        self.create(name, labels={"scheduling.x-k8s.io/pod-group": "gang"})

    def stateful(self, name: str) -> None:
        """A pod whose claim waits for its first consumer, and a free local volume for it
        on the pool's node."""
        node = f"{self.pool}-0"
        storage_class = {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": {"name": f"local-{self.pool}"},
            "provisioner": "kubernetes.io/no-provisioner",
            "volumeBindingMode": "WaitForFirstConsumer",
        }
        term = {
            "matchExpressions": [
                {"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}
            ]
        }
        volume = {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": f"pv-{self.pool}"},
            "spec": {
                "capacity": {"storage": "1Gi"},
                "accessModes": ["ReadWriteOnce"],
                "storageClassName": f"local-{self.pool}",
                "local": {"path": "/mnt/data"},
                "nodeAffinity": {"required": {"nodeSelectorTerms": [term]}},
            },
        }
        claim = {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": name, "namespace": self.namespace},
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "1Gi"}},
                "storageClassName": f"local-{self.pool}",
            },
        }
        self.control_plane.create([storage_class, volume, claim], exist_ok=True)
        pod = pool_pod(self.namespace, name, self.pool)
        pod["spec"]["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": name}}]
        self.control_plane.create([pod])

    def pod_group_status(self) -> dict[str, Any]:
        return pod_group_status(self.control_plane, self.namespace, "gang")

    def pod(self, name: str) -> dict[str, Any] | None:
        return get_pod(self.control_plane, self.namespace, name)

    def node_of(self, name: str) -> str:
        pod = self.pod(name)
        return str(((pod or {}).get("spec") or {}).get("nodeName") or "")

    def failed_scheduling_events(self, name: str) -> list[dict[str, Any]]:
        path = f"/apis/events.k8s.io/v1/namespaces/{self.namespace}/events"

        async def read(client: Any) -> list[dict[str, Any]]:
            items = (await client.request("GET", path)).get("items") or []
            return [
                e
                for e in items
                if e.get("reason") == "FailedScheduling" and e["regarding"]["name"] == name
            ]

        found: list[dict[str, Any]] = self.control_plane.call(read)
        return found

    def lease_exists(self) -> bool:
        path = f"/apis/coordination.k8s.io/v1/namespaces/{self.namespace}/leases/{LEASE}"

        async def read(client: Any) -> bool:
            try:
                await client.request("GET", path)
                return True
            except Exception as error:
                if getattr(error, "status", None) == 404:
                    return False
                raise

        exists: bool = self.control_plane.call(read)
        return exists

    def wait(self, what: str, predicate: Callable[[], bool], timeout: float = 40.0) -> None:
        deadline = time.monotonic() + timeout
        while not predicate():
            if self.process.process.poll() is not None:
                tail = self.process.tail()
                pytest.fail(f"the scheduler exited while waiting for {what}:\n{tail}")
            if time.monotonic() > deadline:
                pytest.fail(f"{what}: not within {timeout:.0f}s\n{self.process.tail(60)}")
            time.sleep(0.25)


@pytest.fixture(scope="module")
def manifest_rules(control_plane) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    control_plane.create([priority_class(LOW, 100), priority_class(HIGH, 1000)], exist_ok=True)
    return scheduler_rules(control_plane)


@pytest.fixture
def run_with(control_plane, namespace, tmp_path, manifest_rules) -> Iterator[Any]:
    """``run_with(cluster_rules, lease_rules)``: a ``kubesalvo run`` authenticated as a
    ServiceAccount holding exactly these rules, on a one-node pool of its own, with its
    Lease in the test's namespace; its HTTPS port is open (self-signed), and a second
    account, `prometheus`, may get /metrics."""
    roles: list[str] = []
    processes: list[SchedulerProcess] = []
    cluster_objects: list[dict[str, Any]] = []
    objects = render(control_plane, DEPLOY / "base")
    reader_rules = find(objects, "ClusterRole", "kubesalvo:metrics-reader")["rules"]

    def start(cluster_rules: list[dict[str, Any]], lease_rules: list[dict[str, Any]]) -> Run:
        roles.append(bind_rules(control_plane, namespace, "kubesalvo", cluster_rules, lease_rules))
        roles.append(bind_rules(control_plane, namespace, "prometheus", reader_rules))
        token = service_account_token(control_plane, namespace, "kubesalvo")
        reader = service_account_token(control_plane, namespace, "prometheus")
        kubeconfig = token_kubeconfig(control_plane, token, tmp_path / "sa.kubeconfig")
        pool = f"rbac-{secrets.token_hex(3)}"
        node_pool(control_plane, pool, 1, cpu="1")
        secure_port = free_port()
        process = SchedulerProcess(
            tmp_path,
            kubeconfig,
            CONFIG.format(lease=LEASE, namespace=namespace),
            "rbac",
            args=("--bind-address", "127.0.0.1", "--secure-port", str(secure_port)),
        )
        processes.append(process)
        run = Run(control_plane, namespace, pool, process, secure_port, reader, cluster_objects)
        run.wait("the health port", lambda: _answers(process))
        return run

    try:
        yield start
    finally:
        for process in processes:
            process.kill()
        for role in roles:
            delete_cluster_rbac(control_plane, role)
        for obj in cluster_objects:
            plural = {"DeviceClass": "deviceclasses", "ResourceSlice": "resourceslices"}[
                obj["kind"]
            ]
            path = f"{dra.PATH}/{plural}/{obj['metadata']['name']}"
            control_plane.call(lambda c, path=path: c.request("DELETE", path))


def _answers(process: SchedulerProcess) -> bool:
    try:
        return process.get(f"http://127.0.0.1:{process.metrics_port}/livez")[0] == 200
    except OSError:
        return False


# --- everything works with exactly the manifests' rules --------------------------------------


def test_kubesalvo_run_with_the_service_accounts_token_does_its_whole_job(
    control_plane, run_with, manifest_rules
):
    cluster_rules, lease_rules = manifest_rules
    install_pod_group_crd(control_plane)
    run = run_with(cluster_rules, lease_rules)
    run.wait("readiness", lambda: "readyz check passed" in run.readyz())
    run.wait("leadership", lambda: run.metric("leader_election_master_status", name=LEASE) == 1)
    assert run.lease_exists()
    run.create("fits")
    run.create("victim", cpu="700m", priority=LOW)
    run.create("nowhere", cpu="100")
    run.wait("fits bound", lambda: run.node_of("fits") != "")
    run.wait("victim bound", lambda: run.node_of("victim") != "")
    run.wait(
        "PodScheduled=False on nowhere",
        lambda: (pod_scheduled(run.pod("nowhere") or {}) or {}).get("status") == "False",
    )
    run.wait("FailedScheduling of nowhere", lambda: bool(run.failed_scheduling_events("nowhere")))
    run.create("preemptor", cpu="700m", priority=HIGH)
    run.wait("the victim evicted", lambda: run.pod("victim") is None, timeout=60)
    run.wait("preemptor bound", lambda: run.node_of("preemptor") != "", timeout=60)
    run.pod_group_member("member")
    run.wait("member bound", lambda: run.node_of("member") != "")
    run.wait("PodGroup status", lambda: run.pod_group_status().get("scheduled") == 1)
    run.stateful("stateful")
    run.wait("stateful bound with its volume", lambda: run.node_of("stateful") != "", timeout=60)
    run.gpu_pod("gpu")
    run.wait("gpu bound", lambda: run.node_of("gpu") != "")
    assert run.claim_status("gpu")["allocation"]["devices"]["results"][0]["device"] == "gpu-0"
    assert run.https("/metrics", run.reader_token) == 200
    assert run.https("/metrics", None) == 403
    # The shipped metrics-reader role also lets Prometheus read the pod resource families.
    assert run.https("/metrics/resources", run.reader_token) == 200
    assert run.https("/configz", run.reader_token) == 403
    assert run.https("/readyz", None) == 200
    assert not run.log_has(r"\b403\b|Forbidden|cannot list")


# --- and each rule is needed ------------------------------------------------------------------


def informer_never_syncs(resource: str) -> Callable[[Run], None]:
    def check(run: Run) -> None:
        refused = rf"watch of {resource} failed: 403"
        run.wait(f"the {resource} watch refused", lambda: run.log_has(refused))
        assert f"[-]informer-sync-{resource} failed" in run.readyz()

    return check


def no_default_spreading(run: Run) -> None:
    run.wait("the warning", lambda: run.log_has("PodTopologySpread default constraints are off"))
    run.wait("readiness without them", lambda: "readyz check passed" in run.readyz())


def never_leader(run: Run) -> None:
    run.create("fits")
    run.wait("a refused lease call", lambda: run.log_has(r"lease kubesalvo: .*403"))
    # Not ready while the Lease is refused, and the log says what the account needs.
    run.wait("readiness failing", lambda: "[-]leader-election failed" in run.readyz())
    assert run.log_has(r"refused \(403 Forbidden.*the account needs get, create and update")
    time.sleep(3)  # three retry periods: still not the leader
    assert run.metric("leader_election_master_status", name=LEASE) == 0
    assert run.node_of("fits") == ""


def no_binding(run: Run) -> None:
    run.create("fits")
    run.wait("a failed bind", lambda: run.metric("kubesalvo_binds_total", result="failed") >= 1)
    assert run.log_has(r"bind of .*/fits .*403")
    assert run.node_of("fits") == ""


def no_condition(run: Run) -> None:
    run.create("nowhere", cpu="100")
    run.wait("FailedScheduling of nowhere", lambda: bool(run.failed_scheduling_events("nowhere")))
    run.wait(
        "the refused condition", lambda: run.log_has(r"writing condition failed \(1 tries\): 403")
    )
    assert pod_scheduled(run.pod("nowhere") or {}) is None


def no_event(run: Run) -> None:
    run.create("nowhere", cpu="100")
    run.wait(
        "PodScheduled=False on nowhere",
        lambda: (pod_scheduled(run.pod("nowhere") or {}) or {}).get("status") == "False",
    )
    run.wait("the refused event", lambda: run.log_has(r"writing event failed \(1 tries\): 403"))
    assert run.failed_scheduling_events("nowhere") == []


def no_preemption(run: Run) -> None:
    run.create("victim", cpu="700m", priority=LOW)
    run.wait("victim bound", lambda: run.node_of("victim") != "")
    run.create("preemptor", cpu="700m", priority=HIGH)
    failed = r"preemption for .*preemptor failed: .*403"
    run.wait("a failed preemption", lambda: run.log_has(failed))
    assert run.pod("victim") is not None
    assert run.node_of("preemptor") == ""


def no_volume_binding(run: Run) -> None:
    run.stateful("stateful")

    def refused() -> bool:
        events = run.failed_scheduling_events("stateful")
        return any('PreBind plugin "VolumeBinding"' in e.get("note", "") for e in events)

    run.wait("VolumeBinding's PreBind refused", refused, timeout=60)
    assert run.node_of("stateful") == ""


def no_token_review(run: Run) -> None:
    assert run.https("/metrics", run.reader_token) == 401
    assert run.log_has("TokenReview failed: 403")
    assert run.https("/healthz", None) == 200


def no_access_review(run: Run) -> None:
    assert run.https("/metrics", run.reader_token) == 500
    assert run.log_has("SubjectAccessReview failed: 403")
    assert run.https("/healthz", None) == 200


def no_pod_groups(run: Run) -> None:
    run.wait("the warning", lambda: run.log_has("cannot list podgroups \\(RBAC\\)"))
    run.wait("readiness without them", lambda: "readyz check passed" in run.readyz())


def no_pod_group_status(run: Run) -> None:
    run.pod_group_member("member")
    run.wait("member bound", lambda: run.node_of("member") != "")
    refused = r"writing the status of PodGroup .*/gang failed: .*403"
    run.wait("the refused status", lambda: run.log_has(refused))
    assert run.pod_group_status() == {}


def no_claim_writes(run: Run) -> None:
    run.gpu_pod("gpu")
    # (the log is JSON: the plugin's name is quoted with backslashes)
    refused = r"bind of .*/gpu to .* failed: running PreBind plugin .{1,3}DynamicResources.*403"
    run.wait("the refused PreBind", lambda: run.log_has(refused))
    assert run.node_of("gpu") == ""
    assert "allocation" not in run.claim_status("gpu")


CLUSTER_RULES: dict[str, Callable[[Run], None]] = {
    "core/nodes:list,watch": informer_never_syncs("nodes"),
    "core/namespaces:list,watch": informer_never_syncs("namespaces"),
    "core/pods:list,watch": informer_never_syncs("pods"),
    "core/pods/binding:create": no_binding,
    "core/pods/status:patch": no_condition,
    "core/pods:get,delete": no_preemption,
    "events.k8s.io/events:create,patch": no_event,
    "policy/poddisruptionbudgets:list,watch": informer_never_syncs("poddisruptionbudgets"),
    "core/services,replicationcontrollers:list,watch": no_default_spreading,
    "apps/replicasets,statefulsets:list,watch": no_default_spreading,
    "core/persistentvolumeclaims,persistentvolumes:list,watch": informer_never_syncs(
        "persistentvolumeclaims"
    ),
    "storage.k8s.io/storageclasses,csinodes,csidrivers,csistoragecapacities:list,watch": (
        informer_never_syncs("storageclasses")
    ),
    "core/persistentvolumes,persistentvolumeclaims:patch": no_volume_binding,
    "resource.k8s.io/deviceclasses,resourceclaims,resourceslices:list,watch": (
        informer_never_syncs("resourceclaims")
    ),
    "resource.k8s.io/resourceclaims:get,update": no_claim_writes,
    "resource.k8s.io/resourceclaims/status:update,patch": no_claim_writes,
    "authentication.k8s.io/tokenreviews:create": no_token_review,
    "authorization.k8s.io/subjectaccessreviews:create": no_access_review,
    "scheduling.x-k8s.io/podgroups:list,watch": no_pod_groups,
    "scheduling.x-k8s.io/podgroups/status:patch": no_pod_group_status,
}
LEASE_RULES: dict[str, Callable[[Run], None]] = {
    "coordination.k8s.io/leases:create": never_leader,
    f"coordination.k8s.io/leases[{LEASE}]:get,update": never_leader,
}


def test_every_rule_of_the_manifests_has_a_case_here(manifest_rules):
    cluster_rules, lease_rules = manifest_rules
    assert [rule_key(r) for r in cluster_rules] == list(CLUSTER_RULES)
    assert [rule_key(r) for r in lease_rules] == list(LEASE_RULES)


def test_no_rule_grants_secrets_or_wildcards(manifest_rules):
    for rule in [*manifest_rules[0], *manifest_rules[1]]:
        text = json.dumps(rule)
        assert "*" not in text and "secrets" not in text, rule


@pytest.mark.parametrize("removed", [*CLUSTER_RULES, *LEASE_RULES])
def test_without_the_rule_this_breaks(control_plane, run_with, manifest_rules, removed):
    cluster_rules, lease_rules = manifest_rules
    if removed.startswith("scheduling.x-k8s.io/"):
        install_pod_group_crd(control_plane)
    kept_cluster = [r for r in cluster_rules if rule_key(r) != removed]
    kept_lease = [r for r in lease_rules if rule_key(r) != removed]
    assert len(kept_cluster) + len(kept_lease) == len(cluster_rules) + len(lease_rules) - 1
    run = run_with(kept_cluster, kept_lease)
    (CLUSTER_RULES.get(removed) or LEASE_RULES[removed])(run)

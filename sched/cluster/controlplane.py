"""A local control plane: etcd, kube-apiserver, kube-controller-manager and kwok.

Everything lives in one folder: data, keys, logs, the kubeconfig and ``state.json`` (pids
and ports), so that ``cluster down`` - from any process - stops what ``cluster up``
started. Each component's flags are built by a pure function below, which is where the
choices for a throwaway benchmark cluster are written down.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import shutil
import ssl
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import aiohttp
import yaml

from kubesalvo.sched.cluster import build, nodes, pki, processes
from kubesalvo.sched.cluster.api import ApiClient, ApiError, Object
from kubesalvo.sched.cluster.nodes import add_synthetic_nodes

T = TypeVar("T")

SERVICE_CLUSTER_IP_RANGE = "10.96.0.0/16"
# kwok hands out pod IPs from this range: a /24 runs out after 254 running pods.
POD_CIDR = "10.128.0.0/9"
SERVICE_ACCOUNT_ISSUER = "https://kubernetes.default.svc.cluster.local"
# Controllers that act on API objects alone (the HPA controller reads metrics.k8s.io,
# served when the plane runs metrics-server), and the persistent-volume ones a real
# cluster runs beside its scheduler: the binder (claims to PVs; it provisions nothing,
# a test plays the provisioner), attach-detach, PV and PVC protection, ephemeral volumes. Node
# lifecycle, IPAM, routes and cloud controllers need real nodes or a cloud and are left out.
CONTROLLERS = (
    "clusterrole-aggregation-controller",
    "cronjob-controller",
    "daemonset-controller",
    "deployment-controller",
    "disruption-controller",
    # makes the claim <pod>-<volume> of a generic ephemeral volume (VolumeBinding waits for it)
    "ephemeral-volume-controller",
    "garbage-collector-controller",
    "horizontal-pod-autoscaler-controller",
    "job-controller",
    "namespace-controller",
    "persistentvolume-attach-detach-controller",
    "persistentvolume-binder-controller",
    "persistentvolume-protection-controller",
    "persistentvolumeclaim-protection-controller",
    "pod-garbage-collector-controller",
    "replicaset-controller",
    # makes a pod's ResourceClaims from its templates (DynamicResources waits for them)
    "resourceclaim-controller",
    "resourcequota-controller",
    "root-ca-certificate-publisher-controller",
    "serviceaccount-controller",
    "serviceaccount-token-controller",
    "statefulset-controller",
    "ttl-after-finished-controller",
)
KWOK_STAGES = tuple(build.STAGE_FILES)
COMPONENTS = ("etcd", "kube-apiserver", "kube-controller-manager", "kwok")
USAGE_CPU_ANNOTATION = "kwok.x-k8s.io/usage-cpu"
USAGE_MEMORY_ANNOTATION = "kwok.x-k8s.io/usage-memory"
STATE_FILE = "state.json"
# What `up` writes into the folder; `down` removes exactly these.
_OWNED = (
    STATE_FILE,
    "kubeconfig",
    "kwok.yaml",
    "kwok-metrics.yaml",
    "metrics-server",
    "pki",
    "etcd",
    "logs",
    "kcm",
    "schedulers",
)


class StartError(RuntimeError):
    """A component did not start; the message carries the end of its log."""


def default_dir() -> Path:
    return build.cache_root() / "cluster"


@dataclass
class ControlPlane:
    """A running (or starting) control plane and how to reach it."""

    dir: Path
    bin_dir: Path
    ports: dict[str, int]
    token: str
    pids: dict[str, int] = field(default_factory=dict)

    @property
    def server(self) -> str:
        return f"https://{processes.LOOPBACK}:{self.ports['kube-apiserver']}"

    @property
    def kubeconfig(self) -> Path:
        return self.dir / "kubeconfig"

    @property
    def ca_file(self) -> Path:
        return self.dir / "pki" / "ca.crt"

    @property
    def kubernetes(self) -> str:
        """The Kubernetes release of its binaries (``v1.34.4``)."""
        return build.release_of(self.bin_dir)

    @property
    def kubectl(self) -> Path:
        return self.bin_dir / "kubectl"

    def log(self, component: str) -> Path:
        return self.dir / "logs" / f"{component}.log"

    def client(self, concurrency: int = 64) -> ApiClient:
        return ApiClient(self.server, self.token, str(self.ca_file), concurrency)

    def call(self, work: Callable[[ApiClient], Awaitable[T]], concurrency: int = 64) -> T:
        """Runs ``work(client)`` to completion from synchronous code.

        It runs on a worker thread with its own event loop, so this also works from code
        that is itself inside a running loop (an async test). When the waiting thread is
        interrupted (Ctrl-C, or SIGTERM turned into KeyboardInterrupt), the work is
        cancelled on its loop, so that the caller's clean-up does not wait for it to end.
        """
        running: list[tuple[asyncio.AbstractEventLoop, asyncio.Task[Any]]] = []

        async def run() -> T:
            task = asyncio.current_task()
            assert task is not None
            running.append((asyncio.get_running_loop(), task))
            async with self.client(concurrency) as client:
                return await work(client)

        pool = ThreadPoolExecutor(max_workers=1)
        future = pool.submit(asyncio.run, run())
        try:
            return future.result()
        except BaseException:
            if not future.done() and not future.cancel():
                while not running and not future.done():
                    time.sleep(0.01)
                if running and not future.done():
                    loop, task = running[0]
                    with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                        loop.call_soon_threadsafe(task.cancel)
            raise
        finally:
            pool.shutdown(wait=True)

    def create(self, objects: Iterable[Mapping[str, Any]], exist_ok: bool = False) -> int:
        """Creates API objects of any kinds concurrently; returns how many were created."""
        items = list(objects)
        return self.call(lambda client: client.create_all(items, exist_ok))

    def delete(self, objects: Iterable[Mapping[str, Any]]) -> int:
        """Deletes API objects of any kinds, in order (those gone already are skipped);
        returns how many were deleted."""
        items = list(objects)

        async def delete_all(client: ApiClient) -> int:
            return sum([await client.delete(obj) for obj in items])

        return self.call(delete_all)

    def add_nodes(self, count: int, seed: int = 0, timeout: float = 300.0) -> list[Object]:
        """Creates ``count`` synthetic nodes (kept if they exist) and waits until all are
        Ready; returns them."""
        return self.call(lambda client: add_synthetic_nodes(client, count, seed, timeout))

    def save(self) -> None:
        state = {**asdict(self), "dir": str(self.dir), "bin_dir": str(self.bin_dir)}
        tmp = self.dir / f".{STATE_FILE}.tmp"
        tmp.write_text(json.dumps(state, indent=2) + "\n")
        tmp.replace(self.dir / STATE_FILE)

    @classmethod
    def load(cls, folder: Path) -> ControlPlane:
        state = json.loads((folder / STATE_FILE).read_text())
        return cls(
            dir=Path(state["dir"]),
            bin_dir=Path(state["bin_dir"]),
            ports=state["ports"],
            token=state["token"],
            pids=state["pids"],
        )

    def running(self) -> dict[str, bool]:
        return {name: processes.is_running(pid) for name, pid in self.pids.items()}


def etcd_args(cp: ControlPlane) -> list[str]:
    client = f"http://{processes.LOOPBACK}:{cp.ports['etcd']}"
    peer = f"http://{processes.LOOPBACK}:{cp.ports['etcd-peer']}"
    return [
        str(cp.bin_dir / "etcd"),
        "--name=kubesalvo",
        f"--data-dir={cp.dir / 'etcd'}",
        f"--listen-client-urls={client}",
        f"--advertise-client-urls={client}",
        f"--listen-peer-urls={peer}",
        f"--initial-advertise-peer-urls={peer}",
        f"--initial-cluster=kubesalvo={peer}",
        # Throwaway data: skipping fsync makes writes memory-speed.
        "--unsafe-no-fsync",
        "--quota-backend-bytes=8589934592",
        "--log-level=warn",
    ]


def apiserver_args(cp: ControlPlane) -> list[str]:
    pki_dir = cp.dir / "pki"
    return [
        str(cp.bin_dir / "kube-apiserver"),
        f"--etcd-servers=http://{processes.LOOPBACK}:{cp.ports['etcd']}",
        f"--bind-address={processes.LOOPBACK}",
        f"--advertise-address={processes.LOOPBACK}",
        f"--secure-port={cp.ports['kube-apiserver']}",
        f"--cert-dir={pki_dir}",
        f"--tls-cert-file={pki_dir / 'apiserver.crt'}",
        f"--tls-private-key-file={pki_dir / 'apiserver.key'}",
        f"--token-auth-file={pki_dir / 'tokens.csv'}",
        "--authorization-mode=Node,RBAC",
        f"--service-account-issuer={SERVICE_ACCOUNT_ISSUER}",
        f"--service-account-key-file={pki_dir / 'service-account.key'}",
        f"--service-account-signing-key-file={pki_dir / 'service-account.key'}",
        f"--service-cluster-ip-range={SERVICE_CLUSTER_IP_RANGE}",
        # ServiceAccount would need token volumes nobody mounts; TaintNodesByCondition adds
        # a not-ready taint that only the (absent) node lifecycle controller removes.
        "--disable-admission-plugins=ServiceAccount,TaintNodesByCondition",
        # Benchmarks measure schedulers, not server-side throttling: without priority and
        # fairness, in-flight limits of 0 turn the max-in-flight filter off.
        "--enable-priority-and-fairness=false",
        "--max-requests-inflight=0",
        "--max-mutating-requests-inflight=0",
        # Loopback addresses are invalid endpoints, so the `kubernetes` Service gets none.
        "--endpoint-reconciler-type=none",
        "--allow-privileged=true",
        "--profiling=false",
        # The aggregation layer (metrics-server's metrics.k8s.io): kube-apiserver reaches
        # extension API servers with the front-proxy client certificate and passes the
        # requesting user in these headers.
        f"--requestheader-client-ca-file={pki_dir / 'front-proxy-ca.crt'}",
        f"--requestheader-allowed-names={pki.FRONT_PROXY_CLIENT}",
        "--requestheader-username-headers=X-Remote-User",
        "--requestheader-group-headers=X-Remote-Group",
        "--requestheader-extra-headers-prefix=X-Remote-Extra-",
        f"--proxy-client-cert-file={pki_dir / 'front-proxy-client.crt'}",
        f"--proxy-client-key-file={pki_dir / 'front-proxy-client.key'}",
    ]


def secure_serving_args(cp: ControlPlane, port: int, cert_dir: Path) -> list[str]:
    """The flags of a component's own HTTPS endpoint (health, metrics) on loopback, with
    its callers authenticated and authorized through the API server."""
    kubeconfig = str(cp.kubeconfig)
    return [
        f"--authentication-kubeconfig={kubeconfig}",
        f"--authorization-kubeconfig={kubeconfig}",
        # No client certificates exist here: do not look for their CA in kube-system.
        "--authentication-skip-lookup=true",
        f"--bind-address={processes.LOOPBACK}",
        f"--secure-port={port}",
        f"--cert-dir={cert_dir}",
    ]


def controller_manager_args(cp: ControlPlane) -> list[str]:
    pki_dir = cp.dir / "pki"
    return [
        str(cp.bin_dir / "kube-controller-manager"),
        f"--kubeconfig={cp.kubeconfig}",
        *secure_serving_args(cp, cp.ports["kube-controller-manager"], cp.dir / "kcm"),
        "--leader-elect=false",
        f"--controllers={','.join(CONTROLLERS)}",
        f"--service-account-private-key-file={pki_dir / 'service-account.key'}",
        f"--root-ca-file={pki_dir / 'ca.crt'}",
        # The default 20 QPS would make ReplicaSets of thousands of pods take minutes.
        "--kube-api-qps=5000",
        "--kube-api-burst=10000",
        "--concurrent-deployment-syncs=10",
        "--concurrent-replicaset-syncs=10",
        "--concurrent-job-syncs=10",
        "--profiling=false",
    ]


def kwok_config(cp: ControlPlane) -> dict[str, object]:
    return {
        "apiVersion": "config.kwok.x-k8s.io/v1alpha1",
        "kind": "KwokConfiguration",
        "options": {
            "manageAllNodes": True,
            "cidr": POD_CIDR,
            # Each node's InternalIP and kubelet port are kwok's own server (see kwok_args).
            "nodeIP": processes.LOOPBACK,
            # Four workers each (the default) make 5,000 nodes take long to turn Ready.
            "nodePlayStageParallelism": 16,
            "podPlayStageParallelism": 16,
        },
    }


def kwok_metrics() -> list[dict[str, object]]:
    """kwok's emulation of every node's kubelet resource metrics (what metrics-server
    scrapes) and of each pod's usage, which a pod sets with annotations:
    ``kwok.x-k8s.io/usage-cpu`` and ``kwok.x-k8s.io/usage-memory`` (quantities; 1m CPU
    and 1Mi when absent). A node uses what its pods use, plus a base of its own so that
    an empty node still reports (metrics-server drops a node whose usage reads zero)."""

    def per_container(name: str, kind: str, value: str) -> dict[str, object]:
        return {
            "name": name,
            "dimension": "container",
            "kind": kind,
            "labels": [
                {"name": "container", "value": "container.name"},
                {"name": "namespace", "value": "pod.metadata.namespace"},
                {"name": "pod", "value": "pod.metadata.name"},
            ],
            "value": value,
        }

    def annotated(key: str, default: str) -> str:
        return (
            f'"{key}" in pod.metadata.annotations '
            f'? Quantity(pod.metadata.annotations["{key}"]) : Quantity("{default}")'
        )

    metric: dict[str, object] = {
        "apiVersion": "kwok.x-k8s.io/v1alpha1",
        "kind": "Metric",
        "metadata": {"name": "kubelet-resource-metrics"},
        "spec": {
            "path": nodes.METRICS_PATH.format(node="{nodeName}"),
            "metrics": [
                {"name": "scrape_error", "dimension": "node", "kind": "gauge", "value": "0"},
                {
                    "name": "node_cpu_usage_seconds_total",
                    "dimension": "node",
                    "kind": "counter",
                    "value": 'node.CumulativeUsage("cpu") + node.SinceSecond() * 0.05',
                },
                {
                    "name": "node_memory_working_set_bytes",
                    "dimension": "node",
                    "kind": "gauge",
                    "value": 'node.Usage("memory") + 268435456.0',
                },
                per_container("container_start_time_seconds", "gauge", "pod.SinceSecond()"),
                per_container(
                    "container_cpu_usage_seconds_total",
                    "counter",
                    'pod.CumulativeUsage("cpu", container.name)',
                ),
                per_container(
                    "container_memory_working_set_bytes",
                    "gauge",
                    'pod.Usage("memory", container.name)',
                ),
            ],
        },
    }
    usage: dict[str, object] = {
        "apiVersion": "kwok.x-k8s.io/v1alpha1",
        "kind": "ClusterResourceUsage",
        "metadata": {"name": "usage-from-annotations"},
        "spec": {
            "usages": [
                {
                    "usage": {
                        "cpu": {"expression": annotated(USAGE_CPU_ANNOTATION, "1m")},
                        "memory": {"expression": annotated(USAGE_MEMORY_ANNOTATION, "1Mi")},
                    }
                }
            ]
        },
    }
    return [metric, usage]


def kwok_args(cp: ControlPlane) -> list[str]:
    configs = [str(cp.dir / "kwok.yaml"), str(cp.dir / "kwok-metrics.yaml")]
    configs += [str(cp.bin_dir / "stages" / f"{stage}.yaml") for stage in KWOK_STAGES]
    pki_dir = cp.dir / "pki"
    port = cp.ports.get("kwok", 0)
    server = [
        # kwok's server plays every node's kubelet: metrics-server scrapes
        # nodes.METRICS_PATH at this port of each node's InternalIP (loopback).
        f"--server-address={processes.LOOPBACK}:{port}",
        f"--node-port={port}",
        f"--tls-cert-file={pki_dir / 'apiserver.crt'}",
        f"--tls-private-key-file={pki_dir / 'apiserver.key'}",
    ]
    return [
        str(cp.bin_dir / "kwok"),
        f"--kubeconfig={cp.kubeconfig}",
        f"--config={','.join(configs)}",
        *(server if port else []),
        # No node leases: nothing here reads them (no node lifecycle controller), and at
        # 5,000 nodes their renewals alone would be ~500 writes/s during every benchmark.
        # The configuration file cannot say 0 (its defaulting turns 0 into 40); the flag can.
        "--node-lease-duration-seconds=0",
    ]


def kubeconfig_text(server: str, token: str, ca_pem: bytes) -> str:
    name = "kubesalvo-local"
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": name,
                "cluster": {
                    "server": server,
                    "certificate-authority-data": base64.b64encode(ca_pem).decode(),
                },
            }
        ],
        "users": [{"name": pki.ADMIN_USER, "user": {"token": token}}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": pki.ADMIN_USER}}],
        "current-context": name,
    }
    return yaml.safe_dump(config, sort_keys=False)


Progress = Callable[[str], None]


async def wait_healthy(
    cp: ControlPlane,
    component: str,
    url: str,
    timeout: float,
    headers: dict[str, str] | None = None,
    tls: ssl.SSLContext | bool = False,
) -> None:
    """Polls ``url`` until it answers 200; fails at once if the process exits."""
    deadline = time.monotonic() + timeout
    last = ""
    async with aiohttp.ClientSession(headers=headers) as session:
        while time.monotonic() < deadline:
            if not processes.is_running(cp.pids[component]):
                raise StartError(
                    f"{component} exited during start; end of {cp.log(component)}:\n"
                    + processes.log_tail(cp.log(component))
                )
            try:
                async with session.get(
                    url, ssl=tls, timeout=aiohttp.ClientTimeout(total=2)
                ) as response:
                    if response.status == 200:
                        return
                    last = f"{response.status} {(await response.text())[-300:]}"
            except (TimeoutError, aiohttp.ClientError) as error:
                last = str(error) or type(error).__name__
            await asyncio.sleep(0.1)
    raise StartError(
        f"{component} not healthy after {timeout:.0f}s at {url} ({last}); end of its log:\n"
        + processes.log_tail(cp.log(component))
    )


def _start(cp: ControlPlane, component: str, argv: list[str], die_with_parent: bool) -> None:
    cp.pids[component] = processes.start(argv, cp.log(component), die_with_parent=die_with_parent)
    cp.save()


async def start(
    folder: Path,
    bin_dir: Path,
    progress: Progress | None = None,
    timeout: float = 60.0,
    die_with_parent: bool = False,
) -> ControlPlane:
    """Starts the control plane in ``folder`` and waits until each part is healthy.

    With ``die_with_parent`` (test sessions) the processes end when the calling thread
    does; ``cluster up`` leaves them running. On failure everything started is stopped
    again (logs stay for a look).
    """
    say = progress or (lambda _message: None)
    folder = folder.expanduser().resolve()
    _refuse_running(folder)
    remove_files(folder)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "logs").mkdir()
    (folder / "kcm").mkdir()
    names = ("etcd", "etcd-peer", "kube-apiserver", "kube-controller-manager", "kwok")
    keys = pki.generate(folder / "pki")
    cp = ControlPlane(
        dir=folder,
        bin_dir=bin_dir,
        ports=dict(zip(names, processes.free_ports(len(names)), strict=True)),
        token=keys.token,
    )
    cp.kubeconfig.write_text(kubeconfig_text(cp.server, cp.token, keys.ca_cert.read_bytes()))
    cp.kubeconfig.chmod(0o600)
    (folder / "kwok.yaml").write_text(yaml.safe_dump(kwok_config(cp), sort_keys=False))
    (folder / "kwok-metrics.yaml").write_text(yaml.safe_dump_all(kwok_metrics(), sort_keys=False))
    try:
        say("starting etcd")
        _start(cp, "etcd", etcd_args(cp), die_with_parent)
        await wait_healthy(
            cp, "etcd", f"http://{processes.LOOPBACK}:{cp.ports['etcd']}/health", timeout
        )
        say("starting kube-apiserver")
        _start(cp, "kube-apiserver", apiserver_args(cp), die_with_parent)
        auth = {"Authorization": f"Bearer {cp.token}"}
        api_tls = ssl.create_default_context(cafile=str(cp.ca_file))
        await wait_healthy(cp, "kube-apiserver", f"{cp.server}/readyz", timeout, auth, api_tls)
        say("starting kube-controller-manager and kwok")
        _start(cp, "kube-controller-manager", controller_manager_args(cp), die_with_parent)
        _start(cp, "kwok", kwok_args(cp), die_with_parent)
        kcm = f"https://{processes.LOOPBACK}:{cp.ports['kube-controller-manager']}/healthz"
        await wait_healthy(cp, "kube-controller-manager", kcm, timeout)
        if not processes.is_running(cp.pids["kwok"]):
            raise StartError("kwok exited during start:\n" + processes.log_tail(cp.log("kwok")))
    except BaseException:
        processes.stop(cp.pids.values(), grace=5)
        raise
    return cp


async def start_metrics_server(
    cp: ControlPlane,
    binary_path: Path,
    timeout: float = 120.0,
    die_with_parent: bool = False,
    node_selector: str = "",
) -> None:
    """Starts metrics-server beside a running control plane and registers it in the
    aggregation layer; returns once ``metrics.k8s.io`` lists node metrics (its first
    scrape, up to one resolution after the start). ``node_selector`` limits the nodes
    it scrapes (a label selector)."""
    from kubesalvo.sched.cluster import metrics_server

    if not cp.ports.get("kwok"):
        raise RuntimeError(
            f"the control plane in {cp.dir} runs kwok without its kubelet server (started by"
            " an older kubesalvo): `kubesalvo cluster down` and up again"
        )
    (port,) = processes.free_ports(1)
    cp.ports["metrics-server"] = port
    cert_dir = cp.dir / "metrics-server"
    cert_dir.mkdir(exist_ok=True)
    argv = metrics_server.args(
        binary_path,
        cp.kubeconfig,
        port,
        cert_dir,
        processes.LOOPBACK,
        cp.ports["kwok"],
        node_selector,
    )
    _start(cp, "metrics-server", argv, die_with_parent)
    async with cp.client() as client:
        for obj in metrics_server.api_objects(port):
            # One registration per plane: a restarted metrics-server has a new port.
            resource = await client.resource(obj["apiVersion"], obj["kind"])
            name = (
                f"{resource.collection(obj['metadata'].get('namespace'))}/{obj['metadata']['name']}"
            )
            with contextlib.suppress(ApiError):
                await client.request("DELETE", name)
            await client.create(obj)
    auth = {"Authorization": f"Bearer {cp.token}"}
    api_tls = ssl.create_default_context(cafile=str(cp.ca_file))
    url = f"{cp.server}/apis/metrics.k8s.io/v1beta1/nodes"
    await wait_healthy(cp, "metrics-server", url, timeout, auth, api_tls)


async def stop_metrics_server(cp: ControlPlane) -> None:
    """Takes metrics-server's registration out of the aggregation layer and stops it
    (an APIService left without its server fails discovery of every aggregated group,
    which stalls namespace deletion)."""
    from kubesalvo.sched.cluster import metrics_server

    async with cp.client() as client:
        for obj in reversed(metrics_server.api_objects(0)):
            resource = await client.resource(obj["apiVersion"], obj["kind"])
            path = resource.collection(obj["metadata"].get("namespace"))
            with contextlib.suppress(ApiError):
                await client.request("DELETE", f"{path}/{obj['metadata']['name']}")
    pid = cp.pids.pop("metrics-server", None)
    cp.ports.pop("metrics-server", None)
    if pid is not None:
        processes.stop([pid], grace=5)
    cp.save()


def _refuse_running(folder: Path) -> None:
    with contextlib.suppress(FileNotFoundError, json.JSONDecodeError, KeyError):
        running = ControlPlane.load(folder).running()
        if any(running.values()):
            raise StartError(
                f"a control plane is already running in {folder} "
                f"(stop it with `kubesalvo cluster down --dir {folder}`)"
            )


def remove_files(folder: Path) -> None:
    """Removes what ``start`` wrote into ``folder``, and the folder if nothing else is left."""
    for name in _OWNED:
        path = folder / name
        if path.is_dir():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)
    with contextlib.suppress(OSError):
        folder.rmdir()


def stop(folder: Path, grace: float = 10.0) -> ControlPlane | None:
    """Stops the control plane recorded in ``folder`` and removes its files.

    Extras (schedulers), kwok and the controller manager go first, etcd last, so that no
    component logs a storm of errors about the ones already gone. Returns what was stopped
    (None if nothing was recorded).
    """
    folder = folder.expanduser().resolve()
    try:
        cp = ControlPlane.load(folder)
    except FileNotFoundError:
        remove_files(folder)
        return None
    # Schedulers and other extras first, then the core in reverse order of start.
    extras = [pid for name, pid in cp.pids.items() if name not in COMPONENTS]
    processes.stop(extras, grace)
    for component in reversed(COMPONENTS):
        if component in cp.pids:
            processes.stop([cp.pids[component]], grace)
    remove_files(folder)
    return cp

"""What a pod requests and what a node offers, in the scheduler's integer units.

Follows kube-scheduler v1.34 (``resourcehelper.PodRequests`` and the scheduler's
``Resource``): cpu in millicores (``MilliValue``), every other resource in whole units
(``Value``: bytes for memory, ephemeral-storage and hugepages, counts for extended
resources and pods). Quantities are summed exactly and rounded once at the end, as
upstream adds ``Quantity`` values before converting them.

A pod's request is, per resource, the larger of

* the sum over its containers plus its restartable ("sidecar", ``restartPolicy: Always``)
  init containers, and
* for each ordinary init container, its own request plus the sidecars declared before
  it (they are already running while it runs),

then pod-level ``spec.resources.requests`` replace cpu, memory and hugepages-* (the
PodLevelResources feature is on by default in v1.34), and ``spec.overhead`` is added.

Requests are read as the API server stored them; it has already copied limits into
missing requests when the pod was created.

The resources the scheduler tracks are cpu, memory, ephemeral-storage, pods and the
"scalar" resources: extended resources (a name with a domain, ``example.com/foo``,
outside ``kubernetes.io/``), hugepages-*, names under ``kubernetes.io/`` and
attachable-volumes-*. Any other name is ignored, as upstream's ``Resource.Add`` does.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from fractions import Fraction
from typing import Any, NamedTuple

from kubesalvo.core.quantity import INT64_MAX, parse_quantity, scaled

__all__ = [
    "CPU",
    "DEFAULT_MEMORY_REQUEST",
    "DEFAULT_MILLI_CPU_REQUEST",
    "EPHEMERAL_STORAGE",
    "MEMORY",
    "PODS",
    "HostPort",
    "host_ports",
    "is_scalar_resource",
    "node_allocatable",
    "pod_nonzero_requests",
    "pod_requests",
]

CPU = "cpu"
MEMORY = "memory"
EPHEMERAL_STORAGE = "ephemeral-storage"
PODS = "pods"

# Used for scoring only, for a container that requests no cpu or memory at all, so that
# request-less pods do not all pile onto the emptiest-looking node (kube-scheduler's
# schedutil.DefaultMilliCPURequest and DefaultMemoryRequest).
DEFAULT_MILLI_CPU_REQUEST = 100
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024

_HUGEPAGES_PREFIX = "hugepages-"
_ATTACHABLE_VOLUMES_PREFIX = "attachable-volumes-"
_DEFAULT_REQUESTS: dict[str, Fraction] = {
    CPU: Fraction(DEFAULT_MILLI_CPU_REQUEST, 1000),
    MEMORY: Fraction(DEFAULT_MEMORY_REQUEST),
}

ResourceList = dict[str, Fraction]


def is_scalar_resource(name: str) -> bool:
    """Whether the scheduler tracks ``name`` as a scalar resource (IsScalarResourceName)."""
    if name.startswith((_HUGEPAGES_PREFIX, _ATTACHABLE_VOLUMES_PREFIX)):
        return True
    if "kubernetes.io/" in name:  # a prefixed native resource
        return True
    # An extended resource: qualified by a domain other than kubernetes.io, and not a
    # quota name ("requests.example.com/foo").
    return "/" in name and not name.startswith("requests.")


def _is_tracked(name: str) -> bool:
    return name in (CPU, MEMORY, EPHEMERAL_STORAGE) or is_scalar_resource(name)


def _to_units(resources: Mapping[str, Fraction]) -> dict[str, int]:
    """Convert exact quantities to the scheduler's units; always lists cpu/memory/storage."""
    out = {CPU: 0, MEMORY: 0, EPHEMERAL_STORAGE: 0}
    for name, amount in resources.items():
        if _is_tracked(name):
            out[name] = scaled(amount, -3 if name == CPU else 0)
    return out


def _parse_list(raw: Mapping[str, Any] | None) -> ResourceList:
    return {name: parse_quantity(q) for name, q in (raw or {}).items()}


def _add(into: ResourceList, other: Mapping[str, Fraction]) -> None:
    for name, amount in other.items():
        into[name] = into.get(name, Fraction(0)) + amount


def _max_into(into: ResourceList, other: Mapping[str, Fraction]) -> None:
    for name, amount in other.items():
        if name not in into or amount > into[name]:
            into[name] = amount


def _is_sidecar(container: Mapping[str, Any]) -> bool:
    return container.get("restartPolicy") == "Always"


def _resize_infeasible(pod: Mapping[str, Any]) -> bool:
    for condition in (pod.get("status") or {}).get("conditions") or ():
        if condition.get("type") == "PodResizePending":
            return condition.get("reason") == "Infeasible"
    return False


def _container_requests(
    pod: Mapping[str, Any],
    container: Mapping[str, Any],
    statuses: Mapping[str, Mapping[str, Any]] | None,
) -> ResourceList:
    """A container's requests; with ``statuses``, widened by what the kubelet reports.

    With in-place resize (on by default in v1.34) a bound pod's actual requests may
    differ from its spec: the scheduler counts the largest of spec, status and
    allocated, or only status and allocated when the resize was found infeasible.
    """
    spec = _parse_list((container.get("resources") or {}).get("requests"))
    if statuses is None:
        return spec
    status = statuses.get(container.get("name", ""))
    if status is None or status.get("resources") is None:
        return spec
    reported = _parse_list(status["resources"].get("requests"))
    allocated = _parse_list(status.get("allocatedResources"))
    out: ResourceList = {} if _resize_infeasible(pod) else dict(spec)
    _max_into(out, reported)
    _max_into(out, allocated)
    return out


def _with_defaults(requests: ResourceList, defaults: Mapping[str, Fraction]) -> ResourceList:
    """Add a default for each resource the container does not name at all.

    A resource named with a zero quantity keeps its zero: only absence is defaulted.
    """
    out = dict(requests)
    for name, amount in defaults.items():
        if name not in requests:
            out[name] = amount
    return out


def _aggregate(
    pod: Mapping[str, Any],
    use_status: bool,
    defaults: Mapping[str, Fraction] | None = None,
) -> ResourceList:
    """Per-resource pod requests from its containers, before pod-level values and overhead."""
    spec = pod.get("spec") or {}
    statuses: dict[str, Mapping[str, Any]] | None = None
    if use_status:
        status = pod.get("status") or {}
        statuses = {}
        for entry in (status.get("containerStatuses") or []) + (
            status.get("initContainerStatuses") or []
        ):
            statuses[entry.get("name", "")] = entry

    total: ResourceList = {}
    for container in spec.get("containers") or ():
        requests = _container_requests(pod, container, statuses)
        _add(total, _with_defaults(requests, defaults) if defaults else requests)

    sidecars: ResourceList = {}  # sidecars started so far: they run beside later init containers
    init_peak: ResourceList = {}
    for container in spec.get("initContainers") or ():
        sidecar = _is_sidecar(container)
        # Only a sidecar's status can differ from its spec: ordinary init containers
        # have finished by the time a resize could happen.
        requests = _container_requests(pod, container, statuses if sidecar else None)
        if defaults:
            requests = _with_defaults(requests, defaults)
        if sidecar:
            _add(total, requests)
            _add(sidecars, requests)
            during = dict(sidecars)
        else:
            during = dict(requests)
            _add(during, sidecars)
        _max_into(init_peak, during)
    _max_into(total, init_peak)
    return total


def _pod_level_requests(pod: Mapping[str, Any]) -> ResourceList:
    """The pod-level requests the scheduler honours: cpu, memory and hugepages-*."""
    raw = ((pod.get("spec") or {}).get("resources") or {}).get("requests")
    return {
        name: amount
        for name, amount in _parse_list(raw).items()
        if name in (CPU, MEMORY) or name.startswith(_HUGEPAGES_PREFIX)
    }


def _pod_requests_exact(
    pod: Mapping[str, Any],
    use_status: bool,
    defaults: Mapping[str, Fraction] | None = None,
    pod_level: bool = True,
) -> ResourceList:
    total = _aggregate(pod, use_status, defaults)
    if pod_level:
        total.update(_pod_level_requests(pod))
    _add(total, _parse_list((pod.get("spec") or {}).get("overhead")))
    return total


def pod_requests(
    pod: Mapping[str, Any], *, use_status: bool = False, nonzero_defaults: bool = False
) -> dict[str, int]:
    """Return what ``pod`` requests, per tracked resource, in the scheduler's units.

    cpu, memory and ephemeral-storage are always present (0 when not requested);
    scalar resources appear when some container names them. ``use_status=True`` is
    for pods already on a node: it counts the resources the kubelet reports after an
    in-place resize, as the scheduler's cache does.

    ``nonzero_defaults=True`` is how NodeResourcesFit's *score* sees the incoming pod:
    every container that names no cpu or memory counts 100m / 200Mi, and pod-level
    requests are not read. (Upstream's Fit plugin never hands its PodLevelResources
    flag to its scorer, so v1.34 scores pod-level pods on their container requests;
    checked against kube-scheduler v1.34.4.)
    """
    if nonzero_defaults:
        return _to_units(_pod_requests_exact(pod, False, _DEFAULT_REQUESTS, pod_level=False))
    return _to_units(_pod_requests_exact(pod, use_status))


def pod_nonzero_requests(pod: Mapping[str, Any], *, use_status: bool = False) -> tuple[int, int]:
    """Return (cpu millicores, memory bytes) as the resource scores see the pod.

    Every container (and init container) that does not name cpu or memory counts as
    requesting 100m cpu / 200Mi memory. When pod-level requests are set, only a
    resource missing at both the pod level and every container level is defaulted.
    """
    exact = _pod_requests_exact(pod, use_status)
    if _pod_level_requests(pod):
        defaults = {name: q for name, q in _DEFAULT_REQUESTS.items() if name not in exact}
    else:
        defaults = dict(_DEFAULT_REQUESTS)
    if defaults:
        exact = _pod_requests_exact(pod, use_status, defaults)
    return scaled(exact.get(CPU, Fraction(0)), -3), scaled(exact.get(MEMORY, Fraction(0)), 0)


def node_allocatable(node: Mapping[str, Any]) -> dict[str, int]:
    """Return the node's ``status.allocatable`` in the scheduler's units, with ``pods``.

    cpu, memory, ephemeral-storage and pods are always present (0 when the node does
    not report them: such a node fits only pods that request none of it).

    A fleet has few node shapes, so each distinct allocatable is worked out once (exact
    quantity arithmetic costs tens of microseconds a node; 5,000 nodes listed at start).
    """
    allocatable = (node.get("status") or {}).get("allocatable")
    try:
        key = tuple(sorted(allocatable.items())) if isinstance(allocatable, Mapping) else ()
        hash(key)
    except TypeError:  # values that are not quantities: parse_quantity says what is wrong
        return _node_allocatable(allocatable)
    return dict(_allocatable_of(key) if key else _node_allocatable(allocatable))


@functools.lru_cache(maxsize=4096)
def _allocatable_of(items: tuple[tuple[str, Any], ...]) -> dict[str, int]:
    return _node_allocatable(dict(items))


def _node_allocatable(allocatable: Any) -> dict[str, int]:
    raw = _parse_list(allocatable)
    # kube-apiserver stores any non-negative quantity ("1e400" as "10e399"): a node that
    # reports more than int64 holds has all that int64 holds, which no pod can exceed.
    ceiling = Fraction(INT64_MAX)
    raw = {
        name: min(amount, ceiling / (1000 if name == CPU else 1)) for name, amount in raw.items()
    }
    out = _to_units(raw)
    out[PODS] = scaled(raw.get(PODS, Fraction(0)), 0)
    return out


class HostPort(NamedTuple):
    """One host port a pod binds; an empty IP means every address (0.0.0.0)."""

    host_ip: str
    protocol: str
    port: int


def host_ports(pod: Mapping[str, Any]) -> list[HostPort]:
    """Return the host ports ``pod`` binds, with kube-scheduler's defaults filled in.

    Ports of ordinary containers and of sidecar init containers count (ordinary init
    containers have exited before the pod runs); a port with no hostPort does not.
    """
    spec = pod.get("spec") or {}
    containers: Iterable[Mapping[str, Any]] = [
        c for c in spec.get("initContainers") or () if _is_sidecar(c)
    ] + list(spec.get("containers") or ())
    out: list[HostPort] = []
    for container in containers:
        for port in container.get("ports") or ():
            number = int(port.get("hostPort") or 0)
            if number > 0:
                out.append(
                    HostPort(port.get("hostIP") or "0.0.0.0", port.get("protocol") or "TCP", number)
                )
    return out

"""``/metrics/resources``: kube-scheduler's ``kube_pod_resource_request`` and
``kube_pod_resource_limit``, one sample per pod and resource.

kube-scheduler serves these two STABLE families on its secure port (behind the port's
authorization, RBAC's ``nonResourceURLs: ["/metrics/resources"]``), computed at each scrape
from every pod its informer holds: all pods not Succeeded or Failed, of any scheduler.
Labels: ``namespace``, ``pod``, ``node`` (empty while pending), ``scheduler`` (the pod's
schedulerName), ``priority`` (empty when the pod has none), ``resource`` and ``unit``
("cores" for cpu, "bytes" for memory, storage and hugepages, empty otherwise). A resource
whose value is zero is left out.

The value is the pod's effective figure, as upstream's resource helpers reckon it: per
resource the larger of the sum over containers and restartable (sidecar) init containers,
and each ordinary init container's own figure plus the sidecars declared before it;
pod-level ``spec.resources`` replace cpu, memory and hugepages; ``spec.overhead`` is added
to every request and to the limits that are set. Spec values only (no in-place resize
status), as upstream's metric reads them. cpu is in cores of whole millicores, every other
resource in whole units (both rounded up); see ``value`` for the float's last digit.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Mapping
from fractions import Fraction
from typing import Any

from aiohttp import web
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from kubesalvo.core.quantity import parse_quantity
from kubesalvo.sched.metrics import CONTENT_TYPE

PATH = "/metrics/resources"
LABELS = ["namespace", "pod", "node", "scheduler", "priority", "resource", "unit"]
_POD_LEVEL = ("cpu", "memory")
_BYTES = ("memory", "storage", "ephemeral-storage")
_HUGEPAGES = "hugepages-"

Amounts = dict[str, Fraction]


def _parse(raw: Mapping[str, Any] | None) -> Amounts:
    return {name: parse_quantity(q) for name, q in (raw or {}).items()}


def _add(into: Amounts, other: Mapping[str, Fraction]) -> None:
    for name, amount in other.items():
        into[name] = into.get(name, Fraction(0)) + amount


def _max_into(into: Amounts, other: Mapping[str, Fraction]) -> None:
    for name, amount in other.items():
        if name not in into or amount > into[name]:
            into[name] = amount


def pod_amounts(pod: Mapping[str, Any], kind: str) -> Amounts:
    """The pod's effective ``kind`` ("requests" or "limits"), per resource, exactly."""
    spec = pod.get("spec") or {}

    def own(container: Mapping[str, Any]) -> Amounts:
        return _parse((container.get("resources") or {}).get(kind))

    total: Amounts = {}
    for container in spec.get("containers") or ():
        _add(total, own(container))
    sidecars: Amounts = {}
    init_peak: Amounts = {}
    for container in spec.get("initContainers") or ():
        amounts = own(container)
        if container.get("restartPolicy") == "Always":
            _add(total, amounts)
            _add(sidecars, amounts)
            during = dict(sidecars)
        else:
            during = dict(amounts)
            _add(during, sidecars)
        _max_into(init_peak, during)
    _max_into(total, init_peak)
    pod_level = _parse((spec.get("resources") or {}).get(kind))
    for name, amount in pod_level.items():
        if name in _POD_LEVEL or name.startswith(_HUGEPAGES):
            total[name] = amount
    overhead = _parse(spec.get("overhead"))
    if kind == "requests":
        _add(total, overhead)
    else:
        # Overhead counts toward a limit only where one is set.
        for name in total:
            total[name] += overhead.get(name, Fraction(0))
    return total


def unit(resource: str) -> str:
    if resource == "cpu":
        return "cores"
    if resource in _BYTES or resource.startswith(_HUGEPAGES):
        return "bytes"
    return ""


def value(resource: str, amount: Fraction) -> float:
    """The sample's value, as upstream's ``Quantity.AsApproximateFloat64`` gives it.

    That multiplies the quantity's integer by a power of ten in floating point, so a cpu
    of 2300 millicores is 2300 * 0.001 = 2.3000000000000003, not 2.3; the same product
    is taken here for cpu at the milli scale, or the finer one a quantity needs (down to
    nano, Quantity's finest); quantities in whole units stay whole.
    """
    if amount.denominator == 1:
        return float(amount.numerator)
    if resource != "cpu":
        return float(math.ceil(amount))  # memory and counts are whole units
    # A sum of millicore quantities keeps upstream's milli scale; a finer one its own.
    scale = 3
    while (amount * 10**scale).denominator != 1 and scale < 9:
        scale += 1
    return math.ceil(amount * 10**scale) * 10.0**-scale


class PodResourcesCollector(Collector):
    """Both families, from the pods ``pods()`` gives (API-shaped dicts) at each scrape."""

    def __init__(self, pods: Callable[[], Iterable[Mapping[str, Any]]]) -> None:
        self.pods = pods

    def collect(self) -> Iterator[GaugeMetricFamily]:
        families = {
            "requests": GaugeMetricFamily(
                "kube_pod_resource_request",
                "Resources requested by workloads on the cluster, broken down by pod.",
                labels=LABELS,
            ),
            "limits": GaugeMetricFamily(
                "kube_pod_resource_limit",
                "Resources limit for workloads on the cluster, broken down by pod.",
                labels=LABELS,
            ),
        }
        for pod in self.pods():
            if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
                continue
            meta = pod.get("metadata") or {}
            spec = pod.get("spec") or {}
            priority = spec.get("priority")
            common = [
                meta.get("namespace", ""),
                meta.get("name", ""),
                spec.get("nodeName", ""),
                spec.get("schedulerName", ""),
                "" if priority is None else str(priority),
            ]
            for kind, family in families.items():
                for resource, amount in sorted(pod_amounts(pod, kind).items()):
                    if amount:
                        family.add_metric(
                            [*common, resource, unit(resource)], value(resource, amount)
                        )
        yield from families.values()


def add_resource_metrics(
    app: web.Application, pods: Callable[[], Iterable[Mapping[str, Any]]]
) -> None:
    """Serve ``/metrics/resources`` from ``app`` (the secure port's, behind its authorization)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(PodResourcesCollector(pods))

    async def resources(request: web.Request) -> web.Response:
        return web.Response(body=generate_latest(registry), headers={"Content-Type": CONTENT_TYPE})

    app.router.add_get(PATH, resources)

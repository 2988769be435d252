"""The ``hpa`` scenario: a Deployment scaled by a real HorizontalPodAutoscaler.

kube-controller-manager's HPA controller scales the Deployment on the CPU use that
metrics-server reports through the aggregation layer; kwok emulates each pod's use from
the pod's annotation ``kwok.x-k8s.io/usage-cpu``. A load driver here plays the traffic:
the scenario's load (total millicores, stepped over time) is shared evenly by the
Deployment's bound pods, as a load balancer shares requests, so that more replicas bring
the use per pod down and the HPA settles. The contender schedules what the HPA adds;
every two seconds the run records the load, the HPA's desired replicas, the Deployment's
replicas, and its pods pending and bound. Pods' scheduling latency (created -> bound)
comes from the same measuring watch as every other run.

A scenario's ``bench`` section holds ``create: hpa`` and an ``hpa`` mapping
(:class:`HpaSettings`, every field optional).
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kubesalvo.sched.cluster.api import ApiClient, ApiError, Object
from kubesalvo.sched.cluster.controlplane import USAGE_CPU_ANNOTATION

# How often the driver shares the load out again and the run takes a sample.
PERIOD = 2.0
NAME = "web"


class HpaSettingsError(ValueError):
    """A field of the ``hpa`` section is wrong; the message names it."""


@dataclass(frozen=True)
class HpaSettings:
    """The autoscaled Deployment and the load it gets."""

    # (seconds from the run's start, total load in millicores): each holds until the next.
    steps: tuple[tuple[float, int], ...] = ((0.0, 2000), (60.0, 30000), (180.0, 6000))
    duration: float = 300.0
    cpu_request: int = 200  # millicores each pod requests
    target_utilization: int = 50  # percent of the request the HPA aims at
    min_replicas: int = 2
    max_replicas: int = 200
    # The HPA's scale-down stabilization (the default 300 s hides a step down for minutes).
    scale_down_window: int = 30

    def load_at(self, seconds: float) -> int:
        """The total load at ``seconds`` after the start."""
        current = 0
        for start, load in self.steps:
            if start <= seconds:
                current = load
        return current


_INTS = ("cpu_request", "target_utilization", "min_replicas", "max_replicas")


def parse(section: Any, where: str) -> HpaSettings:
    """The ``hpa`` mapping of a scenario's ``bench`` section; raises HpaSettingsError
    naming the field at fault."""
    if section is None:
        return HpaSettings()
    if not isinstance(section, Mapping):
        raise HpaSettingsError(f"{where}: expected a mapping, got {type(section).__name__}")
    accepted = ("steps", "duration", *_INTS, "scale_down_window")
    values: dict[str, Any] = {}
    for key, value in section.items():
        if key not in accepted:
            raise HpaSettingsError(f"{where}.{key}: unknown field; accepted: {', '.join(accepted)}")
        if key == "steps":
            values[key] = _steps(value, f"{where}.steps")
        elif key == "duration":
            if not _number(value) or not value > 0:
                raise HpaSettingsError(f"{where}.duration: expected seconds > 0, got {value!r}")
            values[key] = float(value)
        else:
            low = 0 if key == "scale_down_window" else 1
            if type(value) is not int or value < low:
                raise HpaSettingsError(
                    f"{where}.{key}: expected an integer >= {low}, got {value!r}"
                )
            values[key] = value
    settings = HpaSettings(**values)
    if settings.min_replicas > settings.max_replicas:
        raise HpaSettingsError(
            f"{where}: min_replicas {settings.min_replicas} > max_replicas {settings.max_replicas}"
        )
    return settings


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _steps(value: Any, where: str) -> tuple[tuple[float, int], ...]:
    if not isinstance(value, list) or not value:
        raise HpaSettingsError(f"{where}: expected a list of [seconds, millicores] pairs")
    steps: list[tuple[float, int]] = []
    for i, step in enumerate(value):
        if (
            not isinstance(step, list)
            or len(step) != 2
            or not _number(step[0])
            or step[0] < 0
            or type(step[1]) is not int
            or step[1] < 0
        ):
            raise HpaSettingsError(
                f"{where}[{i}]: expected [seconds >= 0, millicores >= 0], got {step!r}"
            )
        if steps and step[0] <= steps[-1][0]:
            raise HpaSettingsError(f"{where}[{i}]: the steps' seconds must increase")
        steps.append((float(step[0]), step[1]))
    return tuple(steps)


def objects(
    settings: HpaSettings, namespace: str, scheduler: str, labels: Mapping[str, str]
) -> tuple[Object, Object]:
    """The Deployment (at ``min_replicas``, its pods addressed to ``scheduler`` and
    carrying ``labels``) and its HorizontalPodAutoscaler (autoscaling/v2)."""
    pod_labels = {"app": NAME, **labels}
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": NAME, "namespace": namespace},
        "spec": {
            "replicas": settings.min_replicas,
            "selector": {"matchLabels": pod_labels},
            "template": {
                "metadata": {"labels": pod_labels},
                "spec": {
                    "schedulerName": scheduler,
                    "terminationGracePeriodSeconds": 0,
                    "tolerations": [{"operator": "Exists"}],
                    "containers": [
                        {
                            "name": NAME,
                            "image": "registry.k8s.io/pause:3.10",
                            "resources": {
                                "requests": {"cpu": f"{settings.cpu_request}m", "memory": "64Mi"}
                            },
                        }
                    ],
                },
            },
        },
    }
    hpa = {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": NAME, "namespace": namespace},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": NAME},
            "minReplicas": settings.min_replicas,
            "maxReplicas": settings.max_replicas,
            "metrics": [
                {
                    "type": "Resource",
                    "resource": {
                        "name": "cpu",
                        "target": {
                            "type": "Utilization",
                            "averageUtilization": settings.target_utilization,
                        },
                    },
                }
            ],
            "behavior": {"scaleDown": {"stabilizationWindowSeconds": settings.scale_down_window}},
        },
    }
    return deployment, hpa


@dataclass
class Driver:
    """Shares the load out over the bound pods and samples the autoscaling every PERIOD."""

    client: ApiClient
    settings: HpaSettings
    namespace: str
    selector: str
    began: float  # time.monotonic() of the run's start
    samples: list[dict[str, Any]] = field(default_factory=list)
    patches: int = 0

    async def run(self) -> None:
        while True:
            tick = time.monotonic()
            await self.step(tick - self.began)
            await asyncio.sleep(max(0.0, PERIOD - (time.monotonic() - tick)))

    async def step(self, seconds: float) -> None:
        load = self.settings.load_at(seconds)
        listed = await self.client.request(
            "GET",
            f"/api/v1/namespaces/{self.namespace}/pods",
            params={"labelSelector": self.selector},
        )
        pods = [p for p in listed["items"] if not p["metadata"].get("deletionTimestamp")]
        bound = [p for p in pods if p["spec"].get("nodeName")]
        share = f"{math.ceil(load / max(1, len(bound)))}m"
        for pod in bound:
            if (pod["metadata"].get("annotations") or {}).get(USAGE_CPU_ANNOTATION) != share:
                name = pod["metadata"]["name"]
                with contextlib.suppress(ApiError):  # deleted by a scale-down meanwhile
                    await self.client.patch(
                        f"/api/v1/namespaces/{self.namespace}/pods/{name}",
                        {"metadata": {"annotations": {USAGE_CPU_ANNOTATION: share}}},
                    )
                    self.patches += 1
        hpa = await self.client.request(
            "GET",
            f"/apis/autoscaling/v2/namespaces/{self.namespace}/horizontalpodautoscalers/{NAME}",
        )
        deployment = await self.client.request(
            "GET", f"/apis/apps/v1/namespaces/{self.namespace}/deployments/{NAME}"
        )
        status = hpa.get("status") or {}
        metrics = status.get("currentMetrics") or [{}]
        current = ((metrics[0] or {}).get("resource") or {}).get("current") or {}
        self.samples.append(
            {
                "seconds": round(seconds, 2),
                "load_millicores": load,
                "per_pod_millicores": int(share[:-1]),
                "utilization_percent": current.get("averageUtilization"),
                "desired_replicas": status.get("desiredReplicas"),
                "replicas": (deployment.get("spec") or {}).get("replicas"),
                "pods": len(pods),
                "bound": len(bound),
                "pending": len(pods) - len(bound),
            }
        )

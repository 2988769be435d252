"""An independent check of where pods may go and of where they went, read from API objects.

It reads the pods and nodes directly, with its own quantity parser and none of kubesalvo's
code, so that tests can hold the generators to their promise (schedulable unless meant not
to be) and the scheduler to what it placed: no node overcommitted or holding a host port
twice, and every judged pod on a node its node selector, required node affinity, taints and
cordon allow. Spread and inter-pod terms depend on the order of placement and are not judged.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Collection, Iterable
from fractions import Fraction
from typing import Any

from .quantities import parse

Object = dict[str, Any]
CORDON = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}
FINISHED = ("Succeeded", "Failed")


def _requests(container: Object) -> Iterable[tuple[str, Fraction]]:
    requests = (container.get("resources") or {}).get("requests") or {}
    return ((name, parse(amount)) for name, amount in requests.items())


def effective_requests(pod: Object) -> dict[str, Fraction]:
    """What the pod asks of a node, per resource: the app containers and the sidecars
    (restartable init containers) add up, each other init container needs its own request
    plus the sidecars started before it, and the pod overhead comes on top."""
    spec = pod["spec"]
    total: dict[str, Fraction] = defaultdict(Fraction)
    for container in spec.get("containers") or ():
        for name, amount in _requests(container):
            total[name] += amount
    sidecars: dict[str, Fraction] = defaultdict(Fraction)
    init_peak: dict[str, Fraction] = defaultdict(Fraction)
    for container in spec.get("initContainers") or ():
        for name, amount in _requests(container):
            if container.get("restartPolicy") == "Always":
                sidecars[name] += amount
            else:
                init_peak[name] = max(init_peak[name], amount + sidecars[name])
    for name in {*total, *sidecars, *init_peak}:
        total[name] = max(total[name] + sidecars[name], init_peak[name])
    for name, amount in (spec.get("overhead") or {}).items():
        total[name] += parse(amount)
    return dict(total)


def expression_matches(expression: Object, labels: dict[str, str]) -> bool:
    """A node selector requirement against a node's labels; Gt and Lt compare integers and
    match no label that is not one."""
    key, op, values = expression["key"], expression["operator"], expression.get("values", [])
    if op == "In":
        return key in labels and labels[key] in values
    if op == "NotIn":
        return labels.get(key) not in values
    if op == "Exists":
        return key in labels
    if op == "DoesNotExist":
        return key not in labels
    if op in ("Gt", "Lt"):
        try:
            have, want = int(labels[key]), int(values[0])
        except (KeyError, ValueError):
            return False
        return have > want if op == "Gt" else have < want
    raise AssertionError(f"unknown operator {op}")


def tolerated(taint: Object, tolerations: list[Object]) -> bool:
    for t in tolerations:
        if t.get("effect") and t["effect"] != taint["effect"]:
            continue
        if t.get("operator", "Equal") == "Exists":
            if not t.get("key") or t["key"] == taint["key"]:
                return True
        elif t.get("key") == taint["key"] and t.get("value", "") == taint.get("value", ""):
            return True
    return False


def _rule_problems(pod: Object, node: Object) -> list[str]:
    """Which of the node's rules the pod breaks, by name (empty when it may run there)."""
    spec, labels = pod["spec"], node["metadata"].get("labels") or {}
    problems = []
    if any(labels.get(k) != v for k, v in (spec.get("nodeSelector") or {}).items()):
        problems.append("nodeSelector not matched")
    required = (
        (spec.get("affinity") or {})
        .get("nodeAffinity", {})
        .get("requiredDuringSchedulingIgnoredDuringExecution")
    )
    if required and not any(
        all(expression_matches(e, labels) for e in term.get("matchExpressions", []))
        for term in required["nodeSelectorTerms"]
    ):
        problems.append("required node affinity not matched")
    tolerations = spec.get("tolerations") or []
    for taint in (node.get("spec") or {}).get("taints") or ():
        if taint["effect"] in ("NoSchedule", "NoExecute") and not tolerated(taint, tolerations):
            problems.append(f"untolerated taint {taint}")
    return problems


def fits_empty_node(pod: Object, node: Object) -> bool:
    """Whether the pod could run on the node were the node empty. A cordoned node does not
    count, even for a pod that tolerates the cordon."""
    if node["spec"].get("unschedulable"):
        return False
    allocatable = node["status"]["allocatable"]
    for resource, amount in effective_requests(pod).items():
        if amount > parse(allocatable.get(resource, "0")):
            return False
    return not _rule_problems(pod, node)


def placement_problems(
    pods: Iterable[Object], nodes: Iterable[Object], *, judged_before: Collection[Any] = ()
) -> list[str]:
    """Every way the bound pods break their nodes' limits or their own constraints.

    Every bound pod that has not finished counts towards its node's use and host ports;
    the pods whose (namespace, name) is in ``judged_before`` were placed earlier (maybe by
    another scheduler, before a label or taint changed), so their own rules are not judged.
    """
    by_name = {n["metadata"]["name"]: n for n in nodes}
    used: dict[str, Counter[str]] = {name: Counter() for name in by_name}
    ports: dict[str, Counter[tuple[str, str, int]]] = {name: Counter() for name in by_name}
    problems = []
    for pod in pods:
        node_name = pod["spec"].get("nodeName")
        if not node_name or (pod.get("status") or {}).get("phase") in FINISHED:
            continue
        meta = pod["metadata"]
        who = f"{meta['namespace']}/{meta['name']} on {node_name}"
        node = by_name.get(node_name)
        if node is None:
            problems.append(f"{who}: no such node")
            continue
        used[node_name].update(effective_requests(pod))
        used[node_name]["pods"] += 1
        for container in pod["spec"]["containers"]:
            for p in container.get("ports") or ():
                if p.get("hostPort"):
                    ports[node_name][
                        (p.get("hostIP", ""), p.get("protocol", "TCP"), p["hostPort"])
                    ] += 1
        if (meta["namespace"], meta["name"]) in judged_before:
            continue
        problems += [f"{who}: {problem}" for problem in _rule_problems(pod, node)]
        if node["spec"].get("unschedulable") and not tolerated(
            CORDON, pod["spec"].get("tolerations") or []
        ):
            problems.append(f"{who}: the node is cordoned")
    for name, node in by_name.items():
        allocatable = node["status"]["allocatable"]
        for resource, amount in used[name].items():
            if amount > parse(allocatable.get(resource, "0")):
                problems.append(
                    f"{name}: {resource} overcommitted ({amount} > {allocatable.get(resource)})"
                )
        problems += [
            f"{name}: host port {p} used {n} times" for p, n in ports[name].items() if n > 1
        ]
    return problems

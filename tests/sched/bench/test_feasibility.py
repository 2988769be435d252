"""The independent placement check finds each kind of bad placement, and passes good ones."""

from __future__ import annotations

from typing import Any

from kubesalvo.sched.bench.feasibility import check


def node(name: str, cpu: str = "2", pods: str = "110", **spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": {"pool": "general"}},
        "spec": spec,
        "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": pods}},
    }


def pod(name: str, node_name: str, cpu: str = "500m", **spec: Any) -> dict[str, Any]:
    container = {"name": "app", "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}
    return {
        "metadata": {"name": name, "namespace": "ns"},
        "spec": {"nodeName": node_name, "containers": [container], **spec},
        "status": {"phase": "Running"},
    }


def test_pods_within_allocatable_pass() -> None:
    pods = [pod(f"p{i}", "n1") for i in range(4)]
    result = check([node("n1")], pods, {f"ns/p{i}" for i in range(4)})
    assert result.ok and result.pods_checked == 4 and result.nodes_used == 1
    assert (result.run_pods_found, result.run_pods_unbound) == (4, 0)


def test_the_runs_unbound_pods_are_counted() -> None:
    waiting = pod("w", "")
    result = check([node("n1")], [pod("p", "n1"), waiting], {"ns/p", "ns/w"})
    assert result.ok and (result.run_pods_found, result.run_pods_unbound) == (2, 1)


def test_overcommitted_cpu_is_reported() -> None:
    pods = [pod(f"p{i}", "n1", cpu="1") for i in range(3)]
    result = check([node("n1")], pods, set())
    assert result.violations == ["n1 overcommitted: cpu requested 3000 > allocatable 2000"]


def test_pod_count_beyond_allocatable_pods_is_reported() -> None:
    pods = [pod(f"p{i}", "n1", cpu="1m") for i in range(3)]
    result = check([node("n1", pods="2")], pods, set())
    assert result.violations == ["n1 overcommitted: pods requested 3 > allocatable 2"]


def test_finished_pods_hold_nothing() -> None:
    done = pod("done", "n1", cpu="2")
    done["status"]["phase"] = "Succeeded"
    assert check([node("n1")], [done, pod("p", "n1", cpu="2")], set()).ok


def test_untolerated_taint_and_cordon_and_selector_are_reported_for_run_pods() -> None:
    tainted = node("gpu", taints=[{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}])
    cordoned = node("cordoned", unschedulable=True)
    pods = [
        pod("a", "gpu"),
        pod("b", "cordoned"),
        pod("c", "n1", nodeSelector={"pool": "batch"}),
        pod("d", "gpu", tolerations=[{"key": "dedicated", "operator": "Exists"}]),
    ]
    result = check([tainted, cordoned, node("n1")], pods, {"ns/a", "ns/b", "ns/c", "ns/d"})
    assert result.violations == [
        "ns/a on gpu: untolerated taint dedicated=gpu",
        "ns/b on cordoned: untolerated taint node.kubernetes.io/unschedulable=",
        "ns/c on n1: nodeSelector pool=batch does not match",
    ]


def test_static_fit_is_judged_only_for_the_runs_pods() -> None:
    tainted = node("gpu", taints=[{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}])
    assert check([tainted], [pod("daemon", "gpu")], set()).ok


def test_a_pod_on_a_missing_node_is_reported() -> None:
    result = check([node("n1")], [pod("p", "gone")], {"ns/p"})
    assert result.violations == ["ns/p: bound to gone, which does not exist"]

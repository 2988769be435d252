"""Pod requests, non-zero scoring requests, node allocatable and host ports."""

import pytest

from kubesalvo.core.resources import (
    DEFAULT_MEMORY_REQUEST,
    DEFAULT_MILLI_CPU_REQUEST,
    HostPort,
    host_ports,
    is_scalar_resource,
    node_allocatable,
    pod_nonzero_requests,
    pod_requests,
)

MI = 1024 * 1024


def container(name="c", requests=None, restart_policy=None, ports=None):
    out = {"name": name, "resources": {"requests": requests} if requests is not None else {}}
    if restart_policy:
        out["restartPolicy"] = restart_policy
    if ports:
        out["ports"] = ports
    return out


def pod(containers=(), init=(), overhead=None, pod_requests_=None, status=None):
    spec = {"containers": list(containers), "initContainers": list(init)}
    if overhead:
        spec["overhead"] = overhead
    if pod_requests_:
        spec["resources"] = {"requests": pod_requests_}
    out = {"metadata": {"name": "p", "namespace": "default"}, "spec": spec}
    if status:
        out["status"] = status
    return out


def test_containers_are_summed():
    p = pod([container("a", {"cpu": "100m", "memory": "1Gi"}), container("b", {"cpu": "1.5"})])
    assert pod_requests(p) == {"cpu": 1600, "memory": 1024 * MI, "ephemeral-storage": 0}


def test_sub_milli_requests_are_summed_before_rounding():
    p = pod([container("a", {"cpu": "0.5m"}), container("b", {"cpu": "0.5m"})])
    assert pod_requests(p)["cpu"] == 1


def test_an_init_container_larger_than_the_sum_wins():
    p = pod(
        [container("a", {"cpu": "100m", "memory": "100Mi"})],
        init=[container("i", {"cpu": "2", "memory": "10Mi"})],
    )
    assert pod_requests(p) == {"cpu": 2000, "memory": 100 * MI, "ephemeral-storage": 0}


def test_a_pod_with_only_init_containers_requests_the_largest():
    p = pod(init=[container("i1", {"cpu": "300m"}), container("i2", {"cpu": "200m"})])
    assert pod_requests(p)["cpu"] == 300


def test_sidecars_add_to_the_containers_and_to_later_init_containers():
    p = pod(
        [container("main", {"cpu": "100m"})],
        init=[
            container("before", {"cpu": "1"}),  # runs alone: 1000
            container("side", {"cpu": "200m"}, restart_policy="Always"),
            container("after", {"cpu": "1"}),  # runs beside the sidecar: 1200
        ],
    )
    # max(containers 100 + sidecar 200, 1000, sidecar 200, 1000 + 200)
    assert pod_requests(p)["cpu"] == 1200


def test_sidecars_alone_count_with_the_containers():
    p = pod(
        [container("main", {"cpu": "1"})],
        init=[container("s1", {"cpu": "500m"}, "Always"), container("s2", {"cpu": "1"}, "Always")],
    )
    assert pod_requests(p)["cpu"] == 2500


def test_overhead_is_added():
    p = pod([container("a", {"cpu": "1"})], overhead={"cpu": "250m", "memory": "64Mi"})
    assert pod_requests(p) == {"cpu": 1250, "memory": 64 * MI, "ephemeral-storage": 0}


def test_pod_level_requests_replace_cpu_memory_and_hugepages_only():
    p = pod(
        [container("a", {"cpu": "1", "memory": "1Gi", "example.com/gpu": "2"})],
        pod_requests_={"cpu": "3", "memory": "2Gi"},
        overhead={"cpu": "100m"},
    )
    assert pod_requests(p) == {
        "cpu": 3100,
        "memory": 2048 * MI,
        "ephemeral-storage": 0,
        "example.com/gpu": 2,
    }


def test_scalar_and_untracked_resources():
    p = pod([container("a", {"hugepages-2Mi": "4Mi", "example.com/foo": "3", "storage": "1Gi"})])
    assert pod_requests(p) == {
        "cpu": 0,
        "memory": 0,
        "ephemeral-storage": 0,
        "hugepages-2Mi": 4 * MI,
        "example.com/foo": 3,
    }
    assert is_scalar_resource("nvidia.com/gpu")
    assert is_scalar_resource("kubernetes.io/batch-cpu")
    assert is_scalar_resource("attachable-volumes-csi-x")
    assert not is_scalar_resource("requests.example.com/foo")
    assert not is_scalar_resource("pods")


def test_nonzero_defaults_apply_per_container_that_names_nothing():
    p = pod([container("a"), container("b", {"cpu": "1"})])
    assert pod_nonzero_requests(p) == (DEFAULT_MILLI_CPU_REQUEST + 1000, 2 * DEFAULT_MEMORY_REQUEST)
    assert pod_requests(p)["cpu"] == 1000


def test_nonzero_keeps_an_explicit_zero():
    p = pod([container("a", {"cpu": "0", "memory": "0"})])
    assert pod_nonzero_requests(p) == (0, 0)


def test_nonzero_defaults_init_containers_too():
    p = pod([container("a", {"cpu": "100m"})], init=[container("i")])
    # the init container counts as 100m / 200Mi; the container as 100m / 200Mi (memory)
    assert pod_nonzero_requests(p) == (100, DEFAULT_MEMORY_REQUEST)


def test_nonzero_with_pod_level_requests_defaults_only_what_is_missing_everywhere():
    p = pod([container("a"), container("b")], pod_requests_={"cpu": "2"})
    assert pod_nonzero_requests(p) == (2000, 2 * DEFAULT_MEMORY_REQUEST)


def test_status_resources_widen_a_resized_bound_pod():
    p = pod(
        [container("a", {"cpu": "1"})],
        status={
            "containerStatuses": [
                {"name": "a", "resources": {"requests": {"cpu": "2"}}, "allocatedResources": {}}
            ]
        },
    )
    assert pod_requests(p)["cpu"] == 1000
    assert pod_requests(p, use_status=True)["cpu"] == 2000


def test_an_infeasible_resize_counts_status_only():
    p = pod(
        [container("a", {"cpu": "4"})],
        status={
            "conditions": [{"type": "PodResizePending", "reason": "Infeasible"}],
            "containerStatuses": [{"name": "a", "resources": {"requests": {"cpu": "1"}}}],
        },
    )
    assert pod_requests(p, use_status=True)["cpu"] == 1000


def test_node_allocatable_includes_pods_and_scalars():
    node = {
        "metadata": {"name": "n"},
        "status": {
            "allocatable": {"cpu": "3900m", "memory": "7Gi", "pods": "110", "nvidia.com/gpu": "8"}
        },
    }
    assert node_allocatable(node) == {
        "cpu": 3900,
        "memory": 7 * 1024 * MI,
        "ephemeral-storage": 0,
        "pods": 110,
        "nvidia.com/gpu": 8,
    }
    assert node_allocatable({"metadata": {"name": "bare"}})["pods"] == 0


def test_node_allocatable_of_a_shape_seen_before_is_the_same_and_its_own():
    # Each distinct allocatable is worked out once; every node gets its own dict.
    shape = {"cpu": "7910m", "memory": "30Gi", "pods": "58"}
    first = node_allocatable({"status": {"allocatable": dict(shape)}})
    first["cpu"] = 0
    again = node_allocatable({"status": {"allocatable": dict(reversed(shape.items()))}})
    assert again == {"cpu": 7910, "memory": 30 * 1024 * MI, "ephemeral-storage": 0, "pods": 58}
    # Values that cannot be a cache key are still read (and judged) as quantities.
    with pytest.raises(ValueError):
        node_allocatable({"status": {"allocatable": {"cpu": ["4"]}}})


def test_host_ports_of_containers_and_sidecars_with_defaults():
    p = pod(
        [container("a", ports=[{"containerPort": 80, "hostPort": 8080}, {"containerPort": 81}])],
        init=[
            container(
                "side",
                restart_policy="Always",
                ports=[{"hostPort": 53, "protocol": "UDP", "hostIP": "10.0.0.1"}],
            ),
            container("init", ports=[{"hostPort": 9999}]),
        ],
    )
    assert host_ports(p) == [HostPort("10.0.0.1", "UDP", 53), HostPort("0.0.0.0", "TCP", 8080)]


def test_the_fit_score_view_ignores_pod_level_requests_as_v1_34_does():
    p = pod(
        [container("a", {"cpu": "1m"}), container("b")],
        pod_requests_={"cpu": "2", "memory": "1Gi"},
        overhead={"cpu": "200m"},
    )
    # the filter's view: pod-level values win, overhead added
    assert pod_requests(p)["cpu"] == 2200
    # the score's view: containers with 100m/200Mi defaults, plus overhead
    scored = pod_requests(p, nonzero_defaults=True)
    assert (scored["cpu"], scored["memory"]) == (1 + 100 + 200, DEFAULT_MEMORY_REQUEST * 2)

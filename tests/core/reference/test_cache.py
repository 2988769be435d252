"""The reference's model of kube-scheduler's cache: pods of absent nodes, image states, ports."""

from kubesalvo.core.pernode.snapshot import Cache
from kubesalvo.core.plugins.node_ports import ERR_REASON_NODE_PORTS
from kubesalvo.core.reference import ReferenceScheduler
from tests.core.reference.builders import node, pod

MB = 1024 * 1024


def with_port(name: str, node_name: str, port: int = 80) -> dict:
    p = pod(name, node_name=node_name)
    p["metadata"]["uid"] = name
    p["spec"]["containers"][0]["ports"] = [{"containerPort": port, "hostPort": port}]
    return p


def test_removing_one_of_two_pods_on_a_host_port_frees_the_port():
    cache = Cache()
    cache.add_node(node("a"))
    first, second = with_port("p1", "a"), with_port("p2", "a")
    cache.add_pod(first)
    cache.add_pod(second)
    ref = ReferenceScheduler.from_snapshot(cache.snapshot())
    assert ref.filter(with_port("new", "")) == {"a": [ERR_REASON_NODE_PORTS]}
    cache.remove_pod(first)
    ref = ReferenceScheduler.from_snapshot(cache.snapshot())
    assert ref.filter(with_port("new", "")) == {"a": []}


def test_pods_of_a_removed_node_count_nowhere_until_it_comes_back():
    cache = Cache()
    cache.add_node(node("a"))
    cache.add_node(node("b"))
    cache.add_pod(pod("p1", node_name="a", requests={"cpu": "3"}))
    cache.remove_node("a")
    assert [n.name for n in cache.snapshot().nodes] == ["b"]
    cache.add_node(node("a"))
    again = cache.snapshot().by_name["a"]
    assert [p["metadata"]["name"] for p in again.pods] == ["p1"]
    assert again.requested["cpu"] == 3000


def test_a_pod_of_a_removed_node_can_be_removed():
    cache = Cache()
    cache.add_node(node("a"))
    bound = pod("p1", node_name="a")
    cache.add_pod(bound)
    cache.remove_node("a")
    cache.remove_pod(bound)
    cache.add_node(node("a"))
    assert cache.snapshot().by_name["a"].pods == []


def test_a_pod_bound_before_its_node_arrives_counts_with_the_node():
    cache = Cache()
    cache.add_pod(pod("p1", node_name="late"))
    assert cache.snapshot().nodes == []
    cache.add_node(node("late"))
    assert len(cache.snapshot().by_name["late"].pods) == 1


def test_image_size_stays_the_first_reporters_while_any_node_reports_it():
    cache = Cache()
    cache.add_node(node("a", images=[(["app:1"], 100 * MB)]))
    cache.add_node(node("b", images=[(["app:1"], 300 * MB)]))
    cache.remove_node("a")
    cache.add_node(node("a", images=[(["app:1"], 500 * MB)]))
    cache.update_node(node("b", images=[(["app:1"], 700 * MB)]))
    state = cache.snapshot().images["app:1"]
    assert (state.size, state.num_nodes) == (100 * MB, 2)


def test_an_image_no_node_reports_any_more_takes_the_next_reporters_size():
    cache = Cache()
    cache.add_node(node("a", images=[(["app:1"], 100 * MB)]))
    cache.update_node(node("a", images=[(["app:1"], 200 * MB)]))
    assert cache.snapshot().images["app:1"].size == 200 * MB
    cache.remove_node("a")
    assert cache.snapshot().images == {}
    cache.add_node(node("b", images=[(["app:1"], 300 * MB)]))
    assert cache.snapshot().images["app:1"].size == 300 * MB


def test_a_removed_nodes_port_set_follows_its_pods_until_it_comes_back():
    cache = Cache()
    cache.add_node(node("a"))
    first, second = with_port("p1", "a"), with_port("p2", "a")
    cache.add_pod(first)
    cache.add_pod(second)
    cache.remove_node("a")
    cache.remove_pod(first)
    cache.add_node(node("a"))
    assert cache.snapshot().by_name["a"].used_ports == set()

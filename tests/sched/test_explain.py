"""``explain``: the per-plugin breakdown computed by the reference for one pod, its text
rendering, and the command's answer when no scheduler is listening. (The debug page of a
running scheduler, for a pending and a placed pod, is checked in test_app.py.)"""

from __future__ import annotations

import socket
import subprocess
import sys

from kubesalvo.core.plugins import names
from kubesalvo.core.profile import Profile
from kubesalvo.core.volumes import CLAIMS, CLASSES, VOLUMES, StorageObjects
from kubesalvo.sched.config import default_config, gates
from kubesalvo.sched.debug_token import default_token_file, write_token
from kubesalvo.sched.explain import debug_token, plugin_scores, render
from tests.helpers.volumes import claim, claim_volume, local_volume, storage_class


def node(name: str, cpu: str, taints: list[dict[str, str]] | None = None) -> dict:
    return {
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "spec": {"taints": taints or []},
        "status": {
            "allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def pod(name: str, cpu: str, node_name: str | None = None) -> dict:
    spec: dict = {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}
    if node_name:
        spec["nodeName"] = node_name
    return {"metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}"}, "spec": spec}


def test_the_breakdown_ranks_nodes_by_total_and_names_every_score_plugin():
    nodes = [node("small", "2"), node("big", "16"), node("mid", "4")]
    target = pod("web", "1", node_name="big")
    busy = pod("other", "1500m", node_name="small")  # leaves 500m: too little for 1 cpu
    answer = plugin_scores(target, nodes, [busy, target], [], Profile.default())
    assert answer["feasibleNodes"] == 2
    assert answer["reasons"] == {"Insufficient cpu": 1}
    top = answer["topNodes"]
    assert [entry["node"] for entry in top] == ["big", "mid"]
    for entry in top:
        assert entry["total"] == sum(entry["plugins"].values())
        assert set(entry["plugins"]) == {name for name, _ in Profile.default().scores}
    # LeastAllocated prefers the emptier node.
    assert top[0]["plugins"]["NodeResourcesFit"] > top[1]["plugins"]["NodeResourcesFit"]


def test_the_pod_itself_is_not_counted_against_its_own_node():
    nodes = [node("only", "1")]
    target = pod("web", "1", node_name="only")
    answer = plugin_scores(target, nodes, [target], [], Profile.default())
    assert answer["feasibleNodes"] == 1
    assert answer["topNodes"][0]["node"] == "only"


def test_a_replicaset_pod_is_scored_with_default_spreading_by_its_owner():
    """With the pod's ReplicaSet among the workloads, the System default constraints
    spread it away from the node that already runs a replica; without it, they do not
    apply and PodTopologySpread adds the same to every node."""
    nodes = [node("a", "8"), node("b", "8")]
    owner = [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web", "controller": True}]

    def replica(name: str, node_name: str | None = None) -> dict:
        made = pod(name, "100m", node_name)
        made["metadata"] |= {"labels": {"app": "web"}, "ownerReferences": owner}
        return made

    replicaset = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": "web", "namespace": "ns"},
        "spec": {"selector": {"matchLabels": {"app": "web"}}},
    }
    target, running = replica("web-2", node_name="b"), replica("web-1", node_name="a")
    spread = {
        entry["node"]: entry["plugins"]["PodTopologySpread"]
        for entry in plugin_scores(
            target, nodes, [running, target], [], Profile.default(), workloads=[replicaset]
        )["topNodes"]
    }
    assert spread["b"] > spread["a"]
    alone = plugin_scores(target, nodes, [running, target], [], Profile.default())["topNodes"]
    assert len({entry["plugins"]["PodTopologySpread"] for entry in alone}) == 1


def test_a_pending_answer_lists_reasons_by_node_count():
    text = render(
        {
            "pod": "ns/web",
            "status": "pending",
            "queue": "unschedulable",
            "message": "0/3 nodes are available: 2 Insufficient cpu, 1 node(s) were unschedulable.",
            "reasons": {"node(s) were unschedulable": 1, "Insufficient cpu": 2},
        }
    )
    lines = text.splitlines()
    assert lines[0] == "pod ns/web: pending"
    assert lines[1] == "  queue: unschedulable"
    assert lines[-2:] == ["      2  Insufficient cpu", "      1  node(s) were unschedulable"]


def test_a_placed_answer_is_a_table_of_plugin_scores():
    text = render(
        {
            "pod": "ns/web",
            "status": "placed",
            "node": "big",
            "feasibleNodes": 2,
            "topNodes": [
                {
                    "node": "big",
                    "total": 150,
                    "plugins": {"NodeResourcesFit": 90, "TaintToleration": 60},
                },
                {
                    "node": "small",
                    "total": 60,
                    "plugins": {"NodeResourcesFit": 0, "TaintToleration": 60},
                },
            ],
            "scoresFrom": "the reference",
        }
    )
    assert "  node: big" in text
    assert "  top 2 of 2 feasible nodes:" in text
    header = next(line for line in text.splitlines() if line.strip().startswith("node "))
    assert header.split() == ["node", "total", "NodeResourcesFit", "TaintToleration"]
    assert any(line.split() == ["big", "150", "90", "60"] for line in text.splitlines())


def test_a_placed_answer_says_whether_its_node_was_drawn_among_tied_nodes():
    def answer(tied: int) -> dict:
        return {
            "pod": "ns/web",
            "status": "placed",
            "node": "n2",
            "lastAttempt": {"node": "n2", "score": 100000, "tiedNodes": tied},
            "scoresFrom": "the reference",
        }

    text = render(answer(3))
    assert (
        "  tie: drawn at random among 3 nodes with the best total score (100000), "
        "as kube-scheduler draws"
    ) in text.splitlines()
    text = render(answer(1))
    assert "  no tie: the only node with the best total score (100000)" in text.splitlines()
    assert "tie" not in render({**answer(3), "lastAttempt": {}})


def test_explain_without_a_scheduler_listening_fails_with_exit_1():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    done = subprocess.run(
        [sys.executable, "-m", "kubesalvo.sched.cli", "explain", "ns/web",
         "--debug-url", f"http://127.0.0.1:{port}"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 1
    assert f"cannot reach http://127.0.0.1:{port}" in done.stderr


def test_explain_wants_namespace_and_name():
    done = subprocess.run(
        [sys.executable, "-m", "kubesalvo.sched.cli", "explain", "web"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2
    assert "NAMESPACE/NAME" in done.stderr


def test_explain_finds_the_token_where_kubesalvo_run_writes_it_by_default(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    monkeypatch.delenv("KUBESALVO_DEBUG_TOKEN", raising=False)
    write_token(default_token_file(10123), "from-the-file")
    assert debug_token("http://127.0.0.1:10123", None) == "from-the-file"
    assert debug_token("http://127.0.0.1:10124", None) is None  # no file: nothing to send
    monkeypatch.setenv("KUBESALVO_DEBUG_TOKEN", "from-the-environment")
    assert debug_token("http://127.0.0.1:10123", None) == "from-the-environment"
    given = tmp_path / "given.token"
    write_token(given, "given")
    assert debug_token("http://127.0.0.1:10123", given) == "given"


def test_with_storage_capacity_scoring_on_the_breakdown_shows_volume_bindings_score():
    on = default_config(gates.parse("StorageCapacityScoring=true")).profiles[0].core
    storage = StorageObjects()
    storage.bind_delayed = True
    storage.put(CLASSES, storage_class("local"))
    storage.put(CLAIMS, claim("d", size="4Gi"))
    for name, host, size in (("pv-a", "a", "5Gi"), ("pv-b", "b", "40Gi")):
        pv = local_volume(name, host, size=size)
        pv["status"] = {"phase": "Available"}
        storage.put(VOLUMES, pv)
    target = pod("web", "1")
    target["spec"]["volumes"] = [claim_volume("data", "d")]
    nodes = [node("a", "4"), node("b", "4")]
    answer = plugin_scores(target, nodes, [target], [], on, storage=storage)
    by_node = {e["node"]: e["plugins"][names.VOLUME_BINDING] for e in answer["topNodes"]}
    assert by_node == {"a": 20, "b": 90}  # 4Gi of 5Gi, of 40Gi, under the default shape


def test_the_text_says_what_burst_packing_changed_for_the_pod():
    moved = {
        "pod": "ns/web",
        "status": "placed",
        "node": "n1",
        "lastAttempt": {"node": "n1", "burstPacking": {"kernelNode": "n0"}},
    }
    assert "moved by BurstPacking (the kernel alone chose n0)" in render(moved)
    added = {**moved, "lastAttempt": {"node": "n1", "burstPacking": {"kernelNode": None}}}
    assert "placed by BurstPacking (the kernel alone left it out)" in render(added)
    left_out = {
        "pod": "ns/web",
        "status": "pending",
        "queue": "unschedulable",
        "message": "0/2 nodes are available",
        "lastAttempt": {"node": None, "burstPacking": {"kernelNode": "n0"}},
    }
    assert "left out by BurstPacking for more pods of its burst (the kernel chose n0)" in (
        render(left_out)
    )
    assert "BurstPacking" not in render({**moved, "lastAttempt": {"node": "n1"}})

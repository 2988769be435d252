"""Scenario descriptions: parsing with field-path errors, generation, and the bench files."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from kubesalvo.core.synthetic.scenario import (
    DEFAULT_SCENARIO,
    FleetSpec,
    Scenario,
    ScenarioError,
    WorkloadSpec,
    parse_scenario,
    scenario_from_yaml,
)

WORKLOADS_DIR = Path(__file__).resolve().parents[3] / "bench" / "workloads"

MINIMAL = {"name": "tiny", "fleet": {"nodes": 30}, "workloads": [{"shape": "mixed", "pods": 200}]}


def with_changes(**changes):
    data = yaml.safe_load(yaml.safe_dump(MINIMAL))
    data.update(changes)
    return data


def test_a_minimal_scenario_takes_the_defaults():
    scenario = parse_scenario(MINIMAL)
    assert scenario == Scenario(
        name="tiny", fleet=FleetSpec(nodes=30), workloads=(WorkloadSpec("mixed", 200),)
    )
    assert scenario.scheduler_name == "kubesalvo" and scenario.seed == 0


def test_every_field_is_read():
    scenario = parse_scenario(
        {
            "name": "full",
            "description": "all fields",
            "seed": 9,
            "schedulerName": "default-scheduler",
            "fleet": {
                "nodes": 12,
                "region": "eu-west-1",
                "zones": ["eu-west-1a", "eu-west-1b"],
                "cordonedFraction": 0,
                "pools": {"general": 1, "gpu": 0.5},
            },
            "workloads": [
                {"shape": "replicasets", "pods": 10, "classes": 2, "name": "rs", "bound": True},
                {"shape": "gangs", "pods": 8},
            ],
        }
    )
    assert scenario.seed == 9 and scenario.scheduler_name == "default-scheduler"
    assert scenario.fleet == FleetSpec(
        nodes=12,
        region="eu-west-1",
        zones=("eu-west-1a", "eu-west-1b"),
        cordoned_fraction=0.0,
        pools=(("general", 1.0), ("gpu", 0.5)),
    )
    assert scenario.workloads == (
        WorkloadSpec("replicasets", 10, classes=2, name="rs", bound=True),
        WorkloadSpec("gangs", 8),
    )


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ([1], "scenario: expected a mapping, got list"),
        (with_changes(nodes=3), "nodes: unknown field; accepted: name, description, seed"),
        ({"fleet": {"nodes": 1}, "workloads": []}, "name: required field is missing"),
        (with_changes(name="Big_One"), "name: expected a lowercase DNS label, got 'Big_One'"),
        (with_changes(seed=-1), "seed: expected an integer >= 0, got -1"),
        (with_changes(seed=True), "seed: expected an integer >= 0, got True"),
        (with_changes(fleet={}), "fleet.nodes: required field is missing"),
        (
            with_changes(fleet={"nodes": "many"}),
            "fleet.nodes: expected an integer >= 0, got 'many'",
        ),
        (with_changes(fleet={"nodes": 1, "size": 2}), "fleet.size: unknown field; accepted: nodes"),
        (with_changes(fleet={"nodes": 1, "zones": []}), "fleet.zones: expected a non-empty list"),
        (with_changes(fleet={"nodes": 1, "zones": ["a", "B"]}), r"fleet.zones\[1\]: expected"),
        (with_changes(fleet={"nodes": 1, "zones": ["a", "a"]}), "fleet.zones: zone names must be"),
        (
            with_changes(fleet={"nodes": 1, "cordonedFraction": 2}),
            "fleet.cordonedFraction: expected",
        ),
        (
            with_changes(fleet={"nodes": 1, "pools": {"tpu": 1}}),
            "fleet.pools.tpu: unknown field; accepted: general, compute, memory, spot, arm, gpu",
        ),
        (with_changes(fleet={"nodes": 1, "pools": {"gpu": 0}}), "fleet.pools: at least one pool"),
        (with_changes(fleet={"nodes": 1, "pools": {"gpu": "x"}}), "fleet.pools.gpu: expected"),
        (with_changes(workloads={"shape": "mixed"}), "workloads: expected a list, got dict"),
        (with_changes(workloads=["mixed"]), r"workloads\[0\]: expected a mapping, got str"),
        (with_changes(workloads=[{"pods": 3}]), r"workloads\[0\].shape: required field is missing"),
        (
            with_changes(workloads=[{"shape": "mixed", "pods": 1}, {"shape": "burst", "pods": 1}]),
            r"workloads\[1\].shape: unknown shape 'burst'; accepted: replicasets, distinct, mixed",
        ),
        (
            with_changes(workloads=[{"shape": "mixed", "pods": 1.5}]),
            r"workloads\[0\].pods: expected",
        ),
        (
            with_changes(workloads=[{"shape": "mixed", "pods": 1, "classes": 3}]),
            r"workloads\[0\].classes: only the replicasets shape has classes",
        ),
        (
            with_changes(workloads=[{"shape": "replicasets", "pods": 1, "classes": 0}]),
            r"workloads\[0\].classes: expected an integer >= 1",
        ),
        (
            with_changes(workloads=[{"shape": "mixed", "pods": 1, "bound": "yes"}]),
            r"workloads\[0\].bound: expected true or false",
        ),
        (
            with_changes(workloads=[{"shape": "mixed", "pods": 1, "replicas": 3}]),
            r"workloads\[0\].replicas: unknown field; accepted: shape, pods, classes, name, bound",
        ),
        (
            with_changes(workloads=[{"shape": "mixed", "pods": 1, "pvsPerNode": 2}]),
            r"workloads\[0\].pvsPerNode: only the stateful shape has local PVs",
        ),
        (
            with_changes(workloads=[{"shape": "stateful", "pods": 1, "pvsPerNode": -1}]),
            r"workloads\[0\].pvsPerNode: expected an integer >= 0",
        ),
        (
            with_changes(workloads=[{"shape": "stateful", "pods": 1, "bound": True}]),
            r"workloads\[0\].bound: a stateful workload is always pending",
        ),
        (
            with_changes(
                workloads=[
                    {"shape": "mixed", "pods": 1, "name": "a"},
                    {"shape": "gangs", "pods": 1, "name": "a"},
                ]
            ),
            r"workloads\[1\].name: 'a' is already used by workloads\[0\]",
        ),
    ],
)
def test_bad_scenarios_are_refused_naming_the_field(data, message):
    with pytest.raises(ScenarioError, match=message):
        parse_scenario(data)


def test_yaml_errors_name_the_source():
    with pytest.raises(ScenarioError, match=r"^x.yaml: not valid YAML"):
        scenario_from_yaml("name: [unclosed", "x.yaml")
    with pytest.raises(ScenarioError, match=r"^x.yaml: fleet: required field is missing"):
        scenario_from_yaml("name: a\nworkloads: []\n", "x.yaml")


def test_generation_is_deterministic_and_sized_as_described():
    scenario = parse_scenario(MINIMAL)
    first, second = scenario.generate(seed=3), scenario.generate(seed=3)
    assert first == second
    assert len(first.nodes) == 30 and len(first.pods) == 200
    assert first.source == "synthetic scenario tiny seed 3"
    assert all(
        {"type": "Ready", "status": "True", "reason": "KubeletReady"} in n["status"]["conditions"]
        for n in first.nodes
    )
    assert {ns["metadata"]["name"] for ns in first.namespaces} >= {
        p["metadata"]["namespace"] for p in first.pods
    }
    assert {pc["metadata"]["name"] for pc in first.priorityclasses} >= {
        p["spec"]["priorityClassName"] for p in first.pods if "priorityClassName" in p["spec"]
    }
    assert scenario.generate(seed=4) != first


def test_workloads_get_their_own_prefixes_and_scheduler_name():
    scenario = parse_scenario(
        with_changes(
            schedulerName="default-scheduler",
            workloads=[
                {"shape": "replicasets", "pods": 20, "classes": 2},
                {"shape": "replicasets", "pods": 20, "classes": 2},
                {"shape": "mixed", "pods": 20, "name": "web"},
            ],
        )
    )
    pods = scenario.generate().pods
    assert len({p["metadata"]["name"] for p in pods}) == 60
    prefixes = {p["metadata"]["name"].split("-")[0] for p in pods}
    assert prefixes == {"w0", "w1", "web"}
    assert {p["spec"]["schedulerName"] for p in pods} == {"default-scheduler"}
    assert {p["spec"]["schedulerName"] for p in scenario.generate(scheduler_name="x").pods} == {"x"}


def test_bound_workloads_become_running_pods():
    scenario = parse_scenario(
        with_changes(
            workloads=[
                {"shape": "replicasets", "pods": 300, "name": "old", "bound": True},
                {"shape": "mixed", "pods": 100, "name": "new"},
            ]
        )
    )
    snapshot = scenario.generate()
    bound = snapshot.bound_pods()
    assert len(bound) == 300
    assert all(p["metadata"]["name"].startswith("old-") for p in bound)
    assert all(p["status"] == {"phase": "Running"} for p in bound)
    assert len(snapshot.pending_pods()) == 100


def test_owners_give_replicaset_like_pods_a_replicaset_and_change_nothing_else():
    scenario = parse_scenario(
        with_changes(
            workloads=[
                {"shape": "replicasets", "pods": 30, "classes": 3},
                {"shape": "mixed", "pods": 200, "name": "web"},
            ]
        )
    )
    plain, owned = scenario.generate(), scenario.generate(owners=True)
    assert plain.workloads == []
    by_name = {(w["metadata"]["namespace"], w["metadata"]["name"]): w for w in owned.workloads}
    assert all(w["kind"] == "ReplicaSet" and w["metadata"]["uid"] for w in owned.workloads)
    owned_pods = 0
    for before, after in zip(plain.pods, owned.pods, strict=True):
        meta = dict(after["metadata"])
        references = meta.pop("ownerReferences", None)
        assert {**after, "metadata": meta} == before
        if references is None:
            continue
        owned_pods += 1
        (reference,) = references
        owner = by_name[(meta["namespace"], reference["name"])]
        assert reference["uid"] == owner["metadata"]["uid"] and reference["controller"]
        selector = owner["spec"]["selector"]["matchLabels"]
        assert selector.items() <= meta["labels"].items()
    assert owned_pods >= 30  # the replicasets workload, and the mixed one's services
    assert len(owned.workloads) >= 3


def test_pool_weights_shape_the_fleet():
    scenario = parse_scenario(with_changes(fleet={"nodes": 40, "pools": {"general": 3, "gpu": 1}}))
    pools = [n["metadata"]["labels"]["kubesalvo.io/pool"] for n in scenario.generate().nodes]
    assert pools.count("general") == 30 and pools.count("gpu") == 10


def test_resized_keeps_the_mix():
    scenario = parse_scenario(
        with_changes(
            workloads=[{"shape": "mixed", "pods": 300}, {"shape": "gangs", "pods": 100}],
        )
    )
    resized = scenario.resized(nodes=7, pods=1000)
    assert resized.fleet.nodes == 7
    assert [w.pods for w in resized.workloads] == [750, 250]
    assert scenario.resized().workloads == scenario.workloads


def test_the_bench_workload_files_parse():
    files = sorted(WORKLOADS_DIR.glob("*.yaml"))
    names = {path.stem for path in files}
    assert {"small", "default", "replicasets-5k", "distinct-5k", "gangs"} <= names
    for path in files:
        scenario = scenario_from_yaml(path.read_text(), str(path))
        assert scenario.name == path.stem


def test_default_yaml_is_the_built_in_default():
    text = (WORKLOADS_DIR / "default.yaml").read_text()
    assert scenario_from_yaml(text) == DEFAULT_SCENARIO


def test_the_speed_target_files_have_the_promised_structure():
    rs = scenario_from_yaml((WORKLOADS_DIR / "replicasets-5k.yaml").read_text())
    assert rs.fleet.nodes == 5000 and rs.workloads == (WorkloadSpec("replicasets", 10_000, 10),)
    distinct = scenario_from_yaml((WORKLOADS_DIR / "distinct-5k.yaml").read_text())
    assert distinct.fleet.nodes == 5000
    assert distinct.workloads == (WorkloadSpec("distinct", 10_000),)


def test_a_stateful_workload_brings_its_class_volumes_and_one_claim_per_pod():
    scenario = parse_scenario(
        {
            "name": "s",
            "fleet": {"nodes": 4},
            "workloads": [{"shape": "stateful", "pods": 5, "pvsPerNode": 3, "name": "db"}],
        }
    )
    snapshot = scenario.generate()
    pods = snapshot.pending_pods()
    storage = snapshot.storage
    assert [p["metadata"]["name"] for p in pods] == [f"db-db-{i}" for i in range(5)]
    claims = {c["metadata"]["name"]: c for c in storage["persistentvolumeclaims"]}
    for pod in pods:
        (volume,) = pod["spec"]["volumes"]
        name = volume["persistentVolumeClaim"]["claimName"]
        assert name == f"data-{pod['metadata']['name']}"
        assert claims[name]["metadata"]["namespace"] == pod["metadata"]["namespace"]
    assert len(claims) == 5
    assert len(storage["persistentvolumes"]) == 12  # 3 on each of 4 nodes
    hosts = {
        pv["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"][0]["matchExpressions"][0][
            "values"
        ][0]
        for pv in storage["persistentvolumes"]
    }
    assert hosts == {n["metadata"]["labels"]["kubernetes.io/hostname"] for n in snapshot.nodes}
    (storage_class,) = storage["storageclasses"]
    assert storage_class["volumeBindingMode"] == "WaitForFirstConsumer"

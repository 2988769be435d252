"""Hypothesis strategies for small random clusters and bursts in API JSON shape.

Shared by the reference's own property tests and the kernel-versus-reference tests:
few distinct label keys and values, so that selectors, spread and affinity terms
actually bite; taints and tolerations from one small vocabulary; extended resources
that some nodes lack; pods with init containers and sidecars; gangs.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"
GPU = "example.com/gpu"

label_keys = st.sampled_from(["tier", "disk", "size"])
label_values = st.sampled_from(["a", "b", "c", "1", "7", "42"])
apps = st.sampled_from(["web", "db", "cache"])
namespaces = st.sampled_from(["default", "team-a"])
cpus = st.sampled_from(["0", "100m", "250m", "500m", "1", "2"])
memories = st.sampled_from(["0", "64Mi", "256Mi", "1Gi"])
taint_effects = st.sampled_from(["NoSchedule", "NoExecute", "PreferNoSchedule"])
topology_keys = st.sampled_from([ZONE, HOST])


@st.composite
def taints(draw: st.DrawFn) -> dict[str, str]:
    return {
        "key": draw(st.sampled_from(["dedicated", "spot"])),
        "value": draw(st.sampled_from(["", "gpu"])),
        "effect": draw(taint_effects),
    }


@st.composite
def tolerations(draw: st.DrawFn) -> dict[str, str]:
    operator = draw(st.sampled_from(["Equal", "Exists"]))
    out = {"operator": operator}
    if operator == "Equal" or draw(st.booleans()):
        out["key"] = draw(st.sampled_from(["dedicated", "spot"]))
    if operator == "Equal":
        out["value"] = draw(st.sampled_from(["", "gpu"]))
    if draw(st.booleans()):
        out["effect"] = draw(taint_effects)
    return out


@st.composite
def nodes(draw: st.DrawFn, min_size: int = 1, max_size: int = 6) -> list[dict[str, Any]]:
    count = draw(st.integers(min_size, max_size))
    out = []
    for i in range(count):
        name = f"n{i}"
        labels = {HOST: name}
        if draw(st.integers(0, 5)) > 0:  # a few nodes without a zone
            labels[ZONE] = draw(st.sampled_from(["z0", "z1", "z2"]))
        labels.update(draw(st.dictionaries(label_keys, label_values, max_size=2)))
        allocatable = {
            "cpu": draw(st.sampled_from(["1", "2", "4"])),
            "memory": draw(st.sampled_from(["1Gi", "2Gi", "8Gi"])),
            "pods": draw(st.sampled_from(["2", "5", "110"])),
        }
        if draw(st.booleans()):
            allocatable[GPU] = draw(st.sampled_from(["0", "1", "4"]))
        images = []
        if draw(st.booleans()):
            images.append(
                {
                    "names": ["app:1"],
                    "sizeBytes": draw(st.sampled_from([10, 300, 900])) * 1024 * 1024,
                }
            )
        out.append(
            {
                "metadata": {"name": name, "labels": labels},
                "spec": {
                    "unschedulable": draw(st.integers(0, 7)) == 0,
                    "taints": draw(st.lists(taints(), max_size=2)),
                },
                "status": {"allocatable": allocatable, "images": images},
            }
        )
    return out


def _selector(app: str) -> dict[str, Any]:
    return {"matchLabels": {"app": app}}


@st.composite
def requirement(draw: st.DrawFn) -> dict[str, Any]:
    operator = draw(st.sampled_from(["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]))
    out: dict[str, Any] = {"key": draw(label_keys), "operator": operator}
    if operator in ("In", "NotIn"):
        out["values"] = draw(st.lists(label_values, min_size=1, max_size=2))
    elif operator in ("Gt", "Lt"):
        out["values"] = [draw(st.sampled_from(["0", "5", "10"]))]
    return out


@st.composite
def pods(draw: st.DrawFn, names: st.SearchStrategy[str] | None = None) -> dict[str, Any]:
    app = draw(apps)
    labels = {"app": app}
    container: dict[str, Any] = {
        "name": "c",
        "image": draw(st.sampled_from(["app:1", "other:2"])),
        "resources": {"requests": {"cpu": draw(cpus), "memory": draw(memories)}},
    }
    if draw(st.integers(0, 4)) == 0:
        container["resources"]["requests"][GPU] = draw(st.sampled_from(["1", "2"]))
    if draw(st.integers(0, 4)) == 0:
        del container["resources"]["requests"]  # no requests: non-zero defaults for scoring
    spec: dict[str, Any] = {"containers": [container]}
    if draw(st.integers(0, 5)) == 0:
        spec["initContainers"] = [
            {
                "name": "init",
                "resources": {"requests": {"cpu": draw(cpus)}},
                **({"restartPolicy": "Always"} if draw(st.booleans()) else {}),
            }
        ]
    if draw(st.booleans()):
        spec["tolerations"] = draw(st.lists(tolerations(), max_size=2))
    if draw(st.integers(0, 3)) == 0:
        spec["nodeSelector"] = draw(
            st.dictionaries(label_keys, label_values, min_size=1, max_size=1)
        )
    affinity: dict[str, Any] = {}
    if draw(st.integers(0, 3)) == 0:
        affinity["nodeAffinity"] = {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": draw(
                    st.lists(
                        st.builds(
                            lambda reqs: {"matchExpressions": reqs},
                            st.lists(requirement(), min_size=1, max_size=2),
                        ),
                        min_size=1,
                        max_size=2,
                    )
                )
            }
        }
    if draw(st.integers(0, 3)) == 0:
        affinity.setdefault("nodeAffinity", {})[
            "preferredDuringSchedulingIgnoredDuringExecution"
        ] = [
            {
                "weight": draw(st.integers(1, 100)),
                "preference": {"matchExpressions": [draw(requirement())]},
            }
        ]
    for kind in ("podAffinity", "podAntiAffinity"):
        if draw(st.integers(0, 4)) == 0:
            term = {"labelSelector": _selector(draw(apps)), "topologyKey": draw(topology_keys)}
            scope = draw(st.integers(0, 5))
            if scope == 0:
                term["namespaces"] = ["team-a"]
            elif scope == 1:
                term["namespaceSelector"] = {}
            elif scope == 2:
                term["namespaceSelector"] = {
                    "matchLabels": {"env": draw(st.sampled_from(["prod", "dev"]))}
                }
            if draw(st.booleans()):
                affinity[kind] = {"requiredDuringSchedulingIgnoredDuringExecution": [term]}
            else:
                affinity[kind] = {
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {"weight": draw(st.integers(1, 100)), "podAffinityTerm": term}
                    ]
                }
    if affinity:
        spec["affinity"] = affinity
    if draw(st.integers(0, 3)) == 0:
        spec["topologySpreadConstraints"] = [
            {
                "maxSkew": draw(st.integers(1, 2)),
                "topologyKey": draw(topology_keys),
                "whenUnsatisfiable": draw(st.sampled_from(["DoNotSchedule", "ScheduleAnyway"])),
                "labelSelector": _selector(app),
                **({"minDomains": draw(st.integers(1, 4))} if draw(st.booleans()) else {}),
            }
        ]
        constraint = spec["topologySpreadConstraints"][0]
        if constraint["whenUnsatisfiable"] == "ScheduleAnyway":
            constraint.pop("minDomains", None)  # the API allows it only with DoNotSchedule
        if draw(st.integers(0, 3)) == 0:
            constraint["matchLabelKeys"] = ["tier"]
            labels["tier"] = draw(st.sampled_from(["a", "b"]))
        if draw(st.integers(0, 3)) == 0:
            constraint["nodeAffinityPolicy"] = draw(st.sampled_from(["Honor", "Ignore"]))
        if draw(st.integers(0, 3)) == 0:
            constraint["nodeTaintsPolicy"] = draw(st.sampled_from(["Honor", "Ignore"]))
    if draw(st.integers(0, 6)) == 0:
        labels["podGroup"] = draw(st.sampled_from(["g1", "g2"]))
        if draw(st.booleans()):
            labels["minAvailable"] = str(draw(st.integers(1, 3)))
    name = draw(names) if names is not None else f"p{draw(st.integers(0, 10**6))}"
    return {
        "metadata": {"name": name, "namespace": draw(namespaces), "labels": labels},
        "spec": spec,
    }


@st.composite
def clusters(
    draw: st.DrawFn, max_nodes: int = 6, max_bound: int = 8
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Nodes and pods already bound to them."""
    node_list = draw(nodes(max_size=max_nodes))
    bound = []
    for i in range(draw(st.integers(0, max_bound))):
        p = draw(pods(names=st.just(f"bound{i}")))
        p["metadata"]["labels"].pop("podGroup", None)
        p["spec"]["nodeName"] = draw(st.sampled_from([n["metadata"]["name"] for n in node_list]))
        bound.append(p)
    return node_list, bound


NAMESPACES = [
    {"metadata": {"name": "default", "labels": {"env": "prod"}}},
    {"metadata": {"name": "team-a", "labels": {"env": "dev"}}},
]

"""Claims made from templates as kube-controller-manager's resourceclaim controller makes
them: named <pod>-<entry>-<5 characters>, cut in proportion past 57 characters, owned by
the pod, the template's spec, labels and annotations plus the pod-claim-name annotation,
and the pod's status naming each."""

from kubesalvo.core.dra.templates import POD_CLAIM_NAME, claims_from_templates, generate_base
from tests.helpers import devices as dra

SPEC = dra.claim_spec(dra.request("gpu", "gpu.example.com", 1))


def template(name: str = "one-gpu", **meta) -> dict:
    made = dra.template("ns", name, SPEC)
    made["spec"]["metadata"] = meta
    return made


def pod(name: str, *entries: dict) -> dict:
    return {
        "metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}"},
        "spec": {"resourceClaims": list(entries)},
    }


def from_template(entry: str, template_name: str = "one-gpu") -> dict:
    return {"name": entry, "resourceClaimTemplateName": template_name}


def test_a_claim_is_made_per_templated_entry_as_the_controller_makes_it():
    p = pod("web-0", from_template("gpu"), {"name": "shared", "resourceClaimName": "s"})
    (made,) = claims_from_templates(
        [p], [template(labels={"team": "ml"}, annotations={"note": "x"})], [], seed=1
    )
    name = made["metadata"]["name"]
    assert name.startswith("web-0-gpu-") and len(name) == len("web-0-gpu-") + 5
    assert made["spec"] == SPEC
    assert made["metadata"]["labels"] == {"team": "ml"}
    assert made["metadata"]["annotations"] == {"note": "x", POD_CLAIM_NAME: "gpu"}
    (owner,) = made["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["uid"], owner["controller"]) == (
        "Pod",
        "web-0",
        "uid-web-0",
        True,
    )
    assert p["status"]["resourceClaimStatuses"] == [{"name": "gpu", "resourceClaimName": name}]


def test_names_repeat_with_the_seed_and_never_clash():
    pods = [pod(f"p{i}", from_template("gpu")) for i in range(20)]
    first = [c["metadata"]["name"] for c in claims_from_templates(pods, [template()], [], seed=3)]
    again = [pod(f"p{i}", from_template("gpu")) for i in range(20)]
    second = [c["metadata"]["name"] for c in claims_from_templates(again, [template()], [], 3)]
    assert first == second and len(set(first)) == 20


def test_a_long_base_is_cut_in_proportion_without_its_trailing_hyphen():
    assert generate_base("web-0", "gpu") == "web-0-gpu-"
    # 60 + 1 + 3 + 1 = 65 characters: each part keeps 57/65 of itself.
    assert generate_base("a" * 60, "gpu") == "a" * 52 + "-gp"


def test_entries_already_recorded_or_without_a_template_get_nothing():
    recorded = pod("done", from_template("gpu"))
    recorded["status"] = {"resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": "x"}]}
    lost = pod("lost", from_template("gpu", "absent"))
    assert claims_from_templates([recorded, lost], [template()], [], seed=0) == []
    assert "resourceClaimStatuses" not in lost["status"]
    assert recorded["status"]["resourceClaimStatuses"][0]["resourceClaimName"] == "x"

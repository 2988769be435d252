"""The extender's four verbs against a real running server (aiohttp on a loopback port),
in both node-cache modes, with kube-scheduler's exact field names."""

from __future__ import annotations

import msgspec
import pytest

from tests.helpers.extender import config, node, pod, post, running_extender

AVOID = "example.kubesalvo.io/avoid"


def example_config(**extra):
    return config([{"name": "example", "weight": 1}], **extra)


NODES = [
    node("n1", pods="10"),
    node("n2", pods="10", labels={AVOID: "true"}),
    node("n3", pods="20"),
]


async def test_filter_with_full_nodes_echoes_the_passing_node_objects():
    async with running_extender(example_config()) as ext:
        status, body = await post(ext.url, "filter", {"Pod": pod(), "Nodes": {"items": NODES}})
    assert status == 200
    assert [n["metadata"]["name"] for n in body["Nodes"]["items"]] == ["n1", "n3"]
    # Echoed untouched, fields the extender never reads included.
    assert body["Nodes"]["items"][0] == NODES[0]
    assert body["FailedAndUnresolvableNodes"] == {
        "n2": "example: node is marked to be avoided by new pods"
    }
    assert "NodeNames" not in body and "Error" not in body


async def test_filter_by_names_answers_from_the_node_cache_and_fails_unknown_nodes():
    async with running_extender(example_config()) as ext:
        # The cache learns these nodes (from a full-node request here; from the watch in a
        # cluster), then names alone are enough.
        await post(ext.url, "filter", {"Pod": pod(), "Nodes": {"items": NODES}})
        status, body = await post(
            ext.url, "filter", {"Pod": pod(), "NodeNames": ["n3", "n2", "ghost", "n1"]}
        )
    assert status == 200
    assert body["NodeNames"] == ["n3", "n1"]
    assert body["FailedAndUnresolvableNodes"]["n2"].startswith("example: ")
    assert "not known to the extender" in body["FailedAndUnresolvableNodes"]["ghost"]
    assert "Nodes" not in body


async def test_prioritize_gives_a_host_priority_list_between_0_and_10():
    async with running_extender(example_config()) as ext:
        await post(ext.url, "filter", {"Pod": pod(), "Nodes": {"items": NODES}})
        status, names = await post(
            ext.url, "prioritize", {"Pod": pod(), "NodeNames": ["n1", "n3", "ghost"]}
        )
        _, full = await post(ext.url, "prioritize", {"Pod": pod(), "Nodes": {"items": NODES}})
    assert status == 200
    # Every pod slot is free on n1 and n3: the example agent's top score; unknown: 0.
    assert names == [
        {"Host": "n1", "Score": 10},
        {"Host": "n3", "Score": 10},
        {"Host": "ghost", "Score": 0},
    ]
    assert [entry["Host"] for entry in full] == ["n1", "n2", "n3"]
    assert all(0 <= entry["Score"] <= 10 for entry in full)


async def test_each_agent_has_its_own_prefix_and_the_combined_verbs_weigh_them():
    cfg = config(
        [
            {"name": "example", "weight": 3},
            {
                "name": "policy",
                "weight": 1,
                "args": {
                    "rules": [
                        {
                            "name": "pool",
                            "podSelector": {"matchLabels": {"team": "a"}},
                            "preferredNodeSelector": {"matchLabels": {"pool": "a"}},
                        },
                    ]
                },
            },
        ]
    )
    nodes = [node("a1", labels={"pool": "a"}), node("b1", labels={"pool": "b"})]
    team_a = pod(labels={"team": "a"})
    async with running_extender(cfg) as ext:
        await post(ext.url, "filter", {"Pod": team_a, "Nodes": {"items": nodes}})
        _, policy = await post(
            ext.url, "policy/prioritize", {"Pod": team_a, "NodeNames": ["a1", "b1"]}
        )
        _, example = await post(
            ext.url, "example/prioritize", {"Pod": team_a, "NodeNames": ["a1", "b1"]}
        )
        _, combined = await post(ext.url, "prioritize", {"Pod": team_a, "NodeNames": ["a1", "b1"]})
        _, other = await post(ext.url, "prioritize", {"Pod": pod(), "NodeNames": ["a1", "b1"]})
    assert policy == [{"Host": "a1", "Score": 10}, {"Host": "b1", "Score": 0}]
    assert example == [{"Host": "a1", "Score": 10}, {"Host": "b1", "Score": 10}]
    # (3 x 1 + 1 x 1) / 4 and (3 x 1 + 1 x 0) / 4, times 10
    assert combined == [{"Host": "a1", "Score": 10}, {"Host": "b1", "Score": 8}]
    # No rule matches a pod without the team label: only the example agent scores it.
    assert other == [{"Host": "a1", "Score": 10}, {"Host": "b1", "Score": 10}]


async def test_managed_resources_limit_an_agent_to_the_pods_that_name_them():
    cfg = config([{"name": "example", "managedResources": ["example.com/gpu"]}])
    async with running_extender(cfg) as ext:
        _, plain = await post(ext.url, "filter", {"Pod": pod(), "Nodes": {"items": NODES}})
        gpu = pod(extra={"example.com/gpu": "1"})
        _, managed = await post(ext.url, "filter", {"Pod": gpu, "Nodes": {"items": NODES}})
    assert len(plain["Nodes"]["items"]) == 3
    assert [n["metadata"]["name"] for n in managed["Nodes"]["items"]] == ["n1", "n3"]


@pytest.mark.parametrize("mode", ["meta", "full"])
async def test_preempt_keeps_candidates_preemption_can_help_with_their_victims(mode):
    async with running_extender(example_config()) as ext:
        await post(ext.url, "filter", {"Pod": pod(), "Nodes": {"items": NODES}})
        if mode == "meta":
            args = {
                "Pod": pod(),
                "NodeNameToMetaVictims": {
                    "n1": {"Pods": [{"UID": "v1"}, {"UID": "v2"}], "NumPDBViolations": 1},
                    "n2": {"Pods": [{"UID": "v3"}], "NumPDBViolations": 0},
                    "ghost": {"Pods": [{"UID": "v4"}], "NumPDBViolations": 0},
                },
            }
        else:
            args = {
                "Pod": pod(),
                "NodeNameToVictims": {
                    "n1": {"Pods": [pod("a", uid="v1"), pod("b", uid="v2")], "NumPDBViolations": 1},
                    "n2": {"Pods": [pod("c", uid="v3")], "NumPDBViolations": 0},
                },
            }
        status, body = await post(ext.url, "preempt", args)
    assert status == 200
    # n2 is avoided whatever is preempted there; the unknown node cannot be checked.
    assert body == {
        "NodeNameToMetaVictims": {
            "n1": {"Pods": [{"UID": "v1"}, {"UID": "v2"}], "NumPDBViolations": 1}
        }
    }


async def test_bind_without_credentials_answers_with_an_error_not_a_failure():
    async with running_extender(example_config()) as ext:
        status, body = await post(
            ext.url, "bind", {"PodName": "p", "PodNamespace": "d", "PodUID": "u", "Node": "n1"}
        )
    assert status == 200
    assert "no API server credentials" in body["Error"]


async def test_an_agent_that_raises_becomes_the_error_field():
    cfg = example_config()

    def broken(state, pod):
        raise RuntimeError("boom")

    cfg.agents[0].agent.filter = broken  # type: ignore[method-assign]
    async with running_extender(cfg) as ext:
        status, body = await post(ext.url, "filter", {"Pod": pod(), "Nodes": {"items": NODES}})
        _, scores = await post(ext.url, "prioritize", {"Pod": pod(), "Nodes": {"items": NODES}})
    assert status == 200
    assert body == {"Error": "agent example failed: boom"}
    assert len(scores) == 3


@pytest.mark.parametrize(
    ("verb", "body", "needle"),
    [
        ("filter", b"{not json", "malformed JSON"),
        ("filter", b"[]", "invalid ExtenderArgs"),
        ("filter", {"Pod": pod()}, "NodeNames or Nodes is required"),
        ("filter", {"NodeNames": ["n1"]}, "Pod is required"),
        ("filter", {"Pod": pod(), "NodeNames": "n1"}, "got `str` - at `$.NodeNames`"),
        ("prioritize", {"Pod": pod(), "Nodes": {"items": [{"metadata": {}}]}}, "metadata.name"),
        (
            "prioritize",
            {"Pod": {"spec": {"containers": 5}}, "NodeNames": []},
            "`$.Pod.spec.containers`",
        ),
        ("bind", {"PodName": "p"}, "PodNamespace, Node required"),
        ("preempt", {"Pod": pod()}, "NodeNameToMetaVictims or NodeNameToVictims"),
        (
            "preempt",
            {"Pod": pod(), "NodeNameToMetaVictims": {"n": {"Pods": [{"UID": 1}]}}},
            "Expected `str`, got `int`",
        ),
    ],
)
async def test_bad_requests_get_400_with_a_json_error(verb, body, needle, caplog):
    async with running_extender(example_config()) as ext:
        status, answer = await post(ext.url, verb, body)
        healthy, _ = await get(ext.url, "healthz")
    assert status == 400
    assert needle in answer["error"]
    assert healthy == 200
    logged = [r for r in caplog.records if r.getMessage().startswith(f"bad {verb} request")]
    assert len(logged) == 1


async def test_an_oversize_body_gets_400_and_the_server_goes_on():
    cfg = example_config(maxRequestBytes=4096)
    big = {"Pod": pod(), "Nodes": {"items": [node(f"n{i}") for i in range(50)]}}
    async with running_extender(cfg) as ext:
        status, answer = await post(ext.url, "filter", big)
        again, _ = await post(ext.url, "filter", {"Pod": pod(), "Nodes": {"items": NODES}})
    assert status == 400 and "maxRequestBytes" in answer["error"]
    assert again == 200


async def test_metrics_count_requests_per_verb_and_agent():
    async with running_extender(example_config()) as ext:
        await post(ext.url, "filter", {"Pod": pod(), "Nodes": {"items": NODES}})
        await post(ext.url, "example/prioritize", {"Pod": pod(), "NodeNames": ["n1"]})
        await post(ext.url, "filter", b"nope")
        status, text = await get(ext.url, "metrics")
    assert status == 200
    assert 'kubesalvo_extender_requests_total{agent="all",code="200",verb="filter"} 1.0' in text
    assert 'kubesalvo_extender_requests_total{agent="all",code="400",verb="filter"} 1.0' in text
    assert (
        'kubesalvo_extender_requests_total{agent="example",code="200",verb="prioritize"} 1.0'
        in text
    )
    assert (
        'kubesalvo_extender_request_duration_seconds_count{agent="example",verb="prioritize"} 1.0'
        in text
    )


async def get(url: str, path: str) -> tuple[int, str]:
    import aiohttp

    async with aiohttp.ClientSession() as session, session.get(f"{url}/{path}") as response:
        return response.status, await response.text()


def test_results_use_kube_schedulers_field_names():
    from kubesalvo.sched.extender import wire

    encoded = msgspec.json.decode(
        wire.encode(wire.FilterResult(NodeNames=["a"], FailedNodes={"b": "why"}))
    )
    assert encoded == {"NodeNames": ["a"], "FailedNodes": {"b": "why"}}
    assert msgspec.json.decode(wire.encode(wire.HostPriority("a", 3))) == {"Host": "a", "Score": 3}

"""ImageLocality from the image reporter's annotation: its format, which report of a node
counts (the kubelet's ``status.images`` or the annotation, the newer), and the kernel's
score from it, checked against the plain reference."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from kubesalvo.core.pernode import image_locality as reference
from kubesalvo.core.pernode.snapshot import Cache
from kubesalvo.core.pernode.static_plugins import channel_scores
from kubesalvo.core.place import plan
from kubesalvo.core.plugins import image_locality
from kubesalvo.core.plugins.image_locality import (
    ANNOTATION,
    ReportedImage,
    decode_annotation,
    encode_annotation,
    format_time,
    node_images,
)
from kubesalvo.core.profile import Profile
from kubesalvo.core.state import ClusterState
from kubesalvo.core.ties import TieBreak

MB = 1024 * 1024
AT = datetime(2026, 11, 23, 23, 40, 5, tzinfo=UTC)
APP = ReportedImage(
    ("registry.example.com/team/app:2.1",),
    ("registry.example.com/team/app@sha256:" + "a" * 64,),
    600 * MB,
)
PAUSE = ReportedImage(
    ("registry.k8s.io/pause:3.10",), ("registry.k8s.io/pause@sha256:" + "b" * 64,), 320_000
)
ONLY_IMAGE_LOCALITY = Profile(scores=(("ImageLocality", 1000),))


def node(name, images=(), at=AT, status_images=(), heartbeat=None):
    annotations = {}
    if images:
        annotations[ANNOTATION] = encode_annotation(images, at)[0]
    status = {
        "allocatable": {"cpu": "8", "memory": "16Gi", "pods": "110"},
        "images": list(status_images),
    }
    if heartbeat is not None:
        status["conditions"] = [
            {"type": "Ready", "status": "True", "lastHeartbeatTime": format_time(heartbeat)}
        ]
    return {"metadata": {"name": name, "annotations": annotations}, "status": status}


def pod(name, image="registry.example.com/team/app:2.1"):
    container = {"name": "c", "image": image, "resources": {"requests": {"cpu": "100m"}}}
    return {
        "metadata": {"name": name, "namespace": "ns", "uid": name},
        "spec": {"containers": [container]},
    }


def test_the_annotation_is_compact_json_that_reads_back_the_same() -> None:
    value, kept = encode_annotation([PAUSE, APP], AT)
    assert kept == 2
    assert " " not in value
    raw = json.loads(value)
    assert raw["v"] == 1 and raw["at"] == "2026-11-23T23:40:05Z"
    # Largest first; [tags, digests, size].
    assert raw["images"][0] == [list(APP.tags), list(APP.digests), APP.size]
    report = decode_annotation(value)
    assert report.at == AT
    assert report.images == (APP, PAUSE)
    # As the kubelet names an image: digests, then tags.
    assert APP.as_status() == {"names": [*APP.digests, *APP.tags], "sizeBytes": APP.size}


def test_an_annotation_over_its_limit_leaves_out_the_smallest_images() -> None:
    many = [ReportedImage((f"img/{i}:1",), (), (i + 1) * MB) for i in range(400)]
    value, kept = encode_annotation(many, AT, limit=4096)
    assert len(value.encode()) <= 4096
    assert 0 < kept < 400
    sizes = [image.size for image in decode_annotation(value).images]
    assert sizes == sorted((i + 1) * MB for i in range(400))[::-1][:kept]


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("{", "not JSON"),
        ('{"v":2,"at":"2026-11-23T23:40:05Z","images":[]}', '"v"'),
        ('{"v":1,"at":"yesterday","images":[]}', '"at"'),
        ('{"v":1,"at":"2026-11-23T23:40:05Z","images":{}}', '"images" is not a list'),
        ('{"v":1,"at":"2026-11-23T23:40:05Z","images":[["a:1"]]}', "images[0]"),
        ('{"v":1,"at":"2026-11-23T23:40:05Z","images":[[["a:1"],[],-1]]}', "size -1"),
        ('{"v":1,"at":"2026-11-23T23:40:05Z","images":[[["a:1"],[3],1]]}', "lists of strings"),
    ],
)
def test_a_malformed_annotation_says_what_is_wrong(text: str, why: str) -> None:
    with pytest.raises(ValueError) as info:
        decode_annotation(text)
    assert why in str(info.value)


def test_the_newer_report_counts() -> None:
    kubelet = [{"names": ["registry.k8s.io/pause:3.10"], "sizeBytes": 1}]
    from_reporter = (APP.as_status(),)
    # Only the annotation (kwok nodes, kubelets that report nothing).
    assert node_images(node("a", [APP])) == from_reporter
    # Only the kubelet.
    assert node_images(node("a", status_images=kubelet)) == kubelet
    # Both: the annotation is newer than the kubelet's last status report, or older.
    older = AT - timedelta(minutes=1)
    newer = AT + timedelta(minutes=1)
    both = {"images": [APP], "status_images": kubelet}
    assert node_images(node("a", heartbeat=older, **both)) == from_reporter
    assert node_images(node("a", heartbeat=newer, **both)) == kubelet
    assert node_images(node("a", heartbeat=AT, **both)) == kubelet  # a tie keeps the kubelet's
    # A kubelet list with no heartbeat to date it counts as older.
    assert node_images(node("a", **both)) == from_reporter
    # An annotation that does not parse is ignored.
    broken = node("a", status_images=kubelet)
    broken["metadata"]["annotations"][ANNOTATION] = "{not json"
    assert node_images(broken) == kubelet


def test_an_annotation_dated_in_the_future_counts_from_when_it_was_first_seen() -> None:
    kubelet = [{"names": ["registry.k8s.io/pause:3.10"], "sizeBytes": 1}]
    from_reporter = (APP.as_status(),)
    future = AT + timedelta(days=365)  # a reporter whose clock is a year ahead
    first_seen = AT
    reported = node("a", [APP, PAUSE], at=future, status_images=kubelet)
    # First seen at AT, against a kubelet report from before: the annotation is newer.
    reported["status"]["conditions"] = [
        {"type": "Ready", "lastHeartbeatTime": format_time(AT - timedelta(seconds=10))}
    ]
    assert node_images(reported, now=first_seen) == (APP.as_status(), PAUSE.as_status())
    # The kubelet reports again a minute later: its list wins, as against an annotation
    # written at AT, however much later it is asked.
    later = AT + timedelta(minutes=1)
    reported["status"]["conditions"][0]["lastHeartbeatTime"] = format_time(later)
    for now in (later, later + timedelta(hours=1), future + timedelta(days=1)):
        assert node_images(reported, now=now) == kubelet
    # A time in the past is taken as written.
    honest = node("b", [APP], at=AT - timedelta(minutes=5), status_images=kubelet,
                  heartbeat=AT - timedelta(minutes=6))  # fmt: skip
    assert node_images(honest, now=later) == from_reporter


def test_the_kernel_scores_images_known_only_from_the_annotation() -> None:
    state = ClusterState()
    for n in (node("n0"), node("n1", [APP, PAUSE]), node("n2", [PAUSE])):
        state.add_node(n)
    result = plan(state, [pod("p")], ONLY_IMAGE_LOCALITY)
    assert result.nodes == ["n1"]


def test_pods_spread_when_every_node_has_the_image() -> None:
    # ImageLocality alone scores the three nodes alike, placement after placement: each
    # pod is drawn among the three, as kube-scheduler does (issue 30: not all on n0).
    state = ClusterState()
    for i in range(3):
        state.add_node(node(f"n{i}", [APP]))
    used, spread = set(), 0
    for seed in range(20):
        result = plan(
            state, [pod(f"p{i}") for i in range(6)], ONLY_IMAGE_LOCALITY, ties=TieBreak(seed)
        )
        assert result.ties == [3] * 6
        assert set(result.nodes) <= {"n0", "n1", "n2"}
        spread += len(set(result.nodes)) >= 2
        used |= set(result.nodes)
    # every pod on one node has chance 1/243 of the draws: a seed or two at most
    assert spread >= 18
    assert used == {"n0", "n1", "n2"}


def test_pods_all_go_to_the_only_node_with_the_image() -> None:
    state = ClusterState()
    state.add_node(node("n0"))
    state.add_node(node("n1", [APP]))
    state.add_node(node("n2"))
    result = plan(state, [pod(f"p{i}") for i in range(6)], ONLY_IMAGE_LOCALITY)
    assert result.nodes == ["n1"] * 6
    assert result.ties == [1] * 6


def test_an_update_of_the_annotation_moves_the_image() -> None:
    state = ClusterState()
    state.add_node(node("n0", [APP]))
    state.add_node(node("n1", [PAUSE]))
    assert plan(state, [pod("p")], ONLY_IMAGE_LOCALITY).nodes == ["n0"]
    state.update_node(node("n0", [PAUSE], at=AT + timedelta(seconds=30)))
    state.update_node(node("n1", [APP, PAUSE], at=AT + timedelta(seconds=30)))
    assert plan(state, [pod("p")], ONLY_IMAGE_LOCALITY).nodes == ["n1"]


def test_reference_scores_the_annotation_as_the_kernel_does() -> None:
    nodes = [node("n0", [PAUSE]), node("n1", [APP, PAUSE]), node("n2", [APP])]
    cache = Cache()
    for n in nodes:
        cache.add_node(n)
    snapshot = cache.snapshot()
    scores = reference.score(pod("p"), snapshot, snapshot.nodes)
    # 600Mi spread over 2 of 3 nodes = 400Mi, on a 23Mi..1000Mi scale.
    expected = 100 * (400 * MB - 23 * MB) // (1000 * MB - 23 * MB)
    assert scores == {"n0": 0, "n1": expected, "n2": expected}


def test_the_score_is_upstreams_calculate_priority() -> None:
    mib = 1024 * 1024
    # 500 MiB held by one node of two: 250 MiB, (250 - 23) / (1000 - 23) of the way.
    assert image_locality.scaled_size(500 * mib, 1, 2) == 250 * mib
    sums = np.array([0, 250 * mib, 23 * mib, 5000 * mib], dtype=np.int64)
    assert image_locality.scores(sums, 1).tolist() == [0, 23, 0, 100]
    # Two containers double the ceiling: 5000 MiB clamps to 2000 MiB, still 100.
    assert image_locality.scores(sums, 2).tolist() == [0, 11, 0, 100]
    assert image_locality.scores(sums, 0).tolist() == [0, 0, 0, 0]
    assert image_locality.normalized_image_name("nginx") == "nginx:latest"
    assert image_locality.normalized_image_name("host:5000/app") == "host:5000/app:latest"


def test_the_modules_channel_scores_one_pod_as_the_plain_reference() -> None:
    nodes = [node("n0", [PAUSE]), node("n1", [APP, PAUSE]), node("n2", [APP]), node("n3")]
    cache = Cache()
    for n in nodes:
        cache.add_node(n)
    snapshot = cache.snapshot()
    sidecar = pod("p")
    sidecar["spec"]["initContainers"] = [{"name": "i", "image": "registry.k8s.io/pause:3.10"}]
    for p in (pod("p"), pod("q", image="registry.k8s.io/pause:3.10"), sidecar):
        expected = reference.score(p, snapshot, snapshot.nodes)
        assert channel_scores(image_locality.SPEC, None, p, snapshot.nodes) == expected
        # over some of the nodes, the shares stay those of the whole cluster
        some = snapshot.nodes[1:3]
        assert channel_scores(image_locality.SPEC, None, p, some, snapshot) == {
            n.name: expected[n.name] for n in some
        }
    assert max(reference.score(sidecar, snapshot, snapshot.nodes).values()) > 0

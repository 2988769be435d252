"""Typed views of the API objects the scheduler reads: only the fields scheduling needs.

msgspec decodes the raw bytes of a list page or watch line straight into these Structs;
every field the scheduler does not read (managedFields, most of status, env, volumes'
sources, ...) is skipped by the decoder without being materialised, which is what makes
decoding tens of thousands of pods cheap.

The Structs use the API's own field names (camelCase through ``rename="camel"``, explicit
names where Kubernetes' spelling differs, e.g. ``hostIP``) and ``omit_defaults``, so
``to_api_dict(obj)`` (``msgspec.to_builtins``) gives back an API-JSON-shaped dict with the
same keys as the API server's objects, restricted to these fields and without empty ones.
That dict is what ``kubesalvo.core`` (ClusterState, pod encoding) consumes. Quantities stay
strings ("500m", "1Gi"); core parses them.
"""

from __future__ import annotations

from typing import Any, Generic, TypeVar

import msgspec

from kubesalvo.core.volumes import resolve_ephemeral


class _Api(msgspec.Struct, rename="camel", omit_defaults=True, gc=False):
    """Base: camelCase names as in the API, unknown fields ignored, defaults omitted.

    ``gc=False``: these objects hold only strings, numbers, lists, dicts and other such
    Structs, so they can never be part of a reference cycle; leaving them out of the
    cycle collector's lists cuts about a third of the objects it walks with a large
    cluster in memory.
    """


class OwnerReference(_Api):
    api_version: str = ""
    kind: str = ""
    name: str = ""
    uid: str = ""
    controller: bool = False


class ObjectMeta(_Api):
    name: str = ""
    namespace: str = ""
    uid: str = ""
    resource_version: str = ""
    labels: dict[str, str] = {}
    annotations: dict[str, str] = {}
    owner_references: list[OwnerReference] = []
    creation_timestamp: str | None = None
    deletion_timestamp: str | None = None


class LabelSelectorRequirement(_Api):
    key: str = ""
    operator: str = ""
    values: list[str] = []


class LabelSelector(_Api):
    match_labels: dict[str, str] = {}
    match_expressions: list[LabelSelectorRequirement] = []


class NodeSelectorRequirement(_Api):
    key: str = ""
    operator: str = ""
    values: list[str] = []


class NodeSelectorTerm(_Api):
    match_expressions: list[NodeSelectorRequirement] = []
    match_fields: list[NodeSelectorRequirement] = []


class NodeSelector(_Api):
    node_selector_terms: list[NodeSelectorTerm] = []


class PreferredSchedulingTerm(_Api):
    weight: int = 0
    preference: NodeSelectorTerm = msgspec.field(default_factory=NodeSelectorTerm)


class NodeAffinity(_Api):
    required_during_scheduling_ignored_during_execution: NodeSelector | None = None
    preferred_during_scheduling_ignored_during_execution: list[PreferredSchedulingTerm] = []


class PodAffinityTerm(_Api):
    label_selector: LabelSelector | None = None
    namespaces: list[str] = []
    topology_key: str = ""
    namespace_selector: LabelSelector | None = None
    match_label_keys: list[str] = []
    mismatch_label_keys: list[str] = []


class WeightedPodAffinityTerm(_Api):
    weight: int = 0
    pod_affinity_term: PodAffinityTerm = msgspec.field(default_factory=PodAffinityTerm)


class PodAffinity(_Api):
    required_during_scheduling_ignored_during_execution: list[PodAffinityTerm] = []
    preferred_during_scheduling_ignored_during_execution: list[WeightedPodAffinityTerm] = []


class Affinity(_Api):
    node_affinity: NodeAffinity | None = None
    pod_affinity: PodAffinity | None = None
    pod_anti_affinity: PodAffinity | None = None


class Toleration(_Api):
    key: str = ""
    operator: str = ""
    value: str = ""
    effect: str = ""
    toleration_seconds: int | None = None


class TopologySpreadConstraint(_Api):
    max_skew: int = 0
    topology_key: str = ""
    when_unsatisfiable: str = ""
    label_selector: LabelSelector | None = None
    min_domains: int | None = None
    node_affinity_policy: str | None = None
    node_taints_policy: str | None = None
    match_label_keys: list[str] = []


class ResourceRequirements(_Api):
    requests: dict[str, str] = {}
    limits: dict[str, str] = {}


class ContainerPort(_Api):
    container_port: int = 0
    host_port: int = 0
    protocol: str = ""
    host_ip: str = msgspec.field(default="", name="hostIP")


class Container(_Api):
    name: str = ""
    image: str = ""
    resources: ResourceRequirements | None = None
    ports: list[ContainerPort] = []
    # "Always" marks a restartable init container (a sidecar), which changes request sums.
    restart_policy: str | None = None


class PodSchedulingGate(_Api):
    name: str = ""


class Volume(_Api):
    """A volume, with only the sources that volume filters inspect (any other source, such
    as the service-account token's projected volume, is skipped while decoding)."""

    name: str = ""
    persistent_volume_claim: dict[str, Any] | None = None
    ephemeral: dict[str, Any] | None = None
    csi: dict[str, Any] | None = None
    gce_persistent_disk: dict[str, Any] | None = None
    aws_elastic_block_store: dict[str, Any] | None = None
    rbd: dict[str, Any] | None = None
    iscsi: dict[str, Any] | None = None


class PodSpec(_Api):
    node_name: str = ""
    scheduler_name: str = ""
    priority: int | None = None
    priority_class_name: str = ""
    preemption_policy: str | None = None
    node_selector: dict[str, str] = {}
    affinity: Affinity | None = None
    tolerations: list[Toleration] = []
    topology_spread_constraints: list[TopologySpreadConstraint] = []
    containers: list[Container] = []
    init_containers: list[Container] = []
    overhead: dict[str, str] = {}
    scheduling_gates: list[PodSchedulingGate] = []
    host_network: bool = False
    resources: ResourceRequirements | None = None  # pod-level resources (1.34 beta)
    runtime_class_name: str | None = None
    restart_policy: str = ""
    volumes: list[Volume] = []
    resource_claims: list[dict[str, Any]] = []


class PodCondition(_Api):
    type: str = ""
    status: str = ""
    reason: str = ""
    message: str = ""
    last_transition_time: str = ""  # RFC 3339; QosAware's table reads when pods ran


class ContainerStatus(_Api):
    """What the kubelet reports of a container's resources (in-place resize, 1.34 beta):
    the scheduler counts the larger of these and the spec on a bound pod."""

    name: str = ""
    resources: ResourceRequirements | None = None
    allocated_resources: dict[str, str] = {}


class PodStatus(_Api):
    phase: str = ""
    nominated_node_name: str = ""
    start_time: str = ""  # RFC 3339; preemption orders victims by it
    conditions: list[PodCondition] = []
    container_statuses: list[ContainerStatus] = []
    init_container_statuses: list[ContainerStatus] = []
    # the ResourceClaims kube-controller-manager made from the pod's claim templates
    resource_claim_statuses: list[dict[str, Any]] = []


class Pod(_Api):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: PodSpec = msgspec.field(default_factory=PodSpec)
    status: PodStatus = msgspec.field(default_factory=PodStatus)


class Taint(_Api):
    key: str = ""
    value: str = ""
    effect: str = ""


class NodeSpec(_Api):
    unschedulable: bool = False
    taints: list[Taint] = []


class NodeCondition(_Api):
    type: str = ""
    status: str = ""
    # When the kubelet last reported its status (its image list with it): ImageLocality
    # takes the newer of that list and the image reporter's annotation. Not an event.
    last_heartbeat_time: str | None = None


class ContainerImage(_Api):
    names: list[str] = []
    size_bytes: int = 0


class NodeStatus(_Api):
    capacity: dict[str, str] = {}
    allocatable: dict[str, str] = {}
    conditions: list[NodeCondition] = []
    images: list[ContainerImage] = []


class Node(_Api):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: NodeSpec = msgspec.field(default_factory=NodeSpec)
    status: NodeStatus = msgspec.field(default_factory=NodeStatus)


class NamespaceStatus(_Api):
    phase: str = ""


class Namespace(_Api):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    status: NamespaceStatus = msgspec.field(default_factory=NamespaceStatus)


class PodDisruptionBudgetSpec(_Api):
    # int or percentage string, as in the API (IntOrString).
    min_available: int | str | None = None
    max_unavailable: int | str | None = None
    selector: LabelSelector | None = None
    unhealthy_pod_eviction_policy: str | None = None


class PodDisruptionBudgetStatus(_Api):
    disruptions_allowed: int = 0
    current_healthy: int = 0
    desired_healthy: int = 0
    expected_pods: int = 0
    disrupted_pods: dict[str, str] = {}


class PodDisruptionBudget(_Api):
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)
    spec: PodDisruptionBudgetSpec = msgspec.field(default_factory=PodDisruptionBudgetSpec)
    status: PodDisruptionBudgetStatus = msgspec.field(default_factory=PodDisruptionBudgetStatus)


class WorkloadMeta(_Api):
    """What default spreading reads of a workload's metadata (and what the store needs)."""

    name: str = ""
    namespace: str = ""
    uid: str = ""
    resource_version: str = ""


class SetSelectorSpec(_Api):
    """A Service's or ReplicationController's spec: only its map selector."""

    selector: dict[str, str] | None = None


class LabelSelectorSpec(_Api):
    """A ReplicaSet's or StatefulSet's spec: only its label selector."""

    selector: LabelSelector | None = None


class Service(_Api):
    metadata: WorkloadMeta = msgspec.field(default_factory=WorkloadMeta)
    spec: SetSelectorSpec = msgspec.field(default_factory=SetSelectorSpec)


class ReplicationController(_Api):
    metadata: WorkloadMeta = msgspec.field(default_factory=WorkloadMeta)
    spec: SetSelectorSpec = msgspec.field(default_factory=SetSelectorSpec)


class ReplicaSet(_Api):
    metadata: WorkloadMeta = msgspec.field(default_factory=WorkloadMeta)
    spec: LabelSelectorSpec = msgspec.field(default_factory=LabelSelectorSpec)


class StatefulSet(_Api):
    metadata: WorkloadMeta = msgspec.field(default_factory=WorkloadMeta)
    spec: LabelSelectorSpec = msgspec.field(default_factory=LabelSelectorSpec)


Workload = Service | ReplicationController | ReplicaSet | StatefulSet


class Owned(_Api):
    """Only the metadata of an object (its owners): what QosAware reads of ReplicaSets and
    Jobs to find the Deployment or CronJob behind a pod."""

    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)


class ListMeta(_Api):
    resource_version: str = ""
    continue_: str = msgspec.field(default="", name="continue")
    remaining_item_count: int | None = None


T = TypeVar("T")


class ObjectList(_Api, Generic[T]):
    """One page of a LIST: its items decode straight into the resource's Struct."""

    metadata: ListMeta = msgspec.field(default_factory=ListMeta)
    items: list[T] = []


def object_list(item: type[T]) -> type[ObjectList[T]]:
    """``ObjectList[item]`` for an item type known only at run time (a resource's)."""
    alias: Any = ObjectList
    made: type[ObjectList[T]] = alias[item]
    return made


class MetaOnly(_Api):
    """What a BOOKMARK event carries: only metadata.resourceVersion is meaningful."""

    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)


KubeObject = Pod | Node | Namespace | PodDisruptionBudget


def to_api_dict(obj: msgspec.Struct) -> dict[str, Any]:
    """The API-JSON-shaped dict of a decoded object (camelCase keys, empty fields left out).

    This is the conversion to hand objects to ``kubesalvo.core``; it costs one pass over
    the Struct, far less than decoding the API's full JSON into dicts would.
    """
    result: dict[str, Any] = msgspec.to_builtins(obj)
    if isinstance(obj, Pod) and any(v.ephemeral is not None for v in obj.spec.volumes):
        return resolve_ephemeral(result)  # their claims are named by the pod's
    return result

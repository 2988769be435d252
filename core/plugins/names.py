"""The plugins' names, kube-scheduler's spelling, collected in one place.

As kube-scheduler's ``framework/plugins/names``: each plugin module takes its ``NAME``
from here, and code that needs a name without the plugin (the default plugin list, the
queue) reads it here too. kubesalvo's own plugins sit at the end.
"""

from __future__ import annotations

# --- kube-scheduler's plugins -------------------------------------------------------
PRIORITY_SORT = "PrioritySort"
SCHEDULING_GATES = "SchedulingGates"
NODE_UNSCHEDULABLE = "NodeUnschedulable"
NODE_NAME = "NodeName"
TAINT_TOLERATION = "TaintToleration"
NODE_AFFINITY = "NodeAffinity"
NODE_PORTS = "NodePorts"
NODE_RESOURCES_FIT = "NodeResourcesFit"
VOLUME_RESTRICTIONS = "VolumeRestrictions"
NODE_VOLUME_LIMITS = "NodeVolumeLimits"
VOLUME_BINDING = "VolumeBinding"
VOLUME_ZONE = "VolumeZone"
POD_TOPOLOGY_SPREAD = "PodTopologySpread"
INTER_POD_AFFINITY = "InterPodAffinity"
DEFAULT_PREEMPTION = "DefaultPreemption"
NODE_RESOURCES_BALANCED_ALLOCATION = "NodeResourcesBalancedAllocation"
IMAGE_LOCALITY = "ImageLocality"
DEFAULT_BINDER = "DefaultBinder"
DYNAMIC_RESOURCES = "DynamicResources"

# --- kubesalvo's plugins ------------------------------------------------------------
QOS_AWARE = "QosAware"
GROUP_PRIORITY = "GroupPriority"
COSCHEDULING = "Coscheduling"
# The example plugins of "Writing a plugin": a static filter, a static score and a
# normalised score.
NODE_POOL = "NodePool"
NODE_LABEL_PREFERENCE = "NodeLabelPreference"
NODE_LABEL_RANK = "NodeLabelRank"
# Improves a burst's assignment before binding (issue 29).
BURST_PACKING = "BurstPacking"

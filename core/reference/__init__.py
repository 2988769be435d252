"""A plain-Python reference of kube-scheduler v1.34's scheduling cycle: the tests' oracle.

The compiled kernels are tested against this package. Its filters and scores are the
per-node plugins of ``kubesalvo.core.pernode`` (one module per plugin, written to be read
next to upstream's ``pkg/scheduler/framework/plugins``, its rules in the module
docstring, not to be fast), which production also runs where it needs one pod's
per-node answer; the cycle over whole bursts (select, assume, gangs) is the tests' alone.
Production code never imports this package (an import-linter contract says so).

Usage::

    from kubesalvo.core.reference import ReferenceScheduler

    ref = ReferenceScheduler(nodes, pods, namespaces, profile, workloads=())
    ref.filter(pod)        # {node: [reasons]}; [] means feasible
    ref.scores(pod)        # {feasible node: {plugin: weighted score}}
    result = ref.schedule(pod)   # no state change
    result.node                  # a node with the best total, or None
    result.best_nodes            # every node with that total (any is right)
    result.score                 # that total
    result.reason_counts         # {reason: number of nodes}, when result.node is None
    result.message               # "Successfully assigned ns/p to n" or
                                 # "0/5 nodes are available: 3 Insufficient cpu, ..."
                                 # (the filter part; the PostFilter part, e.g.
                                 # preemption's, is appended by whoever runs it:
                                 # see names.post_filter_message)
    result.error                 # a plugin failed the attempt with an error (say, an
                                 # invalid spread selector): message is the error
    ref.assume(pod, node)        # place it: later pods see it
    ref.place_burst(pods, choose=None)  # place in order; gangs all-or-nothing

    cache = Cache()                      # or follow a history of events, as the
    cache.add_node(node); cache.add_pod(pod); cache.remove_node(name)  # cache does
    ref = ReferenceScheduler.from_snapshot(cache.snapshot(namespaces, workloads), profile)

Inputs are API JSON dicts: nodes (labels, taints, ``spec.unschedulable``,
``status.allocatable``, ``status.images``), pods (bound ones with ``spec.nodeName``;
finished ones are ignored), namespaces (labels, for ``namespaceSelector``), and
optionally the Services, ReplicationControllers, ReplicaSets and StatefulSets from
which default spread constraints take their selector. ``profile`` is a
:class:`kubesalvo.core.profile.Profile` (default: kube-scheduler's default profile).

Semantics kept from kube-scheduler:

* a node's failure reasons are those of the first filter, in profile order, that
  rejects it; the message counts nodes per reason (see ``names.fit_error_message``);
* a score plugin's scores are normalised to 0..100 over the feasible nodes only, then
  multiplied by its weight; a plugin kube-scheduler skips for the pod scores 0;
* ties: kube-scheduler picks at random among the best nodes, so any node of
  ``best_nodes`` is a correct choice. ``place_burst(choose=...)`` lets a test follow a
  kernel's choices and compare the states it leads to.

Not modelled (such pods raise ``PodInvalid``): persistent volume claims, CSI and
cloud-disk volumes, resource claims. Not modelled silently: nominated pods of
preemption, extenders, percentageOfNodesToScore (every node is considered).
"""

from kubesalvo.core.pernode.framework import PodInvalid, Status
from kubesalvo.core.pernode.snapshot import Cache
from kubesalvo.core.reference.scheduler import FilterOutcome, ReferenceScheduler, ScheduleResult

__all__ = ["Cache", "FilterOutcome", "PodInvalid", "ReferenceScheduler", "ScheduleResult", "Status"]

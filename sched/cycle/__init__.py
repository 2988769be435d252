"""The burst cycle: pending pods -> one kernel call per profile -> assumed -> binds in flight.

Split along the stages it runs, as kube-scheduler's schedule_one.go: ``burst`` gathers a
burst, places it (with the rooms of nominated pods, ``core.reservations``) and hands the
placed pods to the binding cycle; ``binding`` binds them and settles each bind (confirm,
forget, or report a refusal); ``post_filter`` decides preemption for the pods that fit
nowhere and which PostFilter plugins run; ``report`` is the one failure handler.

One task runs the loop. When the queue has ready pods it may wait for company (``gathering``:
while pods keep arriving close together, at most ``burstGatheringWindow``; a lone pod does
not wait; longer while binds wait for a slot of the binder, when placing sooner buys
nothing) so that pods created together land in one burst, pops every ready
pod (at most ``maxBurstPods`` per profile), and per profile runs ``place_burst`` in a worker
thread (``asyncio.to_thread``; the kernel releases the GIL), so the event loop keeps reading
watches and sending the binds of earlier bursts meanwhile. The cache is frozen while the
kernel runs (see ``cache``); the placements are committed into the state by the kernel
and recorded as assumed before any other change is applied. Each placed pod's bind is
handed to the binder at once and the loop goes on to the next burst without waiting.

How each pod's attempt ends:

* placed and bound: ``Scheduled`` event, the queue is done with it, the cache waits for
  the watch to confirm it;
* placed, bind moot (pod gone, recreated or bound by someone else): forgotten;
* placed, bind failed: forgotten, ``FailedScheduling`` with the error, requeued with the
  error backoff; a replica that lost its lease requeues silently (the leader owns events);
* not placed: ``FailedScheduling`` event and PodScheduled=False (reason Unschedulable)
  with kube-scheduler's text, parked in the queue with the plugins that rejected it;
* not tried because its gang may not be (Coscheduling's PreFilter, ``sched.gangs``: fewer
  members exist than its minimum, it timed out waiting for them, or its PodGroup's
  minResources exceed the free room): ``FailedScheduling`` and PodScheduled=False with
  the reason, parked with Coscheduling; a gang that timed out backs off;
* not placed because a plugin failed the attempt with an error (``PlacementResult.errors``):
  ``FailedScheduling`` with the error and PodScheduled=False (reason SchedulerError), no
  PostFilter, requeued with the error backoff.

Preemption (DefaultPreemption as the profile's postFilter, and a ``cluster`` view given)
runs off the burst path: the burst's pods that fit nowhere (gang members rolled back
excepted) become one job for a background task that takes the jobs one at a time, in
burst order, while the loop goes on with the next bursts; the job's pods stay in flight
in the queue meanwhile, so no burst takes them again before they are reported. Each pod
gets one decision against one picture of the cluster made when the job starts
(``core.preemption``: the informers' pods, assumed ones on their assumed node; each
decision is committed to the picture so that the next pod of the job sees its victims
gone and its nomination). The decisions run in a worker thread; then each is written
(``sched.preemption.execute``: victims marked and deleted, Preempted events,
``nominatedNodeName`` set) and the pod is reported and parked as unschedulable with the
post-filter text appended. The victims' deletions come back through the pod watch, take
their room off the cache and re-activate the pod (ASSIGNED_POD_DELETE); a pod whose
nominated node still has victims terminating is not eligible and just waits. A failed
write backs the pod off as an error. Losing the lease drops the queued jobs (their pods
go back to the queue silently) and the running one writes nothing more; shutdown does
the same and waits (up to the drain timeout) for the running job to finish the writes
it started. The cache is not touched by preemption: the burst's assumptions were
recorded before it starts, and only the watch changes what the state counts.

Nominated pods (kube-scheduler's nominator, kept by the queue): a pending pod nominated
to a node by a preemption holds its room there against pods of lower or equal priority;
pods of higher priority do not see it. Before the kernel runs, the nominated pods the
queue holds outside the burst are assumed on their nodes, the burst is cut where the set
of rooms its pods must respect changes, each segment is placed with its rooms held, and
every room is taken off again before anything else sees the state (pure state logic:
``core.reservations``). A nomination this process writes counts at once, before the
watch shows it.

Binds are only started while ``is_leader()`` holds; losing the lease cancels the binds in
flight (:meth:`stop_binding`). Metrics follow kube-scheduler's names.
"""

from kubesalvo.sched.cycle.burst import Attempt, BurstCycle, CycleSettings
from kubesalvo.sched.cycle.post_filter import ClusterObjects

__all__ = ["Attempt", "BurstCycle", "ClusterObjects", "CycleSettings"]

"""kube-scheduler v1.34's Filter and Score plugins for one pod, node by node, in plain Python.

One module per plugin, each written to be read next to upstream's
``pkg/scheduler/framework/plugins`` (its rules in the module docstring), and
``evaluator.PodEvaluator`` running them as one scheduling cycle does (PreFilter, Filter,
Score). The burst kernel decides placements; this answers the questions it does not: the
per-node status codes and the nodes with pods taken off that DefaultPreemption's dry run
needs (core/preemption.py), the queueing hints' per-pod checks (``*_hint.py``, one per plugin), and
the per-plugin scores that ``explain`` and the web view show. The tests' oracle
(core/reference) drives the same plugins through whole bursts and checks the kernel
against them.
"""

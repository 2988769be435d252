"""kubesalvo.core: node-state matrices, pod encoding and the compiled placement kernels.

``plugins`` holds one module per scheduler plugin and the registry of them; ``encode``
turns a burst into the kernels' static tables, ``place`` runs the burst kernel
(``_place.pyx``), ``reasons`` maps its reason codes (``_codes.pxd``) to plugins and texts,
``preemption`` and ``reservations`` decide on pure state. ``pernode`` holds
kube-scheduler's plugins for one pod, node by node (preemption's dry run, explain);
``reference``, the property tests' oracle, drives them through whole bursts.

Nothing in this package does I/O (no sockets, no asyncio, no logging setup); the runtime in
``kubesalvo.sched`` feeds it objects and acts on its answers. An import-linter contract in CI
holds that line.
"""

"""``kubesalvo bench``: schedulers side by side on one real control plane.

One local control plane (``kubesalvo.sched.cluster``) with kwok nodes; each contender in
turn is started, handed the same burst of pods, measured and stopped, and the pods are
deleted before the next one starts.

- ``workload``: which scenario (a YAML file or a shape) and its pods for one contender.
- ``contenders``: starting and stopping kubesalvo, upstream kube-scheduler and the raw bind
  ceiling (``rawbind``: binds without scheduling).
- ``podwatch``: creates the burst with timestamps and watches when each pod is bound.
- ``usage``: CPU seconds and memory of every process involved, sampled with psutil.
- ``feasibility``: an independent check of the final placements.
- ``harness``: the whole run; ``results``: what it measured; ``report``: table, JSON, plot;
  ``cli``: the command.
"""

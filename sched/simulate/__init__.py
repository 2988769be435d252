"""``kubesalvo simulate``: the embedded default, a whole cluster placed in-process.

A synthetic cluster (the default scenario, a workload shape or a YAML scenario) or a msgpack
snapshot is loaded into a ClusterState, its pending burst is placed by the kernels, and a
summary (placed and not with kube-scheduler's reasons, speed, utilisation, memory) is
printed as tables or one JSON object. No API server is needed.

- ``source``: where the cluster comes from.
- ``run``: loading, placing and measuring.
- ``report``: the JSON object and the tables.
- ``cli``: the subcommand's arguments and exit codes.
"""

from kubesalvo.sched.simulate.cli import configure, main
from kubesalvo.sched.simulate.run import Summary, load_state, simulate

__all__ = ["Summary", "configure", "load_state", "main", "simulate"]

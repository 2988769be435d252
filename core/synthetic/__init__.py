"""Synthetic clusters: seeded fleets of fake nodes and workloads of pods, as API JSON dicts.

The same dicts serve three uses: they are created on a real API server (kwok manages the
nodes), loaded in-process by ``kubesalvo simulate``, and saved as snapshots. Generation does
no I/O and is deterministic for a seed.
"""

from kubesalvo.core.synthetic.nodes import DEFAULT_FLEET, Fleet, make_nodes

__all__ = ["DEFAULT_FLEET", "Fleet", "make_nodes"]

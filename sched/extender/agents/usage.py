"""Where the ``safe`` agent's node usage comes from: metrics.k8s.io, else node annotations.

* ``metrics.k8s.io`` (metrics-server behind the API server's aggregation layer):
  ``GET /apis/metrics.k8s.io/v1beta1/nodes`` is polled every ``sampleSeconds``; each
  NodeMetrics' ``usage.cpu`` and ``usage.memory`` is one sample of that node.
* The fallback, for clusters without a metrics API: any exporter writes a node's usage
  into two annotations, ``kubesalvo.io/usage-cpu`` (a cpu quantity, e.g. ``3500m``) and
  ``kubesalvo.io/usage-memory`` (a memory quantity, e.g. ``12Gi``). A node update whose
  annotation text changed is one sample.

While the metrics API answers, annotation samples are ignored (two sources would double
the sample rate of some nodes); when it stops answering, annotations count again.
"""

from __future__ import annotations

import msgspec

from kubesalvo.core.quantity import milli_value, value

__all__ = [
    "CPU_ANNOTATION",
    "MEMORY_ANNOTATION",
    "NODE_METRICS_PATH",
    "Usage",
    "from_annotations",
    "parse_node_metrics",
]

CPU_ANNOTATION = "kubesalvo.io/usage-cpu"
MEMORY_ANNOTATION = "kubesalvo.io/usage-memory"
NODE_METRICS_PATH = "/apis/metrics.k8s.io/v1beta1/nodes"

# (cpu millicores, memory bytes)
Usage = tuple[int, int]


class _Meta(msgspec.Struct):
    name: str = ""


class _NodeMetrics(msgspec.Struct):
    metadata: _Meta = msgspec.field(default_factory=_Meta)
    usage: dict[str, str] = {}


class _NodeMetricsList(msgspec.Struct):
    items: list[_NodeMetrics] = []


_decoder = msgspec.json.Decoder(_NodeMetricsList)


def _usage(cpu: str, memory: str) -> Usage | None:
    try:
        return milli_value(cpu), value(memory)
    except (ValueError, ArithmeticError):
        return None


def from_annotations(
    annotations: dict[str, str], cpu_key: str = CPU_ANNOTATION, memory_key: str = MEMORY_ANNOTATION
) -> Usage | str | None:
    """A node's usage from its annotations: None when it has none, the error text when
    they are not quantities."""
    cpu = annotations.get(cpu_key)
    memory = annotations.get(memory_key)
    if cpu is None and memory is None:
        return None
    usage = _usage(cpu or "0", memory or "0")
    if usage is None:
        return f"annotations {cpu_key}={cpu!r}, {memory_key}={memory!r} are not quantities"
    return usage


def parse_node_metrics(body: bytes) -> dict[str, Usage]:
    """Usage per node name from a NodeMetricsList (nodes with unreadable usage left out)."""
    result: dict[str, Usage] = {}
    for item in _decoder.decode(body).items:
        usage = _usage(item.usage.get("cpu", "0"), item.usage.get("memory", "0"))
        if usage is not None and item.metadata.name:
            result[item.metadata.name] = usage
    return result

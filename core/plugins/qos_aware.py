"""QosAware (kubesalvo): a queue sort and score by QoS class; registered, not yet built."""

from __future__ import annotations

from kubesalvo.core.plugins import names
from kubesalvo.core.plugins.framework import QUEUE_SORT, SCORE, PluginSpec

NAME = names.QOS_AWARE
SPEC = PluginSpec(NAME, frozenset({QUEUE_SORT, SCORE}))

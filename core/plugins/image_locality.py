"""ImageLocality: nodes that already hold the pod's images score higher (static, ``fixed``)."""

from __future__ import annotations

from kubesalvo.core.plugins import names
from kubesalvo.core.plugins.framework import SCORE, PluginSpec

NAME = names.IMAGE_LOCALITY
SPEC = PluginSpec(NAME, frozenset({SCORE}))

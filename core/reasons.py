"""Reason codes: which plugin each code of the kernels stands for, and its text.

The encoder and the burst kernel count, per pod that fits nowhere, the nodes that failed
with each reason code (``core/_codes.pxd``). A failure stays structured - codes and node
counts, the plugins that rejected the pod - until the edge renders it: the rejecting
plugins come from the codes (the queue parks the pod with them), the texts from this
table (kube-scheduler's FailedScheduling message). Nothing parses a rendered message.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kubesalvo.core import _codes
from kubesalvo.core.plugins import (
    names,
    node_resources_fit,
    registry,
    volume_binding,
)
from kubesalvo.core.volumes import FREE_LOCAL_VOLUMES

__all__ = ["FIXED_REASONS", "ReasonTable"]

# Code -> (plugin, text) for the codes that do not depend on the state's columns: each
# plugin's ``kernel_codes``, by the code's name in core/_codes.pxd.
FIXED_REASONS: dict[int, tuple[str, str]] = dict(
    sorted(
        (int(getattr(_codes, code)), (spec.name, text))
        for spec in registry.PLUGINS.values()
        for text, code in spec.kernel_codes.items()
    )
)


@dataclass(frozen=True)
class ReasonTable:
    """Every code of one state's columns: its text and the plugin that gives it."""

    texts: dict[int, str]
    plugins: dict[int, str]

    @classmethod
    def for_columns(
        cls,
        resource_names: Sequence[str],
        extensions: Mapping[str, tuple[Any, Any, int]] | None = None,
        class_reasons: Mapping[int, tuple[str, str]] | None = None,
    ) -> ReasonTable:
        """The fixed codes, NodeResourcesFit's (one per resource column) and those of the
        profile's static filter plugins (``Encoder.extensions``: name -> (..., code)) and
        class filter plugins (``Encoder.class_reasons``: code -> (plugin, text))."""
        texts = {code: text for code, (_, text) in FIXED_REASONS.items()}
        plugins = {code: plugin for code, (plugin, _) in FIXED_REASONS.items()}
        for code, (plugin, text) in (class_reasons or {}).items():
            texts[code] = text
            plugins[code] = plugin
        for name, (_, _, code) in (extensions or {}).items():
            (texts[code],) = registry.PLUGINS[name].reasons
            plugins[code] = name
        for column, name in enumerate(resource_names):
            code = _codes.FIRST_RESOURCE + column
            if name == FREE_LOCAL_VOLUMES:  # core/volume_slots.py: VolumeBinding's count
                texts[code] = volume_binding.ERR_REASON_BIND_CONFLICT
                plugins[code] = names.VOLUME_BINDING
                continue
            texts[code] = (
                node_resources_fit.ERR_REASON_TOO_MANY_PODS
                if column == _codes.POD_COLUMN
                else node_resources_fit.insufficient_resource(name)
            )
            plugins[code] = names.NODE_RESOURCES_FIT
        return cls(texts, plugins)

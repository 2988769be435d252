"""NodeResourcesBalancedAllocation: favours nodes whose resource shares stay even.

Dynamic, in the burst kernel; here its args (every weight must be 1).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kubesalvo.core.args_reading import ArgsDecoder, build, open_args, resources
from kubesalvo.core.plugins import names
from kubesalvo.core.plugins.framework import (
    PRE_SCORE,
    SCORE,
    ErrorKind,
    FieldError,
    PerNode,
    PluginSpec,
    ResourceSpec,
    check,
)

__all__ = ["NAME", "NodeResourcesBalancedAllocationArgs"]

NAME = names.NODE_RESOURCES_BALANCED_ALLOCATION


@dataclass(frozen=True)
class NodeResourcesBalancedAllocationArgs:
    """NodeResourcesBalancedAllocationArgs: distinct resources, every weight 1."""

    resources: tuple[ResourceSpec, ...] = (ResourceSpec("cpu", 1), ResourceSpec("memory", 1))

    def __post_init__(self) -> None:
        check(self.problems())

    def problems(self) -> list[FieldError]:
        out: list[FieldError] = []
        seen: set[str] = set()
        for i, spec in enumerate(self.resources):
            if spec.name in seen:
                out.append(FieldError(f"resources[{i}].name", ErrorKind.DUPLICATE, spec.name))
            seen.add(spec.name)
            if spec.weight != 1:
                out.append(
                    FieldError(
                        f"resources[{i}].weight", ErrorKind.INVALID, spec.weight, "must be 1"
                    )
                )
        return out


def read_args(d: ArgsDecoder, raw: Any, path: str) -> NodeResourcesBalancedAllocationArgs:
    """NodeResourcesBalancedAllocationArgs from its pluginConfig document."""
    f = open_args(d, raw, path, NAME, ("resources",))
    weighted = tuple(resources(d, f, "resources"))
    default = NodeResourcesBalancedAllocationArgs()
    return build(
        d, path, lambda: NodeResourcesBalancedAllocationArgs(weighted or default.resources), default
    )


def _per_node() -> PerNode:
    """Its per-node Filter and Score, those it has (core/pernode, which imports this
    module)."""
    from kubesalvo.core.pernode.balanced_allocation import PER_NODE

    return PER_NODE


SPEC = PluginSpec(
    NAME,
    frozenset({PRE_SCORE, SCORE}),
    args=NodeResourcesBalancedAllocationArgs,
    args_reader=read_args,
    profile_field="balanced_allocation",
    per_node=_per_node,
)

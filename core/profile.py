"""A scheduling profile: which filters and scores run, their weights and their args.

This is the already-defaulted, validated form of one ``KubeSchedulerProfile`` of a
``KubeSchedulerConfiguration`` (the config loader in ``sched`` builds it from YAML). The
args are the plugins' own models (``core/plugins/<plugin>.py``, kube-scheduler v1.34's
defaults and validation); the ones the kernels read sit here by name. An invalid value
raises :class:`ProfileError` naming the field path and the accepted values.

``Profile.default()`` is kube-scheduler v1.34's default profile (the default plugin set,
weights and args), under kubesalvo's default scheduler name.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from kubesalvo.core import _codes
from kubesalvo.core.plugins import framework, names, registry
from kubesalvo.core.plugins.balanced_allocation import NodeResourcesBalancedAllocationArgs
from kubesalvo.core.plugins.burst_packing import BurstPackingArgs
from kubesalvo.core.plugins.framework import ProfileError
from kubesalvo.core.plugins.inter_pod_affinity import InterPodAffinityArgs
from kubesalvo.core.plugins.node_affinity import NodeAffinityArgs
from kubesalvo.core.plugins.node_resources_fit import NodeResourcesFitArgs
from kubesalvo.core.plugins.pod_topology_spread import PodTopologySpreadArgs
from kubesalvo.core.reasons import FIXED_REASONS

__all__ = ["DEFAULT_SCHEDULER_NAME", "Profile", "ProfileError"]

DEFAULT_SCHEDULER_NAME = "kubesalvo"


@dataclass(frozen=True)
class Profile:
    """One validated scheduling profile.

    ``filters`` run in the given order; a node's failure reasons are those of the first
    filter that rejects it, as in kube-scheduler. ``scores`` map each enabled score
    plugin to its weight (1..; the weighted sum of all plugins must fit int64).
    """

    scheduler_name: str = DEFAULT_SCHEDULER_NAME
    filters: tuple[str, ...] = registry.DEFAULT_FILTER_ORDER
    scores: tuple[tuple[str, int], ...] = tuple(registry.DEFAULT_SCORE_WEIGHTS.items())
    fit: NodeResourcesFitArgs = field(default_factory=NodeResourcesFitArgs)
    balanced_allocation: NodeResourcesBalancedAllocationArgs = field(
        default_factory=NodeResourcesBalancedAllocationArgs
    )
    spread: PodTopologySpreadArgs = field(default_factory=PodTopologySpreadArgs)
    inter_pod_affinity: InterPodAffinityArgs = field(default_factory=InterPodAffinityArgs)
    node_affinity: NodeAffinityArgs = field(default_factory=NodeAffinityArgs)
    # The args of the plugins the profile runs, by name, but those of the fields above; a
    # plugin not listed gets its defaults.
    plugin_args: tuple[tuple[str, object], ...] = ()
    # BurstPacking's args when the profile enables it (place_burst then improves each
    # burst's assignment: core/burst_packing.py); None: the kernel's assignment as is.
    packing: BurstPackingArgs | None = None

    def __post_init__(self) -> None:
        if not self.scheduler_name:
            raise ProfileError("schedulerName", "Required value")
        for i, name in enumerate(self.filters):
            if framework.FILTER not in registry.EXTENSION_POINTS.get(name, frozenset()):
                raise ProfileError(
                    f"plugins.filter.enabled[{i}]", _not_a_plugin(name, framework.FILTER)
                )
        if len(set(self.filters)) != len(self.filters):
            raise ProfileError("plugins.filter.enabled", "Duplicate plugin")
        static = [n for n in self.filters if registry.PLUGINS[n].static_filter is not None]
        # Each static filter takes one reason code, each class filter one per reason, each
        # filter mask and node filter reason one unless it has a code of its own
        # (kube-scheduler's).
        fixed = set(FIXED_REASONS.values())
        codes = len(static) + sum(
            len(registry.PLUGINS[n].reasons)
            for n in self.filters
            if registry.PLUGINS[n].class_filter is not None
        )
        codes += sum(
            (n, m.reason) not in fixed
            for n in self.filters
            for m in registry.PLUGINS[n].filter_masks
        )
        node_filters = [(n, registry.PLUGINS[n].node_filter) for n in self.filters]
        codes += sum(
            (n, reason) not in fixed
            for n, node_filter in node_filters
            if node_filter is not None
            for reason in node_filter.reasons
        )
        if codes > _MAX_EXTENSION_CODES:
            raise ProfileError(
                "plugins.filter.enabled",
                f"the plugin filters need {codes} reason codes, at most "
                f"{_MAX_EXTENSION_CODES} are free; static filter plugins: {static}",
            )
        total = 0
        seen: set[str] = set()
        for i, (name, weight) in enumerate(self.scores):
            path = f"plugins.score.enabled[{i}]"
            if framework.SCORE not in registry.EXTENSION_POINTS.get(name, frozenset()):
                raise ProfileError(f"{path}.name", _not_a_plugin(name, framework.SCORE))
            if name in seen:
                raise ProfileError(f"{path}.name", f"Duplicate value: {name!r}")
            seen.add(name)
            if weight < 1:
                raise ProfileError(f"{path}.weight", f"Invalid value: {weight}: must be at least 1")
            total += weight * framework.MAX_NODE_SCORE
            if total > framework.MAX_TOTAL_SCORE:
                raise ProfileError(f"{path}.weight", "total score of Score plugins could overflow")
        try:
            registry.score_channels(self.scores)
        except registry.ScoreChannelConflict as err:
            raise ProfileError("plugins.score.enabled", str(err)) from None

    @classmethod
    def from_args(
        cls,
        scheduler_name: str,
        filters: tuple[str, ...],
        scores: tuple[tuple[str, int], ...],
        args: Mapping[str, object],
        enabled: Collection[str] = (),
    ) -> Profile:
        """A profile from the plugins' args models by plugin name (the ones the kernels
        read; the others stay with the caller); ``enabled``: every plugin the profile
        runs (BurstPacking acts only when enabled, not when only configured)."""
        kwargs: dict[str, Any] = {
            attr: args[plugin]
            for plugin, attr in _ARGS_FIELDS.items()
            if isinstance(args.get(plugin), registry.ARGS[plugin])
        }
        # Every other plugin the profile runs keeps its configured args: the registry's
        # contributions read them (``args_of``), and so do the runtime halves
        # (DynamicResources' filterTimeout).
        running = dict.fromkeys((*filters, *(n for n, _ in scores), *enabled))
        kwargs["plugin_args"] = tuple(
            (name, args[name]) for name in running if name in args and name not in _ARGS_FIELDS
        )
        if names.BURST_PACKING in enabled:
            packing = args.get(names.BURST_PACKING)
            kwargs["packing"] = (
                packing if isinstance(packing, BurstPackingArgs) else BurstPackingArgs()
            )
        return cls(scheduler_name, filters, scores, **kwargs)

    def args_of(self, plugin: str) -> Any:
        """A plugin's args: as configured, else its defaults (None: it takes none)."""
        attr = _ARGS_FIELDS.get(plugin)
        if attr is not None:
            return getattr(self, attr)
        for name, args in self.plugin_args:
            if name == plugin:
                return args
        model = registry.ARGS.get(plugin)
        return None if model is None else model()

    @classmethod
    def default(cls, scheduler_name: str = DEFAULT_SCHEDULER_NAME) -> Profile:
        """kube-scheduler v1.34's default profile under ``scheduler_name``."""
        return cls(scheduler_name=scheduler_name)

    @property
    def score_weights(self) -> dict[str, int]:
        """Enabled score plugins and their weights."""
        return dict(self.scores)


# Plugin filters get codes R_EXT_FIRST..R_EXT_LAST (core/_codes.pxd).
_MAX_EXTENSION_CODES = _codes.EXTENSION_LAST - _codes.EXTENSION_FIRST + 1
# The args the kernels read: plugin -> Profile field (each plugin's ``profile_field``).
_ARGS_FIELDS = registry.PROFILE_FIELDS


def _not_a_plugin(name: str, point: str) -> str:
    accepted = sorted(p for p, points in registry.EXTENSION_POINTS.items() if point in points)
    return f"Unsupported value: {name!r}: supported values: {accepted}"

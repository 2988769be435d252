"""A profile's plugin sets: read, merged with the defaults, expanded from multiPoint.

This follows kube-scheduler v1.34 step by step:

1. *Defaulting* (``apis/config/v1/default_plugins.go``): the default set lives in
   ``multiPoint``. For every extension point the user's set is merged into the default
   one: a name in ``disabled`` (or ``'*'``) drops the default; a default the user
   enables again is replaced in place (keeping the default order, taking the user's
   weight); the user's other plugins are appended.
2. *Expansion* (``framework/runtime.NewFramework``): each extension point runs, in this
   order, the plugins that the point's own ``enabled`` list re-configures and that are
   also in ``multiPoint``; then the ``multiPoint`` plugins that implement the point and
   are not disabled there (a ``'*'`` at the point skips all of them); then the point's
   remaining own plugins. A plugin listed twice in one ``enabled`` list is refused.
3. *Weights*: a score plugin's weight comes from ``score.enabled`` first, then from
   ``multiPoint``; unset or 0 means 1.

kubesalvo refuses more than kube-scheduler does, by design: a plugin name it does not
know (kube-scheduler only notices unknown *enabled* plugins, and ignores unknown
disabled ones), a plugin listed at an extension point it does not implement, and a
negative weight.

What a plugin implements is read from the registry (``core/plugins/registry.py``: the
points of its ``PluginSpec``), and, where the runtime needs more than the registry's word,
from the runtime's own table: a queue sort plugin must have registered its sort key with
the queue (``sched/queue/sorting.py``), or ``kubesalvo run`` could not order its queue.
A plugin that gains a point (its ``PluginSpec``, plus its sort key for queueSort) is
accepted there with no change here. The check runs twice: on each point's own
``enabled`` list, and on what ``multiPoint`` expands into, where the error names the
multiPoint entry and the point it reached.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from kubesalvo.core.plugins import framework, names, registry
from kubesalvo.sched.config.decode import Decoder, child
from kubesalvo.sched.config.errors import ErrorKind
from kubesalvo.sched.queue.sorting import has_sort_key

__all__ = [
    "ALL_POINTS",
    "MULTI_POINT",
    "POINTS",
    "REMOVED_PLUGINS",
    "ResolvedPlugins",
    "decode_plugins",
]

MULTI_POINT = "multiPoint"
# The extension points, in the order kube-scheduler's configuration lists them.
POINTS: tuple[str, ...] = (
    framework.PRE_ENQUEUE,
    framework.QUEUE_SORT,
    framework.PRE_FILTER,
    framework.FILTER,
    framework.POST_FILTER,
    framework.PRE_SCORE,
    framework.SCORE,
    framework.RESERVE,
    framework.PERMIT,
    framework.PRE_BIND,
    framework.BIND,
    framework.POST_BIND,
)
ALL_POINTS = (*POINTS, MULTI_POINT)

# Go interface names, for kube-scheduler's own error texts.
_INTERFACE = {point: point[0].upper() + point[1:] + "Plugin" for point in POINTS}

# Removed from kube-scheduler before or with config v1; upstream names the version.
REMOVED_PLUGINS = ("AzureDiskLimits", "CinderLimits", "EBSLimits", "GCEPDLimits")
_V1 = "kubescheduler.config.k8s.io/v1"
_MAX_WEIGHT = 2**31 - 1


@dataclass(frozen=True)
class _Entry:
    name: str
    weight: int | None
    path: str  # where the user wrote it; "" for a default


@dataclass(frozen=True)
class _PluginSet:
    enabled: tuple[_Entry, ...] = ()
    disabled: tuple[str, ...] = ()


@dataclass(frozen=True)
class ResolvedPlugins:
    """The plugins a profile runs at each extension point, in order, with score weights."""

    by_point: dict[str, tuple[str, ...]]
    score_weights: tuple[tuple[str, int], ...]
    # Each point's set after step 1, as kube-scheduler's configuration holds it (and its
    # /configz lists it): ``(point, ((name, weight or 0), ...), (disabled name, ...))``.
    merged: tuple[tuple[str, tuple[tuple[str, int], ...], tuple[str, ...]], ...] = ()

    def at(self, point: str) -> tuple[str, ...]:
        return self.by_point.get(point, ())

    @property
    def enabled(self) -> frozenset[str]:
        return frozenset(n for plugins in self.by_point.values() for n in plugins)


def implements(plugin: str, point: str) -> bool:
    """Whether kubesalvo runs ``plugin`` at ``point``: its registry entry says so and, for a
    queue sort, the queue holds its sort key."""
    if point not in registry.EXTENSION_POINTS.get(plugin, frozenset()):
        return False
    return point != framework.QUEUE_SORT or has_sort_key(plugin)


def _implementers(point: str) -> list[str]:
    return sorted(n for n in registry.EXTENSION_POINTS if implements(n, point))


def _not_implemented(name: str, point: str) -> str:
    """Why ``name`` is refused at ``point`` (the registry's answer, or the runtime's)."""
    if point not in registry.EXTENSION_POINTS[name]:
        why = f'plugin "{name}" does not extend {_INTERFACE[point]} plugin'
    else:
        why = f'plugin "{name}" has no {point} implementation in this kubesalvo (no sort key)'
    if not _implementers(point):
        # The error lists no accepted values then: say so rather than print nothing.
        why += f"; no plugin runs at {point} in this kubesalvo"
    return why


def _decode_set(d: Decoder, raw: Any, path: str, point: str) -> _PluginSet:
    f = d.fields(raw, path, ("enabled", "disabled"))
    known = registry.EXTENSION_POINTS
    accepted = sorted(known) if point == MULTI_POINT else _implementers(point)
    enabled: list[_Entry] = []
    for item, p in d.items(f.raw("enabled"), f.at("enabled")):
        pf = d.fields(item, p, ("name", "weight"))
        name = pf.text("name")
        weight = pf.integer("weight")
        npath = pf.at("name")
        if not name:
            d.fail(npath, ErrorKind.REQUIRED, detail="a plugin needs a name")
        elif name in REMOVED_PLUGINS:
            d.invalid(
                p,
                name,
                f'was invalid in version "{_V1}" (KubeSchedulerConfiguration is version "{_V1}")',
            )
        elif name not in known:
            d.fail(npath, ErrorKind.UNSUPPORTED, name, detail="unknown plugin", accepted=accepted)
        elif point != MULTI_POINT and not implements(name, point):
            d.fail(
                npath,
                ErrorKind.UNSUPPORTED,
                name,
                detail=_not_implemented(name, point),
                accepted=accepted,
            )
        elif point == MULTI_POINT and not known[name]:
            # (a point it lists but the runtime lacks is named after expansion)
            d.fail(
                npath,
                ErrorKind.UNSUPPORTED,
                name,
                detail=f'plugin "{name}" implements no extension point',
                accepted=[n for n in accepted if known[n]],
            )
        if weight is not None and not 0 <= weight <= _MAX_WEIGHT:
            d.invalid(pf.at("weight"), weight, f"not in valid range [0, {_MAX_WEIGHT}]")
        if name and any(e.name == name for e in enabled):
            registered = "multiPoint" if point == MULTI_POINT else _INTERFACE[point]
            d.fail(
                npath,
                ErrorKind.DUPLICATE,
                name,
                detail=f'plugin "{name}" already registered as "{registered}"',
            )
        enabled.append(_Entry(name, weight, npath))
    disabled: list[str] = []
    for item, p in d.items(f.raw("disabled"), f.at("disabled")):
        pf = d.fields(item, p, ("name", "weight"))
        name = pf.text("name")
        if name != "*" and name not in known and name not in REMOVED_PLUGINS:
            d.fail(
                pf.at("name"),
                ErrorKind.UNSUPPORTED,
                name,
                detail="unknown plugin",
                accepted=["*", *sorted(known)],
            )
        disabled.append(name)
    return _PluginSet(tuple(enabled), tuple(disabled))


def _merge(default: _PluginSet, custom: _PluginSet) -> _PluginSet:
    disabled = set(custom.disabled) | set(default.disabled)
    custom_by_name = {e.name: i for i, e in enumerate(custom.enabled)}
    replaced: set[int] = set()
    enabled: list[_Entry] = []
    if "*" not in disabled:
        for entry in default.enabled:
            if entry.name in disabled:
                continue
            i = custom_by_name.get(entry.name)
            if i is not None:
                entry = custom.enabled[i]
                replaced.add(i)
            enabled.append(entry)
    enabled.extend(e for i, e in enumerate(custom.enabled) if i not in replaced)
    return _PluginSet(tuple(enabled), (*custom.disabled, *default.disabled))


def _default_sets() -> dict[str, _PluginSet]:
    multi = tuple(
        _Entry(n, registry.DEFAULT_SCORE_WEIGHTS.get(n), "") for n in registry.DEFAULT_PLUGINS
    )
    sets = {point: _PluginSet() for point in POINTS}
    sets[MULTI_POINT] = _PluginSet(multi)
    return sets


def _expand(sets: dict[str, _PluginSet]) -> dict[str, tuple[str, ...]]:
    """Each point's plugins in run order (a name listed twice was refused when read)."""
    multi = sets[MULTI_POINT]
    by_point: dict[str, tuple[str, ...]] = {}
    for point in POINTS:
        own = sets[point]
        own_names = list(dict.fromkeys(e.name for e in own.enabled))
        if "*" in own.disabled:
            by_point[point] = tuple(own_names)
            continue
        overrides: set[str] = set()
        from_multi: list[str] = []
        for entry in multi.enabled:
            if point not in registry.MULTI_POINT_EXPANSION.get(entry.name, frozenset()):
                continue
            if entry.name in own.disabled:
                continue
            if entry.name in own_names:
                # Named at the point itself: the user's setting there wins.
                overrides.add(entry.name)
            elif entry.name not in from_multi:
                from_multi.append(entry.name)
        ordered = [n for n in own_names if n in overrides]
        ordered += from_multi
        ordered += [n for n in own_names if n not in overrides]
        by_point[point] = tuple(ordered)
    return by_point


def _check_expanded(
    d: Decoder, custom: dict[str, _PluginSet], by_point: dict[str, tuple[str, ...]], path: str
) -> None:
    """Refuse what the user's multiPoint entries expanded into that the runtime lacks.

    A plugin's registry entry may list a point the runtime cannot run it at yet (a queue
    sort without its key); listed under multiPoint it reaches that point unseen by the
    per-point check, so the error names the multiPoint entry and the point.
    """
    entries = {e.name: e for e in custom[MULTI_POINT].enabled}
    for point in POINTS:
        own = {e.name for e in custom[point].enabled}  # checked where they are written
        for name in by_point[point]:
            entry = entries.get(name)
            if entry is None or name in own or name not in registry.EXTENSION_POINTS:
                continue
            if point in registry.EXTENSION_POINTS[name] and not implements(name, point):
                d.fail(
                    entry.path,
                    ErrorKind.UNSUPPORTED,
                    name,
                    detail=f"multiPoint expands it into {child(path, point)}: "
                    + _not_implemented(name, point),
                    accepted=_implementers(point),
                )


def _score_weights(
    sets: dict[str, _PluginSet], scores: Iterable[str]
) -> tuple[tuple[str, int], ...]:
    weights: dict[str, int] = {}
    for entry in (*sets[framework.SCORE].enabled, *sets[MULTI_POINT].enabled):
        if entry.name not in weights:
            weights[entry.name] = entry.weight or 1
    return tuple((n, weights.get(n, 1)) for n in scores)


def _declared_weight(entry: _Entry) -> int:
    """The weight as the configuration holds it: upstream's default list gives
    VolumeBinding none (the framework's 1 applies when it runs), a weight not written is 0."""
    if not entry.path and entry.name == names.VOLUME_BINDING:
        return 0
    return entry.weight or 0


def decode_plugins(d: Decoder, raw: Any, path: str, scheduler_name: str) -> ResolvedPlugins:
    """Read ``profiles[i].plugins``, merge it into the defaults and expand it."""
    f = d.fields(raw, path, ALL_POINTS)
    custom = {point: _decode_set(d, f.raw(point), f.at(point), point) for point in ALL_POINTS}
    defaults = _default_sets()
    merged = {point: _merge(defaults[point], custom[point]) for point in ALL_POINTS}
    by_point = _expand(merged)
    _check_expanded(d, custom, by_point, path)

    sorts = by_point[framework.QUEUE_SORT]
    if len(sorts) != 1:
        d.invalid(
            child(path, framework.QUEUE_SORT),
            list(sorts),
            f"only one queue sort plugin required for profile with scheduler name "
            f'"{scheduler_name}", but got {len(sorts)}',
        )
    if not by_point[framework.BIND]:
        d.fail(
            child(path, framework.BIND),
            ErrorKind.REQUIRED,
            detail=f"at least one bind plugin is needed for profile with scheduler name "
            f'"{scheduler_name}"',
            accepted=_implementers(framework.BIND),
        )
    configured = tuple(
        (
            point,
            tuple((e.name, _declared_weight(e)) for e in merged[point].enabled),
            merged[point].disabled,
        )
        for point in ALL_POINTS
    )
    return ResolvedPlugins(by_point, _score_weights(merged, by_point[framework.SCORE]), configured)

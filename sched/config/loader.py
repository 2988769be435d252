"""Load a KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1) file.

``load_config(path)`` reads, defaults and validates a file the way kube-scheduler v1.34
does (``apis/config/v1/defaults.go``, ``apis/config/validation``, the framework's plugin
checks) and returns a :class:`SchedulerConfig`, or raises :class:`ConfigError` listing
every problem with its field path and the accepted values. ``load_config(None)`` is the
documented default: one profile named ``kubesalvo`` with kube-scheduler's default plugins,
weights and args (deploy/config/default.yaml spells it out).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from kubesalvo.core.plugins import registry
from kubesalvo.core.profile import Profile, ProfileError
from kubesalvo.sched.config.args import API_VERSION, ARGS_DECODERS, PluginArgs, default_args
from kubesalvo.sched.config.decode import INT64_MAX, Decoder, Fields, child, safe_load_strict
from kubesalvo.sched.config.errors import ConfigError, ErrorKind, FieldError
from kubesalvo.sched.config.gates import FeatureGates
from kubesalvo.sched.config.model import (
    DEFAULT_LEASE_NAME,
    DEFAULT_LEASE_NAMESPACE,
    ClientConnection,
    KubesalvoOptions,
    LeaderElection,
    ProfileConfig,
    SchedulerConfig,
)
from kubesalvo.sched.config.plugins import ResolvedPlugins, decode_plugins

__all__ = ["DEFAULT_SCHEDULER_NAME", "KIND", "default_config", "load_config", "parse_config"]

KIND = "KubeSchedulerConfiguration"
DEFAULT_SCHEDULER_NAME = "kubesalvo"
# The pluginConfig entry that holds kubesalvo's own settings (KubesalvoOptions): a name
# kube-scheduler does not know, whose args it keeps unread, so that one file serves both.
KUBESALVO_PLUGIN = "Kubesalvo"
_OPTION_FIELDS = ("maxBurstPods", "burstGatheringWindow", "podMaxInUnschedulablePodsDuration")
LEGACY_BLOCK_DEPRECATED = (
    "the top-level `kubesalvo:` block is deprecated (kube-scheduler refuses a file that "
    f'has it): move its fields to the args of a pluginConfig entry named "{KUBESALVO_PLUGIN}"'
)
_CONTENT_TYPES = ("application/json", "application/vnd.kubernetes.protobuf")
_TOP_FIELDS = (
    "apiVersion",
    "kind",
    "parallelism",
    "leaderElection",
    "clientConnection",
    "enableProfiling",
    "enableContentionProfiling",
    "percentageOfNodesToScore",
    "podInitialBackoffSeconds",
    "podMaxBackoffSeconds",
    "profiles",
    "extenders",
    "delayCacheUntilActive",
    "kubesalvo",
)
# kube-scheduler's default (apis/config/v1/defaults.go); the only value kubesalvo accepts.
DEFAULT_PARALLELISM = 16
_NOT_SCORED_NOTE = (
    "{path} is accepted and ignored: kubesalvo scores every feasible node, "
    "whatever the cluster size"
)


def load_config(path: str | Path | None, gates: FeatureGates | None = None) -> SchedulerConfig:
    """The configuration in ``path``, or the default one when ``path`` is None, read
    with the feature gates ``gates`` (``--feature-gates``; v1.34's defaults if None)."""
    if path is None:
        return default_config(gates)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
        raise ConfigError(
            [_error("", ErrorKind.INVALID, str(path), f"cannot read file: {reason}")],
            source=str(path),
        ) from exc
    return parse_config(text, source=str(path), gates=gates)


def default_config(gates: FeatureGates | None = None) -> SchedulerConfig:
    text = f"apiVersion: {API_VERSION}\nkind: {KIND}\n"
    return parse_config(text, source="<default>", gates=gates)


def parse_config(
    text: str, source: str = "<string>", gates: FeatureGates | None = None
) -> SchedulerConfig:
    """Parse, default and validate a configuration document given as YAML or JSON text."""
    try:
        raw = safe_load_strict(text)
    except yaml.YAMLError as exc:
        raise ConfigError(
            [_error("", ErrorKind.INVALID, None, f"not valid YAML: {exc}")], source=source
        ) from exc
    except RecursionError as exc:
        # PyYAML's composer recurses once per level: thousands of `[` exhaust the stack.
        raise ConfigError(
            [_error("", ErrorKind.INVALID, None, "nested too deeply to be a configuration")],
            source=source,
        ) from exc
    d = Decoder(gates)
    config = _decode(d, raw, source)
    if d.errors or config is None:
        raise ConfigError(d.errors, source=source)
    return config


def _error(path: str, kind: ErrorKind, value: Any, detail: str) -> FieldError:
    return FieldError(path, kind, value, detail)


def _decode(d: Decoder, raw: Any, source: str) -> SchedulerConfig | None:
    if not isinstance(raw, dict):
        d.wrong_type("", raw, "object (a KubeSchedulerConfiguration)")
        return None
    f = d.fields(raw, "", _TOP_FIELDS)
    api_version = f.opt_text("apiVersion")
    if api_version is None:
        d.fail("apiVersion", ErrorKind.REQUIRED, accepted=(API_VERSION,))
    elif api_version != API_VERSION:
        d.fail("apiVersion", ErrorKind.UNSUPPORTED, api_version, accepted=(API_VERSION,))
    kind = f.opt_text("kind")
    if kind is None:
        d.fail("kind", ErrorKind.REQUIRED, accepted=(KIND,))
    elif kind != KIND:
        d.fail("kind", ErrorKind.UNSUPPORTED, kind, accepted=(KIND,))

    notes: list[str] = []
    parallelism = f.integer("parallelism", DEFAULT_PARALLELISM)
    assert parallelism is not None
    if parallelism <= 0:
        d.invalid("parallelism", parallelism, "should be an integer value greater than zero")
    elif parallelism != DEFAULT_PARALLELISM:
        d.fail(
            "parallelism",
            ErrorKind.UNSUPPORTED,
            parallelism,
            detail="kubesalvo filters and scores a whole burst in one compiled pass on one "
            "worker thread; there are no goroutines to size: remove the field or set "
            f"{DEFAULT_PARALLELISM}",
            accepted=(str(DEFAULT_PARALLELISM),),
        )
    percentage = _percentage(d, f, notes)
    initial = f.integer("podInitialBackoffSeconds", 1, INT64_MAX)
    maximum = f.integer("podMaxBackoffSeconds", 10, INT64_MAX)
    assert initial is not None and maximum is not None
    if initial <= 0:
        d.invalid("podInitialBackoffSeconds", initial, "must be greater than 0")
    if maximum < initial:
        d.invalid(
            "podMaxBackoffSeconds",
            maximum,
            "must be greater than or equal to PodInitialBackoffSeconds",
        )
    if f.raw("extenders"):
        d.fail(
            "extenders",
            ErrorKind.FORBIDDEN,
            detail="kubesalvo does not call scheduler extenders; its own plugins and "
            "`kubesalvo extender` (which serves the extender protocol) replace them",
        )
    # Honoured: enableProfiling serves /debug/memory (kubesalvo's /debug/pprof/heap).
    profiling = f.flag("enableProfiling", True)
    contention = f.flag("enableContentionProfiling", bool(profiling))
    if f.raw("enableContentionProfiling") is True:
        d.fail(
            "enableContentionProfiling",
            ErrorKind.UNSUPPORTED,
            True,
            detail="kubesalvo has no contention (block) profiler, which is Go's: remove the "
            "field or set false",
            accepted=("false",),
        )
    delay_cache = bool(f.flag("delayCacheUntilActive", False))
    if delay_cache:
        d.fail(
            "delayCacheUntilActive",
            ErrorKind.UNSUPPORTED,
            True,
            detail="kubesalvo keeps its informers and queue warm on a standby so that a "
            "takeover schedules at once: remove the field or set false",
            accepted=("false",),
        )
    # Read in the order a file usually lists them, so that errors come out that way.
    client_connection = _client_connection(d, f, notes)
    leader_election = _leader_election(d, f)
    legacy = f.raw("kubesalvo")
    options = _kubesalvo(d, legacy, "kubesalvo", ())
    found: list[tuple[str, KubesalvoOptions]] = []
    profiles = _profiles(d, f, notes, found)
    deprecations: list[tuple[str, str]] = []
    if legacy is not None:
        deprecations.append(("kubesalvo", LEGACY_BLOCK_DEPRECATED))
        if found:
            d.invalid(
                "kubesalvo",
                None,
                f"kubesalvo's settings are also given in {found[0][0]}: keep only that one "
                "(the top-level block is deprecated)",
            )
    if found:
        options = found[0][1]
        for path, other in found[1:]:
            if other != options:
                d.invalid(
                    path,
                    None,
                    f"must be the same in every profile that gives it ({found[0][0]} "
                    "differs): one process has one burst cycle and one queue",
                )
    return SchedulerConfig(
        profiles=profiles,
        client_connection=client_connection,
        leader_election=leader_election,
        parallelism=parallelism,
        percentage_of_nodes_to_score=percentage,
        pod_initial_backoff_seconds=initial,
        pod_max_backoff_seconds=maximum,
        delay_cache_until_active=delay_cache,
        enable_profiling=bool(profiling),
        enable_contention_profiling=bool(contention),
        kubesalvo=options,
        notes=tuple(notes),
        deprecations=tuple(deprecations),
        source=source,
    )


def _percentage(d: Decoder, f: Fields, notes: list[str]) -> int | None:
    value = f.integer("percentageOfNodesToScore")
    if value is None:
        return None
    if not 0 <= value <= 100:
        d.invalid(f.at("percentageOfNodesToScore"), value, "not in valid range [0-100]")
    notes.append(_NOT_SCORED_NOTE.format(path=f.at("percentageOfNodesToScore")))
    return value


def _client_connection(d: Decoder, top: Fields, notes: list[str]) -> ClientConnection:
    path = "clientConnection"
    f = d.fields(
        top.raw(path), path, ("kubeconfig", "acceptContentTypes", "contentType", "qps", "burst")
    )
    content_type = f.text("contentType") or "application/json"
    if content_type not in _CONTENT_TYPES:
        d.fail(f.at("contentType"), ErrorKind.UNSUPPORTED, content_type, accepted=_CONTENT_TYPES)
    accept = f.text("acceptContentTypes")
    for part in filter(None, (p.strip() for p in accept.split(","))):
        if part not in _CONTENT_TYPES:
            d.fail(f.at("acceptContentTypes"), ErrorKind.UNSUPPORTED, part, accepted=_CONTENT_TYPES)
    if "protobuf" in content_type or "protobuf" in accept:
        notes.append(
            f"{path}.contentType/acceptContentTypes name protobuf: kubesalvo speaks "
            "application/json to the API server"
        )
    # 0 means "not set" for both, as in kube-scheduler's defaulting.
    qps = f.number("qps", 0.0) or 50.0
    burst = f.integer("burst", 0) or 100
    if burst < 0:
        d.invalid(f.at("burst"), burst, "must be non-negative")
    return ClientConnection(f.text("kubeconfig"), accept, content_type, qps, burst)


def _leader_election(d: Decoder, top: Fields) -> LeaderElection:
    path = "leaderElection"
    f = d.fields(
        top.raw(path),
        path,
        (
            "leaderElect",
            "leaseDuration",
            "renewDeadline",
            "retryPeriod",
            "resourceLock",
            "resourceName",
            "resourceNamespace",
        ),
    )
    elect = f.flag("leaderElect", True)
    # A zero duration means "not set", as metav1.Duration's defaulting reads it.
    lease = f.duration("leaseDuration") or 15.0
    renew = f.duration("renewDeadline") or 10.0
    retry = f.duration("retryPeriod") or 2.0
    lock = f.text("resourceLock") or "leases"
    name = f.text("resourceName") or DEFAULT_LEASE_NAME
    namespace = f.text("resourceNamespace") or DEFAULT_LEASE_NAMESPACE
    if elect:
        for key, value in (
            ("leaseDuration", lease),
            ("renewDeadline", renew),
            ("retryPeriod", retry),
        ):
            if value <= 0:
                d.invalid(f.at(key), f.raw(key), "must be greater than zero")
        if lease <= renew:
            d.invalid(
                f.at("leaseDuration"),
                f.raw("leaseDuration"),
                "must be greater than `RenewDeadline`",
            )
        if lock != "leases":
            d.fail(
                f.at("resourceLock"),
                ErrorKind.UNSUPPORTED,
                lock,
                detail='resourceLock value must be "leases"',
                accepted=("leases",),
            )
    return LeaderElection(bool(elect), lease, renew, retry, lock, name, namespace)


def _kubesalvo(d: Decoder, raw: Any, path: str, extra: tuple[str, ...]) -> KubesalvoOptions:
    """kubesalvo's settings from ``raw`` (the Kubesalvo plugin's args, which may also name
    an ``apiVersion`` and ``kind`` as typed args do, or the deprecated top-level block)."""
    f = d.fields(raw, path, _OPTION_FIELDS + extra)
    defaults = KubesalvoOptions()
    burst = f.integer("maxBurstPods", defaults.max_burst_pods)
    assert burst is not None
    if burst <= 0:
        d.invalid(f.at("maxBurstPods"), burst, "must be greater than 0")
    window = f.duration("burstGatheringWindow")
    if window is None:
        window = defaults.burst_gathering_window_seconds
    elif window < 0:
        d.invalid(
            f.at("burstGatheringWindow"), f.raw("burstGatheringWindow"), "must not be negative"
        )
    flush = f.duration("podMaxInUnschedulablePodsDuration")
    if flush is None:
        flush = defaults.pod_max_in_unschedulable_pods_seconds
    elif flush <= 0:
        d.invalid(
            f.at("podMaxInUnschedulablePodsDuration"),
            f.raw("podMaxInUnschedulablePodsDuration"),
            "must be greater than zero",
        )
    return KubesalvoOptions(burst, window, flush)


@dataclass(frozen=True)
class _Draft:
    """A profile as read, before the core profile is built from it."""

    path: str
    name: str
    plugins: ResolvedPlugins
    args: dict[str, PluginArgs]
    percentage: int | None


def _profiles(
    d: Decoder, top: Fields, notes: list[str], found: list[tuple[str, KubesalvoOptions]]
) -> tuple[ProfileConfig, ...]:
    items = list(d.items(top.raw("profiles"), "profiles")) or [({}, "profiles[0]")]
    lone = len(items) == 1
    drafts = [_profile(d, raw, path, lone, notes, found) for raw, path in items]
    seen: dict[str, str] = {}
    for draft in drafts:
        where = child(draft.path, "schedulerName")
        if draft.name in seen:
            d.fail(
                where,
                ErrorKind.DUPLICATE,
                draft.name,
                detail=f"also used by {seen[draft.name]}; "
                "every profile needs its own schedulerName",
            )
        elif draft.name:
            seen[draft.name] = where
    _check_common_queue_sort(d, drafts)
    if d.errors:
        # The core profile assumes valid values; nothing more to learn from building it.
        return ()
    out: list[ProfileConfig] = []
    for draft in drafts:
        try:
            core = Profile.from_args(
                draft.name,
                draft.plugins.at("filter"),
                draft.plugins.score_weights,
                draft.args,
                draft.plugins.enabled,
            )
        except ProfileError as exc:
            d.invalid(child(draft.path, exc.path), None, str(exc))
            continue
        out.append(ProfileConfig(draft.name, draft.plugins, draft.args, core, draft.percentage))
    return tuple(out)


def _profile(
    d: Decoder,
    raw: Any,
    path: str,
    lone: bool,
    notes: list[str],
    found: list[tuple[str, KubesalvoOptions]],
) -> _Draft:
    f = d.fields(
        raw, path, ("schedulerName", "percentageOfNodesToScore", "plugins", "pluginConfig")
    )
    name = f.opt_text("schedulerName")
    if name is None and lone:
        name = DEFAULT_SCHEDULER_NAME
    if not name:
        d.fail(
            f.at("schedulerName"), ErrorKind.REQUIRED, detail="every profile needs a schedulerName"
        )
        name = ""
    percentage = _percentage(d, f, notes)
    plugins = decode_plugins(d, f.raw("plugins"), f.at("plugins"), name)
    args = _plugin_config(d, f, plugins.enabled, name, notes, found)
    for plugin in sorted(plugins.enabled):
        if plugin not in args and (default := default_args(plugin, d.gates)) is not None:
            args[plugin] = default
    return _Draft(path, name, plugins, args, percentage)


def _plugin_config(
    d: Decoder,
    f: Fields,
    enabled: frozenset[str],
    profile: str,
    notes: list[str],
    found: list[tuple[str, KubesalvoOptions]],
) -> dict[str, PluginArgs]:
    args: dict[str, PluginArgs] = {}
    seen: set[str] = set()
    for item, path in d.items(f.raw("pluginConfig"), f.at("pluginConfig")):
        pf = d.fields(item, path, ("name", "args"))
        name = pf.text("name")
        if name in seen:
            d.fail(path, ErrorKind.DUPLICATE, name, detail="one pluginConfig entry per plugin")
            continue
        seen.add(name)
        if name == KUBESALVO_PLUGIN:
            args_path = pf.at("args")
            found.append(
                (args_path, _kubesalvo(d, pf.raw("args"), args_path, ("apiVersion", "kind")))
            )
            continue
        decoder = ARGS_DECODERS.get(name)
        if name not in registry.EXTENSION_POINTS:
            d.fail(
                pf.at("name"),
                ErrorKind.UNSUPPORTED,
                name,
                detail="unknown plugin",
                accepted=sorted([*registry.EXTENSION_POINTS, KUBESALVO_PLUGIN]),
            )
            continue
        if decoder is None:
            if pf.raw("args"):
                d.fail(
                    pf.at("args"),
                    ErrorKind.FORBIDDEN,
                    detail=f"plugin {name} takes no args; plugins with args: "
                    + ", ".join(sorted(ARGS_DECODERS)),
                )
            continue
        args[name] = decoder(d, pf.raw("args"), pf.at("args"))
        if name not in enabled:
            notes.append(
                f"{path}: args for {name} have no effect: the plugin is not enabled in "
                f'profile "{profile}"'
            )
    return args


def _check_common_queue_sort(d: Decoder, drafts: list[_Draft]) -> None:
    """One process keeps one queue, so every profile must sort it the same way."""
    if not drafts:
        return
    first = drafts[0]
    first_sorts = first.plugins.at("queueSort")
    for draft in drafts[1:]:
        sorts = draft.plugins.at("queueSort")
        if sorts != first_sorts:
            d.invalid(
                child(draft.path, "plugins.queueSort"),
                list(sorts),
                f"must be the same for all profiles (profiles[0] uses {list(first_sorts)})",
            )
        elif sorts and first.args.get(sorts[0]) != draft.args.get(sorts[0]):
            d.invalid(
                child(draft.path, "pluginConfig"),
                sorts[0],
                "queueSort must be the same for all profiles",
            )

"""The loaded configuration: frozen, defaulted, validated values the runtime reads.

:class:`SchedulerConfig` is a ``KubeSchedulerConfiguration`` after kube-scheduler v1.34's
defaulting, with two kubesalvo differences a user must know:

* the default ``schedulerName`` of a lone profile is ``kubesalvo`` (not
  ``default-scheduler``), and the default leader-election Lease is ``kube-system/kubesalvo``
  (not ``kube-scheduler``), so that kubesalvo and kube-scheduler can run side by side
  without one answering for the other's pods or holding the other's lease;
* the args of the pluginConfig entry ``Kubesalvo`` (:class:`KubesalvoOptions`; once the
  optional top-level ``kubesalvo:`` block, still read but deprecated) hold the
  settings kube-scheduler has no field for. kube-scheduler keeps a pluginConfig entry of
  a plugin it does not know unread, so the file stays one it accepts; the old block makes
  it refuse the file (an unknown field).

Settings kubesalvo accepts but does not act on are listed in ``notes`` (the runtime logs
them at start): ``percentageOfNodesToScore`` (kubesalvo scores every feasible node) and a
protobuf ``contentType`` (kubesalvo speaks JSON to the API server).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kubesalvo.core.plugins.default_preemption import DefaultPreemptionArgs
from kubesalvo.core.profile import Profile
from kubesalvo.sched.config.args import PluginArgs
from kubesalvo.sched.config.plugins import ResolvedPlugins

__all__ = [
    "DEFAULT_LEASE_NAME",
    "ClientConnection",
    "KubesalvoOptions",
    "LeaderElection",
    "ProfileConfig",
    "SchedulerConfig",
]

DEFAULT_LEASE_NAME = "kubesalvo"
DEFAULT_LEASE_NAMESPACE = "kube-system"


@dataclass(frozen=True)
class ClientConnection:
    """clientConnection: how to reach the API server and how fast to talk to it."""

    kubeconfig: str = ""  # empty: in-cluster credentials (or the --kubeconfig flag)
    accept_content_types: str = ""
    content_type: str = "application/json"
    qps: float = 50.0  # client-side limit of requests per second; negative: unlimited
    burst: int = 100


@dataclass(frozen=True)
class LeaderElection:
    """leaderElection: a coordination.k8s.io Lease held by the active replica."""

    leader_elect: bool = True
    lease_duration_seconds: float = 15.0
    renew_deadline_seconds: float = 10.0
    retry_period_seconds: float = 2.0
    resource_lock: str = "leases"
    resource_name: str = DEFAULT_LEASE_NAME
    resource_namespace: str = DEFAULT_LEASE_NAMESPACE


@dataclass(frozen=True)
class KubesalvoOptions:
    """The ``Kubesalvo`` pluginConfig args: settings of kubesalvo's burst cycle and queue.

    ``maxBurstPods``: the most pods placed in one kernel call.
    ``burstGatheringWindow``: the longest the cycle waits, after the first pod is ready, for
    more pods to join the burst (a duration such as "10ms"); it waits only while pods keep
    arriving close together (sched/cycle/gathering.py).
    ``podMaxInUnschedulablePodsDuration``: after this long an unschedulable pod is retried
    even if no cluster event suggested it (kube-scheduler's flag of the same name; 5m).
    """

    max_burst_pods: int = 1000
    burst_gathering_window_seconds: float = 0.01
    pod_max_in_unschedulable_pods_seconds: float = 300.0


@dataclass(frozen=True)
class ProfileConfig:
    """One profile: the core :class:`Profile` for the kernels plus what the runtime needs.

    ``plugins`` holds every extension point's plugins in run order; ``args`` the typed
    args of every enabled plugin that has an args kind (defaults where not configured).
    """

    scheduler_name: str
    plugins: ResolvedPlugins
    args: dict[str, PluginArgs]
    core: Profile
    percentage_of_nodes_to_score: int | None = None

    @property
    def queue_sort(self) -> str:
        return self.plugins.at("queueSort")[0]

    @property
    def pre_enqueue(self) -> tuple[str, ...]:
        return self.plugins.at("preEnqueue")

    def describe(self) -> list[str]:
        """One line per extension point that runs plugins, for the start-up log."""
        lines = [f'profile "{self.scheduler_name}":']
        for point, plugins in self.plugins.by_point.items():
            if not plugins:
                continue
            if point == "score":
                shown = ", ".join(f"{n}={w}" for n, w in self.plugins.score_weights)
            else:
                shown = ", ".join(plugins)
            lines.append(f"  {point}: {shown}")
        strategy = self.core.fit.scoring_strategy
        resources = ", ".join(f"{r.name}={r.weight}" for r in strategy.resources)
        lines.append(f"  NodeResourcesFit scoring: {strategy.type.value} ({resources})")
        return lines

    @property
    def preemption(self) -> DefaultPreemptionArgs | None:
        """DefaultPreemption's args when it runs as a postFilter, else None."""
        if "DefaultPreemption" not in self.plugins.at("postFilter"):
            return None
        args = self.args.get("DefaultPreemption")
        return args if isinstance(args, DefaultPreemptionArgs) else DefaultPreemptionArgs()


@dataclass(frozen=True)
class SchedulerConfig:
    """A whole KubeSchedulerConfiguration, defaulted and validated."""

    profiles: tuple[ProfileConfig, ...]
    client_connection: ClientConnection = ClientConnection()
    leader_election: LeaderElection = LeaderElection()
    parallelism: int = 16
    percentage_of_nodes_to_score: int | None = None
    pod_initial_backoff_seconds: int = 1
    pod_max_backoff_seconds: int = 10
    delay_cache_until_active: bool = False
    enable_profiling: bool = True
    enable_contention_profiling: bool = True
    kubesalvo: KubesalvoOptions = KubesalvoOptions()
    notes: tuple[str, ...] = ()
    # Deprecated fields the file uses, (path, what to do instead): logged as warnings at
    # start and shown by kubesalvo_config_deprecated_fields on /metrics.
    deprecations: tuple[tuple[str, str], ...] = field(default=(), compare=False)
    source: str = field(default="", compare=False)

    @property
    def scheduler_names(self) -> tuple[str, ...]:
        return tuple(p.scheduler_name for p in self.profiles)

    def describe(self) -> list[str]:
        """The loaded configuration in a few lines, notes first, for the start-up log."""
        lines = [f"note: {n}" for n in self.notes]
        for p in self.profiles:
            lines.extend(p.describe())
        return lines

    def profile(self, scheduler_name: str) -> ProfileConfig | None:
        """The profile that serves pods with this ``spec.schedulerName``, if any."""
        for p in self.profiles:
            if p.scheduler_name == scheduler_name:
                return p
        return None

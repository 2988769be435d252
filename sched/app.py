"""``kubesalvo run``: the scheduler process, assembled from the runtime's parts.

One process serves every ``schedulerName`` of its configuration. It watches nodes,
namespaces, pods (finished pods excluded, as kube-scheduler does) and, when a profile
runs DefaultPreemption, PodDisruptionBudgets (preemption reads them), keeps the
``SchedulerCache`` equal to the cluster, queues the unassigned pods that name one of its
profiles, and runs the ``BurstCycle``. When a profile has PodTopologySpread default
constraints (System defaulting has), it also watches Services, ReplicationControllers,
ReplicaSets and StatefulSets, whose selectors give pods without constraints of their own
the default ones (``informers.workloads``); without RBAC to list them it logs one warning
and runs without default spreading. These two watches, and the other plugins' runtime
halves (QosAware, the gangs' PodGroups, GroupPriority's warnings), are installed from
``plugin_runtimes.INSTALLS`` through a ``PluginHandle``. With ``leaderElection.leaderElect``
only the holder of the Lease binds: a standby keeps its informers and queue warm and takes
over when the Lease is free; a leader that cannot renew stops binding at once.

/healthz, /livez, /readyz and /metrics are served as kube-scheduler serves them (HTTPS on
10259 with delegated authentication and authorization for /metrics; a plain port only
when asked for): see ``serving``. The debug pages stay on loopback.

Exit codes: 0 after SIGTERM/SIGINT (binds in flight are drained first, events flushed and
the Lease released), 2 for a configuration the loader refuses (every refused field with
its path, on stderr) or serving flags that cannot work, 1 when the API server's
credentials cannot be loaded or a port cannot be opened.

Logs are structured: ``--log-format json`` writes one JSON object per line (``ts``,
``level``, ``logger``, ``msg``), ``text`` a readable line; ``-v 4`` and above adds the
per-burst debug lines.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import logging
import signal
import socket
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from aiohttp import web

from kubesalvo.sched import default_spread, disruption_budgets
from kubesalvo.sched.cache import SchedulerCache, struct_key
from kubesalvo.sched.client import ApiClient, CredentialsError, load_credentials
from kubesalvo.sched.config import ConfigError, SchedulerConfig, gates, load_config
from kubesalvo.sched.cycle import BurstCycle, ClusterObjects, CycleSettings
from kubesalvo.sched.debug_token import default_token_file, new_token
from kubesalvo.sched.debug_token import write_token as write_debug_token
from kubesalvo.sched.events import EventRecorder, RecorderSettings
from kubesalvo.sched.informers import (
    ADDED,
    DELETED,
    NAMESPACES,
    NODES,
    PODS,
    SYNCED,
    Change,
    Informer,
    WatchSettings,
    to_api_dict,
)
from kubesalvo.sched.informers.forms import PodForms
from kubesalvo.sched.informers.models import (
    Namespace,
    Node,
    Pod,
)
from kubesalvo.sched.leader import ElectionThread, LeaderElectionSettings
from kubesalvo.sched.logs import setup_logging
from kubesalvo.sched.memory import (
    CollectorPauses,
    collect_young_less_often,
    freeze_startup_heap,
)
from kubesalvo.sched.metrics import (
    InformerCollector,
    SchedulerMetrics,
    UnschedulablePodsCollector,
)
from kubesalvo.sched.plugin_handle import PluginHandle
from kubesalvo.sched.plugin_runtimes import INSTALLS
from kubesalvo.sched.queue import (
    ASSIGNED_POD_ADD,
    ASSIGNED_POD_DELETE,
    NODE_ADD,
    NODE_DELETE,
    QueueName,
    SchedulingQueue,
    node_update_events,
    pod_key,
    pod_update_events,
)
from kubesalvo.sched.server import DebugServer, HealthServer
from kubesalvo.sched.serving import ServingOptions, add_flags, options_from_args
from kubesalvo.sched.serving.build import health_servers
from kubesalvo.sched.serving.configz import add_configz
from kubesalvo.sched.serving.options import OptionsError
from kubesalvo.sched.serving.resources import add_resource_metrics
from kubesalvo.sched.web import WebView

__all__ = ["Scheduler", "configure", "main"]

log = logging.getLogger("kubesalvo")

EXIT_CONFIG = 2
EXIT_CREDENTIALS = 1
EXIT_SERVE = 1
# Finished pods hold nothing on their node; the watch reports them DELETED when they end.
ACTIVE_PODS = "status.phase!=Succeeded,status.phase!=Failed"


class ServeError(RuntimeError):
    """A health/metrics or debug port cannot be opened (in use, not allowed)."""


class Scheduler:
    """Every part of a running scheduler, wired together; ``run`` until ``stop``."""

    def __init__(
        self,
        config: SchedulerConfig,
        client: ApiClient,
        *,
        serving: ServingOptions | None = None,
        debug_port: int = 10000,
        debug_token_file: Path | None = None,
        identity: str | None = None,
        tie_seed: int | None = None,
    ) -> None:
        self.config = config
        self.client = client
        self.metrics = SchedulerMetrics()
        self.gc_pauses = CollectorPauses(
            lambda generation, seconds: self.metrics.gc_pauses.labels(
                generation=str(generation)
            ).observe(seconds)
        )
        # Every pod version's API dict, made once for the cycle, preemption, the cache,
        # the queue's hints and the pages; the pod informer drops a version's entry when
        # it goes (registered after _on_pod: the queue judges an update with the old
        # version's entry still there).
        self.forms = PodForms(current=lambda key: self.pods.store.get(key))
        self.cache = SchedulerCache(api=self.forms.api)
        self.queue = SchedulingQueue.from_config(config, pod_api=self.forms.api)
        self.queue.on_incoming = self.metrics.observe_incoming
        for path, _ in config.deprecations:
            self.metrics.deprecated_fields.labels(field=path).set(1)
        # kube-scheduler writes events through a second client with clientConnection's
        # qps/burst; the recorder's own limiter does the same here.
        connection = config.client_connection
        self.recorder = EventRecorder(
            client,
            RecorderSettings(qps=connection.qps, burst=connection.burst),
            metrics=self.metrics,
        )
        self.names = frozenset(config.scheduler_names)
        self.elector: ElectionThread | None = None
        election = config.leader_election
        if election.leader_elect:
            self.elector = ElectionThread(
                client,
                LeaderElectionSettings(
                    namespace=election.resource_namespace,
                    name=election.resource_name,
                    identity=identity or f"{socket.gethostname()}_{uuid.uuid4()}",
                    lease_duration=election.lease_duration_seconds,
                    renew_deadline=election.renew_deadline_seconds,
                    retry_period=election.retry_period_seconds,
                ),
                on_started_leading=lambda: self._leadership(True),
                on_stopped_leading=lambda: self._leadership(False),
                metrics=self.metrics,
            )
        self.cycle = BurstCycle(
            config,
            self.cache,
            self.queue,
            client,
            recorder=self.recorder,
            metrics=self.metrics,
            is_leader=self.is_leader,
            settings=CycleSettings.from_config(config, tie_seed),
            cluster=self._cluster_objects,
            workloads=self.workloads_of,
            forms=self.forms,
        )
        # API traffic under client-go's metric names (kubernetes-mixin charts them).
        client.on_request = functools.partial(
            self.metrics.observe_request, urlsplit(client.server).netloc
        )
        # Read at each scrape: the binder's own count, nothing to keep in step.
        self.metrics.binds_in_flight.set_function(lambda: self.cycle.binds_in_flight)
        self.nodes: Informer[Node] = Informer(client, NODES, self._on_node)
        self.namespaces: Informer[Namespace] = Informer(client, NAMESPACES, self._on_namespace)
        self.pods: Informer[Pod] = Informer(
            client, PODS, self._on_pod, WatchSettings(field_selector=ACTIVE_PODS)
        )
        self.pods.add_handler(self.forms.on_pod)
        self.informers: list[Informer[Any]] = [self.nodes, self.namespaces, self.pods]
        self.metrics.registry.register(InformerCollector(self._informer_requests))
        self.metrics.registry.register(UnschedulablePodsCollector(self._queued_rejectors))
        self.servers: list[HealthServer] = health_servers(
            self.metrics, serving or ServingOptions(), client
        )
        for server in self.servers:
            if server.tls is not None:
                # As kube-scheduler: on the secure port only, behind its authorization.
                add_configz(server.app, config)
                add_resource_metrics(server.app, self._all_pods)
            for informer in self.informers:
                name = f"informer-sync-{informer.resource.plural}"
                server.add_readiness_check(name, self._synced_check(informer))
            # As kube-scheduler's check of this name: ready once the initial lists are
            # in the state and the cycle runs, so that a start measured until /readyz
            # means the same for both (the bench's start figure).
            server.add_readiness_check("sched-handler-sync", lambda: self.scheduling)
            if self.elector is not None:
                # Not ready while the API server refuses the Lease (a Role for another
                # namespace): it would loop on 403 and never schedule.
                server.add_readiness_check("leader-election", self._lease_not_refused)
        # --debug-port 0 turns the pages off (as --secure-port 0 does the secure port).
        self.debug_enabled = debug_port != 0
        # The pages' token goes to its file when the port listens (run), never to the log.
        self.debug_token_file = debug_token_file or default_token_file(debug_port)
        self._debug_token = new_token()
        self.debug = DebugServer(self._debug_token, debug_port, profiling=config.enable_profiling)
        self.debug.add_page("/debug/queue", self._debug_queue)
        self.debug.add_page("/debug/explain", self._debug_explain)
        self.web = WebView(self)
        self.web.add_to(self.debug.app, sample=True)
        if serving is not None and serving.web_view:
            for server in self.servers:
                if server.tls is not None:
                    self.web.add_to(server.app)
        # The plugins' runtime halves (the volume plugins' storage objects and PreBind,
        # DynamicResources' device objects,
        # default spreading's workloads, preemption's PDBs, QosAware's table, the gangs'
        # PodGroups, ...): their watches, pod hooks, pages and
        # tasks, registered through the handle; only watches asked with ready=True hold
        # readiness back.
        self.plugins = PluginHandle(
            client=client,
            config=config,
            queue=self.queue,
            cache=self.cache,
            recorder=self.recorder,
            registry=self.metrics.registry,
            informers=self.informers,
            is_leader=self.is_leader,
            scheduler_names=self.names,
            add_page=self.debug.add_page,
            # the cycle's own parts of plugins (say Coscheduling's PreFilter), fed by their
            # runtime halves
            live=self.cycle.plugin_parts(),
        )
        for install in INSTALLS:
            install(self.plugins)
        for server in self.servers:
            for informer in self.plugins.gates:
                name = f"informer-sync-{informer.resource.plural}"
                server.add_readiness_check(name, self._synced_check(informer))
        binding = self.cycle.binding
        for pre_bind in self.plugins.pre_binds:
            binding.add_pre_bind(pre_bind)
        if self.plugins.bind_started:
            binding.on_bind_started = self.plugins.bind_start
            binding.on_bind_ended = self.plugins.bind_end
        self._stop = asyncio.Event()
        # Set when the informers have synced, the startup heap is frozen and the cycle
        # has started (run).
        self.scheduling = False

    def _all_pods(self) -> Iterator[dict[str, Any]]:
        return (self.forms.api(pod) for pod in self.pods.store.values())

    def _queued_rejectors(self) -> list[tuple[str, frozenset[str]]]:
        """(scheduler name, rejecting or gating plugins) of each queued pod, for /metrics."""
        return [
            (qp.scheduler_name, qp.rejectors | ({qp.gating_plugin} - {""}))
            for _, where, qp in self.queue.listing()
            if where is not QueueName.IN_FLIGHT
        ]

    def _informer_requests(self) -> list[tuple[str, int, int]]:
        """(resource, lists, watches) of each informer, for /metrics."""
        return [(i.resource.plural, i.state.lists, i.state.watches) for i in self.informers]

    def is_leader(self) -> bool:
        return self.elector is None or self.elector.is_leader

    def _leadership(self, leading: bool) -> None:
        log.info("leadership %s", "acquired: binding" if leading else "lost: binds stopped")
        self.cycle.leadership_changed(leading)

    def _cluster_objects(self) -> ClusterObjects:
        """The informers' objects for a preemption decision (lists taken now, on the event
        loop; converted to dicts in the decision's worker thread)."""
        pods = list(self.pods.store.values())
        assumed = {}
        for pod in pods:
            if not pod.spec.node_name:
                node = self.cache.assumed_node(pod_key(pod))
                if node is not None:
                    assumed[pod_key(pod)] = node
        return ClusterObjects(
            nodes=list(self.nodes.store.values()),
            pods=pods,
            pdbs=disruption_budgets.budgets(self.plugins),
            namespaces=list(self.namespaces.store.values()),
            assumed=assumed,
            storage=self.cache.state.storage.copy(),
            forms=self.forms,
        )

    def _lease_not_refused(self) -> bool:
        return self.elector is None or not self.elector.refusal

    def _synced_check(self, informer: Informer[Any]) -> Callable[[], bool]:
        # A plugin's watch dropped for want of RBAC (say, default spreading's workloads)
        # does not hold readiness back.
        return lambda: informer.synced.is_set() or informer not in self.informers

    def workloads_of(self, namespaces: set[str]) -> list[dict[str, Any]]:
        """The workloads a burst's pods (of these namespaces) may belong to."""
        return default_spread.workloads_of(self.plugins, namespaces)

    # --- informer handlers (event loop; quick) ------------------------------------------

    def _on_node(self, change: Change[Node]) -> None:
        node = change.obj
        if node is None:
            return
        if change.type == DELETED:
            self.cache.remove_node(node.metadata.name)
            self.queue.on_event(NODE_DELETE, node, None)
        elif change.type == ADDED:
            self.cache.add_node(to_api_dict(node))
            self.queue.on_event(NODE_ADD, None, node)
        elif change.old != node:  # heartbeats change only fields the models leave out
            self.cache.update_node(to_api_dict(node))
            for event in node_update_events(change.old, node):
                self.queue.on_event(event, change.old, node)

    def _on_namespace(self, change: Change[Namespace]) -> None:
        ns = change.obj
        if ns is None:
            return
        if change.type == DELETED:
            self.cache.remove_namespace(ns.metadata.name)
        else:
            self.cache.set_namespace(ns.metadata.name, ns.metadata.labels)

    def _on_pod(self, change: Change[Pod]) -> None:
        pod = change.obj
        if change.type == SYNCED or pod is None:
            return
        key = pod_key(pod)
        old = change.old
        self.plugins.pod_changed(change)
        if change.type == DELETED:
            if pod.spec.node_name or self.cache.is_assumed(key):
                self.cache.removed(struct_key(pod))
            if pod.spec.node_name:
                self.queue.on_event(ASSIGNED_POD_DELETE, pod, None)
            self.queue.delete(key)
            self.recorder.forget_pod(pod.metadata.namespace, pod.metadata.name)
            self.cycle.forget_attempt(f"{pod.metadata.namespace}/{pod.metadata.name}", key)
            return
        if pod.spec.node_name:
            # Bound, by us or anyone: counted in the state, no longer pending. An update
            # that changes nothing the state counts (a status report) is not recounted.
            self.cache.seen_bound(old, pod)
            self.queue.delete(key)
            if old is None or not old.spec.node_name:
                self.queue.on_event(ASSIGNED_POD_ADD, None, pod)
            else:
                for event in pod_update_events(old, pod, self.forms.api):
                    self.queue.on_event(event, old, pod)
            return
        if pod.spec.scheduler_name not in self.names or pod.metadata.deletion_timestamp:
            self.queue.delete(key)
            return
        if self.cache.is_assumed(key):
            return  # our bind is in flight; the watch has not caught up with it yet
        if change.type == ADDED or old is None:
            self.queue.add(pod)
        else:
            self.queue.update(old, pod)

    # --- debug pages --------------------------------------------------------------------

    async def _debug_queue(self, request: web.Request) -> web.Response:
        listing = [
            {
                "pod": name,
                "queue": where.value,
                "attempts": qp.attempts,
                "unschedulablePlugins": sorted(qp.rejectors),
            }
            for name, where, qp in self.queue.listing()
        ]
        body = {
            "pending": self.queue.pending_counts(),
            "inFlight": self.queue.in_flight,
            "bindsInFlight": self.cycle.binds_in_flight,
            "preemptionsPending": self.cycle.preemptions_pending,
            "assumed": self.cache.assumed_count,
            "cache": self.cache.sizes(),
            # the pods' API dicts (one per live version converted) and how many were made
            "podForms": self.forms.stats(),
            # last attempts kept for /debug/explain (a deleted pod's goes with it)
            "attemptsRemembered": len(self.cycle.attempts),
            "pods": listing,
        }
        return web.json_response(body)

    async def _debug_explain(self, request: web.Request) -> web.Response:
        from kubesalvo.sched.explain import explain_pod

        target = request.query.get("pod", "")
        namespace, _, name = target.partition("/")
        if not namespace or not name:
            return web.json_response({"error": "pod=NAMESPACE/NAME is required"}, status=400)
        answer = await explain_pod(self, namespace, name)
        return web.json_response(answer, status=200 if answer.get("status") != "unknown" else 404)

    # --- running ------------------------------------------------------------------------

    async def run(self) -> None:
        """Start everything, schedule until ``stop()``, then shut down cleanly."""
        for line in self.config.describe():
            log.info("config %s", line)
        for path, advice in self.config.deprecations:
            log.warning("config %s: %s", path, advice)
        if self.debug_enabled:
            try:
                write_debug_token(self.debug_token_file, self._debug_token)
            except OSError as error:
                raise ServeError(
                    f"cannot write the debug pages' token to {self.debug_token_file}: "
                    f"{error.strerror or error} (--debug-token-file, or --debug-port 0)"
                ) from error
        for server in (*self.servers, *([self.debug] if self.debug_enabled else [])):
            try:
                await server.start()
            except OSError as error:
                await self._stop_servers()
                raise ServeError(
                    f"cannot listen on {server.host}:{server.port}: {error.strerror or error}"
                ) from error
        servers = ", ".join(server.url for server in self.servers) or "no port"
        if self.debug_enabled:
            log.info(
                "serving health/metrics on %s, debug pages on %s for the token in %s "
                "(the web view: %s/ui/?token=TOKEN)",
                servers,
                self.debug.url,
                self.debug_token_file,
                self.debug.url,
            )
        else:
            log.info("serving health/metrics on %s, debug pages on no port", servers)
        self.recorder.start()
        self.gc_pauses.start()
        collect_young_less_often()
        await self.plugins.start()
        self.plugins.start_background()
        for informer in self.informers:
            informer.start()
        waiting: asyncio.Future[Any] = asyncio.create_task(self._stop.wait())
        synced: asyncio.Future[Any] = asyncio.gather(
            *(informer.synced.wait() for informer in self.informers)
        )
        await asyncio.wait({waiting, synced}, return_when=asyncio.FIRST_COMPLETED)
        if not self._stop.is_set():
            log.info(
                "informers synced: %d nodes, %d pods, %d pending for %s; %d objects frozen",
                len(self.nodes.store),
                len(self.pods.store),
                len(self.queue),
                ", ".join(sorted(self.names)),
                freeze_startup_heap(),
            )
            # The start's split (issue 28): the bench's start figure less these is the
            # rest (imports, configuration, the freeze, the first requests' setup).
            log.info(
                "initial lists: %s",
                "; ".join(
                    f"{i.resource.plural} {len(i.store)} listed {i.state.list_seconds:.3f}s"
                    f" decoded {i.state.decode_seconds:.3f}s handled {i.sync_seconds:.3f}s"
                    for i in self.informers
                ),
            )
            if self.elector is not None:
                self.elector.start()
            self.cycle.start()
            self.scheduling = True
            await waiting
        synced.cancel()
        await self._shutdown()

    def stop(self) -> None:
        self._stop.set()

    async def _shutdown(self) -> None:
        began = time.monotonic()
        in_flight = self.cycle.binds_in_flight
        await self.cycle.stop()
        log.info("drained %d binds in flight in %.2fs", in_flight, time.monotonic() - began)
        await self.plugins.stop_background()
        await self.recorder.stop()
        if self.elector is not None:
            await self.elector.stop()
        for informer in self.informers:
            await informer.stop()
        await self._stop_servers()
        self.gc_pauses.stop()

    async def _stop_servers(self) -> None:
        await self.debug.stop()
        for server in self.servers:
            await server.stop()


# --- logging ----------------------------------------------------------------------------


# --- the command --------------------------------------------------------------------------


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--config", help="KubeSchedulerConfiguration file (default profile if none)"
    )
    parser.add_argument(
        "--feature-gates",
        type=gates.flag_type,
        default=gates.FeatureGates(),
        metavar="NAME=BOOL,...",
        help=gates.FLAG_HELP,
    )
    parser.add_argument(
        "--kubeconfig",
        help="kubeconfig file (default: clientConnection.kubeconfig, else $KUBECONFIG, "
        "~/.kube/config, in-cluster credentials)",
    )
    parser.add_argument("-v", "--v", dest="verbosity", type=int, default=0, metavar="N")
    parser.add_argument("--log-format", choices=("json", "text"), default="text")
    parser.add_argument(
        "--incluster-root",
        help="without a kubeconfig, read the service account (token, ca.crt, namespace) "
        "under this folder instead of / (default: $KUBESALVO_INCLUSTER_ROOT)",
    )
    parser.add_argument(
        "--debug-port",
        type=_port,
        default=10000,
        help="loopback port of /debug pages (0 turns them off; default %(default)s)",
    )
    parser.add_argument(
        "--debug-token-file",
        type=Path,
        metavar="PATH",
        help="where the debug pages' token is written, mode 0600, at each start (default: "
        "kubesalvo-debug-PORT.token in $XDG_RUNTIME_DIR, else the temporary folder)",
    )
    parser.add_argument(
        "--seed",
        type=_seed,
        metavar="N",
        help="seed of the random choice among equally scored nodes, to replay a run "
        "(default: from the clock, logged at start)",
    )
    add_flags(parser)


def _port(text: str) -> int:
    value = int(text)
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"{value} is not a port (0-65535)")
    return value


def _seed(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, not {value}")
    return value


def main(args: argparse.Namespace) -> int:
    setup_logging(args.verbosity, args.log_format)
    try:
        serving = options_from_args(args)
        config = load_config(args.config, args.feature_gates)
    except (ConfigError, OptionsError) as error:
        print(f"kubesalvo run: {error}", file=sys.stderr)
        return EXIT_CONFIG
    origin = "--kubeconfig" if args.kubeconfig else "clientConnection.kubeconfig"
    try:
        credentials = load_credentials(
            args.kubeconfig or config.client_connection.kubeconfig or None,
            incluster_root=args.incluster_root,
            kubeconfig_origin=origin,
        )
    except CredentialsError as error:
        print(f"kubesalvo run: cannot load credentials from {error}", file=sys.stderr)
        return EXIT_CREDENTIALS
    log.info("credentials from %s", credentials.source)
    if credentials.namespace:
        log.info("in-cluster credentials of a service account in %s", credentials.namespace)
    try:
        import uvloop

        uvloop.install()
    except ImportError:
        pass
    try:
        asyncio.run(_serve(config, credentials, serving, args))
    except ServeError as error:
        print(f"kubesalvo run: {error}", file=sys.stderr)
        return EXIT_SERVE
    return 0


async def _serve(
    config: SchedulerConfig, credentials: Any, serving: ServingOptions, args: argparse.Namespace
) -> None:
    connection = config.client_connection
    async with ApiClient(credentials, qps=connection.qps, burst=connection.burst) as client:
        scheduler = Scheduler(
            config,
            client,
            serving=serving,
            debug_port=args.debug_port,
            debug_token_file=args.debug_token_file,
            tie_seed=args.seed,
        )
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(NotImplementedError):
                loop.add_signal_handler(signum, _on_signal, scheduler, signum)
        log.info("kubesalvo starting against %s", client.server)
        await scheduler.run()
        log.info("kubesalvo stopped")


def _on_signal(scheduler: Scheduler, signum: int) -> None:
    log.info("received %s: draining binds and stopping", signal.Signals(signum).name)
    scheduler.stop()

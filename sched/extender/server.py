"""The extender's HTTP server: kube-scheduler's four verbs, per agent and combined.

Routes (all POST, JSON in and out, kube-scheduler's wire format, see ``wire``):

* ``/filter``, ``/prioritize``, ``/preempt``, ``/bind``: every configured agent, filters
  ANDed and scores weighted (see ``combine``);
* ``/<agent>/filter``, ``/<agent>/prioritize``, ``/<agent>/preempt``, ``/<agent>/bind``:
  one agent alone (weight 1), so that kube-scheduler can list agents as separate
  extenders with their own weights, ``managedResources`` and ``ignorable``;
* GET ``/healthz`` (the process answers), ``/readyz`` (the watches have synced) and
  ``/metrics``.

``/bind`` and ``/preempt`` (also per agent) answer 403 to a caller ``guard`` does not
allow (see ``guard``: a client certificate when a client CA is configured).

A body that is not valid JSON, misses a required field, has a wrong type or is larger
than ``maxRequestBytes`` gets HTTP 400 with ``{"error": "..."}`` and one log line. An
agent that fails turns into the answer's ``Error`` (filter, bind) or is left out
(prioritize, preempt); nothing a client sends stops the server.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Awaitable, Callable

from aiohttp import web

from kubesalvo.sched.binder import Binder, BinderSettings, BindOutcome
from kubesalvo.sched.client import ApiClient
from kubesalvo.sched.extender import combine, wire
from kubesalvo.sched.extender.agent import PodInfo
from kubesalvo.sched.extender.config import ConfiguredAgent, ExtenderConfig
from kubesalvo.sched.extender.feed import NodeFeed
from kubesalvo.sched.extender.guard import ServingGuard
from kubesalvo.sched.extender.metrics import ALL_AGENTS, CONTENT_TYPE, ExtenderMetrics
from kubesalvo.sched.extender.names import Listing, NamesCache
from kubesalvo.sched.informers.models import Pod

__all__ = ["ExtenderApp", "PodLookup"]

log = logging.getLogger(__name__)

# Binds answer within kube-scheduler's default 5 s extender timeout in most cases; a
# bind that landed after its answer was lost is recognised on the next try (409 naming
# our node) instead of being repeated.
BIND_SETTINGS = BinderSettings(
    max_in_flight=256, max_attempts=3, backoff_initial=0.05, backoff_max=0.5, request_timeout=4.0
)

PodLookup = Callable[[str, str], Pod | None]
Handler = Callable[[bytes, list[ConfiguredAgent]], Awaitable[tuple[bytes, bool]]]


def _json_error(status: int, message: str) -> web.Response:
    return web.Response(
        status=status,
        body=wire.encode({"error": message}),
        content_type="application/json",
    )


class ExtenderApp:
    """The aiohttp application; ``client`` None: no binds (and no watch) possible."""

    def __init__(
        self,
        config: ExtenderConfig,
        feed: NodeFeed,
        client: ApiClient | None = None,
        *,
        pod_lookup: PodLookup | None = None,
        ready: Callable[[], bool] = lambda: True,
        metrics: ExtenderMetrics | None = None,
        guard: ServingGuard | None = None,
    ) -> None:
        self.config = config
        self.guard = guard or ServingGuard()
        self.feed = feed
        self.names = NamesCache(feed)
        self.client = client
        self.binder = Binder(client, BIND_SETTINGS) if client is not None else None
        self.pod_lookup = pod_lookup
        self.ready = ready
        self.metrics = metrics or ExtenderMetrics()
        self.app = web.Application(client_max_size=config.max_request_bytes)
        verbs: dict[str, Handler] = {
            "filter": self._filter,
            "prioritize": self._prioritize,
            "preempt": self._preempt,
            "bind": self._bind,
        }
        for verb, handler in verbs.items():
            self.app.router.add_post(f"/{verb}", self._route(verb, ALL_AGENTS, handler))
            for entry in config.agents:
                alone = ConfiguredAgent(entry.agent, 1, entry.managed_resources)
                self.app.router.add_post(
                    f"/{entry.name}/{verb}", self._route(verb, entry.name, handler, [alone])
                )
        self.app.router.add_get("/healthz", self._healthz)
        self.app.router.add_get("/readyz", self._readyz)
        self.app.router.add_get("/metrics", self._metrics)

    def _route(
        self,
        verb: str,
        label: str,
        handler: Handler,
        agents: list[ConfiguredAgent] | None = None,
    ) -> Callable[[web.Request], Awaitable[web.Response]]:
        chosen = agents if agents is not None else self.config.agents

        async def serve(request: web.Request) -> web.Response:
            began = time.perf_counter()
            code = "200"
            try:
                if not self.guard.allows(request, verb):
                    code = "403"
                    log.warning(
                        "refused %s request to %s from %s: no verified client certificate",
                        verb,
                        request.path,
                        request.remote,
                    )
                    return _json_error(
                        403, f"{verb} needs a client certificate signed by --client-ca-file"
                    )
                try:
                    body = await request.read()
                except web.HTTPRequestEntityTooLarge:
                    raise wire.BadRequest(
                        f"request body larger than maxRequestBytes "
                        f"({self.config.max_request_bytes} bytes)"
                    ) from None
                answer, failed = await handler(body, chosen)
                if failed:
                    code = "error"
                return web.Response(body=answer, content_type="application/json")
            except wire.BadRequest as error:
                code = "400"
                log.warning(
                    "bad %s request to %s from %s: %s", verb, request.path, request.remote, error
                )
                return _json_error(400, str(error))
            except Exception as error:  # a bug of ours: answer, log, keep serving
                code = "500"
                log.exception("%s request to %s failed", verb, request.path)
                return _json_error(500, f"internal error: {error}")
            finally:
                self.metrics.requests.labels(verb, label, code).inc()
                self.metrics.duration.labels(verb, label).observe(time.perf_counter() - began)

        return serve

    # --- the verbs ----------------------------------------------------------------------

    @staticmethod
    def _pod(pod: Pod | None, kind: str) -> PodInfo:
        if pod is None:
            raise wire.BadRequest(f"invalid {kind}: Pod is required")
        return PodInfo(pod)

    def _request(self, body: bytes) -> tuple[wire.ExtenderArgsRaw, PodInfo, Listing, bool]:
        """A filter or prioritize body: its args, pod and nodes, and whether the nodes
        came as objects (else as names, answered from the feed's state)."""
        args = wire.decode_extender_args(body)
        nodes = None
        if args.has_names:  # before the pod: a bad list was a decoding error, said first
            decode = functools.partial(wire.node_names, body=body)
            nodes = self.names.listing(bytes(args.NodeNames), decode)
        pod = self._pod(args.Pod, "ExtenderArgs")
        if nodes is not None:
            return args, pod, nodes, False
        if args.Nodes is None:
            raise wire.BadRequest("invalid ExtenderArgs: NodeNames or Nodes is required")
        names, rows = self.feed.request_rows(args.Nodes.items or [])
        return args, pod, Listing(names, rows, self.feed.layout), True

    async def _filter(self, body: bytes, agents: list[ConfiguredAgent]) -> tuple[bytes, bool]:
        args, pod, nodes, full = self._request(body)
        try:
            answer = combine.filter_nodes(agents, self.feed.state, pod, nodes.rows)
        except combine.AgentFailure as error:
            return wire.encode(wire.FilterResult(Error=str(error))), True
        result = wire.FilterResult()
        if full and args.Nodes is not None:
            items = args.Nodes.items or []
            result.Nodes = wire.NodeList(items=[items[i] for i in answer.passed.tolist()])
        else:
            result.NodeNames = nodes.array[answer.passed].tolist()
        return nodes.filter_json(answer, result), False

    async def _prioritize(self, body: bytes, agents: list[ConfiguredAgent]) -> tuple[bytes, bool]:
        _, pod, nodes, _ = self._request(body)
        scores = combine.prioritize(agents, self.feed.state, pod, nodes.rows)
        return nodes.priorities_json(scores), False

    async def _preempt(self, body: bytes, agents: list[ConfiguredAgent]) -> tuple[bytes, bool]:
        args = wire.decode(body, wire.PreemptionArgs)
        pod = self._pod(args.Pod, "ExtenderPreemptionArgs")
        victims: dict[str, wire.MetaVictims] = {}
        if args.NodeNameToMetaVictims is not None:
            for name, meta in args.NodeNameToMetaVictims.items():
                victims[name] = meta or wire.MetaVictims()
        elif args.NodeNameToVictims is not None:
            for name, full in args.NodeNameToVictims.items():
                full = full or wire.Victims()
                victims[name] = wire.MetaVictims(
                    Pods=[wire.MetaPod(UID=p.metadata.uid) for p in full.Pods if p is not None],
                    NumPDBViolations=full.NumPDBViolations,
                )
        else:
            raise wire.BadRequest(
                "invalid ExtenderPreemptionArgs: NodeNameToMetaVictims or NodeNameToVictims "
                "is required"
            )
        names = list(victims)
        kept = combine.preempt(agents, self.feed.state, pod, names, self.feed.rows_of(names))
        result = wire.PreemptionResult({names[i]: victims[names[i]] for i in kept})
        return wire.encode(result), False

    async def _bind(self, body: bytes, agents: list[ConfiguredAgent]) -> tuple[bytes, bool]:
        args = wire.decode(body, wire.BindingArgs)
        missing = [
            field
            for field, text in (
                ("PodName", args.PodName),
                ("PodNamespace", args.PodNamespace),
                ("Node", args.Node),
            )
            if not text
        ]
        if missing:
            raise wire.BadRequest(f"invalid ExtenderBindingArgs: {', '.join(missing)} required")
        if self.binder is None:
            message = "the extender has no API server credentials (--kubeconfig) to bind with"
            return wire.encode(wire.BindingResult(Error=message)), True
        where = f"{args.PodNamespace}/{args.PodName}"
        result = await self.binder.bind(args.PodNamespace, args.PodName, args.PodUID, args.Node)
        if result.outcome is BindOutcome.BOUND:
            pod = self.pod_lookup(args.PodNamespace, args.PodName) if self.pod_lookup else None
            if pod is not None and args.PodUID and pod.metadata.uid != args.PodUID:
                pod = None
            self.feed.bound(pod, args.PodUID, args.Node)
            return wire.encode(wire.BindingResult()), False
        message = f"binding {where} to {args.Node} {result.outcome.value}: {result.error}"
        return wire.encode(wire.BindingResult(Error=message)), True

    # --- health -------------------------------------------------------------------------

    async def _healthz(self, request: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def _readyz(self, request: web.Request) -> web.Response:
        ready = self.ready()
        text = "ok" if ready else "informers not synced"
        return web.Response(text=text, status=200 if ready else 503)

    async def _metrics(self, request: web.Request) -> web.Response:
        return web.Response(body=self.metrics.render(), headers={"Content-Type": CONTENT_TYPE})
